"""`bincount` (torch.bincount / Tensor.bincount): how often each value occurs in a 1-d tensor
of non-negative integers (or the sum of `weights` per value), with at least `minlength`
bins. The output's length depends on the input's values (a data-dependent size, as for
nonzero); it has no derivative, as in PyTorch."""
import numpy as np

from .. import _dtype
from .meta import DataDependentOutputError
from .registry import register, OTHER


def _check_bincount(shape, dtype, weights_shape, minlength):
    d = dtype if isinstance(dtype, _dtype.dtype) else _dtype.from_numpy_dtype(dtype)
    if d.is_floating_point or getattr(d, "is_complex", False):
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")
    if len(shape) != 1 or d is _dtype.bool_:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights_shape is not None and tuple(weights_shape) != tuple(shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")


@register("bincount", OTHER, differentiable=False, variants="function, method")
def bincount(self, weights=None, minlength=0):
    x = np.asarray(self)
    w = None if weights is None else np.asarray(weights)
    _check_bincount(x.shape, x.dtype, None if w is None else w.shape, minlength)
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if w is None:
        return np.bincount(x, minlength=minlength).astype(np.int64)
    out_dtype = np.float32 if w.dtype == np.float32 else np.float64     # PyTorch: float weights keep float32
    return np.bincount(x, weights=w.astype(np.float64), minlength=minlength).astype(out_dtype)


@bincount.meta_fn
def _(self, weights=None, minlength=0):
    _check_bincount(self.shape, self.dtype, None if weights is None else weights.shape, minlength)
    raise DataDependentOutputError("bincount: the number of bins is the largest value + 1")
