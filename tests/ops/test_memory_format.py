"""Memory formats as strides (dynjit/ops/memory_format.py): channels_last layouts from
contiguous()/to()/to_memory_format, is_contiguous(memory_format=...), empty_strided, and
PyTorch's gradient layout contract (a dense leaf's .grad has the leaf's strides, any other
leaf's is row-major); ports of the seed tests that use them."""
import numpy as np
import pytest

import dynjit

BACKENDS = ("eager", "aot_eager", "llvm")


def test_channels_last_strides_and_values():
    x = dynjit.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=dynjit.channels_last)
    assert y.stride() == (60, 1, 15, 3)                 # NHWC memory order
    assert y.is_contiguous(memory_format=dynjit.channels_last) and not y.is_contiguous()
    assert dynjit.equal(x, y)
    assert y.contiguous(memory_format=dynjit.channels_last) is y
    back = y.contiguous()
    assert back.is_contiguous() and back.stride() == (60, 20, 5, 1) and dynjit.equal(back, x)
    z = dynjit.randn(1, 2, 3, 2, 2).to(memory_format=dynjit.channels_last_3d)
    assert z.stride() == (24, 1, 8, 4, 2)
    assert x.to(memory_format=dynjit.contiguous_format) is x
    assert not dynjit.ones(3).is_contiguous(memory_format=dynjit.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        dynjit.ones(2, 3).contiguous(memory_format=dynjit.channels_last)


def test_to_memory_format_differentiates_as_the_identity():
    x = dynjit.randn(2, 3, 2, 2, dtype=dynjit.float64, requires_grad=True)
    assert dynjit.autograd.gradcheck(lambda t: t.contiguous(memory_format=dynjit.channels_last) * 2, (x,))


def test_empty_strided():
    t = dynjit.empty_strided((2, 2), (4, 2))
    assert t.shape == (2, 2) and t.stride() == (4, 2) and t.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    t.copy_(dynjit.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert dynjit.empty_strided((2, 3), (1, 2), dtype=dynjit.int64).stride() == (1, 2)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        dynjit.empty_strided((2, 2), (1,))


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_advanced_indexing_backwards_memory_format
def test_advanced_indexing_backwards_memory_format():
    shape = (2, 8, 1, 2)
    i = dynjit.randint(1, shape).contiguous(memory_format=dynjit.channels_last)
    x = dynjit.randn(shape, requires_grad=True)
    x[i].sum().backward()
    # randint(1, shape) draws only zeros: every element of i picks the slice x[0]
    counts = np.bincount(i.numpy().ravel(), minlength=shape[0])
    np.testing.assert_array_equal(x.grad.numpy(), counts[:, None, None, None] * np.ones(shape))


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_strided_leaf_grad_layout
def test_strided_leaf_grad_layout():
    # (1) a dense, non-overlapping leaf's gradient has the leaf's layout
    for fmt_a in (dynjit.contiguous_format, dynjit.channels_last):
        for fmt_b in (dynjit.contiguous_format, dynjit.channels_last):
            a = dynjit.rand((2, 3, 4, 5)).to(memory_format=fmt_a)
            b = dynjit.rand((2, 3, 4, 5)).to(memory_format=fmt_b)
            a.requires_grad_()
            b.requires_grad_()
            a.sum().backward()
            assert a.grad.stride() == a.stride()
            b.sum().backward()
            assert b.grad.stride() == b.stride()
            a.grad = None
            b.grad = None
            (a * b).sum().backward()
            assert a.grad.stride() == a.stride()
            assert b.grad.stride() == b.stride()
    # (2) a leaf that is not dense gets a row-major gradient
    c = dynjit.empty_strided((2, 2), (4, 2)).copy_(dynjit.rand((2, 2)))
    c.requires_grad_()
    d = dynjit.rand((2, 2))
    c.sum().backward()
    assert c.grad.stride() == (2, 1)
    c.grad = None
    (c * d).sum().backward()
    assert c.grad.stride() == (2, 1)
    np.testing.assert_allclose(c.grad.numpy(), d.numpy())


def test_transposed_leaf_gets_a_transposed_gradient():
    a = dynjit.rand(3, 4).t().detach().requires_grad_()
    (a * 3).sum().backward()
    assert a.grad.stride() == a.stride() == (1, 4) and a.grad.tolist() == [[3.0] * 3] * 4


def _cl_step(x, w):
    return (x.contiguous(memory_format=dynjit.channels_last) * w).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_matches_eager(backend):
    x = dynjit.randn(2, 3, 2, 2, requires_grad=True)
    w = dynjit.randn(2, 3, 2, 2)
    expected = _cl_step(x, w)
    expected.backward()
    g, x.grad = x.grad.clone(), None
    got = dynjit.compile(_cl_step, backend=backend)(x, w)
    got.backward()
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), g.numpy(), rtol=1e-6)
