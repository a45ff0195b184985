"""Forward-mode AD: dual levels, make_dual / unpack_dual, tangents through ops, views and
in-place ops, custom Function.jvp, gradcheck(check_forward_ad=True), and the function
transforms jvp / jacfwd / hessian / linearize, compared with numpy formulas, finite
differences and reverse mode. Includes ports of PyTorch's forward-AD seed tests
(002_7f98adb56adba91b.txt, TestAutogradForwardMode and friends)."""
import gc
import weakref
from itertools import product

import numpy as np
import pytest

import dynjit
import dynjit.autograd.forward_ad as fwAD
from dynjit.autograd import Function, gradcheck
from dynjit.autograd.gradcheck import GradcheckError
from dynjit.func import jvp, jacfwd, jacrev, hessian, linearize, vjp
from dynjit.ops.registry import registry as _registry


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    while fwAD._current_level >= 0:     # as the seed's tearDown: a failed test leaves none
        fwAD.exit_dual_level()


def _np(t):
    return t.detach().numpy()


def _finite_difference_jvp(f, x, v, eps=1e-6):
    plus = f(dynjit.from_numpy(_np(x) + eps * _np(v)))
    minus = f(dynjit.from_numpy(_np(x) - eps * _np(v)))
    return (_np(plus) - _np(minus)) / (2 * eps)


# -- levels, packing, printing ---------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_default_level
def test_tangent_is_the_given_tensor_inside_the_level_and_gone_after():
    foo, bar = dynjit.rand(2), dynjit.rand(2)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
    assert dynjit.equal(baz_primal, foo)
    assert baz_tangent is bar
    baz_primal, baz_tangent = fwAD.unpack_dual(baz)
    assert dynjit.equal(baz_primal, foo)
    assert baz_tangent is None


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_fwd_grad_enabled
def test_fwd_grad_enabled_flag():
    assert fwAD._is_fwd_grad_enabled()
    try:
        fwAD._set_fwd_grad_enabled(False)
        assert not fwAD._is_fwd_grad_enabled()
    finally:
        fwAD._set_fwd_grad_enabled(True)
    assert fwAD._is_fwd_grad_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_set_fwd_grad_enabled
def test_set_fwd_grad_enabled_as_context_manager_restores():
    try:
        fwAD._set_fwd_grad_enabled(False)
        assert not fwAD._is_fwd_grad_enabled()
        with fwAD._set_fwd_grad_enabled(True):
            assert fwAD._is_fwd_grad_enabled()
        assert not fwAD._is_fwd_grad_enabled()
    finally:
        fwAD._set_fwd_grad_enabled(True)


def test_no_tangent_is_computed_while_fwd_grad_is_disabled():
    with fwAD.dual_level():
        x = fwAD.make_dual(dynjit.tensor([1.0, 2.0]), dynjit.tensor([1.0, 1.0]))
        with fwAD._set_fwd_grad_enabled(False):
            y = x.sin()
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(x.sin()).tangent is not None


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_nested_level
def test_level_is_zero_and_nesting_is_refused():
    with fwAD.dual_level() as level:
        assert level == 0
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
            fwAD.enter_dual_level()


def test_enter_and_exit_dual_level_by_hand():
    level = fwAD.enter_dual_level()
    assert level == 0 and fwAD._current_level == 0
    x = fwAD.make_dual(dynjit.tensor([1.0]), dynjit.tensor([2.0]))
    assert fwAD.unpack_dual(x * 3).tangent.tolist() == [6.0]
    fwAD.exit_dual_level(level=0)
    assert fwAD._current_level == -1
    assert fwAD.unpack_dual(x).tangent is None
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(dynjit.tensor([1.0]), dynjit.tensor([2.0]))
    with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
        fwAD.exit_dual_level()
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(dynjit.tensor([1.0]), dynjit.tensor([2.0]), level=3)
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fwAD.exit_dual_level(level=3)
        assert fwAD.unpack_dual(dynjit.ones(1), level=5).tangent is None
        with pytest.raises(TypeError, match="must be Tensor, not int"):
            fwAD.unpack_dual(3)
        # a tangent of another floating dtype is kept as given (as PyTorch does)
        t64 = dynjit.rand(2, dtype=dynjit.float64)
        assert fwAD.unpack_dual(fwAD.make_dual(dynjit.rand(2), t64)).tangent is t64


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_size_check
def test_make_dual_checks_the_tangent_size():
    foo, tangent = dynjit.rand(2), dynjit.rand(3)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a different size"):
            fwAD.make_dual(foo, tangent)
        dual = fwAD.make_dual(foo, tangent[1:])
        assert fwAD.unpack_dual(dual).tangent.shape == (2,)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_set_fw_grad_having_own_fw_grad_at_same_level
def test_tangent_cannot_itself_be_dual_at_the_same_level():
    foo, bar, baz = dynjit.rand(2), dynjit.rand(2), dynjit.rand(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        with pytest.raises(RuntimeError, match="has a forward gradient at the same level"):
            fwAD.make_dual(baz, dual)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_make_dual_forbid_integral_dtype
def test_make_dual_refuses_integral_primal_or_tangent():
    primal_f = dynjit.ones(2, 2, dtype=dynjit.float32)
    primal_l = dynjit.ones(2, 2, dtype=dynjit.long)
    tangent_f = dynjit.ones(2, 2, dtype=dynjit.float32)
    tangent_l = dynjit.ones(2, 2, dtype=dynjit.long)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex"):
            fwAD.make_dual(primal_f, tangent_l)
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_l)
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_f)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_print
def test_only_dual_tensors_print_a_tangent():
    with fwAD.dual_level():
        a = dynjit.rand(3)
        assert "tangent=" not in str(a)
        b = fwAD.make_dual(a, dynjit.rand(3))
        assert "tangent=" not in str(a)
        assert "tangent=" in str(b)
        b_primal, b_tangent = fwAD.unpack_dual(b)
        assert "tangent=" not in str(b_primal)
        assert "tangent=" not in str(b_tangent)
        assert str(fwAD.make_dual(dynjit.tensor(1.0), dynjit.tensor(2.0))) == "tensor(1., tangent=2.0)"


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_basic_packing_unpacking
def test_unpack_gives_a_new_primal_view_and_the_same_tangent():
    foo, bar = dynjit.rand(2), dynjit.rand(2)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
        assert dynjit.equal(baz_primal, foo)
        assert baz_tangent is bar
        assert isinstance(fwAD.unpack_dual(baz), tuple)
        assert baz_primal is not fwAD.unpack_dual(baz).primal
        assert dynjit.equal(baz_primal, fwAD.unpack_dual(baz).primal)
        assert baz_tangent is fwAD.unpack_dual(baz).tangent
        foo_primal, foo_tangent = fwAD.unpack_dual(foo)
        assert dynjit.equal(foo_primal, foo)
        assert foo_tangent is None


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_forward_level_cleanup
def test_dual_keeps_its_tangent_alive_and_the_level_does_not():
    def tensor_and_weak_ref():
        t = dynjit.rand(2, requires_grad=True)
        return t, weakref.ref(t)

    t, t_ref = tensor_and_weak_ref()
    assert t_ref() is not None
    del t
    assert t_ref() is None

    foo = dynjit.rand(2)
    with fwAD.dual_level():
        tangent, tangent_ref = tensor_and_weak_ref()
        assert tangent_ref() is not None
        dual = fwAD.make_dual(foo, tangent)
        assert tangent_ref() is not None
        assert fwAD.unpack_dual(dual)[1] is tangent
        del tangent
        assert tangent_ref() is not None
        del dual
        assert tangent_ref() is None


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_grad_cleanup
def test_tangents_are_removed_when_the_level_exits():
    foo, bar, baz = dynjit.rand(2), dynjit.rand(2), dynjit.rand(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        assert fwAD.unpack_dual(foo)[1] is None
        assert fwAD.unpack_dual(dual)[1] is bar
    assert fwAD.unpack_dual(dual)[1] is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(foo)[1] is None
        new_dual = fwAD.make_dual(foo, baz)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        new_dual_primal, new_dual_tangent = fwAD.unpack_dual(new_dual)
        assert dynjit.equal(dual_primal, new_dual_primal)
        assert dual_tangent is None
        assert dynjit.equal(new_dual_tangent, baz)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_backward_graph_destruction
def test_exiting_a_level_with_a_tangent_that_requires_grad_is_clean():
    def fn():
        a = dynjit.rand(10, requires_grad=True)
        da = fwAD.make_dual(dynjit.rand_like(a), a)
        db = da.exp()
        return weakref.ref(db)

    with fwAD.dual_level():
        ref = fn()
    gc.collect()
    assert ref() is None
    assert fwAD._current_level == -1


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_make_dual_inference_tensor_in_inference_mode
def test_make_dual_in_inference_mode_is_no_view_but_shares_memory():
    with dynjit.inference_mode():
        foo, bar = dynjit.rand(2), dynjit.rand(2)
        foo_copy = foo.clone()
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, bar)
            assert not dual._is_view()
            dual += 1
            assert not dynjit.allclose(foo, foo_copy)
            assert dynjit.allclose(fwAD.unpack_dual(dual).tangent, bar)


