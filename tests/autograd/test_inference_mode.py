"""Inference mode: which tensors are inference tensors, what they allow, and how
views and in-place ops of normal tensors behave across the inference-mode boundary.

Where the seed runs add_ and transpose_, these tests run add_, transpose_ and mul_."""
from itertools import product

import numpy as np
import pytest

import dynjit

def TRANSPOSE_(t):
    return t.transpose_(0, 1)


# the seed's add_ and transpose_ (a value change and a metadata change), and mul_
INPLACE_OPS = [lambda t: t.add_(2), TRANSPOSE_, lambda t: t.mul_(3)]


def is_inference_tensor(t):
    """An inference tensor has no version counter: reading it raises."""
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        t._version
    return dynjit.is_inference(t)


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_context_manager
def test_inference_mode_nests_and_can_be_turned_off_inside():
    assert not dynjit.is_inference_mode_enabled()
    with dynjit.inference_mode():
        assert dynjit.is_inference_mode_enabled()
        assert not dynjit.is_grad_enabled()
        with dynjit.inference_mode(False):
            assert not dynjit.is_inference_mode_enabled()
            assert dynjit.is_grad_enabled()
        assert dynjit.is_inference_mode_enabled()
    assert not dynjit.is_inference_mode_enabled()
    assert dynjit.is_grad_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_decorator
def test_inference_mode_as_decorator_with_and_without_arguments():
    seen = []

    def square(x):
        seen.append(dynjit.is_inference_mode_enabled())
        return x * x

    for mode, by_keyword in product((True, False, None), (True, False)):
        if mode is None:      # decorating the function directly
            wrapped = dynjit.inference_mode(mode=square) if by_keyword else dynjit.inference_mode(square)
            mode = True
        else:
            wrapped = (dynjit.inference_mode(mode=mode) if by_keyword else dynjit.inference_mode(mode))(square)
        for requires_grad in (True, False):
            seen.clear()
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
            d = wrapped(c)
            assert seen == [mode]
            assert dynjit.is_inference(d) == mode
            assert d.requires_grad == (requires_grad and not mode)
    assert not dynjit.is_inference_mode_enabled()
    with pytest.raises(TypeError, match="inference_mode expects a bool"):
        dynjit.inference_mode("yes")


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_tensor_creation
def test_factories_in_inference_mode_make_inference_tensors():
    with dynjit.inference_mode():
        c = dynjit.ones(1, 2, 3)
        assert not c.requires_grad and is_inference_tensor(c)
        # inside inference mode an inference tensor may be flagged requires_grad
        t = dynjit.ones(1, 2, 3, requires_grad=True)
        assert t.requires_grad and is_inference_tensor(t)
        t = dynjit.ones(1, 2, 3).requires_grad_(False)
        assert not t.requires_grad and is_inference_tensor(t)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        c.requires_grad_()


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_existing_autograd_session
def test_in_place_change_in_inference_mode_still_invalidates_saved_normal_tensors():
    s = dynjit.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    out = a * a
    with dynjit.inference_mode():
        a.add_(2)
    assert not dynjit.is_inference(a)
    assert a._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(dynjit.ones_like(out))


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_functional_op
def test_functional_op_in_inference_mode_gives_an_inference_tensor_without_grad():
    with dynjit.inference_mode():
        for requires_grad in (True, False):
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
            out = c * c
            assert is_inference_tensor(out)
            assert not out.requires_grad and out.grad_fn is None


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_inplace_op
def test_in_place_op_on_inference_tensor_in_inference_mode_keeps_it_one():
    @dynjit.inference_mode()
    def check(fn):
        for requires_grad in (True, False):
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
            fn(c)
            assert is_inference_tensor(c)
            assert c.requires_grad == requires_grad

    for fn in INPLACE_OPS + [lambda t: t.copy_(dynjit.ones(1, 2, 3) * 5)]:
        check(fn)


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_inf_mode_view_op
def test_view_of_inference_tensor_in_inference_mode_is_an_inference_tensor():
    with dynjit.inference_mode():
        for requires_grad in (True, False):
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
            v = c.view(-1)
            assert is_inference_tensor(v)
            assert not v.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_functional_op
