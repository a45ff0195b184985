"""A RealNVP normalizing flow (Dinh et al., 2017) fitted to the two-moons density by
maximum likelihood, written as the flow tutorials write it: affine coupling layers with
alternating binary masks registered as buffers, scale and translation nets (`Tanh` scale
times a learned `nn.Parameter` factor), the log-determinant of the Jacobian summed over
layers, a standard-normal base density from `distributions.Normal(...).log_prob`, an
`ActNorm`-style data-initialized layer, Adam with `weight_decay`, and sampling by running the
layers in reverse under `torch.no_grad()` (the inverse checked against the forward pass)."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
from dynjit.distributions import Normal

from tests.programs._state import dump_state, load_state


def make_moons(n, noise=0.05, seed=0):
    rng = np.random.RandomState(seed)
    n_out = n // 2
    outer = np.stack([np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))], 1)
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n - n_out)),
                      1 - np.sin(np.linspace(0, np.pi, n - n_out)) - 0.5], 1)
    x = np.concatenate([outer, inner]) + noise * rng.randn(n, 2)
    return torch.tensor(x.astype(np.float32))


class CouplingLayer(nn.Module):
    def __init__(self, dim, hidden, mask):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 2 * dim))
        self.scale_factor = nn.Parameter(torch.zeros(dim))

    def _scale_shift(self, x_masked):
        s, t = self.net(x_masked).chunk(2, dim=1)
        s = torch.tanh(s) * self.scale_factor.exp()
        return s * (1 - self.mask), t * (1 - self.mask)

    def forward(self, x):
        """x -> z and log|det dz/dx| per sample."""
        x_masked = x * self.mask
        s, t = self._scale_shift(x_masked)
        z = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
        return z, s.sum(dim=1)

    def inverse(self, z):
        z_masked = z * self.mask
        s, t = self._scale_shift(z_masked)
        return z_masked + (1 - self.mask) * ((z - t) * torch.exp(-s))


class ActNorm(nn.Module):
    """Per-feature affine layer initialized from the first batch to zero mean, unit variance."""

    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def forward(self, x):
        if self.initialized.item() == 0:
            with torch.no_grad():
                self.loc.copy_(-x.mean(0))
                self.log_scale.copy_(-torch.log(x.std(0) + 1e-6))
                self.initialized.fill_(1)
        z = (x + self.loc) * torch.exp(self.log_scale)
        return z, self.log_scale.sum().expand(x.size(0))

    def inverse(self, z):
        return z * torch.exp(-self.log_scale) - self.loc


class RealNVP(nn.Module):
    def __init__(self, dim=2, hidden=32, n_layers=4):
        super().__init__()
        masks = [torch.tensor([float((i + j) % 2) for j in range(dim)]) for i in range(n_layers)]
        self.actnorm = ActNorm(dim)
        self.layers = nn.ModuleList([CouplingLayer(dim, hidden, m) for m in masks])
        self.register_buffer("base_loc", torch.zeros(dim))
        self.register_buffer("base_scale", torch.ones(dim))

    @property
    def base(self):
        return Normal(self.base_loc, self.base_scale)

    def forward(self, x):
        z, log_det = self.actnorm(x)
        for layer in self.layers:
            z, ld = layer(z)
            log_det = log_det + ld
        return z, log_det

    def log_prob(self, x):
        z, log_det = self(x)
        return self.base.log_prob(z).sum(dim=1) + log_det

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return self.actnorm.inverse(z)


def run(steps=20, backend=None, init=None, seed=0, batch_size=64, compile_mode="step"):
    """Fit for `steps` batches; returns (losses, state): the negative log-likelihood per
    step, then the held-out NLL and 1.0 if inverse(forward(x)) gives x back to 1e-4. With `backend`,
    the training step ("step") or the flow's log_prob ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    data = make_moons(512, seed=seed)
    held_out = make_moons(128, seed=seed + 1)
    flow = RealNVP()
    load_state(torch, {"flow": flow}, init)
    optimizer = torch.optim.Adam(flow.parameters(), lr=2e-3, weight_decay=1e-5)
    log_prob = torch.compile(flow.log_prob, backend=backend) if backend and compile_mode == "model" else flow.log_prob

    def train_step(x):
        loss = -log_prob(x).mean()
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    flow.train()
    for _ in range(steps):
        x = data[torch.tensor(rng.randint(0, len(data), batch_size))]
        optimizer.zero_grad()
        loss = step_fn(x)
        optimizer.step()
        losses.append(loss.item())
    flow.eval()
    with torch.no_grad():
        nll = -log_prob(held_out).mean()
        z, _ = flow(held_out)
        round_trip = (flow.inverse(z) - held_out).abs().max()
    losses += [nll.item(), float(round_trip.item() < 1e-4)]
    assert math.isfinite(nll.item())
    return losses, dump_state({"flow": flow})
