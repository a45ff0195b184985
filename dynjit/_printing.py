"""Tensor repr in PyTorch's format: `tensor([1.0000, 2.5000], requires_grad=True)`.

Follows torch/_tensor_str.py: one formatter per tensor chooses integer mode
(`1.`), fixed (`1.5000`) or scientific (`1.5000e+08`) notation from the
nonzero finite values; elements are right-aligned to a common width; rows
wrap at 80 columns; tensors with more than 1000 elements are summarised with
3 items at each edge; suffixes (size, dtype, grad_fn / requires_grad) follow.
A complex tensor gets one formatter for the real parts and one for the imaginary
parts (`1.0000+2.0000j`), as PyTorch's does.
"""
import math

import numpy as np

from . import _dtype

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    """Picks the notation and width for all elements of one tensor (as PyTorch does)."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        flat = flat.astype(np.float64)
        nonzero = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero.size == 0:
            return
        absval = np.abs(nonzero)
        lo, hi = absval.min(), absval.max()
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        for v in nonzero.tolist():
            if self.sci_mode:
                width = len(f"{v:.{PRECISION}e}")
            elif self.int_mode:
                width = len(f"{v:.0f}") + 1
            else:
                width = len(f"{v:.{PRECISION}f}")
            self.max_width = max(self.max_width, width)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{PRECISION}f}"
        else:
            text = str(value)
        return " " * (self.max_width - len(text)) + text


class _ComplexFormatter:
    """Real and imaginary parts, each with its own formatter: `real+imagj`."""

    def __init__(self, values):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)

    def width(self):
        return self.real.width() + self.imag.width() + 1

    def format(self, value):
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(arr):
    """The elements that a summarised print shows (EDGEITEMS at each edge of every dim)."""
    if arr.ndim == 0:
        return arr
    if arr.shape[0] > 2 * EDGEITEMS:
        arr = np.concatenate([arr[:EDGEITEMS], arr[-EDGEITEMS:]])
    if arr.ndim == 1:
        return arr
    return np.stack([_summarized(row) for row in arr])


def _vector_str(arr, indent, summarize, fmt):
    per_line = max(1, (LINEWIDTH - indent) // (fmt.width() + 2))
    if summarize and arr.shape[0] > 2 * EDGEITEMS:
        items = ([fmt.format(v) for v in arr[:EDGEITEMS].tolist()] + [" ..."]
                 + [fmt.format(v) for v in arr[-EDGEITEMS:].tolist()])
    else:
        items = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr, indent, summarize, fmt):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    if summarize and arr.shape[0] > 2 * EDGEITEMS:
        rows = ([_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                + [_tensor_str(arr[i], indent + 1, summarize, fmt)
                   for i in range(arr.shape[0] - EDGEITEMS, arr.shape[0])])
    else:
        rows = [_tensor_str(row, indent + 1, summarize, fmt) for row in arr]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    arr = t._data
    prefix = "tensor("
    indent = len(prefix)
    dtype = _dtype.from_numpy_dtype(arr.dtype)
    default = _dtype.get_default_dtype()
    suffixes = []
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype is not default:
            suffixes.append(f"dtype=dynjit.{dtype.name}")
        body = "[]"
    else:
        if dtype not in (default, _dtype.get_default_complex_dtype(), _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype=dynjit.{dtype.name}")
        if arr.dtype == np.float16:
            arr = arr.astype(np.float32)
        summarize = arr.size > THRESHOLD
        make = _ComplexFormatter if arr.dtype.kind == "c" else _Formatter
        fmt = make(_summarized(arr) if summarize else arr)
        body = _tensor_str(arr, indent, summarize, fmt)
    try:
        fn = t.grad_fn
        name = fn.name() if fn is not None else None
    except RuntimeError:    # a view whose grad_fn cannot be regenerated (as PyTorch prints it)
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._fw_grads:     # forward AD: the tangent at the innermost level that set one
        tangent = t._fw_grads[max(t._fw_grads)]
        suffixes.append("tangent=" + (repr(tangent.item()) if tangent._data.ndim == 0
                                      else tensor_repr(tangent)))
    return _add_suffixes(prefix + body, suffixes, indent)
