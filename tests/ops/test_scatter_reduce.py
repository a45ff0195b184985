"""scatter_reduce / index_reduce (and their in-place forms): values against a plain
Python-loop reference for every reduction with and without include_self, integer
means rounding down, PyTorch's errors, first and second derivatives against finite
differences, the double-backward error of prod with repeated zeros, and the same results
compiled on every backend. Ports of the seed tests for both ops."""
import itertools

import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck

BACKENDS = ("eager", "aot_eager", "llvm")
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_COMBINE = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "mean": lambda a, b: a + b,
            "amax": max, "amin": min}


def reference_scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """Element by element, as the documentation defines it."""
    self, index, src = np.asarray(self), np.asarray(index), np.asarray(src)
    out = self.copy()
    gathered = {}
    for pos in itertools.product(*(range(s) for s in index.shape)):
        target = list(pos)
        target[dim] = int(index[pos])
        gathered.setdefault(tuple(target), []).append(src[pos])
    for target, values in gathered.items():
        items = ([self[target]] if include_self else []) + values
        acc = items[0]
        for v in items[1:]:
            acc = _COMBINE[reduce](acc, v)
        if reduce == "mean":
            acc = acc // len(items) if self.dtype.kind in "iu" else acc / len(items)
        out[target] = acc
    return out


def reference_index_reduce(self, dim, index, source, reduce, include_self=True):
    """index_reduce is scatter_reduce with the vector index repeated along the other dims."""
    source = np.asarray(source)
    shape = [1] * source.ndim
    shape[dim] = -1
    full = np.broadcast_to(np.asarray(index).reshape(shape), source.shape)
    return reference_scatter_reduce(self, dim, full, source, reduce, include_self)


def _sample(seed=0):
    rng = np.random.default_rng(seed)
    self = rng.standard_normal((3, 4))
    index = np.array([[0, 1, 0, 2], [2, 2, 0, 1]])         # repeats along dim 0
    src = rng.standard_normal((2, 4))
    return self, index, src


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_reference(reduce, include_self):
    self, index, src = _sample()
    got = dynjit.scatter_reduce(dynjit.tensor(self), 0, dynjit.tensor(index), dynjit.tensor(src), reduce,
                                include_self=include_self)
    np.testing.assert_allclose(got.numpy(), reference_scatter_reduce(self, 0, index, src, reduce, include_self),
                               rtol=1e-12)
    # along dim 1, with a source larger than the index (only its leading corner is read)
    index1 = np.array([[3, 3], [0, 1], [1, 1]])
    src1 = np.arange(12.0).reshape(3, 4) - 5
    got = dynjit.tensor(self).scatter_reduce(1, dynjit.tensor(index1), dynjit.tensor(src1), reduce,
                                             include_self=include_self)
    np.testing.assert_allclose(got.numpy(), reference_scatter_reduce(self, 1, index1, src1, reduce, include_self),
                               rtol=1e-12)


@pytest.mark.parametrize("reduce", ("prod", "mean", "amax", "amin"))
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_reference(reduce, include_self):
    rng = np.random.default_rng(1)
    self, source = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    index = np.array([0, 2, 0, 3, 2])
    got = dynjit.tensor(self.T.copy()).index_reduce(0, dynjit.tensor(index), dynjit.tensor(source.T.copy()), reduce,
                                                    include_self=include_self)
    np.testing.assert_allclose(got.numpy(), reference_index_reduce(self.T, 0, index, source.T, reduce, include_self),
                               rtol=1e-12)
    got = dynjit.index_reduce(dynjit.tensor(self), -1, dynjit.tensor(index), dynjit.tensor(source), reduce,
                              include_self=include_self)
    np.testing.assert_allclose(got.numpy(), reference_index_reduce(self, 1, index, source, reduce, include_self),
                               rtol=1e-12)


def test_integer_mean_rounds_down_and_integers_keep_their_dtype():
    x = dynjit.tensor([-6, 7, 9])
    idx, src = dynjit.tensor([0, 0, 2]), dynjit.tensor([2, 3, 4])
    assert x.scatter_reduce(0, idx, src, "mean").tolist() == [-1, 7, 6]          # floor(-1 / 3)
    assert x.scatter_reduce(0, idx, src, "mean", include_self=False).tolist() == [2, 7, 4]
    assert x.index_reduce(0, idx, src, "mean").tolist() == [-1, 7, 6]
    assert x.scatter_reduce(0, idx, src, "amax").dtype is dynjit.int64
    small = dynjit.tensor([1, 2], dtype=dynjit.int8)
    got = small.scatter_reduce(0, dynjit.tensor([0, 0]), dynjit.tensor([100, 100], dtype=dynjit.int8), "sum")
    assert got.tolist() == [-55, 2] and got.dtype is dynjit.int8                  # wraps like int8 does
    # amin/amax without self start from the dtype's extremes, not from zero
    assert x.scatter_reduce(0, idx, src, "amin", include_self=False).tolist() == [2, 7, 4]


