"""Sparse COO tensors against numpy: construction and its checks, conversion, coalescing,
the arithmetic and products routed to sparse kernels, sums, and PyTorch's error for ops
that have no sparse kernel."""
import numpy as np
import pytest

import dynjit as torch

RNG = np.random.default_rng(18)


def random_with_zeros(shape, density=0.5, dtype=np.float64):
    a = RNG.standard_normal(shape).astype(dtype)
    a[RNG.random(shape) > density] = 0
    return a


def np_coo(indices, values, shape):
    """numpy reference of a COO tensor's dense value: duplicates add up."""
    out = np.zeros(shape, dtype=np.asarray(values).dtype)
    idx = np.asarray(indices)
    for k in range(idx.shape[1]):
        out[tuple(idx[:, k])] += np.asarray(values)[k]
    return out


# -- construction ------------------------------------------------------------------------------

def test_sparse_coo_tensor_holds_its_parts_and_densifies_with_duplicates_summed():
    i = [[0, 1, 1, 0], [2, 0, 0, 2]]
    v = [1.0, 2.0, 3.0, 4.0]
    s = torch.sparse_coo_tensor(i, v, (2, 3))
    assert s.is_sparse and s.layout == torch.sparse_coo and s.layout is torch.sparse_coo
    assert s.shape == (2, 3) and s.dtype is torch.float32
    assert s._nnz() == 4 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert not s.is_coalesced()
    np.testing.assert_array_equal(s._indices().numpy(), np.array(i))
    np.testing.assert_array_equal(s._values().numpy(), np.array(v, np.float32))
    np.testing.assert_array_equal(s.to_dense().numpy(), np_coo(i, np.array(v, np.float32), (2, 3)))


def test_size_is_inferred_from_the_largest_index_and_the_values():
    s = torch.sparse_coo_tensor([[0, 4], [1, 2]], torch.ones(2, 3))
    assert s.shape == (5, 3, 3) and s.sparse_dim() == 2 and s.dense_dim() == 1


def test_dtype_converts_the_values_and_float_indices_become_long():
    s = torch.sparse_coo_tensor(torch.zeros([1, 1]), torch.ones([1]), dtype=torch.float64)
    assert s.dtype is torch.float64 and s._indices().dtype is torch.int64 and s.shape == (1,)


@pytest.mark.parametrize("indices,values,size,message", [
    ([[0, 3]], [1.0, 2.0], (3,), "size is inconsistent with indices: for dim 0, size is 3 but found index 3"),
    ([[0, -1]], [1.0, 2.0], (3,), "found negative index -1 for dim 0"),
    ([[0, 1]], [1.0], (3,), "indices and values must have same nnz"),
    ([0, 1], [1.0, 2.0], (3,), "indices must be sparse_dim x nnz"),
    ([[0, 1]], [1.0, 2.0], (3, 2), "number of dimensions must be sparse_dim"),
])
def test_inconsistent_parts_are_refused_like_pytorch(indices, values, size, message):
    with pytest.raises(RuntimeError, match=message):
        torch.sparse_coo_tensor(indices, values, size)


def test_sparse_coo_tensor_keeps_the_values_it_is_given():
    v = torch.rand(1, 3).expand(8, 3)
    s = torch.sparse_coo_tensor(torch.ones(1, 1, dtype=torch.long).expand(1, 8), v, (10, 3))
    assert s._values().data_ptr() == v.data_ptr()


def test_layouts_and_repr():
    assert repr(torch.sparse_coo) == "dynjit.sparse_coo" and repr(torch.strided) == "dynjit.strided"
    assert torch.ones(2).layout is torch.strided and torch.ones(2).layout == "strided"
    s = torch.sparse_coo_tensor([[0, 0, 1]], [1., 2., 3.], (3,))
    assert repr(s) == ("tensor(indices=tensor([[0, 0, 1]]),\n"
                       "       values=tensor([1., 2., 3.]),\n"
                       "       size=(3,), nnz=3, layout=dynjit.sparse_coo)")


def test_a_sparse_tensor_has_no_data_pointer_and_no_numpy_array():
    s = torch.ones(2).to_sparse()
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        s.data_ptr()
    with pytest.raises(TypeError, match="can't convert sparse_coo layout tensor to numpy. Use Tensor.to_dense"):
        s.numpy()


# -- conversion and coalescing ------------------------------------------------------------------

@pytest.mark.parametrize("shape,sparse_dim", [((4, 5), None), ((3, 4, 2), None), ((3, 4, 2), 1),
                                              ((3, 4, 2), 2), ((6,), None), ((0, 3), None)])
