"""NAdam (PyTorch's torch.optim.NAdam: Adam with Nesterov momentum and the momentum
schedule of Dozat 2016), with momentum_decay, decoupled_weight_decay and maximize,
with PyTorch's update rule and state ('step', 'mu_product', 'exp_avg', 'exp_avg_sq')."""
from .. import functional as _fn
from .._dtype import float64
from ..tensor import tensor
from .optimizer import Optimizer, _check_at_least, _check_betas, _new_step_count, _signed_grad


class NAdam(Optimizer):
    """mu_t = b1 (1 - 0.96^(t psi) / 2);  mu_prod *= mu_t;  m, v as in Adam;
    denom = sqrt(v / (1 - b2^t)) + eps;
    p -= lr (1 - mu_t) / (1 - mu_prod) g / denom + lr mu_{t+1} / (1 - mu_prod mu_{t+1}) m / denom.
    Weight decay is added to g, or with decoupled_weight_decay scales p by (1 - lr wd)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3, *,
                 decoupled_weight_decay=False, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_at_least("learning rate", lr)
        _check_at_least("epsilon value", eps)
        _check_betas(betas)
        _check_at_least("weight_decay value", weight_decay)
        _check_at_least("momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = _signed_grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _new_step_count()
                state["mu_product"] = tensor(1.0, dtype=float64)
                state["exp_avg"] = _fn.zeros_like(p)
                state["exp_avg_sq"] = _fn.zeros_like(p)
            step, mu_product = state["step"], state["mu_product"]
            step.add_(1)
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g.add(p, alpha=weight_decay)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product.mul_(mu)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = exp_avg_sq.div(1 - beta2 ** step).sqrt_().add_(eps)
            p.sub_(g / denom * (lr * (1.0 - mu) / (1.0 - mu_product)))
            p.sub_(exp_avg / denom * (lr * mu_next / (1.0 - mu_product * mu_next)))
