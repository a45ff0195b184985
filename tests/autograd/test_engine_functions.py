"""Custom autograd Functions as the engine runs them: gradients in and out,
undefined (None) gradients and their materialization, non-differentiable and
non-tensor outputs, outputs that are inputs, saved tensors, errors."""
import random
import warnings

import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function, InplaceFunction, gradcheck, gradgradcheck, once_differentiable
from dynjit.autograd import _functions as autograd_functions


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


def graph_desc(fn):
    """The graph below a node as text, as PyTorch's tests write it: Type(child, child, ...)."""
    if fn is None:
        return "None"
    children = ", ".join(graph_desc(child) for child, _ in fn.next_functions)
    return f"{type(fn).__name__}({children})"


def _run_three_input_function(cls):
    """x + 2*y + x*y through `cls`, backward with create_graph and a grad_output that
    requires grad: returns x and y with their .grad (which then have history)."""
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5, requires_grad=True)
    result = cls.apply(x, 2, y)
    go = dynjit.ones((), requires_grad=True)
    result.sum().backward(go, create_graph=True)
    with dynjit.no_grad():
        close(x.grad, y + 1)
        close(y.grad, x + 2)
    assert x.grad.grad_fn is not None
    assert y.grad.grad_fn is not None
    return x, y


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_function
def test_function_with_a_python_scalar_input_and_double_backward():
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, t1, scalar, t2):
            ctx.scalar = scalar
            ctx.save_for_backward(t1, t2)
            return t1 + scalar * t2 + t1 * t2

        @staticmethod
        def backward(ctx, g):
            v1, v2 = ctx.saved_tensors
            assert isinstance(v1, dynjit.Tensor) and isinstance(v2, dynjit.Tensor)
            assert isinstance(g, dynjit.Tensor)
            return g + g * v2, None, g * ctx.scalar + g * v1

    x, y = _run_three_input_function(MyFunction)
    # the gradients' graphs, node by node as PyTorch builds them: .grad is copied (with the
    # leaf's layout) from the backward's result, which reaches the 0-d grad_output through
    # the sum's expand and x and y through the saved tensors
    assert graph_desc(x.grad.grad_fn) == (
        "CopyBackwards(None, AddBackward0(ExpandBackward0(AccumulateGrad()), "
        "MulBackward0(ExpandBackward0(AccumulateGrad()), AccumulateGrad())))")
    assert graph_desc(y.grad.grad_fn) == (
        "CopyBackwards(None, AddBackward0(MulBackward0(ExpandBackward0(AccumulateGrad()), None), "
        "MulBackward0(ExpandBackward0(AccumulateGrad()), AccumulateGrad())))")
    # the gradients' history goes back to x and y through the Function's backward
    (gx_wrt_y,) = dynjit.autograd.grad(x.grad.sum(), y)
    close(gx_wrt_y, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_once_differentiable
def test_once_differentiable_backward_runs_without_grad_and_refuses_a_second_derivative():
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, t1, scalar, t2):
            ctx.scalar = scalar
            ctx.save_for_backward(t1, t2)
            return t1 + scalar * t2 + t1 * t2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            assert not dynjit.is_grad_enabled()
            t1, t2 = ctx.saved_tensors
            return g + g * t2, None, g * ctx.scalar + g * t1

    x, y = _run_three_input_function(MyFunction)
    # the backward's results pass through an Error node whose inputs are detached copies of
    # them (None for the number's gradient)
    assert graph_desc(x.grad.grad_fn) == "CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))"
    assert graph_desc(y.grad.grad_fn) == "CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        x.grad.sum().backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_function_returns_input
