"""dynjit.linalg under dynjit.compile: the same programs run plain and compiled with the
eager, aot_eager and llvm backends (the decompositions and solvers are EXTERN ops, which
the llvm backend calls rather than lowers) give the same values and gradients, in one
graph (fullgraph=True), and value-dependent errors still raise from compiled code."""
import numpy as np
import pytest

import dynjit
from dynjit import linalg as LA

BACKENDS = ["eager", "aot_eager", "llvm"]


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _program(a, b):
    """A least-squares / Gaussian-process style step that touches every linalg op."""
    U, S, Vh = LA.svd(a)
    Q, R = LA.qr(a)
    spd = a @ a.mT + 3 * dynjit.eye(a.shape[-1], dtype=a.dtype)
    L = LA.cholesky(spd)
    alpha = dynjit.cholesky_solve(b, L)
    values, vectors = LA.eigh(spd)
    x = LA.solve(a, b)
    y = LA.solve_triangular(R, b, upper=True)
    return (S.sum() + (U * Vh.sum(-1).unsqueeze(-2)).sum() + (Q @ R).sum() + alpha.sum() + values.sum()
            + (vectors * vectors.sum(-2, keepdim=True)).sum() + x.sum() + y.sum() + LA.det(a).sum()
            + LA.inv(a).sum() + LA.slogdet(a).logabsdet.sum() + dynjit.logdet(spd).sum()
            + LA.pinv(a).sum() + LA.matrix_exp(a * 0.1).sum() + LA.matrix_norm(a, 2).sum()
            + LA.matrix_norm(a, "nuc").sum() + LA.cond(a).sum() + LA.matrix_power(a, 3).sum()
            + LA.eig(a).eigenvalues.abs().sum() + LA.lstsq(a, b).solution.sum()
            + LA.cross(b[..., :3, :1].mT, b[..., :3, 1:].mT).sum() + LA.vecdot(a, a).sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_equals_eager_with_gradients(backend):
    a0 = _rand(2, 3, 3) + 3 * np.eye(3)
    b0 = _rand(2, 3, 2, seed=1)

    def run(fn):
        a = dynjit.tensor(a0, requires_grad=True)
        b = dynjit.tensor(b0, requires_grad=True)
        out = fn(a, b)
        out.backward()
        return out.item(), a.grad.numpy(), b.grad.numpy()

    ref = run(_program)
    got = run(dynjit.compile(_program, backend=backend, fullgraph=True))
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_returns_named_tuples(backend):
    def fn(a):
        svd = LA.svd(a, full_matrices=False)
        return svd.U, svd.S, svd.Vh, LA.qr(a).R, dynjit.svd(a).V

    a = dynjit.tensor(_rand(4, 3))
    ref = fn(a)
    got = dynjit.compile(fn, backend=backend, fullgraph=True)(a)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_errors_on_singular_input(backend):
    def fn(a):
        return LA.inv(a) * 2

    compiled = dynjit.compile(fn, backend=backend)
    np.testing.assert_allclose(compiled(dynjit.eye(3, dtype=dynjit.float64)).numpy(), 2 * np.eye(3))
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 3 is zero"):
        compiled(dynjit.tensor(np.diag([1.0, 1.0, 0.0])))
