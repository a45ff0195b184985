"""`default_collate` (samples -> a batch) and `default_convert` (one sample, without
batching), as torch.utils.data's."""
import collections.abc
import copy

import numpy as np

from ... import _dtype
from ...functional import stack
from ...tensor import Tensor, tensor as _tensor, from_numpy

__all__ = ["default_collate", "default_convert"]

_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
          "found {}")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch):
    """Stack tensors (and numpy arrays) along a new first dimension; numbers become a tensor
    (float64 for floats, int64 for ints, bool for bools); strings stay a list; dicts,
    namedtuples, tuples and lists are collated field by field."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "OUSV":
        return stack([from_numpy(np.ascontiguousarray(b)) for b in batch], 0)
    if isinstance(elem, np.generic) and elem.dtype.kind not in "OUSV":
        return from_numpy(np.array(batch))
    if isinstance(elem, float):
        return _tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, bool):
        return _tensor(batch, dtype=_dtype.bool_)
    if isinstance(elem, int):
        return _tensor(batch, dtype=_dtype.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                out = copy.copy(elem)       # keeps the mapping's type and attributes, as torch
                out.update(collated)
                return out
            return type(elem)(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(list(samples)) for samples in transposed]
        try:
            return type(elem)([default_collate(list(samples)) for samples in transposed])
        except TypeError:
            return [default_collate(list(samples)) for samples in transposed]
    raise TypeError(_ERROR.format(type(elem)))


def default_convert(data):
    """numpy arrays and numpy scalars become tensors, inside dicts, namedtuples and sequences
    too; everything else is left as it is (used when automatic batching is off)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OUSV":
        return from_numpy(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "OUSV":
        return from_numpy(np.array(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
