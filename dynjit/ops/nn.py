"""Neural-network ops that are more than a composition of others:
softmax, log_softmax, nll_loss and dropout."""
import numpy as np

from .. import _dtype
from ..random import default_generator
from .registry import register, OTHER
from .meta import wrap_dim as _dim, float_dtype


@register("softmax", OTHER)
def softmax(self, dim):
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return np.ones_like(x)
    m = np.max(x, axis=d, keepdims=True) if x.size else 0
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    return e / np.sum(e, axis=d, keepdims=True)


def _softmax_meta(self, dim):
    _dim(dim, len(self.shape))
    return tuple(self.shape), float_dtype(self.dtype)


softmax.meta_fn(_softmax_meta)


@softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return result * (grad - (grad * result).sum(d, keepdim=True))


@register("log_softmax", OTHER)
def log_softmax(self, dim):
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return np.zeros_like(x)
    m = np.max(x, axis=d, keepdims=True) if x.size else 0
    s = x - np.where(np.isfinite(m), m, 0)
    return s - np.log(np.sum(np.exp(s), axis=d, keepdims=True))


log_softmax.meta_fn(_softmax_meta)


@log_softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return grad - result.exp() * grad.sum(d, keepdim=True)


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


@register("nll_loss", OTHER)
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


@register("native_dropout", OTHER, nondiff_outputs=(1,))
def native_dropout(self, p, train):
    x = np.asarray(self)
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return x.copy(), np.ones(x.shape, dtype=np.bool_)
    if p == 1:
        return np.zeros_like(x), np.zeros(x.shape, dtype=np.bool_)
    mask = default_generator.np.random(x.shape) >= p
    return (x * mask / (1 - p)).astype(x.dtype), mask


native_dropout.meta_fn(lambda self, p, train: [(tuple(self.shape), self.dtype),
                                                (tuple(self.shape), _dtype.bool_)])


@native_dropout.derivative
def _(grads, p, train, result):
    if not train or p == 0:
        return grads[0]
    if p == 1:
        return grads[0] * 0
    return grads[0] * result[1] * (1.0 / (1 - p))
