"""Neural-network ops that are more than a composition of others:
softmax, log_softmax, nll_loss and dropout."""
import numpy as np

from ..random import default_generator
from .registry import register, OTHER
from .reductions import normalize_dims


def _dim(dim, ndim):
    return normalize_dims(dim, ndim)[0] if ndim else 0


@register("softmax", OTHER)
def softmax(self, dim):
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    if x.ndim == 0:
        return np.ones_like(x)
    d = _dim(dim, x.ndim)
    m = np.max(x, axis=d, keepdims=True) if x.size else 0
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    return e / np.sum(e, axis=d, keepdims=True)


@softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return result * (grad - (grad * result).sum(d, keepdim=True))


@register("log_softmax", OTHER)
def log_softmax(self, dim):
    x = np.asarray(self)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    if x.ndim == 0:
        return np.zeros_like(x)
    d = _dim(dim, x.ndim)
    m = np.max(x, axis=d, keepdims=True) if x.size else 0
    s = x - np.where(np.isfinite(m), m, 0)
    return s - np.log(np.sum(np.exp(s), axis=d, keepdims=True))


@log_softmax.derivative
def _(grad, dim, result):
    d = dim if result.ndim else None
    return grad - result.exp() * grad.sum(d, keepdim=True)


@register("nll_loss", OTHER)
def nll_loss(self, target, weight=None, reduction="mean", ignore_index=-100):
    x, t = np.asarray(self), np.asarray(target)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {t.dtype} for the target of nll_loss")
    if x.ndim not in (1, 2):
        raise NotImplementedError(f"nll_loss supports inputs of shape (C,) or (N, C); got {list(x.shape)}")
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t1 = t.reshape(-1)
    if x2.shape[0] != t1.shape[0]:
        raise ValueError(f"Expected input batch_size ({x2.shape[0]}) to match target batch_size ({t1.shape[0]}).")
    valid = t1 != ignore_index
    safe_t = np.where(valid, t1, 0)
    if valid.any() and (safe_t.min() < 0 or safe_t.max() >= x2.shape[1]):
        raise IndexError(f"Target {int(safe_t.max())} is out of bounds.")
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


@native_dropout.derivative
def _(grads, p, train, result):
    if not train or p == 0:
        return grads[0]
    if p == 1:
        return grads[0] * 0
    return grads[0] * result[1] * (1.0 / (1 - p))
