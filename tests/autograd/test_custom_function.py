"""Custom autograd.Function: API errors, setup_context with defaults, views made in
forward, reference cycles through ctx and hooks, node classes, and backward passes
started from inside a backward (reentrant), with queued callbacks."""
import gc
import weakref
from contextlib import contextmanager

import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function, Variable, once_differentiable
from dynjit.autograd import function as function_module
from dynjit.autograd.graph import AccumulateGrad, Node


@contextmanager
def gc_disabled():
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_error
def test_missing_forward_missing_backward_and_both_backward_and_vjp():
    """(The seed's jvp case, forward-mode AD, is ported with the rest of the seed test in
    test_forward_ad.py::test_custom_function_errors_for_missing_forward_backward_and_jvp.)"""
    class NoForward(Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    class BackwardAndVjp(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def backward(ctx, foo):
            return foo

        @staticmethod
        def vjp(ctx, foo):
            return foo

    class OnlyVjp(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def vjp(ctx, foo):
            return foo * 3

    inp = dynjit.rand(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        NoForward.apply(inp)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        NoBackward.apply(inp).sum().backward()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        BackwardAndVjp.apply(inp).sum().backward()
    OnlyVjp.apply(inp).sum().backward()
    assert inp.grad.tolist() == [3.0]


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_local_inplace
def test_view_changed_in_place_inside_forward_keeps_the_function_as_grad_fn():
    class FirstThree(Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    base = dynjit.rand(10, requires_grad=True)
    for inplace in (False, True):
        out = FirstThree.apply(base, inplace)
        assert type(out.grad_fn).__name__ == "FirstThreeBackward"
        np.testing.assert_allclose(out.detach().numpy(), base.detach().numpy()[:3] + 2 * inplace)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_setup_context_when_forward_has_default_args
def test_setup_context_receives_forward_defaults_in_inputs():
    def make(kind):
        def forward(x, y=3):
            return dynjit.pow(x, y)

        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.y * dynjit.pow(x, ctx.y - 1), None

        if kind == "static":
            body = {"forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
                    "backward": staticmethod(backward)}
        else:
            body = {"forward": classmethod(lambda cls, x, y=3: forward(x, y)),
                    "setup_context": classmethod(lambda cls, ctx, i, o: setup_context(ctx, i, o)),
                    "backward": classmethod(lambda cls, ctx, g: backward(ctx, g))}
        return type(f"Pow_{kind}", (Function,), body)

    x = dynjit.tensor(2.0, requires_grad=True)
    for kind in ("static", "classmethod"):
        out = make(kind).apply(x)
        (g,) = dynjit.autograd.grad(out, x)
        assert out.item() == 8.0 and g.item() == 12.0


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_custom_function_cycle
def test_cycle_through_ctx_attributes_is_collected():
    class Clone(Function):
        @staticmethod
        def forward(ctx, x, metadata):
            x = x.clone()
            ctx.meta = metadata
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert np.isclose(x.item(), 3.14) and np.isclose(ctx.meta["foo"].item(), 3.14)
            return g * x, None

    def make(with_backward):
        a = dynjit.tensor(3.14, requires_grad=True)
        metadata = {}
        out = Clone.apply(a, metadata)
        metadata["foo"] = out           # out -> ctx -> metadata -> out
        if with_backward:
            out.sum().backward()
            assert np.isclose(a.grad.item(), 3.14)
        return weakref.ref(out)

    for with_backward in (False, True):
        with gc_disabled():
            ref = make(with_backward)
            assert ref() is not None
        gc.collect()
        assert ref() is None


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_hook_closure_cycle
@pytest.mark.parametrize("use_custom_function", [True, False])
@pytest.mark.parametrize("use_tensor_hook", [True, False])
def test_hook_closing_over_its_grad_fn_lives_as_long_as_the_graph(use_custom_function, use_tensor_hook):
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Marker:
        pass

    count = [0]

    def scope():
        a = dynjit.tensor(1.0, requires_grad=True)
        b = Identity.apply(a) if use_custom_function else a.clone()
        grad_fn_b = b.grad_fn
        obj = Marker()

        def hook(*args):
            grad_fn_b, obj     # the hook refers to its own node: a cycle
            count[0] += 1

        if use_tensor_hook:
            b.register_hook(hook)
        else:
            b.grad_fn.register_hook(hook)
        return b.clone(), weakref.ref(obj)

    with gc_disabled():
        out, ref = scope()
        out.backward(retain_graph=True)
        gc.collect()
        out.backward(retain_graph=True)
        assert count[0] == 2
        assert ref() is not None
        del out
        gc.collect()
        assert ref() is None


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_autograd_node_isinstance
def test_every_backward_node_is_a_node():
    """(In dynjit the node classes subclass Node, so the seed's check that Node is
    not in their MRO does not carry over.)"""
    a = dynjit.rand(3, 3, requires_grad=True)
    b = a.exp()
    assert isinstance(b.grad_fn, Node) and issubclass(type(b.grad_fn), Node)
    assert not isinstance(AccumulateGrad, Node) and issubclass(AccumulateGrad, Node)
    assert isinstance(b.grad_fn.next_functions[0][0], Node)
    assert issubclass(function_module._DelayedErrorNode, Node)
    assert not isinstance(None, Node) and not isinstance(1, Node) and not isinstance(Node, Node)
    assert issubclass(Node, Node)
    assert issubclass(function_module.BackwardCFunction, Node)
    seen = []

    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(isinstance(ctx, Node))
            return x

        @staticmethod
        def backward(ctx, x):
            seen.append(isinstance(ctx, Node))
            return x

    out = Identity.apply(a)
    assert isinstance(out.grad_fn, Node) and issubclass(type(out.grad_fn), Node)
    out.sum().backward()
    assert seen == [True, True]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_gc_in_destructor
def test_legacy_instance_whose_destructor_collects():
    class CollectOnDelete(Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

        def __del__(self):
            gc.collect()

    for _ in range(10):
        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            fn = CollectOnDelete()
        x = dynjit.randn(1, requires_grad=True)
        fn.forward(x).backward()
        del fn
        assert x.grad.tolist() == [1.0]


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_grad_mode_restored_reentrant
def test_grad_mode_is_restored_around_a_grad_call_inside_backward():
    modes = []

    class Clone(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, go):
            original = dynjit.is_grad_enabled()
            with dynjit.enable_grad():
                foo = dynjit.rand(*go.shape, requires_grad=True)
                (grad,) = dynjit.autograd.grad(foo ** 3, foo, grad_outputs=go)
                modes.append(dynjit.is_grad_enabled())
            modes.append(dynjit.is_grad_enabled() == original)
            modes.append(original)
            return grad

    inp = dynjit.rand(3, requires_grad=True)
    Clone.apply(inp).sum().backward()
    with pytest.warns(UserWarning, match="create_graph=True will create a reference cycle"):
        Clone.apply(inp).sum().backward(create_graph=True)
    assert modes == [True, True, False, True, True, True]


class _CountDown(Function):
    """Each backward runs a backward of its own (reentrant) until the value goes negative."""
    order = None

    @staticmethod
    def forward(ctx, x):
        with dynjit.enable_grad():
            ctx.x = Variable(x.detach(), requires_grad=True) - 1
        return ctx.x.detach()

    @staticmethod
    def backward(ctx, x):
        if _CountDown.order is not None:
            _CountDown.order.append("CountDown")
        if ctx.x < 0:
            return x
        with dynjit.enable_grad():
            _CountDown.apply(ctx.x).sum().backward()
        return x


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_deep_reentrant
def test_two_thousand_nested_backward_passes():
    _CountDown.order = []
    v = dynjit.tensor(2000.0, requires_grad=True)
    _CountDown.apply(v).sum().backward()
    assert len(_CountDown.order) == 2001
    _CountDown.order = None
    v = dynjit.tensor(200.0, requires_grad=True)
    _CountDown.apply(v).sum().backward()
    assert v.grad.item() == 1.0


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_priority
def test_reentrant_passes_finish_before_the_outer_pass_goes_on():
    order = []
    _CountDown.order = order

    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("Identity")
            return x

    try:
        a = Identity.apply(dynjit.tensor(6.0, requires_grad=True))
        b = _CountDown.apply(dynjit.tensor(9.0, requires_grad=True))
        (a * b).backward()
    finally:
        _CountDown.order = None
    assert len(order) == 11
    assert order.count("CountDown") == 10
    assert order[-1] == "Identity"


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_callback_adds_callback
def test_a_queued_callback_may_queue_another():
    called = [0]

    def final():
        called[0] += 1

    def adds_another():
        called[0] += 1
        Variable._execution_engine.queue_callback(final)

    class Identity(Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            Variable._execution_engine.queue_callback(adds_another)
            assert called[0] == 0          # not before the pass is done
            return grad

    Identity.apply(dynjit.rand(3, 3, requires_grad=True)).sum().backward()
    assert called[0] == 2
    with pytest.raises(RuntimeError, match="during the backward pass"):
        Variable._execution_engine.queue_callback(final)


def _reentrant_with_callbacks(depths):
    counter = {"inner": 0, "outer": 0}

    def count(which):
        def callback():
            counter[which] += 1
        return callback

    class Inner(Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        def backward(ctx, input):
            if 1 in depths:
                Variable._execution_engine.queue_callback(count("inner"))
            return input

    class Outer(Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        def backward(ctx, input):
            if 0 in depths:
                Variable._execution_engine.queue_callback(count("outer"))
            tmp = input.detach().requires_grad_()
            with dynjit.enable_grad():
                out = Inner.apply(tmp).sum()
            out.backward()
            return input

    t1 = dynjit.rand(3, 3, requires_grad=True)
    dynjit.autograd.backward([Outer.apply(t1).sum()])
    return counter


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_with_callbacks_depth_0
def test_callback_queued_by_the_outer_pass_runs_once():
    assert _reentrant_with_callbacks([0]) == {"outer": 1, "inner": 0}


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_with_callbacks_depth_1
def test_callback_queued_by_the_inner_pass_runs_once():
    assert _reentrant_with_callbacks([1]) == {"outer": 0, "inner": 1}


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_with_callbacks_both_depths
def test_callbacks_queued_by_both_passes_each_run_once():
    assert _reentrant_with_callbacks([0, 1]) == {"outer": 1, "inner": 1}


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_with_leaf_variable_hook
def test_leaf_hook_running_its_own_backward():
    handle = None
    param = dynjit.rand(10, requires_grad=True)

    def add_gradient_penalty(grad):
        handle.remove()
        old_grad = grad
        param.grad = None
        with dynjit.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            ((g * 2) + new_param).sum().backward()
        param.grad = old_grad
        return g.grad + grad

    handle = param.register_hook(add_gradient_penalty)
    (param * param).sum().backward()
    # the hook left .grad = 2p, and its result (2 + 2p) is then accumulated into it
    np.testing.assert_allclose(param.grad.numpy(), 4 * param.detach().numpy() + 2, rtol=1e-6)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_reentrant_with_non_leaf_variable_hook
def test_non_leaf_hook_running_its_own_backward():
    handle = None
    param = dynjit.rand(10, requires_grad=True)

    def manual_increase_gradient(grad):
        handle.remove()
        with dynjit.enable_grad():
            g = grad.detach().requires_grad_()
            ((g * 2) + 5).sum().backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    tmp.sum().backward()
    np.testing.assert_allclose(param.grad.numpy(), 6 * param.detach().numpy(), rtol=1e-6)


def test_custom_function_node_has_an_edge_per_tensor_argument_only():
    # as PyTorch: numbers and other non-tensor arguments of forward get no edge; a tensor
    # that needs no gradient gets the empty edge (None, 0)
    class Affine(Function):
        @staticmethod
        def forward(ctx, a, k, b, c):
            return a * k + b + c

        @staticmethod
        def backward(ctx, g):
            return g * 3, None, g, g

    a = dynjit.randn(2, requires_grad=True)
    b = dynjit.randn(2)
    c = dynjit.randn(2, requires_grad=True)
    out = Affine.apply(a, 3, b, c)
    edges = out.grad_fn.next_functions
    assert len(edges) == 3
    assert edges[0][0].variable is a and edges[1] == (None, 0) and edges[2][0].variable is c
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full(2, 3.0))
    np.testing.assert_array_equal(c.grad.numpy(), np.ones(2))
