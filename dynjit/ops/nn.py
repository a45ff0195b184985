"""Neural-network ops that are more than a composition of others:
softmax, log_softmax, nll_loss and dropout."""
import numpy as np

from .. import _dtype
from ..random import default_generator
from .registry import register, OTHER, RANDOM, AUTOCAST_FP32
from .meta import wrap_dim as _dim, float_dtype


def _softmax_input(self):
    """The input as a floating point array (integers in the default dtype, as meta says)."""
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(_dtype.get_default_dtype().np)
    return x


def _shifted(x, d):
    """x minus its max along `d` (where that max is finite), in x's dtype."""
    m = np.max(x, axis=d, keepdims=True)
    return x - np.where(np.isfinite(m), m, x.dtype.type(0))


@register("softmax", OTHER, variants="function, method")
def softmax(self, dim):
    x = _softmax_input(self)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return np.ones_like(x)
    if x.size == 0:
        return np.empty_like(x)
    e = np.exp(_shifted(x, d))
    return e / np.sum(e, axis=d, keepdims=True)


def _softmax_meta(self, dim):
    _dim(dim, len(self.shape))
    return tuple(self.shape), float_dtype(self.dtype)


softmax.meta_fn(_softmax_meta)


@softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return result * (grad - (grad * result).sum(d, keepdim=True))


@softmax.jvp
def _(tangents, result, self, dim):     # the Jacobian is symmetric: the backward formula
    t = tangents[0]
    d = dim if result.ndim else None
    return result * (t - (t * result).sum(d, keepdim=True))


@register("log_softmax", OTHER, variants="function, method")
def log_softmax(self, dim):
    x = _softmax_input(self)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return np.zeros_like(x)
    if x.size == 0:
        return np.empty_like(x)
    s = _shifted(x, d)
    return s - np.log(np.sum(np.exp(s), axis=d, keepdims=True))


log_softmax.meta_fn(_softmax_meta)


@log_softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return grad - result.exp() * grad.sum(d, keepdim=True)


@log_softmax.jvp
def _(tangents, result, self, dim):     # t minus the softmax-weighted mean of t
    t = tangents[0]
    d = dim if result.ndim else None
    return t - (result.exp() * t).sum(d, keepdim=True)


REDUCTIONS = ("none", "mean", "sum")


