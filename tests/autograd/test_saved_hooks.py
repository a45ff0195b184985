"""Saved tensors: what a node keeps (`_saved_<name>`, `_raw_saved_<name>`), how saved
outputs and inputs come back, and the pack/unpack hooks of `saved_tensors_hooks`,
`save_on_cpu` and `disable_saved_tensors_hooks`."""
import os
import pickle
import tempfile
import uuid
import warnings

import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function
from dynjit.autograd.graph import (disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks,
                                   saved_tensors_hooks_is_enabled)


def same(a, b):
    return a.shape == b.shape and np.allclose(a.detach().numpy(), b.detach().numpy())


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_no_unnecessary_unwrapping
def test_saved_inputs_are_the_tensors_themselves_and_outputs_come_back_new():
    a = dynjit.randn(5, requires_grad=True)
    a_orig = a.detach().clone()
    b = a * a
    c = a * b
    d = dynjit.exp(a)
    assert b.grad_fn._saved_self is a
    assert b.grad_fn._saved_other is a
    assert c.grad_fn._saved_self is a
    assert c.grad_fn._saved_other is b
    assert same(d.grad_fn._saved_result, d)
    assert d.grad_fn._saved_result is not d
    c.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        c.grad_fn._saved_self
    assert same(a, a_orig)
    with pytest.raises(AttributeError, match="saves no 'nothing'"):
        b.grad_fn._saved_nothing


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_variable_version_counter
def test_saved_output_shares_data_and_version_counter_with_the_output():
    a = dynjit.rand(2, requires_grad=True)
    b = dynjit.exp(a)
    unpacked = b.grad_fn._saved_result
    assert same(b, unpacked) and b._version == unpacked._version == 0
    with dynjit.no_grad():
        b += 1
    assert same(b, unpacked) and b._version == unpacked._version == 1


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_variable_saved_original_inplace_detach
def test_saved_input_detached_in_place_cannot_be_used():
    a = dynjit.tensor(1.0, requires_grad=True).clone()
    b = a.sin()                 # saves a
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached"):
        b.backward()
    a = dynjit.tensor(1.0, requires_grad=True).clone()
    b = a.exp()                 # saves only its result
    a.detach_()
    b.backward()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_variable_packing_unpacking_did_not_save_original_with_hooks
def test_hooks_registered_on_a_saved_output_keep_its_grad_fn():
    a = dynjit.randn(5, requires_grad=True)
    y = dynjit.exp(a)
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    assert same(y, y.grad_fn._saved_result)
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
    y.sum().backward()
    assert same(a.grad, y)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_variable_packing_unpacking_saved_original_with_default_hooks
