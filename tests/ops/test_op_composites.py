"""Functions built from registered ops (no op of their own): where(cond),
nonzero(as_tuple=True), diag, trace, diff, count_nonzero, tile, meshgrid,
numpy's `axis=` keyword. Checked against numpy and, where differentiable,
with gradcheck (they differentiate through their ops)."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(7)


def f64(*shape):
    return dynjit.tensor(rng.standard_normal(shape), dtype=dynjit.float64, requires_grad=True)


def test_where_with_only_a_condition_is_nonzero_as_tuple():
    x = dynjit.tensor([[1.0, 0.0], [2.0, 3.0]])
    got = dynjit.where(x > 1)
    expected = np.nonzero(x.numpy() > 1)
    assert [g.tolist() for g in got] == [e.tolist() for e in expected]
    assert [g.tolist() for g in x.nonzero(as_tuple=True)] == [e.tolist() for e in np.nonzero(x.numpy())]
    assert dynjit.nonzero(x).tolist() == np.argwhere(x.numpy()).tolist()


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diag_of_a_vector_and_of_a_matrix(offset):
    v = f64(3)
    np.testing.assert_array_equal(dynjit.diag(v, offset).detach().numpy(), np.diag(v.detach().numpy(), offset))
    m = f64(3, 4)
    np.testing.assert_array_equal(m.diag(offset).detach().numpy(), np.diag(m.detach().numpy(), offset))
    assert gradcheck(lambda t: dynjit.diag(t, offset), [v])
    assert gradgradcheck(lambda t: dynjit.diag(t, offset), [v])
    assert gradcheck(lambda t: t.diag(offset), [m])


def test_diag_rejects_other_ranks():
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        dynjit.ones(2, 2, 2).diag()


def test_trace():
    m = f64(3, 3)
    assert dynjit.trace(m).item() == pytest.approx(np.trace(m.detach().numpy()))
    assert gradcheck(dynjit.trace, [m])


@pytest.mark.parametrize("n,dim", [(1, -1), (2, -1), (1, 0), (3, 1)])
def test_diff(n, dim):
    x = f64(4, 5)
    np.testing.assert_allclose(dynjit.diff(x, n, dim).detach().numpy(), np.diff(x.detach().numpy(), n, dim))
    assert gradcheck(lambda t: t.diff(n, dim), [x])


def test_count_nonzero():
    x = dynjit.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    assert dynjit.count_nonzero(x).item() == 3
    assert x.count_nonzero(0).tolist() == [1, 0, 2]
    assert x.count_nonzero(dim=1).dtype is dynjit.int64


@pytest.mark.parametrize("shape,dims", [((2, 3), (2,)), ((2, 3), (2, 1)), ((3,), (2, 2)), ((), (3,))])
def test_tile(shape, dims):
    x = f64(*shape)
    np.testing.assert_array_equal(dynjit.tile(x, dims).detach().numpy(), np.tile(x.detach().numpy(), dims))
    assert gradcheck(lambda t: t.tile(dims), [x])


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b, c = f64(3), f64(2), f64(4)
    got = dynjit.meshgrid(a, b, c, indexing=indexing)
    expected = np.meshgrid(a.detach().numpy(), b.detach().numpy(), c.detach().numpy(), indexing=indexing)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.detach().numpy(), e)
    assert gradcheck(lambda x, y: dynjit.meshgrid([x, y], indexing=indexing), [a, b])


def test_numpy_axis_keyword_is_dim():
    x = dynjit.tensor([[1.0, 2.0], [3.0, 5.0]])
    assert x.sum(axis=0).tolist() == [4.0, 7.0]
    assert dynjit.mean(x, axis=1).tolist() == [1.5, 4.0]
    assert x.amax(axis=1, keepdim=True).tolist() == [[2.0], [5.0]]


def test_addcmul_and_addcdiv_in_place():
    x = dynjit.tensor([1.0, 2.0])
    v = x._version
    x.addcmul_(dynjit.tensor([2.0, 3.0]), dynjit.tensor([0.5, 2.0]), value=2)
    x.addcdiv_(dynjit.tensor([1.0, 1.0]), dynjit.tensor([2.0, 4.0]))
    assert x.tolist() == [3.5, 14.25] and x._version == v + 2
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is not supported"):
        dynjit.zeros(2).addcdiv(dynjit.tensor([1, 2]), dynjit.tensor([1, 1]))