def nll_loss_shape(x, t, weight, reduction):
    """nll_loss's output shape; checks input (C,) or (N, C) against target () or (N,)."""
    if len(x) not in (1, 2):
        raise NotImplementedError(f"nll_loss supports inputs of shape (C,) or (N, C); got {list(x)}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n = 1 if len(x) == 1 else x[0]
    if len(t) != len(x) - 1 or (t and t[0] != n):
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({t[0] if t else 1}) (input shape {list(x)}, target shape {list(t)}).")
    if weight is not None and tuple(weight) != (x[-1],):
        raise RuntimeError(f"weight tensor should be defined either for all {x[-1]} classes or no classes "
                           f"but got weight tensor of shape: {list(weight)}")
    return tuple(t) if reduction == "none" else ()


def _check_target(dtype):
    if dtype.is_floating_point or dtype is _dtype.bool_:
        raise RuntimeError(f"expected an integer (int64) target for nll_loss, but found {dtype.name}")


@register("nll_loss", OTHER, tags=(AUTOCAST_FP32,))
def nll_loss(self, target, weight=None, reduction="mean", ignore_index=-100):
    x, t = np.asarray(self), np.asarray(target)
    _check_target(_dtype.from_numpy_dtype(t.dtype))
    nll_loss_shape(x.shape, t.shape, None if weight is None else np.shape(weight), reduction)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t1 = t.reshape(-1)
    valid = t1 != ignore_index
    safe_t = np.where(valid, t1, 0)
    bad = safe_t[valid & ((safe_t < 0) | (safe_t >= x2.shape[1]))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds (nll_loss has {x2.shape[1]} classes).")
    w = np.ones(x2.shape[1], dtype=x.dtype) if weight is None else np.asarray(weight)
    sample_w = w[safe_t] * valid
    picked = -x2[np.arange(x2.shape[0]), safe_t] * sample_w
    if reduction == "none":
        return picked.reshape(t.shape).astype(x.dtype)
    if reduction == "sum":
        return np.asarray(picked.sum(), dtype=x.dtype)
    if reduction == "mean":
        return np.asarray(picked.sum() / sample_w.sum(), dtype=x.dtype)
    raise ValueError(f"{reduction} is not a valid value for reduction")


@nll_loss.meta_fn
def _(self, target, weight, reduction, ignore_index):
    _check_target(target.dtype)
    return nll_loss_shape(self.shape, target.shape, None if weight is None else weight.shape,
                          reduction), self.dtype


@nll_loss.derivative
def _(grad, self_shape, target, weight, reduction, ignore_index):
    from .shape import one_hot
    n_classes = self_shape[-1]
    valid = target != ignore_index
    t = target.masked_fill(target == ignore_index, 0) if hasattr(target, "masked_fill") else target
    onehot = one_hot(t, n_classes).to(grad.dtype)
    w = onehot if weight is None else onehot * weight.detach()
    w = w * valid.unsqueeze(-1).to(grad.dtype)
    if reduction == "none":
        return -w * grad.unsqueeze(-1)
    if reduction == "mean":
        return -w * grad / w.sum()
    return -w * grad


@register("native_dropout", OTHER, nondiff_outputs=(1,), tags=(RANDOM,))
def native_dropout(self, p, train):
    x = np.asarray(self)
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return x.copy(), np.ones(x.shape, dtype=np.bool_)
    if p == 1:
        return np.zeros_like(x), np.zeros(x.shape, dtype=np.bool_)
    _check_dropout_dtype(_dtype.from_numpy_dtype(x.dtype), p, train)
    mask = default_generator.np.random(x.shape) >= p
    return (x * mask / (1 - p)).astype(x.dtype), mask


def _check_dropout_dtype(dtype, p, train):
    # PyTorch scales the kept values by 1 / (1 - p) in float: an integer or bool tensor
    # can't hold the result (a cast would silently truncate)
    if train and 0 < p < 1 and not dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_dtype.scalar_type_name(dtype)}")


@native_dropout.meta_fn
def _(self, p, train):
    _check_dropout_dtype(self.dtype, p, train)
    return [(tuple(self.shape), self.dtype), (tuple(self.shape), _dtype.bool_)]


@native_dropout.derivative
def _(grads, p, train, result):
    if not train or p == 0:
        return grads[0]
    if p == 1:
        return grads[0] * 0
    return grads[0] * result[1] * (1.0 / (1 - p))


# -- upsampling (F.interpolate) ----------------------------------------------------
# One op per mode and number of spatial dims, named as PyTorch's: upsample_nearest1d/2d/3d
# and upsample_linear1d / upsample_bilinear2d / upsample_trilinear3d, each with its
# `_backward`. They act on the trailing len(output_size) dims of an (N, C, *spatial)
# input. `scales` is None or one entry per spatial dim: the user's scale factor (or None),
# which, as in PyTorch, sets the source coordinate as dst / scale_factor instead of
# dst * in / out (align_corners=True ignores it). Each op is linear in its input: the
# backward applies the transposed interpolation matrix, and the backward's own
# derivative is the forward op again.

def _upsample_check(name, nd, shape, output_size, scales):
    if len(shape) != nd + 2:
        raise ValueError(f"{name} expects a {nd + 2}D input (N, C, {', '.join('d%d' % (i + 1) for i in range(nd))}), "
                         f"got a {len(shape)}D input of shape {list(shape)}")
    if len(output_size) != nd or (scales is not None and len(scales) != nd):
        raise ValueError(f"{name}: output_size and scales need {nd} entries, got {list(output_size)} "
                         f"and {scales}")
    if any(s <= 0 for s in shape[2:]) or any(int(o) <= 0 for o in output_size):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"{list(shape[2:])} and output {list(output_size)}")


def _nearest_index(n_in, n_out, scale):
    """Source index of each output position (PyTorch's nearest_idx, in float32 as there)."""
    dst = np.arange(n_out)
    if n_out == n_in:
        return dst
    if n_out == 2 * n_in:
        return dst >> 1
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(dst.astype(np.float32) * s).astype(np.int64), n_in - 1)


