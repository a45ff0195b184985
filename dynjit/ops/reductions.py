"""Reductions: sum, mean, prod, max/min (full and along a dim), amax/amin,
argmax/argmin, var/std, logsumexp, norm, all/any, cumsum, sum_to_size.

`dim` may be None (all dims), an int or a tuple of ints; `keepdim` keeps
reduced dims as size 1. Gradients are expanded back with `_unreduce`.
"""
import math
from collections import namedtuple

import numpy as np

from .complex_ops import conj_if_complex
from .. import _dtype
from .registry import register, REDUCTION, NONE_DIM_REDUCES_ALL, AUTOCAST_FP32, linear_jvp
from .pointwise import where
from .dispatch import grad_state as _grad_state
from .meta import normalize_dims, reduced_shape, accumulate_dtype, float_dtype, same_as

values_indices = namedtuple("values_indices", ["values", "indices"])


def _np_axis(x, dim):
    if dim is None:
        return None
    x = np.asarray(x)
    if x.ndim == 0:
        normalize_dims(dim, 0)
        return None
    return normalize_dims(dim, x.ndim)


def _unreduce(grad, shape, dim, keepdim):
    """Broadcast a reduced gradient back to `shape`. A full reduction's 0-d gradient is
    expanded as it is (PyTorch's sum_backward: one ExpandBackward0 in a double-backward graph)."""
    if not keepdim and len(shape) and dim is not None:
        dims = normalize_dims(dim, len(shape))
        kept = [1 if i in dims else s for i, s in enumerate(shape)]
        grad = grad.reshape(kept)
    return grad.expand(shape)


def _acc_dtype(x, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype).np
    x = np.asarray(x)
    return np.int64 if x.dtype.kind in "biu" else x.dtype


@register("sum", REDUCTION, complex_ok=True, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def sum_op(self, dim=None, keepdim=False, dtype=None):
    # np.add.reduce skips np.sum's Python wrapper (half the cost on small tensors)
    out = _acc_dtype(self, dtype)
    total = np.add.reduce(self, axis=_np_axis(self, dim), keepdims=keepdim, dtype=_wide(out))
    return total if out != np.float16 else np.asarray(total).astype(out)


sum_op.jvp(linear_jvp(sum_op))     # forward mode
@sum_op.derivative
def _(grad, self_shape, dim, keepdim):
    return _unreduce(grad, self_shape, dim, keepdim)


@sum_op.meta_fn
def _(self, dim, keepdim, dtype):
    return reduced_shape(self.shape, dim, keepdim), accumulate_dtype(self.dtype, dtype)


def _sum_to_size_axes(shape, size):
    """The dims sum_to_size sums (None: none, the input is returned as it is)."""
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != x for s, x in zip(size, shape[lead:])):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    # as PyTorch's sum_to: a sum whenever a dim is reduced or the size is () (then even of a 0-d input)
    return axes if axes or not size else None


@register("sum_to_size", REDUCTION, complex_ok=True, variants="method", varargs="size")
def sum_to_size(self, size):
    size = tuple(size)
    axes = _sum_to_size_axes(self.shape, size)
    if axes is None:
        return self.reshape(size)
    # a sum: sum's dtype (integers and bool accumulate in int64, float16 in float32)
    return np.reshape(sum_op.kernel(self, axes, True, None), size)


sum_to_size.jvp(linear_jvp(sum_to_size))     # forward mode
@sum_to_size.derivative
def _(grad, self_shape):
    return grad.expand(self_shape)


@sum_to_size.meta_fn
def _(self, size):
    size = tuple(size)
    if _sum_to_size_axes(tuple(self.shape), size) is None:
        return size, self.dtype
    return size, accumulate_dtype(self.dtype)


@register("mean", REDUCTION, complex_ok=True, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def mean(self, dim=None, keepdim=False, dtype=None):
    x = np.asarray(self)
    if dtype is None and x.dtype.kind not in "fc":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_dtype.from_numpy_dtype(x.dtype).name}")
    out = x.dtype if dtype is None else _dtype.to_dtype(dtype).np
    axis = _np_axis(x, dim)
    # sum / count: an empty reduction gives nan without numpy's "Mean of empty slice" warning
    total = np.add.reduce(x, axis=axis, keepdims=keepdim, dtype=_wide(out))
    count = x.size if axis is None else math.prod(x.shape[d] for d in axis)
    return np.true_divide(total, count).astype(out, copy=False)


