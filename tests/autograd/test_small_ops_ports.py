"""Seed tests that wait on small ops or arguments: gather's sparse_grad (a sparse COO
gradient, equal to the dense one), in-place comparisons (eq_, ...), nextafter (values against
numpy, bfloat16 on its own spacing, PyTorch 2.13's derivative), set_ on a parameter."""
import numpy as np
import pytest

import dynjit
import dynjit.autograd.forward_ad as fwAD
from dynjit.autograd import gradcheck

BACKENDS = ("eager", "aot_eager", "llvm")


def _test_sparse_gather(size_x, size_ind, dim):
    x = dynjit.randn(size_x, requires_grad=True)
    if len(size_ind) > 0 and len(size_x) > 0:
        ind = dynjit.randint(x.size(dim), size_ind)
    else:
        ind = dynjit.zeros(size_ind, dtype=dynjit.int64)
    out = dynjit.gather(x, dim, ind, sparse_grad=False)
    grad = dynjit.rand_like(out)
    out.backward(grad)
    grad_dense = x.grad.clone()
    x.grad = None
    out = dynjit.gather(x, dim, ind, sparse_grad=True)
    out.backward(grad)
    assert dynjit.equal(grad_dense, x.grad.to_dense())
    # and the gradient is gather's: grad added back where the index points (summed over repeats)
    expected = np.zeros(max(np.size(x.detach().numpy()), 1)) if x.dim() <= 1 else np.zeros(tuple(x.shape))
    ind_np, g = ind.numpy(), grad.numpy()
    for pos in np.ndindex(*ind_np.shape):
        if x.dim() <= 1 or ind.dim() == 0:
            expected[ind_np[pos]] += g[pos]
        else:
            target = list(pos)
            target[dim % x.dim()] = ind_np[pos]
            expected[tuple(target)] += g[pos]
    assert x.grad.is_sparse
    np.testing.assert_allclose(x.grad.to_dense().numpy().reshape(expected.shape), expected, rtol=1e-6)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_dim0
def test_sparse_gather_dim0():
    _test_sparse_gather((10, 10), (5, 10), 0)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_dim1
def test_sparse_gather_dim1():
    _test_sparse_gather((10, 10, 5), (10, 5, 5), 1)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_dim_neg
def test_sparse_gather_dim_neg():
    _test_sparse_gather((10, 10, 5), (10, 10, 2), -1)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_ind_scalar
def test_sparse_gather_ind_scalar():
    _test_sparse_gather((10,), (), 0)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_x_scalar
def test_sparse_gather_x_scalar():
    _test_sparse_gather((), (2,), 0)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sparse_gather_both_scalar
def test_sparse_gather_both_scalar():
    _test_sparse_gather((), (), 0)


def test_to_dense_of_a_strided_tensor_is_itself():
    x = dynjit.ones(3, requires_grad=True)
    assert x.to_dense() is x


def test_gather_and_scatter_with_a_zero_dim_index():
    x = dynjit.tensor([1.0, 2.0, 3.0])
    assert dynjit.gather(x, 0, dynjit.tensor(2)).item() == 3.0
    assert dynjit.ones(3).scatter_add(0, dynjit.tensor(1), dynjit.tensor(5.0)).tolist() == [1.0, 6.0, 1.0]
    assert dynjit.ones(3).scatter(0, dynjit.tensor(1), dynjit.tensor(5.0)).tolist() == [1.0, 5.0, 1.0]


# -- in-place comparisons ------------------------------------------------------------

@pytest.mark.parametrize("name,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
def test_inplace_comparisons_write_ones_and_zeros_in_selfs_dtype(name, ref):
    a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 2.0, 2.0], np.float32)
    x = dynjit.tensor(a)
    v = x._version
    assert getattr(x, name + "_")(dynjit.tensor(b)) is x
    assert x.dtype is dynjit.float32 and x._version == v + 1
    np.testing.assert_array_equal(x.numpy(), ref(a, b).astype(np.float32))
    i = dynjit.tensor([1, 5])
    getattr(i, name + "_")(2)
    assert i.dtype is dynjit.int64 and i.tolist() == ref(np.array([1, 5]), 2).astype(np.int64).tolist()