def test_make_dual_passes_gradients_back_to_the_primal():
    a = dynjit.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(a, dynjit.tensor([1.0, 0.0]))
        (d * d).sum().backward()
        assert fwAD.unpack_dual(d * d).tangent.tolist() == [2.0, 0.0]
    assert a.grad.tolist() == [2.0, 4.0]


# -- tangents through ops --------------------------------------------------------------

def test_tangents_of_a_composite_against_a_numpy_formula():
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.from_numpy(x), dynjit.from_numpy(v))
        y = (d.sin() * d.exp() + d * d / (1 + d * d)).sum()
        got = fwAD.unpack_dual(y).tangent.item()
    dydx = np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + 2 * x / (1 + x * x) ** 2
    assert np.isclose(got, (dydx * v).sum(), rtol=1e-12)


def test_tangents_through_matmul_reductions_and_shape_ops():
    rng = np.random.default_rng(1)
    a, va = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    b, vb = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    with fwAD.dual_level():
        da = fwAD.make_dual(dynjit.from_numpy(a), dynjit.from_numpy(va))
        db = fwAD.make_dual(dynjit.from_numpy(b), dynjit.from_numpy(vb))
        y = dynjit.cat([da @ db, da[:, :2].t().t()], 1).softmax(1).mean(0)
        tangent = fwAD.unpack_dual(y).tangent.numpy()

    def f(a, b):
        z = np.concatenate([a @ b, a[:, :2]], 1)
        e = np.exp(z - z.max(1, keepdims=True))
        return (e / e.sum(1, keepdims=True)).mean(0)
    eps = 1e-6
    fd = (f(a + eps * va, b + eps * vb) - f(a - eps * va, b - eps * vb)) / (2 * eps)
    assert np.allclose(tangent, fd, atol=1e-8)


def test_integer_and_bool_outputs_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.tensor([1.0, -2.0, 3.0]), dynjit.ones(3))
        assert fwAD.unpack_dual(d > 0).tangent is None
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        values, indices = d.max(0)
        assert fwAD.unpack_dual(values).tangent.item() == 1.0
        assert fwAD.unpack_dual(indices).tangent is None
        assert fwAD.unpack_dual(d.long()).tangent is None


def test_ops_without_a_tangent_input_give_no_tangent():
    with fwAD.dual_level():
        fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        assert fwAD.unpack_dual(dynjit.rand(2).exp()).tangent is None


def test_comparisons_of_dual_tensors_give_no_tangent():
    """Comparisons are not differentiable: no tangent for their result, and an in-place one
    leaves its dual input with a zero tangent, as in PyTorch."""
    with fwAD.dual_level():
        foo = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        bar = dynjit.rand(2)
        eq = foo == bar
        assert fwAD.unpack_dual(eq).tangent is None
        assert fwAD.unpack_dual(foo.gt(bar)).tangent is None
        foo.eq_(bar)
        assert foo.tolist() == [0.0, 0.0]
        assert fwAD.unpack_dual(foo).tangent.tolist() == [0.0, 0.0]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_not_implemented_fwad
def test_op_without_a_derivative_formula_is_a_not_implemented_error():
    from dynjit.ops.registry import register, registry, POINTWISE

    @register("h7_no_formula_for_test", POINTWISE)
    def no_formula(self, other):
        return self + other
    try:
        x, v = dynjit.randn(3), dynjit.rand(3)
        with fwAD.dual_level():
            dual_x = fwAD.make_dual(x, v)
            with pytest.raises(NotImplementedError, match=r"Trying to use forward AD with .* that does not support it"):
                no_formula(dual_x, dual_x)
    finally:
        del registry["h7_no_formula_for_test"]


# ports: 002_7f98adb56adba91b.txt TestAutogradMultipleDispatch.test_foward_mode_AD
def test_forward_ad_runs_through_an_op_declared_after_import():
    """(The seed calls torch._test_autograd_multiple_dispatch, a test op whose CPU kernel has
    its own forward derivative; dynjit has one dispatch key, so the port checks that an op
    registered later with only a backward formula is forward differentiable.)"""
    from dynjit.ops.registry import register, registry, POINTWISE

    @register("h7_late_op_for_test", POINTWISE)
    def late(self):
        return np.sin(self) * 2

    late.derivative(lambda grad, self: grad * self.cos() * 2)
    try:
        primal, tangent = dynjit.randn(3), dynjit.randn(3)
        with fwAD.dual_level():
            dual_input = fwAD.make_dual(primal, tangent)
            out = late(dual_input)
            assert dynjit.allclose(fwAD.unpack_dual(out).tangent, primal.cos() * 2 * tangent)
    finally:
        del registry["h7_late_op_for_test"]


# part of 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_out_variant (the rest needs out=)
def test_out_argument_with_a_dual_tensor_is_refused():
    with fwAD.dual_level():
        foo = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        bar = dynjit.rand(2)
        with pytest.raises((RuntimeError, TypeError), match="out="):
            dynjit.add(bar, bar, out=foo)
        with pytest.raises((RuntimeError, TypeError), match="out="):
            dynjit.add(foo, bar, out=bar)


