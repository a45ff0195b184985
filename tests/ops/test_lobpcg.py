"""dynjit.lobpcg (k eigenpairs of symmetric matrices, from the registered symmetric_eigh):
values and vectors against numpy's eigh, the order PyTorch returns them in, its errors,
gradients (gradcheck, gradgradcheck, a symmetric A.grad), compiled on every backend; the
port of the seed's test_lobpcg."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck

BACKENDS = ("eager", "aot_eager", "llvm")


def _spd(*sizes, seed=0):
    a = np.random.default_rng(seed).random(sizes)
    return a @ np.swapaxes(a, -1, -2) / 10


@pytest.mark.parametrize("largest", [True, False])
def test_eigenpairs_match_numpy(largest):
    a = _spd(2, 9, 9)
    values, vectors = dynjit.lobpcg(dynjit.tensor(a), k=3, largest=largest)
    w, v = np.linalg.eigh(a)
    expected = w[..., ::-1][..., :3] if largest else w[..., :3]       # descending / ascending
    np.testing.assert_allclose(values.numpy(), expected, rtol=1e-10)
    vecs = vectors.numpy()
    np.testing.assert_allclose(a @ vecs, vecs * values.numpy()[..., None, :], atol=1e-12)   # A u = l u
    assert dynjit.lobpcg(dynjit.tensor(a[0]))[0].shape == (1,)                           # k defaults to 1


def test_errors():
    with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number of A rows \(=6\) "
                                         r"is smaller than 3 x the number of requested eigenpairs \(=3\)"):
        dynjit.lobpcg(dynjit.eye(6, dtype=dynjit.float64), k=3)
    with pytest.raises(NotImplementedError, match="generalized eigenproblem"):
        dynjit.lobpcg(dynjit.eye(6, dtype=dynjit.float64), k=1, B=dynjit.eye(6, dtype=dynjit.float64))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_lobpcg
def test_lobpcg():
    def func(k, A, largest=True, B=None):
        X_shape = list(A.shape)
        X_shape[-1] = k
        X = dynjit.eye(A.size(-2), k, dtype=A.dtype)
        if A.dim() > 2:
            X = X.expand(X_shape)
        D, U = dynjit.lobpcg(A=A, k=k, B=B, X=X, largest=largest)
        # the eigenvectors' signs are arbitrary: make each one's largest entry positive
        _, idx = U.abs().max(-2, keepdim=True)
        sign = U.gather(-2, idx).sign()
        U = U * sign
        return D, U

    def run_symeig_test(k, sizes, largest=True):
        A = dynjit.rand(*sizes).double()
        A = (A @ A.mT) / 10
        A.requires_grad_(True)
        assert gradcheck(lambda A: func(k, A, largest), A, check_batched_grad=False)
        D_grad = dynjit.rand(*A.shape[:-2], k) / 100
        U_grad = dynjit.rand(*A.shape[:-1], k) / 100
        assert gradgradcheck(lambda A: func(k, A, largest), A, [D_grad, U_grad], atol=1e-4,
                             check_batched_grad=False)
        A = A.detach().requires_grad_(True)
        D, U = func(k, A, largest)
        (D.sum() + U.sum()).backward()
        # the seed's assertEqual: equal within float64's default tolerance
        np.testing.assert_allclose(A.grad.numpy(), A.grad.mT.numpy(), rtol=1e-7, atol=1e-7)

    for largest in [True, False]:
        run_symeig_test(1, (6, 6), largest=largest)
        run_symeig_test(1, (2, 6, 6), largest=largest)
        run_symeig_test(1, (2, 2, 6, 6), largest=largest)
        run_symeig_test(2, (6, 6), largest=largest)
        run_symeig_test(2, (2, 6, 6), largest=largest)
        run_symeig_test(2, (2, 2, 6, 6), largest=largest)
        run_symeig_test(3, (9, 9), largest=largest)
        run_symeig_test(3, (2, 9, 9), largest=largest)


def _top_pair(a):
    values, vectors = dynjit.lobpcg(a, k=2)
    return values.sum() + (vectors * vectors).sum(0).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_matches_eager(backend):
    a = dynjit.tensor(_spd(6, 6, seed=3), requires_grad=True)
    expected = _top_pair(a)
    expected.backward()
    g, a.grad = a.grad.clone(), None
    got = dynjit.compile(_top_pair, backend=backend)(a)
    got.backward()
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), g.numpy(), atol=1e-12)