def test_inplace_comparison_carries_no_gradient():
    a = dynjit.randn(3, requires_grad=True)
    y = a * 2
    y.eq_(dynjit.zeros(3))
    (y * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), y.detach().numpy())     # d(y*a)/da with y constant


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_non_differentiable
def test_non_differentiable():
    with fwAD.dual_level():
        foo = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        bar = dynjit.rand(2)
        eq = foo == bar                   # comparisons of duals do not raise
        assert fwAD.unpack_dual(eq).tangent is None
        foo.eq_(bar)                      # nor do their in-place forms
        assert foo.tolist() == [0.0, 0.0]


# -- nextafter --------------------------------------------------------------------------

def test_nextafter_matches_numpy_and_promotes():
    a = np.array([1.0, -1.0, 0.0, 2.0, np.inf])
    b = np.array([2.0, -2.0, -1.0, 2.0, 0.0])
    for dt, npdt in ((dynjit.float32, np.float32), (dynjit.float64, np.float64), (dynjit.float16, np.float16)):
        got = dynjit.nextafter(dynjit.tensor(a, dtype=dt), dynjit.tensor(b, dtype=dt))
        assert got.dtype is dt
        np.testing.assert_array_equal(got.numpy(), np.nextafter(a.astype(npdt), b.astype(npdt)))
    mixed = dynjit.tensor([1.0]).nextafter(dynjit.tensor([2.0], dtype=dynjit.float64))
    assert mixed.dtype is dynjit.float64 and mixed.item() == np.nextafter(1.0, 2.0)
    assert dynjit.tensor([1.0]).nextafter(dynjit.tensor([2])).item() == np.nextafter(np.float32(1), np.float32(2))
    x = dynjit.tensor([1.0, 2.0])
    assert x.nextafter_(dynjit.tensor([2.0, 0.0])) is x
    assert x.tolist() == [np.nextafter(np.float32(1), np.float32(2)), np.nextafter(np.float32(2), np.float32(0))]


def test_nextafter_of_bfloat16_steps_by_bfloat16_spacing():
    a = dynjit.tensor([1.0, 2.0, 0.0, 0.0, -1.0]).bfloat16()
    b = dynjit.tensor([3.0, 2.0, 1.0, -1.0, -3.0]).bfloat16()
    got = dynjit.nextafter(a, b).float().tolist()
    tiny = 2.0 ** -133                     # bfloat16's smallest subnormal
    assert got == [1.0 + 2.0 ** -7, 2.0, tiny, -tiny, -1.0 - 2.0 ** -7]


def test_nextafter_of_integers_raises():
    with pytest.raises(NotImplementedError, match="\"nextafter_cpu\" not implemented for 'Long'"):
        dynjit.nextafter(dynjit.tensor([1, 2]), dynjit.tensor([2, 0]))


def test_nextafter_derivative_is_pytorchs():
    a = dynjit.rand(3, dtype=dynjit.float64, requires_grad=True)
    b = (dynjit.rand(3, dtype=dynjit.float64) + 2).requires_grad_(True)
    out = dynjit.nextafter(a, b)
    assert type(out.grad_fn).__name__ == "NextafterBackward0"
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.tolist() == [0.0, 0.0, 0.0]
    assert gradcheck(dynjit.nextafter, (a, b))


def _nextafter_step(a, b):
    return dynjit.nextafter(a, b) * 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_nextafter_compiled_matches_eager(backend):
    a = dynjit.tensor([1.0, -2.0, 0.0], requires_grad=True)
    b = dynjit.tensor([2.0, -3.0, 1.0])
    expected = _nextafter_step(a, b)
    expected.sum().backward()
    g_eager, a.grad = a.grad, None
    got = dynjit.compile(_nextafter_step, backend=backend)(a, b)
    got.sum().backward()
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(a.grad.numpy(), g_eager.numpy())


