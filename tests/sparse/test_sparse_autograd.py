"""Autograd through sparse tensors: finite-difference gradchecks of every sparse op (dense
inputs through sparse intermediates, and sparse inputs with masked semantics), the layouts
of the gradients PyTorch gives, accumulation of sparse gradients into .grad, and
embedding(sparse=True) against the dense embedding's gradient."""
import numpy as np
import pytest

import dynjit as torch
from dynjit.autograd import Function, gradcheck

RNG = np.random.default_rng(1818)


def rand(*shape):
    return torch.tensor(RNG.standard_normal(shape))


def mask(*shape, density=0.5):
    m = (RNG.random(shape) < density).astype(np.float64)
    m.reshape(-1)[0] = 1.0
    return torch.tensor(m).to_sparse()


# -- gradchecks: dense inputs through sparse intermediates ------------------------------------

def test_gradcheck_constructor_with_duplicate_indices_and_its_numpy_gradient():
    i = torch.tensor([[0, 2, 0, 1], [1, 0, 1, 1]])
    v = rand(4, 3).requires_grad_()
    w = rand(3, 2, 3)

    def fn(v):
        return (torch.sparse_coo_tensor(i, v, (3, 2, 3)).to_dense() * w).sum(0)

    assert gradcheck(fn, (v,))
    out = torch.sparse_coo_tensor(i, v, (3, 2, 3)).to_dense()
    g = RNG.standard_normal((3, 2, 3))
    out.backward(torch.tensor(g))
    # each value gets the gradient at its position (duplicates both get it)
    want = np.stack([g[tuple(i.numpy()[:, k])] for k in range(4)])
    np.testing.assert_allclose(v.grad.numpy(), want)


@pytest.mark.parametrize("name,fn,shapes", [
    ("to_sparse", lambda x: (x.to_sparse() * 3.0).to_dense(), [(3, 4)]),
    ("to_sparse hybrid", lambda x: x.to_sparse(1).to_dense() * 2, [(3, 2)]),
    ("sparse_mask", lambda x: x.sparse_mask(MASK34).to_dense(), [(3, 4)]),
    ("sparse + sparse", lambda x, y: (x.sparse_mask(MASK34) + y.to_sparse()).to_dense(), [(3, 4), (3, 4)]),
    ("sparse - sparse", lambda x, y: torch.sub(x.sparse_mask(MASK34), y.to_sparse(), alpha=2).to_dense(),
     [(3, 4), (3, 4)]),
    ("dense + sparse", lambda x, y: x + y.sparse_mask(MASK34), [(3, 4), (3, 4)]),
    ("sparse * dense", lambda x, y: (x.sparse_mask(MASK34) * y).to_dense(), [(3, 4), (3, 4)]),
    ("sparse * sparse", lambda x, y: (x.sparse_mask(MASK34) * y.to_sparse()).to_dense(), [(3, 4), (3, 4)]),
    ("sparse / number, neg", lambda x: (-(x.sparse_mask(MASK34) / 3)).to_dense(), [(3, 4)]),
    ("transpose", lambda x: x.sparse_mask(MASK34).t().to_dense(), [(3, 4)]),
    ("clone", lambda x: x.sparse_mask(MASK34).clone().to_dense(), [(3, 4)]),
    ("sparse @ dense", lambda x, y: torch.mm(x.sparse_mask(MASK34), y), [(3, 4), (4, 2)]),
    ("dense @ sparse", lambda x, y: torch.mm(y, x.sparse_mask(MASK34)), [(3, 4), (2, 3)]),
    ("sparse @ sparse", lambda x, y: torch.mm(x.sparse_mask(MASK34), y.to_sparse()).to_dense(),
     [(3, 4), (4, 2)]),
    ("sum", lambda x: torch.sum(x.sparse_mask(MASK34)), [(3, 4)]),
    ("sparse.sum over a dim", lambda x: torch.sparse.sum(x.sparse_mask(MASK34), 1).to_dense(), [(3, 4)]),
    ("values", lambda x: x.sparse_mask(MASK34).values() * 2, [(3, 4)]),
    ("coalesce", lambda v: torch.sparse_coo_tensor([[0, 1, 0]], v, (2,)).coalesce().values(), [(3,)]),
    ("to complex", lambda x: torch.sparse_coo_tensor([[0, 1]], x, (3,), dtype=torch.cdouble).to_dense(), [(2,)]),
])
def test_gradcheck_through_sparse_ops(name, fn, shapes):
    inputs = [rand(*s).requires_grad_() for s in shapes]
    assert gradcheck(fn, inputs)


MASK34 = mask(3, 4)


# -- gradchecks: sparse inputs ---------------------------------------------------------------------

