"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize, with
PyTorch's update rule and state ('step', 'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq')."""

from .. import functional as _fn
from .._dtype import float64
from ..tensor import tensor
from . import _fast
from ._flat import flat_group_state
from .optimizer import Optimizer


class Adam(Optimizer):
    """m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  (amsgrad: v_max = max(v_max, v))
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    Adam adds weight_decay * p to g; AdamW instead scales p by (1 - lr * weight_decay)."""
    _decoupled_weight_decay = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        if group["foreach"]:
            params = [p for p in group["params"] if p.grad is not None]
            names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
            flat = flat_group_state(self, group, params, names, with_step=True)
            if flat is not None:
                self._update_flat(group, flat)
                return
        # foreach=None updates what it can in numpy, bit for bit as this loop (optim/_fast.py)
        params = _fast.adam_step(self, group, self._decoupled_weight_decay)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        for p in params:
            if p.grad is None:
                continue
            g = -p.grad if maximize else p.grad
            state = self.state[p]
            if not state:
                # a float64 0-d tensor: the bias corrections below are computed from it as
                # tensors (in float64, as Python floats would be), so a compiled step does not
                # depend on the step's value and is not recompiled for every step
                state["step"] = tensor(0.0, dtype=float64)
                state["exp_avg"] = _fn.zeros_like(p)
                state["exp_avg_sq"] = _fn.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = _fn.zeros_like(p)
            step = state["step"]
            step.add_(1)
            if weight_decay != 0:
                if self._decoupled_weight_decay:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                _running_max(max_sq, exp_avg_sq)
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.add_(exp_avg / denom * (-lr / bias_correction1))

    def _update_flat(self, group, flat):
        """The same update, once over the group's flat state (foreach=True)."""
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay = group["weight_decay"]
        g = flat.flat([p.grad for p in flat.params])
        if group["maximize"]:
            g = -g
        step = flat.add_to_steps()
        if weight_decay != 0:
            if self._decoupled_weight_decay:
                for p in flat.params:
                    p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(flat.flat(flat.params), alpha=weight_decay)
        exp_avg, exp_avg_sq = flat.buffers["exp_avg"], flat.buffers["exp_avg_sq"]
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
        if group["amsgrad"]:
            max_sq = flat.buffers["max_exp_avg_sq"]
            _running_max(max_sq, exp_avg_sq)
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        flat.write_back(exp_avg / denom * (-lr / bias_correction1))


def _running_max(max_sq, exp_avg_sq):
    """max_sq = maximum(max_sq, exp_avg_sq) in place, NaN propagating as maximum does: one
    in-place op, which AOT turns into the new value and one copy_ at the end of the graph,
    so a compiled step computes the whole update in one kernel (copy_(maximum(...)) also
    fuses since the llvm backend lowers the functional copy, at the cost of one more node)."""
    max_sq.clamp_(min=exp_avg_sq)


class AdamW(Adam):
    __doc__ = Adam.__doc__
    _decoupled_weight_decay = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused)
