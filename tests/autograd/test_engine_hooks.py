"""Hooks the engine runs: tensor hooks, node pre/post hooks, retain_grad and
post-accumulate-grad hooks, their order, and what happens to them when a
tensor is modified in place."""
import gc
import weakref

import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


class Mul2(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class DoubleMul(Function):
    """Two outputs: x*2 and x*3."""

    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * 2 + g2 * 3


MUL2 = [pytest.param(Mul2.apply, id="custom_function"), pytest.param(lambda x: x * 2, id="op")]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_hooks
def test_tensor_hooks_count_remove_and_modify():
    x = dynjit.ones(5, 5, requires_grad=True)
    y = (dynjit.ones(5, 5) * 4).requires_grad_(True)
    counter = [0]

    def bump(inc, grad):
        assert isinstance(grad, dynjit.Tensor)
        counter[0] += inc

    z = x ** 2 + x * 2 + x * y + y
    x.register_hook(lambda g: bump(0, g))
    h1 = z.register_hook(lambda g: bump(1, g))
    z.backward(dynjit.ones(5, 5), retain_graph=True)
    assert counter[0] == 1

    h2 = z.register_hook(lambda g: bump(2, g))
    z.backward(dynjit.ones(5, 5), retain_graph=True)
    assert counter[0] == 4

    h2.remove()
    z.backward(dynjit.ones(5, 5), retain_graph=True)
    assert counter[0] == 5

    def double(grad):
        return grad.mul(2)

    h1.remove()
    z.register_hook(double)
    with dynjit.no_grad():
        y.grad.zero_()
    z.backward(dynjit.ones(5, 5), retain_graph=True)
    close(y.grad, (x.detach() + 1) * 2)

    y.register_hook(double)
    with dynjit.no_grad():
        y.grad.zero_()
    z.backward(dynjit.ones(5, 5))
    close(y.grad, (x.detach() + 1) * 4)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_hook_with_no_name
def test_hook_may_be_any_callable():
    class CloneGrad:
        def __call__(self, grad):
            return grad.clone()

    x = dynjit.randn(5, requires_grad=True)
    y = x.clone()
    y.register_hook(CloneGrad())
    y.sum().backward()
    close(x.grad, np.ones(5))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_hook_none
def test_hooks_on_both_outputs_of_a_function_see_gradients():
    class PassBoth(Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad[0]
            assert not ctx.needs_input_grad[1]
            return x, y

        @staticmethod
        def backward(ctx, gx, gy):
            return gx, None

    called = []

    def hook(grad):
        assert grad is not None
        called.append(True)

    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5)
    rx, ry = PassBoth.apply(x, y)
    rx.register_hook(hook)
    ry.register_hook(hook)
    (rx + ry).sum().backward()
    assert called
    close(x.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_fn_prehooks
@pytest.mark.parametrize("mul2", MUL2)
def test_node_pre_and_post_hooks(mul2):
    a = dynjit.tensor([1.0], requires_grad=True)
    b = mul2(a)
    post_calls, pre_calls = [0], [0]

    def posthook(grad_inputs, grad_outputs):
        assert pre_calls[0] == 3
        close(grad_outputs[0], [8.0])    # 1 doubled by three pre-hooks
        close(grad_inputs[0], [16.0])
        post_calls[0] += 1
        return grad_inputs

    def prehook(grad_outputs):
        pre_calls[0] += 1
        return (grad_outputs[0] * 2,)

    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda g: None)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda g: g)
    b.grad_fn.register_prehook(lambda g: None)
    b.sum().backward()
    assert post_calls[0] == 2
    assert pre_calls[0] == 3
    close(a.grad, [16.0])

    a = dynjit.rand(3, 3, requires_grad=True)
    b = mul2(a)

    def counting_prehook(grad_outputs):
        pre_calls[0] += 1

    b.grad_fn.register_prehook(counting_prehook)
    b.sum().backward()
    assert pre_calls[0] == 4
    close(a.grad, np.full((3, 3), 2.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_fn_prehooks_remove_hooks
@pytest.mark.parametrize("mul2", MUL2)
def test_node_pre_hooks_can_be_removed_even_while_running(mul2):
    a = dynjit.rand(3, 3, requires_grad=True)
    b = mul2(a)
    calls = [0]

    def prehook(grad_outputs):
        calls[0] += 1

    handle = b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    handle.remove()
    b.sum().backward()
    close(a.grad, np.full((3, 3), 2.0))
    assert calls[0] == 1

    a = dynjit.rand(3, 3, requires_grad=True)
    b = mul2(a)
    calls = [0]

    def remover(grad_outputs):
        handle2.remove()
        handle3.remove()     # removing twice is harmless

    def counter(grad_outputs):
        calls[0] += 1

    b.grad_fn.register_prehook(remover)
    handle2 = b.grad_fn.register_prehook(counter)
    handle3 = b.grad_fn.register_prehook(counter)
    handle3.remove()
    b.sum().backward()
    close(a.grad, np.full((3, 3), 2.0))
    assert calls[0] == 1    # removal takes effect from the next call on, as in PyTorch


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_fn_prehooks_multiple_outputs
def test_node_pre_hook_sees_every_output_gradient():
    b = dynjit.rand(3, 3, requires_grad=True)
    var, mean = dynjit.var_mean(b, dim=0)
    (var + mean).sum().backward()

    a = b.detach().requires_grad_()
    calls = [0]

    def prehook(grad_outputs):
        gvar, gmean = grad_outputs
        calls[0] += 1
        return (gvar * 2, gmean * 2)

    var, mean = dynjit.var_mean(a, dim=0)
    assert var.grad_fn is mean.grad_fn
    mean.grad_fn.register_prehook(prehook)
    (var + mean).sum().backward()
    assert calls[0] == 1
    close(a.grad, b.grad * 2)

    class DoubleMul2(Function):
        @staticmethod
        def forward(ctx, x, a, y):
            ctx.a = a
            return a * x * 2, a, a * y * 2

        @staticmethod
        def backward(ctx, g1, _a, g2):
            return ctx.a * g1 * 2, None, ctx.a * g2 * 2

    calls = [0]

    def prehook(grad_outputs):
        g1, ga, g2 = grad_outputs
        assert ga is None
        calls[0] += 1
        return (g1 * 2, None, g2 * 2)

    a = dynjit.randn(3, 3, requires_grad=True)
    b = dynjit.randn(3, 3, requires_grad=True)
    k = 3
    c, _, d = DoubleMul2.apply(a, k, b)
    c.grad_fn.register_prehook(prehook)
    (c + d).sum().backward()
    assert calls[0] == 1
    close(a.grad, np.full((3, 3), 4.0 * k))
    close(b.grad, np.full((3, 3), 4.0 * k))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_prehook_ordering
def test_tensor_hooks_run_before_node_pre_hooks():
    log = []

    def tensor_hook(g):
        log.append(1)
        return g * 3

    def node_prehook(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = dynjit.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(tensor_hook)
    acc.register_prehook(node_prehook)
    a.register_hook(tensor_hook)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]

    # autograd.grad runs a leaf's tensor hooks, but its AccumulateGrad node (and
    # that node's pre-hooks) never runs
    log = []
    dynjit.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]

    log = []
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    # b.grad is filled by retain_grad, which runs after tensor hooks but before node pre-hooks
    assert b.grad.item() == 3


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retains_grad_can_always_observe_tensor_prehook
def test_retain_grad_sees_every_tensor_hook_whenever_registered():
    def times_two(g):
        return g * 2

    a = dynjit.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(times_two)
    b.retain_grad()
    b.register_hook(times_two)
    b.clone().backward()
    assert b.grad.item() == 4

    a = dynjit.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(times_two)
    b.clone().backward()
    assert b.grad.item() == 2


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_accumulate_grad_posthooks_can_observe_tensor_prehook
def test_accumulate_grad_hooks_see_the_leafs_tensor_hook():
    a = dynjit.tensor(1.0, requires_grad=True)
    seen = []

    def posthook(grad_inputs, grad_outputs):
        seen.append("post")
        close(grad_outputs[0], a.detach() * 2)
        assert len(grad_inputs) == 0

    def prehook(grad_outputs):
        seen.append("pre")
        close(grad_outputs[0], a.detach() * 2)
        assert len(grad_outputs) == 1

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(lambda g: g * 2)
    b.backward()
    assert seen == ["pre", "post"]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_accumulate_grad_posthooks_should_not_execute
def test_hooks_of_leaves_outside_backward_inputs_do_not_run():
    def fail(*args):
        raise RuntimeError("must not run")

    a = dynjit.tensor(1.0, requires_grad=True)
    a.register_hook(fail)
    b = dynjit.tensor(1.0, requires_grad=True)
    c = a.clone()
    acc = c.grad_fn.next_functions[0][0]
    acc.register_hook(fail)
    (a + b + c).sum().backward(inputs=[b])
    assert b.grad.item() == 1.0
    assert a.grad is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_hook_edge_case_when_called_with_grad
def test_which_hooks_run_under_grad_and_backward_with_inputs():
    a = dynjit.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def tensor_hook(g):
        counts["tensor"] += 1

    def prehook(g):
        counts["pre"] += 1

    def posthook(gi, go):
        counts["post"] += 1

    a.register_hook(tensor_hook)
    b.register_hook(tensor_hook)
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)

    def run(fn):
        for k in counts:
            counts[k] = 0
        fn()
        return counts["tensor"], counts["pre"], counts["post"]

    # b is captured: its tensor hook runs, b's node does not
    assert run(lambda: dynjit.autograd.grad(c, inputs=(b,), retain_graph=True)) == (1, 0, 0)
    # b's node runs to reach a; a's AccumulateGrad does not
    assert run(lambda: dynjit.autograd.grad(c, inputs=(a, b), retain_graph=True)) == (2, 1, 1)
    assert run(lambda: c.backward(retain_graph=True)) == (2, 2, 2)
    assert run(lambda: c.backward(inputs=(a, b), retain_graph=True)) == (2, 2, 2)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_nonleaf_many_outputs
