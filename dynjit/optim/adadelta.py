"""Adadelta (PyTorch's torch.optim.Adadelta) with weight decay and maximize, with
PyTorch's update rule and state ('step', 'square_avg', 'acc_delta')."""
from .. import functional as _fn
from .optimizer import Optimizer, _check_at_least, _new_step_count, _signed_grad


class Adadelta(Optimizer):
    """g += weight_decay * p;  v = rho v + (1 - rho) g^2;
    delta = sqrt(u + eps) / sqrt(v + eps) * g;  u = rho u + (1 - rho) delta^2;  p -= lr delta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_at_least("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_at_least("epsilon value", eps)
        _check_at_least("weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["square_avg"] = _fn.zeros_like(p)
                state["acc_delta"] = _fn.zeros_like(p)
            state["step"].add_(1)
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_().div_(std).mul_(g)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)