# -- views and in-place ops ------------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_view_inplace_non_differentiable_views
def test_inplace_on_non_differentiable_views():
    original_foo = dynjit.rand(2, dtype=dynjit.double)
    original_bar = dynjit.ones(2, dtype=dynjit.double)
    foo, bar = original_foo.clone(), original_bar.clone()
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        dual *= 2
        # the primal given to make_dual is a non-differentiable view: no tangent for it
        assert fwAD.unpack_dual(foo)[1] is None
        # the tangent was updated in place
        assert dynjit.equal(bar, original_bar * 2)
        assert dynjit.equal(fwAD.unpack_dual(dual)[1], original_bar * 2)
        assert dynjit.equal(foo, original_foo * 2)
        assert dynjit.equal(fwAD.unpack_dual(dual)[0], original_foo * 2)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        assert fwAD.unpack_dual(dual_primal)[1] is None
        assert fwAD.unpack_dual(dual_tangent)[1] is None
        dual_primal *= 2
        assert dynjit.equal(fwAD.unpack_dual(dual)[0], original_foo * 4)
        assert dynjit.equal(fwAD.unpack_dual(dual)[1], original_bar * 2)
        dual_tangent *= 2
        assert dynjit.equal(fwAD.unpack_dual(dual)[0], original_foo * 4)
        assert dynjit.equal(fwAD.unpack_dual(dual)[1], original_bar * 4)


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_view_inplace_differentiable_views
def test_inplace_on_differentiable_views_updates_the_base_tangent():
    original_foo = dynjit.rand(2)
    original_bar = dynjit.ones(2)
    foo, bar = original_foo.clone(), original_bar.clone()
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        view = dual.narrow(0, 0, 1)
        view *= 2
        assert fwAD.unpack_dual(foo)[1] is None
        assert fwAD.unpack_dual(dual)[1].tolist() == [2.0, 1.0]
        assert fwAD.unpack_dual(view)[1].tolist() == [2.0]

        # a tensor that is not dual gets a tangent from an in-place op with a dual one
        baz = dynjit.rand(2)
        baz += dual
        assert dynjit.equal(fwAD.unpack_dual(baz)[1], fwAD.unpack_dual(dual)[1])
        # and through a view of it
        baz = dynjit.rand(2)
        baz[0] = dual[0]
        assert fwAD.unpack_dual(baz)[1][0].item() == fwAD.unpack_dual(dual)[1][0].item()
        assert fwAD.unpack_dual(baz)[1][1].item() == 0.0

        # detach makes a forward non-differentiable view
        baz = dynjit.rand(2)
        view = baz.detach()
        view += dual
        assert fwAD.unpack_dual(baz)[1] is None


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_view_inplace_always_creates_a_view
def test_inplace_into_a_view_makes_the_tangent_a_view_of_the_base_tangent():
    inplace_binary_ops = (
        lambda x, y: x.add_(y),
        lambda x, y: x.mul_(y),
        lambda x, y: x.copy_(y),
    )
    for inplace_binary_op in inplace_binary_ops:
        base = dynjit.randn(2, 2)
        view = base.transpose(0, 1)
        primal, tangent = dynjit.randn(2, 2), dynjit.randn(2, 2)
        with fwAD.dual_level():
            dual = fwAD.make_dual(primal, tangent)
            inplace_binary_op(view, dual)
            p, t = fwAD.unpack_dual(base)
            p_clone, t_clone = p.clone(), t.clone()
            view *= 2
            p, t = fwAD.unpack_dual(base)
            assert dynjit.allclose(p_clone * 2, p)
            assert dynjit.allclose(t_clone * 2, t)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_copy_forward_ad_broadcasting
def test_copy_of_a_dual_tensor_broadcasts_its_tangent():
    primal, tangent = dynjit.rand(3, 3), dynjit.rand(3, 3)
    non_dual = dynjit.rand(1, 3, 3)
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal, tangent)
        non_dual.copy_(dual)
        got = fwAD.unpack_dual(non_dual).tangent
        assert got.shape == (1, 3, 3) and dynjit.equal(got[0], tangent)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_copy_forward_ad_same_layout_copies_grad
def test_copy_of_a_dual_tensor_copies_its_tangent():
    primal = dynjit.tensor([[3.0], [4.0]])
    tangent = dynjit.tensor([[5.0], [6.0]])
    with fwAD.dual_level():
        x_dual = fwAD.make_dual(primal, tangent)
        non_dual = dynjit.tensor([[1.0], [2.0]])
        non_dual.copy_(x_dual)
        assert fwAD.unpack_dual(non_dual).tangent is not tangent
        assert fwAD.unpack_dual(non_dual).tangent.tolist() == [[5.0], [6.0]]


def test_inplace_op_uses_the_value_before_it_for_the_tangent():
    x = np.array([1.5, -0.5])
    v = np.array([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.from_numpy(x.copy()), dynjit.from_numpy(v.copy()))
        y = d * 1.0
        y.mul_(y)           # d(y*y) = 2 y dy at the old y
        y.sin_()
        got = fwAD.unpack_dual(y).tangent.numpy()
    assert np.allclose(got, np.cos(x * x) * 2 * x * v)


def test_tangent_of_a_view_made_before_its_base_got_one():
    base = dynjit.zeros(2, 3)
    row = base[1]
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.ones(2, 3), dynjit.arange(6.0).reshape(2, 3))
        base.add_(d)
        assert fwAD.unpack_dual(row).tangent.tolist() == [3.0, 4.0, 5.0]
        row.mul_(10)
        assert fwAD.unpack_dual(base).tangent.tolist() == [[0.0, 1.0, 2.0], [30.0, 40.0, 50.0]]