# Whether gradcheck passes, per op and semantics, is PyTorch 2.13's answer for the same call:
# ops whose gradient is masked to the input's pattern (to_dense, sparse.sum over a dim, mul)
# pass under masked semantics; ops with a dense gradient (mm, sum), and to_dense with
# masked_grad=False, pass only under non-masked semantics (finite differences of every element).
@pytest.mark.parametrize("name,fn,passes_masked,passes_unmasked", [
    ("to_dense", lambda s: s.to_dense() * 2, True, False),
    ("to_dense(masked_grad=False)", lambda s: s.to_dense(masked_grad=False) * 2, False, True),
    ("mm", lambda s: torch.mm(s, torch.ones(4, 2, dtype=torch.double)), False, True),
    ("sum", lambda s: torch.sum(s) * 1, False, True),
    ("sparse.sum", lambda s: torch.sparse.sum(s, 0).to_dense(), True, False),
    ("mul", lambda s: (s * s).to_dense(), True, True),
])
def test_gradcheck_with_a_sparse_input_missing_entries(name, fn, passes_masked, passes_unmasked):
    a = RNG.standard_normal((3, 4))
    a[0, 1] = a[2, 2] = 0.0
    s = torch.tensor(a).to_sparse().requires_grad_()
    assert gradcheck(fn, (s,), masked=True, raise_exception=False) is passes_masked
    assert gradcheck(fn, (s,), masked=False, raise_exception=False) is passes_unmasked


@pytest.mark.parametrize("masked", [True, False])
def test_gradcheck_with_every_entry_of_a_sparse_input_specified(masked):
    s = rand(3, 4).to_sparse().requires_grad_()
    for fn in (lambda s: s.to_dense() * 2, lambda s: torch.mm(s, torch.ones(4, 2, dtype=torch.double)),
               lambda s: torch.sum(s) * 1, lambda s: torch.sparse.sum(s, 1).to_dense()):
        assert gradcheck(fn, (s,), masked=masked)


# -- gradient layouts (as PyTorch gives them) ------------------------------------------------------

def test_gradient_layouts():
    s = torch.tensor([[0., 2.], [3., 0.]]).to_sparse().requires_grad_()
    g, = torch.autograd.grad(s.to_dense().sum(), s)
    assert g.is_sparse and g._nnz() == 2           # to_dense: masked to the input's pattern
    g, = torch.autograd.grad(torch.sum(s), s)
    assert g.layout is torch.strided               # sum: the dense expanded gradient
    np.testing.assert_array_equal(g.numpy(), np.ones((2, 2)))
    d = torch.ones(2, 2, requires_grad=True)
    gs, gd = torch.autograd.grad(torch.mm(s, d).sum(), (s, d))
    assert gs.layout is torch.strided and gd.layout is torch.strided
    x = torch.ones(2, 2, requires_grad=True)
    g, = torch.autograd.grad(x.sparse_mask(s.detach()).to_dense().sum(), x)
    assert g.layout is torch.strided
    np.testing.assert_array_equal(g.numpy(), [[0., 1.], [1., 0.]])


# -- accumulation into .grad -----------------------------------------------------------------------

class GivenGrad(Function):
    """Identity whose backward returns a fixed gradient for x."""

    @staticmethod
    def forward(ctx, x, grad):
        ctx.grad = grad
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return ctx.grad, None


def _sp(indices, values, size=(4,)):
    return torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size)


def test_sparse_grads_accumulate_sparse_and_uncoalesced():
    x = torch.zeros(4, dtype=torch.double, requires_grad=True)
    GivenGrad.apply(x, _sp([[1]], [2.])).sum().backward()
    assert x.grad.is_sparse and x.grad._nnz() == 1
    GivenGrad.apply(x, _sp([[1, 3]], [1., 5.])).sum().backward()
    assert x.grad.is_sparse and x.grad._nnz() == 3
    np.testing.assert_array_equal(x.grad.to_dense().numpy(), [0., 3., 0., 5.])
    # a dense gradient on top of a sparse .grad makes it dense
    GivenGrad.apply(x, torch.ones(4, dtype=torch.double)).sum().backward()
    assert x.grad.layout is torch.strided
    np.testing.assert_array_equal(x.grad.numpy(), [1., 4., 1., 6.])


def test_a_sparse_grad_is_added_into_a_dense_grad_in_place():
    x = torch.zeros(4, dtype=torch.double, requires_grad=True)
    x.sum().backward()
    before = x.grad
    version = before._version
    GivenGrad.apply(x, _sp([[0, 0, 2]], [1., 2., 3.])).sum().backward()
    assert x.grad is before and x.grad._version == version + 1
    np.testing.assert_array_equal(x.grad.numpy(), [4., 1., 4., 1.])