def test_to_sparse_keeps_the_nonzero_entries_and_to_dense_restores_them(shape, sparse_dim):
    a = random_with_zeros(shape)
    s = torch.tensor(a).to_sparse(sparse_dim) if sparse_dim is not None else torch.tensor(a).to_sparse()
    sd = len(shape) if sparse_dim is None else sparse_dim
    assert s.sparse_dim() == sd and s.dense_dim() == len(shape) - sd and s.is_coalesced()
    slices = (a != 0).reshape(shape[:sd] + (-1,)).any(-1) if sd < len(shape) else a != 0
    assert s._nnz() == int(slices.sum())
    np.testing.assert_array_equal(s._indices().numpy(), np.array(np.nonzero(slices)).reshape(sd, -1))
    np.testing.assert_array_equal(s.to_dense().numpy(), a)


def test_coalesce_sorts_and_sums_duplicates():
    i = np.array([[2, 0, 2, 1, 0], [1, 3, 1, 0, 3]])
    v = RNG.standard_normal((5, 2))
    s = torch.sparse_coo_tensor(i, v, (3, 4, 2))
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3 and c.coalesce() is c
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 2], [3, 0, 1]])
    np.testing.assert_allclose(c.values().numpy(), [v[1] + v[4], v[3], v[0] + v[2]])
    np.testing.assert_allclose(c.to_dense().numpy(), s.to_dense().numpy())


def test_indices_and_values_need_a_coalesced_tensor():
    s = torch.sparse_coo_tensor([[0, 0]], [1., 2.], (2,))
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor, please call .coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    with pytest.raises(RuntimeError, match="is_coalesced expected sparse coordinate tensor layout but got Strided"):
        torch.ones(2).is_coalesced()


def test_sparse_mask_reads_the_dense_values_at_the_mask_pattern():
    a = RNG.standard_normal((3, 4))
    m = random_with_zeros((3, 4))
    out = torch.tensor(a).sparse_mask(torch.tensor(m).to_sparse())
    assert out.is_sparse and out.is_coalesced()
    np.testing.assert_allclose(out.to_dense().numpy(), np.where(m != 0, a, 0))


# -- arithmetic ---------------------------------------------------------------------------------

def test_sparse_plus_sparse_is_sparse():
    a, b = random_with_zeros((3, 4)), random_with_zeros((3, 4))
    sa, sb = torch.tensor(a).to_sparse(), torch.tensor(b).to_sparse()
    r = sa + sb
    assert r.is_sparse and r.is_coalesced()      # two coalesced operands merge
    np.testing.assert_allclose(r.to_dense().numpy(), a + b)
    u = torch.sparse_coo_tensor([[0, 0]], [1., 2.], (2,))
    r2 = u + u
    assert r2.is_sparse and not r2.is_coalesced() and r2._nnz() == 4
    np.testing.assert_allclose(r2.to_dense().numpy(), [6., 0.])
    np.testing.assert_allclose((sa - sb).to_dense().numpy(), a - b)
    np.testing.assert_allclose(torch.add(sa, sb, alpha=3).to_dense().numpy(), a + 3 * b)


def test_dense_plus_sparse_is_dense_and_sparse_plus_dense_is_refused():
    a, b = RNG.standard_normal((3, 4)), random_with_zeros((3, 4))
    r = torch.tensor(a) + torch.tensor(b).to_sparse()
    assert r.layout is torch.strided
    np.testing.assert_allclose(r.numpy(), a + b)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\) instead."):
        torch.tensor(b).to_sparse() + torch.tensor(a)


def test_in_place_add_of_a_sparse_tensor_into_a_dense_one():
    a, b = RNG.standard_normal((3, 4)), random_with_zeros((3, 4))
    x = torch.tensor(a)
    x.add_(torch.tensor(b).to_sparse(), alpha=2)
    np.testing.assert_allclose(x.numpy(), a + 2 * b)


def test_mul_div_neg_keep_the_pattern():
    a, d = random_with_zeros((3, 4)), RNG.standard_normal((3, 4))
    s = torch.tensor(a).to_sparse()
    for r, want in ((s * 2.5, a * 2.5), (2.5 * s, a * 2.5), (s * torch.tensor(d), a * d),
                    (torch.tensor(d) * s, a * d), (s / 4, a / 4), (-s, -a), (s * s, a * a)):
        assert r.is_sparse
        np.testing.assert_allclose(r.to_dense().numpy(), want)
    assert (s * 2).dtype is torch.float64 and (torch.ones(2).to_sparse() * 2).dtype is torch.float32