@pytest.mark.parametrize("shape", [(1,), ()])
def test_function_that_returns_its_input(shape):
    class Same(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    v = dynjit.ones(shape, requires_grad=True)
    Same.apply(v).backward()
    close(v.grad, np.full(shape, 2.0))
    with dynjit.no_grad():
        v.grad.zero_()
    Same.apply(v.clone()).backward()
    close(v.grad, np.full(shape, 2.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_function_returns_undefined_tensor
def test_backward_returning_none_gives_no_gradient():
    class NoGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None

    x = dynjit.ones(1, requires_grad=True)
    NoGrad.apply(x).backward()
    assert x.grad is None
    NoGrad.apply(x ** 2).backward()
    assert x.grad is None
    NoGrad.apply(x).sum().backward()
    assert x.grad is None
    assert dynjit.autograd.grad(NoGrad.apply(x), x, allow_unused=True)[0] is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_materialize_grads
def test_undefined_gradients_reach_backward_as_zeros_by_default():
    seen = []

    class Check(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            seen.append(g)
            return g

    x = dynjit.ones(1, requires_grad=True)
    autograd_functions.UndefinedGrad()(Check.apply(x)).backward()
    assert len(seen) == 1
    close(seen[0], np.zeros(1))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_dont_materialize_grads
def test_undefined_gradients_reach_backward_as_none_when_not_materialized():
    seen = []

    class Check(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x

        @staticmethod
        def backward(ctx, g):
            seen.append(g)
            return g

    x = dynjit.ones(1, requires_grad=True)
    autograd_functions.UndefinedGrad()(Check.apply(x)).backward()
    assert seen == [None]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_materialize_non_diff_grads
def test_non_differentiable_outputs_gradient_can_stay_none():
    seen = []

    class Func(Function):
        @staticmethod
        def forward(ctx, x):
            out0, out1 = x.clone(), x.clone()
            ctx.mark_non_differentiable(out1)
            ctx._materialize_non_diff_grads = False
            return out0, out1

        @staticmethod
        def backward(ctx, g0, g1):
            seen.append(g1)
            return g0

    a = dynjit.tensor(1.0, requires_grad=True)
    Func.apply(a)[0].backward()
    assert seen == [None]
    assert a.grad.item() == 1.0


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_legacy_function_deprecation_exception
def test_calling_a_function_instance_is_an_error():
    class Legacy(Function):
        def forward(self, x):
            return x

        def backward(self, g):
            return g

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        legacy = Legacy()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        legacy(dynjit.randn(3, 4))


class SimulateBackwardError(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        raise Exception("Simulate error on backward pass")


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_exception
def test_exception_in_backward_reaches_the_caller():
    t1 = dynjit.rand(3, 3, requires_grad=True)
    t2 = dynjit.rand(3, 3, requires_grad=True)
    tmp = (t1 + t2) * (t1 + t2)
    t3 = SimulateBackwardError.apply(tmp)
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        t3.sum().backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_non_tensor_inputs_outputs
def test_non_tensor_inputs_and_outputs():
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            ctx.scale = scale
            ctx.save_for_backward(t1, t2, t3)
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            assert len(grads) == 7
            for i in (0, 2, 3, 5):       # the non-tensor outputs get None
                assert grads[i] is None
            scale = ctx.scale
            v1, v2, v3 = ctx.saved_tensors
            return (grads[1] * scale + grads[4] * v2 * scale + grads[6],
                    grads[1] * v3 * scale + grads[4] * v1 * scale,
                    None,
                    grads[1] * v2 * scale + grads[4] * scale)

    t1 = dynjit.rand(10, dtype=dynjit.double, requires_grad=True)
    t2 = dynjit.rand(10, dtype=dynjit.double, requires_grad=True)
    t3 = dynjit.rand(10, dtype=dynjit.double)
    scale = random.randint(0, 10)
    res = MyFunction.apply(t1, t2, scale, t3)
    assert res[0] == scale
    with dynjit.no_grad():
        close(res[1], (t1 + t2 * t3) * scale)
        close(res[4], (t1 * t2 + t3) * scale)
        close(res[6], t1)
    assert res[2] is None and res[3] is True and res[5] == "bar"

    dynjit.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert t1.grad is not None and t2.grad is not None
    assert t3.grad is None

    def foo(t1, t2, t3):
        res = MyFunction.apply(t1, t2, scale, t3)
        return res[1], res[4], res[6]

    assert gradcheck(foo, (t1, t2, t3))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_no_tensors
def test_function_on_plain_python_values():
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @once_differentiable
        def backward(ctx, *args):
            return args[0], args[1], None, args[2]

    t1, t2, t3 = random.random(), random.random(), random.random()
    scale = random.randint(0, 10)
    res = MyFunction.apply(t1, t2, scale, t3)
    assert res == (scale, (t1 + t2 * t3) * scale, None, True, (t1 * t2 + t3) * scale, "bar", t1)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_invalid_gradients
def test_gradient_of_the_wrong_shape_is_an_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return dynjit.randn(10, dtype=dynjit.float)

    x = dynjit.randn(5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected shape"):
        Bad.apply(x).sum().backward()


class _Square(Function):
    @staticmethod
    def forward(x):
        return x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_setup_context_simple
def test_setup_context_saves_inputs():
    x = dynjit.randn([], requires_grad=True)
    (gx,) = dynjit.autograd.grad(_Square.apply(x), x)
    close(gx, 2 * x.detach())


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_setup_context_multi_output
def test_setup_context_sees_every_output():
    class SquareAndDouble(Function):
        @staticmethod
        def forward(x):
            return x ** 2, x.item() * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, two_x = output
            ctx.two_x = two_x

        @staticmethod
        @once_differentiable
        def backward(ctx, g, _):
            return g * ctx.two_x

    x = dynjit.randn([], requires_grad=True)
    y, _ = SquareAndDouble.apply(x)
    (gx,) = dynjit.autograd.grad(y, x)
    close(gx, 2 * x.detach())


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_function_setup_context_multi_input
@pytest.mark.parametrize("x_shape, shape, fwd_scale, bwd_scale", [((24,), (3, 8), 7, 11),
                                                                  ((2, 3, 4), (6, 4), -1, 2)])
def test_setup_context_with_non_tensor_inputs_matches_ctx_style(x_shape, shape, fwd_scale, bwd_scale):
    class Reshape(Function):
        @staticmethod
        def forward(x, shape, scale_forward, scale_backward):
            return x.reshape(shape) * scale_forward

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, shape, scale_forward, scale_backward = inputs
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    class ReshapeRef(Function):
        @staticmethod
        def forward(ctx, x, shape, scale_forward, scale_backward):
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape
            return x.reshape(shape) * scale_forward

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    x = dynjit.randn(*x_shape, requires_grad=True)
    y = Reshape.apply(x, shape, fwd_scale, bwd_scale).sum()
    (gx,) = dynjit.autograd.grad(y, x)
    y_ref = ReshapeRef.apply(x, shape, fwd_scale, bwd_scale).sum()
    (gx_ref,) = dynjit.autograd.grad(y_ref, x)
    close(y, y_ref)
    close(gx, gx_ref)
    close(gx, np.full(x_shape, float(bwd_scale)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_mark_non_differentiable
def test_non_differentiable_output_does_not_require_grad():
    class Positive(Function):
        @staticmethod
        def forward(ctx, x):
            out = x > 0
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return (g * 0).to(dynjit.double)

    x = dynjit.randn(5, 5, requires_grad=True)
    mask = Positive.apply(x)
    assert not mask.requires_grad
    x.masked_fill(mask, 0).sum().backward()
    close(x.grad, np.where(mask.numpy(), 0.0, 1.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_mark_non_differentiable_mixed
def test_non_differentiable_output_next_to_a_differentiable_one():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x + 1, x + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            assert (ga == 0).all()
            assert (gb == 1).all()
            return gb

    x = dynjit.randn(5, 5, requires_grad=True)
    a, b = Two.apply(x)
    assert not a.requires_grad
    assert b.requires_grad
    b.sum().backward()
    close(x.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_mark_non_differentiable_none
def test_backward_of_a_non_differentiable_function_may_return_none():
    class Nondiff(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.clone()
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return None

    x = dynjit.randn(5, 5, requires_grad=True)
    r = Nondiff.apply(x * x)
    (r * x).sum().backward()
    close(x.grad, r)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_return_duplicate
def test_the_same_output_returned_twice():
    class DoubleDuplicate(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            return out, out

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    def fn(x):
        a, b = DoubleDuplicate.apply(x)
        assert a is b
        return a + b

    x = dynjit.randn(5, 5, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(fn, [x])
    assert gradgradcheck(fn, [x])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_return_duplicate_inplace
def test_the_same_dirty_input_returned_twice():
    class DoubleInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    def inplace_fn(x):
        a, b = DoubleInplace.apply(x.clone())
        assert a is b
        return a + b

    x = dynjit.randn(5, 5, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(inplace_fn, [x])
    assert gradgradcheck(inplace_fn, [x])
    with pytest.raises(RuntimeError):
        DoubleInplace.apply(x)            # a leaf that requires grad cannot be modified in place
    with pytest.raises(RuntimeError):
        DoubleInplace.apply(x.clone()[0])  # a view modified in place must be the only output


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_return_leaf_inplace
def test_dirty_input_that_did_not_require_grad_gets_the_functions_history():
    class Inplace(InplaceFunction):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga + gb

    x = dynjit.randn(5, 5)
    y = dynjit.randn(5, 5, requires_grad=True)
    q, p = Inplace.apply(x, y)
    assert q is x
    assert type(q.grad_fn) is Inplace._backward_cls
    assert q.requires_grad
    q.sum().backward()
    close(y.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_save_none_for_backward
def test_saving_none_gives_none_back():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x, None)
            return x * x

        @staticmethod
        def backward(ctx, g):
            n1, x, n2 = ctx.saved_tensors
            assert n1 is None and n2 is None
            return 2 * x * g

    x = dynjit.randn(5, 5, requires_grad=True)
    Sq.apply(x).sum().backward()
    close(x.grad, 2 * x.detach())


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_too_many_grads
def test_extra_none_gradients_are_ignored():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    x = dynjit.randn(5, 5, requires_grad=True)
    Extra.apply(x).sum().backward()
    close(x.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_dep_nograd
def test_non_differentiable_output_used_as_a_second_input():
    class F1(Function):
        @staticmethod
        def forward(ctx, x):
            out = dynjit.randn(*x.shape)
            ctx.mark_non_differentiable(out)
            return x, out

        @staticmethod
        def backward(ctx, g, ignored):
            return g

    class F2(Function):
        @staticmethod
        def forward(ctx, x, ignored):
            return x

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = dynjit.randn(5, requires_grad=True)
    a, b = F1.apply(x)
    b = b + 1
    assert a.requires_grad
    assert not b.requires_grad
    c = F2.apply(a, b)
    c.backward(dynjit.ones(*c.shape))
    close(x.grad, np.ones(5))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_save_output_nr
def test_saved_output_keeps_its_output_number():
    x = dynjit.randn(10, requires_grad=True)

    class Halves(Function):
        @staticmethod
        def forward(ctx, x):
            return x[:5], x[5:]

        @staticmethod
        def backward(ctx, *grads):
            return dynjit.cat(grads)

    a, b = Halves.apply(x)
    assert b.output_nr == 1
    seen = []

    class Check(Function):
        @staticmethod
        def forward(ctx, b):
            ctx.save_for_backward(b)
            return b * 2

        @staticmethod
        def backward(ctx, g):
            (b,) = ctx.saved_tensors
            seen.append(b.output_nr)

    Check.apply(b).sum().backward()
    assert seen == [1]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_naughty_autograd_function_stashing_ctx
def test_ctx_kept_after_backward_cannot_give_saved_tensors():
    stash = []

    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            stash.append(ctx)
            return ctx.saved_tensors

    p = dynjit.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward(retain_graph=True)
    del loss
    stash[0].saved_tensors        # the graph was retained: still there
    p2 = dynjit.zeros(1, requires_grad=True)
    Id.apply(p2).backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        stash[1].saved_tensors


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_naughty_autograd_function_attribute_access
def test_function_classes_are_not_to_be_instantiated():
    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    assert isinstance(f, Id)
    x = dynjit.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        f(x)
    assert Id.apply(x).grad_fn.name() == "IdBackward"

    # the instance is no backward node: node attributes give an error, never a made-up answer
    t = dynjit.ones(1, requires_grad=True)
    t._backward_hooks = {}
    with pytest.raises(RuntimeError, match="Attribute '_register_hook_dict' is invalid"):
        f._register_hook_dict(t)
    with pytest.raises(RuntimeError, match="Attribute 'register_hook' is invalid"):
        f.register_hook(lambda x, y: None)
    with pytest.raises(RuntimeError, match="Attribute 'next_functions' is invalid"):
        f.next_functions
    with pytest.raises(RuntimeError, match="Attribute 'name' is invalid"):
        f.name()
    with pytest.raises(RuntimeError, match="underlying PyNode has already been deallocated"):
        f.metadata
    with pytest.raises(AttributeError):
        f.no_such_attribute


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_saved_variables_deprecated
def test_saved_variables_is_a_deprecated_alias():
    class Add(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b

        @staticmethod
        def backward(ctx, g):
            v1, v2 = ctx.saved_variables
            return g, g

    x = dynjit.randn(3, 3, requires_grad=True)
    y = dynjit.randn(3, 3, requires_grad=True)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        Add.apply(x, y).sum().backward()
    assert any("deprecated" in str(w.message) and "saved_variables" in str(w.message) for w in ws)
    close(x.grad, np.ones((3, 3)))