# -- custom Functions ------------------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_save_for_forward
def test_custom_function_jvp_reads_save_for_forward():
    class Func(Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            ctx.prod = x * y
            return z * ctx.prod

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x_p, y_p = ctx.saved_tensors
            return ctx.z * (y_p * x_t + x_p * y_t)

        @staticmethod
        def vjp(ctx, grad_out):
            x, y = ctx.saved_tensors
            return ctx.z * grad_out * y, ctx.z * grad_out * x, None

    a = dynjit.tensor(1.0, requires_grad=True, dtype=dynjit.double)
    t = dynjit.tensor(1.0, dtype=dynjit.double)
    b = dynjit.tensor(2.0, requires_grad=True, dtype=dynjit.double)
    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        out = Func.apply(a_dual, b, 4)
        assert fwAD.unpack_dual(out).tangent.item() == 8.0
        out.backward()
    assert a.grad.item() == 8.0 and b.grad.item() == 4.0
    assert gradcheck(Func.apply, (a, b, 4), check_forward_ad=True)

    class OnlyBackwardSaved(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def jvp(ctx, x_t):
            assert len(ctx.saved_tensors) == 0
            return x_t

        @staticmethod
        def vjp(ctx, grad_out):
            (x,) = ctx.saved_tensors
            assert len(ctx.saved_tensors) == 1
            return grad_out

    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        out = OnlyBackwardSaved.apply(a_dual)
        assert fwAD.unpack_dual(out).tangent is t
        out.backward()
    assert gradcheck(OnlyBackwardSaved.apply, (a,), check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_view_checks
def test_custom_function_returning_a_view_needs_a_view_of_the_tangent():
    flag_to_error = {
        "ok": None,
        "not_a_view": "jvp is not returning a view",
        "not_a_view_of_inp": "jvp is not returning a view of the given",
        "not_a_view_of_inp_base": "jvp is not returning a view of the same base",
    }

    class ViewFn(Function):
        @staticmethod
        def forward(ctx, foo, flag):
            ctx.flag = flag
            ctx.size = foo.size()
            return foo.narrow(0, 0, 2)

        @staticmethod
        def vjp(ctx, gO):
            gI = gO.new_zeros(ctx.size)
            gI.narrow(0, 0, 2).copy_(gO)
            return gI, None

        @staticmethod
        def jvp(ctx, gI, _):
            res = gI.narrow(0, 0, 2)
            if ctx.flag != "ok":
                res = res.clone()
            if ctx.flag in ["not_a_view_of_inp", "not_a_view_of_inp_base"]:
                res = res.view_as(res)
            return res

    inp = dynjit.rand(4, 4, dtype=dynjit.double, requires_grad=True)
    for flag, msg in flag_to_error.items():
        def test_fn(inp, flag=flag):
            if flag == "not_a_view_of_inp_base":
                inp = inp.view_as(inp)
            return ViewFn.apply(inp, flag)

        if msg is None:
            assert gradcheck(test_fn, inp, check_forward_ad=True)
        else:
            with pytest.raises(RuntimeError, match=msg):
                gradcheck(test_fn, inp, check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_inplace_checks
def test_custom_function_modifying_an_input_must_modify_its_tangent():
    class InplaceFn(Function):
        @staticmethod
        def forward(ctx, foo, flag):
            ctx.mark_dirty(foo)
            ctx.flag = flag
            foo.mul_(2)
            return foo

        @staticmethod
        def vjp(ctx, gO):
            return 2 * gO, None

        @staticmethod
        def jvp(ctx, gI, _):
            if ctx.flag:
                return 2 * gI
            gI.mul_(2)
            return gI

    inp = dynjit.rand(4, 4, dtype=dynjit.double, requires_grad=True)

    def test_fn(inp, flag):
        inp = inp.clone()
        return InplaceFn.apply(inp, flag)

    assert gradcheck(test_fn, (inp, False), check_forward_ad=True)
    with pytest.raises(RuntimeError, match="inplace custom Function is not modifying the forward mode gradients inplace"):
        gradcheck(test_fn, (inp, True), check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_mark_dirty_not_differentiable
def test_custom_function_mark_dirty_with_and_without_an_inplace_jvp():
    def get_custom_fn(jvp_err):
        class InplaceMul(Function):
            @staticmethod
            def forward(ctx, x):
                result = x.mul_(2)
                ctx.mark_dirty(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                pass

            @staticmethod
            def jvp(ctx, x_t):
                if jvp_err:
                    return x_t
                return x_t.mul_(2)
        return InplaceMul

    for requires_grad, jvp_err in product([True, False], repeat=2):
        InplaceMul = get_custom_fn(jvp_err)
        z = dynjit.tensor(1.0, requires_grad=requires_grad)
        x = z.clone()
        y = InplaceMul.apply(x)
        assert x is y
        assert dynjit.equal(x, z * 2)
        with fwAD.dual_level():
            x_tangent = dynjit.ones_like(x)
            x_dual = fwAD.make_dual(x, x_tangent)
            if jvp_err:
                with pytest.raises(RuntimeError, match="jvp function must modify the corresponding gradient inplace"):
                    InplaceMul.apply(x_dual)
            else:
                out_dual = InplaceMul.apply(x_dual)
                _, out_tangent = fwAD.unpack_dual(out_dual)
                assert out_dual is x_dual
                assert out_tangent is x_tangent


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_wrong_formula
def test_gradcheck_catches_a_wrong_custom_jvp():
    class UserFn(Function):
        @staticmethod
        def forward(ctx, foo, should_fail):
            ctx.should_fail = should_fail
            return foo * 2

        @staticmethod
        def vjp(ctx, gO):
            return 2 * gO, None

        @staticmethod
        def jvp(ctx, gI, _):
            return 3 * gI if ctx.should_fail else 2 * gI

    inp = dynjit.rand(10, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(UserFn.apply, (inp, False), check_forward_ad=True)
    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch for output 0"):
        gradcheck(UserFn.apply, (inp, True), check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_non_tensor_before_tensor_args
def test_custom_jvp_gets_none_for_non_tensor_arguments():
    seen = []

    class MyFn(Function):
        @staticmethod
        def forward(ctx, nt, x, nt2, y):
            return x * 2 + y * 3

        @staticmethod
        def jvp(ctx, nt, x_t, nt2, y_t):
            seen.append((nt, nt2))
            return x_t * 2 + y_t * 3

    x = dynjit.tensor(1.0, dtype=dynjit.double)
    t = dynjit.tensor(1.0, dtype=dynjit.double)
    y = dynjit.tensor(1.0, dtype=dynjit.double)
    with fwAD.dual_level():
        dual_x = fwAD.make_dual(x, t)
        out = MyFn.apply(1, dual_x, 1, y)
        assert fwAD.unpack_dual(out).tangent.item() == 2.0
    assert seen == [(None, None)]
    assert gradcheck(MyFn.apply, (1, x.requires_grad_(True), 1, y.requires_grad_(True)),
                     check_forward_ad=True, check_backward_ad=False, check_batched_grad=False)
    assert all(s == (None, None) for s in seen)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_forward_is_no_op
def test_custom_function_returning_an_input_needs_a_view_tangent():
    error_regex = r"A custom Function's forward is returning a view \(or an input as-is\)"
    return_lambdas = {
        "view_as": lambda x: x.view_as(x),
        "self": lambda x: x,
        "mul_by_2": lambda x: x * 2,
    }
    for k, fn in return_lambdas.items():
        class MyFn(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y, x

            @staticmethod
            def vjp(ctx, gO1, gO2):
                return gO1 + gO2, gO1

            @staticmethod
            def jvp(ctx, x_t, y_t, fn=fn):
                return x_t + y_t, fn(x_t)

        a = dynjit.tensor(1.0, dtype=dynjit.double, requires_grad=True)
        t = dynjit.tensor(1.0, dtype=dynjit.double)
        b = dynjit.tensor(1.0, dtype=dynjit.double, requires_grad=True)
        c = dynjit.tensor(1.0, dtype=dynjit.double)
        t2 = dynjit.tensor(1.0, dtype=dynjit.double)
        d = dynjit.tensor(1.0, dtype=dynjit.double)
        with fwAD.dual_level():
            a_dual = fwAD.make_dual(a, t)
            c_dual = fwAD.make_dual(c, t2)
            if k == "view_as":
                _, out2 = MyFn.apply(a_dual, b)
                assert fwAD.unpack_dual(out2).tangent._base is t
                _, out2 = MyFn.apply(c_dual, d)
                assert fwAD.unpack_dual(out2).tangent._base is t2
            else:
                with pytest.raises(RuntimeError, match=error_regex):
                    MyFn.apply(a_dual, b)
                with pytest.raises(RuntimeError, match=error_regex):
                    MyFn.apply(c_dual, d)
        if k == "view_as":
            assert gradcheck(MyFn.apply, (a, c), check_forward_ad=True)
        else:
            with pytest.raises(RuntimeError, match=error_regex):
                gradcheck(MyFn.apply, (a, c), check_forward_ad=True)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_forward_mode_non_differentiable
def test_custom_function_non_differentiable_outputs_get_no_tangent():
    class Func(Function):
        @staticmethod
        def forward(ctx, x, y):
            out = y.clone()
            ctx.mark_non_differentiable(out)
            return x.clone(), out

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            return x_tangent, None

    x, x_tangent, y = dynjit.tensor(2.0), dynjit.tensor(1.0), dynjit.tensor(3.0)
    with fwAD.dual_level():
        x_dual = fwAD.make_dual(x, x_tangent)
        _, out2_dual = Func.apply(x_dual, y)
        assert fwAD.unpack_dual(out2_dual).tangent is None

    y = dynjit.tensor(3)
    seen = []

    class IntInput(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            seen.append(y_tangent)
            return x_tangent, None

    with fwAD.dual_level():
        x_dual = fwAD.make_dual(x, x_tangent)
        _, out2_dual = IntInput.apply(x_dual, y)
        assert fwAD.unpack_dual(out2_dual).tangent is None
    assert seen == [None]

    class FuncWrong(Function):
        @staticmethod
        def forward(ctx, x, y):
            out = y.clone()
            ctx.mark_non_differentiable(out)
            return x.clone(), out

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            return x_tangent, x_tangent.clone()

    with fwAD.dual_level():         # y is still the integer tensor, as in the seed
        x_dual = fwAD.make_dual(x, x_tangent)
        with pytest.raises(RuntimeError, match="You should return None at that position instead"):
            FuncWrong.apply(x_dual, y)

    class WithANonTensorOutput(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), object(), x.clone()

        @staticmethod
        def jvp(ctx, x_tangent):
            return x_tangent, None, x_tangent

    with fwAD.dual_level():
        x_dual = fwAD.make_dual(x, x_tangent)
        out_dual, _, out2_dual = WithANonTensorOutput.apply(x_dual)
        assert dynjit.equal(fwAD.unpack_dual(out_dual).tangent, x_tangent)
        assert dynjit.equal(fwAD.unpack_dual(out2_dual).tangent, x_tangent)


def test_custom_function_jvp_errors_for_a_tangent_of_an_integral_output_or_a_wrong_count():
    class IntOutput(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_tangent, y_tangent):
            return x_tangent, x_tangent.clone()

    class TooFew(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        def jvp(ctx, x_tangent):
            return x_tangent

    with fwAD.dual_level():
        x_dual = fwAD.make_dual(dynjit.tensor(2.0), dynjit.tensor(1.0))
        with pytest.raises(RuntimeError, match="returned a gradient at position 1, but  the corresponding"):
            IntOutput.apply(x_dual, dynjit.tensor(3))
        with pytest.raises(RuntimeError, match=r"invalid number of forward gradients \(expected 2 but got 1\)"):
            TooFew.apply(x_dual)


def test_custom_function_without_jvp_is_a_clear_error():
    class NoJvp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(d)


def test_custom_function_forward_runs_without_forward_ad():
    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.inner = fwAD.unpack_dual(x.sin()).tangent
            return x.clone()

        @staticmethod
        def jvp(ctx, x_t):
            return x_t * 1

    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        Probe.apply(d)
    # (ctx is the output's grad_fn only when grad is recorded; check via a fresh call)
    seen = []

    class Probe2(Probe):
        @staticmethod
        def forward(ctx, x):
            seen.append(fwAD.unpack_dual(x.sin()).tangent)
            return x.clone()

    with fwAD.dual_level():
        Probe2.apply(fwAD.make_dual(dynjit.rand(2), dynjit.rand(2)))
    assert seen == [None]


# -- gradcheck(check_forward_ad=True) --------------------------------------------------

# the real-input part of 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_forward_ad; the
# whole seed test, complex inputs included, is ported in
# test_complex_grad.py::test_gradcheck_forward_ad_with_complex_inputs
def test_gradcheck_forward_ad_catches_a_wrong_tangent():
    def fn(x, y):
        return x + y, y

    def bad_fn(x, y):
        if fwAD._current_level >= 0:
            y_p, y_d = fwAD.unpack_dual(y)
            y = fwAD.make_dual(y_p, y_d * 1.1)
        return x + y, y

    err_msg = "Jacobian computed with forward mode mismatch for output 0 with respect to input 1"
    for fast_mode in [True, False]:
        x = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)
        y = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)
        assert gradcheck(fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
        with pytest.raises(RuntimeError, match=err_msg):
            gradcheck(bad_fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
        assert not gradcheck(bad_fn, (x, y), check_forward_ad=True, raise_exception=False)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_forward_ad_runs_with_no_requires_grad
def test_gradcheck_forward_ad_passes_inputs_that_do_not_require_grad():
    """gradcheck passes the function plain copies of its inputs: no requires_grad, whichever
    checks run (undefined tangents, batched tangents) and whatever the inputs required."""
    seen = []

    class UserFn(Function):
        @staticmethod
        def forward(ctx, x, y):
            if fwAD._current_level >= 0:
                seen.append((x.requires_grad, y.requires_grad))
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            return x_t, y_t

    x = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)
    y = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)
    for undefined, batched in [(False, False), (True, False), (True, True)]:
        assert gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=undefined,
                         check_backward_ad=False, check_batched_grad=False,
                         check_batched_forward_grad=batched)
    y = dynjit.rand(2, dtype=dynjit.double, requires_grad=False)
    assert gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=True,
                     check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=True)
    assert seen and all(s == (False, False) for s in seen)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_forward_ad_respects_requires_grad
def test_gradcheck_forward_ad_counts_jvp_calls_per_input_that_requires_grad():
    jvp_count = [0]

    class UserFn(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            jvp_count[0] += 1
            return x_t, y_t

    x = dynjit.rand(1, dtype=dynjit.double, requires_grad=True)
    y = dynjit.rand(1, dtype=dynjit.double, requires_grad=True)
    gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=False,
              check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=False)
    assert jvp_count[0] == 2
    jvp_count[0] = 0
    gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=True,
              check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=False)
    assert jvp_count[0] == 6    # 2, then a regular and an undefined zero tangent per input
    jvp_count[0] = 0
    gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=True,
              check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=True)
    assert jvp_count[0] == 12   # and per input a vmapped call and one per tangent of 2
    jvp_count[0] = 0
    # one input that does not require grad: it is never dual, and with it alone undefined
    # no input has a tangent, so the jvp is not called
    x = dynjit.rand(1, dtype=dynjit.double, requires_grad=True)
    y = dynjit.rand(1, dtype=dynjit.double, requires_grad=False)
    gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=True,
              check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=True)
    assert jvp_count[0] == 5


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_check_forward_or_backward_only
def test_gradcheck_checks_only_the_modes_asked_for():
    fwd_fail_err_msg = "FAIL FWD"
    bwd_fail_err_msg = "FAIL BWD"

    class UserFn(Function):
        @staticmethod
        def forward(ctx, foo, fwd_bad, bwd_bad):
            ctx.fwd_bad = fwd_bad
            ctx.bwd_bad = bwd_bad
            return foo * 2

        @staticmethod
        def vjp(ctx, gO):
            if ctx.bwd_bad:
                raise RuntimeError(bwd_fail_err_msg)
            return 2 * gO, None, None

        @staticmethod
        def jvp(ctx, gI, _1, _2):
            if ctx.fwd_bad:
                raise RuntimeError(fwd_fail_err_msg)
            return 2 * gI

    for fast_mode in (True, False):
        for check_forward_ad in (True, False):
            for check_backward_ad in (True, False):
                for fwd_bad in (True, False):
                    for bwd_bad in (True, False):
                        fwd_should_fail = fwd_bad and check_forward_ad
                        bwd_should_fail = bwd_bad and check_backward_ad

                        def run():
                            gradcheck(UserFn.apply, (x, fwd_bad, bwd_bad), check_forward_ad=check_forward_ad,
                                      check_backward_ad=check_backward_ad, check_undefined_grad=check_backward_ad,
                                      check_batched_grad=check_backward_ad, fast_mode=fast_mode)

                        x = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)
                        if not check_forward_ad and not check_backward_ad:
                            with pytest.raises(AssertionError, match="Expected at least one of"):
                                run()
                            continue
                        if not fwd_should_fail and not bwd_should_fail:
                            run()
                        else:
                            # backward is checked first
                            msg = bwd_fail_err_msg if bwd_should_fail else fwd_fail_err_msg
                            with pytest.raises(RuntimeError, match=msg):
                                run()


# -- function transforms ---------------------------------------------------------------

def test_func_jvp_against_finite_differences():
    x = dynjit.tensor([0.3, -0.8, 1.7], dtype=dynjit.double)
    v = dynjit.tensor([1.0, -2.0, 0.5], dtype=dynjit.double)

    def f(x):
        return (x.exp() * x.tanh()).cumsum(0) / (1 + x * x)
    value, tangent = jvp(f, (x,), (v,))
    assert dynjit.allclose(value, f(x))
    assert np.allclose(_np(tangent), _finite_difference_jvp(f, x, v), atol=1e-8)
    # the outputs carry no tangent after the call
    with fwAD.dual_level():
        pass
    assert value._fw_grads is None and tangent._fw_grads is None


def test_func_jvp_with_several_inputs_and_aux():
    a = dynjit.tensor([1.0, 2.0], dtype=dynjit.double)
    b = dynjit.tensor([3.0, -1.0], dtype=dynjit.double)

    def f(a, b):
        return a * b + a.sin(), "aux"
    (value, tangent, aux) = jvp(f, (a, b), (dynjit.ones(2, dtype=dynjit.double),
                                            dynjit.zeros(2, dtype=dynjit.double)), has_aux=True)
    assert aux == "aux"
    assert np.allclose(_np(tangent), _np(b) + np.cos(_np(a)))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(f, a, (a,))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(lambda a, b: a * b, (a, b), (a,))


def test_jvp_of_jvp_is_a_second_derivative():
    x = dynjit.tensor([0.2, 1.1], dtype=dynjit.double)
    ones = dynjit.ones(2, dtype=dynjit.double)

    def d_sin(x):
        return jvp(dynjit.sin, (x,), (ones,))[1]
    _, second = jvp(d_sin, (x,), (ones,))
    assert np.allclose(_np(second), -np.sin(_np(x)))


def test_jacfwd_matches_jacrev_and_finite_differences():
    x = dynjit.tensor([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], dtype=dynjit.double)

    def f(x):
        return (x @ x.t()).tanh().sum(1) * x.sum(1)
    jf = jacfwd(f)(x)
    jr = jacrev(f)(x)
    assert jf.shape == (2, 2, 3)
    assert np.allclose(_np(jf), _np(jr), atol=1e-12)
    for e in range(6):
        v = np.zeros(6)
        v[e] = 1
        col = _finite_difference_jvp(f, x, dynjit.from_numpy(v.reshape(2, 3)))
        assert np.allclose(_np(jf).reshape(2, 6)[:, e], col, atol=1e-7)


def test_jacfwd_argnums_and_has_aux():
    a = dynjit.tensor([1.0, 2.0], dtype=dynjit.double)
    b = dynjit.tensor([3.0], dtype=dynjit.double)

    def f(a, b):
        return a * b, a.sum()
    ja, jb = jacfwd(f, argnums=(0, 1), has_aux=True)(a, b)[0]
    assert np.allclose(_np(ja), np.diag([3.0, 3.0]))
    assert np.allclose(_np(jb), [[1.0], [2.0]])
    aux = jacfwd(f, argnums=1, has_aux=True)(a, b)[1]
    assert aux.item() == 3.0


def test_hessian_is_forward_over_reverse_and_matches_jacfwd_of_jacfwd():
    x = dynjit.tensor([0.3, -0.7, 1.1], dtype=dynjit.double)

    def f(x):
        return (x.sin() * x.exp()).sum() + (x * x).prod()
    h = hessian(f)(x)
    h2 = jacfwd(jacfwd(f))(x)
    assert np.allclose(_np(h), _np(h2), atol=1e-12)
    assert np.allclose(_np(h), _np(h).T, atol=1e-12)
    xs = _np(x)
    expected = np.diag(2 * np.cos(xs) * np.exp(xs))
    p = np.prod(xs * xs)
    for i in range(3):
        for j in range(3):
            expected[i, j] += (4 * p / (xs[i] * xs[j])) if i != j else 2 * p / (xs[i] * xs[i])
    assert np.allclose(_np(h), expected, atol=1e-10)


def test_linearize_gives_the_jvp_at_the_point():
    x = dynjit.tensor([0.5, 1.5], dtype=dynjit.double)
    out, jvp_fn = linearize(dynjit.sin, x)
    assert dynjit.allclose(out, x.sin())
    t = dynjit.tensor([2.0, -1.0], dtype=dynjit.double)
    assert np.allclose(_np(jvp_fn(t)), np.cos(_np(x)) * _np(t))


def test_forward_over_vjp():
    x = dynjit.tensor([0.4, -0.2], dtype=dynjit.double)
    v = dynjit.tensor([1.0, 3.0], dtype=dynjit.double)

    def grad_of_f(x):
        _, vjp_fn = vjp(lambda y: (y ** 3).sum(), x)
        return vjp_fn(dynjit.tensor(1.0, dtype=dynjit.double))[0]
    _, hv = jvp(grad_of_f, (x,), (v,))
    assert np.allclose(_np(hv), 6 * _np(x) * _np(v))


# -- explicit rules agree with the linearized backward formula -------------------------

@pytest.mark.parametrize("name", sorted(n for n, op in _registry.items()
                                        if op.jvp_fn is not None and op.backward_cls is not None))
def test_declared_rules_agree_with_the_linearized_backward(name):
    import os
    import sys
    from dynjit.autograd.forward_ad import _jvp_by_double_vjp
    from dynjit.ops.registry import registry
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ops"))
    from opinfo_samples import SAMPLES, materialize
    op = registry[name]
    checked = 0
    rng = np.random.default_rng(3)
    for sample in SAMPLES.get(name, ()):
        leaves, build = materialize(sample)
        args, kwargs = build(leaves)
        args = op.normalize(tuple(args), kwargs)
        tangents = []
        for a in args:
            if isinstance(a, dynjit.Tensor) and a.dtype is dynjit.float64:
                tangents.append(dynjit.from_numpy(rng.standard_normal(a.shape)))
            elif isinstance(a, dynjit.Tensor) and a.dtype is dynjit.complex128:
                tangents.append(dynjit.from_numpy(np.asarray(rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape))))
            elif isinstance(a, list) and a and all(isinstance(x, dynjit.Tensor) and x.dtype is dynjit.float64 for x in a):
                tangents.append([dynjit.from_numpy(rng.standard_normal(x.shape)) for x in a])
            else:
                tangents.append(None)
        if all(t is None for t in tangents):
            continue
        result = op(*args)
        if not isinstance(result, dynjit.Tensor) or result.dtype not in (dynjit.float64, dynjit.complex128) \
                or not np.isfinite(_np(result)).all():
            continue        # (the mean of nothing is nan, and so is its tangent)
        rule = op.jvp_fn(tangents, result, *args)
        general = _jvp_by_double_vjp(op, args, tangents, result)
        rule = rule.expand(result.shape) if rule is not None else dynjit.zeros_like(result)
        assert np.allclose(_np(rule), _np(general), atol=1e-10), f"{name}{sample}"
        checked += 1
    assert checked, f"no float64 sample for {name}"


# -- compiled == eager -----------------------------------------------------------------

def _f_for_compile(x):
    return (x.sin() * x).exp().sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_jvp_inside_a_compiled_function_matches_eager(backend):
    x = dynjit.tensor([0.1, 0.5, -0.3], dtype=dynjit.double)
    t = dynjit.tensor([1.0, -1.0, 2.0], dtype=dynjit.double)

    def g(x, t):
        return jvp(_f_for_compile, (x,), (t,))
    eager = g(x, t)
    compiled = dynjit.compile(g, backend=backend)(x, t)
    assert dynjit.allclose(compiled[0], eager[0]) and dynjit.allclose(compiled[1], eager[1])


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_jvp_of_a_compiled_function_matches_eager(backend):
    x = dynjit.tensor([0.1, 0.5, -0.3], dtype=dynjit.double)
    t = dynjit.tensor([1.0, -1.0, 2.0], dtype=dynjit.double)
    eager = jvp(_f_for_compile, (x,), (t,))
    compiled = jvp(dynjit.compile(_f_for_compile, backend=backend), (x,), (t,))
    assert dynjit.allclose(compiled[0], eager[0])
    assert dynjit.allclose(compiled[1], eager[1])


# -- ops without explicit rules: convolution and pooling (derived from their backward) -

def test_convolution_and_pooling_forward_ad_against_finite_differences():
    import dynjit.nn.functional as F
    x = dynjit.randn(1, 2, 5, 5, dtype=dynjit.double, requires_grad=True)
    w = dynjit.randn(3, 2, 3, 3, dtype=dynjit.double, requires_grad=True)
    b = dynjit.randn(3, dtype=dynjit.double, requires_grad=True)
    checks = [
        (lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2), (x, w, b)),
        (lambda x, w: F.conv_transpose2d(x, w.transpose(0, 1)), (x, w)),
        (lambda x: F.max_pool2d(x, 2), (x,)),
        (lambda x: F.avg_pool2d(x, 3, stride=1), (x,)),
        (lambda x: F.adaptive_avg_pool2d(x, 2), (x,)),
    ]
    for fn, inputs in checks:
        assert gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=False,
                         check_undefined_grad=False)