# -- set_ on a parameter ------------------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_parameter_resize
def test_parameter_resize():
    asd = dynjit.nn.Parameter(dynjit.ones(16, dtype=dynjit.double))
    for i in range(2):
        with dynjit.no_grad():
            asd.set_(asd[1:])
            asd.grad = None
        m = dynjit.cat((asd, asd))
        m.sum().backward()
        # the parameter now has 15 - i elements; each is used twice by cat
        assert asd.shape == (15 - i,) and asd.grad.tolist() == [2.0] * (15 - i)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_to_node_set
def test_grad_to_node_set():
    x = dynjit.rand(2, requires_grad=True)
    x_edge = dynjit.autograd.graph.get_gradient_edge(x)
    out = x.clone()
    # changing x's memory under no_grad makes it a new leaf for autograd
    with dynjit.no_grad():
        x.set_(dynjit.rand_like(x))
    with pytest.raises(RuntimeError, match="to not have been used in the graph"):
        dynjit.autograd.grad(out.sum(), x)
    # the edge taken before still reaches the graph
    (g,) = dynjit.autograd.grad(out.sum(), x_edge)
    assert g.tolist() == [1.0, 1.0]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_vmap_defaults
def test_custom_function_vmap_defaults():
    class MySquare(dynjit.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * 2 * x

    assert MySquare.generate_vmap_rule is False
    assert hasattr(MySquare, "vmap")
    with pytest.raises(NotImplementedError, match="override the vmap staticmethod or set generate_vmap_rule=True"):
        MySquare.vmap(None, (0,), dynjit.ones(2))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_batched_grad
def test_grad_batched_grad():
    x = dynjit.randn(2, 2, requires_grad=True)
    out = x.clone()  # Size([2, 2])
    batched_grad = dynjit.arange(3).expand(2, 2, 3).transpose(0, 2)  # Size([3, 2, 2])
    (grad,) = dynjit.autograd.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert dynjit.equal(grad, dynjit.arange(3).expand(2, 2, 3).transpose(0, 2).to(dtype=grad.dtype))
    # a grad_output without the batch dimension
    grad_out = dynjit.ones(2, 2)
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first"):
        dynjit.autograd.grad(outputs=out, grad_outputs=(grad_out,), inputs=(x,), is_grads_batched=True)

    out = x.sum()  # Size([])
    batched_grad = dynjit.arange(3)  # Size([3])
    (grad,) = dynjit.autograd.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert dynjit.equal(grad, dynjit.arange(3).expand(2, 2, 3).transpose(0, 2).to(dtype=grad.dtype))
    grad_out = dynjit.ones(2).unsqueeze(1)
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first"):
        dynjit.autograd.grad(outputs=out, grad_outputs=(grad_out,), inputs=(x,), is_grads_batched=True)


def test_batched_grad_of_several_outputs_and_an_unused_input():
    x, y = dynjit.randn(2, 2, requires_grad=True), dynjit.randn(3, requires_grad=True)
    gx, gy = dynjit.autograd.grad((x.sum(), (y * y).sum()), (x, y), (dynjit.arange(3.0), dynjit.ones(3)),
                                  is_grads_batched=True)
    np.testing.assert_array_equal(gx.numpy(), np.arange(3.0).reshape(3, 1, 1) * np.ones((3, 2, 2)))
    np.testing.assert_allclose(gy.numpy(), np.broadcast_to(2 * y.detach().numpy(), (3, 3)))
    gx, gy = dynjit.autograd.grad((x.sum(),), (x, y), (dynjit.arange(3.0),), is_grads_batched=True,
                                  allow_unused=True)
    assert gy is None and gx.shape == (3, 2, 2)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_inplace_on_view_multi_output_unsafe
def test_inplace_on_view_multi_output_unsafe():
    for f in [
        lambda t: t.unsafe_split(1),
        lambda t: t.unsafe_split_with_sizes((1, 1, 1)),
        lambda t: t.unsafe_chunk(3),
    ]:
        a = dynjit.randn(3, 3, requires_grad=True)
        b = a + a
        s1, s2, s3 = f(b)
        s1.mul_(s2)                       # allowed: the pieces are not multi-output views
        s1.sum().backward()
        assert dynjit.equal(b[0], s1[0])  # the write went to b's memory
        # d/da sum(2a0 * 2a1) = (4 a1, 4 a0, 0)
        expected = np.stack([4 * a[1].detach().numpy(), 4 * a[0].detach().numpy(), np.zeros(3)])
        np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-6)


