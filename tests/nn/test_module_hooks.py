"""Module hooks: forward pre-hooks and forward hooks (order, results, kwargs,
removal, global hooks), full backward hooks and backward pre-hooks (values of
grad_input/grad_output against hand-computed gradients, replacement, call counts)."""
import gc
import weakref

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.nn.modules import module as module_mod


class Scale(nn.Module):
    """forward(x, y, factor=...) = x * y * factor (two tensor inputs, one non-tensor)."""

    def forward(self, x, y, factor=1.0):
        return x * y * factor


class TwoOutputs(nn.Module):
    def forward(self, x):
        return x * 2, x.sin(), "label"


# -- forward hooks -------------------------------------------------------------------------

def test_forward_hooks_run_in_order_around_forward():
    lin = nn.Linear(2, 2)
    order = []
    lin.register_forward_pre_hook(lambda m, args: order.append("pre1"))
    lin.register_forward_pre_hook(lambda m, args: order.append("pre2"))
    lin.register_forward_pre_hook(lambda m, args: order.append("pre0"), prepend=True)
    lin.register_forward_hook(lambda m, args, out: order.append("post1"))
    lin.register_forward_hook(lambda m, args, out: order.append("post0"), prepend=True)
    lin(dynjit.randn(1, 2))
    assert order == ["pre0", "pre1", "pre2", "post0", "post1"]


def test_forward_pre_hook_can_replace_the_arguments():
    m = Scale()
    x, y = dynjit.tensor([2.0]), dynjit.tensor([3.0])
    h = m.register_forward_pre_hook(lambda mod, args: (args[0] + 1, args[1]))
    assert m(x, y).item() == 9.0
    h.remove()
    single = nn.Identity()
    single.register_forward_pre_hook(lambda mod, args: args[0] * 10)    # a non-tuple is wrapped
    assert single(dynjit.tensor(1.0)).item() == 10.0


def test_forward_hook_sees_inputs_and_can_replace_the_output():
    m = Scale()
    seen = {}

    def hook(mod, args, out):
        seen["args"] = args
        return out + 100
    m.register_forward_hook(hook)
    x, y = dynjit.tensor([2.0]), dynjit.tensor([3.0])
    assert m(x, y).item() == 106.0
    assert seen["args"][0] is x and seen["args"][1] is y


def test_hooks_with_kwargs():
    m = Scale()

    def pre(mod, args, kwargs):
        return args, {"factor": kwargs["factor"] * 2}

    def post(mod, args, kwargs, out):
        assert kwargs == {"factor": 4.0}
        return out - 1
    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    assert m(dynjit.tensor([1.0]), dynjit.tensor([1.0]), factor=2.0).item() == 3.0


def test_with_kwargs_pre_hook_must_return_a_pair():
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs, 1), with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"tuple of \(new_args, new_kwargs\)"):
        m(dynjit.tensor([1.0]), dynjit.tensor([1.0]))


def test_removed_hooks_no_longer_run_and_handles_work_as_context_managers():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_hook(lambda m, a, o: calls.append(1), with_kwargs=False)
    with lin.register_forward_pre_hook(lambda m, a: calls.append(2)):
        lin(dynjit.randn(1, 2))
    lin(dynjit.randn(1, 2))
    h1.remove()
    h1.remove()     # removing twice is harmless
    lin(dynjit.randn(1, 2))
    assert calls == [2, 1, 1]
    assert not lin._forward_hooks and not lin._forward_pre_hooks


def test_with_kwargs_flag_is_removed_with_the_hook():
    m = Scale()
    h = m.register_forward_hook(lambda mod, a, k, o: None, with_kwargs=True)
    h.remove()
    assert not m._forward_hooks_with_kwargs


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    m = Boom()
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("not always"))
    with pytest.raises(ValueError, match="boom"):
        m(dynjit.ones(1))
    assert calls == [None]


def test_no_hooks_means_forward_is_called_directly():
    lin = nn.Linear(2, 2)
    calls = []
    lin.forward = lambda x: calls.append(x) or x
    x = dynjit.ones(2)
    assert lin(x) is x and calls == [x]


def test_global_forward_hooks_run_for_every_module_before_local_ones():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    order = []
    seq[0].register_forward_hook(lambda m, a, o: order.append("local"))
    h1 = module_mod.register_module_forward_pre_hook(lambda m, a: order.append(("pre", type(m).__name__)))
    h2 = module_mod.register_module_forward_hook(lambda m, a, o: order.append(("post", type(m).__name__)))
    try:
        seq(dynjit.randn(1, 2))
    finally:
        h1.remove()
        h2.remove()
    assert order == [("pre", "Sequential"), ("pre", "Linear"), ("post", "Linear"), "local",
                     ("pre", "ReLU"), ("post", "ReLU"), ("post", "Sequential")]
    order.clear()
    seq(dynjit.randn(1, 2))
    assert order == ["local"]


