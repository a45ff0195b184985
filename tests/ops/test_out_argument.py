"""`out=` arguments (dynjit/ops/out.py) and Tensor.resize_ / resize_as_: PyTorch's rules
for writing into a given tensor (no autograd, dtype casts, resizing with its warning,
version bumps, forward AD's refusal) and for resizing (memory kept in place, version
bumped only by a real change, tensors that require grad refused); the same results
compiled on every backend; ports of the seed tests that use them."""
import warnings

import numpy as np
import pytest

import dynjit
import dynjit.autograd.forward_ad as fwAD
from dynjit.autograd.profiler import profile

BACKENDS = ("eager", "aot_eager", "llvm")


def test_out_receives_the_result_and_is_returned():
    a, b = dynjit.randn(2, 3), dynjit.randn(2, 3)
    x = dynjit.zeros(2, 3)
    v = x._version
    assert dynjit.mul(a, b, out=x) is x
    np.testing.assert_array_equal(x.numpy(), a.numpy() * b.numpy())
    assert x._version == v + 1
    y = dynjit.zeros(2)
    assert dynjit.sum(a, 1, out=y) is y
    np.testing.assert_allclose(y.numpy(), a.numpy().sum(1), rtol=1e-6)
    z = dynjit.zeros(2, 3)
    dynjit.div(a, 2, out=z)
    np.testing.assert_allclose(z.numpy(), a.numpy() / 2, rtol=1e-6)
    dynjit.div(dynjit.tensor([7.0, -7.0]), 2, rounding_mode="floor", out=z[0, :2])    # a view as out
    assert z[0, :2].tolist() == [3.0, -4.0]
    g = dynjit.zeros(2, 2)
    dynjit.gather(a, 1, dynjit.tensor([[2, 0], [1, 1]]), out=g)
    assert g.tolist() == [[a[0, 2].item(), a[0, 0].item()], [a[1, 1].item(), a[1, 1].item()]]


def test_out_dtype_may_widen_but_not_narrow_the_category():
    ones = dynjit.ones(2)
    wide = dynjit.zeros(2, dtype=dynjit.float64)
    dynjit.add(ones, ones, out=wide)
    assert wide.dtype is dynjit.float64 and wide.tolist() == [2.0, 2.0]
    as_float = dynjit.zeros(2)
    dynjit.add(dynjit.tensor([1, 2]), 3, out=as_float)          # an integer result into a float tensor
    assert as_float.tolist() == [4.0, 5.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        dynjit.add(ones, ones, out=dynjit.zeros(2, dtype=dynjit.int64))


def test_out_of_another_shape_is_resized_with_pytorchs_warning():
    x = dynjit.zeros(3)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape "
                                         r"\[3\], which does not match the required output shape \[2\]"):
        dynjit.add(dynjit.ones(2), dynjit.ones(2), out=x)
    assert x.tolist() == [2.0, 2.0]
    empty = dynjit.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # no warning for an empty output
        dynjit.sum(dynjit.ones(2, 3), 0, out=empty)
    assert empty.tolist() == [2.0, 2.0, 2.0]


def test_out_with_a_non_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        dynjit.add(dynjit.ones(2), 1, out=[1.0, 2.0])


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_out_variant_raises_when_inputs_require_grad
def test_out_variant_raises_when_inputs_require_grad():
    a = dynjit.randn(2, 2, requires_grad=True)
    b = dynjit.randn(2, 2, requires_grad=True)
    x = dynjit.zeros_like(a)
    # out= functions are not differentiable
    with pytest.raises(RuntimeError, match="out="):
        dynjit.mul(a, b, out=x)
    with pytest.raises(RuntimeError, match=r"mul\(\): functions with out=\.\.\. arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        dynjit.mul(a, b, out=x)
    # under no_grad, the inputs may require grad
    with dynjit.no_grad():
        dynjit.mul(a, b, out=x)
        assert dynjit.equal(x, a * b)
    a = dynjit.randn(2, 2)
    b = dynjit.randn(2, 2)
    x = dynjit.zeros(2, 2, requires_grad=True)
    # nor may the output require grad
    with pytest.raises(RuntimeError, match="out="):
        dynjit.mul(a, b, out=x)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_out_variant
def test_out_variant():
    with fwAD.dual_level():
        foo = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        bar = dynjit.rand(2)
        with pytest.raises(RuntimeError, match="out= function"):       # NotImplementedError is one
            dynjit.add(bar, bar, out=foo)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with add_out that does not "
                                                      "support it because it is an out= function"):
            dynjit.add(foo, bar, out=bar)
        before = bar.clone()
        with pytest.raises(RuntimeError, match="out= function"):
            dynjit.add(foo, bar, out=bar)
        assert dynjit.equal(bar, before)                                 # nothing was written


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_with_out_variant
def test_with_out_variant():
    with dynjit.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.tensor([1.0], requires_grad=True)
        b = dynjit.tensor([1.0])
        c = dynjit.tensor([2.0])
        out = a * b
        assert len(ctx.tid_to_weakhandle) == 1
        dynjit.sin(c, out=b)            # writes the saved b: its old value is cloned first
        assert len(ctx.cloned) == 1
        assert b.tolist() == pytest.approx([np.sin(2.0)])
        out.backward()
        assert len(ctx.cloned) == 0
        assert a.grad.tolist() == [1.0]  # the b saved by a * b, not sin(2)


