"""Ports of the PyTorch seed tests that need sparse COO tensors or sparse gradients
(docs/conformance.md rows of issue 18). Each keeps the seed's assertions; where the seed
compares a sparse tensor with assertEqual (which densifies both sides), the port compares
`.to_dense()` and checks the layout as well."""
import itertools

import numpy as np
import pytest

import dynjit as torch
from dynjit.autograd import Function, gradcheck


def gen_sparse_tensor(size, sparse_dim, nnz, is_uncoalesced, dtype):
    """PyTorch's TestCase.genSparseTensor: random indices within `size`, values in [-1, 1),
    and (uncoalesced) the first half of the entries repeated."""
    v = (torch.rand([nnz] + list(size[sparse_dim:]), dtype=torch.double) * 2 - 1).to(dtype)
    i = torch.rand(sparse_dim, nnz)
    i.mul_(torch.tensor(size[:sparse_dim]).unsqueeze(1).to(i))
    i = i.to(torch.long)
    if is_uncoalesced:
        i = torch.cat([i[:, :(nnz // 2)], i[:, :((nnz + 1) // 2)]], 1)
    x = torch.sparse_coo_tensor(i, v, torch.Size(size), dtype=dtype)
    if not is_uncoalesced:
        return x.coalesce()
    return x.detach().clone()._coalesced_(False)


def assert_same(a, b):
    """assertEqual as PyTorch's TestCase does it for a sparse operand: the dense values."""
    assert (a is None) == (b is None)
    if a is None:
        return
    np.testing.assert_allclose(a.to_dense().detach().numpy(), b.to_dense().detach().numpy(),
                               rtol=1.3e-6, atol=1e-5)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_mm_backward
def test_sparse_mm_backward():
    size = (3, 3)
    mm_test_cases = itertools.product(*(([False, True],) * 4))
    ran = 0
    for a_req_grad, a_is_sparse, b_req_grad, b_is_sparse in mm_test_cases:
        if not ((a_is_sparse or b_is_sparse) and (a_req_grad or b_req_grad)):
            continue
        a = torch.randn(size)
        if a_is_sparse:
            a = a.to_sparse().detach()
        b = torch.randn(size)
        if b_is_sparse:
            b = b.to_sparse().detach()
        a = a.requires_grad_(a_req_grad)
        b = b.requires_grad_(b_req_grad)

        r = a.mm(b)
        r.sum().backward()
        a_grad = None if a.grad is None else a.grad.clone().detach()
        b_grad = None if b.grad is None else b.grad.clone().detach()

        a = (a.to_dense() if a.is_sparse else a).clone().detach().requires_grad_(a_req_grad)
        b = (b.to_dense() if b.is_sparse else b).clone().detach().requires_grad_(b_req_grad)
        r = a.mm(b)
        r.sum().backward()
        assert_same(a_grad, a.grad)
        assert_same(b_grad, b.grad)
        ran += 1
    assert ran == 9


class FixedGradientFunction(Function):
    @staticmethod
    def forward(ctx, x, grad_x):
        ctx.save_for_backward(grad_x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        (saved_grad_x,) = ctx.saved_tensors
        return saved_grad_x, None


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_sparse_backward
@pytest.mark.parametrize("dtype", [torch.double, torch.cdouble])
def test_sparse_backward(dtype):
    size = torch.Size([6, 3, 2])
    i1 = torch.tensor([[0, 3, 4], [0, 2, 2]], dtype=torch.long)
    v1 = torch.randn([3, 2], dtype=dtype)
    sparse_grad1 = torch.sparse_coo_tensor(i1, v1, size, dtype=dtype)
    i2 = torch.tensor([[0, 1, 3, 4], [0, 1, 2, 2]], dtype=torch.long)
    v2 = torch.randn([4, 2], dtype=dtype)
    sparse_grad2 = torch.sparse_coo_tensor(i2, v2, size, dtype=dtype)
    dense_grad = torch.rand(size, dtype=dtype)
    fn = FixedGradientFunction

    # sparse first
    x = torch.randn(size, dtype=dtype, requires_grad=True)
    (fn.apply(x, sparse_grad1) + fn.apply(x, dense_grad) + fn.apply(x, sparse_grad2)).sum().abs().backward()
    assert x.grad.layout == torch.strided
    assert_same(x.grad, dense_grad + sparse_grad1 + sparse_grad2)
    # dense first
    x = torch.randn(size, dtype=dtype, requires_grad=True)
    (fn.apply(x, dense_grad) + fn.apply(x, sparse_grad1) + fn.apply(x, sparse_grad2)).sum().abs().backward()
    assert_same(x.grad, dense_grad + sparse_grad1 + sparse_grad2)
    # sparse only
    x = torch.randn(size, dtype=dtype, requires_grad=True)
    (fn.apply(x, sparse_grad1) + fn.apply(x, sparse_grad2)).sum().abs().backward()
    assert x.grad.layout == torch.sparse_coo
    assert_same(x.grad, sparse_grad1 + sparse_grad2)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_sparse_mask_autograd
def test_sparse_mask_autograd():
    tensor = torch.randn(3, requires_grad=True)
    mask = torch.ones(3)
    mask[1] = 0
    mask = mask.to_sparse()
    converted = tensor.sparse_mask(mask).to_dense()
    converted.sum().backward()
    assert torch.equal(tensor.grad, mask.to_dense())


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_sparse_ctor_getter_backward
@pytest.mark.parametrize("dtype", [torch.double, torch.cdouble])
def test_sparse_ctor_getter_backward(dtype):
    def _test(size, sparse_dim, nnz):
        i = torch.rand(sparse_dim, nnz)
        i.mul_(torch.tensor(size[:sparse_dim]).unsqueeze(1).to(i))
        i = i.to(torch.long)
        inp = torch.randn([nnz] + list(size[sparse_dim:]), dtype=torch.double, requires_grad=True)
        other = gen_sparse_tensor(size, sparse_dim, nnz, is_uncoalesced=True, dtype=dtype)

        def fn(v):
            x = torch.sparse_coo_tensor(i, v, size, dtype=dtype)
            y = (x + other).coalesce()
            yv = y.values()
            new_v = yv.tanh()
            z = torch.sparse_coo_tensor(y.indices(), new_v, y.size())
            return z.coalesce().values()

        assert gradcheck(fn, (inp,), check_batched_grad=False)
        with pytest.raises(RuntimeError, match="does not have a grad_fn"):
            other.detach().requires_grad_()._values().backward(torch.ones_like(other._values()))

    for empty_i, empty_v, empty_nnz in itertools.product([True, False], repeat=3):
        sparse_size = [] if empty_i else [2, 1]
        dense_size = [1, 0, 2] if empty_v else [1, 2]
        nnz = 0 if empty_nnz else 5
        _test(sparse_size + dense_size, len(sparse_size), nnz)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_set_data_tensorimpl_type
def test_set_data_tensorimpl_type():
    x = torch.randn(1, 2)
    x_s = torch.sparse_coo_tensor(torch.zeros([1, 1]), torch.ones([1]))
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        x.data = x_s


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_dense_and_sparse_inputs
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_dense_and_sparse_inputs(fast_mode):
    def fn(x, y):
        return x * y.coalesce().to_dense()

    a = torch.rand(2, 2, dtype=torch.double, requires_grad=True)
    b = torch.rand(2, 2, dtype=torch.double).to_sparse().requires_grad_(True)
    assert gradcheck(fn, (a, b), masked=True, check_batched_grad=False, fast_mode=fast_mode)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_check_batched_grad
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_check_batched_grad(fast_mode):
    x = torch.rand(10, dtype=torch.double, requires_grad=True).to_sparse()
    with pytest.raises(RuntimeError, match="gradcheck or gradgradcheck failed while testing batched gradient"):
        gradcheck(lambda x: x.to_dense(), (x,), masked=True, check_batched_grad=True, fast_mode=fast_mode)
    assert not gradcheck(lambda x: x.to_dense(), (x,), masked=True, check_batched_grad=True,
                         raise_exception=False, fast_mode=fast_mode)


# The sparse half of TestProfiler.test_gradcheck_test_outputs (its other half needs MKLDNN
# tensors, which dynjit does not have: that row is out of scope).
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_sparse_output_is_refused_even_without_raise_exception(fast_mode):
    x = torch.rand(10, requires_grad=True).to_sparse()
    with pytest.raises(ValueError, match="Sparse output is not supported at gradcheck yet"):
        gradcheck(lambda x: x, (x,), masked=True, check_batched_grad=False, raise_exception=False,
                  fast_mode=fast_mode)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_input
@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr,
                                    torch.sparse_bsc])
def test_gradcheck_input(layout):
    if layout in {torch.sparse_bsr, torch.sparse_bsc}:
        blocksize = (2, 2)
        size = (4, 8)
    else:
        blocksize = None
        size = (2, 2)

    def check(fast_mode, masked):
        def fn(sparse):
            return torch.sum(sparse)

        gradcheck(fn, torch.rand(size, dtype=torch.double).to_sparse(layout=layout, blocksize=blocksize)
                  .requires_grad_(), masked=masked, check_batched_grad=False, fast_mode=fast_mode)

    for fast_mode, masked in itertools.product(*[(True, False)] * 2):
        check(fast_mode=fast_mode, masked=masked)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_to_sparse_backward
def test_to_sparse_backward():
    to_attr_names = ("to_dense", "to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc")
    to_params = ((), (), (), (), (2,), (2,))
    to_attr_names_params = dict(zip(to_attr_names, to_params))

    def check_inversion_possible(t, layout1, layout1_params, layout2, layout2_params):
        l = (layout1, layout2)
        p = (layout1_params, layout2_params)
        for l1, l2, p1, p2 in ((*l, *p), (*l[::-1], *p[::-1])):
            try:
                to_l1 = getattr(t, l1)(*p1)
                getattr(to_l1, l2)(*p2)
            except RuntimeError:
                return False
        return True

    self_strided = torch.rand(4, 4, dtype=torch.double) + 1
    grad_strided = torch.rand(4, 4, dtype=torch.double) + 1
    checked = 0
    for from_to_attr in to_attr_names:
        from_params = to_attr_names_params[from_to_attr]
        self_from = getattr(self_strided, from_to_attr)(*from_params).requires_grad_(True)
        for to_to_attr in to_attr_names[1:]:
            to_params = to_attr_names_params[to_to_attr]
            if check_inversion_possible(self_strided, from_to_attr, from_params, to_to_attr, to_params):
                self_to = getattr(self_from, to_to_attr)(*to_params)
                grad_to = getattr(grad_strided, to_to_attr)(*to_params)
                grad_res = torch.autograd.grad(self_to, self_from, grad_to)[0]
                assert grad_res.layout == self_from.layout
                assert torch.equal(grad_res.to_dense(), grad_strided)
                checked += 1
    # the pairs PyTorch 2.13 converts both ways: every one but CSR/CSC <-> BSR/BSC
    assert checked == 22


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_no_grad_copy_sparse
@pytest.mark.filterwarnings("ignore:Argument order of nn.functional.embedding_bag was changed")
def test_no_grad_copy_sparse():
    class MyFunc(Function):
        static_grad_ptr = None

        @staticmethod
        def forward(ctx, inp1, inp2):
            return inp1 + inp2

        @staticmethod
        def backward(ctx, grad):
            MyFunc.static_grad_ptr = grad._values().data_ptr()
            return grad, grad

    class NonContGradFunc(Function):
        static_grad_ptr = None

        @staticmethod
        def forward(ctx, inp1, inp2):
            return inp1 + inp2

        @staticmethod
        def backward(ctx, grad):
            # a sparse gradient whose indices and values are not contiguous
            v = torch.rand(1, 3)
            i = torch.ones(1, 1, dtype=torch.long)
            nv = v.expand(8, 3)
            ni = i.expand(1, 8)
            ngrad = torch.sparse_coo_tensor(ni, nv, (10, 3), dtype=torch.float32)
            NonContGradFunc.static_grad_ptr = ngrad._values().data_ptr()
            return ngrad, ngrad

    a = torch.randn(10, 3, requires_grad=True)
    b = torch.randn(10, 3, requires_grad=True)
    input = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 4])
    import dynjit.nn.functional as F

    # one of a, b takes the computed gradient without a copy
    emb_matrix = MyFunc.apply(a, b)
    loss = F.embedding_bag(emb_matrix, input, offsets, sparse=True).sum()
    loss.backward(retain_graph=True)
    p_g = MyFunc.static_grad_ptr
    p_a = a.grad._values().data_ptr()
    p_b = b.grad._values().data_ptr()
    assert p_a != p_b
    assert p_a == p_g or p_b == p_g
    for i in range(10):
        loss.backward(retain_graph=True)

    # non-contiguous indices and values: both are copied
    a.grad = b.grad = None
    emb_matrix = NonContGradFunc.apply(a, b)
    loss = F.embedding_bag(emb_matrix, input, offsets, sparse=True).sum()
    loss.backward(retain_graph=True)
    p_g = NonContGradFunc.static_grad_ptr
    p_a = a.grad._values().data_ptr()
    p_b = b.grad._values().data_ptr()
    assert p_a != p_b
    assert p_a != p_g
    assert p_b != p_g
    for i in range(10):
        loss.backward(retain_graph=True)
    # the gradients accumulated (sparse into sparse): only row 1 was ever given one
    dense = a.grad.to_dense().numpy()
    assert a.grad.is_sparse and np.all(dense[[0] + list(range(2, 10))] == 0) and np.all(dense[1] != 0)