def test_functional_op_on_inference_tensor_outside_gives_a_normal_leaf():
    with dynjit.inference_mode():
        c = dynjit.ones(1, 2, 3)
    out = c * c
    assert not dynjit.is_inference(out)
    assert out._version == 0
    assert not out.requires_grad and out.is_leaf
    np.testing.assert_array_equal(out.numpy(), np.ones((1, 2, 3)))


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_inplace_op
def test_in_place_update_of_inference_tensor_outside_inference_mode_is_refused():
    for fn in INPLACE_OPS:
        with dynjit.inference_mode():
            c = dynjit.ones(1, 2, 3)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            fn(c)
        np.testing.assert_array_equal(c.numpy(), np.ones((1, 2, 3)))   # left untouched


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_view_op
def test_view_of_inference_tensor_outside_is_an_untracked_inference_tensor():
    for requires_grad in (True, False):
        with dynjit.inference_mode():
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.view(-1)
        assert is_inference_tensor(out)
        assert not out.requires_grad
        assert not out._is_view()
        assert out.is_leaf


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_normal_tensor_inplace_output_in_inference_mode
def test_in_place_on_normal_tensor_inside_inference_mode_keeps_it_normal():
    for fn in INPLACE_OPS:
        for requires_grad in (True, False):
            a = dynjit.ones(1, 2, 3, requires_grad=requires_grad).clone()
            with dynjit.inference_mode():
                fn(a)
                assert not dynjit.is_inference(a)
                assert a.requires_grad == requires_grad
                fn(a)
                assert not dynjit.is_inference(a)
                assert a.requires_grad == requires_grad
                assert a._version == 2
                v = a.view(-1)
                assert not dynjit.is_inference(v)
                assert v.requires_grad == requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_normal_tensor_inplace_output_in_normal_mode
def test_normal_tensor_changed_in_inference_mode_keeps_working_outside():
    for fn in INPLACE_OPS:
        for requires_grad in (True, False):
            s = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
            a = s.clone()
            with dynjit.inference_mode():
                fn(a)
                assert not dynjit.is_inference(a) and a.requires_grad == requires_grad
            fn(a)
            assert not dynjit.is_inference(a) and a.requires_grad == requires_grad
            fn(a)
            assert not dynjit.is_inference(a) and a.requires_grad == requires_grad
            v = a.view(-1)
            assert not dynjit.is_inference(v) and v.requires_grad == requires_grad
            if requires_grad and fn is not TRANSPOSE_:
                # the in-place ops recorded outside inference mode are differentiated
                v.sum().backward()
                assert s.grad is not None
            elif requires_grad:
                # the transpose_ made in inference mode is not recorded: the shapes the graph
                # holds no longer fit, which backward reports (as PyTorch does)
                with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got "
                                                       r"\[2, 1, 3\] but expected shape compatible with "
                                                       r"\[1, 2, 3\]"):
                    v.sum().backward()


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_normal_tensor_view_output_in_inference_mode
def test_view_of_normal_tensor_made_in_inference_mode_is_a_normal_view():
    for requires_grad in (True, False):
        a = dynjit.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with dynjit.inference_mode():
            out = a.view(-1)
            assert not dynjit.is_inference(out)
            assert out.requires_grad == requires_grad
            assert out._is_view()
            tmp = out.view(-1)
            assert not dynjit.is_inference(tmp)
            assert tmp.requires_grad == requires_grad
            assert tmp._is_view() and tmp.is_leaf
            assert dynjit.is_inference_mode_enabled()
            tmp.add_(2)
            assert not dynjit.is_inference(tmp)
            assert tmp.requires_grad == requires_grad
            assert a._version == tmp._version == 1     # views share the version counter


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_normal_tensor_view_output_in_normal_mode
def test_view_made_in_inference_mode_used_outside():
    for requires_grad in (True, False):
        a = dynjit.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with dynjit.inference_mode():
            out = a.view(-1)
            assert not dynjit.is_inference(out)
            assert out.requires_grad == requires_grad
            assert out._is_view() and out.is_leaf
        tmp = out * out
        assert not dynjit.is_inference(tmp)
        assert tmp.requires_grad == requires_grad
        if requires_grad:
            with pytest.raises(RuntimeError, match="A view was created in inference mode and is being "
                                                   "modified inplace"):
                out.add_(2)
        else:
            out.add_(2)
            np.testing.assert_array_equal(a.numpy(), np.full((1, 2, 3), 3.0))
        tmp = out.view(2, 3)
        assert not dynjit.is_inference(tmp)
        assert tmp.requires_grad == requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_functional_op
