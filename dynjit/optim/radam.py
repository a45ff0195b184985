"""RAdam (PyTorch's torch.optim.RAdam: Adam with the variance rectification of Liu et
al. 2019), with decoupled_weight_decay and maximize, with PyTorch's update rule and
state ('step', 'exp_avg', 'exp_avg_sq')."""
from .. import functional as _fn
from .optimizer import Optimizer, _check_at_least, _check_betas, _new_step_count, _signed_grad


class RAdam(Optimizer):
    """m, v as in Adam;  rho_inf = 2 / (1 - b2) - 1;  rho_t = rho_inf - 2 t b2^t / (1 - b2^t);
    when rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)) and
    p -= lr m / (1 - b1^t) * r sqrt(1 - b2^t) / (sqrt(v) + eps);  otherwise p -= lr m / (1 - b1^t).
    Weight decay is added to g, or with decoupled_weight_decay scales p by (1 - lr wd)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_at_least("learning rate", lr)
        _check_at_least("epsilon value", eps)
        _check_betas(betas)
        _check_at_least("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        rho_inf = 2 / (1 - beta2) - 1
        for p in group["params"]:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["exp_avg"] = _fn.zeros_like(p)
                state["exp_avg_sq"] = _fn.zeros_like(p)
            step = state["step"]
            step.add_(1)
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
            # Both branches are computed and selected with where(), so that the step count
            # stays a tensor (a compiled step is not specialised on it); the ratio is
            # clamped at 0 because it is negative for 2 < rho_t < 4, a branch never taken.
            ratio = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            rect = ratio.clamp_min(0).sqrt()
            adaptive = bias_correction2.sqrt() / exp_avg_sq.sqrt().add_(eps)
            factor = _fn.where(rho_t > 5.0, adaptive * rect, 1.0)
            p.sub_(exp_avg * factor * (lr / bias_correction1))
