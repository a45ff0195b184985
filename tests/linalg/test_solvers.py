"""dynjit.linalg's solvers, inverses and functions of a matrix (inv, inv_ex, solve,
solve_triangular, lstsq, pinv, det, slogdet, matrix_rank, cond, matrix_norm, matrix_power,
matrix_exp, multi_dot, cross, vecdot, diagonal) and the torch.* aliases (dynjit.det, logdet,
inverse, svd with V, triangular_solve, cholesky_solve, ...) and Tensor methods: values against
numpy formulas, batching, gradcheck and gradgradcheck, and PyTorch's errors."""
import math

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


def _well_conditioned(*shape, seed=0):
    return _rand(*shape, seed=seed) + 3 * np.eye(shape[-1])


# -- inverse and solve --------------------------------------------------------------------

def test_inv_and_inv_ex():
    a = _well_conditioned(2, 3, 3)
    np.testing.assert_allclose(LA.inv(_t(a)).numpy(), np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(dynjit.inverse(_t(a)).numpy(), np.linalg.inv(a), atol=1e-12)
    np.testing.assert_allclose(_t(a).inverse().numpy(), np.linalg.inv(a), atol=1e-12)
    singular = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    inverse, info = LA.inv_ex(_t(singular))
    assert type(LA.inv_ex(_t(a))).__name__ == "linalg_inv_ex"
    assert info.dtype == dynjit.int32 and info.tolist() == [0, 3]
    np.testing.assert_allclose(inverse.numpy()[0], np.eye(3))


def test_inv_errors():
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: The diagonal element 3 is zero, the inversion could not "
                                             r"be completed because the input matrix is singular.$"):
        LA.inv(_t(np.diag([1.0, 1.0, 0.0])))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: \(Batch element 1\): The diagonal element 1 is zero"):
        LA.inv(_t(np.stack([np.eye(3), np.zeros((3, 3))])))
    with pytest.raises(LA.LinAlgError, match="The diagonal element 2 is zero"):
        LA.inv(dynjit.ones(3, 3))           # LU with partial pivoting: the second pivot is 0
    with pytest.raises(RuntimeError, match="^linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                                           "matrices$"):
        LA.inv(dynjit.ones(2, 3))
    with pytest.raises(RuntimeError, match="^linalg.inv: Expected a floating point or complex tensor as input. "
                                           "Got Long$"):
        LA.inv(dynjit.eye(3, dtype=dynjit.int64))
    with pytest.raises(RuntimeError, match="^linalg.inv: Low precision dtypes not supported. Got Half$"):
        LA.inv(dynjit.eye(3, dtype=dynjit.float16))
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_solve_shapes_and_values():
    a = _well_conditioned(2, 3, 3)
    b = _rand(2, 3, 4, seed=1)
    np.testing.assert_allclose(LA.solve(_t(a), _t(b)).numpy(), np.linalg.solve(a, b), atol=1e-12)
    v = _rand(3, seed=2)
    np.testing.assert_allclose(LA.solve(_t(a[0]), _t(v)).numpy(), np.linalg.solve(a[0], v), atol=1e-12)
    batch_of_vectors = _rand(2, 3, seed=3)      # B of shape A.shape[:-1]: a batch of vectors
    out = LA.solve(_t(a), _t(batch_of_vectors))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, batch_of_vectors[..., None])[..., 0], atol=1e-12)
    broadcast = LA.solve(_t(a), _t(b[0]))       # B's batch broadcasts against A's
    assert broadcast.shape == (2, 3, 4)
    rows = _rand(5, 3, seed=4)
    np.testing.assert_allclose(LA.solve(_t(a[0]), _t(rows), left=False).numpy(), rows @ np.linalg.inv(a[0]),
                               atol=1e-12)