def _linear_weights(n_in, n_out, align_corners, scale):
    """(i0, i1, w0, w1): out[d] = w0[d] * in[i0[d]] + w1[d] * in[i1[d]]."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = 1.0 / scale if scale else n_in / n_out
        src = np.maximum(s * (dst + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    w1 = src - i0
    return i0, i1, 1.0 - w1, w1


def _interp_matrix(mode, n_in, n_out, align_corners, scale):
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if mode == "nearest":
        m[rows, _nearest_index(n_in, n_out, scale)] = 1.0
    else:
        i0, i1, w0, w1 = _linear_weights(n_in, n_out, align_corners, scale)
        np.add.at(m, (rows, i0), w0)
        np.add.at(m, (rows, i1), w1)
    return m


def _upsample_forward(mode, x, output_size, align_corners, scales):
    x = np.asarray(x)
    nd = len(output_size)
    for k in range(nd):
        axis = x.ndim - nd + k
        n_in, n_out = x.shape[axis], int(output_size[k])
        scale = None if scales is None else scales[k]
        shape = [1] * x.ndim
        shape[axis] = n_out
        if mode == "nearest":
            x = np.take(x, _nearest_index(n_in, n_out, scale), axis=axis)
        else:
            i0, i1, w0, w1 = _linear_weights(n_in, n_out, align_corners, scale)
            x = (np.take(x, i0, axis=axis) * w0.astype(x.dtype).reshape(shape)
                 + np.take(x, i1, axis=axis) * w1.astype(x.dtype).reshape(shape))
    return np.ascontiguousarray(x)


def _upsample_backward(mode, g, input_size, align_corners, scales):
    """Gradient w.r.t. the input: the transposed interpolation matrix along each dim."""
    g = np.asarray(g)
    nd = len(input_size) - 2
    for k in range(nd):
        axis = g.ndim - nd + k
        n_in, n_out = int(input_size[2 + k]), g.shape[axis]
        m = _interp_matrix(mode, n_in, n_out, align_corners, None if scales is None else scales[k])
        moved = np.moveaxis(g, axis, -1)
        flat = np.ascontiguousarray(moved).reshape(-1, n_out) @ m.astype(g.dtype)
        g = np.moveaxis(flat.reshape(moved.shape[:-1] + (n_in,)), -1, axis)
    return np.ascontiguousarray(g)


def _register_upsample(name, mode, nd):
    linear = mode == "linear"

    if linear:
        def kernel(self, output_size, align_corners, scales=None):
            _upsample_check(name, nd, np.shape(self), output_size, scales)
            return _upsample_forward(mode, self, output_size, align_corners, scales)

        def bw_kernel(grad_output, output_size, input_size, align_corners, scales=None):
            return _upsample_backward(mode, grad_output, input_size, align_corners, scales)
    else:
        def kernel(self, output_size, scales=None):
            _upsample_check(name, nd, np.shape(self), output_size, scales)
            return _upsample_forward(mode, self, output_size, False, scales)

        def bw_kernel(grad_output, output_size, input_size, scales=None):
            return _upsample_backward(mode, grad_output, input_size, False, scales)
    kernel.__name__, bw_kernel.__name__ = name, name + "_backward"
    op = register(name, OTHER)(kernel)
    bw = register(name + "_backward", OTHER)(bw_kernel)

    def meta(self, output_size, *rest):
        scales = rest[-1] if rest else None
        _upsample_check(name, nd, self.shape, output_size, scales)
        if not self.dtype.is_floating_point:
            raise RuntimeError(f"{name} is not implemented for {self.dtype.name} input")
        return tuple(self.shape[:2]) + tuple(int(o) for o in output_size), self.dtype

    def bw_meta(grad_output, output_size, input_size, *rest):
        expected = tuple(input_size[:2]) + tuple(int(o) for o in output_size)
        if tuple(grad_output.shape) != expected:
            raise RuntimeError(f"{name}_backward: expected grad_output of shape {list(expected)}, "
                               f"got {list(grad_output.shape)}")
        return tuple(int(s) for s in input_size), grad_output.dtype

    op.meta_fn(meta)
    bw.meta_fn(bw_meta)
    if linear:
        op.derivative(lambda grad, self_shape, output_size, align_corners, scales:
                      bw(grad, output_size, tuple(self_shape), align_corners, scales))
        bw.derivative(lambda grad, output_size, align_corners, scales:
                      op(grad, output_size, align_corners, scales))
    else:
        op.derivative(lambda grad, self_shape, output_size, scales:
                      bw(grad, output_size, tuple(self_shape), scales))
        bw.derivative(lambda grad, output_size, scales: op(grad, output_size, scales))
    return op


upsample_nearest1d = _register_upsample("upsample_nearest1d", "nearest", 1)
upsample_nearest2d = _register_upsample("upsample_nearest2d", "nearest", 2)
upsample_nearest3d = _register_upsample("upsample_nearest3d", "nearest", 3)
upsample_linear1d = _register_upsample("upsample_linear1d", "linear", 1)
upsample_bilinear2d = _register_upsample("upsample_bilinear2d", "linear", 2)
upsample_trilinear3d = _register_upsample("upsample_trilinear3d", "linear", 3)


# -- multinomial -----------------------------------------------------------------------

def _multinomial_check(shape, num_samples, replacement):
    if len(shape) not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")


@register("multinomial", OTHER, differentiable=False, variants="function, method", tags=(RANDOM,))
def multinomial(self, num_samples, replacement=False):
    """Indices drawn from each row of the non-negative weights `self` (rows need not sum to 1),
    with or without replacement, from dynjit's generator."""
    p = np.asarray(self)
    _multinomial_check(p.shape, num_samples, replacement)
    if p.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype.from_numpy_dtype(p.dtype).name}")
    rows = p.reshape(-1, p.shape[-1]).astype(np.float64)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    sums = rows.sum(axis=1)
    if np.any(sums <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    gen = default_generator.np
    if not replacement:
        # as PyTorch's CPU kernel: the num_samples largest p / Exp(1) draws (zero weights last)
        keys = rows / gen.standard_exponential(rows.shape)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        cdf = np.cumsum(rows / sums[:, None], axis=1)
        u = gen.random((rows.shape[0], num_samples))
        out = np.stack([np.searchsorted(c, ui, side="right") for c, ui in zip(cdf, u)])
        out = np.minimum(out, rows.shape[1] - 1)
    return out.astype(np.int64).reshape(p.shape[:-1] + (num_samples,))


@multinomial.meta_fn
def _(self, num_samples, replacement):
    _multinomial_check(tuple(self.shape), num_samples, replacement)
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {self.dtype.name}")
    return tuple(self.shape[:-1]) + (num_samples,), _dtype.int64
