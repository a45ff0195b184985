"""as_strided (a checked view of a tensor's storage, with its derivative), Tensor.storage(),
and PyTorch's metadata check in make_dual: a tangent whose storage size, strides or
storage offset differ from the primal's is copied into the primal's layout (so views of
the dual, as_strided included, read the same places of the tangent); empty tensors are
never copied. Ports of the seed's metadata-check tests that need no complex numbers."""
from functools import partial

import numpy as np
import pytest

import dynjit
import dynjit.autograd.forward_ad as fwAD
from dynjit.autograd import gradcheck

BACKENDS = ("eager", "aot_eager", "llvm")


def test_as_strided_views_the_storage():
    x = dynjit.arange(6.0)
    v = x.as_strided((2, 2), (1, 2), 1)
    assert v.tolist() == [[1.0, 3.0], [2.0, 4.0]] and v._base is x
    v[0, 0] = 10.0
    assert x[1].item() == 10.0                       # a view: writes reach the storage
    tail = x[2:]
    assert tail.as_strided((2,), (1,)).tolist() == [2.0, 3.0]       # default offset: the tensor's own
    assert tail.as_strided((2,), (1,), 0).tolist() == [0.0, 10.0]   # an explicit one counts from the storage
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[5\], strides \[2\], storage offset 0, and "
                                           r"itemsize 4 requiring a storage size of 36 are out of bounds for "
                                           r"storage of size 24"):
        x.as_strided((5,), (2,), 0)
    assert dynjit.tensor([1.0]).as_strided((0,), (1,), 2).shape == (0,)       # empty: any offset


def test_as_strided_gradient():
    a = dynjit.arange(6.0, dtype=dynjit.float64).requires_grad_()
    assert gradcheck(lambda t: t.as_strided((2, 2), (1, 2), 1), (a,))
    b = dynjit.arange(6.0, dtype=dynjit.float64)[1:].detach().requires_grad_()     # offset 1 in its storage
    assert gradcheck(lambda t: t.as_strided((2, 3), (1, 1), 1), (b,))             # overlapping reads add up
    c = dynjit.arange(4.0, requires_grad=True)
    c.as_strided((2, 2), (1, 1)).sum().backward()
    assert c.grad.tolist() == [1.0, 2.0, 1.0, 0.0]


def test_storage_length_is_in_elements():
    assert len(dynjit.randn(5)[:4].detach().storage()) == 5
    assert len(dynjit.ones(2, 3, dtype=dynjit.float64).t().storage()) == 6


def _strided_sum(x):
    return x.as_strided((2, 2), (1, 2), 1).sum() * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_as_strided_matches_eager(backend):
    x = dynjit.arange(6.0, requires_grad=True)
    expected = _strided_sum(x)
    expected.backward()
    g, x.grad = x.grad.clone(), None
    got = dynjit.compile(_strided_sum, backend=backend)(x)
    got.backward()
    assert got.item() == expected.item() and dynjit.equal(x.grad, g)


def test_make_dual_keeps_a_tangent_of_the_same_layout_and_copies_another():
    primal, tangent = dynjit.rand(2, 3), dynjit.rand(2, 3)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(fwAD.make_dual(primal, tangent)).tangent is tangent
        transposed = dynjit.rand(3, 2).t()                 # other strides: copied into the primal's
        t = fwAD.unpack_dual(fwAD.make_dual(primal, transposed)).tangent
        assert t is not transposed and t.stride() == primal.stride() and dynjit.equal(t, transposed)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_metadata_check_checks_storage_numel
def test_metadata_check_checks_storage_numel():
    primal = dynjit.randn(5)[:4].detach()
    assert len(primal.storage()) == 5
    tangent = dynjit.randn(4)
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal, tangent)
        _, unpacked_tangent = fwAD.unpack_dual(dual)
        # the tangent was copied (its storage differs): changing the dual's leaves the given one
        tangent_clone = tangent.clone()
        unpacked_tangent *= 2
        assert dynjit.allclose(tangent_clone, tangent)
        # and the copy has the primal's storage, so this view exists for both
        dual.as_strided((5,), (1,), 0)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_metadata_check_checks_ignores_size_zero
def test_metadata_check_checks_ignores_size_zero():
    a = dynjit.ones(0).as_strided((0, 1), (1, 1), 0)
    b = dynjit.ones(0).as_strided((0, 1), (1, 0), 0)
    with fwAD.dual_level():
        dual = fwAD.make_dual(a, b)
        dynjit.diagonal(dual, offset=0)
    input = dynjit.rand([0, 1], dtype=dynjit.complex128, requires_grad=True)
    func = partial(dynjit.diagonal, offset=0)
    assert gradcheck(func, (input,), check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_metadata_check_ignore_storage_offset_for_zero_numel_tensor
def test_metadata_check_ignore_storage_offset_for_zero_numel_tensor():
    a = dynjit.tensor([1.0]).as_strided((0,), (1,), 1)
    b = dynjit.tensor([1.0]).as_strided((0,), (1,), 2)
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(a, b)
        assert fwAD.unpack_dual(dual_input).tangent is b        # no copy
    a = dynjit.tensor([1.0]).as_strided((1,), (2,), 0)
    b = dynjit.tensor([1.0]).as_strided((1,), (1,), 0)
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(a, b)
        dual_input[1:]
        assert fwAD.unpack_dual(dual_input).tangent is b        # a size-1 dim's stride does not count