def test_solve_errors():
    with pytest.raises(LA.LinAlgError, match=r"^torch.linalg.solve: The solver failed because the input matrix is "
                                             r"singular.$"):
        LA.solve(dynjit.zeros(3, 3), dynjit.ones(3))
    with pytest.raises(LA.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 1\): The solver failed"):
        LA.solve(_t(np.stack([np.eye(3), np.zeros((3, 3))])), _t(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"^linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                                           r"\(3x3 and 4x1\)$"):
        LA.solve(dynjit.eye(3), dynjit.ones(4))
    with pytest.raises(RuntimeError, match=r"equation XA = B \(3x3 and 3x1\)"):
        LA.solve(dynjit.eye(3), dynjit.ones(3), left=False)
    with pytest.raises(RuntimeError, match="^linalg.solve: Expected A and B to have the same dtype, but found A of "
                                           "type Double and B of type Float instead$"):
        LA.solve(dynjit.eye(3, dtype=dynjit.float64), dynjit.ones(3))


def test_solve_triangular():
    a = _well_conditioned(2, 4, 4)
    b = _rand(2, 4, 3, seed=1)
    up, low = np.triu(a), np.tril(a)
    np.testing.assert_allclose(LA.solve_triangular(_t(a), _t(b), upper=True).numpy(), np.linalg.solve(up, b),
                               atol=1e-12)
    np.testing.assert_allclose(LA.solve_triangular(_t(a), _t(b), upper=False).numpy(), np.linalg.solve(low, b),
                               atol=1e-12)
    unit = np.tril(a, -1) + np.eye(4)
    np.testing.assert_allclose(LA.solve_triangular(_t(a), _t(b), upper=False, unitriangular=True).numpy(),
                               np.linalg.solve(unit, b), atol=1e-12)
    bt = np.swapaxes(b, -1, -2)
    np.testing.assert_allclose(LA.solve_triangular(_t(a), _t(bt), upper=True, left=False).numpy(),
                               bt @ np.linalg.inv(up), atol=1e-12)
    with pytest.raises(RuntimeError, match="^linalg.solve_triangular: The input tensor B must have at least 2 "
                                           "dimensions.$"):
        LA.solve_triangular(dynjit.eye(3), dynjit.ones(3), upper=True)
    with pytest.raises(RuntimeError, match=r"equation XA = B \(3x3 and 3x1\)"):
        LA.solve_triangular(dynjit.eye(3), dynjit.ones(3, 1), upper=True, left=False)


def test_solver_gradients():
    a = _t(_well_conditioned(2, 3, 3), requires_grad=True)
    b = _t(_rand(2, 3, 2, seed=1), requires_grad=True)
    v = _t(_rand(3, seed=2), requires_grad=True)
    for fn, args in [(LA.inv, (a,)),
                     (LA.solve, (a, b)),
                     (LA.solve, (a, v)),
                     (lambda x, y: LA.solve(x, y.mT, left=False), (a, b)),
                     (lambda x, y: LA.solve_triangular(x, y, upper=True), (a, b)),
                     (lambda x, y: LA.solve_triangular(x, y.mT, upper=False, left=False, unitriangular=True), (a, b))]:
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)
    # B broadcast over A's batch: its gradient sums over the batch
    assert gradcheck(LA.solve, (a, _t(_rand(3, 2, seed=5), requires_grad=True)))


def test_complex_solver_gradients():
    a = _t(_rand(3, 3, complex_=True) + 3 * np.eye(3), requires_grad=True)
    b = _t(_rand(3, 2, seed=1, complex_=True), requires_grad=True)
    assert gradcheck(LA.inv, (a,))
    assert gradcheck(LA.solve, (a, b))
    assert gradcheck(lambda x, y: LA.solve_triangular(x, y, upper=False), (a, b))


# -- determinants ------------------------------------------------------------------------------

def test_det_slogdet_logdet():
    a = _rand(3, 4, 4)
    np.testing.assert_allclose(LA.det(_t(a)).numpy(), np.linalg.det(a), rtol=1e-10)
    sign, logabsdet = LA.slogdet(_t(a))
    ref_sign, ref_log = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.numpy(), ref_sign)
    np.testing.assert_allclose(logabsdet.numpy(), ref_log, rtol=1e-10)
    assert type(LA.slogdet(_t(a))).__name__ == "linalg_slogdet" and type(dynjit.slogdet(_t(a))).__name__ == "slogdet"
    np.testing.assert_allclose(dynjit.det(_t(a)).numpy(), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(_t(a).det().numpy(), np.linalg.det(a), rtol=1e-10)
    logdet = dynjit.logdet(_t(a)).numpy()
    expected = np.where(ref_sign < 0, np.nan, ref_log)
    np.testing.assert_allclose(logdet, expected, rtol=1e-10)
    assert math.isinf(dynjit.logdet(dynjit.zeros(3, 3)).item())
    assert LA.det(dynjit.ones(0, 0)).item() == 1.0
    singular = np.diag([1.0, 2.0, 0.0])
    assert LA.slogdet(_t(singular)).sign.item() == 0 and LA.slogdet(_t(singular)).logabsdet.item() == -math.inf


def _cofactors(a):
    n = a.shape[0]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def test_det_gradient_of_a_singular_matrix_is_the_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])      # rank 2
    t = _t(a, requires_grad=True)
    LA.det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), _cofactors(a), atol=1e-10)
    assert np.abs(t.grad.numpy()).sum() > 1
    rank1 = _t(np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]), requires_grad=True)
    LA.det(rank1).backward()
    np.testing.assert_allclose(rank1.grad.numpy(), 0, atol=1e-12)      # all 2x2 minors vanish