# -- full backward hooks ---------------------------------------------------------------------

def test_full_backward_hook_gets_grad_input_and_grad_output():
    m = Scale()
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)
    y = dynjit.tensor([3.0, 5.0], requires_grad=True)
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append((mod, gi, go)))
    out = m(x, y, 0.5)
    out.backward(dynjit.tensor([1.0, 10.0]))
    assert len(calls) == 1
    mod, gi, go = calls[0]
    assert mod is m and len(gi) == 3 and len(go) == 1
    assert gi[2] is None     # the non-tensor argument `factor`
    np.testing.assert_allclose(go[0].numpy(), [1.0, 10.0])
    np.testing.assert_allclose(gi[0].numpy(), [1.0 * 3.0 * 0.5, 10.0 * 5.0 * 0.5])   # dout * y * f
    np.testing.assert_allclose(gi[1].numpy(), [1.0 * 1.0 * 0.5, 10.0 * 2.0 * 0.5])   # dout * x * f


def test_full_backward_hook_of_a_linear_layer_matches_manual_gradients():
    lin = nn.Linear(3, 2)
    x = dynjit.randn(4, 3, requires_grad=True)
    g_out = dynjit.randn(4, 2)
    got = {}
    lin.register_full_backward_hook(lambda m, gi, go: got.update(gi=gi, go=go))
    lin(x).backward(g_out)
    np.testing.assert_allclose(got["go"][0].numpy(), g_out.numpy())
    expected = g_out.numpy() @ lin.weight.detach().numpy()
    np.testing.assert_allclose(got["gi"][0].numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)
    # the parameters' gradients are unaffected by the module hook
    np.testing.assert_allclose(lin.weight.grad.numpy(), g_out.numpy().T @ x.detach().numpy(), rtol=1e-5)


def test_full_backward_hook_can_replace_grad_input():
    m = Scale()
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)
    y = dynjit.tensor([3.0, 5.0], requires_grad=True)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0, gi[1] * 2))
    m(x, y).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    assert y.grad.tolist() == [2.0, 4.0]


def test_full_backward_hook_wrong_number_of_grads_is_an_error():
    m = Scale()
    x = dynjit.tensor([1.0], requires_grad=True)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 1, but expected 2"):
        m(x, dynjit.tensor([1.0])).sum().backward()


def test_grad_input_is_none_for_inputs_that_do_not_require_grad():
    m = Scale()
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)
    y = dynjit.tensor([3.0, 5.0])
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append(gi))
    m(x, y).sum().backward()
    assert got[0][1] is None and got[0][0].tolist() == [3.0, 5.0]


def test_full_backward_hook_when_no_input_requires_grad():
    lin = nn.Linear(2, 1)
    got = []
    lin.register_full_backward_hook(lambda m, gi, go: got.append((gi, go)))
    lin(dynjit.ones(1, 2)).sum().backward()
    assert len(got) == 1
    gi, go = got[0]
    assert gi == (None,) and go[0].tolist() == [[1.0]]
    assert lin.weight.grad.tolist() == [[1.0, 1.0]]
    lin.register_full_backward_hook(lambda m, gi, go: (dynjit.ones(1),))
    with pytest.raises(RuntimeError, match="no input requires gradient should always return None"):
        lin(dynjit.ones(1, 2)).sum().backward()


def test_backward_pre_hook_sees_and_replaces_grad_output():
    m = Scale()
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)
    y = dynjit.tensor([3.0, 5.0])
    order = []

    def pre(mod, go):
        order.append(("pre", go[0].tolist()))
        return (go[0] * 10,)

    def post(mod, gi, go):
        order.append(("post", go[0].tolist(), gi[0].tolist()))
    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(post)
    m(x, y).sum().backward()
    assert order == [("pre", [1.0, 1.0]), ("post", [10.0, 10.0], [30.0, 50.0])]
    assert x.grad.tolist() == [30.0, 50.0]


