"""dynjit.linalg's decompositions (svd, svdvals, eigh, eigvalsh, eig, eigvals, qr, cholesky,
cholesky_ex): the factors reconstruct the input and have their defining properties (checked
with numpy), batching, dtypes and return types are PyTorch's, gradients pass gradcheck and
gradgradcheck, and complex losses that depend on a vector's phase are refused."""
import numpy as np
import pytest

import dynjit
from dynjit import linalg as LA
from dynjit.autograd import gradcheck, gradgradcheck


def _rand(*shape, seed=0, complex_=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
    return x


def _t(x, requires_grad=False):
    return dynjit.tensor(x, requires_grad=requires_grad)


def _mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _eye_like(x):
    return np.broadcast_to(np.eye(x.shape[-1]), x.shape)


# -- SVD ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 4, 4), (2, 5, 2)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_reconstructs_and_is_orthonormal(shape, full_matrices):
    a = _rand(*shape)
    U, S, Vh = LA.svd(_t(a), full_matrices=full_matrices)
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape == shape[:-2] + ((m, m) if full_matrices else (m, k))
    assert Vh.shape == shape[:-2] + ((n, n) if full_matrices else (k, n))
    assert S.shape == shape[:-2] + (k,)
    u, s, vh = U.numpy(), S.numpy(), Vh.numpy()
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-12)
    np.testing.assert_allclose(_mh(u) @ u, _eye_like(_mh(u) @ u), atol=1e-12)
    np.testing.assert_allclose(vh @ _mh(vh), _eye_like(vh @ _mh(vh)), atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)
    assert np.all(np.diff(s, axis=-1) <= 0)        # descending


def test_svd_return_type_dtypes_and_svdvals():
    a = _rand(3, 2).astype(np.float32)
    out = LA.svd(_t(a))
    assert type(out).__name__ == "linalg_svd" and out._fields == ("U", "S", "Vh")
    assert out.U.dtype == dynjit.float32 and out.S.dtype == dynjit.float32
    np.testing.assert_allclose(LA.svdvals(_t(a)).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-5)
    c = _rand(3, 3, complex_=True)
    U, S, Vh = LA.svd(_t(c))
    assert S.dtype == dynjit.float64 and U.dtype == dynjit.complex128
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ Vh.numpy(), c, atol=1e-12)


def test_svd_of_an_empty_matrix():
    U, S, Vh = LA.svd(dynjit.zeros(2, 0))
    assert U.shape == (2, 2) and S.shape == (0,) and Vh.shape == (0, 0)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 3, 3)])
def test_svd_gradients(shape):
    a = _t(_rand(*shape), requires_grad=True)

    def factors(x):
        U, S, Vh = LA.svd(x, full_matrices=False)
        return U * Vh.sum(-1).unsqueeze(-2), S, Vh     # depends on U, S and Vh (sign-consistently)

    assert gradcheck(factors, (a,))
    assert gradgradcheck(factors, (a,))
    assert gradcheck(LA.svdvals, (a,))
    assert gradgradcheck(LA.svdvals, (a,))


def test_svd_full_matrices_gradient_uses_the_reduced_factors():
    a = _t(_rand(4, 3), requires_grad=True)
    assert gradcheck(lambda x: LA.svd(x)[0][:, :3] * LA.svd(x)[2].sum(0), (a,))


def test_complex_svd_gradient_and_phase_check():
    a = _t(_rand(3, 4, complex_=True), requires_grad=True)

    def phase_free(x):
        U, S, Vh = LA.svd(x, full_matrices=False)
        return U @ Vh, S
    assert gradcheck(phase_free, (a,))
    with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex case are specified "
                                           r"up to multiplication by e\^\{i phi\}. The specified loss function depends "
                                           r"on this phase term, making it ill-defined."):
        LA.svd(a).U.real.sum().backward()


def test_svd_repeated_singular_values_only_harm_vector_gradients():
    a = _t(np.eye(3), requires_grad=True)
    LA.svdvals(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.eye(3))


# -- eigh ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh_values_vectors(shape):
    x = _rand(*shape)
    a = x + np.swapaxes(x, -1, -2)
    L, V = LA.eigh(_t(a))
    np.testing.assert_allclose(L.numpy(), np.linalg.eigvalsh(a), atol=1e-12)
    v = V.numpy()
    np.testing.assert_allclose(a @ v, v * L.numpy()[..., None, :], atol=1e-12)
    np.testing.assert_allclose(LA.eigvalsh(_t(a)).numpy(), np.linalg.eigvalsh(a), atol=1e-12)
    assert type(LA.eigh(_t(a))).__name__ == "linalg_eigh"