def test_transpose_clone_and_dtype_conversion():
    a = random_with_zeros((3, 4))
    s = torch.tensor(a).to_sparse()
    np.testing.assert_array_equal(s.t().to_dense().numpy(), a.T)
    np.testing.assert_array_equal(s.transpose(0, 1).to_dense().numpy(), a.T)
    c = s.clone()
    assert c._values().data_ptr() != s._values().data_ptr()
    np.testing.assert_array_equal(c.to_dense().numpy(), a)
    f = s.float()
    assert f.is_sparse and f.dtype is torch.float32
    np.testing.assert_allclose(f.to_dense().numpy(), a.astype(np.float32))


@pytest.mark.parametrize("left,right", [(True, False), (False, True), (True, True)])
def test_mm_with_a_sparse_operand(left, right):
    a, b = random_with_zeros((3, 4)), random_with_zeros((4, 5))
    ta = torch.tensor(a).to_sparse() if left else torch.tensor(a)
    tb = torch.tensor(b).to_sparse() if right else torch.tensor(b)
    for r in (torch.mm(ta, tb), ta.mm(tb), torch.sparse.mm(ta, tb), torch.matmul(ta, tb)):
        assert r.is_sparse == (left and right)
        np.testing.assert_allclose(r.to_dense().numpy(), a @ b)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x4\)"):
        torch.mm(ta, torch.tensor(a))


def test_sum_over_everything_is_dense_and_over_some_dims_is_sparse():
    a = random_with_zeros((3, 4, 2))
    s = torch.tensor(a).to_sparse(2)
    total = torch.sum(s)
    assert total.layout is torch.strided and total.shape == ()
    np.testing.assert_allclose(total.item(), a.sum())
    for dim in (0, 1, 2, (0, 2), (1, 2)):
        r = torch.sparse.sum(s, dim)
        want = a.sum(axis=dim)
        assert r.is_sparse
        np.testing.assert_allclose(r.to_dense().numpy(), want)
    np.testing.assert_allclose(torch.sparse.sum(s).item(), a.sum())


# -- ops without a sparse kernel -------------------------------------------------------------------

@pytest.mark.parametrize("name,call", [
    ("exp", lambda s: torch.exp(s)),
    ("cumsum", lambda s: torch.cumsum(s, 0)),
    ("view", lambda s: s.view(-1)),
    ("exp_", lambda s: s.exp_()),
    ("softmax", lambda s: torch.softmax(s, 0)),
    ("max", lambda s: s.max()),
])
def test_ops_without_a_sparse_kernel_raise_pytorchs_error(name, call):
    s = torch.tensor([[1., 0.], [0., 2.]]).to_sparse()
    with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' backend"):
        call(s)


def test_dense_results_are_untouched_once_sparse_tensors_exist():
    torch.ones(2).to_sparse()       # the dispatcher now looks for sparse operands
    a, b = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    np.testing.assert_allclose((torch.tensor(a) + torch.tensor(b)).numpy(), a + b)
    np.testing.assert_allclose(torch.mm(torch.tensor(a), torch.tensor(b)).numpy(), a @ b)
    np.testing.assert_allclose(torch.tensor(a).sum().item(), a.sum())


UNARY = {"abs": np.abs, "sin": np.sin, "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh,
         "asin": np.arcsin, "atan": np.arctan, "sqrt": np.sqrt, "square": np.square, "expm1": np.expm1,
         "log1p": np.log1p, "relu": lambda a: np.maximum(a, 0), "sign": np.sign, "trunc": np.trunc,
         "floor": np.floor, "ceil": np.ceil, "frac": lambda a: a - np.trunc(a), "isnan": np.isnan}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_that_keep_zeros_act_on_the_values(name):
    a = random_with_zeros((4, 5)) * 0.9
    if name in ("sqrt", "log1p"):
        a = np.abs(a)
    u = torch.sparse_coo_tensor([[0, 0, 3], [1, 1, 4]], torch.tensor([0.25, 0.5, -0.75]), (4, 5))
    for x, dense in ((torch.tensor(a).to_sparse(), a), (u, u.to_dense().numpy())):
        r = getattr(torch, name)(x)
        assert r.is_sparse and r.is_coalesced()
        np.testing.assert_allclose(r.to_dense().numpy(), UNARY[name](dense), rtol=1e-6)
        assert r.dtype is getattr(torch, name)(torch.tensor(dense)).dtype


