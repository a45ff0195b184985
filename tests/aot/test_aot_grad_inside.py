"""autograd.grad called inside a compiled function: the same results, gradients and errors as
eager on every backend.

The function's own backward runs while AOT autograd traces it (its ops become forward ops
of the graph). What it returns must keep eager's autograd history: a loss whose graph the
inner grad freed (no retain_graph) has a grad_fn, and a backward through it raises eager's
"backward through the graph a second time"; with retain_graph=True the loss differentiates
afterwards; with create_graph=True the returned gradient differentiates again (double
backward through the compiled function's graph)."""
import numpy as np
import pytest

import dynjit
from dynjit.aot import aot_function, nop

grad = dynjit.autograd.grad

WAYS = ["plain", "eager", "aot_eager", "llvm", "aot_function"]


def _compiled(fn, way):
    if way == "plain":
        return fn
    if way == "aot_function":
        return aot_function(fn, nop)
    return dynjit.compile(fn, backend=way)


def _arrays(values):
    """Tensors as arrays, booleans and numbers as they are, errors as (type, message)."""
    out = []
    for v in values:
        if isinstance(v, dynjit.Tensor):
            out.append(v.detach().numpy().copy())
        elif isinstance(v, (list, tuple)):
            out.append(_arrays(v))
        else:
            out.append(v)
    return out


def _check_same(expected, got, way):
    assert type(expected) is type(got), f"{way}: {expected!r} != {got!r}"
    if isinstance(expected, np.ndarray):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=way)
    elif isinstance(expected, list):
        assert len(expected) == len(got), way
        for e, g in zip(expected, got):
            _check_same(e, g, way)
    else:
        assert expected == got, f"{way}: {expected!r} != {got!r}"


def _run(fn, make_inputs, after, way, calls=2):
    """Call the (compiled) function on fresh inputs, then `after(outputs, inputs)` (what the
    caller does with the outputs: backward, grad); its values and any error it raises."""
    f = _compiled(fn, way)
    results = []
    for call in range(calls):
        inputs = make_inputs(call)
        outputs = f(*inputs)
        try:
            results.append(_arrays(after(outputs, inputs)))
        except RuntimeError as e:
            results.append(("raised", type(e).__name__, str(e)))
    return results


def _differential(fn, make_inputs, after):
    expected = _run(fn, make_inputs, after, "plain")
    for way in WAYS[1:]:
        _check_same(expected, _run(fn, make_inputs, after, way), way)
    return expected


def _x(call, n=3, requires_grad=False):
    return dynjit.arange(n, dtype=dynjit.float32).mul(call + 1).add(0.5).requires_grad_(requires_grad)


def test_returning_the_loss_keeps_a_freed_grad_fn():
    """The adversarial program of findings D3: a leaf made inside, grad of a loss, the loss
    returned. Its grad_fn exists, and a backward through it raises as in eager."""
    def main(x):
        y = (x * 2).requires_grad_()
        z = (y * y).sum()
        g, = grad(z, y)
        return g, z

    def after(out, inputs):
        g, z = out
        values = [g, z, z.grad_fn is not None, z.requires_grad, g.requires_grad]
        z.backward()      # eager: the saved values of y * y are gone
        return values

    results = _differential(main, lambda call: (_x(call),), after)
    assert results[0][0] == "raised" and "backward through the graph a second time" in results[0][2]


def test_returned_loss_and_values_before_the_backward():
    def main(x):
        y = (x * 2).requires_grad_()
        z = (y * y).sum()
        g, = grad(z, y)
        return g, z, z.grad_fn is not None

    results = _differential(main, lambda call: (_x(call),), lambda out, inputs: list(out))
    np.testing.assert_allclose(results[1][0], 4 * _x(1).numpy())   # y = 2x, dz/dy = 2y
    assert results[1][2] is True


