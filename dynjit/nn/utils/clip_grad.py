"""Gradient clipping: scale (clip_grad_norm_) or clamp (clip_grad_value_) parameters'
.grad in place."""
import math

from ... import functional as _fn
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor, tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients so that their total `norm_type` norm (over all of them, as if
    concatenated) is at most `max_norm`. Returns the total norm before clipping."""
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [g.abs().max() for g in grads]
            total = norms[0] if len(norms) == 1 else _fn.stack(norms).max()
        else:
            total = _fn.stack([g.norm(norm_type) for g in grads]).norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                               "non-finite, so it cannot be clipped. To disable this error and scale the "
                               "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
