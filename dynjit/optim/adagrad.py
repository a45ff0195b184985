"""Adagrad (PyTorch's torch.optim.Adagrad): lr_decay, initial_accumulator_value,
weight decay and maximize, with PyTorch's update rule and state ('step', 'sum'),
created for every parameter when the optimizer is built, as PyTorch does."""
from .. import functional as _fn
from .optimizer import Optimizer, _check_at_least, _new_step_count, _signed_grad


class Adagrad(Optimizer):
    """t += 1;  g += weight_decay * p;  clr = lr / (1 + (t - 1) lr_decay);
    sum += g^2;  p -= clr g / (sqrt(sum) + eps)."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_at_least("learning rate", lr)
        _check_at_least("lr_decay value", lr_decay)
        _check_at_least("weight_decay value", weight_decay)
        _check_at_least("initial_accumulator_value value", initial_accumulator_value)
        _check_at_least("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["sum"] = _fn.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            step = state["step"]
            step.add_(1)
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            clr = lr / ((step - 1) * lr_decay + 1)
            state_sum = state["sum"]
            state_sum.addcmul_(g, g, value=1)
            std = state_sum.sqrt().add_(eps)
            p.sub_(g / std * clr)
