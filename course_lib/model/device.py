"""One place that decides where tensors live, and one that makes runs repeatable."""
from __future__ import annotations

import os
import random

import numpy as np
import torch


def get_device(device: str | torch.device | None = None) -> torch.device:
    """Return the device to compute on.

    With ``device=None`` pick the best one available: CUDA, then Apple's MPS, then
    the CPU. An explicit choice (``"cpu"``, ``"cuda:1"``, a ``torch.device``) is
    checked and returned, so a typo or a missing GPU fails here with a clear
    message rather than deep inside a forward pass.
    """
    if device is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r}: use 'cpu', 'cuda', 'cuda:0', 'mps' or None") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was asked for, but this machine has no CUDA GPU; use device='cpu'")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"device {device!r} was asked for, but MPS is not available here; use device='cpu'")
    return dev


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices); return a torch.Generator seeded the same way.

    Pass the returned generator to samplers when you want a stream of random
    numbers that does not depend on what else ran before.
    """
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)