def test_eigh_reads_one_triangle():
    a = _rand(4, 4)      # not symmetric: only the UPLO triangle counts, as in PyTorch
    lower = np.tril(a) + np.tril(a, -1).T
    upper = np.triu(a) + np.triu(a, 1).T
    np.testing.assert_allclose(LA.eigvalsh(_t(a)).numpy(), np.linalg.eigvalsh(lower), atol=1e-12)
    np.testing.assert_allclose(LA.eigvalsh(_t(a), UPLO="U").numpy(), np.linalg.eigvalsh(upper), atol=1e-12)


def test_eigh_complex_values_are_real():
    x = _rand(3, 3, complex_=True)
    a = x + _mh(x)
    L, V = LA.eigh(_t(a))
    assert L.dtype == dynjit.float64 and V.dtype == dynjit.complex128
    np.testing.assert_allclose(a @ V.numpy(), V.numpy() * L.numpy(), atol=1e-12)


def test_eigh_gradients():
    a = _t(_rand(2, 4, 4), requires_grad=True)

    def fn(x):
        L, V = LA.eigh(x + x.mT)
        return L, V * V.sum(-2, keepdim=True)       # invariant under each vector's sign
    assert gradcheck(fn, (a,))
    assert gradgradcheck(fn, (a,))


def test_complex_eigh_phase_check():
    x = _t(_rand(3, 3, complex_=True), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg_eigh_backward: The eigenvectors in the complex case"):
        LA.eigh(x + x.mH).eigenvectors.real.sum().backward()
    assert gradcheck(lambda y: LA.eigh(y + y.mH).eigenvectors.abs(), (x,))


# -- eig -------------------------------------------------------------------------------------

def test_eig_is_complex_and_diagonalizes():
    a = _rand(2, 4, 4)
    L, V = LA.eig(_t(a))
    assert L.dtype == dynjit.complex128 and V.dtype == dynjit.complex128
    assert LA.eig(_t(a.astype(np.float32))).eigenvalues.dtype == dynjit.complex64
    v, lam = V.numpy(), L.numpy()
    np.testing.assert_allclose(a @ v, v * lam[..., None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(LA.eigvals(_t(a)).numpy()[0]),
                               np.sort_complex(np.linalg.eigvals(a[0])), atol=1e-10)


def test_eig_gradients():
    a = _t(_rand(3, 3), requires_grad=True)
    assert gradcheck(lambda x: LA.eig(x).eigenvalues, (a,))
    assert gradcheck(lambda x: LA.eig(x).eigenvectors.abs(), (a,))
    assert gradgradcheck(lambda x: LA.eig(x).eigenvalues, (a,))
    c = _t(_rand(3, 3, complex_=True), requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the complex case"):
        LA.eig(c).eigenvectors.real.sum().backward()


# -- QR ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(shape, mode):
    a = _rand(*shape)
    Q, R = LA.qr(_t(a), mode=mode)
    m, n = shape[-2:]
    rows = min(m, n) if mode == "reduced" else m
    assert Q.shape == shape[:-2] + (m, rows) and R.shape == shape[:-2] + (rows, n)
    q, r = Q.numpy(), R.numpy()
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(_mh(q) @ q, _eye_like(_mh(q) @ q), atol=1e-12)
    np.testing.assert_array_equal(np.tril(r, -1), 0)


def test_qr_mode_r_and_old_api():
    a = _rand(4, 3)
    Q, R = LA.qr(_t(a), mode="r")
    assert Q.shape == (0,)
    np.testing.assert_allclose(np.abs(R.numpy()), np.abs(np.linalg.qr(a, mode="r")), atol=1e-12)
    Q2, R2 = dynjit.qr(_t(a), some=False)
    assert Q2.shape == (4, 4) and type(dynjit.qr(_t(a))).__name__ == "qr"
    np.testing.assert_allclose(Q2.numpy() @ R2.numpy(), a, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (3, 3), (2, 4, 3)])
def test_qr_gradients(shape):
    a = _t(_rand(*shape), requires_grad=True)
    assert gradcheck(lambda x: tuple(LA.qr(x)), (a,))
    assert gradgradcheck(lambda x: tuple(LA.qr(x)), (a,))


def test_qr_gradient_errors():
    a = _t(_rand(4, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="The QR decomposition is not differentiable when mode='complete' and "
                                           "nrows > ncols."):
        LA.qr(a, mode="complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q, which is not computed when "
                                           "mode='r'"):
        LA.qr(a, mode="r").R.sum().backward()
    LA.qr(a.mT, mode="complete").Q.sum().backward()     # m <= n: complete is reduced
    assert a.grad is not None


def test_complex_qr_gradient():
    a = _t(_rand(4, 3, complex_=True), requires_grad=True)
    assert gradcheck(lambda x: tuple(LA.qr(x)), (a,))


# -- Cholesky ----------------------------------------------------------------------------------

def _spd(x):
    return x @ np.swapaxes(x, -1, -2) + 3 * np.eye(x.shape[-1])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    a = _spd(_rand(2, 4, 4))
    L = LA.cholesky(_t(a), upper=upper).numpy()
    if upper:
        np.testing.assert_allclose(_mh(L) @ L, a, atol=1e-12)
        np.testing.assert_array_equal(np.tril(L, -1), 0)
    else:
        np.testing.assert_allclose(L @ _mh(L), a, atol=1e-12)
        np.testing.assert_allclose(L, np.linalg.cholesky(a), atol=1e-12)
    np.testing.assert_allclose(dynjit.cholesky(_t(a), upper).numpy(), L, atol=1e-12)
    np.testing.assert_allclose(_t(a).cholesky(upper).numpy(), L, atol=1e-12)


def test_cholesky_ex_info_and_errors():
    a = np.stack([np.eye(3), -np.eye(3), np.ones((3, 3))])
    L, info = LA.cholesky_ex(_t(a))
    assert info.dtype == dynjit.int32 and info.tolist() == [0, 1, 2]
    np.testing.assert_allclose(L.numpy()[0], np.eye(3))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.cholesky: \(Batch element 1\): The factorization could not "
                                             r"be completed because the input is not positive-definite \(the leading "
                                             r"minor of order 1 is not positive-definite\).$"):
        LA.cholesky(_t(a))
    with pytest.raises(RuntimeError, match=r"^linalg.cholesky_ex: The factorization could not be completed because the "
                                           r"input is not positive-definite \(the leading minor of order 2 is not "
                                           r"positive-definite\).$"):
        LA.cholesky_ex(_t(np.ones((3, 3))), check_errors=True)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients(upper):
    x = _t(_rand(2, 3, 3), requires_grad=True)

    def fn(y):
        return LA.cholesky(y @ y.mT + 3 * dynjit.eye(3, dtype=y.dtype), upper=upper)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    c = _t(_rand(3, 3, complex_=True), requires_grad=True)
    assert gradcheck(lambda y: LA.cholesky(y @ y.mH + 3 * dynjit.eye(3, dtype=y.dtype), upper=upper), (c,))


# -- errors for bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("fn, name", [(LA.svd, "linalg.svd"), (LA.qr, "linalg.qr"), (LA.eigh, "linalg.eigh"),
                                      (LA.cholesky, "linalg.cholesky"), (LA.eig, "linalg.eig")])
