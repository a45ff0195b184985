"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize,
with PyTorch's update rule."""
from . import _fast
from .optimizer import Optimizer


class SGD(Optimizer):
    """For each parameter p with gradient g (negated when maximize):
    g += weight_decay * p; with momentum, buf = momentum * buf + (1 - dampening) * g
    (buf = g on the first step) and g = g + momentum * buf (nesterov) or buf;
    then p -= lr * g."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(self._update_group, closure)

    def _update_group(self, group):
        # foreach=None updates what it can in numpy, bit for bit as this loop (optim/_fast.py)
        params = _fast.sgd_step(self, group)
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        for p in params:
            if p.grad is None:
                continue
            g = -p.grad if maximize else p.grad
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = g.clone().detach()
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g.add(buf, alpha=momentum) if nesterov else buf
            p.add_(g, alpha=-lr)
