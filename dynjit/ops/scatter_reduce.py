"""Reducing scatters: `scatter_reduce` (torch.scatter_reduce: src's values reduced into
self at the positions `index` names along `dim`) and `index_reduce` (the same with a
vector index choosing whole slices), with sum / prod / mean / amax / amin and
`include_self`, their in-place variants, and PyTorch's derivatives
(tools/autograd/templates' scatter_reduce_backward / index_reduce_backward).

`delayed_error_if` is the derivatives' way to say "this gradient has no derivative of its
own" only when the data calls for it (prod with two zeros scattered to one position): it
passes its input through and raises in its backward when the condition holds.
"""
import numpy as np

from .. import _dtype
from .registry import register, OTHER
from .meta import same_as, wrap_dim
from .shape import _index_grids, _bounds_checked, _as_dtype, _pad_to

SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")

_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _identity(reduce, np_dtype):
    """The value a position holds before anything is reduced into it (include_self=False)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if np_dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(np_dtype)
    return info.min if reduce == "amax" else info.max


def _check_index_dtype(name, index_dtype):
    d = _as_dtype(index_dtype)
    if d not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {_scalar_name(d)}"
                           if name == "index_reduce_" else
                           f"{name}(): Expected dtype int64 for index, got {d.name}")


def _check_scatter_reduce(self_shape, self_dtype, dim, index_shape, index_dtype, src_shape, src_dtype, reduce):
    if reduce not in SCATTER_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = wrap_dim(dim, len(self_shape))
    _check_index_dtype("scatter_reduce", index_dtype)
    if _as_dtype(self_dtype) is not _as_dtype(src_dtype):
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    n = len(index_shape)
    if n != len(self_shape) and (n > 1 or len(self_shape) > 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if n != len(src_shape) and (n > 1 or len(src_shape) > 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if n and len(self_shape) and len(src_shape):
        for k in range(n):
            if (k != d and index_shape[k] > self_shape[k]) or index_shape[k] > src_shape[k]:
                raise RuntimeError(
                    f"Expected index {list(index_shape)} to be no larger than self {list(self_shape)} "
                    f"apart from dimension {d} and to be no larger size than src {list(src_shape)}")
    return d


def _reduce_at(out, positions, values, reduce, include_self):
    """Reduce `values` into the array `out` at `positions` (an index tuple), in place."""
    if not include_self:
        out[positions] = _identity(reduce, out.dtype)
    count = None
    if reduce == "mean":
        count = np.zeros(out.shape, dtype=np.int64) + (1 if include_self else 0)
        np.add.at(count, positions, 1)
    ufunc = np.logical_or if (out.dtype.kind == "b" and reduce in ("sum", "mean")) else _UFUNC[reduce]
    if out.dtype.kind == "b" and reduce == "prod":
        ufunc = np.logical_and
    _bounds_checked(ufunc.at, out, positions, values)
    if count is not None:
        count = np.maximum(count, 1)
        if out.dtype.kind in "iu":
            out[...] = np.floor_divide(out, count)
        elif out.dtype.kind == "f":
            out[...] = out / count
    return out


@register("scatter_reduce", OTHER, variants="function, method", inplace=True)
def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    out = np.array(self, copy=True)
    idx, src = np.asarray(index), np.asarray(src)
    d = _check_scatter_reduce(out.shape, out.dtype, dim, idx.shape, idx.dtype, src.shape, src.dtype, reduce)
    if not idx.size:
        return out
    target = out.reshape(1) if out.ndim == 0 else out      # a view: writes land in `out`
    if out.ndim == 0 or idx.ndim == 0:
        idx = idx.reshape(-1)
        d = 0
    src = src.reshape(-1) if src.ndim == 0 else src
    values = src[tuple(slice(0, s) for s in idx.shape)]
    _reduce_at(target, _index_grids(idx, d), values, reduce, include_self)
    return out


@scatter_reduce.meta_fn
def _(self, dim, index, src, reduce, include_self=True):
    _check_scatter_reduce(self.shape, self.dtype, dim, index.shape, index.dtype, src.shape, src.dtype, reduce)
    return same_as(self)


def _check_index_reduce(self_shape, self_dtype, dim, index_shape, index_dtype, source_shape, source_dtype, reduce):
    if reduce not in INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = wrap_dim(dim, len(self_shape))
    if len(index_shape) > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {len(index_shape)} "
                         f"with type: {_scalar_name(index_dtype)} and size: {list(index_shape)}")
    _check_index_dtype("index_reduce_", index_dtype)
    n = index_shape[0] if index_shape else 1
    source_d = source_shape[d] if source_shape else 1
    if n != source_d:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source_d}), for dim: {d}")
    if _as_dtype(self_dtype) is not _as_dtype(source_dtype):
        raise RuntimeError(f"index_reduce_(): self ({_scalar_name(self_dtype)}) and source "
                           f"({_scalar_name(source_dtype)}) must have the same scalar type")
    if len(source_shape) != len(self_shape) and (len(source_shape) > 1 or len(self_shape) > 1) or any(
            k != d and a != b for k, (a, b) in enumerate(zip(self_shape, source_shape))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = {list(self_shape)} source.shape = {list(source_shape)}")
    return d


def _scalar_name(d):
    """PyTorch's ScalarType name of a dtype (as its C++ error messages print it)."""
    return _dtype.scalar_type_name(_as_dtype(d))


