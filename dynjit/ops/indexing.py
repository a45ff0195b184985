"""Python indexing on tensors: `t[idx]` and `t[idx] = value`.

Basic indices (ints, slices, None, Ellipsis) give a view through the
`getitem` op; anything holding an integer/bool tensor or a list is advanced
indexing through the `index` op (a copy). Assignment writes through a view
with `copy_` or, for advanced indices, uses `index_put_`.
"""
import numpy as np

from .registry import registry
from .dispatch import dispatch

_getitem = registry["getitem"]
_index = registry["index"]
_index_put_ = registry["index_put_"]
_copy_ = registry["copy_"]
_BASIC = (int, slice, type(None), type(Ellipsis))


def _tensor_type():
    from ..tensor import Tensor
    return Tensor


def _normalize(index):
    """(is_basic, index tuple) with 0-d integer tensors turned into ints."""
    Tensor = _tensor_type()
    if not isinstance(index, tuple):
        index = (index,)
    basic = True
    out = []
    for i in index:
        if isinstance(i, Tensor):
            if i._data.ndim == 0 and i._data.dtype.kind in "iu":
                i = int(i._data)
            else:
                basic = False
                if i._data.dtype.kind == "f":
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(i, bool) or isinstance(i, np.bool_):
            basic = False
        elif isinstance(i, np.integer):
            i = int(i)
        elif isinstance(i, (list, np.ndarray)):
            basic = False
        elif not isinstance(i, _BASIC):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"tensors are valid indices (got {type(i).__name__})")
        if isinstance(i, slice):
            for part in (i.start, i.stop, i.step):
                if isinstance(part, Tensor):
                    i = slice(*(int(p) if isinstance(p, Tensor) else p for p in (i.start, i.stop, i.step)))
                    break
            if i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
        out.append(i)
    return basic, tuple(out)


def getitem(self, index):
    basic, idx = _normalize(index)
    if basic:
        return dispatch(_getitem, (self, idx), {})
    return dispatch(_index, (self, list(idx)), {})


def setitem(self, index, value):
    basic, idx = _normalize(index)
    Tensor = _tensor_type()
    if basic:
        target = dispatch(_getitem, (self, idx), {})
        if not isinstance(value, Tensor):
            value = _scalar_or_tensor(value, self)
        dispatch(_copy_, (target, value), {})
    else:
        if not isinstance(value, Tensor):
            value = _scalar_or_tensor(value, self)
        dispatch(_index_put_, (self, list(idx), value), {})


def _scalar_or_tensor(value, like):
    from ..tensor import tensor
    return tensor(value, dtype=like.dtype)