def test_a_zero_dim_self_and_nan():
    assert dynjit.tensor(3.0).scatter_reduce(0, dynjit.tensor([0, 0]), dynjit.tensor([2.0, 5.0]), "amax").item() == 5.0
    assert dynjit.tensor(3.0).index_reduce(0, dynjit.tensor([0, 0]), dynjit.tensor([2.0, 5.0]), "amax").item() == 5.0
    got = dynjit.tensor([1.0, 2.0]).scatter_reduce(0, dynjit.tensor([0, 0]), dynjit.tensor([float("nan"), 2.0]), "amax")
    assert np.isnan(got[0].item()) and got[1].item() == 2.0


def test_in_place_forms_write_into_self_and_bump_the_version():
    x = dynjit.tensor([1.0, 2.0])
    v = x._version
    assert x.scatter_reduce_(0, dynjit.tensor([0, 0]), dynjit.tensor([1.0, 2.0]), "sum") is x
    assert x.tolist() == [4.0, 2.0] and x._version == v + 1
    y = dynjit.tensor([1.0, 2.0])
    assert y.index_reduce_(0, dynjit.tensor([0, 0]), dynjit.tensor([1.0, 2.0]), "amax") is y
    assert y.tolist() == [2.0, 2.0]


ERRORS = [
    (lambda: dynjit.zeros(3, 4).scatter_reduce(1, dynjit.tensor([[0, 1]]), dynjit.ones(1, 2), "foo"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: dynjit.zeros(3, 4).scatter_reduce(1, dynjit.tensor([[0, 1]]), dynjit.ones(1, 2).double(), "sum"),
     RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: dynjit.zeros(3, 4).scatter_reduce(1, dynjit.tensor([[0, 1], [2, 0]]), dynjit.ones(1, 1), "sum"),
     RuntimeError, r"Expected index \[2, 2\] to be no larger than self \[3, 4\] apart from dimension 1 "
                   r"and to be no larger size than src \[1, 1\]"),
    (lambda: dynjit.zeros(3, 4).scatter_reduce(1, dynjit.tensor([0, 1]), dynjit.ones(2, 2), "sum"),
     RuntimeError, "Index tensor must have the same number of dimensions as self tensor"),
    (lambda: dynjit.zeros(3, 4).scatter_reduce(1, dynjit.tensor([[0, 5]]), dynjit.ones(2, 2), "sum"),
     IndexError, "out of bounds"),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([0, 0, 2]), dynjit.ones(3), "sum"),
     RuntimeError, r"index_reduce\(\): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([0, 0]), dynjit.ones(3), "prod"),
     RuntimeError, r"index_reduce_\(\): Number of indices \(2\) should be equal to source.size\(dim\): \(3\), "
                   "for dim: 0"),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([[0, 0, 1]]), dynjit.ones(3), "prod"),
     IndexError, r"index_reduce_\(\): Index is supposed to be a vector, but got dim: 2 with type: Long and "
                 r"size: \[1, 3\]"),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([0.0, 0, 1]), dynjit.ones(3), "prod"),
     RuntimeError, r"index_reduce_\(\): Expected dtype int32/int64 for index but got: Float"),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([0, 0, 1]), dynjit.ones(3).double(), "prod"),
     RuntimeError, r"index_reduce_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda: dynjit.ones(3).index_reduce(0, dynjit.tensor([0, 0, 7]), dynjit.ones(3), "prod"),
     IndexError, "index out of range in self"),
    (lambda: dynjit.ones(2, 3).index_reduce(1, dynjit.tensor([0, 0]), dynjit.ones(3, 2), "mean"),
     RuntimeError, r"source tensor shape must match self tensor shape, excluding the specified dimension. "
                   r"Got self.shape = \[2, 3\] source.shape = \[3, 2\]"),
]


@pytest.mark.parametrize("fn,exc,message", ERRORS, ids=range(len(ERRORS)))
def test_errors_are_pytorchs(fn, exc, message):
    with pytest.raises(exc, match=message):
        fn()


def _grad_inputs(reduce):
    rng = np.random.default_rng(7)
    self = rng.standard_normal((3, 4))
    src = rng.standard_normal((2, 4))
    if reduce in ("amax", "amin"):     # distinct values, so finite differences see no ties
        self = rng.permutation(12).reshape(3, 4) * 0.31 + 0.1
        src = rng.permutation(8).reshape(2, 4) * 0.29 + 0.05
    return (dynjit.tensor(self, requires_grad=True), dynjit.tensor(src, requires_grad=True))


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck_and_gradgradcheck(reduce, include_self):
    self, src = _grad_inputs(reduce)
    index = dynjit.tensor([[0, 1, 0, 2], [2, 2, 0, 1]])

    def fn(a, b):
        return dynjit.scatter_reduce(a, 0, index, b, reduce, include_self=include_self)

    assert gradcheck(fn, (self, src))
    assert gradgradcheck(fn, (self, src))


