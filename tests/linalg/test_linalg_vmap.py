"""dynjit.func.vmap over dynjit.linalg: the ops declare BATCHED_MATRICES (their arguments'
leading dims broadcast and lead every output), so vmap batches them by lining up the
operands' logical dims; results equal numpy's per-example ones, for batched and unbatched
operands, and jacrev (vmap of vjp) goes through the derivatives."""
import numpy as np
import pytest

import dynjit
from dynjit import linalg as LA
from dynjit.func import vmap, jacrev


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 3, 3)) + 3 * np.eye(3), rng.standard_normal((4, 3, 2))


def test_vmap_of_single_matrix_functions():
    a, _ = _batch()
    t = dynjit.tensor(a)
    np.testing.assert_allclose(vmap(LA.det)(t).numpy(), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(vmap(LA.svdvals)(t).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(vmap(LA.inv)(t).numpy(), np.linalg.inv(a), rtol=1e-12)
    np.testing.assert_allclose(vmap(LA.eigvalsh)(t).numpy(), np.linalg.eigvalsh(a), rtol=1e-12)
    np.testing.assert_allclose(vmap(LA.pinv)(t).numpy(), np.linalg.pinv(a), rtol=1e-10)
    spd = a @ np.swapaxes(a, -1, -2)
    np.testing.assert_allclose(vmap(LA.cholesky)(dynjit.tensor(spd)).numpy(), np.linalg.cholesky(spd), rtol=1e-12)
    Q, R = vmap(lambda x: tuple(LA.qr(x)))(t)
    np.testing.assert_allclose((Q @ R).numpy(), a, atol=1e-12)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_of_solve_lines_up_batched_and_unbatched_operands(in_dims):
    a, b = _batch()
    ta = dynjit.tensor(a if in_dims[0] == 0 else a[0])
    tb = dynjit.tensor(b if in_dims[1] == 0 else b[0])
    expected = np.linalg.solve(ta.numpy(), tb.numpy())
    np.testing.assert_allclose(vmap(LA.solve, in_dims=in_dims)(ta, tb).numpy(), expected, rtol=1e-12)
    upper = np.linalg.solve(np.triu(ta.numpy()), tb.numpy())
    got = vmap(lambda x, y: LA.solve_triangular(x, y, upper=True), in_dims=in_dims)(ta, tb)
    np.testing.assert_allclose(got.numpy(), upper, rtol=1e-12)


def test_jacrev_of_linalg_functions():
    a, _ = _batch()
    x = a[1]
    np.testing.assert_allclose(jacrev(LA.det)(dynjit.tensor(x)).numpy(), np.linalg.det(x) * np.linalg.inv(x).T,
                               rtol=1e-10)
    inv = np.linalg.inv(x)
    expected = -np.einsum("ik,lj->ijkl", inv, inv)     # d inv(A)_ij / d A_kl
    np.testing.assert_allclose(jacrev(LA.inv)(dynjit.tensor(x)).numpy(), expected, atol=1e-12)


def test_vmap_refuses_an_output_without_the_batch():
    a, _ = _batch()
    with pytest.raises(NotImplementedError, match="vmap: dynjit.ops.linalg_qr gives an output without the batch"):
        vmap(lambda x: LA.qr(x, mode="r").R)(dynjit.tensor(a))