def test_det_slogdet_gradients():
    a = _t(_rand(2, 3, 3), requires_grad=True)
    assert gradcheck(LA.det, (a,))
    assert gradgradcheck(LA.det, (a,))
    assert gradcheck(lambda x: LA.slogdet(x).logabsdet, (a,))
    assert gradgradcheck(lambda x: LA.slogdet(x).logabsdet, (a,))
    c = _t(_rand(3, 3, complex_=True), requires_grad=True)
    assert gradcheck(LA.det, (c,))
    assert gradcheck(lambda x: tuple(LA.slogdet(x)), (c,))


def test_det_errors():
    with pytest.raises(RuntimeError, match="^linalg.det: A must be batches of square matrices, but they are 2 by 3 "
                                           "matrices$"):
        LA.det(dynjit.ones(2, 3))
    with pytest.raises(RuntimeError, match="^linalg.det: Expected a floating point or complex tensor as input. "
                                           "Got Long$"):
        LA.det(dynjit.ones(3, 3, dtype=dynjit.int64))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Half'"):
        LA.det(dynjit.ones(3, 3, dtype=dynjit.float16))


# -- pinv, lstsq, rank, cond, norms ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv(shape):
    a = _rand(*shape)
    np.testing.assert_allclose(LA.pinv(_t(a)).numpy(), np.linalg.pinv(a), atol=1e-12)
    t = _t(a, requires_grad=True)
    assert gradcheck(LA.pinv, (t,))
    assert gradgradcheck(LA.pinv, (t,))


def test_pinv_rank_deficient_hermitian_and_tolerances():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    np.testing.assert_allclose(LA.pinv(_t(a)).numpy(), np.linalg.pinv(a), atol=1e-12)
    sym = _rand(4, 4)
    sym = sym + sym.T
    np.testing.assert_allclose(LA.pinv(_t(sym), hermitian=True).numpy(), np.linalg.pinv(sym, hermitian=True),
                               atol=1e-12)
    d = np.diag([4.0, 1.0, 1e-3])
    np.testing.assert_allclose(LA.pinv(_t(d), rtol=1e-2).numpy(), np.diag([0.25, 1.0, 0.0]))
    np.testing.assert_allclose(LA.pinv(_t(d), atol=0.5).numpy(), np.diag([0.25, 1.0, 0.0]))
    np.testing.assert_allclose(LA.pinv(_t(d), 1e-2).numpy(), np.diag([0.25, 1.0, 0.0]))    # rcond
    np.testing.assert_allclose(dynjit.pinverse(_t(d), 1e-2).numpy(), np.diag([0.25, 1.0, 0.0]))
    with pytest.raises(RuntimeError, match=r"linalg.pinv\(Float\{\[3\]\}\): expected a tensor with 2 or more "
                                           r"dimensions of float, double, cfloat or cdouble types"):
        LA.pinv(dynjit.ones(3))


