"""`as_strided`: a view of a tensor's storage (the numpy array that owns its memory) with
the given sizes, strides and storage offset, checked against the storage's size as
PyTorch's setStorage is; and what a tensor's storage is (`storage_of`: the owning array
read as a flat run of elements of the tensor's dtype).

Its derivative adds the gradient into a zero storage at the elements the view reads and
takes the input's own geometry of it (PyTorch's as_strided_backward for inputs that do
not overlap themselves).
"""
import math

import numpy as np

from .registry import register, VIEW, linear_jvp


def storage_of(arr):
    """(flat storage, offset of `arr` in it): the array owning `arr`'s memory as a 1-d run of
    `arr`'s dtype, and where `arr` starts in it, in elements."""
    root = arr
    while root.base is not None:
        base = root.base
        if not isinstance(base, np.ndarray):        # as_strided's wrapper of the array it views
            base = getattr(base, "base", None)
            if not isinstance(base, np.ndarray):
                break
        root = base
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        raise NotImplementedError("as_strided of a tensor whose memory is not one contiguous block "
                                  "is not supported by dynjit")
    raw = root.reshape(-1, order="A").view(np.uint8)
    usable = raw[: raw.size - raw.size % arr.itemsize]
    flat = usable.view(arr.dtype)
    offset = (arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // arr.itemsize
    return flat, offset


def _out_of_bounds(size, stride, storage_offset, itemsize, storage_numel):
    needed = (storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * itemsize
    return (f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {storage_offset}, and "
            f"itemsize {itemsize} requiring a storage size of {needed} are out of bounds for storage of "
            f"size {storage_numel * itemsize}")


def _geometry(size, stride, storage_offset):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if storage_offset is not None and storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    return size, stride


@register("as_strided", VIEW, variants="function, method")
def as_strided(self, size, stride, storage_offset=None):
    arr = np.asarray(self)
    size, stride = _geometry(size, stride, storage_offset)
    flat, own_offset = storage_of(arr)
    offset = own_offset if storage_offset is None else int(storage_offset)
    if math.prod(size) == 0:
        return flat[:0].reshape(size) if not size or 0 in size else np.empty(size, arr.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= flat.size:
        raise RuntimeError(_out_of_bounds(size, stride, offset, arr.itemsize, flat.size))
    return np.lib.stride_tricks.as_strided(flat[offset:], size, tuple(s * arr.itemsize for s in stride),
                                           writeable=arr.flags.writeable)


@as_strided.meta_fn
def _(self, size, stride, storage_offset=None):
    size, _ = _geometry(size, stride, storage_offset)
    return size, self.dtype


as_strided.jvp(linear_jvp(as_strided))     # forward mode: the same view of the tangent


@as_strided.derivative
def _(grad, self, size, stride, storage_offset):
    from .factories import zeros
    from .shape import index_put
    flat, own_offset = storage_of(self._data)
    offset = own_offset if storage_offset is None else int(storage_offset)
    positions = offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - k - 1)) * s
                             for k, (n, s) in enumerate(zip(size, stride))) if size else np.array(offset)
    read = _wrap_index(np.asarray(positions, dtype=np.int64).reshape(-1))
    storage = index_put(zeros((flat.size,), dtype=grad.dtype), [read], grad.reshape(-1), True)
    return storage.as_strided(tuple(self.shape), self.stride(), own_offset)


def _wrap_index(arr):
    from . import dispatch
    return dispatch.Tensor._make(arr)
