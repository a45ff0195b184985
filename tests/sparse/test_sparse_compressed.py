"""The 2-D compressed sparse layouts (CSR, CSC, BSR, BSC) against a numpy reference:
conversions from and to dense and COO (specified elements kept, zeros included),
PyTorch's refusals, the parts, sums, gradients through conversions, and PyTorch's error
for ops without a compressed kernel."""
import numpy as np
import pytest

import dynjit as torch
from dynjit.autograd import gradcheck

RNG = np.random.default_rng(181818)


def reference(a, layout, blocksize=(1, 1)):
    """(compressed indices, plain indices, values) of `a` in `layout`, written out with loops."""
    bh, bw = blocksize
    nbr, nbc = a.shape[0] // bh, a.shape[1] // bw
    row_major = layout in (torch.sparse_csr, torch.sparse_bsr)
    outer, inner = (nbr, nbc) if row_major else (nbc, nbr)
    ci, pi, vals = [0], [], []
    for o in range(outer):
        for i in range(inner):
            r, c = (o, i) if row_major else (i, o)
            block = a[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw]
            if np.any(block != 0):
                pi.append(i)
                vals.append(block if layout in (torch.sparse_bsr, torch.sparse_bsc) else block[0, 0])
        ci.append(len(pi))
    return np.array(ci), np.array(pi), np.array(vals)


CASES = [(torch.sparse_csr, None, (1, 1)), (torch.sparse_csc, None, (1, 1)),
         (torch.sparse_bsr, (2, 3), (2, 3)), (torch.sparse_bsc, (2, 3), (2, 3))]


def sample(shape=(4, 6)):
    a = RNG.standard_normal(shape)
    a[RNG.random(shape) < 0.6] = 0
    a[0:2, 0:3] = 0          # one whole block empty
    return a


@pytest.mark.parametrize("layout,blocksize,block", CASES)
def test_from_dense_matches_the_reference_and_converts_back(layout, blocksize, block):
    a = sample()
    t = torch.tensor(a).to_sparse(layout=layout, blocksize=blocksize)
    assert t.layout is layout and t.shape == (4, 6) and not t.is_sparse
    ci, pi, vals = reference(a, layout, block)
    compressed, plain = (("crow_indices", "col_indices") if layout in (torch.sparse_csr, torch.sparse_bsr)
                         else ("ccol_indices", "row_indices"))
    np.testing.assert_array_equal(getattr(t, compressed)().numpy(), ci)
    np.testing.assert_array_equal(getattr(t, plain)().numpy(), pi)
    np.testing.assert_array_equal(t.values().numpy(), vals.reshape(t.values().shape))
    assert t._nnz() == len(pi)
    np.testing.assert_array_equal(t.to_dense().numpy(), a)
    np.testing.assert_array_equal(t.to_sparse().to_dense().numpy(), a)
    np.testing.assert_allclose(torch.sum(t).item(), a.sum())


def test_specified_zeros_survive_conversion():
    s = torch.sparse_coo_tensor([[0, 1], [1, 0]], [0.0, 2.0], (2, 2))
    c = s.to_sparse_csr()
    assert c._nnz() == 2 and c.to_sparse()._nnz() == 2
    np.testing.assert_array_equal(c.col_indices().numpy(), [1, 0])


@pytest.mark.parametrize("source,target", [("to_sparse_bsr", "to_sparse_csr"), ("to_sparse_bsc", "to_sparse_csc"),
                                           ("to_sparse_bsr", "to_sparse_csc")])
def test_block_layouts_do_not_convert_to_csr_or_csc(source, target):
    b = getattr(torch.rand(4, 4), source)(2)
    word = {"to_sparse_bsr": "SparseBsr", "to_sparse_bsc": "SparseBsc"}[source]
    with pytest.raises(RuntimeError, match=f"sparse_compressed_{target}: expected SparseCsr or SparseCsc "
                                           f"layout but got {word}"):
        getattr(b, target)()


def test_refusals():
    with pytest.raises(RuntimeError, match=r"must be divisible by given blocksize \(2,2\)"):
        torch.rand(3, 3).to_sparse_bsr(2)
    with pytest.raises(RuntimeError, match="2-D"):
        torch.rand(2, 3, 3).to_sparse_csr()
    c = torch.rand(2, 2).to_sparse_csc()
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed tensor layout but got SparseCsc"):
        c.crow_indices()
    with pytest.raises(RuntimeError, match="coalesce expected sparse coordinate tensor layout but got SparseCsc"):
        c.coalesce()
    with pytest.raises(TypeError, match="can't convert sparse_csc layout tensor to numpy"):
        c.numpy()


@pytest.mark.parametrize("name,call", [("add", lambda c: c + c), ("exp", lambda c: torch.exp(c)),
                                       ("mm", lambda c: torch.mm(c, torch.ones(2, 2))), ("mul", lambda c: c * 2),
                                       ("_values", lambda c: c._values())])
def test_ops_without_a_compressed_kernel_raise_pytorchs_error(name, call):
    c = torch.rand(2, 2).to_sparse_csr()
    with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}' with arguments from the 'SparseCsrCPU' backend"):
        call(c)


@pytest.mark.parametrize("layout,blocksize,block", CASES)
def test_gradients_through_conversions(layout, blocksize, block):
    a = sample()
    x = torch.tensor(a).requires_grad_()
    # dense -> compressed -> dense: the gradient at the specified blocks (masked to_dense)
    g = RNG.standard_normal(a.shape)
    y = x.to_sparse(layout=layout, blocksize=blocksize).to_dense()
    gx, = torch.autograd.grad(y, x, torch.tensor(g))
    spec = torch.tensor(a).to_sparse(layout=layout, blocksize=blocksize).to_dense(masked_grad=False)
    mask = torch.tensor(a).to_sparse(layout=layout, blocksize=blocksize)._data.pattern()
    np.testing.assert_allclose(gx.numpy(), np.where(mask, g, 0))
    assert spec.layout is torch.strided
    # a compressed leaf gets a gradient of its own layout
    c = torch.tensor(a).to_sparse(layout=layout, blocksize=blocksize).requires_grad_()
    gc, = torch.autograd.grad(c.to_sparse().to_dense().sum(), c)
    assert gc.layout is layout
    np.testing.assert_array_equal(gc.to_dense().numpy(), mask.astype(float))
    assert gradcheck(lambda c: c.to_dense() * 3, (c,), masked=True)

