"""dynjit.linalg's LU family (lu, lu_factor, lu_factor_ex, lu_solve, dynjit.lu_unpack): A = P L U
with LAPACK's partial pivoting (checked against a numpy reference of getrf's pivot choice),
packed LU and 1-based int32 pivots, lu_solve's four equations, gradients (square, wide, tall),
PyTorch's errors, and compiled == plain."""
import numpy as np
import pytest

import dynjit
from dynjit import linalg as LA
from dynjit.autograd import gradcheck, gradgradcheck


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _np_getrf(a):
    """LAPACK getrf on one matrix, written plainly: (packed LU, 1-based pivots)."""
    lu = a.astype(float).copy()
    m, n = lu.shape
    pivots = []
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(lu[j:, j])))
        pivots.append(p + 1)
        lu[[j, p]] = lu[[p, j]]
        if lu[j, j] != 0:
            lu[j + 1:, j] /= lu[j, j]
            lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return lu, np.array(pivots, np.int32)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_lu_factor_matches_getrf_and_lu_reconstructs(shape):
    a = _rand(*shape)
    LU, pivots = LA.lu_factor(dynjit.tensor(a))
    ref_lu, ref_pivots = _np_getrf(a)
    np.testing.assert_allclose(LU.numpy(), ref_lu, atol=1e-12)
    assert pivots.dtype == dynjit.int32 and pivots.tolist() == ref_pivots.tolist()
    P, L, U = LA.lu(dynjit.tensor(a))
    assert type(LA.lu(dynjit.tensor(a))).__name__ == "linalg_lu"
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    P2, L2, U2 = dynjit.lu_unpack(LU, pivots)
    for x, y in ((P, P2), (L, L2), (U, U2)):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-14)


def test_lu_batched_and_singular():
    a = np.stack([_rand(3, 3), np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])])
    LU, pivots, info = LA.lu_factor_ex(dynjit.tensor(a))
    assert info.tolist() == [0, 3] and type(LA.lu_factor_ex(dynjit.tensor(a))).__name__ == "linalg_lu_factor_ex"
    P, L, U = LA.lu(dynjit.tensor(a))
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"^torch.linalg.lu_factor: \(Batch element 1\): U\[2,2\] is zero and using "
                                           r"it on lu_solve would result in a division by zero."):
        LA.lu_factor(dynjit.tensor(a))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    a = _rand(2, 4, 4)
    b = _rand(2, 4, 3, seed=1) if left else _rand(2, 3, 4, seed=1)
    LU, pivots = LA.lu_factor(dynjit.tensor(a))
    A = np.swapaxes(a, -1, -2) if adjoint else a
    expected = np.linalg.solve(A, b) if left else b @ np.linalg.inv(A)
    np.testing.assert_allclose(LA.lu_solve(LU, pivots, dynjit.tensor(b), left=left, adjoint=adjoint).numpy(),
                               expected, atol=1e-12)


def test_lu_gradients():
    for shape in ((3, 3), (2, 3, 5), (5, 3)):
        t = dynjit.tensor(_rand(*shape), requires_grad=True)
        assert gradcheck(lambda x: tuple(LA.lu(x))[1:], (t,))
        assert gradgradcheck(lambda x: tuple(LA.lu(x))[1:], (t,))
        assert gradcheck(lambda x: LA.lu_factor(x).LU, (t,))
    a = dynjit.tensor(_rand(2, 3, 3), requires_grad=True)
    b = dynjit.tensor(_rand(2, 3, 2, seed=1), requires_grad=True)
    assert gradcheck(lambda x, y: LA.lu_solve(*LA.lu_factor(x), y, adjoint=True), (a, b))
    assert gradgradcheck(lambda x, y: LA.lu_solve(*LA.lu_factor(x), y), (a, b))


def test_lu_errors():
    with pytest.raises(RuntimeError, match=r"^torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                                           r"\[3\] instead$"):
        LA.lu_factor(dynjit.ones(3))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Long'"):
        LA.lu(dynjit.ones(3, 3, dtype=dynjit.int64))
    with pytest.raises(RuntimeError, match="linalg.lu_factor: LU without pivoting is not implemented on the CPU"):
        LA.lu_factor(dynjit.ones(3, 3), pivot=False)
    LU, pivots = LA.lu_factor(dynjit.eye(3))
    with pytest.raises(RuntimeError, match=r"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
                                           r"\(3x3 and 4x1\)"):
        LA.lu_solve(LU, pivots, dynjit.ones(4, 1))
    with pytest.raises(RuntimeError, match="linalg.lu_solve: The input tensor B must have at least 2 dimensions."):
        LA.lu_solve(LU, pivots, dynjit.ones(3))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_lu_compiled_equals_plain(backend):
    def fn(a, b):
        LU, pivots = LA.lu_factor(a)
        P, L, U = LA.lu(a)
        return (LA.lu_solve(LU, pivots, b) + (L @ U).sum()).sum()

    a0, b0 = _rand(2, 3, 3) + 3 * np.eye(3), _rand(2, 3, 2, seed=1)

    def run(f):
        a = dynjit.tensor(a0, requires_grad=True)
        b = dynjit.tensor(b0, requires_grad=True)
        out = f(a, b)
        out.backward()
        return out.item(), a.grad.numpy(), b.grad.numpy()

    ref = run(fn)
    got = run(dynjit.compile(fn, backend=backend))
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-8, atol=1e-10)
