"""Static memory layouts: where a tensor's elements are, relative to an array the
kernel receives (its `Storage`), as element offset + element strides.

Graph inputs have the layout of the example input (the wrapper guards it);
kernel outputs are fresh contiguous arrays; results of ops run outside the
kernels (matmul, fallbacks) are made contiguous before a kernel reads them.
A view's layout is found by running its numpy kernel on a stand-in array
that has the source's strides (bytes of a uint8 buffer standing for
elements), so every view numpy can express is index arithmetic, whatever
its arguments; ops that would copy (reshape of a transposed tensor) have no
static layout.
"""
import math

import numpy as np


class Storage:
    """An array passed to kernels: a wrapper variable (made on first use for `runtime`)."""
    __slots__ = ("kind", "var", "node")

    def __init__(self, kind, var=None, node=None):
        self.kind = kind          # "input", "buffer" or "runtime" (contiguous copy of a node's value)
        self.var = var
        self.node = node


class Layout:
    __slots__ = ("storage", "dtype", "shape", "strides", "offset")

    def __init__(self, storage, dtype, shape, strides, offset=0):
        self.storage = storage
        self.dtype = dtype
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset

    def __repr__(self):
        return f"Layout({self.shape}, {self.strides}, +{self.offset})"


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def contiguous(storage, dtype, shape):
    return Layout(storage, dtype, shape, contiguous_strides(shape))


def of_array(storage, dtype, arr):
    """The layout of a numpy array relative to its own data pointer (None if the
    strides are not whole elements)."""
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        return None
    return Layout(storage, dtype, arr.shape, [s // item for s in arr.strides])


def view_layout(op, src, args, dtype):
    """Layout(s) of `op(src, *args)` if numpy makes it a view, else None."""
    if 0 in src.shape:
        return None
    lo = src.offset + sum((n - 1) * st for n, st in zip(src.shape, src.strides) if st < 0)
    hi = src.offset + sum((n - 1) * st for n, st in zip(src.shape, src.strides) if st > 0)
    shift = min(lo, 0)          # elements before the storage's data pointer (negative strides)
    buf = np.empty(hi - shift + 1, dtype=np.uint8)
    stand_in = np.lib.stride_tricks.as_strided(buf[src.offset - shift:], src.shape, src.strides,
                                               writeable=False)
    try:
        if op.name in ("view", "reshape"):
            from dynjit.ops.shape import infer_shape
            res = np.reshape(stand_in, infer_shape(args[0], math.prod(src.shape)), copy=False)
        else:
            res = op.kernel(stand_in, *args)
    except (ValueError, TypeError, IndexError, RuntimeError):
        return None
    base = buf.ctypes.data

    def one(r):
        if not isinstance(r, np.ndarray) or r.dtype != np.uint8:
            return None
        if r.size and not np.may_share_memory(r, buf):
            return None
        off = r.ctypes.data - base + shift if r.size else 0
        return Layout(src.storage, dtype, r.shape, r.strides, off)
    if isinstance(res, (list, tuple)):
        out = [one(r) for r in res]
        return None if any(o is None for o in out) else out
    return one(res)
