"""What crosses the grader's trust boundary, and how (:mod:`.sandbox` the trusted side, :mod:`.worker` the sandbox).

Messages are frames: 8 bytes (the lengths of the header and of the payload, big-endian), a JSON header, a payload.

* Grader → sandbox: the payload may be a pickle (the arguments of a call: tensors, a model, a tokenizer), which the
  sandbox trusts (:mod:`.calls`).
* Sandbox → grader: **plain data only**. :func:`encode` turns what a student's function returned into a JSON tree
  and raw bytes; :func:`decode` rebuilds it from a fixed list of types (None, bool, int, float, complex, str, bytes,
  list, tuple, dict, set, frozenset, torch tensors and numpy arrays of numeric dtypes, numpy scalars, torch.Size,
  torch dtypes, Ellipsis). It never unpickles and never runs code the sandbox sent: a tensor subclass, an object with
  a lying ``__eq__`` or a ``__torch_function__`` mode arrives as the plain numbers it held. Anything else arrives as
  :class:`Opaque`, an object with no behaviour that carries only its type's name. Sizes are capped, so memory stays
  bounded whatever a submission sends.
"""
from __future__ import annotations

import json
import os
import struct

MAX_HEADER = 8 * 2**20   # bytes of JSON in one frame
MAX_PAYLOAD = 64 * 2**20  # bytes of tensors in one frame: far more than any check's answer
MAX_DEPTH = 64           # nesting of lists, dicts… in an answer
MAX_NODES = 200_000      # values in an answer
_HEAD = struct.Struct(">II")

TENSOR_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8", "int16",
                 "int32", "int64", "bool")
ARRAY_KINDS = "biufc"  # numpy: bool, int, unsigned, float, complex (never object, strings or records)


class WireError(Exception):
    """A frame the grader cannot read: damaged, too large, or not of the protocol."""


class Opaque:
    """Stands for a value the sandbox could not send as plain data (an object of the student's own class, a
    function…): it has no behaviour, only its type's name (``type(x).__name__`` is that name) and a short text."""

    __slots__ = ("text",)

    def __init__(self, text: str = ""):
        self.text = text

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object{': ' + self.text if self.text else ''}>"


_OPAQUE_TYPES: dict[str, type] = {}


def opaque_type(name: str) -> type:
    """A subclass of :class:`Opaque` named ``name`` (made an identifier, at most 60 characters)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))[:60] or "object"
    if name[0].isdigit():
        name = "_" + name
    if name not in _OPAQUE_TYPES:
        _OPAQUE_TYPES[name] = type(name, (Opaque,), {"__slots__": ()})
    return _OPAQUE_TYPES[name]


_EXCEPTION_TYPES: dict[str, type] = {}


def opaque_exception(name: str) -> type:
    """An Exception subclass named ``name`` (an identifier, at most 60 characters): what a student's function raised,
    rebuilt on the grader's side with its name and message only."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))[:60] or "Exception"
    if name[0].isdigit():
        name = "_" + name
    if name not in _EXCEPTION_TYPES:
        _EXCEPTION_TYPES[name] = type(name, (Exception,), {})
    return _EXCEPTION_TYPES[name]


# ----------------------------------------------------------------------------- frames

def frame(header: dict, payload: bytes = b"") -> bytes:
    head = json.dumps(header, ensure_ascii=True, allow_nan=True).encode()
    return _HEAD.pack(len(head), len(payload)) + head + payload


def write_frame(fd: int, header: dict, payload: bytes = b"") -> None:
    data = memoryview(frame(header, payload))
    while data:
        data = data[os.write(fd, data):]


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[dict, bytes]:
    """The next frame on ``fd``: (header, payload). EOFError at the end; :class:`WireError` for anything else."""
    try:
        head = os.read(fd, _HEAD.size)
    except OSError as e:
        raise EOFError from e
    if not head:
        raise EOFError
    if len(head) < _HEAD.size:
        head += _read_exactly(fd, _HEAD.size - len(head))
    n_head, n_payload = _HEAD.unpack(head)
    if n_head > MAX_HEADER or n_payload > MAX_PAYLOAD:
        raise WireError(f"a message of {(n_head + n_payload) / 2**20:.0f} MB, more than the grader reads")
    raw = _read_exactly(fd, n_head)
    payload = _read_exactly(fd, n_payload) if n_payload else b""
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise WireError("a message that is not the grader's JSON") from e
    if not isinstance(header, dict):
        raise WireError("a message that is not the grader's JSON")
    return header, payload