def test_grad_of_two_chunks_does_not_run_the_base_hook():
    x = dynjit.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)
    called = []
    x.register_hook(lambda *g: called.append(True))
    go = dynjit.randn(2, 2)
    ga, gb = dynjit.autograd.grad(a + 2 * b, [a, b], grad_outputs=go, create_graph=True)
    close(ga, go)
    close(gb, go * 2)
    assert not called
    assert x.grad is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_nonleaf_register_hook
def test_hook_on_one_unbound_slice():
    x = dynjit.randn(5, requires_grad=True)
    parts = x.unbind()
    seen = [None]

    def hook(grad):
        seen[0] = grad

    parts[0].register_hook(hook)
    parts[0].backward()
    close(seen[0], 1.0)
    expected = np.array([1.0, 0, 0, 0, 0])
    close(x.grad, expected)
    assert parts[0]._grad is None

    for i in range(1, 5):
        seen[0] = None
        parts[i].backward()
        assert seen[0] is None
        expected[i] = 1.0
        close(x.grad, expected)
        assert parts[i]._grad is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retain_grad
def test_retain_grad_accumulates_and_is_a_no_op_on_leaves():
    inp = dynjit.rand(1, 3, requires_grad=True)
    h1 = inp * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()     # twice is the same as once
    out.backward(retain_graph=True)
    close(h1.grad, h1.detach() * 2)
    out.backward(retain_graph=True)
    close(h1.grad, h1.detach() * 4)

    with dynjit.no_grad():
        inp.grad.zero_()
    inp.retain_grad()
    inp.retain_grad()
    out.backward()
    close(inp.grad, inp.detach() * 18)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retain_grad_inplace