def test_shape_errors(fn, name):
    with pytest.raises(RuntimeError, match=f"^{name}: The input tensor A must have at least 2 dimensions.$"):
        fn(dynjit.ones(3))
    if name not in ("linalg.svd", "linalg.qr"):
        with pytest.raises(RuntimeError, match=f"^{name}: A must be batches of square matrices, but they are 2 by 3 "
                                               "matrices$"):
            fn(dynjit.ones(2, 3))


def test_dtype_errors():
    ints = dynjit.ones(3, 3, dtype=dynjit.int64)
    for fn, name in ((LA.svd, "linalg.svd"), (LA.qr, "linalg.qr"), (LA.cholesky, "linalg.cholesky")):
        with pytest.raises(RuntimeError, match=f"^{name}: Expected a floating point or complex tensor as input. "
                                               "Got Long$"):
            fn(ints)
    with pytest.raises(NotImplementedError, match="\"linalg_eigh_cpu\" not implemented for 'Half'"):
        LA.eigh(dynjit.ones(3, 3, dtype=dynjit.float16))
    with pytest.raises(NotImplementedError, match="\"linalg_svd_cpu\" not implemented for 'Half'"):
        LA.svd(dynjit.ones(3, 3, dtype=dynjit.float16))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(dynjit.eye(3), UPLO="X")
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'foo' but expected one of 'reduced' "
                                           r"\(default\), 'r', or 'complete'"):
        LA.qr(dynjit.eye(3), mode="foo")


def test_non_finite_input_errors():
    nan = dynjit.full((3, 3), float("nan"))
    with pytest.raises(LA.LinAlgError, match="linalg.svd: The algorithm failed to converge because the input matrix "
                                             "contained non-finite values."):
        LA.svd(nan)
    with pytest.raises(RuntimeError, match="torch.linalg.eig: input tensor should not contain infs or NaNs."):
        LA.eig(nan)
    with pytest.raises(LA.LinAlgError, match=r"linalg.eigh: The algorithm failed to converge"):
        LA.eigh(nan)
