"""The training-loop machinery of modern recipes around a small residual MLP regressor:
AdamW with two parameter groups built from `named_parameters()` (no weight decay on biases
and norm weights), a warmup-then-restarts schedule (`SequentialLR` of `LinearLR` and
`CosineAnnealingWarmRestarts(T_0, T_mult=2)`), gradient accumulation over micro-batches
(the loss divided by the accumulation count, `backward()` per micro-batch), `clip_grad_norm_`
returning the total norm, an exponential moving average of the weights kept in a
`copy.deepcopy` of the model and updated under `torch.no_grad()` with `lerp_` (buffers with
`copy_`), stochastic weight averaging over the second half (`optim.swa_utils.AveragedModel`,
its BatchNorm statistics recomputed by `update_bn`), and a checkpoint saved mid-training with
`torch.save` to an `io.BytesIO` (model, EMA, SWA model, optimizer, scheduler, step) and loaded
with `torch.load` into freshly built objects, from which training resumes."""
import copy
import io

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.optim.swa_utils import AveragedModel, update_bn

from tests.programs._state import dump_state, load_state


def make_data(n, dim=6, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, dim).astype(np.float32)
    y = np.sin(x[:, :1] * 2) + x[:, 1:2] * x[:, 2:3] + 0.1 * rng.randn(n, 1)
    return torch.tensor(x), torch.tensor(y.astype(np.float32))


class ResidualMLP(nn.Module):
    def __init__(self, dim=6, width=32, depth=2):
        super().__init__()
        self.stem = nn.Linear(dim, width, bias=False)     # BatchNorm follows: a bias would do nothing
        self.norm = nn.BatchNorm1d(width)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.SiLU(),
                                                   nn.Linear(width, width)) for _ in range(depth)])
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        h = F.gelu(self.norm(self.stem(x)))
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


def build(init, lr, weight_decay, warmup, t_0):
    model = ResidualMLP()
    load_state(torch, {"model": model}, init)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[
        torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=warmup),
        torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=t_0, T_mult=2, eta_min=1e-4)],
        milestones=[warmup])
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    return model, optimizer, scheduler, ema, AveragedModel(model)


@torch.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.lerp_(p, 1.0 - decay)
    for ema_b, b in zip(ema.buffers(), model.buffers()):
        ema_b.copy_(b)


def run(steps=20, backend=None, init=None, seed=0, micro_batch=16, accumulation=3, lr=3e-3, weight_decay=0.05,
        ema_decay=0.9, compile_mode="step"):
    """Train for `steps` optimizer steps of `accumulation` micro-batches, checkpointing to
    memory and rebuilding everything halfway; returns (losses, state): per step the
    accumulated loss, the gradient norm before clipping and the learning rates of both
    groups, then the held-out MSE of the model, its EMA and its SWA average, and the number of
    models averaged. With `backend`, the
    micro-batch step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(512, seed=seed)
    x_val, y_val = make_data(128, seed=seed + 1)
    model, optimizer, scheduler, ema, swa_model = build(init, lr, weight_decay, warmup=3, t_0=4)

    def make_step(model):
        net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

        def micro_step(inputs, targets):
            loss = F.mse_loss(net(inputs), targets) / accumulation
            loss.backward()
            return loss.detach()

        return torch.compile(micro_step, backend=backend) if backend and compile_mode == "step" else micro_step

    micro_step = make_step(model)
    rng = np.random.RandomState(seed + 2)
    losses = []
    for step in range(steps):
        if step == steps // 2 and step > 0:
            buffer = io.BytesIO()
            torch.save({"model": model.state_dict(), "ema": ema.state_dict(), "swa": swa_model.state_dict(),
                        "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step},
                       buffer)
            buffer.seek(0)
            checkpoint = torch.load(buffer)
            model, optimizer, scheduler, ema, swa_model = build(None, lr, weight_decay, warmup=3, t_0=4)
            model.load_state_dict(checkpoint["model"])
            ema.load_state_dict(checkpoint["ema"])
            swa_model.load_state_dict(checkpoint["swa"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.load_state_dict(checkpoint["scheduler"])
            assert checkpoint["step"] == step
            micro_step = make_step(model)
        model.train()
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(accumulation):
            idx = torch.tensor(rng.randint(0, len(x), micro_batch))
            total += micro_step(x[idx], y[idx]).item()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        update_ema(ema, model, ema_decay)
        if step >= steps // 2:
            swa_model.update_parameters(model)
        losses += [total, grad_norm.item()] + [group["lr"] for group in optimizer.param_groups]
    update_bn([x[i:i + 64] for i in range(0, len(x), 64)], swa_model)
    model.eval(), ema.eval(), swa_model.eval()
    with torch.no_grad():
        losses += [F.mse_loss(m(x_val), y_val).item() for m in (model, ema, swa_model)]
    losses.append(float(swa_model.n_averaged.item()))
    return losses, dump_state({"model": model, "ema": ema, "swa": swa_model})
