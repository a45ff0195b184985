"""`index_add` (torch.index_add / Tensor.index_add_): `alpha * source`'s slices along `dim`
added into self at the positions a vector `index` names (repeats accumulate), the scatter
that message-passing code (graph networks, embedding-bag sums) is written with."""
import numpy as np

from .meta import same_as, wrap_dim
from .registry import register, OTHER
from .shape import _as_dtype
from .scatter_reduce import _scalar_name


def _check_index_add(self_shape, self_dtype, dim, index_shape, index_dtype, source_shape, source_dtype):
    """PyTorch's argument errors; returns the wrapped dim."""
    d = wrap_dim(dim, len(self_shape))
    if len(index_shape) > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {len(index_shape)} "
                         f"with type: {_scalar_name(index_dtype)} and size: {list(index_shape)}")
    if _scalar_name(index_dtype) not in ("Long", "Int"):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {_scalar_name(index_dtype)}")
    n = index_shape[0] if index_shape else 1
    source_d = source_shape[d] if source_shape else 1
    if len(source_shape) != len(self_shape) and (len(source_shape) > 1 or len(self_shape) > 1) or any(
            k != d and a != b for k, (a, b) in enumerate(zip(self_shape, source_shape))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = {list(self_shape)} source.shape = {list(source_shape)}")
    if n != source_d:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source_d}), for dim: {d}")
    if _as_dtype(self_dtype) is not _as_dtype(source_dtype):
        raise RuntimeError(f"index_add_(): self ({_scalar_name(self_dtype)}) and source "
                           f"({_scalar_name(source_dtype)}) must have the same scalar type")
    return d


@register("index_add", OTHER, variants="function, method", inplace=True)
def index_add(self, dim, index, source, alpha=1):
    out = np.array(self, copy=True)
    idx, source = np.asarray(index).reshape(-1), np.asarray(source)
    d = _check_index_add(out.shape, out.dtype, dim, np.shape(index), np.asarray(index).dtype,
                         source.shape, source.dtype)
    size = out.shape[d] if out.ndim else 1
    if idx.size and (idx.min() < -size or idx.max() >= size):
        bad = idx[(idx < -size) | (idx >= size)][0]
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    target = np.moveaxis(out.reshape(1) if out.ndim == 0 else out, d, 0)    # a view of `out`
    values = np.moveaxis(source.reshape(1) if source.ndim == 0 else source, d, 0)
    if alpha != 1:
        values = values * np.asarray(alpha, dtype=out.dtype)
    np.add.at(target, idx, values)
    return out


@index_add.meta_fn
def _(self, dim, index, source, alpha=1):
    _check_index_add(self.shape, self.dtype, dim, index.shape, index.dtype, source.shape, source.dtype)
    return same_as(self)


@index_add.derivative
def _(grad, dim, index, source_shape, alpha):
    g_source = None
    if source_shape:
        g_source = grad.index_select(dim, index) if grad.dim() else grad.reshape(1)
    else:                              # a 0-dim source with a 0-dim index
        g_source = grad.reshape(-1).index_select(0, index.reshape(-1)).reshape(())
    if alpha != 1:
        g_source = g_source * alpha
    return grad, None, None, g_source


@index_add.jvp
def _(tangents, result, self, dim, index, source, alpha=1):
    t_self, t_source = tangents[0], tangents[3]
    if t_self is None and t_source is None:
        return None
    from .factories import zeros
    base = t_self if t_self is not None else zeros(tuple(self.shape), dtype=self.dtype)
    if t_source is None:
        return base
    return index_add(base, dim, index, t_source, alpha)