def test_nn_layers_forward_ad_against_finite_differences():
    import dynjit.nn.functional as F
    x = dynjit.randn(3, 4, dtype=dynjit.double, requires_grad=True)
    w = dynjit.randn(4, dtype=dynjit.double, requires_grad=True)
    target = dynjit.tensor([0, 3, 1])
    checks = [
        (lambda x, w: F.layer_norm(x, (4,), w), (x, w)),
        (lambda x: F.cross_entropy(x, target), (x,)),
        (lambda x, w: F.gelu(x * w).log_softmax(1), (x, w)),
    ]
    for fn, inputs in checks:
        assert gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=False,
                         check_undefined_grad=False)


# -- batches of tangents (vmap over forward AD) ----------------------------------------

# ports: 002_7f98adb56adba91b.txt TestAutogradForwardModeBatchedGrad.test_out_of_place_basic
def test_gradcheck_with_batched_forward_grad():
    a = dynjit.rand(4, 4, dtype=dynjit.double, requires_grad=True)
    b = dynjit.rand(4, 4, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(dynjit.sin, a, check_forward_ad=True, check_batched_grad=True,
                     check_batched_forward_grad=True)
    assert gradcheck(dynjit.add, (a, b), check_forward_ad=True, check_batched_grad=True,
                     check_batched_forward_grad=True)
    # an op whose tangent comes from the linearized backward formula
    assert gradcheck(lambda a, b: (a @ b).softmax(1), (a, b), check_forward_ad=True,
                     check_batched_forward_grad=True)


def test_batched_forward_grad_catches_a_tangent_that_depends_on_the_batch_layout():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, x_t):
            if type(x_t) is not dynjit.Tensor:      # only wrong for a batch of tangents
                return x_t * 3
            return x_t * 2

    x = dynjit.rand(3, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(Bad.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(GradcheckError, match="Batched forward grad mismatch for output 0"):
        gradcheck(Bad.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                  check_batched_forward_grad=True)


def test_vmap_over_jvp_matches_one_tangent_at_a_time():
    from dynjit.func import vmap
    x = dynjit.tensor([[0.5, 1.0], [2.0, -1.0]], dtype=dynjit.double)
    tangents = dynjit.randn(5, 2, 2, dtype=dynjit.double)

    def tangent_of(t):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, t)
            return fwAD.unpack_dual((d @ d).log_softmax(0) * d.sin()).tangent
    batched = vmap(tangent_of)(tangents)
    for k in range(5):
        assert np.allclose(_np(batched[k]), _np(tangent_of(tangents[k])), atol=1e-12)


def test_vmap_over_jvp_with_an_inplace_copy_into_a_view():
    """The values of the seed's TestAutogradForwardModeBatchedGrad.test_inplace_on_view_*
    (its layout-sharing identities are PyTorch's storage details)."""
    from dynjit.func import vmap
    input = dynjit.zeros(2, 2)
    tangent = dynjit.randn(3, 2, 2)
    for transposed in (False, True):
        base = dynjit.zeros(2, 2)
        view = base.transpose(0, 1) if transposed else base.view_as(base)

        def jvp_fn(t):
            with fwAD.dual_level():
                x = fwAD.make_dual(input, t)
                view.copy_(x)
                return (fwAD.unpack_dual(x)[1], fwAD.unpack_dual(view)[1],
                        fwAD.unpack_dual(view._base)[1])
        x_t, view_t, base_t = vmap(jvp_fn)(tangent)
        assert dynjit.equal(x_t, tangent)
        assert dynjit.equal(view_t, tangent)
        # the base's tangent holds the view's, seen through the view
        assert dynjit.equal(base_t, tangent.transpose(1, 2) if transposed else tangent)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_forward_ad_batched_grad
def test_gradcheck_batched_forward_grad_with_non_tensor_and_unused_inputs():
    x = dynjit.rand(2, dtype=dynjit.double, requires_grad=True)

    def fn1(a, b):
        return a.clone(), a + 1
    assert gradcheck(fn1, (x, 1), check_forward_ad=True, check_backward_ad=False,
                     check_batched_grad=False, check_undefined_grad=False,
                     check_batched_forward_grad=True)

    def fn2(a, c):
        return a.clone()
    assert gradcheck(fn2, (x, x.clone()), check_forward_ad=True, check_backward_ad=False,
                     check_batched_grad=False, check_undefined_grad=False,
                     check_batched_forward_grad=True)

    class Fn(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo * 2

        @staticmethod
        def vjp(ctx, gO):
            return gO * 2

        @staticmethod
        def jvp(ctx, gI):
            dynjit.randn_like(gI)
            return gI * 2

    msg = "vmap: We do not yet support calling random operations inside of vmap"
    with pytest.raises(RuntimeError, match=msg):
        gradcheck(Fn.apply, (x,), check_forward_ad=True, check_batched_forward_grad=True)


def test_vmap_refuses_random_ops_unless_asked_for_the_same_randomness():
    from dynjit.func import vmap
    x = dynjit.zeros(3, 2)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        vmap(lambda r: r + dynjit.rand(2))(x)
    dynjit.manual_seed(5)
    same = vmap(lambda r: r + dynjit.rand(2), randomness="same")(x)
    assert dynjit.equal(same[0], same[1]) and dynjit.equal(same[1], same[2])
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        vmap(lambda r: r + dynjit.rand(2), randomness="different")(x)


def test_non_differentiable_inplace_op_on_a_dual_tensor_zeroes_its_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.tensor([3.0, 5.0]), dynjit.tensor([1.0, 1.0]))
        y = d * 1
        y.floor_divide_(2)
        primal, tangent = fwAD.unpack_dual(y)
        assert primal.tolist() == [1.0, 2.0] and tangent.tolist() == [0.0, 0.0]


def test_inplace_view_ops_apply_to_the_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(dynjit.tensor([[1.0, 2.0, 3.0]]), dynjit.tensor([[4.0, 5.0, 6.0]]))
        y = d * 1
        y.t_()
        assert fwAD.unpack_dual(y).tangent.tolist() == [[4.0], [5.0], [6.0]]
        y.unsqueeze_(0)
        assert fwAD.unpack_dual(y).tangent.shape == (1, 3, 1)
        y.squeeze_()
        assert fwAD.unpack_dual(y).tangent.tolist() == [4.0, 5.0, 6.0]


def test_view_made_before_its_base_was_transposed_in_place():
    with fwAD.dual_level():
        base = dynjit.zeros(2, 3)
        row = base[0]                   # becomes column 0 after the transpose
        base.transpose_(0, 1)
        base.add_(fwAD.make_dual(dynjit.zeros(3, 2), dynjit.arange(6.0).reshape(3, 2)))
        assert fwAD.unpack_dual(row).tangent.tolist() == [0.0, 2.0, 4.0]


def test_inplace_into_a_view_of_an_unpacked_primal_stops_at_that_primal():
    foo = dynjit.zeros(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, dynjit.ones(2))
        primal = fwAD.unpack_dual(dual).primal     # not forward differentiable
        primal[0:1].add_(fwAD.make_dual(dynjit.zeros(1), dynjit.tensor([7.0])))
        assert fwAD.unpack_dual(primal).tangent.tolist() == [7.0, 0.0]
        assert fwAD.unpack_dual(foo).tangent is None
        assert fwAD.unpack_dual(dual).tangent.tolist() == [1.0, 1.0]


def test_a_dual_level_inside_func_jvp_and_func_jvp_inside_a_dual_level():
    x = dynjit.tensor([0.5, 1.5], dtype=dynjit.double)
    ones = dynjit.ones(2, dtype=dynjit.double)

    def f(x):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, ones)
            inner = fwAD.unpack_dual(d.exp()).tangent       # exp(x), itself differentiated
        return inner
    _, tangent = jvp(f, (x,), (ones,))
    assert np.allclose(_np(tangent), np.exp(_np(x)))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ones * 2)
        _, t = jvp(dynjit.sin, (d,), (ones,))
        assert np.allclose(_np(fwAD.unpack_dual(t).primal), np.cos(_np(x)))
        # the outer tangent flows through the inner derivative: d/dx cos(x) * 2
        assert np.allclose(_np(fwAD.unpack_dual(t).tangent), -np.sin(_np(x)) * 2)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_error
