"""RMSprop (PyTorch's torch.optim.RMSprop): centered variant, momentum, weight decay
and maximize, with PyTorch's update rule and state ('step', 'square_avg',
'momentum_buffer', 'grad_avg')."""
from .. import functional as _fn
from . import _fast
from .optimizer import Optimizer, _check_at_least, _new_step_count, _signed_grad


class RMSprop(Optimizer):
    """g += weight_decay * p;  v = alpha v + (1 - alpha) g^2;
    centered: g_avg = alpha g_avg + (1 - alpha) g and the denominator is sqrt(v - g_avg^2) + eps,
    otherwise sqrt(v) + eps;  with momentum: buf = momentum buf + g / denom, p -= lr buf;
    without: p -= lr g / denom."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_at_least("learning rate", lr)
        _check_at_least("epsilon value", eps)
        _check_at_least("momentum value", momentum)
        _check_at_least("weight_decay value", weight_decay)
        _check_at_least("alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        # foreach=None updates what it can in numpy, bit for bit as this loop (optim/_fast.py)
        params = _fast.rmsprop_step(self, group)
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        for p in params:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["square_avg"] = _fn.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = _fn.zeros_like(p)
                if centered:
                    state["grad_avg"] = _fn.zeros_like(p)
            state["step"].add_(1)
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
            if centered:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(g, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(g, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(g, avg, value=-lr)