def test_lstsq():
    a, b = _rand(6, 3), _rand(6, 2, seed=1)
    ref, ref_res, ref_rank, ref_sv = np.linalg.lstsq(a, b, rcond=None)
    out = LA.lstsq(_t(a), _t(b))
    assert out._fields == ("solution", "residuals", "rank", "singular_values")
    np.testing.assert_allclose(out.solution.numpy(), ref, atol=1e-12)
    assert out.rank.item() == ref_rank and out.residuals.numel() == 0       # gelsy, as PyTorch's CPU default
    gelsd = LA.lstsq(_t(a), _t(b), driver="gelsd")
    np.testing.assert_allclose(gelsd.residuals.numpy(), ref_res, atol=1e-12)
    np.testing.assert_allclose(gelsd.singular_values.numpy(), ref_sv, atol=1e-12)
    wide = _rand(2, 4, seed=2)          # underdetermined: the minimum-norm solution
    np.testing.assert_allclose(LA.lstsq(_t(wide), _t(b[:2])).solution.numpy(),
                               np.linalg.lstsq(wide, b[:2], rcond=None)[0], atol=1e-12)
    vec = LA.lstsq(_t(a), _t(b[:, 0])).solution
    assert vec.shape == (3,)
    np.testing.assert_allclose(vec.numpy(), ref[:, 0], atol=1e-12)
    ta, tb = _t(a, requires_grad=True), _t(b, requires_grad=True)
    assert gradcheck(lambda x, y: LA.lstsq(x, y).solution, (ta, tb))
    with pytest.raises(RuntimeError, match=r"torch.linalg.lstsq: parameter `driver` should be one of \(gels, gelsy, "
                                           r"gelsd, gelss\)"):
        LA.lstsq(_t(a), _t(b), driver="foo")
    with pytest.raises(RuntimeError, match=r"torch.linalg.lstsq: input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(_t(a), _t(b[:3]))


def test_matrix_rank_and_cond():
    a = np.stack([np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]), _rand(3, 3)])
    assert LA.matrix_rank(_t(a)).tolist() == list(np.linalg.matrix_rank(a))
    assert LA.matrix_rank(_t(a)).dtype == dynjit.int64
    assert LA.matrix_rank(_t(np.diag([1.0, 0.1, 0.01])), atol=0.05).item() == 2
    assert LA.matrix_rank(_t(np.diag([1.0, 0.1, 0.01])), 0.05).item() == 2
    assert LA.matrix_rank(_t(np.ones((3, 3))), hermitian=True).item() == 1
    b = _rand(2, 4, 4)
    for p in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"):
        np.testing.assert_allclose(LA.cond(_t(b), p).numpy(), np.linalg.cond(b, p), rtol=1e-10)
    assert math.isinf(LA.cond(dynjit.ones(3, 3), 1).item())
    assert gradcheck(lambda x: LA.cond(x), (_t(b, requires_grad=True),))
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        LA.cond(dynjit.eye(3), 3)
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=1\): A must be batches of square matrices, but they are "
                                           r"2 by 3 matrices"):
        LA.cond(dynjit.ones(2, 3), 1)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm_orders(ord):
    a = _rand(2, 3, 4)
    ref = np.linalg.norm(a, ord, axis=(-2, -1))
    np.testing.assert_allclose(LA.matrix_norm(_t(a), ord).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(LA.norm(_t(a[0]), ord).numpy(), np.linalg.norm(a[0], ord), rtol=1e-12)
    kept = LA.matrix_norm(_t(a), ord, dim=(0, 2), keepdim=True)
    assert kept.shape == (1, 3, 1)
    np.testing.assert_allclose(kept.numpy()[0, :, 0], np.linalg.norm(a, ord, axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(LA.matrix_norm(_t(a), ord, dim=(2, 0)).numpy(), np.linalg.norm(a, ord, axis=(2, 0)),
                               rtol=1e-12)
    assert gradcheck(lambda x: LA.matrix_norm(x, ord), (_t(a, requires_grad=True),))


def test_matrix_norm_errors():
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Order 3 not supported.$"):
        LA.matrix_norm(dynjit.ones(3, 3), 3)
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Order foo not supported.$"):
        LA.matrix_norm(dynjit.ones(3, 3), "foo")
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: dims must be different. Got \(0, 0\)$"):
        LA.matrix_norm(dynjit.eye(3), 2, dim=(0, 0))
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                                           "Got Long$"):
        LA.matrix_norm(dynjit.ones(3, 3, dtype=dynjit.int64))


# -- functions of a matrix and products ------------------------------------------------------------

def test_matrix_power():
    a = _well_conditioned(2, 3, 3)
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(LA.matrix_power(_t(a), n).numpy(), np.linalg.matrix_power(a, n), rtol=1e-10)
    ints = dynjit.ones(3, 3, dtype=dynjit.int64)
    assert LA.matrix_power(ints, 2).tolist() == [[3] * 3] * 3 and LA.matrix_power(ints, 0).dtype == dynjit.int64
    assert gradcheck(lambda x: LA.matrix_power(x, 3), (_t(a, requires_grad=True),))
    assert gradcheck(lambda x: _t(a).matrix_power(-2) @ x.matrix_power(-2), (_t(a, requires_grad=True),))
    with pytest.raises(TypeError, match=r"linalg_matrix_power\(\): argument 'n' \(position 2\) must be int, not float"):
        LA.matrix_power(_t(a), 2.0)
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 2 is zero"):
        LA.matrix_power(dynjit.ones(3, 3), -2)


def test_matrix_exp():
    sym = _rand(2, 4, 4)
    sym = sym + np.swapaxes(sym, -1, -2)
    values, vectors = np.linalg.eigh(sym)
    ref = (vectors * np.exp(values)[..., None, :]) @ np.swapaxes(vectors, -1, -2)
    np.testing.assert_allclose(LA.matrix_exp(_t(sym)).numpy(), ref, rtol=1e-10)
    nilpotent = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]])     # exp = I + N + N^2 / 2
    np.testing.assert_allclose(dynjit.matrix_exp(_t(nilpotent)).numpy(),
                               np.eye(3) + nilpotent + nilpotent @ nilpotent / 2, atol=1e-14)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]]) * 0.7
    np.testing.assert_allclose(_t(rotation).matrix_exp().numpy(),
                               [[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]], atol=1e-14)
    big = sym * 10          # norms far above the Pade range: scaling and squaring
    np.testing.assert_allclose(LA.matrix_exp(_t(big)).numpy(),
                               (vectors * np.exp(10 * values)[..., None, :]) @ np.swapaxes(vectors, -1, -2), rtol=1e-9)
    assert LA.matrix_exp(_t(sym.astype(np.float32))).dtype == dynjit.float32
    t = _t(_rand(2, 3, 3), requires_grad=True)
    assert gradcheck(LA.matrix_exp, (t,))
    assert gradgradcheck(LA.matrix_exp, (t,))


