"""Exact Gaussian-process regression with hyperparameters learned by maximizing the log
marginal likelihood, written the way GP tutorials write it without GPyTorch: positive
hyperparameters through `F.softplus` of raw `nn.Parameter`s, an RBF kernel from
`torch.cdist`, jitter on the diagonal with `torch.eye`, `torch.linalg.cholesky`, the solve by
`torch.cholesky_solve`, the log-determinant as twice the sum of the log of the Cholesky
factor's diagonal, Adam; predictions with `torch.linalg.solve_triangular` for the predictive
variance, and the Cholesky log-determinant checked against `torch.logdet`."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state


def make_data(n, seed=0):
    rng = np.random.RandomState(seed)
    x = np.sort(rng.uniform(-3, 3, (n, 1)), axis=0)
    y = np.sin(2 * x[:, 0]) + 0.3 * x[:, 0] + 0.1 * rng.randn(n)
    return torch.tensor(x), torch.tensor(y)


class ExactGP(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
        self.raw_outputscale = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
        self.raw_noise = nn.Parameter(torch.tensor(-2.0, dtype=torch.float64))
        self.mean_constant = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))

    def hyperparameters(self):
        return (F.softplus(self.raw_lengthscale), F.softplus(self.raw_outputscale),
                F.softplus(self.raw_noise) + 1e-4)

    def kernel(self, a, b):
        lengthscale, outputscale, _ = self.hyperparameters()
        sq_dist = torch.cdist(a / lengthscale, b / lengthscale).pow(2)
        return outputscale * torch.exp(-0.5 * sq_dist)

    def neg_log_marginal_likelihood(self, x, y):
        n = x.size(0)
        _, _, noise = self.hyperparameters()
        K = self.kernel(x, x) + (noise + 1e-6) * torch.eye(n, dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        residual = (y - self.mean_constant).unsqueeze(-1)
        alpha = torch.cholesky_solve(residual, L)
        data_fit = 0.5 * (residual * alpha).sum()
        log_det = torch.log(torch.diagonal(L)).sum()
        return (data_fit + log_det + 0.5 * n * math.log(2 * math.pi)) / n

    def predict(self, x, y, x_new):
        _, _, noise = self.hyperparameters()
        K = self.kernel(x, x) + (noise + 1e-6) * torch.eye(x.size(0), dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        K_s = self.kernel(x, x_new)
        alpha = torch.cholesky_solve((y - self.mean_constant).unsqueeze(-1), L)
        mean = self.mean_constant + (K_s.transpose(0, 1) @ alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(L, K_s, upper=False)
        var = self.kernel(x_new, x_new).diagonal() - v.pow(2).sum(0)
        return mean, var, L, K


def run(steps=20, backend=None, init=None, seed=0, n=40, compile_mode="step"):
    """Fit the hyperparameters for `steps` Adam steps; returns (losses, state): the negative
    log marginal likelihood per step, then the held-out RMSE, the mean predictive standard
    deviation, and 1.0 if the Cholesky log-determinant equals torch.logdet. With `backend`,
    the training step ("step") or the likelihood ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(n, seed)
    x_test, y_test = make_data(50, seed + 1)
    gp = ExactGP()
    load_state(torch, {"gp": gp}, init)
    optimizer = torch.optim.Adam(gp.parameters(), lr=0.1)
    nll = torch.compile(gp.neg_log_marginal_likelihood, backend=backend) if backend and compile_mode == "model" \
        else gp.neg_log_marginal_likelihood

    def train_step(x, y):
        loss = nll(x, y)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step_fn(x, y)
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        mean, var, L, K = gp.predict(x, y, x_test)
        rmse = (mean - y_test).pow(2).mean().sqrt()
        same_logdet = torch.allclose(2 * torch.log(torch.diagonal(L)).sum(), torch.logdet(K))
    losses += [rmse.item(), var.clamp(min=0).sqrt().mean().item(), float(same_logdet)]
    return losses, dump_state({"gp": gp})