@pytest.mark.parametrize("reduce", ("prod", "mean", "amax", "amin"))
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_gradcheck_and_gradgradcheck(reduce, include_self):
    self, _ = _grad_inputs(reduce)
    source = dynjit.tensor(np.random.default_rng(3).permutation(9).reshape(3, 3) * 0.4 + 0.3, requires_grad=True)
    index = dynjit.tensor([3, 0, 3])

    def fn(a, b):
        return a.index_reduce(1, index, b, reduce, include_self=include_self)

    assert gradcheck(fn, (self, source))
    assert gradgradcheck(fn, (self, source))


def test_prod_gradient_with_zeros_in_self_and_src():
    # one zero at a position: its gradient is the product of the others; two zeros: zero
    self = dynjit.tensor([0.0, 2.0, 3.0], dtype=dynjit.float64, requires_grad=True)
    src = dynjit.tensor([0.0, 5.0, 0.0, 0.0, 4.0], dtype=dynjit.float64, requires_grad=True)
    index = dynjit.tensor([1, 1, 2, 2, 0])
    out = self.scatter_reduce(0, index, src, "prod")
    out.backward(dynjit.ones(3, dtype=dynjit.float64))
    assert out.tolist() == [0.0, 0.0, 0.0]
    assert self.grad.tolist() == [4.0, 0.0, 0.0]
    assert src.grad.tolist() == [10.0, 0.0, 0.0, 0.0, 0.0]
    assert gradcheck(lambda a, b: a.scatter_reduce(0, index, b, "prod"), (self, src))


@pytest.mark.parametrize("reduce", ("amax", "amin"))
def test_ties_share_the_gradient_evenly(reduce):
    self = dynjit.tensor([1.0, 0.0], dtype=dynjit.float64, requires_grad=True)
    src = dynjit.tensor([1.0, 1.0, 0.0], dtype=dynjit.float64, requires_grad=True)
    self.scatter_reduce(0, dynjit.tensor([0, 0, 1]), src, reduce).sum().backward()
    assert self.grad.tolist() == [1 / 3, 0.5]
    assert src.grad.tolist() == [1 / 3, 1 / 3, 0.5]


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_scatter_index_reduce_amin_amax_backprops_to_all_values
def test_scatter_index_reduce_amin_amax_backprops_to_all_values():
    for fn, reduction in itertools.product((dynjit.scatter_reduce, dynjit.index_reduce), ("amin", "amax")):
        input = dynjit.randn((2, 3), dtype=dynjit.float64, requires_grad=True)
        src = input.clone().detach_().requires_grad_(True)     # ties between input and src everywhere
        idx = dynjit.arange(2).to(dtype=dynjit.long)
        if fn is dynjit.scatter_reduce:
            idx = idx.unsqueeze(-1).expand((2, 3))
        assert gradcheck(fn, (input, 0, idx, src, reduction), check_batched_grad=False)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_scatter_index_reduce_prod_gradgrad_error
def test_scatter_index_reduce_prod_gradgrad_error():
    input = dynjit.tensor([1.0], dtype=dynjit.float64, requires_grad=True)
    src = dynjit.tensor([0.0, 0.0], dtype=dynjit.float64, requires_grad=True)
    idx = dynjit.tensor([0, 0], dtype=dynjit.long)
    for fn in (dynjit.scatter_reduce, dynjit.index_reduce):
        assert gradcheck(fn, (input, 0, idx, src, "prod"), check_batched_grad=False)
        with pytest.raises(RuntimeError, match="Double backward is unsupported for"):
            gradgradcheck(fn, (input, 0, idx, src, "prod"))


def _step(self, src, index, source):
    a = self.scatter_reduce(1, index, src, "amax", include_self=False)
    b = self.index_reduce(0, dynjit.tensor([2, 0]), source, "mean")
    return (a * b).sum() + self.scatter_reduce(0, index[:1] % 3, src[:1], "prod").sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_matches_eager(backend):
    rng = np.random.default_rng(11)
    data = [rng.standard_normal((3, 4)), rng.standard_normal((3, 2)), rng.standard_normal((2, 4))]
    index = dynjit.tensor([[0, 3], [1, 1], [2, 0]])

    def run(fn):
        self, src, source = (dynjit.tensor(d, requires_grad=True) for d in data)
        out = fn(self, src, index, source)
        out.backward()
        return out, self.grad, src.grad, source.grad

    expected = run(_step)
    got = run(dynjit.compile(_step, backend=backend))
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-6)
