"""Tensor repr in PyTorch's format: `tensor([1.0000, 2.5000], requires_grad=True)`."""
import numpy as np

from . import _dtype

_DEFAULT_NO_SUFFIX = ("float32", "int64", "bool")


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _nonfinite(v) or str(v)
    absf = np.abs(finite)
    nonzero = absf[absf > 0]
    integral = np.all(finite == np.round(finite))
    if integral and (absf.max() < 1e8):
        width = max(len(f"{v:.0f}.") for v in finite)
        return lambda v: (_nonfinite(v) or f"{v:.0f}.").rjust(width)
    sci = nonzero.size and (nonzero.max() / nonzero.min() > 1000 or nonzero.max() > 1e8 or nonzero.min() < 1e-4)
    fmt = "{:.4e}" if sci else "{:.4f}"
    width = max(len(fmt.format(v)) for v in finite)
    return lambda v: (_nonfinite(v) or fmt.format(v)).rjust(width)


def _nonfinite(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _format_array(arr, indent):
    if arr.dtype.kind == "f":
        fmt = _float_formatter(arr.reshape(-1).astype(np.float64)) if arr.size else str
    elif arr.dtype.kind == "b":
        fmt = lambda v: str(bool(v)).rjust(5) if not np.all(arr) and np.any(arr) else str(bool(v))  # noqa: E731
    else:
        width = max((len(str(v)) for v in arr.reshape(-1).tolist()), default=1)
        fmt = lambda v: str(int(v)).rjust(width)  # noqa: E731

    def rec(a, depth):
        if a.ndim == 0:
            return fmt(a.item())
        if a.ndim == 1:
            items = [fmt(v) for v in a.tolist()]
            if len(items) > 1000:
                items = items[:3] + ["..."] + items[-3:]
            return "[" + ", ".join(items) + "]"
        sep = "," + "\n" * (a.ndim - 1) + " " * (indent + depth + 1)
        rows = [rec(r, depth + 1) for r in a]
        return "[" + sep.join(rows) + "]"
    return rec(arr, 0)


def tensor_repr(t):
    arr = t._data
    prefix = "tensor("
    body = _format_array(arr, len(prefix)) if arr.size or arr.ndim == 0 else "[]"
    extras = []
    if arr.size == 0 and arr.shape != (0,):
        extras.append(f"size={tuple(arr.shape)}")
    name = _dtype.from_numpy_dtype(arr.dtype).name
    default_float = _dtype.get_default_dtype().name
    if not (name == default_float or name in ("int64", "bool")) or (arr.size == 0 and name != default_float):
        extras.append(f"dtype=dynjit.{name}")
    fn = t.grad_fn
    if fn is not None:
        extras.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"