def test_retain_grad_follows_the_tensor_through_in_place_ops():
    a = dynjit.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    close(a.grad, [1.0])

    a = dynjit.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    close(a.grad, [1.0])

    # in place through a view: the gradient is that of the latest version of x
    x = dynjit.tensor([1.0], requires_grad=True).clone()
    x.retain_grad()
    x_view = x[:]
    x_view *= 2
    x *= 2
    x.sum().backward()
    close(x.grad, [1.0])

    # nothing to move when the base did not require grad
    x = dynjit.zeros(4)
    y = x.view(2, 2)
    y.add_(dynjit.randn(2, 2, requires_grad=True))
    assert x.requires_grad


MULTI_OUTPUT = [pytest.param(DoubleMul.apply, id="custom_function"),
                pytest.param(lambda x: dynjit.var_mean(x, dim=0), id="var_mean")]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retains_grad_inplace_multiple_outputs
@pytest.mark.parametrize("fn", MULTI_OUTPUT)
def test_retain_grad_on_outputs_of_a_multi_output_function_modified_in_place(fn):
    b = dynjit.rand(3, 3, requires_grad=True)
    var, mean = fn(b)
    var.retain_grad()
    mean.retain_grad()
    var.mul_(2)
    (var + mean).sum().backward()
    gvar, gmean = var.grad, mean.grad

    a = b.detach().requires_grad_(True)
    var, mean = fn(a)
    var.mul_(2)
    out = (var + mean).sum()
    gvar_expected, gmean_expected = dynjit.autograd.grad(out, inputs=(var, mean))
    close(gvar, gvar_expected)
    close(gmean, gmean_expected)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retain_grad_inplace_over_view
