"""The autograd engine's backward pass: accumulation into .grad, several
roots, `inputs=`, retain_graph, and graphs deep enough that recursion would
overflow the stack."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_accumulate_grad
@pytest.mark.parametrize("create_graph", [False, True])
def test_second_backward_adds_into_grad_in_place_unless_create_graph(create_graph):
    x = dynjit.randn(5, 5, requires_grad=True)
    y = x + 2
    y.backward(dynjit.ones(5, 5), retain_graph=True)
    first = x.grad
    snapshot = first.clone()
    y.backward(dynjit.ones(5, 5), create_graph=create_graph)
    if create_graph:
        # a new tensor is made (so the history can be kept); the old one is untouched
        close(first, snapshot)
        close(x.grad, snapshot * 2)
    else:
        close(first, snapshot * 2)
        assert x.grad is first


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_accumulate_grad_tensor_reference
@pytest.mark.parametrize("create_graph", [False, True])
def test_existing_grad_object_is_kept_only_without_create_graph(create_graph):
    p = dynjit.tensor([1.5, 1.5]).requires_grad_()
    p.grad = dynjit.tensor([1.5, 1.5])
    before = p.grad
    p.backward(dynjit.tensor([1.5, 1.5]), create_graph=create_graph)
    assert (p.grad is before) == (not create_graph)
    close(p.grad, [3.0, 3.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_accumulate_grad_with_zero_numel_grad
def test_broadcast_against_empty_tensor_gives_zero_grads():
    a = dynjit.rand(4, 0, requires_grad=True)
    b = dynjit.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    close(b.grad, np.zeros((4, 1)))
    close(a.grad, np.zeros((4, 0)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward
def test_backward_of_a_rational_expression():
    v = dynjit.randn(5, 5, requires_grad=True)
    x = dynjit.randn(5, 5, requires_grad=True)
    y = (dynjit.rand(5, 5) + 0.1).requires_grad_(True)
    z = dynjit.randn(5, 5, requires_grad=True)
    go = dynjit.randn(5, 5)

    v.backward(go)
    close(v.grad, go)

    a = x + (y * z) + 4 * z ** 2 * x / y
    a.backward(go)
    with dynjit.no_grad():
        close(x.grad, (4 * z ** 2 / y + 1) * go, rtol=1e-4)
        close(y.grad, (z - 4 * x * z ** 2 / y ** 2) * go, rtol=1e-4, atol=1e-4)
        close(z.grad, (8 * x * z / y + y) * go, rtol=1e-4, atol=1e-4)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_multi_backward
def test_backward_from_two_roots_sharing_a_subgraph():
    x, y, q, a, b = (dynjit.randn(5, 5, requires_grad=True) for _ in range(5))
    q2 = q * 2
    z = x + y + q2
    c = a * b + q2
    gz, gc = dynjit.randn(5, 5), dynjit.randn(5, 5)
    dynjit.autograd.backward([z, c], [gz, gc])
    close(x.grad, gz)
    close(y.grad, gz)
    close(a.grad, gc * b.detach())
    close(b.grad, gc * a.detach())
    close(q.grad, (gc + gz) * 2)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_multi_backward_no_grad
def test_backward_rejects_a_root_that_does_not_require_grad():
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5)
    z, q = x + y, y * 2
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        dynjit.autograd.backward([z, q], [dynjit.ones(5, 5), dynjit.ones(5, 5)])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_duplicate_backward_root
def test_the_same_root_twice_sums_its_gradients():
    a = dynjit.randn(5, 5, requires_grad=True)
    b = dynjit.randn(5, 5, requires_grad=True)
    x = a * b
    go = dynjit.randn(5, 5)
    dynjit.autograd.backward([x, x], [go, go])
    close(a.grad, b.detach() * go * 2)
    close(b.grad, a.detach() * go * 2)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_no_grad
def test_backward_of_a_non_scalar_without_gradient_raises():
    a = dynjit.randn(5, 5, requires_grad=True)
    b = a + 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        dynjit.autograd.backward([b], [None])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_dependent_backward
def test_roots_that_depend_on_each_other():
    x = dynjit.randn(10, requires_grad=True)
    y = x ** 2
    z = y ** 3
    gy, gz = dynjit.randn(10), dynjit.randn(10)
    dynjit.autograd.backward([y, z], [gy, gz])
    with dynjit.no_grad():
        close(x.grad, 2 * x * gy + 6 * x ** 5 * gz, rtol=1e-4, atol=1e-4)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_with_inputs
def test_backward_inputs_restricts_accumulation():
    x = dynjit.randn(2, 2, dtype=dynjit.double, requires_grad=True)
    y = dynjit.randn(2, 2, dtype=dynjit.double, requires_grad=True)

    def fn():
        return x ** 2 + y * x + y ** 2

    go = dynjit.ones(2, 2, dtype=dynjit.double)
    with dynjit.no_grad():
        gx, gy = 2 * x + y, x + 2 * y

    @dynjit.no_grad()
    def reset():
        x.grad.zero_()
        y.grad.zero_()

    dynjit.autograd.backward(fn(), go, inputs=[x, y])
    close(x.grad, gx)
    close(y.grad, gy)

    reset()
    dynjit.autograd.backward(fn(), go, inputs=[x])
    close(x.grad, gx)
    close(y.grad, np.zeros((2, 2)))

    reset()
    dynjit.autograd.backward(fn(), go, inputs=[y])
    close(y.grad, gy)
    close(x.grad, np.zeros((2, 2)))

    reset()
    dynjit.autograd.backward(fn(), go, inputs=y)   # a single tensor is accepted too
    close(y.grad, gy)
    close(x.grad, np.zeros((2, 2)))

    with pytest.raises(RuntimeError, match="cannot be empty"):
        dynjit.autograd.backward(fn(), go, inputs=[])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_with_nonleaf_inputs
def test_backward_inputs_may_be_non_leaf():
    x = dynjit.randn(2, 2, dtype=dynjit.double, requires_grad=True)
    x_nonleaf = x * 1
    y = dynjit.randn(2, 2, dtype=dynjit.double, requires_grad=True)
    z = dynjit.randn(2, 2, dtype=dynjit.double, requires_grad=True)
    out = x_nonleaf ** 2 + y * x_nonleaf + y ** 2
    out.backward(dynjit.ones(2, 2, dtype=dynjit.double), create_graph=True,
                 inputs=[x, y, x_nonleaf])
    with dynjit.no_grad():
        close(y.grad, x + 2 * y)
        close(x.grad, 2 * x + y)
        close(x_nonleaf.grad, 2 * x_nonleaf + y)

    # z is not part of the graph: nothing is accumulated into it
    out.backward(dynjit.ones(2, 2, dtype=dynjit.double), create_graph=True, inputs=[z])
    assert z.grad is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_sharded_grad
def test_gradients_of_intermediates_computed_in_shards():
    leaves = [dynjit.zeros(5, 5, requires_grad=True) for _ in range(10)]
    inter = [leaf * i + leaf * leaf for i, leaf in enumerate(leaves)]
    loss = sum(v * i for i, v in enumerate(inter)).sum()
    d_inter = []
    for start in range(0, len(inter), 2):
        d_inter.extend(dynjit.autograd.grad(loss, inter[start:start + 2], retain_graph=True))
    dynjit.autograd.backward(inter, d_inter)
    for i, leaf in enumerate(leaves):
        close(leaf.grad, i * i * (1 + leaf.detach()))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_twice_with_saved_values
def test_second_backward_through_freed_saved_values_raises():
    b = dynjit.randn(3, requires_grad=True, dtype=dynjit.double)
    c = dynjit.zeros(3, dtype=dynjit.double)
    c[[1, 2]] = b[[1, 1]]
    go = dynjit.tensor([1, 1, 1], dtype=dynjit.double)
    c.backward(go)
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(go)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_twice_retained_graph_with_saved_values, TestAutograd.test_backward_twice_retained_graph_without_saved_values
def test_second_backward_works_when_graph_was_retained():
    b = dynjit.randn(3, requires_grad=True, dtype=dynjit.double)
    c = dynjit.zeros(3, dtype=dynjit.double)
    c[[1, 2]] = b[[1, 1]]
    go = dynjit.tensor([1, 1, 1], dtype=dynjit.double)
    c.backward(go, retain_graph=True)
    c.backward(go)
    close(b.grad, [0.0, 4.0, 0.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_twice_without_saved_values
def test_second_backward_works_when_nothing_was_saved():
    b = dynjit.randn(3, requires_grad=True, dtype=dynjit.double)
    c = b + 1
    go = dynjit.tensor([1, 1, 1], dtype=dynjit.double)
    c.backward(go)
    c.backward(go)
    close(b.grad, [2.0, 2.0, 2.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_create_graph_warns
def test_backward_with_create_graph_warns_but_grad_does_not():
    b = dynjit.randn(3, requires_grad=True, dtype=dynjit.double)
    c = b * b
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
        c.backward(dynjit.ones_like(c), create_graph=True)
    b.grad = None
    import warnings
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        dynjit.autograd.grad(c, b, dynjit.ones_like(c), create_graph=True)
    assert not any("Using backward() with create_graph=True" in str(w.message) for w in ws)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_backward_copy
def test_a_gradient_used_three_times_is_not_summed_in_place():
    x = dynjit.ones(5, 5, requires_grad=True)
    y = dynjit.ones(5, 5, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    add2 = (a + b) + c
    for _ in range(4):
        a, b, c = a * 2, b * 2, c * 2
    out = add2 + (a + b + c)
    out.backward(dynjit.ones(5, 5))
    close(x.grad, np.full((5, 5), 34.0))
    close(y.grad, np.full((5, 5), 17.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_isolated_node
def test_integer_branch_does_not_block_backward():
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5, requires_grad=True)
    a = x + y
    b = dynjit.max(a, 1, True)[1].repeat(1, 5).double()
    (b + a).sum().backward()
    close(x.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_unnecessary_save
def test_detach_in_place_in_a_loop_then_backward():
    mu = dynjit.ones(1, requires_grad=True)
    x = dynjit.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        loss = loss + (x * dynjit.tensor([float(i)])).sum()
    loss.backward()
    close(mu.grad, [3.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_unused_output
def test_only_the_used_chunk_receives_gradient():
    x = dynjit.randn(10, 10, requires_grad=True)
    o = x.chunk(5)[2] * 4 + 2
    o.sum().backward()
    expected = np.zeros((10, 10))
    expected[4:6] = 4
    close(x.grad, expected)

    with dynjit.no_grad():
        x.grad.zero_()
    go = dynjit.randn(2, 10)
    x.chunk(5)[0].backward(go)
    expected = np.zeros((10, 10))
    expected[:2] = go.numpy()
    close(x.grad, expected)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_variable_traverse
def test_backward_after_collecting_a_reference_cycle_around_an_intermediate():
    import gc

    def make():
        inp = dynjit.randn(10, requires_grad=True)
        tmp = inp.view(10, 1)
        cycle = [tmp]
        cycle.append(cycle)
        return tmp.view(10), inp

    out, inp = make()
    gc.collect()
    go = dynjit.randn(10)
    out.backward(go)
    close(inp.grad, go)


def _chain(depth):
    x = dynjit.randn(1, requires_grad=True)
    y = x.clone()
    for _ in range(depth):
        y = y + y * 0.000001
    return x, y


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph
def test_deep_chain_backward_and_free_without_recursion():
    import sys
    depth = 6 * sys.getrecursionlimit()     # far deeper than any recursive walk could go
    x, y = _chain(depth)
    y.backward()
    assert np.isfinite(x.grad.numpy()).all()
    x, y = _chain(depth)
    del y                                   # freeing the graph must not recurse either


@pytest.mark.slow
# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph
def test_deep_chain_of_150k_nodes():
    x, y = _chain(150000)
    y.backward()
    del y


def _deep_graph_with_skips(depth):
    """A chain updated in place, with a skip connection from two steps back."""
    x = dynjit.randn(1, requires_grad=True)
    y = x.clone()
    prev = [y, y]
    for _ in range(depth):
        y = y * 1.0
        y += y * 0.000001
        y += prev[0] * 0.000001
        prev = [prev[1], y]
    return x, y


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph_complicated
def test_deep_graph_with_skip_connections_backward_and_free():
    import sys
    x, y = _deep_graph_with_skips(3 * sys.getrecursionlimit())
    y.sum().backward()
    assert x.grad is not None
    del y


class _AddTwo(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph_pyfunction
def test_deep_chain_of_custom_functions_backward_and_free():
    import sys
    x = dynjit.randn(1, dtype=dynjit.double, requires_grad=True)
    y = x.clone()
    for _ in range(6 * sys.getrecursionlimit()):
        y = _AddTwo.apply(y, y * 0)       # keeps values finite; y*0 adds a second edge
    y.backward()
    close(x.grad, [1.0])
    x = dynjit.zeros(1, requires_grad=True)
    y = x.clone()
    for _ in range(6 * sys.getrecursionlimit()):
        y = _AddTwo.apply(y, y)
    del y


@pytest.mark.slow
# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph_complicated
def test_deep_graph_with_skip_connections_of_100k_steps():
    x, y = _deep_graph_with_skips(100000)
    y.sum().backward()
    assert x.grad is not None
    del y


@pytest.mark.slow
# ports: 002_7f98adb56adba91b.txt TestAutograd.test_free_deep_graph_pyfunction
def test_deep_chain_of_150k_custom_functions():
    x = dynjit.zeros(1, requires_grad=True)      # stays 0: y + y never overflows
    y = x.clone()
    for _ in range(150000):
        y = _AddTwo.apply(y, y)
    del y


def test_leaves_fed_the_same_gradient_do_not_share_grad_memory():
    x = dynjit.ones(3, requires_grad=True)
    y = dynjit.ones(3, requires_grad=True)
    z = x + y                      # its backward passes one gradient object to both
    z.backward(dynjit.ones(3), retain_graph=True)
    z.backward(dynjit.ones(3))     # accumulates in place into each .grad
    close(x.grad, [2.0, 2.0, 2.0])
    close(y.grad, [2.0, 2.0, 2.0])


def test_grad_does_not_alias_a_gradient_someone_else_holds():
    go = dynjit.ones(3)
    w = dynjit.ones(3, requires_grad=True)
    w.backward(go)                 # the root gradient goes straight to w's AccumulateGrad
    go.add_(5)
    close(w.grad, [1.0, 1.0, 1.0])

    seen = []
    v = dynjit.ones(3, requires_grad=True)
    v.register_hook(lambda g: seen.append(g))
    (v * 2).sum().backward()
    (v * 2).sum().backward()       # adds into v.grad in place
    close(seen[0], [2.0, 2.0, 2.0])
    close(v.grad, [4.0, 4.0, 4.0])


def test_unshared_gradient_becomes_grad_without_a_copy():
    seen = []
    t = dynjit.ones(3, requires_grad=True)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda gs: (gs[0] * 1,))       # a fresh tensor only the engine holds
    acc.register_hook(lambda gi, go: seen.append(go[0]))
    t.sum().backward()
    assert seen[0] is t.grad
