"""Inputs that require grad but that the compiled function detaches (truncated BPTT's
carried hidden state): the compiled backward node has no edge to them, as eager has none,
so a backward does not reach the graph that made them (whose saved values an earlier
backward freed)."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop


def _step(w, x, h):
    h = h.detach()
    h = dynjit.tanh(x @ w + h @ w)
    return h.sum(), h


def _carry(step, steps=3):
    """Run `step` `steps` times, feeding each call the previous call's hidden state
    (which keeps the previous call's grad_fn), backward after each; returns losses and w.grad."""
    dynjit.manual_seed(0)
    w = dynjit.randn(4, 4, requires_grad=True)
    xs = [dynjit.randn(2, 4) for _ in range(steps)]
    h = dynjit.zeros(2, 4)
    losses = []
    for x in xs:
        loss, h = step(w, x, h)
        loss.backward()
        losses.append(loss.item())
    return losses, w.grad


def test_aot_function_detached_carried_state_matches_eager():
    eager_losses, eager_grad = _carry(_step)
    compiled = aot_function(_step, fw_compiler=nop)
    losses, grad = _carry(compiled)
    assert losses == pytest.approx(eager_losses, rel=1e-6)
    assert dynjit.allclose(grad, eager_grad, rtol=1e-5, atol=1e-6)


def test_detached_input_has_no_edge():
    compiled = aot_function(_step, fw_compiler=nop)
    w = dynjit.randn(4, 4, requires_grad=True)
    h_in = dynjit.randn(2, 4, requires_grad=True)
    loss, _ = compiled(w, dynjit.randn(2, 4), h_in)
    node = loss.grad_fn
    assert node.name() == "CompiledFunctionBackward"
    # its only edge is w's accumulator: none to h_in, which the function detached
    targets = [e[0] for e in node.next_functions if e is not None and e[0] is not None]
    assert len(targets) == 1 and targets[0].variable is w
    loss.backward()
    assert h_in.grad is None and w.grad is not None


@pytest.mark.parametrize("backend", ["aot_eager", "llvm"])
def test_compiled_training_step_detaching_hidden_state(backend):
    eager_losses, eager_grad = _carry(_step)
    losses, grad = _carry(dynjit.compile(_step, backend=backend))
    assert losses == pytest.approx(eager_losses, rel=1e-5)
    assert dynjit.allclose(grad, eager_grad, rtol=1e-4, atol=1e-5)


def test_grad_of_a_detached_input_is_unused_as_in_eager():
    def f(w, h):
        return (h.detach() * w).sum()

    compiled = aot_function(f, fw_compiler=nop)
    for fn in (f, compiled):
        w = dynjit.randn(3, requires_grad=True)
        h = dynjit.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            dynjit.autograd.grad(fn(w, h), [w, h])
        gw, gh = dynjit.autograd.grad(fn(w, h), [w, h], allow_unused=True)
        assert gh is None
        assert dynjit.allclose(gw, h.detach())