def test_retain_grad_on_views_after_one_is_modified_in_place():
    base = dynjit.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2).sum().backward()
    close(view.grad, view2.grad)
    close(view.grad, [1.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_tensor_hooks_inplace
def test_tensor_hooks_registered_before_and_after_an_in_place_op():
    count1, count2 = [0], [0]

    def fn1(grad):
        count1[0] += 1
        close(grad, [4.0])    # the gradient of the old version: after fn2 and mul_
        return grad * 2

    def fn2(grad):
        count2[0] += 1
        close(grad, [1.0])
        return grad * 2

    a = dynjit.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(fn1)
    b.mul_(2)
    b.register_hook(fn2)
    b.sum().backward()
    assert count1[0] == 1 and count2[0] == 1
    close(a.grad, [8.0])

    count3 = [0]

    def fn3(grad):
        count3[0] += 1
        close(grad, [4.0])
        return grad * 2

    a = dynjit.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(fn3)
    b.mul_(2)
    b.mul_(2)
    b.sum().backward()
    assert count3[0] == 1
    close(a.grad, [8.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_tensor_hooks_inplace_multiple_outputs
@pytest.mark.parametrize("fn", MULTI_OUTPUT)
def test_tensor_hooks_on_a_multi_output_function_modified_in_place(fn):
    counts = [0, 0, 0]

    def fn0(grad):
        counts[0] += 1
        close(grad, np.full(grad.shape, 2.0))

    def fn1(grad):
        counts[1] += 1
        close(grad, np.full(grad.shape, 3.0))

    def fn2(grad):
        counts[2] += 1
        close(grad, np.ones(grad.shape))

    b = dynjit.rand(3, 3, requires_grad=True)
    out1, out2 = fn(b)
    out1.register_hook(fn0)
    out2.register_hook(fn1)
    out1.mul_(2)
    out1.register_hook(fn2)
    (out1 + out2 * 3).sum().backward()
    assert counts == [1, 1, 1]


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_tensor_hooks_inplace_over_view
def test_hooks_on_views_belong_to_the_version_they_were_registered_on():
    count = [0]

    def never(grad):
        raise AssertionError("hook of a stale view version ran")

    def fn2(grad):
        count[0] += 1
        close(grad, [1.0])

    base = dynjit.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.register_hook(never)
    view2.register_hook(never)
    view.mul_(2)
    view2.grad_fn      # refresh view2's grad_fn after its base changed
    view2.register_hook(fn2)
    (view + view2).sum().backward()
    assert count[0] == 1


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_retain_grad_cycle
def test_retain_grad_does_not_keep_the_tensor_alive():
    x = dynjit.ones(5, 5, requires_grad=True)

    def run():
        y = x * 2
        y.retain_grad()
        return y * 0.5, weakref.ref(y)     # the product needs only the scalar: y is not saved

    z, ref = run()
    assert ref() is None
    z.sum().backward()
    close(x.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_return_leaf
def test_hook_on_an_output_that_is_an_input_gets_only_its_gradient():
    class Identity(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a + grad_b, grad_b

    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5, requires_grad=True)
    q, p = Identity.apply(x, y)
    called = []

    def hook(grad):
        called.append(True)
        close(grad, np.ones((5, 5)))    # q's gradient, not the one x receives

    q.register_hook(hook)
    (q + p + x).sum().backward()
    close(x.grad, np.full((5, 5), 3.0))
    close(y.grad, np.ones((5, 5)))
    assert called


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_on_non_leaf
def test_post_accumulate_grad_hook_only_on_leaves():
    non_leaf = 2.0 * dynjit.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        non_leaf.register_post_accumulate_grad_hook(lambda t: None)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_multiple_hooks
def test_post_accumulate_grad_hooks_run_in_registration_order():
    t = dynjit.rand(3, requires_grad=True)
    ref = t.clone().detach()

    def step(p):
        p.sub_(p.grad)

    def scale(p):
        p.mul_(4.0)

    t.register_post_accumulate_grad_hook(step)
    t.register_post_accumulate_grad_hook(scale)
    t.sum().backward()
    close(t, 4.0 * (ref - 1.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_multiple_tensors
def test_post_accumulate_grad_hook_on_several_tensors():
    def step(p):
        p.sub_(p.grad)

    t1 = dynjit.rand(3, requires_grad=True)
    t2 = dynjit.rand(5, requires_grad=True)
    r1, r2 = t1.clone().detach(), t2.clone().detach()
    t1.register_post_accumulate_grad_hook(step)
    t2.register_post_accumulate_grad_hook(step)
    t1.sum().backward()
    t2.sum().backward()
    close(t1, r1 - 1.0)
    close(t2, r2 - 1.0)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_returns_not_None
def test_post_accumulate_grad_hook_must_return_none():
    t = dynjit.rand(2, 3, requires_grad=True)
    t.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        t.sum().backward()


class _Adam:
    """A minimal Adam over a list of tensors (dynjit.optim is a separate layer)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = list(params), lr, betas, eps
        self.state = {id(p): [0, np.zeros(p.shape), np.zeros(p.shape)] for p in self.params}

    @dynjit.no_grad()
    def step(self):
        b1, b2 = self.betas
        for p in self.params:
            if p.grad is None:
                continue
            st = self.state[id(p)]
            st[0] += 1
            g = p.grad.numpy()
            st[1] = b1 * st[1] + (1 - b1) * g
            st[2] = b2 * st[2] + (1 - b2) * g * g
            m_hat = st[1] / (1 - b1 ** st[0])
            v_hat = st[2] / (1 - b2 ** st[0])
            p.sub_(dynjit.tensor(self.lr * m_hat / (np.sqrt(v_hat) + self.eps), dtype=p.dtype))

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def _linear_params():
    return [dynjit.randn(2, 3, requires_grad=True), dynjit.randn(2, requires_grad=True)]


def _linear(params, inp):
    w, b = params
    return inp.matmul(w.t()) + b


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_e2e
def test_optimizer_step_in_backward_matches_a_separate_step():
    params = _linear_params()
    ref_params = [p.detach().clone().requires_grad_() for p in params]
    optims = {id(p): _Adam([p]) for p in params}

    def step_in_backward(p):
        optims[id(p)].step()
        optims[id(p)].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step_in_backward) for p in params]
    ref_optim = _Adam(ref_params)
    inp = dynjit.rand(2, 3)

    def train(steps):
        for _ in range(steps):
            _linear(params, inp).sum().backward()
            _linear(ref_params, inp).sum().backward()
            ref_optim.step()
            ref_optim.zero_grad()

    train(5)
    frozen = []
    for p_ref, p in zip(ref_params, params):
        close(p_ref, p)
        frozen.append(p_ref.detach().clone())

    for h in handles:
        h.remove()
    train(5)          # the hooks are gone: params no longer move
    for p_static, p_ref, p in zip(frozen, ref_params, params):
        close(p_static, p)
        assert not np.allclose(p_ref.detach().numpy(), p.detach().numpy())


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_gets_cleaned_up
def test_post_accumulate_grad_hook_is_freed_with_its_tensor():
    def make():
        captured = dynjit.rand(3)

        def hook(p):
            p.sub_(p.grad)
            p.add_(captured)

        t = dynjit.rand(3, requires_grad=True)
        t.register_post_accumulate_grad_hook(hook)
        t.sum().backward()
        return t, weakref.ref(captured)

    gc.disable()
    try:
        t, ref = make()
        assert ref() is not None
        del t
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_ordering
def test_order_of_leaf_hooks():
    t = dynjit.rand(3, requires_grad=True)

    def tensor_prehook(grad):
        return grad.sub(2.0)

    def acc_prehook(grad_out):
        return (grad_out[0].div(5.0),)

    def post_acc_hook(p):
        p.grad.add_(0.5)

    def acc_posthook(grad_in, grad_out):
        t.grad = grad_out[0].mul(10)

    acc = t.view_as(t).grad_fn.next_functions[0][0]
    t.register_hook(tensor_prehook)
    acc.register_prehook(acc_prehook)
    t.register_post_accumulate_grad_hook(post_acc_hook)
    acc.register_hook(acc_posthook)
    t.sum().backward()
    # tensor hook 1 - 2 = -1, node pre-hook -1 / 5 = -0.2, accumulated as .grad (the
    # incoming tensor itself), post-accumulate hook +0.5 in place = 0.3, node post-hook
    # sees that same tensor: .grad = 0.3 * 10
    close(t.grad, [3.0, 3.0, 3.0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_tensor_grad_warnings
def test_reading_grad_of_a_non_leaf_warns_unless_it_retains_grad():
    import warnings
    t = dynjit.empty(1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t.requires_grad_()
        t.grad
        assert len(w) == 0
        t = t.clone()
        t.grad
        assert len(w) == 1
        t.retain_grad()
        t.grad
        assert len(w) == 1


def test_hook_of_an_output_without_a_gradient_runs_with_none():
    # as PyTorch: the node runs for the used output, and the unused output's hook sees None
    x = dynjit.randn(2, requires_grad=True)
    a, b = x.unbind()
    seen = []
    b.register_hook(lambda g: seen.append(("b", g)))
    a.register_hook(lambda g: seen.append(("a", g is None)))
    a.backward()
    assert seen == [("b", None), ("a", False)]
    close(x.grad, [1.0, 0.0])

    # but it may not make up a gradient for it
    x = dynjit.randn(2, requires_grad=True)
    a, b = x.unbind()
    b.register_hook(lambda g: dynjit.tensor(5.0) if g is None else g)
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        a.backward()
