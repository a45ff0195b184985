"""Adamax (PyTorch's torch.optim.Adamax: Adam with the infinity norm) with weight decay
and maximize, with PyTorch's update rule and state ('step', 'exp_avg', 'exp_inf')."""
from .. import functional as _fn
from .optimizer import Optimizer, _check_at_least, _check_betas, _new_step_count, _signed_grad


class Adamax(Optimizer):
    """g += weight_decay * p;  m = b1 m + (1 - b1) g;  u = max(b2 u, |g| + eps);
    p -= lr / (1 - b1^t) * m / u."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_at_least("learning rate", lr)
        _check_at_least("epsilon value", eps)
        _check_betas(betas)
        _check_at_least("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["exp_avg"] = _fn.zeros_like(p)
                state["exp_inf"] = _fn.zeros_like(p)
            step = state["step"]
            step.add_(1)
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_inf.copy_(_fn.maximum(exp_inf.mul_(beta2), g.abs().add_(eps)))
            p.sub_(exp_avg / exp_inf * (lr / (1 - beta1 ** step)))