def test_default_hooks_pack_each_saved_tensor_and_their_values_are_used():
    def pack(x):
        warnings.warn("pack")
        return x

    with saved_tensors_hooks(pack, lambda x: x):
        a = dynjit.ones(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a * a
        assert len(w) == 2          # self and other are both saved
    for pack, unpack, factor in [(lambda x: x, lambda x: x, 1), (lambda x: 2 * x, lambda x: x / 2, 1),
                                 (lambda x: 2 * x, lambda x: x, 2)]:
        with saved_tensors_hooks(pack, unpack):
            a = dynjit.randn(5, requires_grad=True)
            y = a * a
            assert same(y.grad_fn._saved_self, factor * a)
            assert same(y.grad_fn._saved_other, factor * a)
            y.sum().backward()
            assert same(a.grad, 2 * factor * a)
    a = dynjit.randn(5, requires_grad=True)       # outside: no hooks any more
    y = a * a
    assert y.grad_fn._saved_self is a
    assert same(y.grad_fn._saved_other, a)
    y.sum().backward()
    assert same(a.grad, 2 * a)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks
def test_default_hooks_on_a_saved_output():
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        a = dynjit.randn(5, requires_grad=True)
        y = dynjit.exp(a)
        assert same(y, y.grad_fn._saved_result)
        y.sum().backward()
        assert same(a.grad, y)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_setting_default_saved_variable_hooks_twice_should_not_fail
def test_hooks_contexts_nest():
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        with saved_tensors_hooks(lambda x: x, lambda x: x):
            pass


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_setting_default_saved_variable_hooks_twice_should_use_inner
def test_the_innermost_hooks_apply():
    with saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = dynjit.randn(5, requires_grad=True)
        with saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = dynjit.randn(5, requires_grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    assert same(a.grad, 2 * 5 * 5 * a)
    assert same(b.grad, 2 * 3 * 3 * b)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_disabling_saved_tensor_hooks
def test_disabled_hooks_refuse_new_hooks_and_cannot_disable_active_ones():
    with disable_saved_tensors_hooks("error message"):
        assert not saved_tensors_hooks_is_enabled()
        with pytest.raises(RuntimeError, match="error message"):
            with saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    assert saved_tensors_hooks_is_enabled()
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        with pytest.raises(RuntimeError, match="error message"):
            with disable_saved_tensors_hooks("error message"):
                pass
    assert saved_tensors_hooks_is_enabled()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_disabling_saved_tensor_hooks_nested
def test_nested_disabling_reports_the_innermost_message():
    with disable_saved_tensors_hooks("outer"):
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                with saved_tensors_hooks(lambda x: x, lambda x: x):
                    pass
        assert not saved_tensors_hooks_is_enabled()
        with pytest.raises(RuntimeError, match="outer"):
            with saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    assert saved_tensors_hooks_is_enabled()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_tensor_hooks_custom_error_propagaation
def test_errors_raised_by_hooks_reach_the_caller_unchanged():
    class CustomError(Exception):
        pass

    def raise_error(what):
        def hook(x):
            raise CustomError(what)
        return hook

    class ErrorOnPack(saved_tensors_hooks):
        def __init__(self):
            super().__init__(raise_error("pack"), lambda x: x)

    class ErrorOnUnpack(saved_tensors_hooks):
        def __init__(self):
            super().__init__(lambda x: x, raise_error("unpack"))

    a = dynjit.tensor(1.0, requires_grad=True)
    with ErrorOnPack():
        with pytest.raises(CustomError, match="pack"):
            dynjit.sin(a)
    with ErrorOnUnpack():
        out = dynjit.sin(a)
        with pytest.raises(CustomError, match="unpack"):
            out.backward()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saved_tensor_hooks_custom_function_intermediates
def test_custom_function_saving_an_intermediate_leaf_under_hooks():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x.exp().clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, grad_out):
            (intermediate,) = ctx.saved_tensors
            return grad_out * intermediate

    a = dynjit.tensor(1.0, requires_grad=True)
    with saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Exp.apply(a)
    out.backward()
    assert np.isclose(a.grad.item(), np.e)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_unpack_hooks_exec_count
def test_pack_runs_once_per_saved_tensor_and_unpack_once_per_use():
    counts = {"pack": 0, "unpack": 0}

    def counting(kind):
        def hook(x):
            counts[kind] += 1
            return x
        return hook

    x = dynjit.ones(4, requires_grad=True)
    y = dynjit.ones(4)
    with saved_tensors_hooks(counting("pack"), counting("unpack")):
        out = x * y                 # only y is needed (for x's gradient)
        assert counts == {"pack": 1, "unpack": 0}
        out.sum().backward()
        assert counts == {"pack": 1, "unpack": 1}


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_save_tensor_hook_version_counter_not_shared
def test_unpacked_tensor_has_the_version_counter_of_what_unpack_returned():
    a = dynjit.tensor(1.0, requires_grad=True)
    replacement = a.clone()
    seen = []

    class Sin(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)
            seen.append(a._version - before)
            return grad_output

    with saved_tensors_hooks(lambda x: replacement, lambda x: x):
        b = Sin.apply(a)
    b.backward()
    assert seen == [0]
    assert replacement.item() == 2.0


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_pack_hook_with_inplace_modification_should_fail
def test_a_pack_hook_may_not_modify_its_input_in_place():
    a = dynjit.randn(5, requires_grad=True)

    def inc(x):
        x += 1
        return x

    with saved_tensors_hooks(inc, lambda x: x):
        with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
            dynjit.exp(a)
    y = dynjit.exp(a)
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
        y.grad_fn._raw_saved_result.register_hooks(inc, lambda x: x)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_saving_variable_to_disk
def test_hooks_can_keep_saved_tensors_on_disk():
    with tempfile.TemporaryDirectory() as tmp_dir:
        def pack(x):
            name = os.path.join(tmp_dir, str(uuid.uuid4()))
            with open(name, "wb") as f:
                pickle.dump(x, f)
            return name

        def unpack(name):
            with open(name, "rb") as f:
                return pickle.load(f)

        with saved_tensors_hooks(pack, unpack):
            a = dynjit.ones(5, requires_grad=True)
            y = a * a
            assert same(a, y.grad_fn._saved_self)
            assert len(os.listdir(tmp_dir)) == 2
            y.sum().backward()
            assert same(a.grad, 2 * a)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_default_saved_variable_hooks_double_backward
def test_hooks_apply_to_tensors_saved_by_a_create_graph_backward():
    # the unpacked value keeps the saved tensor's place in the graph: only its value changes
    def grad_of_grad(hooks_forward, hooks_backward):
        a = dynjit.randn(5, requires_grad=True)
        with hooks_forward:
            s = (a ** 3).sum()
        with hooks_backward:
            (g,) = dynjit.autograd.grad(s, (a,), create_graph=True)
            g.sum().backward()
        return a, a.grad

    def none():
        return saved_tensors_hooks(lambda x: x, lambda x: x)

    def double():
        return saved_tensors_hooks(lambda x: 2 * x, lambda x: x)

    for fw, bw, factor in [(none, none, 1), (double, none, 2), (none, double, 4), (double, double, 8)]:
        a, grad = grad_of_grad(fw(), bw())
        assert same(grad, 6 * factor * a), (fw.__name__, bw.__name__)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_wrapped_number_saved_variable_hooks
def test_python_scalars_are_not_packed():
    def refuse(x):
        raise RuntimeError("this hook should not be called")

    with saved_tensors_hooks(refuse, refuse):
        a = dynjit.randn(5, requires_grad=True)
        (g,) = dynjit.autograd.grad((a * 3).sum(), (a,))
    assert same(g, dynjit.full((5,), 3.0))


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_graph_save_on_cpu
@pytest.mark.parametrize("pin_memory", [True, False])
@pytest.mark.parametrize("dtype", [dynjit.float32, dynjit.float64])
def test_save_on_cpu_keeps_copies_with_dtype_and_layout(pin_memory, dtype):
    """(There is no CUDA device: the seed's CPU cases.)"""
    with save_on_cpu(pin_memory):
        a = dynjit.randn(5, requires_grad=True, dtype=dtype)
        y = a * a
        saved = y.grad_fn._saved_self
        assert same(a, saved) and same(a, y.grad_fn._saved_other)
        assert saved.dtype is a.dtype and saved.layout == a.layout
        assert saved._data is not a._data            # a copy, not the tensor itself
        y.sum().backward()
        assert same(a.grad, 2 * a)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_graph_save_on_cpu
@pytest.mark.parametrize("pin_memory", [True, False])
def test_save_on_cpu_keeps_a_sparse_tensor_sparse(pin_memory):
    with save_on_cpu(pin_memory):
        # two entries at the same index: an uncoalesced sparse tensor
        a = dynjit.sparse_coo_tensor(dynjit.tensor([[1, 1]]).long(), dynjit.tensor([1.0, 1.0]),
                                     requires_grad=True)
        y = a * a
        for saved in (y.grad_fn._saved_self, y.grad_fn._saved_other):
            assert same(saved.to_dense(), a.to_dense())
            assert saved.dtype is a.dtype and saved.layout == a.layout == dynjit.sparse_coo
        assert y.is_sparse
        y.to_dense().sum().backward()
    # d/da sum(a * a) = 2a, with a's two entries at index 1 summed: [0, 4]
    assert a.grad.is_sparse
    assert a.grad.coalesce().to_dense().tolist() == (2 * a).coalesce().to_dense().tolist() == [0.0, 4.0]


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_cant_create_saved_tensors
def test_saved_tensor_objects_cannot_be_made_by_hand():
    with pytest.raises(RuntimeError, match="Trying to create a SavedTensor object from Python is forbidden"):
        dynjit.autograd.SavedTensor()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_saved_tensors
def test_custom_function_raw_saved_tensors():
    def make(save):
        class Identity(Function):
            @staticmethod
            def forward(ctx, x):
                if save:
                    ctx.save_for_backward(x, None)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return Identity

    a = dynjit.randn(5, requires_grad=True)
    y = make(True).apply(a)
    first, second = y.grad_fn.saved_tensors
    assert same(first, a) and second is None
    saved = y.grad_fn._raw_saved_tensors
    assert all(isinstance(s, dynjit.autograd.SavedTensor) for s in saved)
    with pytest.raises(RuntimeError, match="None is forbidden"):
        saved[1].register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        saved[0].register_hooks(lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        saved[0].register_hooks(1, 1)
    saved[0].register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(RuntimeError, match="already been set"):
        saved[0].register_hooks(lambda x: x, lambda x: x)
    y.sum().backward()
    del saved
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn._raw_saved_tensors
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors
    y = make(False).apply(a)
    assert y.grad_fn.saved_tensors == ()
    assert y.grad_fn._raw_saved_tensors == ()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_inplace_on_view_saved_output
def test_graph_with_a_saved_in_place_output_is_freed_without_the_cycle_collector():
    freed = []

    class NoteWhenFreed:
        def __call__(self, *args):
            pass

        def __del__(self):
            freed.append(1)

    def build():
        root = dynjit.randn(3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(NoteWhenFreed())
        view = copy.view(9)
        view.relu_()            # relu_ saves its output, a view of copy

    import gc
    gc.disable()
    try:
        build()
        assert freed == [1]
    finally:
        gc.enable()


# -- allow_mutation_on_saved_tensors -------------------------------------------

from dynjit.autograd.graph import allow_mutation_on_saved_tensors  # noqa: E402

MODIFIED = "variables needed for gradient computation has been modified by an inplace"


def _grad_after_changing_a_saved_tensor(a, change_view):
    b = a.clone()
    c = b.view_as(b)
    out = (b ** 2).sum()
    (c if change_view else b).sin_()
    out.sum().backward()
    return a.grad


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_basic
# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_views
@pytest.mark.parametrize("change_view", [False, True], ids=["tensor", "view"])
def test_mutation_of_a_saved_tensor_is_allowed_inside_the_block(change_view):
    a = dynjit.rand(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MODIFIED):
        _grad_after_changing_a_saved_tensor(a, change_view)
    a.grad = None
    with allow_mutation_on_saved_tensors() as ctx:
        da = _grad_after_changing_a_saved_tensor(a, change_view)
    assert same(da, 2 * a)
    assert len(ctx.cloned) == 0


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_save_base_and_modify_view
def test_saved_base_changed_through_a_view():
    with allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.rand(2, 3, requires_grad=True)
        b = a.clone()
        c = b[:1]
        out = b ** 2
        c *= 10
        out.sum().backward()
        assert len(ctx.cloned) == 0      # freed with the graph
    assert len(ctx.cloned) == 0
    assert same(a.grad, 2 * a)


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_save_view_modify_base
def test_saved_view_changed_through_its_base():
    with allow_mutation_on_saved_tensors():
        a = dynjit.rand(2, 3, requires_grad=True)
        b = a.clone()
        out = (b[:] ** 2).sum()
        b *= 2
        out.backward()
        assert same(a.grad, 2 * a)


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_double_backward
def test_double_backward_through_a_mutated_saved_tensor():
    with allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.rand(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        dynjit.autograd.grad(out, a, create_graph=True)
        (da,) = dynjit.autograd.grad(out, a, create_graph=True)
        (d2a,) = dynjit.autograd.grad(da.sum(), a)
    assert same(d2a, 2 * dynjit.ones_like(a))
    assert len(ctx.cloned) == 0          # leaving the block drops the clones


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_saved_but_not_anymore
def test_no_clone_once_the_graph_is_gone():
    with allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.randn(2, 3, requires_grad=True).clone()
        out = (a ** 2).sum()
        assert len(ctx.tid_to_weakhandle) == 1 and len(ctx.cloned) == 0
        out.backward()
        a.sin_()
        assert len(ctx.cloned) == 0
        out = (a ** 2).sum()
        a.sin_()
        assert len(ctx.cloned) == 1
        del out
        assert len(ctx.cloned) == 0


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_saved_same_tensor_many_times
def test_one_clone_per_tensor_and_version():
    with allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.randn(2, 3, requires_grad=True).clone()
        b = a ** 2
        c = a ** 2
        a.sin_()
        assert len(ctx.cloned) == 1
        del b, c
        assert len(ctx.cloned) == 0


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_saved_same_tensor_different_versions
def test_each_saved_version_gets_its_own_clone():
    with allow_mutation_on_saved_tensors() as ctx:
        a = dynjit.randn(2, 3, requires_grad=True).clone()
        b = a ** 2
        a.sin_()
        c = a ** 2
        a.sin_()
        assert len(ctx.cloned) == 2
        del b
        assert len(ctx.cloned) == 1
        del c
        assert len(ctx.cloned) == 0


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_backward_out_of_context
def test_backward_must_run_in_the_block_that_recorded_the_graph():
    msg = "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    with allow_mutation_on_saved_tensors():
        a = dynjit.rand(2, 3, requires_grad=True)
        out = (a ** 2).sum()
    with pytest.raises(AssertionError, match=msg):
        out.backward()
    with allow_mutation_on_saved_tensors():
        a = dynjit.rand(2, 3, requires_grad=True)
        out = (a ** 2).sum()
    with allow_mutation_on_saved_tensors():
        with pytest.raises(AssertionError, match=msg):
            out.backward()


# ports: 002_7f98adb56adba91b.txt TestAllowMutationOnSaved.test_disallow_nesting
def test_blocks_do_not_nest():
    with allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
    with allow_mutation_on_saved_tensors():     # usable again afterwards
        pass
