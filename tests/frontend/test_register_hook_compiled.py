"""x.register_hook(fn) inside a compiled function: registered on the caller's tensor when the
compiled code runs, as eager does; backward then calls it exactly as in eager."""
import pytest

import dynjit
from dynjit.testing import CompileCounter, same


def _scaled_square(x, scale, calls):
    def hook(g):
        calls.append(g.clone())
        return g * scale
    x.register_hook(hook)
    return (x * x).sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_hook_on_an_input_matches_eager(backend):
    x_c = dynjit.randn(3, requires_grad=True)
    x_e = x_c.detach().clone().requires_grad_(True)
    calls_c, calls_e = [], []
    compiled = dynjit.compile(_scaled_square, backend=backend)
    compiled(x_c, 3.0, calls_c).backward()
    _scaled_square(x_e, 3.0, calls_e).backward()
    assert same(x_c.grad, x_e.grad) and same(x_c.grad, x_e.detach() * 6)
    assert len(calls_c) == len(calls_e) == 1 and same(calls_c[0], calls_e[0])


def test_each_call_registers_again_as_in_eager_and_no_graph_break():
    dynjit.utils.counters.clear()
    cnt = CompileCounter()
    compiled = dynjit.compile(_scaled_square, backend=cnt)
    x = dynjit.ones(2, requires_grad=True)
    calls = []
    compiled(x, 2.0, calls)
    loss = compiled(x, 2.0, calls)        # two hooks on x now
    loss.backward()
    assert len(calls) == 2 and same(x.grad, dynjit.full((2,), 8.0))
    assert cnt.frame_count == 1
    assert not any("hook" in reason for reason in dynjit.utils.counters["graph_break"])


def test_returned_handle_removes_the_hook():
    def fn(x):
        return x.register_hook(lambda g: g * 0), x * 2

    x = dynjit.ones(3, requires_grad=True)
    handle, y = dynjit.compile(fn)(x)
    handle.remove()
    y.sum().backward()
    assert same(x.grad, dynjit.full((3,), 2.0))


def test_hook_on_a_tensor_made_inside_is_a_graph_break_with_eagers_result():
    def fn(x):
        y = x * 2
        y.register_hook(lambda g: g * 10)
        return y.sum()

    x_c = dynjit.ones(2, requires_grad=True)
    x_e = dynjit.ones(2, requires_grad=True)
    dynjit.compile(fn)(x_c).backward()
    fn(x_e).backward()
    assert same(x_c.grad, x_e.grad) and same(x_c.grad, dynjit.full((2,), 20.0))


def test_hook_on_a_tensor_without_grad_raises_as_in_eager():
    def fn(x):
        x.register_hook(lambda g: g)
        return x

    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        fn(dynjit.ones(2))
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        dynjit.compile(fn)(dynjit.ones(2))