def _wide(np_dtype):
    """Accumulate float16 in float32, as PyTorch does on the CPU."""
    return np.float32 if np_dtype == np.float16 else np_dtype


mean.jvp(linear_jvp(mean))     # forward mode
@mean.derivative
def _(grad, self_shape, dim, keepdim):
    n = 1
    for d in normalize_dims(dim, len(self_shape)):
        n *= self_shape[d] if self_shape else 1
    return _unreduce(grad, self_shape, dim, keepdim) / max(n, 1)


@mean.meta_fn
def _(self, dim, keepdim, dtype):
    if dtype is None and self.dtype._category < 2:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {self.dtype.name}")
    return reduced_shape(self.shape, dim, keepdim), _dtype.to_dtype(dtype) if dtype is not None else self.dtype


@register("prod", REDUCTION, complex_ok=True, variants="function, method",
          tags=(NONE_DIM_REDUCES_ALL, AUTOCAST_FP32))
def prod(self, dim=None, keepdim=False, dtype=None):
    return np.prod(self, axis=_np_axis(self, dim), keepdims=keepdim, dtype=_acc_dtype(self, dtype))


@prod.derivative
def _(grad, self, dim, keepdim):
    # d prod / d x_i = product of the other elements, computed without dividing
    # (exact when some elements are zero).
    g = _unreduce(grad, self.shape, dim, keepdim)
    if self.ndim == 0:
        return g
    return g * conj_if_complex(_prod_of_others(self, normalize_dims(dim, self.ndim)))


prod.meta_fn(sum_op._meta)