def test_unsafe_split_pieces_and_errors():
    assert [t.tolist() for t in dynjit.unsafe_split(dynjit.arange(5), 2)] == [[0, 1], [2, 3], [4]]
    assert [t.tolist() for t in dynjit.unsafe_chunk(dynjit.arange(5), 3)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 5"):
        dynjit.arange(5).unsafe_split_with_sizes([1, 2])


# -- DataParallel on the CPU ----------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_dataparallel
def test_checkpointing_without_reentrant_dataparallel():
    import copy
    from dynjit.utils.checkpoint import checkpoint

    class LinearModule(dynjit.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = dynjit.nn.Linear(2, 2, bias=False)

        def forward(self, inp):
            return self.linear(inp)

    a = dynjit.randn(2, 2, requires_grad=True)
    model = LinearModule()
    b = copy.deepcopy(model)(a).sum()
    b.backward()
    b_grad = a.grad
    a.grad = None
    module = dynjit.nn.DataParallel(copy.deepcopy(model))
    c = checkpoint(module, a, use_reentrant=False).sum()
    c.backward()
    c_grad = a.grad
    assert dynjit.equal(b_grad, c_grad)


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_dataparallel_saved_tensors_hooks
def test_dataparallel_saved_tensors_hooks():
    import warnings

    def pack(x):
        warnings.warn("pack")
        return x

    seen = []

    class Model(dynjit.nn.Module):
        def forward(self, x):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                y = x * x
                # without several accelerators DataParallel runs forward in this thread: the hooks run
                seen.append(len(w))

    x = dynjit.ones(5, 5, requires_grad=True)
    model = dynjit.nn.DataParallel(Model())
    with dynjit.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        model(x)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = x * x
            assert len(w) > 0
    assert seen and seen[0] > 0


def test_data_parallel_is_the_module_on_the_cpu():
    inner = dynjit.nn.Linear(2, 2)
    dp = dynjit.nn.DataParallel(inner)
    assert dp.module is inner and dp.device_ids == []
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    x = dynjit.randn(3, 2)
    assert dynjit.equal(dp(x), inner(x))
    with pytest.raises(RuntimeError, match="dynjit does not have"):
        dynjit.nn.DataParallel(inner, device_ids=[0, 1])


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_input_buffer_accum
def test_input_buffer_accum():
    leaf = dynjit.rand(2, 2, requires_grad=True)
    # an op whose gradient PyTorch makes sparse (dynjit: the equal dense one)
    ind = dynjit.tensor([[0, 0]], dtype=dynjit.long)
    out2 = leaf.gather(0, ind, sparse_grad=True)
    # an op that passes its gradient through as it is
    out1 = leaf.clone()
    grad_out1_original = dynjit.rand_like(out1)
    grad_out1 = grad_out1_original.clone()
    grad_out2 = dynjit.rand_like(out2)
    dynjit.autograd.backward((out1, out2), (grad_out1, grad_out2))
    # accumulating the two gradients did not write into the one given by the caller
    assert dynjit.equal(grad_out1, grad_out1_original)
    expected = grad_out1_original.numpy().copy()
    expected[0] += grad_out2.numpy()[0]
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-6)
