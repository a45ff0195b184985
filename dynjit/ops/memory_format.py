"""Memory formats (torch.contiguous_format, channels_last, channels_last_3d,
preserve_format) carried as numpy strides, and the ops that lay a tensor out in one.

A dynjit tensor is a numpy array, so any layout PyTorch's strides describe can be held:
channels_last is an NCHW array whose memory is ordered NHWC. `to_memory_format` copies a
tensor into a format (its values unchanged, so its derivative is the identity);
`empty_strided` makes a zero-filled tensor with the given sizes and strides (PyTorch's
is uninitialized; zeros are one of its possible contents).
"""
import numpy as np

from .. import _dtype
from .registry import register, OTHER, FACTORY, linear_jvp
from .meta import same_as


class memory_format:
    """A memory format (PyTorch's torch.memory_format)."""

    def __init__(self, name, order=None, rank=None):
        self.name = name
        self._order = order     # dims from outermost to innermost in memory (None: no fixed one)
        self._rank = rank

    def __repr__(self):
        return f"dynjit.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", (0, 2, 3, 1), 4)
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1), 5)
FORMATS = (contiguous_format, preserve_format, channels_last, channels_last_3d)


def _check_format(fmt, ndim):
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be a dynjit.memory_format, got {type(fmt).__name__}")
    if fmt._rank is not None and ndim != fmt._rank:
        raise RuntimeError(f"required rank {fmt._rank} tensor to use {fmt.name} format")


def format_strides(shape, fmt):
    """The element strides of a dense tensor of `shape` laid out in format `fmt`."""
    order = fmt._order if fmt._order is not None else tuple(range(len(shape)))
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def is_contiguous_in(arr, fmt):
    """Whether the numpy array is laid out densely in format `fmt` (PyTorch's
    is_contiguous(memory_format=fmt); size-1 dims may have any stride)."""
    if fmt is None or fmt._order is None:
        return arr.flags.c_contiguous
    if arr.ndim != fmt._rank:
        return False
    item = arr.itemsize
    expected = format_strides(arr.shape, fmt)
    return all(n == 1 or st // item == e for n, st, e in zip(arr.shape, arr.strides, expected))


def laid_out(arr, fmt):
    """A copy of `arr` (a numpy array) in format `fmt` (preserve_format: arr's own order)."""
    if fmt is preserve_format:
        return np.array(arr, copy=True, order="K")
    if fmt is contiguous_format:
        return np.array(arr, copy=True, order="C")
    order = fmt._order
    inverse = tuple(np.argsort(order))
    return np.ascontiguousarray(np.transpose(arr, order)).transpose(inverse)


@register("to_memory_format", OTHER)
def to_memory_format(self, memory_format):
    arr = np.asarray(self)
    _check_format(memory_format, arr.ndim)
    return laid_out(arr, memory_format)


@to_memory_format.meta_fn
def _(self, memory_format):
    _check_format(memory_format, len(self.shape))
    return same_as(self)


to_memory_format.jvp(linear_jvp(to_memory_format))
to_memory_format.derivative(lambda grad: grad)


@register("empty_strided", FACTORY, differentiable=False)
def empty_strided(size, stride, dtype=None):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError("empty_strided: sizes and strides must be non-negative")
    np_dtype = (_dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()).np
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    storage = np.zeros(max(extent, 0), dtype=np_dtype)
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage, size, tuple(s * item for s in stride), writeable=True)


@empty_strided.meta_fn
def _(size, stride, dtype=None):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return tuple(int(s) for s in size), d
