"""Likelihood losses of torch.nn.functional written from registered ops:
`gaussian_nll_loss` (a predicted mean and variance per target, as in heteroscedastic
regression and mixture-density heads)."""
import math

from .. import functional as _fn
from ..autograd import no_grad
from ..ops import registry as _ops

_check_values = _ops["check_values"]

__all__ = ["gaussian_nll_loss"]


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """torch.nn.functional.gaussian_nll_loss: 0.5 * (log(max(var, eps)) + (input - target)^2
    / max(var, eps)) (+ 0.5 log(2 pi) if full), reduced. `var` is input's shape, or one
    dimension short of it, or 1 in exactly one dimension (homoscedastic), or a float. The
    clamp to eps does not stop var's gradient, as in PyTorch."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _fn.ones_like(input)
    else:
        var = _check_values(var, var >= 0, "var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_fn.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
