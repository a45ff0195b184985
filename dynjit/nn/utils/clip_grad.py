"""Gradient clipping (PyTorch's torch.nn.utils.clip_grad): scale the parameters'
.grad in place so that their total norm is at most max_norm (clip_grad_norm_, or
get_total_norm then clip_grads_with_norm_), or clamp them (clip_grad_value_).

The total norm of several tensors is, as in PyTorch, the norm of the vector of
their norms: for p > 0, inf and -inf that is the norm of all elements
concatenated; for norm_type 0 it counts the tensors that have a nonzero element.
`foreach` is accepted and changes nothing: the work is already a handful of ops."""
import math
import warnings

from ... import functional as _fn
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor, tensor


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters):
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def _tensor_norm(t, norm_type):
    if norm_type == math.inf:
        return t.abs().max()
    if norm_type == -math.inf:
        return t.abs().min()
    return t.norm(norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the vector of the norms of `tensors`; 0. for none."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [_tensor_norm(t, norm_type) for t in tensors]
        total = _tensor_norm(_fn.stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6))."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients so that their total `norm_type` norm (over all of them, as if
    concatenated) is at most `max_norm`. Returns the total norm before clipping."""
    parameters = _as_list(parameters)       # a generator is read once, here
    grads = _grads(parameters)
    if not grads:
        return tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
