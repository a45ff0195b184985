"""PyTorch programs that use torch.linalg, run by changing the import (`import dynjit as
torch`): Gaussian-process hyperparameter fitting (cholesky, cholesky_solve, solve_triangular,
logdet through the Cholesky diagonal), PCA (svd), orthogonal Procrustes (svd, det) and
least squares (lstsq, solve, pinv). Results are checked against numpy formulas, and the GP
training loop gives the same trajectory plain and compiled."""
import math

import numpy as np
import pytest

import dynjit as torch


def _gp_data():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3, 3, 24))
    y = np.sin(x) + 0.1 * rng.standard_normal(24)
    return x, y


def _gp_nll(log_ls, log_noise, x, y):
    """The negative log marginal likelihood of an RBF-kernel GP, as a PyTorch program writes it."""
    d2 = (x.unsqueeze(-1) - x.unsqueeze(-2)) ** 2
    K = torch.exp(-0.5 * d2 / torch.exp(2 * log_ls)) + torch.exp(2 * log_noise) * torch.eye(x.shape[0], dtype=x.dtype)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
    return 0.5 * (y.unsqueeze(-1) * alpha).sum() + torch.log(torch.diagonal(L)).sum() \
        + 0.5 * x.shape[0] * math.log(2 * math.pi)


def _np_gp_nll(ls, noise, x, y):
    K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ls ** 2) + noise ** 2 * np.eye(len(x))
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet + 0.5 * len(x) * np.log(2 * np.pi)


def test_gp_marginal_likelihood_matches_numpy():
    x0, y0 = _gp_data()
    x, y = torch.tensor(x0), torch.tensor(y0)
    nll = _gp_nll(torch.tensor(0.2, dtype=torch.float64), torch.tensor(-1.5, dtype=torch.float64), x, y)
    np.testing.assert_allclose(nll.item(), _np_gp_nll(np.exp(0.2), np.exp(-1.5), x0, y0), rtol=1e-10)
    # logdet spelled with torch.logdet gives the same
    d2 = (x.unsqueeze(-1) - x.unsqueeze(-2)) ** 2
    K = torch.exp(-0.5 * d2 / np.exp(0.4)) + np.exp(-3.0) * torch.eye(24, dtype=x.dtype)
    np.testing.assert_allclose(torch.logdet(K).item(), np.linalg.slogdet(K.numpy())[1], rtol=1e-10)


def _fit_gp(step_fn, steps=15):
    x0, y0 = _gp_data()
    x, y = torch.tensor(x0), torch.tensor(y0)
    params = [torch.tensor(0.0, dtype=torch.float64, requires_grad=True),
              torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)]
    opt = torch.optim.Adam(params, lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step_fn(params[0], params[1], x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.item() for p in params]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_gp_training_compiled_equals_plain(backend):
    plain_losses, plain_params = _fit_gp(_gp_nll)
    assert plain_losses[-1] < plain_losses[0]
    losses, params = _fit_gp(torch.compile(_gp_nll, backend=backend, fullgraph=True))
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-9)
    np.testing.assert_allclose(params, plain_params, rtol=1e-9)


def test_gp_gradient_matches_finite_differences():
    x0, y0 = _gp_data()
    x, y = torch.tensor(x0), torch.tensor(y0)
    assert torch.autograd.gradcheck(lambda a, b: _gp_nll(a, b, x, y),
                                    (torch.tensor(0.1, dtype=torch.float64, requires_grad=True),
                                     torch.tensor(-1.2, dtype=torch.float64, requires_grad=True)))


def test_pca_with_svd():
    rng = np.random.default_rng(1)
    rotation = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    data = rng.standard_normal((200, 5)) @ np.diag([3.0, 2.0, 1.0, 0.5, 0.1]) @ rotation
    X = torch.tensor(data)
    Xc = X - X.mean(0)
    U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
    explained = S ** 2 / (X.shape[0] - 1)
    cov = np.cov(data, rowvar=False)
    np.testing.assert_allclose(explained.numpy(), np.sort(np.linalg.eigvalsh(cov))[::-1], rtol=1e-10)
    projected = Xc @ Vh[:2].mT
    reconstruction = projected @ Vh[:2]
    residual = ((Xc - reconstruction) ** 2).sum()
    np.testing.assert_allclose(residual.item(), (S[2:] ** 2).sum().item(), rtol=1e-10)


def test_orthogonal_procrustes():
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    rotation = q if np.linalg.det(q) > 0 else -q
    A = torch.tensor(rng.standard_normal((3, 50)))
    B = torch.tensor(rotation) @ A
    U, S, Vh = torch.linalg.svd(B @ A.mT)
    d = torch.sign(torch.linalg.det(U @ Vh))
    R = U @ torch.diag(torch.stack([torch.tensor(1.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64),
                                    d])) @ Vh
    np.testing.assert_allclose(R.numpy(), rotation, atol=1e-12)


def test_least_squares_three_ways():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4))
    w = np.array([1.0, -2.0, 0.5, 3.0])
    y = X @ w + 0.01 * rng.standard_normal(40)
    reference = np.linalg.lstsq(X, y, rcond=None)[0]
    tX, ty = torch.tensor(X), torch.tensor(y)
    np.testing.assert_allclose(torch.linalg.lstsq(tX, ty.unsqueeze(-1)).solution.squeeze(-1).numpy(), reference,
                               rtol=1e-10)
    np.testing.assert_allclose(torch.linalg.solve(tX.mT @ tX, tX.mT @ ty).numpy(), reference, rtol=1e-8)
    np.testing.assert_allclose((torch.linalg.pinv(tX) @ ty).numpy(), reference, rtol=1e-10)
