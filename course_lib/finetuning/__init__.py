"""Fine-tuning, SLP3 §11.4: a training loop for any model that returns ``.loss`` (``training``: AdamW, warm-up,
progress bar, per-epoch curves, held-out evaluation, runs cached by config + data hash, interruptible, GPU-aware).
"""
from .training import (EpochRecord, TrainConfig, TrainRun, batches, evaluate, fingerprint, fit, predict, run_key,
                       trainable_named_parameters)

__all__ = ["EpochRecord", "TrainConfig", "TrainRun", "batches", "evaluate", "fingerprint", "fit", "predict",
           "run_key", "trainable_named_parameters"]
