"""autograd.grad: gradients returned instead of accumulated, the part of the
graph that runs for them, gradient edges as inputs, higher-order gradients,
reentrant backward and the helpers that look at the running backward."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function, gradcheck, gradgradcheck
from dynjit.autograd import graph as ag
from dynjit.autograd import _functions as autograd_functions


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_hessian_vector
def test_hessian_vector_product_through_backward_create_graph():
    x = dynjit.randn(2, 2, requires_grad=True)
    y = dynjit.randn(2, 2, requires_grad=True)
    z = x ** 2 + y * x + y ** 2
    z.backward(dynjit.ones(2, 2), create_graph=True)
    with dynjit.no_grad():
        gx, gy = 2 * x + y, x + 2 * y
    close(x.grad, gx)
    close(y.grad, gy)

    (2 * x.grad + y.grad).backward(dynjit.ones(2, 2))
    close(x.grad, gx + 5)
    close(y.grad, gy + 4)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad
def test_grad_of_gradients_leaves_grad_untouched():
    x = dynjit.randn(2, 2, requires_grad=True)
    y = dynjit.randn(2, 2, requires_grad=True)
    z = x ** 2 + y * x + y ** 2
    z.backward(dynjit.ones(2, 2), create_graph=True)
    with dynjit.no_grad():
        gx, gy = 2 * x + y, x + 2 * y
    close(x.grad, gx)
    close(y.grad, gy)

    grad_sum = 2 * x.grad + y.grad
    (x_hv,) = dynjit.autograd.grad(outputs=[grad_sum], grad_outputs=[dynjit.ones(2, 2)],
                                   inputs=[x], create_graph=True)
    close(x_hv, np.full((2, 2), 5.0))
    close(x.grad, gx)
    close(y.grad, gy)

    with pytest.raises(RuntimeError) as err:
        dynjit.autograd.grad(outputs=[grad_sum], grad_outputs=[dynjit.ones(2)], inputs=[x],
                             create_graph=True)
    assert str(err.value) == ("Mismatch in shape: grad_output[0] has a shape of dynjit.Size([2]) "
                              "and output[0] has a shape of dynjit.Size([2, 2]).")


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_nonleaf
def test_gradient_descent_on_a_non_leaf_with_create_graph():
    x_init = dynjit.randn(2, 2, requires_grad=True)
    x = x_init
    y = dynjit.randn(2, 2, requires_grad=True)
    go = dynjit.ones(2, 2)

    def fn(x):
        return x ** 2 + y * x + y ** 2

    for _ in range(5):
        (gx,) = dynjit.autograd.grad(fn(x), x, grad_outputs=go, create_graph=True)
        with dynjit.no_grad():
            close(gx, 2 * x + y)
        assert y.grad is None
        assert x._grad is None
        x = x + 0.05 * gx

    assert fn(x).sum().item() > fn(x_init).sum().item()
    x.backward(go)
    assert y.grad is not None
    assert x_init.grad is not None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_materialize_grads
def test_materialize_grads_turns_unused_into_zeros():
    x = dynjit.tensor(0.5, requires_grad=True)
    a = dynjit.tensor(1.0, requires_grad=True)
    y = x * a
    dydx = dynjit.autograd.grad(y, x, create_graph=True)
    (none,) = dynjit.autograd.grad(dydx, x, create_graph=True, allow_unused=True)
    assert none is None
    d2 = dynjit.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
    d3 = dynjit.autograd.grad(d2, x, materialize_grads=True)
    assert d2[0].item() == 0
    assert d3[0].item() == 0
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when"):
        dynjit.autograd.grad(y, x, allow_unused=False, materialize_grads=True)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_badcalls
def test_grad_needs_outputs_and_inputs_that_require_grad():
    x = dynjit.ones(1)
    y = x ** 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        dynjit.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        dynjit.autograd.grad(y, x)
    x = dynjit.ones(1, requires_grad=True)
    (g,) = dynjit.autograd.grad(x ** 2, x)
    close(g, [2.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_empty_inputs
def test_grad_needs_inputs():
    x = dynjit.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="grad requires non-empty inputs."):
        dynjit.autograd.grad(2 * x, [], grad_outputs=dynjit.tensor([1.0]))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_fn_badcalls
def test_calling_a_grad_fn_checks_the_argument_count():
    x = dynjit.ones(1, requires_grad=True)
    y = x ** 2
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn()
    (g,) = y.grad_fn(x.detach())
    close(g, [2.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_unreachable
def test_unreachable_inputs_get_none_or_an_error():
    x = dynjit.ones(1, requires_grad=True)
    y = dynjit.ones(1, requires_grad=True)
    z, w = x * 2, y * 2     # both leaves have an AccumulateGrad node now
    gx, gy = dynjit.autograd.grad(x * 2, [x, y], allow_unused=True)
    close(gx, [2.0])
    assert gy is None

    z = dynjit.ones(1, requires_grad=True)     # never used: no AccumulateGrad yet
    gx, gz = dynjit.autograd.grad(x * 2, [x, z], allow_unused=True)
    close(gx, [2.0])
    assert gz is None

    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        dynjit.autograd.grad(x * 2, [x, y], allow_unused=False)


class _MustNotRun(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("this node should not be executed")


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_unreachable_discovery
def test_nodes_that_lead_to_no_input_do_not_run():
    x = _MustNotRun.apply(dynjit.randn(1, requires_grad=True) * 2)
    y = dynjit.randn(1, requires_grad=True)
    (gy,) = dynjit.autograd.grad(x, (y,), allow_unused=True)
    assert gy is None

    x = _MustNotRun.apply(dynjit.randn(1, requires_grad=True) * 2)
    y = dynjit.randn(1, requires_grad=True)
    z = dynjit.randn(1, requires_grad=True)
    gy, gz = dynjit.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gy is None
    assert gz is not None

    x = _MustNotRun.apply(dynjit.randn(1, requires_grad=True) * 2)
    y = dynjit.randn(1, requires_grad=True)
    dynjit.autograd.backward(x, inputs=(y,))
    assert y.grad is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_to_node
def test_grad_to_a_gradient_edge_equals_grad_to_the_tensor():
    def check(out, inp):
        ref = dynjit.autograd.grad(out.sum(), inp, retain_graph=True)
        new = dynjit.autograd.grad(out.sum(), ag.get_gradient_edge(inp))
        close(ref[0], new[0])

    x = dynjit.rand(2, requires_grad=True)     # a leaf: its AccumulateGrad
    check(x.clone(), x)
    x = x.clone()                              # an op's node
    check(x.clone(), x)
    x = _Identity.apply(x)                     # a custom Function's node
    check(x.clone(), x)
    x = dynjit.var_mean(x)[1]                  # second output of a multi-output node
    check(x.clone(), x)


class _Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_to_node_inplace
def test_gradient_edge_taken_before_an_in_place_op_is_the_old_version():
    x = dynjit.rand(2, requires_grad=True).clone()
    edge = ag.get_gradient_edge(x)
    x *= 2
    g_old, g_new = dynjit.autograd.grad(x.sum(), (edge, x))
    close(g_old, 2 * np.ones(2))
    close(g_new, np.ones(2))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_to_node_multi
def test_grad_to_several_gradient_edges():
    x = dynjit.rand(2, requires_grad=True).clone()
    y = dynjit.rand(2, requires_grad=True).clone()
    out = x + y
    ref = dynjit.autograd.grad(out.sum(), (x, y), retain_graph=True)
    edges = (ag.GradientEdge(x.grad_fn, x.output_nr), ag.GradientEdge(y.grad_fn, y.output_nr))
    new = dynjit.autograd.grad(out.sum(), edges)
    for r, n in zip(ref, new):
        close(r, n)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_to_node_materialize
def test_materialize_grads_is_refused_for_gradient_edges():
    x = dynjit.rand(2, requires_grad=True).clone()
    edge_x = ag.GradientEdge(x.grad_fn, x.output_nr)
    y = dynjit.rand(2, requires_grad=True).clone()
    edge_y = ag.GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone()
    gx, gy = dynjit.autograd.grad(out.sum(), (edge_x, y), allow_unused=True, materialize_grads=False)
    close(gx, np.ones(2))
    assert gy is None
    gx, gy = dynjit.autograd.grad(out.sum(), (x, y), allow_unused=True, materialize_grads=True)
    close(gy, np.zeros(2))
    gx, gy = dynjit.autograd.grad(out.sum(), (x, edge_y), allow_unused=True)
    assert gy is None
    with pytest.raises(RuntimeError,
                       match="materialize_grads cannot be used when the given input is a GradientEdge"):
        dynjit.autograd.grad(out.sum(), (x, edge_y), allow_unused=True, materialize_grads=True)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_to_node
def test_backward_inputs_may_be_gradient_edges():
    x = dynjit.rand(2, requires_grad=True).clone()
    edge_x = ag.GradientEdge(x.grad_fn, x.output_nr)
    y = dynjit.rand(2, requires_grad=True).clone()
    edge_y = ag.GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone()
    dynjit.autograd.backward(out.sum(), inputs=(edge_x, y))
    dynjit.autograd.backward(out.sum(), inputs=(x, y))
    dynjit.autograd.backward(out.sum(), inputs=(x, edge_y))
    dynjit.autograd.backward(out.sum(), inputs=(edge_x, edge_y))
    # a tensor input makes the tensor retain its grad (as in PyTorch), so from the
    # second call on, every call that runs x's node adds to x.grad
    close(x.grad, 3 * np.ones(2))
    assert y.grad is None


def test_gradient_edge_of_a_tensor_without_grad_is_refused():
    with pytest.raises(RuntimeError, match="does not require gradients"):
        ag.get_gradient_edge(dynjit.ones(2))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_diagonal_expanded_v
def test_grad_of_diagonal_with_an_expanded_grad_output():
    value = dynjit.rand([]).item()
    v = dynjit.tensor(value, dtype=dynjit.double).expand(10)
    a = dynjit.rand(10, 10, dtype=dynjit.double, requires_grad=True)
    (result,) = dynjit.autograd.grad(a.diagonal(), a, v)
    close(result, np.eye(10) * value)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_select_expanded_v
def test_grad_of_select_with_an_expanded_grad_output():
    v = dynjit.rand(10).expand(10, 10)
    a = dynjit.rand(10, 10, 10, requires_grad=True)
    (result,) = dynjit.autograd.grad(a[0], a, v)
    expected = np.zeros((10, 10, 10), dtype=np.float32)
    expected[0] = v.numpy()
    close(result, expected)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_slice_expanded_v
def test_grad_of_slice_with_an_expanded_grad_output():
    v = dynjit.rand(10, 1).expand(2, 10, 10)
    a = dynjit.rand(10, 10, 10, requires_grad=True)
    (result,) = dynjit.autograd.grad(a[3:5], a, v)
    expected = np.zeros((10, 10, 10), dtype=np.float32)
    expected[3:5] = v.numpy()
    close(result, expected)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_select_sum
def test_select_then_sum_gradcheck():
    x = dynjit.randn(10, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(lambda x: x.select(0, 1).sum(), [x])
    assert gradgradcheck(lambda x: x.select(0, 1).sum(), [x])


class _Mul2Reentrant(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_will_engine_execute_node
def test_will_engine_execute_node_inside_hooks():
    def node_of(t):
        if t.requires_grad and t.grad_fn is None:
            return t.clone().grad_fn.next_functions[0][0]   # a leaf's AccumulateGrad
        return t.grad_fn

    a = dynjit.randn(2, 3, 4, requires_grad=True)
    a2 = dynjit.randn(2, 3, 4, requires_grad=True)
    b = a * a2
    b2 = b.cos()
    c = _Mul2Reentrant.apply(b)
    calls = [0]
    expect = {}

    def hook(_):
        calls[0] += 1
        for g in expect["yes"]:
            assert ag._will_engine_execute_node(g)
        for g in expect["no"]:
            assert not ag._will_engine_execute_node(g)

    expect["yes"] = [node_of(t) for t in (a, b, c)]
    expect["no"] = [node_of(t) for t in (a2, b2)]
    b.register_hook(hook)
    c.register_hook(hook)
    out = c.sum()
    dynjit.autograd.backward(out, inputs=(a, b), retain_graph=True)
    assert calls[0] == 2

    expect["yes"] = [node_of(t) for t in (a, a2, b, c)]
    expect["no"] = [node_of(t) for t in (b2,)]
    dynjit.autograd.backward(out, retain_graph=True)
    assert calls[0] == 4

    # under autograd.grad, asking about a leaf's AccumulateGrad is refused
    with pytest.raises(RuntimeError, match="are currently running autograd.grad()"):
        dynjit.autograd.grad(out, (a,))

    a = dynjit.randn(1, 2, 3, requires_grad=True) * 2
    b = a * 2

    def hook2(_):
        calls[0] += 1
        assert ag._will_engine_execute_node(b.grad_fn)

    b.register_hook(hook2)
    calls[0] = 0
    dynjit.autograd.grad(b.sum(), (a,))
    assert calls[0] == 1

    with pytest.raises(RuntimeError, match="during the backward pass"):
        ag._will_engine_execute_node(out.grad_fn)
    with pytest.raises(RuntimeError, match="expects an grad_fn"):
        ag._will_engine_execute_node(out)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_current_graph_task_id
def test_each_backward_has_a_new_graph_task_id():
    seen = [-1]

    def hook(_):
        seen[0] = ag._current_graph_task_id()

    t = dynjit.tensor(1.0, requires_grad=True).clone()
    t.register_hook(hook)
    t.backward(retain_graph=True)
    base = seen[0]
    t.backward(retain_graph=True)
    assert seen[0] - base == 1
    t.backward(retain_graph=True)
    assert seen[0] - base == 2
    assert ag._current_graph_task_id() == -1


def _names(nodes):
    return [n.name() for n in nodes]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_current_graph_task_execution_order
def test_predicted_execution_order_matches_the_real_one():
    predicted = [None]

    def predict(_):
        predicted[0] = ag._current_graph_task_execution_order()

    actual = []

    def log_hooks(*tensors):
        for t in tensors:
            t.register_hook(lambda g, t=t: actual.append(t))

    def nodes_of(tensors):
        out = []
        for t in tensors:
            if t.requires_grad and t.grad_fn is None:
                out.append(t.clone().grad_fn.next_functions[0][0])
            else:
                out.append(t.grad_fn)
        return out

    t = dynjit.tensor(1.0, requires_grad=True).clone().sin().exp()
    t.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        t.backward()
    assert _names(predicted[0]) == ["ExpBackward0", "SinBackward0", "CloneBackward0", "AccumulateGrad"]

    # a diamond with leaves: the prediction is the order the hooks actually see
    a = dynjit.tensor(2.0, requires_grad=True)
    b = dynjit.tensor(3.0, requires_grad=True)
    c = a * b
    s, k = c.sin(), c.cos()
    d = s + k
    out = d * a
    log_hooks(a, b, c, s, k, d, out)
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        out.backward()
    assert predicted[0] == nodes_of(actual)

    # the order is not sequence-number order: it follows the graph from the root
    a = dynjit.tensor(1.0, requires_grad=True)
    b = dynjit.tensor(2.0, requires_grad=True)
    c, d = b.sin(), a.cos()
    out = c * d
    actual.clear()
    log_hooks(a, b, c, d, out)
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        out.backward()
    assert _names(predicted[0]) == ["MulBackward0", "CosBackward0", "AccumulateGrad", "SinBackward0",
                                    "AccumulateGrad"]
    assert predicted[0] == nodes_of(actual)

    # an AccumulateGrad reached along two paths appears once, after both
    a = dynjit.tensor(1.0, requires_grad=True)
    b, c = a.sin(), a.cos()
    out = b * c
    actual.clear()
    log_hooks(a, b, c, out)
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        out.backward()
    assert _names(predicted[0]) == ["MulBackward0", "CosBackward0", "SinBackward0", "AccumulateGrad"]
    assert predicted[0] == nodes_of(actual)

    # a multiplication by a number has no edge for the number
    a = dynjit.tensor(1.0, requires_grad=True)
    b = a * 2
    out = b.sin()
    actual.clear()
    log_hooks(a, b, out)
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        out.backward()
    assert _names(predicted[0]) == ["SinBackward0", "MulBackward0", "AccumulateGrad"]
    assert predicted[0] == nodes_of(actual)

    # two inputs on the same path: no GraphRoot, each node once
    a = dynjit.tensor(1.0, requires_grad=True)
    b = a * 2
    out = b.sin()
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        dynjit.autograd.grad((out,), inputs=(a, b))
    assert _names(predicted[0]) == ["SinBackward0", "MulBackward0", "AccumulateGrad"]

    # with inputs only the part that leads to them is predicted
    a = dynjit.tensor(1.0, requires_grad=True)
    b = dynjit.tensor(1.0, requires_grad=True)
    c = a * b
    out = c.sin()
    actual.clear()
    log_hooks(a, b, c, out)
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        dynjit.autograd.grad((out,), inputs=(a,))
    assert _names(predicted[0]) == ["SinBackward0", "MulBackward0", "AccumulateGrad"]

    # several roots: the engine's own GraphRoot is not part of the predicted order
    a = dynjit.tensor(1.0, requires_grad=True)
    b = dynjit.tensor(2.0, requires_grad=True)
    c = a * b
    out, out2, out3 = c.sin(), c.cos(), c.cos()
    out.register_hook(predict)
    with dynjit.autograd.set_multithreading_enabled(False):
        dynjit.autograd.grad((out, out3, out2), inputs=(a,))
    assert _names(predicted[0]) == ["CosBackward0", "CosBackward0", "SinBackward0", "MulBackward0",
                                    "AccumulateGrad"]

    with pytest.raises(RuntimeError, match="should only be called during the backward pass"):
        ag._current_graph_task_execution_order()

    t = dynjit.tensor(1.0, requires_grad=True).clone().sin().exp()
    t.register_hook(predict)
    with pytest.raises(RuntimeError, match="expects the current backward to be executed with multithreading disabled"):
        t.backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_current_node
def test_current_node_is_the_node_whose_backward_runs_the_op():
    from dynjit.ops.dispatch import DispatchMode
    log = []

    class Record(DispatchMode):
        def __dispatch__(self, op, args, kwargs):
            node = ag._current_autograd_node()
            log.append((op.name, node.name() if node is not None else None))
            return op(*args, **kwargs)

    with Record():
        a = dynjit.rand(10, requires_grad=True)
        b = a.mul(2).div(3).sum()
        forward = list(log)
        del log[:]
        b.backward()
    # the seed's log, op by op, in dynjit's op names (aten.rand.default is rand, ...); two
    # differences: the implicit seed gradient is made by ones where PyTorch calls ones_like,
    # and the seed's two aten.detach calls inside AccumulateGrad have no counterpart
    # (dynjit's AccumulateGrad takes the gradient without dispatching an op)
    assert forward == [("rand", None), ("mul", None), ("div", None), ("sum", None)]
    assert log == [("ones", None), ("expand", "SumBackward0"), ("div", "DivBackward0"),
                   ("mul", "MulBackward0")]
    assert ag._current_autograd_node() is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_copy_slices_graph_task_updates
def test_in_place_add_of_a_poisoned_input_only_fails_when_its_gradient_is_needed():
    def f1(x, y):
        out = x.clone().view(-1)
        out += y
        return out

    def f2(x, y):
        out = x.clone().view(-1)
        b = out * 2
        out += y
        return out + b

    x = dynjit.rand(2, requires_grad=True)
    y = dynjit.rand(2, requires_grad=True)
    y_safe = autograd_functions.DelayedError("Boom!", 1)(y)

    for f in (f1, f2):
        with pytest.raises(RuntimeError, match="Boom!"):
            f(x, y_safe).sum().backward()
        with pytest.raises(RuntimeError, match="Boom!"):
            dynjit.autograd.grad(f(x, y_safe).sum(), y)
        dynjit.autograd.grad(f(x, y_safe).sum(), x)          # y's branch is not needed
        dynjit.autograd.grad(f(x, y_safe).sum(), y_safe)     # the error node is captured, not run
        dynjit.autograd.grad(f(x, y_safe).sum(), (x, y_safe))

    def f3(x, y):
        out = x.clone().view(-1)

        def hook(*args):
            raise AssertionError("the hook of the old view must not run")

        out.register_hook(hook)
        b = out + y
        out += y
        return out + b, b

    out, b = f3(x, y_safe)
    gb, gy = dynjit.autograd.grad(out.sum(), (b, y_safe))
    close(gb, np.ones(2))
    close(gy, 2 * np.ones(2))     # y reaches out twice: through b and through out += y


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_simple_reentrant
def test_backward_inside_a_custom_backward():
    y_data = dynjit.randn(2, 2)

    class Reenter(Function):
        @staticmethod
        def forward(ctx, x):
            with dynjit.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = y_data.detach().requires_grad_()
                ctx.output = ctx.x * ctx.y
            return ctx.output.detach()

        @staticmethod
        def backward(ctx, g):
            with dynjit.enable_grad():
                ctx.output.sum().backward()
            return ctx.x.grad * g

    x = dynjit.randn(2, 2, requires_grad=True)
    Reenter.apply(x).sum().backward()
    close(x.grad, y_data)


class SimulateBackwardError(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise Exception("Simulate error on backward pass")


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_reentrant_child_error
def test_error_in_a_reentrant_backward_reaches_the_caller():
    a = dynjit.rand(3, 3, requires_grad=True)
    c = a * a
    b = dynjit.rand(3, 3, requires_grad=True)
    root = SimulateBackwardError.apply(b * b).sum()

    class ReentrantFunc(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            root.backward()
            return g

    d = ReentrantFunc.apply(c)
    with pytest.raises(Exception, match="Simulate error"):
        d.sum().backward()
    assert ag._current_graph_task_id() == -1      # both tasks were unwound


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_autograd_repeated_grad_grad
def test_repeated_double_backward_gives_the_same_result():
    def prod2(x):
        return x.prod(dim=-1).prod(dim=-1)

    class Mult(Function):
        @staticmethod
        def forward(ctx, x):
            y = prod2(x)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return (g * y)[:, None, None] / x

    def check(x, y):
        (gy,) = dynjit.autograd.grad(y[0], x, create_graph=True)
        (ggy_1,) = dynjit.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
        (gy,) = dynjit.autograd.grad(y[0], x, create_graph=True)
        (ggy_2,) = dynjit.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
        close(ggy_1[0, 0, 1], ggy_2[0, 0, 1])

    x = dynjit.ones(2, 4, 4).requires_grad_()
    check(x, prod2(x))
    check(x, Mult.apply(x))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_custom_autograd_no_early_free
def test_saved_values_survive_a_create_graph_grad():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            y = x ** 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, _ = ctx.saved_tensors
            return g * 2 * x

    class Double2(Double):
        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 2 * y / x

    x = dynjit.tensor(2).double().requires_grad_()
    for fn in (Double.apply, Double2.apply):
        assert gradcheck(fn, x)
        assert gradgradcheck(fn, x)
        y = fn(x)
        dynjit.autograd.grad(y, x, create_graph=True)
        (g,) = dynjit.autograd.grad(y, x)
        close(g, 4.0)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_var_mean_differentiable
def test_var_mean_matches_var_and_mean_separately():
    dims = [2, 4]
    x1 = dynjit.randn(3, 4, 5, 6, 2, 3, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    var1, mean1 = dynjit.var_mean(x1, dim=dims, keepdim=False)
    var2, mean2 = x2.var(dim=dims, keepdim=False), x2.mean(dim=dims, keepdim=False)
    go = dynjit.randn(3, 4, 6, 3)
    r1 = var1 * var1 * mean1 * mean1
    r2 = var2 * var2 * mean2 * mean2
    close(r1, r2, rtol=1e-2, atol=1e-6)
    dynjit.autograd.backward(r1, go)
    dynjit.autograd.backward(r2, go)
    close(x1.grad, x2.grad, rtol=1e-2, atol=1e-5)