def test_functional_op_mixing_inference_and_normal_tensors():
    for requires_grad in (True, False):
        s = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
        with dynjit.inference_mode():
            c = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.add(s)          # add saves neither operand
        assert not dynjit.is_inference(out)
        assert out.requires_grad == requires_grad
        if requires_grad:
            out.backward(dynjit.ones_like(out))
            np.testing.assert_array_equal(c.grad.numpy(), np.ones((1, 2, 3)))
            # mul saves c for s's gradient: refused
            with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
                c * s
        else:
            assert not (c * s).requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_inplace_op
def test_in_place_op_with_an_inference_tensor_operand():
    for requires_grad in (True, False):
        s = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with dynjit.inference_mode():
            c = dynjit.full((1, 2, 3), 2.0)
        assert dynjit.is_inference(c)
        if requires_grad:
            with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
                a.mul_(c)
            # refused before writing: a and its history are unchanged
            np.testing.assert_array_equal(a.detach().numpy(), np.ones((1, 2, 3)))
            assert a._version == 0
            # an out= call is refused for the operand that requires grad first
            with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation, "
                                                   "but one of the arguments requires grad"):
                dynjit.mul(s, s, out=c)
        else:
            a.mul_(c)
            np.testing.assert_array_equal(a.numpy(), np.full((1, 2, 3), 2.0))
            with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
                c.mul_(s)
            # writing an inference tensor through out= is an in-place update too
            with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode "
                                                   "is not allowed"):
                dynjit.mul(s, s, out=c)
        np.testing.assert_array_equal(c.numpy(), np.full((1, 2, 3), 2.0))     # c never written


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_mix_inference_and_normal_tensor_view_op
def test_view_as_between_inference_and_normal_tensors():
    for requires_grad in (True, False):
        s = dynjit.ones(1, 2, 3, requires_grad=requires_grad)
        with dynjit.inference_mode():
            c = dynjit.ones(1, 2, 3)
        tmp1 = c.view_as(s)
        assert is_inference_tensor(tmp1) and not tmp1.requires_grad
        tmp2 = s.view_as(c)
        assert not dynjit.is_inference(tmp2)
        assert tmp2.requires_grad == requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_handle_direct_view_on_rebase
def test_in_place_on_an_inference_mode_view_of_a_grad_tensor_is_refused():
    for fn in INPLACE_OPS:
        for requires_grad in (True, False):
            a = dynjit.ones(1, 2, 3, requires_grad=requires_grad).clone()
            with dynjit.inference_mode():
                view = a.view_as(a)
            if requires_grad:
                with pytest.raises(RuntimeError, match="A view was created in inference mode and is "
                                                       "being modified inplace"):
                    fn(view)
            else:
                fn(view)
                assert a._version == 1


# ports: 002_7f98adb56adba91b.txt TestAutogradInferenceMode.test_inference_mode_handle_indirect_view_on_rebase
def test_inference_mode_view_cannot_get_a_grad_fn_after_its_base_changes():
    for fn in INPLACE_OPS:
        for requires_grad in (True, False):
            a = dynjit.ones(1, 2, 3, requires_grad=requires_grad).clone()
            with dynjit.inference_mode():
                view = a.view(-1)
            fn(a)
            if requires_grad:
                with pytest.raises(RuntimeError, match="A view was created in inference mode and its "
                                                       "base or another view "):
                    view.grad_fn
            else:
                assert view.grad_fn is None
