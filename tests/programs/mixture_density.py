"""Probabilistic regression, two ways, as in Bishop's mixture density networks and the
heteroscedastic-regression tutorials: on the classic inverted sine problem (x as a
multi-valued function of y), (1) an MLP predicting a mean and a variance trained with
`nn.GaussianNLLLoss`, and (2) a mixture density network whose K-component Gaussian mixture
log-likelihood is computed with `torch.distributions.Normal(...).log_prob`,
`F.log_softmax` and `torch.logsumexp`; one RMSprop optimizer over both models' parameters
(`itertools.chain`), an ExponentialLR schedule, and samples drawn from the fitted mixture
(Categorical then Normal) for evaluation."""
import itertools

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.distributions import Categorical, Normal

from tests.programs._state import dump_state, load_state

K = 4


def make_data(n=512, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.uniform(-10.5, 10.5, n)
    x = 7.0 * np.sin(0.75 * y) + 0.5 * y + rng.randn(n)
    return torch.tensor(x[:, None].astype(np.float32) / 10), torch.tensor(y[:, None].astype(np.float32) / 10)


class MeanVariance(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mean = nn.Linear(hidden, 1)
        self.var = nn.Sequential(nn.Linear(hidden, 1), nn.Softplus())

    def forward(self, x):
        h = self.body(x)
        return self.mean(h), self.var(h)


class MDN(nn.Module):
    def __init__(self, hidden=32, k=K):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, k)
        self.mu = nn.Linear(hidden, k)
        self.log_sigma = nn.Linear(hidden, k)

    def forward(self, x):
        h = self.body(x)
        return F.log_softmax(self.pi(h), dim=-1), self.mu(h), self.log_sigma(h).clamp(-7, 7).exp()


def mdn_nll(log_pi, mu, sigma, y):
    log_prob = Normal(mu, sigma).log_prob(y.expand_as(mu))
    return -torch.logsumexp(log_pi + log_prob, dim=-1).mean()


def run(steps=20, backend=None, init=None, seed=0, batch_size=64):
    """Train both models for `steps` batches; returns (losses, state): per step the sum of
    both losses, then the mean of 256 samples from the fitted mixture at x = 0. With
    `backend` the training step runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    mv, mdn = MeanVariance(), MDN()
    load_state(torch, {"mv": mv, "mdn": mdn}, init)
    gaussian_nll = nn.GaussianNLLLoss()
    optimizer = torch.optim.RMSprop(itertools.chain(mv.parameters(), mdn.parameters()), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.98)

    def train_step(xb, yb):
        mean, var = mv(xb)
        loss = gaussian_nll(mean, yb, var) + mdn_nll(*mdn(xb), yb)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend else train_step
    rng = np.random.RandomState(seed + 1)
    losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        optimizer.zero_grad()
        loss = step_fn(x[idx], y[idx])
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    with torch.no_grad():
        log_pi, mu, sigma = mdn(torch.zeros(1, 1))
        component = Categorical(logits=log_pi).sample((256,)).squeeze(-1)
        samples = Normal(mu[0, component], sigma[0, component]).sample()
        losses.append(samples.mean().item())
    return losses, dump_state({"mv": mv, "mdn": mdn})