@register("index_reduce", OTHER, variants="function, method", inplace=True)
def index_reduce(self, dim, index, source, reduce, include_self=True):
    out = np.array(self, copy=True)
    idx, source = np.asarray(index), np.asarray(source)
    d = _check_index_reduce(out.shape, out.dtype, dim, idx.shape, idx.dtype, source.shape, source.dtype, reduce)
    idx = idx.reshape(-1)
    if not idx.size:
        return out
    size = out.shape[d] if out.ndim else 1
    if idx.min() < -size or idx.max() >= size:
        raise IndexError("index out of range in self")
    target = np.moveaxis(out.reshape(1) if out.ndim == 0 else out, d, 0)   # a view of `out`
    values = np.moveaxis(source.reshape(1) if source.ndim == 0 else source, d, 0)
    _reduce_at(target, (idx,), values, reduce, include_self)
    return out


@index_reduce.meta_fn
def _(self, dim, index, source, reduce, include_self=True):
    _check_index_reduce(self.shape, self.dtype, dim, index.shape, index.dtype, source.shape, source.dtype, reduce)
    return same_as(self)


# -- derivatives -------------------------------------------------------------------

@register("delayed_error_if", OTHER)
def delayed_error_if(self, condition, msg):
    """`self`, unchanged; its backward raises RuntimeError(msg) if `condition` (a bool
    tensor) holds anywhere."""
    return np.array(self, copy=True)


@delayed_error_if.derivative
def _(grad, condition, msg):
    if bool(condition.any()):
        raise RuntimeError(msg)
    return grad, None, None


def _reduce_grads(grad, self, dim, index, src, reduce, include_self, result, who):
    """PyTorch's scatter_reduce_backward: the gradients for self and for the index-shaped
    part of src."""
    from .factories import zeros
    if reduce == "sum":
        g_self, g_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        n = zeros(tuple(grad.shape), dtype=grad.dtype) + (1.0 if include_self else 0.0)
        n = n.scatter_add(dim, index, zeros(tuple(index.shape), dtype=grad.dtype) + 1.0)
        n = n.masked_fill(n == 0, 1.0)
        g_self = grad / n
        g_src = g_self.gather(dim, index)
    elif reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1.0)
        masked_self_result = masked_self.scatter_reduce(dim, index, src, reduce, include_self=include_self)
        g_self = grad * masked_self_result / masked_self
        src_zero = src == 0
        src_num_zeros = zeros(tuple(self.shape), dtype=self.dtype).scatter_add(
            dim, index, src_zero.to(self.dtype)).gather(dim, index)
        src_single_zero = src_zero.logical_and(src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1.0)
        masked_src_result = self.scatter_reduce(dim, index, masked_src, reduce, include_self=include_self)
        from .pointwise import where
        g_src = where(src_single_zero, (grad * masked_src_result).gather(dim, index),
                      (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1.0))
        g_src = delayed_error_if(g_src, src_num_zeros > 1,
                                 f"{who}(): Double backward is unsupported for {'source' if who == 'index_reduce' else 'src'} "
                                 f"when >1 zeros in {'source' if who == 'index_reduce' else 'src'} are scattered "
                                 "to the same position in self")
    else:   # amax, amin: the gradient is shared evenly between the values equal to the result
        value = result.gather(dim, index)
        self_is_result = (self == result).to(self.dtype)
        if not include_self:    # self's values took no part: none of them is the result
            self_is_result = self_is_result.scatter(dim, index, 0.0)
        src_is_result = (src == value).to(self.dtype)
        grad_distributed = grad / self_is_result.scatter_add(dim, index, src_is_result)
        g_self = self_is_result * grad_distributed
        g_src = src_is_result * grad_distributed.gather(dim, index)
    if not include_self:
        g_self = g_self.scatter(dim, index, 0.0)
    return g_self, g_src


@scatter_reduce.derivative
def _(grad, self, dim, index, src, reduce, include_self, result):
    self_shape, src_shape = tuple(self.shape), tuple(src.shape)
    if self.dim() == 0 or index.dim() == 0:     # one dimension of one or more positions
        grad, self, result = grad.reshape(-1), self.reshape(-1), result.reshape(-1)
        index, src, dim = index.reshape(-1), src.reshape(-1), 0
    used = src[tuple(slice(0, s) for s in index.shape)] if tuple(src.shape) != tuple(index.shape) else src
    g_self, g_src = _reduce_grads(grad, self, dim, index, used, reduce, include_self, result, "scatter_reduce")
    g_src = _pad_to(g_src, tuple(src.shape)).reshape(src_shape)
    return g_self.reshape(self_shape), None, None, g_src, None, None


@index_reduce.derivative
def _(grad, self, dim, index, source, reduce, include_self, result):
    if self.dim() == 0:
        g_self, g_src = _reduce_grads(grad.reshape(-1), self.reshape(-1), 0, index.reshape(-1),
                                      source.reshape(-1), reduce, include_self, result.reshape(-1), "index_reduce")
        return g_self.reshape(()), None, None, g_src.reshape(tuple(source.shape)), None, None
    d = wrap_dim(dim, self.dim())
    shape = [1] * source.dim()
    shape[d] = -1
    expanded = index.reshape(tuple(shape)).expand(tuple(source.shape))
    g_self, g_src = _reduce_grads(grad, self, d, expanded, source, reduce, include_self, result, "index_reduce")
    return g_self, None, None, g_src, None, None