def read_frame_bytes(data: bytes) -> tuple[dict, bytes]:
    """:func:`read_frame` of a frame held in memory (for tests and tools)."""
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        w = None
        return read_frame(r)
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


# ----------------------------------------------------------------------------- sandbox → grader: plain data

class _Encoder:
    def __init__(self):
        self.chunks: list[bytes] = []
        self.size = 0
        self.nodes = 0

    def blob(self, data: bytes) -> list[int]:
        if self.size + len(data) > MAX_PAYLOAD:
            raise OverflowError(f"more than {MAX_PAYLOAD // 2**20} MB of numbers")
        self.chunks.append(data)
        self.size += len(data)
        return [self.size - len(data), len(data)]

    def __call__(self, x, depth: int = 0):
        import numpy as np
        import torch

        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise OverflowError(f"more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise OverflowError(f"nested more than {MAX_DEPTH} levels deep")
        t = type(x)
        if x is None or t in (bool, str) or t is int or t is float:
            return [x] if t is not str else x
        if t is complex:
            return {"complex": [x.real, x.imag]}
        if x is Ellipsis:
            return {"ellipsis": 0}
        if isinstance(x, torch.Tensor):
            return {"tensor": self.tensor(x)}
        if isinstance(x, np.ndarray) and x.dtype.kind in ARRAY_KINDS:
            a = np.ascontiguousarray(x)
            return {"ndarray": [a.dtype.str, list(a.shape), *self.blob(a.tobytes())]}
        if isinstance(x, np.generic) and np.asarray(x).dtype.kind in ARRAY_KINDS:
            a = np.asarray(x)
            return {"npscalar": [a.dtype.str, *self.blob(a.tobytes())]}
        if isinstance(x, torch.dtype):
            return {"dtype": str(x).removeprefix("torch.")}
        if isinstance(x, torch.Size):
            return {"size": [int(n) for n in x]}
        if isinstance(x, (bool, int, float, str)):  # a subclass (an enum, a lying int): its plain value
            base = next(b for b in (bool, int, float, str) if isinstance(x, b))
            return self(base(x), depth)
        if isinstance(x, (list, tuple, set, frozenset)):
            kind = next(k for k in (list, tuple, set, frozenset) if isinstance(x, k)).__name__
            return {kind: [self(v, depth + 1) for v in list(x)]}
        if isinstance(x, dict):
            return {"dict": [[self(k, depth + 1), self(v, depth + 1)] for k, v in list(x.items())]}
        if isinstance(x, bytes):
            return {"bytes": self.blob(bytes(x))}
        return {"opaque": [type(x).__name__, _short(x)]}

    def tensor(self, x) -> list:
        import torch

        grad = bool(x.requires_grad)
        x = x.detach()
        if type(x) is not torch.Tensor:
            x = x.as_subclass(torch.Tensor)
        if x.layout != torch.strided:
            x = x.to_dense()
        name = str(x.dtype).removeprefix("torch.")
        if name not in TENSOR_DTYPES:
            x, name = x.to(torch.float64), "float64"
        x = x.cpu().contiguous()
        data = x.reshape(-1).view(torch.uint8).numpy().tobytes() if x.numel() else b""
        return [name, list(x.shape), *self.blob(data), grad and x.is_floating_point()]


def _short(x) -> str:
    try:
        text = repr(x)
    except BaseException:  # noqa: BLE001 - a repr that raises is the student's
        text = ""
    return text[:120] if isinstance(text, str) else ""


def encode(value) -> tuple[dict, bytes]:
    """(tree, payload) for ``value``; a value too large or too deep becomes an :class:`Opaque` saying so."""
    enc = _Encoder()
    try:
        tree = enc(value)
    except OverflowError as e:
        enc = _Encoder()
        tree = {"opaque": [type(value).__name__, f"too large to check: {e}"]}
    except RecursionError:
        enc = _Encoder()
        tree = {"opaque": [type(value).__name__, "nested too deep to check"]}
    return {"tree": tree}, b"".join(enc.chunks)


def decode(header: dict, payload: bytes):
    """The value :func:`encode` sent; :class:`WireError` if the tree is not one it writes. The encoder gives each
    value its own bytes of the payload, so the values together read at most the payload: a tree that points many
    values at the same bytes (to make the grader copy them once per value) is refused, and decoding never builds
    more numbers than the message carried."""
    nodes, used = [0], [0]

    def part(span) -> bytes:
        if not (isinstance(span, list) and len(span) == 2 and all(type(n) is int and n >= 0 for n in span)
                and span[0] + span[1] <= len(payload)):
            raise WireError("a value whose numbers are missing")
        used[0] += span[1]
        if used[0] > len(payload):
            raise WireError("a value that reads more numbers than the message holds")
        return payload[span[0]:span[0] + span[1]]

    def shape_of(shape) -> tuple[int, ...]:
        if not (isinstance(shape, list) and len(shape) <= 32 and all(type(n) is int and n >= 0 for n in shape)):
            raise WireError("a tensor with a damaged shape")
        return tuple(shape)

    def build(node, depth: int):
        import numpy as np
        import torch

        nodes[0] += 1
        if depth > MAX_DEPTH + 2 or nodes[0] > MAX_NODES + 10:
            raise WireError("a value nested too deep or too large")
        if isinstance(node, str):
            return node
        if isinstance(node, list):
            if len(node) == 1 and (node[0] is None or type(node[0]) in (bool, int, float)):
                return node[0]
            raise WireError("a value of an unknown kind")
        if not (isinstance(node, dict) and len(node) == 1):
            raise WireError("a value of an unknown kind")
        (kind, body), = node.items()
        if kind in ("list", "tuple", "set", "frozenset") and isinstance(body, list):
            items = [build(v, depth + 1) for v in body]
            if kind in ("set", "frozenset"):
                try:
                    return (set if kind == "set" else frozenset)(items)
                except TypeError:
                    raise WireError("a set of values that cannot be in a set") from None
            return items if kind == "list" else tuple(items)
        if kind == "dict" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise WireError("a damaged dict")
                key = build(pair[0], depth + 1)
                try:
                    out[key] = build(pair[1], depth + 1)
                except TypeError:
                    raise WireError("a dict whose key cannot be a key") from None
            return out
        if kind == "tensor" and isinstance(body, list) and len(body) == 5 and type(body[4]) is bool:
            name, shape, *span, grad = body
            if name not in TENSOR_DTYPES:
                raise WireError("a tensor of an unknown dtype")
            dtype, shape, data = getattr(torch, name), shape_of(shape), part(span)
            count = 1
            for n in shape:
                count *= n
            if count * torch.empty((), dtype=dtype).element_size() != len(data):
                raise WireError("a tensor whose size does not match its numbers")
            t = torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape) if data else torch.empty(shape, dtype=dtype)
            return t.requires_grad_(True) if grad and t.is_floating_point() else t
        if kind in ("ndarray", "npscalar") and isinstance(body, list):
            try:
                dtype = np.dtype(body[0]) if isinstance(body[0], str) else None
            except TypeError:
                dtype = None
            if dtype is None or dtype.kind not in ARRAY_KINDS or dtype.fields is not None:
                raise WireError("an array of an unknown dtype")
            shape = shape_of(body[1]) if kind == "ndarray" else ()
            data = part(body[2:] if kind == "ndarray" else body[1:])
            count = 1
            for n in shape:
                count *= n
            if count * dtype.itemsize != len(data):
                raise WireError("an array whose size does not match its numbers")
            a = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
            return a if kind == "ndarray" else a[()]
        if kind == "complex" and isinstance(body, list) and len(body) == 2 and all(type(v) in (int, float) for v in body):
            return complex(*body)
        if kind == "dtype" and body in TENSOR_DTYPES:
            return getattr(torch, body)
        if kind == "size":
            return torch.Size(shape_of(body))
        if kind == "bytes":
            return bytes(part(body))
        if kind == "ellipsis":
            return Ellipsis
        if kind == "opaque" and isinstance(body, list) and len(body) == 2:
            return opaque_type(body[0])(str(body[1])[:120])
        raise WireError("a value of an unknown kind")

    if "tree" not in header:
        raise WireError("a message without its value")
    try:
        return build(header["tree"], 0)
    except RecursionError:
        raise WireError("a value nested too deep") from None