def test_unary_ops_follow_pytorchs_dtype_rule():
    s = torch.tensor([[4, 0], [0, 9]]).to_sparse()
    r = torch.sqrt(s)
    assert r.dtype is torch.float32
    np.testing.assert_allclose(r.to_dense().numpy(), [[2., 0.], [0., 3.]])


def test_in_place_ops_on_a_sparse_tensor():
    a = random_with_zeros((3, 4))
    s = torch.tensor(a).to_sparse()
    v = s._version
    assert s.mul_(3) is s and s.is_sparse and s._version == v + 1
    np.testing.assert_allclose(s.to_dense().numpy(), 3 * a)
    b = random_with_zeros((3, 4))
    s.add_(torch.tensor(b).to_sparse(), alpha=2)
    np.testing.assert_allclose(s.to_dense().numpy(), 3 * a + 2 * b)
    s.zero_()
    assert s._nnz() == 0 and not s.to_dense().numpy().any()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp_' with arguments from the 'SparseCPU'"):
        s.exp_()
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        torch.ones(2, 2, dtype=torch.long).to_sparse().mul_(1.5)
    leaf = torch.ones(2, 2).to_sparse().requires_grad_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        leaf.mul_(2)


def test_copy_pickle_save_and_load_keep_a_sparse_tensor():
    import copy
    import io
    import pickle
    s = torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], torch.randn(3, 2), (2, 3, 2)).requires_grad_()
    c = torch.randn(4, 4).to_sparse_bsr(2)
    for t in (s, c):
        for other in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
            assert other.layout is t.layout and other.requires_grad == t.requires_grad
            assert other._data is not t._data
            np.testing.assert_array_equal(other.detach().to_dense().numpy(), t.detach().to_dense().numpy())
    buf = io.BytesIO()
    torch.save({"s": s, "c": c, "dense": torch.ones(2)}, buf)
    buf.seek(0)
    out = torch.load(buf)
    assert out["s"].layout is torch.sparse_coo and out["s"].requires_grad and not out["s"].is_coalesced()
    np.testing.assert_array_equal(out["s"].detach().to_dense().numpy(), s.detach().to_dense().numpy())
    assert out["c"].layout is torch.sparse_bsr and out["c"].values().shape == (4, 2, 2)
    np.testing.assert_array_equal(out["c"].to_dense().numpy(), c.to_dense().numpy())
    assert torch.equal(out["dense"], torch.ones(2))


def test_numpy_views_and_comparisons_of_a_sparse_tensor_are_refused():
    s = torch.tensor([[1., 0.], [0., 2.]]).to_sparse()
    with pytest.raises(TypeError, match="can't convert sparse_coo layout tensor to numpy"):
        np.asarray(s)
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        s.tolist()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::equal' with arguments from the 'SparseCPU'"):
        torch.equal(s, s)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::eq' with arguments from the 'SparseCPU'"):
        torch.allclose(s, s)
    assert not s.is_contiguous()
    assert torch.equal(torch.ones(2), torch.ones(2)) and torch.allclose(torch.ones(2), torch.ones(2))


def test_permute_and_T_reorder_the_sparse_and_the_dense_dims():
    a = random_with_zeros((2, 3, 4))
    s = torch.tensor(a).to_sparse(2)
    np.testing.assert_array_equal(s.permute(1, 0, 2).to_dense().numpy(), a.transpose(1, 0, 2))
    h = torch.tensor(random_with_zeros((3, 2, 4, 5))).to_sparse(2)
    np.testing.assert_array_equal(h.permute(1, 0, 3, 2).to_dense().numpy(),
                                  h.to_dense().numpy().transpose(1, 0, 3, 2))
    np.testing.assert_array_equal(torch.tensor(a[0]).to_sparse().T.to_dense().numpy(), a[0].T)
    with pytest.raises(RuntimeError, match="transpositions between sparse and dense dimensions are not allowed"):
        s.permute(2, 0, 1)


def test_pytorchs_errors_for_mismatched_sparse_arithmetic():
    s = torch.ones(2, 2).to_sparse()
    with pytest.raises(RuntimeError, match=r"add: expected sizes of 'self' and 'other' to match, but \[2, 2\] != \[3, 3\]"):
        s.sub(torch.ones(3, 3).to_sparse())
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim dense tensor divisor "
                                           r"\(got shape \[2, 2\] for divisor\)"):
        s / s
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s - torch.ones(2, 2)
    assert (torch.ones(2, 2) - s).layout is torch.strided