class SameGradTwice(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def test_a_sparse_grad_given_to_two_leaves_is_copied_for_one_of_them():
    a = torch.zeros(4, 1, dtype=torch.double, requires_grad=True)
    b = torch.zeros(4, 1, dtype=torch.double, requires_grad=True)
    out = SameGradTwice.apply(a, b)
    # embedding(sparse=True) turns the gradient of its rows into a fresh sparse tensor
    rows = torch.nn.functional.embedding(torch.tensor([1, 3]), out, sparse=True)
    rows.sum().backward()
    pa, pb = a.grad._values().data_ptr(), b.grad._values().data_ptr()
    assert pa != pb
    np.testing.assert_array_equal(a.grad.to_dense().numpy(), [[0.], [1.], [0.], [1.]])
    np.testing.assert_array_equal(b.grad.to_dense().numpy(), [[0.], [1.], [0.], [1.]])


def test_create_graph_keeps_a_sparse_grad_differentiable():
    w = torch.randn(5, 2, dtype=torch.double, requires_grad=True)
    out = torch.nn.functional.embedding(torch.tensor([0, 4, 4]), w, sparse=True)
    (out ** 2).sum().backward(create_graph=True)
    assert w.grad.is_sparse and w.grad.requires_grad
    # d/dw of sum(grad values) = d/dw sum(2 * w[idx]) = 2 per use
    g, = torch.autograd.grad(w.grad.to_dense().sum(), w)
    assert g.is_sparse
    np.testing.assert_allclose(g.to_dense().numpy(), np.array([[2, 2], [0, 0], [0, 0], [0, 0], [4, 4]], float))


# -- embedding(sparse=True) ------------------------------------------------------------------------

@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_sparse_embedding_gradient_equals_the_dense_one(padding_idx):
    idx = torch.tensor([[1, 2, 4], [4, 3, 9]])
    g = rand(2, 3, 3).float()
    sparse = torch.nn.Embedding(10, 3, sparse=True, padding_idx=padding_idx)
    dense = torch.nn.Embedding(10, 3, padding_idx=padding_idx)
    with torch.no_grad():
        dense.weight.copy_(sparse.weight)
    (sparse(idx) * g).sum().backward()
    (dense(idx) * g).sum().backward()
    gs = sparse.weight.grad
    assert gs.is_sparse and not gs.is_coalesced()
    pad = None if padding_idx is None else padding_idx % 10
    kept = [k for k in idx.reshape(-1).tolist() if k != pad]
    assert gs._nnz() == len(kept) and gs._indices().reshape(-1).tolist() == kept
    np.testing.assert_allclose(gs.to_dense().numpy(), dense.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(sparse(idx).detach().numpy(), dense(idx).detach().numpy())


def test_sgd_steps_with_a_sparse_gradient_like_with_the_dense_one():
    idx = torch.tensor([0, 3, 3, 7])
    sparse = torch.nn.Embedding(8, 2, sparse=True)
    dense = torch.nn.Embedding(8, 2)
    with torch.no_grad():
        dense.weight.copy_(sparse.weight)
    for model in (sparse, dense):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(2):
            opt.zero_grad()
            (model(idx) ** 2).sum().backward()
            opt.step()
    np.testing.assert_allclose(sparse.weight.detach().numpy(), dense.weight.detach().numpy(), rtol=1e-6)


def test_an_optimizer_without_sparse_support_raises_instead_of_computing():
    emb = torch.nn.Embedding(4, 2, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    before = emb.weight.detach().clone()
    with pytest.raises(NotImplementedError, match="with arguments from the 'SparseCPU' backend"):
        torch.optim.Adam(emb.parameters()).step()
    assert torch.equal(emb.weight.detach(), before)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_sparse_embedding_bag_gradient_equals_the_dense_one(mode):
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 4, 6])
    sparse = torch.nn.EmbeddingBag(10, 3, mode=mode, sparse=True)
    dense = torch.nn.EmbeddingBag(10, 3, mode=mode)
    with torch.no_grad():
        dense.weight.copy_(sparse.weight)
    g = rand(3, 3).float()
    (sparse(idx, offsets) * g).sum().backward()
    (dense(idx, offsets) * g).sum().backward()
    assert sparse.weight.grad.is_sparse
    np.testing.assert_allclose(sparse.weight.grad.to_dense().numpy(), dense.weight.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["abs", "sin", "tanh", "sqrt", "square", "expm1", "log1p", "relu", "atan"])
def test_gradcheck_unary_ops_on_sparse(name):
    a = np.abs(RNG.standard_normal((3, 4))) + 0.1
    a[0, 1] = a[2, 2] = 0.0
    if name in ("abs", "sin", "tanh", "relu", "atan", "square", "expm1"):
        a[1, 1] = -a[1, 1]
    s = torch.tensor(a).to_sparse().requires_grad_()
    fn = getattr(torch, name)
    assert gradcheck(lambda s: fn(s).to_dense(), (s,), masked=True)
    # dense inputs through a sparse intermediate: the gradient at the masked entries
    x = rand(3, 4).abs().add(0.1).requires_grad_()
    assert gradcheck(lambda x: fn(x.sparse_mask(MASK34)).to_dense(), (x,))


@pytest.mark.parametrize("options", [dict(momentum=0.9), dict(momentum=0.9, dampening=0.1),
                                     dict(momentum=0.5, nesterov=True), dict(maximize=True)])
def test_sgd_with_momentum_steps_with_a_sparse_gradient_like_with_the_dense_one(options):
    idx = torch.tensor([0, 3, 3, 7])
    sparse = torch.nn.Embedding(8, 2, sparse=True)
    dense = torch.nn.Embedding(8, 2)
    with torch.no_grad():
        dense.weight.copy_(sparse.weight)
    for model in (sparse, dense):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, **options)
        for _ in range(3):
            opt.zero_grad()
            (model(idx) ** 2).sum().backward()
            opt.step()
    assert sparse.weight.grad.is_sparse
    np.testing.assert_allclose(sparse.weight.detach().numpy(), dense.weight.detach().numpy(), rtol=1e-5)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_with_sparse_grad_gives_pytorchs_sparse_gradient(dim):
    x = rand(3, 4).requires_grad_()
    index = torch.tensor(RNG.integers(0, x.shape[dim], (3, 4)) if dim == 0 else RNG.integers(0, 4, (3, 4)))
    g = RNG.standard_normal((3, 4))
    torch.gather(x, dim, index, sparse_grad=True).backward(torch.tensor(g))
    assert x.grad.is_sparse and x.grad._nnz() == 12 and not x.grad.is_coalesced()
    want = np.zeros((3, 4))
    for pos in np.ndindex(3, 4):
        target = list(pos)
        target[dim % 2] = index.numpy()[pos]
        want[tuple(target)] += g[pos]
    np.testing.assert_allclose(x.grad.to_dense().numpy(), want)
    assert gradcheck(lambda x: x.gather(dim, index, sparse_grad=True), (x.detach().requires_grad_(),))