def test_multi_dot_cross_vecdot_diagonal():
    mats = [_rand(2, 3), _rand(3, 4, seed=1), _rand(4, 5, seed=2)]
    np.testing.assert_allclose(LA.multi_dot([_t(m) for m in mats]).numpy(), np.linalg.multi_dot(mats), rtol=1e-12)
    v1, v2 = _rand(3, seed=3), _rand(4, seed=4)
    np.testing.assert_allclose(LA.multi_dot([_t(v1), _t(mats[1]), _t(v2)]).numpy(), v1 @ mats[1] @ v2, rtol=1e-12)
    assert LA.multi_dot([dynjit.ones(3), dynjit.ones(3)]).shape == ()
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): expected at least 2 tensors but got 1"):
        LA.multi_dot([dynjit.ones(3)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensors 0 and 1 with shapes \[2, 3\] and \[4\] cannot be "
                                           r"multiplied"):
        LA.multi_dot([dynjit.ones(2, 3), dynjit.ones(4)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): the first tensor must be 1D or 2D but got 3D"):
        LA.multi_dot([dynjit.ones(1, 2, 3), dynjit.ones(3)])
    a, b = _rand(4, 3), _rand(2, 1, 3, seed=1)
    np.testing.assert_allclose(LA.cross(_t(a), _t(b)).numpy(), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(dynjit.cross(_t(a.T), _t(a.T[::-1].copy())).numpy(), np.cross(a.T, a.T[::-1], axis=0),
                               rtol=1e-12)
    np.testing.assert_allclose(_t(a).cross(_t(a[::-1].copy()), dim=1).numpy(), np.cross(a, a[::-1]), rtol=1e-12)
    assert gradcheck(LA.cross, (_t(a, requires_grad=True), _t(b, requires_grad=True)))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"):
        LA.cross(dynjit.ones(2), dynjit.ones(2))
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
        dynjit.cross(dynjit.ones(2, 4), dynjit.ones(2, 4))
    c1, c2 = _rand(2, 3, complex_=True), _rand(2, 3, seed=1, complex_=True)
    np.testing.assert_allclose(LA.vecdot(_t(c1), _t(c2)).numpy(), (np.conj(c1) * c2).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(LA.vecdot(_t(a), _t(a), dim=0).numpy(), (a * a).sum(0), rtol=1e-12)
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        LA.vecdot(dynjit.ones(3, dtype=dynjit.int64), dynjit.ones(3, dtype=dynjit.int64))
    x = _rand(2, 3, 4)
    np.testing.assert_array_equal(LA.diagonal(_t(x)).numpy(), np.diagonal(x, 0, -2, -1))
    np.testing.assert_array_equal(LA.diagonal(_t(x), offset=1, dim1=0, dim2=2).numpy(), np.diagonal(x, 1, 0, 2))


# -- the torch.* aliases --------------------------------------------------------------------------------

def test_old_svd_returns_v():
    a = _rand(4, 3)
    U, S, V = dynjit.svd(_t(a))
    assert type(dynjit.svd(_t(a))).__name__ == "svd" and U.shape == (4, 3) and V.shape == (3, 3)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, a, atol=1e-12)
    assert dynjit.svd(_t(a), some=False).U.shape == (4, 4)
    U0, S0, V0 = _t(a).svd(compute_uv=False)
    assert U0.shape == (4, 4) and V0.shape == (3, 3) and not U0.numpy().any()
    np.testing.assert_allclose(S0.numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-12)


def test_cholesky_solve_inverse_and_triangular_solve():
    x = _rand(2, 3, 3)
    spd = x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)
    b = _rand(2, 3, 2, seed=1)
    L = np.linalg.cholesky(spd)
    np.testing.assert_allclose(dynjit.cholesky_solve(_t(b), _t(L)).numpy(), np.linalg.solve(spd, b), atol=1e-12)
    U = np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(dynjit.cholesky_solve(_t(b), _t(U), upper=True).numpy(), np.linalg.solve(spd, b),
                               atol=1e-12)
    np.testing.assert_allclose(dynjit.cholesky_inverse(_t(L[0])).numpy(), np.linalg.inv(spd[0]), atol=1e-12)
    np.testing.assert_allclose(_t(U[0]).cholesky_inverse(True).numpy(), np.linalg.inv(spd[0]), atol=1e-12)
    with pytest.raises(RuntimeError, match="b should have at least 2 dimensions, but has 1 dimensions instead"):
        dynjit.cholesky_solve(dynjit.ones(3), dynjit.eye(3))
    a = _well_conditioned(3, 3)
    solution, coefficient = dynjit.triangular_solve(_t(b[0]), _t(a))
    np.testing.assert_allclose(solution.numpy(), np.linalg.solve(np.triu(a), b[0]), atol=1e-12)
    np.testing.assert_array_equal(coefficient.numpy(), a)
    transposed = dynjit.triangular_solve(_t(b[0]), _t(a), upper=False, transpose=True).solution
    np.testing.assert_allclose(transposed.numpy(), np.linalg.solve(np.tril(a).T, b[0]), atol=1e-12)
    tl, tb = _t(L[0], requires_grad=True), _t(b[0], requires_grad=True)
    assert gradcheck(lambda l, y: dynjit.cholesky_solve(y, l.tril()), (tl, tb))


def test_error_names_and_dtype_rules_follow_pytorch():
    ints = dynjit.ones(3, 3, dtype=dynjit.int64)
    with pytest.raises(NotImplementedError, match="^\"linalg_eigh_cpu\" not implemented for 'Long'$"):
        LA.eigvalsh(ints)
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Long$"):
        LA.eig(ints)
    with pytest.raises(NotImplementedError, match="^\"triangular_solve_cpu\" not implemented for 'Long'$"):
        LA.solve_triangular(ints, dynjit.ones(3, 1, dtype=dynjit.int64), upper=True)
    # B is computed in A's dtype, as in PyTorch
    x = LA.solve_triangular(dynjit.eye(3), dynjit.ones(3, 1, dtype=dynjit.float64), upper=True)
    assert x.dtype == dynjit.float32
    with pytest.raises(LA.LinAlgError, match=r"^linalg.cholesky_ex: The factorization could not be completed"):
        LA.cholesky_ex(dynjit.ones(3, 3), check_errors=True)
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv_ex: \(Batch element 0\): The diagonal element 1 is zero"):
        LA.inv_ex(dynjit.zeros(2, 3, 3), check_errors=True)
    with pytest.raises(RuntimeError, match="^torch.triangular_solve: Expected b to have at least 2 dimensions, but it "
                                           "has 1 dimensions instead$"):
        dynjit.triangular_solve(dynjit.ones(3), dynjit.eye(3))


def test_solve_ex_tensorinv_tensorsolve_vander():
    result, info = LA.solve_ex(dynjit.zeros(3, 3), dynjit.ones(3))
    assert info.item() == 1 and info.dtype == dynjit.int32 and not np.isfinite(result.numpy()).all()
    a, b = _well_conditioned(2, 3, 3), _rand(2, 3, seed=1)
    out = LA.solve_ex(_t(a), _t(b))
    assert type(out).__name__ == "linalg_solve_ex" and out.info.tolist() == [0, 0]
    np.testing.assert_allclose(out.result.numpy(), np.linalg.solve(a, b[..., None])[..., 0], atol=1e-12)
    assert gradcheck(lambda x, y: LA.solve_ex(x, y).result, (_t(a, requires_grad=True), _t(b, requires_grad=True)))
    t = _rand(6, 2, 3)
    np.testing.assert_allclose(LA.tensorinv(_t(t), ind=1).numpy(), np.linalg.tensorinv(t, ind=1), atol=1e-12)
    with pytest.raises(RuntimeError, match=r"Expected self to satisfy the requirement prod\(self.shape\[ind:\]\) == "
                                           r"prod\(self.shape\[:ind\]\), but got 3 != 2"):
        LA.tensorinv(dynjit.ones(2, 3), ind=1)
    A, B = _rand(2, 3, 6, seed=2), _rand(2, 3, seed=3)
    np.testing.assert_allclose(LA.tensorsolve(_t(A), _t(B)).numpy(), np.linalg.tensorsolve(A, B), atol=1e-12)
    A2 = _rand(6, 2, 3, seed=4)
    np.testing.assert_allclose(LA.tensorsolve(_t(A2), _t(B), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(A2, B, axes=(0,)), atol=1e-12)
    x = np.array([0.0, 1.5, -2.0])
    np.testing.assert_allclose(LA.vander(_t(x)).numpy(), np.vander(x, increasing=True))
    assert LA.vander(dynjit.tensor([1, 2, 3]), N=4).tolist() == np.vander([1, 2, 3], 4, increasing=True).tolist()
    assert gradcheck(LA.vander, (_t(x, requires_grad=True),))
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        LA.vander(_t(x), N=1)


def _np_householder_product(a, tau):
    m, n = a.shape
    H = np.eye(m, dtype=a.dtype)
    for i in range(len(tau)):
        v = a[:, i].copy()
        v[:i] = 0
        v[i] = 1
        H = H @ (np.eye(m) - tau[i] * np.outer(v, v.conj()))
    return H[:, :n]


def test_householder_product():
    a, tau = _rand(2, 5, 3), _rand(2, 2, seed=1)
    got = LA.householder_product(_t(a), _t(tau)).numpy()
    np.testing.assert_allclose(got, np.stack([_np_householder_product(a[i], tau[i]) for i in range(2)]), atol=1e-12)
    c, tc = _rand(4, 3, complex_=True), _rand(3, seed=2, complex_=True)
    np.testing.assert_allclose(LA.householder_product(_t(c), _t(tc)).numpy(), _np_householder_product(c, tc),
                               atol=1e-12)
    # with the reflectors of a QR factorization (tau = 2 / |v|^2) it gives an orthonormal Q
    x = _rand(4, 3, seed=3)
    v = np.tril(x, -1) + np.eye(4, 3)
    q = LA.householder_product(_t(v), _t(2 / (v * v).sum(0))).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-12)
    ta, tt = _t(a[0], requires_grad=True), _t(tau[0], requires_grad=True)
    assert gradcheck(LA.householder_product, (ta, tt))
    assert gradgradcheck(LA.householder_product, (ta, tt))
    with pytest.raises(RuntimeError, match=r"torch.linalg.householder_product: input.shape\[-2\] must be greater than "
                                           r"or equal to input.shape\[-1\]"):
        LA.householder_product(dynjit.ones(3, 4), dynjit.ones(2))
    with pytest.raises(RuntimeError, match="torch.linalg.householder_product: tau dtype Double does not match input "
                                           "dtype Float"):
        LA.householder_product(dynjit.ones(4, 3), dynjit.ones(2, dtype=dynjit.float64))