def test_input_that_requires_grad_and_a_second_output():
    """Grad of a loss of the argument itself; another output that does not go through the
    freed nodes still differentiates, the loss does not."""
    def main(x, w):
        z = (x * x * w).sum()
        gx, = grad(z, x)
        other = (w * 3).sum()
        return gx, z, other

    def after_other(out, inputs):
        gx, z, other = out
        other.backward()
        return [gx, z, inputs[1].grad, inputs[0].grad]

    def after_loss(out, inputs):
        out[1].backward()
        return [inputs[1].grad]

    def make(call):
        return _x(call, requires_grad=True), _x(call + 2, requires_grad=True)

    results = _differential(main, make, after_other)
    x, w = make(0)
    np.testing.assert_allclose(results[0][0], 2 * x.detach().numpy() * w.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(results[0][2], np.full(3, 3.0))
    assert results[0][3] is None
    results = _differential(main, make, after_loss)
    assert results[0][0] == "raised"


def test_retain_graph_then_backward_through_the_loss():
    def main(x, w):
        z = ((x * w) ** 2).sum()
        gx, = grad(z, x, retain_graph=True)
        return gx, z

    def after(out, inputs):
        gx, z = out
        z.backward()
        return [gx, z, inputs[0].grad, inputs[1].grad, gx.requires_grad]

    def make(call):
        return _x(call, requires_grad=True), _x(call + 1, requires_grad=True)

    results = _differential(main, make, after)
    x, w = (t.detach().numpy() for t in make(1))
    np.testing.assert_allclose(results[1][2], 2 * x * w * w, rtol=1e-5)
    np.testing.assert_allclose(results[1][3], 2 * x * x * w, rtol=1e-5)


def test_create_graph_double_backward_outside():
    """create_graph=True: the returned gradient has history; differentiating it again
    (after the compiled function returned) gives the second derivative."""
    def main(x):
        z = (x ** 3).sum()
        gx, = grad(z, x, create_graph=True)
        return gx, z

    def after(out, inputs):
        gx, z = out
        (gx.sum() + z).backward()
        return [gx, z, inputs[0].grad, gx.requires_grad]

    results = _differential(main, lambda call: (_x(call, requires_grad=True),), after)
    x = _x(1).numpy()
    np.testing.assert_allclose(results[1][0], 3 * x ** 2, rtol=1e-5)
    np.testing.assert_allclose(results[1][2], 6 * x + 3 * x ** 2, rtol=1e-5)
    assert results[1][3] is True


def test_create_graph_double_backward_inside():
    def main(x):
        z = (x ** 3).sum()
        gx, = grad(z, x, create_graph=True)
        ggx, = grad(gx.sum(), x)
        return gx, ggx

    def after(out, inputs):
        gx, ggx = out
        return [gx, ggx, gx.requires_grad, ggx.requires_grad]

    results = _differential(main, lambda call: (_x(call, requires_grad=True),), after)
    np.testing.assert_allclose(results[1][1], 6 * _x(1).numpy(), rtol=1e-5)


def test_grads_of_several_inputs():
    def main(x, w, b):
        z = (dynjit.tanh(x * w + b) ** 2).sum()
        gx, gw, gb = grad(z, [x, w, b])
        return gx, gw, gb, z.detach()

    def make(call):
        return (_x(call, requires_grad=True) / 4, _x(call + 1, requires_grad=True) / 5,
                _x(call + 2, requires_grad=True) / 6)

    results = _differential(main, make, lambda out, inputs: list(out))
    x, w, b = (t.detach().numpy() for t in make(1))
    t = np.tanh(x * w + b)
    d = 2 * t * (1 - t * t)
    for got, want in zip(results[1][:3], (d * w, d * x, d)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_grad_with_an_incoming_gradient_and_allow_unused():
    def main(x, w, unused):
        y = x * w
        gx, gu = grad(y, [x, unused], grad_outputs=dynjit.ones_like(y) * 2, allow_unused=True)
        return gx, gu is None, y

    def after(out, inputs):
        gx, unused_is_none, y = out
        values = [gx, unused_is_none, y]
        y.sum().backward()      # the grad did not retain y's graph: eager raises
        return values

    def make(call):
        return _x(call, requires_grad=True), _x(call + 1, requires_grad=True), _x(call, requires_grad=True)

    results = _differential(main, make, after)
    assert results[0][0] == "raised"


@pytest.mark.parametrize("way", WAYS[1:])
def test_training_loop_with_grad_inside(way):
    """A hand-written SGD loop: grad inside the step, parameters updated from it."""
    def step(w, x, target):
        loss = ((x @ w - target) ** 2).mean()
        gw, = grad(loss, w)
        return loss.detach(), gw

    def run(f):
        rng = np.random.default_rng(0)
        w = dynjit.tensor(rng.standard_normal((4, 1)).astype(np.float32), requires_grad=True)
        x = dynjit.tensor(rng.standard_normal((8, 4)).astype(np.float32))
        target = x @ dynjit.tensor([[1.0], [-2.0], [0.5], [3.0]])
        losses = []
        for _ in range(5):
            loss, gw = f(w, x, target)
            with dynjit.no_grad():
                w -= 0.1 * gw
            losses.append(float(loss))
        return losses, w.detach().numpy()

    want_losses, want_w = run(step)
    got_losses, got_w = run(_compiled(step, way))
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5)
    assert want_losses[-1] < want_losses[0]


def test_a_closure_tensor_whose_own_history_was_freed():
    """A tensor the function reads from its closure, whose history an earlier backward freed:
    the function's output is not itself freed (a gradient for the argument works), and a
    backward that goes on into the closure tensor's history raises, as in eager."""
    w = dynjit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * w
    h.sum().backward()          # frees h's history (w * w saved w)

    def main(x):
        return x * h

    def after(out, inputs):
        gx, = grad(out.sum(), inputs[0], retain_graph=True)
        values = [out, gx]
        out.sum().backward()    # reaches h's freed history
        return values

    results = _differential(main, lambda call: (_x(call, requires_grad=True),), after)
    assert results[0][0] == "raised" and "second time" in results[0][2]

    def grad_of_argument(out, inputs):
        return [out, grad(out.sum(), inputs[0])[0]]

    results = _differential(main, lambda call: (_x(call, requires_grad=True),), grad_of_argument)
    np.testing.assert_allclose(results[0][1], [1.0, 4.0, 9.0])


def test_backward_inside_breaks_the_graph_or_is_refused():
    """loss.backward() inside: dynjit.compile breaks the graph there, so .grad is eager's on
    every backend; aot_function alone cannot replay the accumulation into .grad and says so
    (for an argument and for a closure tensor) instead of losing it."""
    def main(x):
        z = (x * x).sum()
        z.backward()
        return z

    def after(out, inputs):
        return [out, inputs[0].grad, out.grad_fn is not None]

    make = lambda call: (_x(call, requires_grad=True),)     # noqa: E731
    expected = _run(main, make, after, "plain")
    for way in ("eager", "aot_eager", "llvm"):
        _check_same(expected, _run(main, make, after, way), way)
    with pytest.raises(RuntimeError, match=r"calls \.backward\(\).*\.grad of argument 0"):
        aot_function(main, nop)(_x(0, requires_grad=True))

    w = dynjit.ones(3, requires_grad=True)

    def with_closure(x):
        (x * w).sum().backward()
        return x * 2

    with pytest.raises(RuntimeError, match=r"\.grad of a global or closure tensor"):
        aot_function(with_closure, nop)(_x(0))