def test_gradcheck_permute():
    x = rand(3, 2, 4).requires_grad_()
    assert gradcheck(lambda x: x.to_sparse(2).permute(1, 0, 2).to_dense(), (x,))


@pytest.mark.parametrize("p", [1, 2, 3, float("inf")])
def test_norm_of_a_sparse_tensor_and_its_gradient(p):
    s = torch.sparse_coo_tensor([[0, 0, 2]], torch.tensor([1., -2., 3.], dtype=torch.double), (4,)).requires_grad_()
    np.testing.assert_allclose(torch.norm(s, p).item(), np.linalg.norm(s.detach().to_dense().numpy(), p))
    assert gradcheck(lambda s: s.norm(p), (s,), masked=True)


def test_clip_grad_norm_scales_a_sparse_gradient():
    emb = torch.nn.Embedding(5, 2, sparse=True)
    emb(torch.tensor([1, 2, 2])).sum().backward()
    before = emb.weight.grad.to_dense().clone()
    total = torch.nn.utils.clip_grad_norm_(emb.parameters(), 1.0)
    np.testing.assert_allclose(total.item(), np.linalg.norm(before.numpy()), rtol=1e-6)
    assert emb.weight.grad.is_sparse
    np.testing.assert_allclose(emb.weight.grad.to_dense().numpy(), before.numpy() / (total.item() + 1e-6), rtol=1e-5)


def test_anomaly_mode_reads_a_sparse_gradients_values():
    emb = torch.nn.Embedding(5, 2, sparse=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with torch.autograd.detect_anomaly():
            emb(torch.tensor([1, 2])).sum().backward()
            assert emb.weight.grad.is_sparse
            emb.weight.grad = None
            with pytest.raises(RuntimeError, match="returned nan values"):
                (emb(torch.tensor([1, 2])) * float("nan")).sum().backward()


@pytest.mark.parametrize("shape", [(), (4,), (3, 1), (3, 4)])
def test_mul_by_a_broadcast_dense_tensor_and_its_gradients(shape):
    a = np.abs(RNG.standard_normal((3, 4))) + 0.1
    a[0, 1] = a[2, 2] = 0.0
    d = rand(*shape)
    out = torch.tensor(a).to_sparse() * d
    assert out.is_sparse
    np.testing.assert_allclose(out.to_dense().numpy(), a * d.numpy())
    x = torch.tensor(a).requires_grad_()
    assert gradcheck(lambda x, d: (x.sparse_mask(MASK34) * d).to_dense(), (x, d.requires_grad_()))
