"""dynjit.cdist and dynjit.linalg's norms against numpy, their gradients (zero at a zero
distance, as PyTorch's), PyTorch's errors, and compiled == plain."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck


def _np_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == np.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_cdist_matches_numpy(p):
    rng = np.random.RandomState(0)
    a, b = rng.randn(2, 6, 5), rng.randn(2, 4, 5)
    np.testing.assert_allclose(dynjit.cdist(dynjit.tensor(a), dynjit.tensor(b), p=p).numpy(), _np_cdist(a, b, p),
                               rtol=1e-12)
    np.testing.assert_allclose(dynjit.cdist(dynjit.tensor(a[0]), dynjit.tensor(b[1]), p=p).numpy(),
                               _np_cdist(a[0], b[1], p), rtol=1e-12)


def test_cdist_gradients():
    a = dynjit.randn(5, 3, dtype=dynjit.float64, requires_grad=True)
    b = dynjit.randn(4, 3, dtype=dynjit.float64, requires_grad=True)
    for p in (2.0, 1.5, 3.0):
        assert gradcheck(lambda a, b: dynjit.cdist(a, b, p=p), (a, b))
    x = dynjit.ones(2, 3, requires_grad=True)                # a zero distance: zero gradient
    dynjit.cdist(x, dynjit.ones(1, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 3 X2: 2"):
        dynjit.cdist(dynjit.ones(2, 3), dynjit.ones(2, 2))
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        dynjit.cdist(dynjit.ones(3), dynjit.ones(2, 3))


def test_linalg_norms_match_numpy():
    x = np.random.RandomState(1).randn(3, 4)
    t = dynjit.tensor(x)
    L = dynjit.linalg
    np.testing.assert_allclose(L.vector_norm(t).item(), np.linalg.norm(x.ravel()))
    np.testing.assert_allclose(L.vector_norm(t, 1, dim=1, keepdim=True).numpy(), np.abs(x).sum(1, keepdims=True))
    np.testing.assert_allclose(L.vector_norm(t, float("inf"), dim=(0, 1)).item(), np.abs(x).max())
    np.testing.assert_allclose(L.vector_norm(t, 0).item(), np.count_nonzero(x))
    assert L.vector_norm(t, keepdim=True).shape == (1, 1)
    np.testing.assert_allclose(L.norm(t).item(), np.linalg.norm(x))
    np.testing.assert_allclose(L.norm(t, "fro").item(), np.linalg.norm(x, "fro"))
    np.testing.assert_allclose(L.norm(t, dim=1).numpy(), np.linalg.norm(x, axis=1))
    np.testing.assert_allclose(L.norm(t[0], 3).item(), np.linalg.norm(x[0], 3))
    np.testing.assert_allclose(L.matrix_norm(t.reshape(1, 3, 4)).numpy(), [np.linalg.norm(x)])
    np.testing.assert_allclose(L.matrix_norm(t, 2).item(), np.linalg.norm(x, 2))   # the spectral norm
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        L.vector_norm(dynjit.ones(3, dtype=dynjit.int64))
    v = dynjit.randn(4, 3, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(lambda v: L.vector_norm(v, 3, dim=0), (v,))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain(backend):
    def nearest_centroid_loss(x, centroids):
        d = dynjit.cdist(x, centroids)
        return (d.min(dim=1).values + 0.1 * dynjit.linalg.vector_norm(centroids, dim=1).sum()).sum()

    rng = np.random.RandomState(0)
    x0, c0 = rng.randn(8, 3).astype(np.float32), rng.randn(3, 3).astype(np.float32)
    results = []
    for fn in (nearest_centroid_loss, dynjit.compile(nearest_centroid_loss, backend=backend)):
        x, c = dynjit.tensor(x0, requires_grad=True), dynjit.tensor(c0, requires_grad=True)
        out = fn(x, c)
        out.backward()
        results.append((out.item(), x.grad.numpy(), c.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