def test_backward_hooks_with_several_outputs():
    m = TwoOutputs()
    x = dynjit.tensor([0.5, 1.0], requires_grad=True)
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go)))
    a, b, label = m(x)
    assert label == "label"
    a.sum().backward()      # only the first output gets a gradient
    gi, go = got[0]
    assert len(go) == 3 and go[0].tolist() == [1.0, 1.0] and go[1] is None and go[2] is None
    assert gi[0].tolist() == [2.0, 2.0]


def test_backward_hooks_are_called_once_per_backward_and_removable():
    lin = nn.Linear(2, 2)
    count = [0]
    h = lin.register_full_backward_hook(lambda m, gi, go: count.__setitem__(0, count[0] + 1))
    x = dynjit.randn(3, 2, requires_grad=True)
    out = lin(x)
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    assert count[0] == 2
    h.remove()
    lin(x).sum().backward()
    assert count[0] == 2


def test_backward_hook_order_through_nested_modules():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    order = []
    for i, m in enumerate(seq):
        m.register_full_backward_pre_hook(lambda mod, go, i=i: order.append(("pre", i)))
        m.register_full_backward_hook(lambda mod, gi, go, i=i: order.append(("post", i)))
    seq(dynjit.randn(4, 2, requires_grad=True)).sum().backward()
    assert order == [("pre", 2), ("post", 2), ("pre", 1), ("post", 1), ("pre", 0), ("post", 0)]


def test_global_full_backward_hook():
    lin = nn.Linear(2, 2)
    seen = []
    h = module_mod.register_module_full_backward_hook(lambda m, gi, go: seen.append(type(m).__name__))
    try:
        lin(dynjit.randn(1, 2, requires_grad=True)).sum().backward()
    finally:
        h.remove()
    assert seen == ["Linear"]


def test_full_backward_hook_is_not_called_again_by_double_backward():
    # ports: 002_7f98adb56adba91b.txt TestProfiler.test_full_backward_hook_double_backward
    x = dynjit.rand(1, requires_grad=True)
    y = dynjit.rand_like(x)
    loss = nn.MSELoss()
    counter = [0]
    loss.register_full_backward_hook(lambda m, gi, go: counter.__setitem__(0, counter[0] + 1))
    f = loss(x, y)
    (grad_x,) = dynjit.autograd.grad(f, x, create_graph=True)
    assert counter[0] == 1
    np.testing.assert_allclose(grad_x.detach().numpy(), 2 * (x - y).detach().numpy(), rtol=1e-6)
    (grad_xx,) = dynjit.autograd.grad(grad_x, x)
    assert counter[0] == 1
    assert grad_xx.item() == pytest.approx(2.0)


def test_full_backward_hooks_do_not_keep_the_graph_alive_after_create_graph():
    # ports: 002_7f98adb56adba91b.txt TestProfiler.test_create_graph_and_full_backward_hook_cycle
    class Sentinel:
        pass

    def make(input_requires_grad, n_hooks):
        t = dynjit.randn(10, requires_grad=input_requires_grad)
        a = dynjit.tensor(1.0, requires_grad=True)

        class Square(nn.Module):
            def forward(self, x):
                return x ** 2 * a ** 2
        mod = Square()
        for _ in range(n_hooks):
            mod.register_full_backward_hook(lambda m, gi, go: None)
        out = mod(t)
        sentinel = Sentinel()
        out.grad_fn.metadata["a"] = sentinel
        with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
            out.exp().sum().backward(create_graph=True)
        a.grad = None
        t.grad = None
        return weakref.ref(sentinel)

    for n_hooks in (1, 2, 3):
        for requires_grad in (True, False):
            ref = make(requires_grad, n_hooks)
            gc.collect()
            assert ref() is None


def test_batchnorm_eval_output_tensor_hook():
    # ports: 002_7f98adb56adba91b.txt TestAutograd.test_hooks_cpp
    bn = nn.BatchNorm1d(5, affine=False)
    bn.double()
    bn.eval()
    counter = [0]

    def bw_hook(grad):
        counter[0] += 1
        return grad * 2
    x = dynjit.ones(5, 5, dtype=dynjit.float64, requires_grad=True)
    z = bn(x)
    z.register_hook(bw_hook)
    z.sum().backward()
    assert counter[0] == 1
    # eval mode: z = (x - 0) / sqrt(1 + eps), so dz/dx = 1/sqrt(1 + 1e-5), doubled by the hook
    np.testing.assert_allclose(x.grad.numpy(), np.full((5, 5), 2.0), atol=1e-5, rtol=0)
    np.testing.assert_allclose(x.grad.numpy(), np.full((5, 5), 2 / np.sqrt(1 + 1e-5)), rtol=1e-12)