def test_custom_function_errors_for_missing_forward_backward_and_jvp():
    class BadFw(Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    class BadBw2(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def backward(ctx, foo):
            return foo

        @staticmethod
        def vjp(ctx, foo):
            return foo

    class BadJvp(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    inp = dynjit.rand(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        BadFw.apply(inp)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        BadBw.apply(inp).sum().backward()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        BadBw2.apply(inp).sum().backward()
    with pytest.raises(RuntimeError, match="must implement the jvp function"):
        with fwAD.dual_level():
            d = fwAD.make_dual(inp, dynjit.rand_like(inp))
            BadJvp.apply(d)


def test_a_long_level_keeps_no_record_of_dead_tensors():
    with fwAD.dual_level():
        level = fwAD._levels[-1]
        d = fwAD.make_dual(dynjit.rand(3), dynjit.rand(3))
        for _ in range(50):
            y = (d * 2).sin()
        del y
        gc.collect()
        assert len(level.holders) <= 3


def test_check_out_variant_refuses_dual_arguments_and_outputs():
    """(What the seed's test_out_variant asserts of torch.add(..., out=); dynjit's out= entry
    points call forward_ad.check_out_variant.)"""
    bar = dynjit.rand(2)
    fwAD.check_out_variant("add", (bar, bar), bar)          # no level: nothing to check
    with fwAD.dual_level():
        foo = fwAD.make_dual(dynjit.rand(2), dynjit.rand(2))
        fwAD.check_out_variant("add", (bar, bar), dynjit.rand(2))
        with pytest.raises(NotImplementedError, match="add_out that does not support it because it is an out= function"):
            fwAD.check_out_variant("add", (bar, bar), foo)
        with pytest.raises(NotImplementedError, match="out= function"):
            fwAD.check_out_variant("add", (foo, bar), bar)


def test_forward_over_reverse_through_convolution_and_pooling_backward_ops():
    """jvp of a gradient runs forward AD through the backward ops (convolution's adjoints,
    the pooling backward ops, col2im): compared with central differences of the gradient."""
    import dynjit.nn.functional as F
    from dynjit.func import grad
    rng = np.random.default_rng(7)
    x = dynjit.from_numpy(rng.standard_normal((1, 2, 6, 6)))
    w = dynjit.from_numpy(rng.standard_normal((3, 2, 3, 3)))
    v = dynjit.from_numpy(rng.standard_normal((3, 2, 3, 3)))

    def loss(w):
        y = F.conv2d(x, w, padding=1)
        y = F.max_pool2d(y, 2) + F.avg_pool2d(y, 2) + F.adaptive_avg_pool2d(y, 3)
        cols = F.unfold(y, 2)
        return (F.fold(cols, (3, 3), 2) ** 2).sum() + (y.tanh() ** 2).sum()
    g = grad(loss)
    _, hv = jvp(g, (w,), (v,))
    eps = 1e-6
    fd = (_np(g(dynjit.from_numpy(_np(w) + eps * _np(v))))
          - _np(g(dynjit.from_numpy(_np(w) - eps * _np(v))))) / (2 * eps)
    assert np.allclose(_np(hv), fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fn", [lambda x: x.sin() * x,                  # pointwise rules
                                lambda x: (x @ x.t()).sum(1),           # bilinear/linear rules
                                lambda x: x.cumprod(1).logsumexp(1)],   # linearized backward
                         ids=["pointwise", "matmul", "linearized"])
def test_reverse_over_forward_matches_finite_differences(fn):
    """backward through a tangent: the gradient of <v', J(x) v> with respect to x."""
    rng = np.random.default_rng(2)
    x0, v, w = (rng.standard_normal((2, 3)) for _ in range(3))

    def directional(x):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, dynjit.from_numpy(v))
            t = fwAD.unpack_dual(fn(d)).tangent
        return t
    x = dynjit.from_numpy(x0.copy()).requires_grad_(True)
    t = directional(x)
    weights = dynjit.from_numpy(rng.standard_normal(tuple(t.shape)))
    (t * weights).sum().backward()
    eps = 1e-6
    fd = np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        dx = np.zeros_like(x0)
        dx[idx] = eps
        plus = (_np(directional(dynjit.from_numpy(x0 + dx))) * _np(weights)).sum()
        minus = (_np(directional(dynjit.from_numpy(x0 - dx))) * _np(weights)).sum()
        fd[idx] = (plus - minus) / (2 * eps)
    assert np.allclose(_np(x.grad), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_vmap_of_a_compiled_function_matches_eager(backend):
    from dynjit.func import vmap
    xs = dynjit.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, -0.6]], dtype=dynjit.double)
    compiled = dynjit.compile(_f_for_compile, backend=backend)
    assert dynjit.allclose(vmap(compiled)(xs), vmap(_f_for_compile)(xs))
    assert dynjit.allclose(compiled(xs), _f_for_compile(xs))       # and compiled outside the mode