def _prod_of_others(x, dims):
    keep = [d for d in range(x.ndim) if d not in dims]
    perm = keep + list(dims)
    n = 1
    for d in dims:
        n *= x.shape[d]
    flat = x.permute(perm).reshape([x.shape[d] for d in keep] + [n])
    if n == 0:
        return x
    one = flat.narrow(-1, 0, 1) * 0 + 1
    left = _cat([one, flat.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    right = _cat([flat.narrow(-1, 1, n - 1), one], -1).flip([-1]).cumprod(-1).flip([-1])
    excl = (left * right).reshape([x.shape[d] for d in perm])
    inverse = [perm.index(d) for d in range(x.ndim)]
    return excl.permute(inverse)


def _cat(tensors, dim):
    from .shape import cat
    return cat(tensors, dim)


def _minmax(np_fn):
    def kernel(self):
        x = np.asarray(self)
        if x.size == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return np_fn(x)
    return kernel


def _check_nonempty_reduction(name, shape, dim):
    """max-like reductions have no identity: every reduced dim must be non-empty."""
    for d in (normalize_dims(dim, len(shape)) if shape else ()):
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


@register("amax", REDUCTION, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def amax(self, dim=(), keepdim=False):
    x = np.asarray(self)
    _check_nonempty_reduction("amax", x.shape, dim)
    return np.max(x, axis=_np_axis(x, dim), keepdims=keepdim)


@amax.meta_fn
def _(self, dim, keepdim):
    _check_nonempty_reduction("amax", self.shape, dim)
    return reduced_shape(self.shape, dim, keepdim), self.dtype


@amax.derivative
def _(grad, self, dim, keepdim, result):
    return _evenly_distribute(grad, self, dim, keepdim, result)


@register("amin", REDUCTION, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def amin(self, dim=(), keepdim=False):
    x = np.asarray(self)
    _check_nonempty_reduction("amin", x.shape, dim)
    return np.min(x, axis=_np_axis(x, dim), keepdims=keepdim)


@amin.meta_fn
def _(self, dim, keepdim):
    _check_nonempty_reduction("amin", self.shape, dim)
    return reduced_shape(self.shape, dim, keepdim), self.dtype


@amin.derivative
def _(grad, self, dim, keepdim, result):
    return _evenly_distribute(grad, self, dim, keepdim, result)


def _ties(self, value):
    """Where `self` equals the selected value (NaN counts as equal to a NaN result)."""
    return (self == value).logical_or(self.isnan().logical_and(value.isnan()))


def _evenly_distribute(grad, self, dim, keepdim, result):
    """Gradient of a max/min: shared evenly among the elements that tie for it."""
    mask = _ties(self, _unreduce(result, self.shape, dim, keepdim))
    count = _unreduce(mask.sum(dim, keepdim), self.shape, dim, keepdim)
    return _unreduce(grad, self.shape, dim, keepdim) * mask / count


@register("max", REDUCTION, dim_overload="max_dim")
def max_op(self):
    return _minmax(np.max)(self)


@max_op.derivative
def _(grad, self, result):
    mask = _ties(self, result)
    return grad * mask / mask.sum()


@max_op.meta_fn
def _(self):
    if 0 in self.shape:
        raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    return (), self.dtype


@register("min", REDUCTION, dim_overload="min_dim")
def min_op(self):
    return _minmax(np.min)(self)


@min_op.derivative
def _(grad, self, result):
    mask = _ties(self, result)
    return grad * mask / mask.sum()


min_op.meta_fn(max_op._meta)


def _dim_kernel(arg_fn, name):
    """A (values, indices) reduction along one dim; arg_fn(x, axis) gives the
    selected indices with the dim kept."""
    def kernel(self, dim, keepdim=False):
        x = np.asarray(self)
        if x.ndim == 0:
            normalize_dims(dim, 0)
            return values_indices(x.copy(), np.zeros((), dtype=np.int64))
        d = normalize_dims(dim, x.ndim)[0]
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        idx = arg_fn(x, axis=d)
        vals = np.take_along_axis(x, idx, axis=d)
        if not keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return values_indices(vals, idx.astype(np.int64))
    return kernel


def _lower_median_index(x, axis, skip_nan):
    """Index of the lower median along `axis` (kept as size 1). NaN propagates (the
    first NaN is selected) unless skip_nan, which takes the median of the others."""
    order = np.argsort(x, axis=axis, kind="stable")       # NaNs sort last
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=bool)
    count = x.shape[axis] - nan.sum(axis=axis, keepdims=True) if skip_nan else x.shape[axis]
    kept = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    k = np.broadcast_to(np.maximum((count - 1) // 2, 0), kept).astype(np.int64)
    idx = np.take_along_axis(order, k, axis=axis)
    if not skip_nan:
        idx = np.where(nan.any(axis=axis, keepdims=True), np.argmax(nan, axis=axis, keepdims=True), idx)
    return idx


max_dim = register("max_dim", REDUCTION, nondiff_outputs=(1,))(
    _dim_kernel(lambda x, axis: np.argmax(x, axis=axis, keepdims=True), "max"))
min_dim = register("min_dim", REDUCTION, nondiff_outputs=(1,))(
    _dim_kernel(lambda x, axis: np.argmin(x, axis=axis, keepdims=True), "min"))
median_dim = register("median_dim", REDUCTION, nondiff_outputs=(1,))(
    _dim_kernel(lambda x, axis: _lower_median_index(x, axis, False), "median"))
nanmedian_dim = register("nanmedian_dim", REDUCTION, nondiff_outputs=(1,))(
    _dim_kernel(lambda x, axis: _lower_median_index(x, axis, True), "nanmedian"))


def _select_backward(grads, self_shape, dim, keepdim, result):
    return value_selecting_backward(grads[0], result[1], self_shape, dim, keepdim)


for _op in (max_dim, min_dim, median_dim, nanmedian_dim):
    _op.derivative(_select_backward)


@max_dim.meta_fn
def _(self, dim, keepdim):
    shape = reduced_shape(self.shape, dim, keepdim)
    if self.shape and self.shape[normalize_dims(dim, len(self.shape))[0]] == 0:
        raise IndexError(f"max(): Expected reduction dim {normalize_dims(dim, len(self.shape))[0]} "
                         "to have non-zero size.")
    return [(shape, self.dtype), (shape, _dtype.int64)]


for _op in (min_dim, median_dim, nanmedian_dim):
    _op.meta_fn(max_dim._meta)


def _median_kernel(skip_nan):
    def kernel(self):
        x = np.asarray(self).reshape(-1)
        if x.size == 0:
            if x.dtype.kind != "f":
                raise RuntimeError("median() of an empty integer tensor is undefined")
            return np.asarray(np.nan, dtype=x.dtype)
        return x[_lower_median_index(x, 0, skip_nan)[0]]
    return kernel


median = register("median", REDUCTION, dim_overload="median_dim")(_median_kernel(False))
nanmedian = register("nanmedian", REDUCTION, dim_overload="nanmedian_dim")(_median_kernel(True))


@median.derivative
def _(grad, self, result):
    # shared evenly among the elements equal to the median, as PyTorch does
    mask = _ties(self, result)
    return grad * mask / mask.sum()


nanmedian.derivative(median.derivative_fn)
median.meta_fn(lambda self: ((), self.dtype))
nanmedian.meta_fn(lambda self: ((), self.dtype))


@register("value_selecting_backward", REDUCTION)
def value_selecting_backward(grad, indices, shape, dim, keepdim):
    shape = tuple(shape)
    out = np.zeros(shape, dtype=np.asarray(grad).dtype)
    if not shape:
        out[...] = grad
        return out
    d = normalize_dims(dim, len(shape))[0]
    g, i = np.asarray(grad), np.asarray(indices)
    if not keepdim:
        g, i = np.expand_dims(g, d), np.expand_dims(i, d)
    np.put_along_axis(out, i, g, axis=d)
    return out


@value_selecting_backward.derivative
def _(grad, indices, dim, keepdim):
    d = normalize_dims(dim, grad.ndim)[0] if grad.ndim else 0
    i = indices if keepdim or grad.ndim == 0 else indices.unsqueeze(d)
    out = grad.gather(d, i) if grad.ndim else grad
    return out if keepdim or grad.ndim == 0 else out.squeeze(d)


@value_selecting_backward.meta_fn
def _(grad, indices, shape, dim, keepdim):
    return tuple(shape), grad.dtype


def _arg(np_fn, name):
    def kernel(self, dim=None, keepdim=False):
        x = np.asarray(self)
        if dim is None and x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        _check_nonempty_reduction(name, x.shape, dim)
        if dim is None:
            r = np.asarray(np_fn(x.reshape(-1)), dtype=np.int64)
            return r.reshape((1,) * x.ndim) if keepdim else r
        if x.ndim == 0:
            normalize_dims(dim, 0)
            return np.zeros((), dtype=np.int64)
        d = normalize_dims(dim, x.ndim)[0]
        return np.asarray(np_fn(x, axis=d, keepdims=keepdim), dtype=np.int64)
    op = register(name, REDUCTION, differentiable=False, variants="function, method",
                  tags=(NONE_DIM_REDUCES_ALL,))(kernel)

    @op.meta_fn
    def meta(self, dim, keepdim):
        if dim is None and 0 in self.shape:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        _check_nonempty_reduction(name, self.shape, dim)
        if dim is None:
            return ((1,) * len(self.shape) if keepdim else ()), _dtype.int64
        return reduced_shape(self.shape, dim, keepdim), _dtype.int64
    return op


argmax = _arg(np.argmax, "argmax")
argmin = _arg(np.argmin, "argmin")


def _require_float(dtype, message, complex_ok=False):
    if not (dtype.is_floating_point or (complex_ok and dtype.is_complex)):
        raise RuntimeError(f"{message}; got a {dtype.name} tensor (convert it with .double() or .float())")


@register("var", REDUCTION, complex_ok=True, tags=(NONE_DIM_REDUCES_ALL,))
def var(self, dim=None, correction=1, keepdim=False):
    x = np.asarray(self)
    _require_float(_dtype.from_numpy_dtype(x.dtype), "std and var only support floating point dtypes", True)
    return np.var(x, axis=_np_axis(x, dim), ddof=correction, keepdims=keepdim)


@var.derivative
def _(grad, self, dim, correction, keepdim):
    n = 1
    for d in normalize_dims(dim, self.ndim):
        n *= self.shape[d] if self.ndim else 1
    centered = self - self.mean(dim, keepdim=True) if self.ndim else self * 0
    return _unreduce(grad, self.shape, dim, keepdim) * centered * (2.0 / max(n - correction, 0))


@register("std", REDUCTION, complex_ok=True, tags=(NONE_DIM_REDUCES_ALL,))
def std(self, dim=None, correction=1, keepdim=False):
    x = np.asarray(self)
    _require_float(_dtype.from_numpy_dtype(x.dtype), "std and var only support floating point dtypes", True)
    return np.std(x, axis=_np_axis(x, dim), ddof=correction, keepdims=keepdim)


@std.derivative
def _(grad, self, dim, correction, keepdim, result):
    n = 1
    for d in normalize_dims(dim, self.ndim):
        n *= self.shape[d] if self.ndim else 1
    centered = self - self.mean(dim, keepdim=True) if self.ndim else self * 0
    r = _unreduce(result, self.shape, dim, keepdim)
    return _unreduce(grad, self.shape, dim, keepdim) * centered / (r * max(n - correction, 0))


@var.meta_fn
def _(self, dim, correction, keepdim):
    _require_float(self.dtype, "std and var only support floating point dtypes", True)
    return reduced_shape(self.shape, dim, keepdim), self.dtype.to_real()    # complex: real


@register("var_mean", REDUCTION, tags=(NONE_DIM_REDUCES_ALL,))
def var_mean(self, dim=None, correction=1, keepdim=False):
    """Variance and mean in one op: one backward node with two outputs."""
    x = np.asarray(self)
    _require_float(_dtype.from_numpy_dtype(x.dtype), "std and var only support floating point dtypes")
    axis = _np_axis(x, dim)
    return (np.asarray(np.var(x, axis=axis, ddof=correction, keepdims=keepdim)),
            np.asarray(np.mean(x, axis=axis, keepdims=keepdim)))


@var_mean.derivative
def _(grads, self, dim, correction, keepdim):
    g_var, g_mean = grads
    n = 1
    for d in normalize_dims(dim, self.ndim):
        n *= self.shape[d] if self.ndim else 1
    centered = self - self.mean(dim, keepdim=True) if self.ndim else self * 0
    return (_unreduce(g_var, self.shape, dim, keepdim) * centered * (2.0 / max(n - correction, 0))
            + _unreduce(g_mean, self.shape, dim, keepdim) / max(n, 1))


@var_mean.meta_fn
def _(self, dim, correction, keepdim):
    _require_float(self.dtype, "std and var only support floating point dtypes")
    shape = reduced_shape(self.shape, dim, keepdim)
    return [(shape, self.dtype), (shape, self.dtype)]


std.meta_fn(var._meta)


@register("logsumexp", REDUCTION, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def logsumexp(self, dim, keepdim=False):
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(_dtype.get_default_dtype().np)
    axis = _np_axis(x, dim)
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdim))
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=axis)


@logsumexp.derivative
def _(grad, self, dim, keepdim, result):
    return _unreduce(grad, self.shape, dim, keepdim) * (self - _unreduce(result, self.shape, dim, keepdim)).exp()


@logsumexp.meta_fn
def _(self, dim, keepdim):
    return reduced_shape(self.shape, dim, keepdim), float_dtype(self.dtype)


@register("norm", REDUCTION, complex_ok=True, tags=(NONE_DIM_REDUCES_ALL,))
def norm(self, p=2, dim=None, keepdim=False):
    x = np.asarray(self)
    _require_float(_dtype.from_numpy_dtype(x.dtype), "norm expects a floating point tensor", True)
    axis = _np_axis(x, dim)
    a = np.abs(x)
    if p == float("inf"):
        _check_nonempty_reduction("norm", x.shape, () if dim is None else dim)
        return np.max(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    if p == 1:
        return np.sum(a, axis=axis, keepdims=keepdim)
    if p == 2:
        x = a if x.dtype.kind == "c" else x
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdim))
    return np.power(np.sum(np.power(a, p), axis=axis, keepdims=keepdim), 1.0 / p)


@norm.derivative
def _(grad, self, p, dim, keepdim, result):
    g = _unreduce(grad, self.shape, dim, keepdim)
    if p == 0:      # counts nonzeros: piecewise constant
        return g * 0
    r = _unreduce(result, self.shape, dim, keepdim)
    if p == 2:
        return (g * self / r).masked_fill(r == 0, 0.0)
    # (sgn: the sign of a real number, z / |z| of a complex one)
    if p == 1:
        return g * self.sgn()
    if p == float("inf"):
        mask = self.abs() == r
        return g * self.sgn() * mask / mask.sum(dim, keepdim=True).expand(self.shape) if dim is not None \
            else g * self.sgn() * mask / mask.sum()
    return (g * self.sgn() * self.abs().pow(p - 1) / r.pow(p - 1)).masked_fill(r == 0, 0.0)


@norm.meta_fn
def _(self, p, dim, keepdim):
    _require_float(self.dtype, "norm expects a floating point tensor", True)
    return reduced_shape(self.shape, dim, keepdim), self.dtype.to_real()    # complex: real


@register("all", REDUCTION, complex_ok=True, differentiable=False, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def all_op(self, dim=None, keepdim=False):
    return np.all(self, axis=_np_axis(self, dim), keepdims=keepdim)


@register("any", REDUCTION, complex_ok=True, differentiable=False, variants="function, method", tags=(NONE_DIM_REDUCES_ALL,))
def any_op(self, dim=None, keepdim=False):
    return np.any(self, axis=_np_axis(self, dim), keepdims=keepdim)


@all_op.meta_fn
def _(self, dim, keepdim):
    return reduced_shape(self.shape, dim, keepdim), _dtype.bool_


any_op.meta_fn(all_op._meta)


@register("cumsum", REDUCTION, complex_ok=True, variants="function, method")
def cumsum(self, dim, dtype=None):
    x = np.asarray(self)
    if x.ndim == 0:
        return x.astype(_acc_dtype(x, dtype))
    return np.cumsum(x, axis=normalize_dims(dim, x.ndim)[0], dtype=_acc_dtype(x, dtype))


@cumsum.meta_fn
def _(self, dim, dtype):
    normalize_dims(dim, len(self.shape))
    return tuple(self.shape), accumulate_dtype(self.dtype, dtype)


cumsum.jvp(linear_jvp(cumsum))     # forward mode
@cumsum.derivative
def _(grad, self, dim):
    if self.ndim == 0:
        return grad
    return grad.flip([dim]).cumsum(dim).flip([dim])


@register("cumprod", REDUCTION, complex_ok=True, variants="function, method")
def cumprod(self, dim, dtype=None):
    x = np.asarray(self)
    if x.ndim == 0:
        return x.astype(_acc_dtype(x, dtype))
    return np.cumprod(x, axis=normalize_dims(dim, x.ndim)[0], dtype=_acc_dtype(x, dtype))


cumprod.meta_fn(cumsum._meta)


def _reverse_cumsum(t, dim):
    return t.flip([dim]).cumsum(dim).flip([dim])


@cumprod.derivative
def _(grad, self, dim, result):
    """d out_j / d x_k = prod_{i <= j, i != k} x_i, summed against grad for j >= k.

    Exact with zeros and free of data-dependent branches. When this backward is itself
    being differentiated (create_graph), the O(n^2) form is used, whose own derivative
    is exact at zeros too; otherwise the O(n) form:
    - before the first zero of a slice, divide: reverse_cumsum(grad * out) / x;
    - at the first zero, x_k is replaced by 1 in the products;
    - after it, every product holds that zero.
    """
    if self.ndim == 0:
        return grad
    if self.is_complex():
        # the formula is linear in grad with products of x as coefficients: conj(D(conj(grad)))
        # conjugates the coefficients, as the complex convention wants (see complex_ops)
        return conj_if_complex(_cumprod_backward_real(conj_if_complex(grad), self, dim, result))
    return _cumprod_backward_real(grad, self, dim, result)


def _cumprod_backward_real(grad, self, dim, result):
    if _grad_state.enabled:
        return _cumprod_backward_quadratic(grad, self, dim)
    zero = self == 0
    seen = zero.cumsum(dim)
    before = seen == 0
    first = zero.logical_and(seen == 1)
    g_before = _reverse_cumsum(grad * result, dim) / where(before, self, 1.0)
    g_first = _reverse_cumsum(grad * where(first, 1.0, self).cumprod(dim), dim)
    return where(before, g_before, 0.0) + where(first, g_first, 0.0)


def _cumprod_backward_quadratic(grad, self, dim):
    """sum_{j >= k} grad_j prod_{i <= j, i != k} x_i, from a cumprod over an (n, n) table
    whose row k has x_k replaced by 1."""
    from .factories import eye
    n = self.shape[dim]
    x = self.movedim(dim, -1)
    table = where(eye(n, dtype=_dtype.bool_), 1.0, x.unsqueeze(-2).expand(*x.shape[:-1], n, n))
    g = (table.cumprod(-1) * grad.movedim(dim, -1).unsqueeze(-2)).triu().sum(-1)
    return g.movedim(-1, dim)


# -- sorting ------------------------------------------------------------------

def _sort_indices(x, axis, descending):
    """Stable sort order along `axis`; NaN counts as the largest value (as in PyTorch)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # stable descending: sort the reversed array, then map back (equal values keep their order)
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


@register("sort", REDUCTION, nondiff_outputs=(1,), variants="function, method")
def sort(self, dim=-1, descending=False, stable=False):
    x = np.asarray(self)
    if x.ndim == 0:
        normalize_dims(dim, 0)
        return values_indices(x.copy(), np.zeros((), dtype=np.int64))
    d = normalize_dims(dim, x.ndim)[0]
    idx = _sort_indices(x, d, descending)
    return values_indices(np.take_along_axis(x, idx, d), idx.astype(np.int64))


@sort.meta_fn
def _(self, dim, descending, stable):
    normalize_dims(dim, len(self.shape))
    return [same_as(self), same_as(self, _dtype.int64)]


def _scatter_back(grad, self_shape, dim, indices):
    """The gradient of selecting `indices` along `dim`: grad placed back where it came from."""
    from .factories import zeros
    if not self_shape:
        return grad
    return zeros(self_shape, dtype=grad.dtype).scatter(dim, indices, grad)


@sort.derivative
def _(grads, self_shape, dim, result):
    return _scatter_back(grads[0], self_shape, dim, result[1])


@register("argsort", REDUCTION, differentiable=False, variants="function, method")
def argsort(self, dim=-1, descending=False, stable=False):
    return sort.kernel(self, dim, descending, stable)[1]


argsort.meta_fn(lambda self, dim, descending, stable: sort._meta(self, dim, descending, stable)[1])


def _topk_dim(shape, k, dim):
    if not shape:
        normalize_dims(dim, 0)
        if k not in (0, 1):
            raise RuntimeError(f"selected index k out of range: k={k} for a 0-d tensor")
        return 0
    d = normalize_dims(dim, len(shape))[0]
    if not 0 <= k <= shape[d]:
        raise RuntimeError(f"selected index k out of range: k={k} but dimension {d} has size {shape[d]}")
    return d


@register("topk", REDUCTION, nondiff_outputs=(1,), variants="function, method")
def topk(self, k, dim=-1, largest=True, sorted=True):
    x = np.asarray(self)
    d = _topk_dim(x.shape, k, dim)
    if x.ndim == 0:
        return values_indices(x.copy(), np.zeros((), dtype=np.int64))
    idx = np.take(_sort_indices(x, d, largest), np.arange(k), axis=d)
    return values_indices(np.take_along_axis(x, idx, d), idx.astype(np.int64))


@topk.meta_fn
def _(self, k, dim, largest, sorted):
    d = _topk_dim(self.shape, k, dim)
    shape = tuple(self.shape[:d]) + (k,) + tuple(self.shape[d + 1:]) if self.shape else ()
    return [(shape, self.dtype), (shape, _dtype.int64)]


@topk.derivative
def _(grads, self_shape, dim, result):
    return _scatter_back(grads[0], self_shape, dim, result[1])