def _mul_into(a, b, x):
    dynjit.mul(a, b, out=x)
    return x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_out_matches_eager(backend):
    a, b = dynjit.randn(2, 2), dynjit.randn(2, 2)
    x_eager, x_compiled = dynjit.zeros(2, 2), dynjit.zeros(2, 2)
    expected = _mul_into(a, b, x_eager)
    got = dynjit.compile(_mul_into, backend=backend)(a, b, x_compiled)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(x_compiled.numpy(), x_eager.numpy())


# -- resize_ ---------------------------------------------------------------------------

def test_resize_keeps_memory_in_place_and_grows_with_zeros():
    y = dynjit.arange(6.0)
    v = y[1:3]
    v.resize_(2, 2)                      # a view reinterprets its base's memory from its offset
    assert v.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    v[0, 0] = 10.0
    assert y.tolist() == [0.0, 10.0, 2.0, 3.0, 4.0, 5.0]
    z = dynjit.arange(6.0)
    z.resize_(2, 2)
    assert z.tolist() == [[0.0, 1.0], [2.0, 3.0]] and z.is_contiguous()
    z.resize_(8)                         # grows: the old values first, then zeros
    assert z.tolist()[:6] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and z.shape == (8,)
    t = dynjit.arange(6.0).view(2, 3).t()
    t.resize_(3, 2)                      # already that shape: nothing changes, strides included
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    r = dynjit.arange(6.0)
    assert r.resize_as_(dynjit.ones(2, 3)).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    w = dynjit.arange(3.0)
    assert w.resize_((3, 1)).shape == (3, 1)        # a size given as one tuple


def test_resize_refuses_tensors_that_require_grad_and_growing_a_view():
    x = dynjit.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        x.resize_(4)
    with dynjit.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        x.resize_(4)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        dynjit.ones(2, requires_grad=True).clone().resize_(3)
    with pytest.raises(RuntimeError, match="grow the memory this view shares with its base"):
        dynjit.arange(6.0)[4:].resize_(4)
    with pytest.raises(RuntimeError, match="negative dimension"):
        dynjit.ones(2).resize_(-1)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_resize_version_bump
def test_resize_version_bump():
    x = dynjit.rand((1,))
    y = dynjit.randn((3,))
    x.resize_((1, 2))
    assert x._version == 1
    x.resize_as_(y)
    assert x._version == 2
    # resizing to the current size is a no-op: no version bump
    x.resize_((3,))
    assert x._version == 2
    x.resize_as_(y)
    assert x._version == 2


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_profiler_unboxed_only
def test_profiler_unboxed_only():
    x = dynjit.rand(3, 4)
    with profile() as prof:
        x.resize_([3, 2])
    assert x.shape == (3, 2)
    assert prof.key_averages() is not None      # the profile ends cleanly


def test_resize_while_tracing_is_a_clear_error():
    from dynjit.fx.proxy_tensor import make_fx

    def f(x):
        return x.clone().resize_(4)
    with pytest.raises(NotImplementedError, match=r"resize_\(\) while tracing"):
        make_fx(f)(dynjit.ones(2))
