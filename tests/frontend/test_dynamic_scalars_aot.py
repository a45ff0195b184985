"""Dynamic numbers through AOT autograd: aot_eager declares dynjit_scalar_inputs, so a number
that changes between calls (an argument, an optimizer's learning rate, a running total, a
batch size read from a shape) is a graph input that AOT traces as a number, instead of a
constant that recompiles the frame for every value. Each test runs the same code plain and
compiled and compares; on aot_eager it also counts frontend compiles and AOT traces."""
import pytest

import dynjit
from dynjit import nn
from dynjit.testing import CompileCounterWithBackend, same

BACKENDS = ["eager", "aot_eager", "llvm"]


def _same(expected, got):
    if isinstance(expected, tuple):
        assert type(got) is tuple and len(got) == len(expected)
        for e, g in zip(expected, got):
            _same(e, g)
    elif isinstance(expected, dynjit.Tensor):
        assert same(got, expected, tol=1e-5)
    else:
        assert type(got) is type(expected) and got == expected


def test_aot_eager_declares_scalar_inputs():
    from dynjit.compiler import lookup_backend
    assert lookup_backend("aot_eager").dynjit_scalar_inputs is True
    assert lookup_backend("aot_eager_default_partitioner").dynjit_scalar_inputs is True


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int_and_a_float_argument_taking_100_values(backend):
    def f(x, k, lr):
        y = (x * lr + k).sin() * (k + 1) - lr / (k + 1)
        return y, k * 2, lr - 1

    counter = CompileCounterWithBackend(backend)
    compiled = dynjit.compile(f, backend=counter)
    x = dynjit.randn(3, 4)
    for i in range(100):
        _same(f(x, i, 0.01 * i - 0.3), compiled(x, i, 0.01 * i - 0.3))
    if backend in ("eager", "aot_eager"):      # they take number inputs
        assert counter.frame_count <= 2
    if backend == "aot_eager":
        assert counter.aot_traces <= 2


def test_gradients_of_a_compiled_function_are_right_for_each_learning_rate():
    def f(w, x, lr):
        return ((x @ w) * lr).tanh().sum() * lr

    counter = CompileCounterWithBackend("aot_eager")
    compiled = dynjit.compile(f, backend=counter)
    x = dynjit.randn(5, 3)
    for i in range(30):
        lr = 0.1 * i - 1.0
        w1 = dynjit.randn(3, 2, requires_grad=True)
        w2 = w1.detach().clone().requires_grad_(True)
        f(w1, x, lr).backward()
        compiled(w2, x, lr).backward()
        assert same(w2.grad, w1.grad, tol=1e-5)
    assert counter.frame_count <= 2 and counter.aot_traces <= 2


def _make_model(optimizer):
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    if optimizer == "adam":
        return model, dynjit.optim.Adam(model.parameters(), lr=0.01)
    return model, dynjit.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _train_step(model, opt, x, y, state):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    state["total"] += loss.item()
    state["step"] += 1
    return loss


def _train(backend, optimizer):
    model, opt = _make_model(optimizer)
    counter = CompileCounterWithBackend(backend) if backend else None
    step = dynjit.compile(_train_step, backend=counter) if backend else _train_step
    state = {"total": 0.0, "step": 0}
    dynjit.manual_seed(1)
    data = [(dynjit.randn(16, 4), dynjit.randn(16, 1)) for _ in range(20)]
    losses = []
    for i, (x, y) in enumerate(data):
        opt.param_groups[0]["lr"] = 0.1 / (1 + i)          # a schedule: a new lr every step
        losses.append(step(model, opt, x, y, state).item())
    return losses, [p.detach() for p in model.parameters()], state, counter


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_step_with_a_learning_rate_schedule_a_running_total_and_a_step_counter(backend, optimizer):
    plain_losses, plain_params, plain_state, _ = _train(None, optimizer)
    losses, params, state, counter = _train(backend, optimizer)
    assert losses == pytest.approx(plain_losses, rel=1e-5, abs=1e-6)
    for p, q in zip(plain_params, params):
        assert same(q, p, tol=1e-5)
    assert state["step"] == 20 and state["total"] == pytest.approx(plain_state["total"], rel=1e-5)
    if backend in ("eager", "aot_eager"):      # they take number inputs
        # the graphs around loss.item() and backward, each compiled once and once more when
        # lr, total and step turn dynamic: never once per step
        assert counter.frame_count <= 6
    if backend == "aot_eager":
        assert counter.aot_traces <= counter.frame_count


def _flatten_rows(x):
    return x.view(x.shape[0], -1).sum(1) * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_by_the_batch_size_over_20_batch_sizes(backend):
    counter = CompileCounterWithBackend(backend)
    compiled = dynjit.compile(_flatten_rows, backend=counter)
    for n in range(2, 22):
        x = dynjit.randn(n, 3, 2)
        _same(_flatten_rows(x), compiled(x))
    if backend in ("eager", "aot_eager"):      # they take number inputs
        assert counter.frame_count == 2
    if backend == "aot_eager":
        # the first graph is traced for its size, the dynamic one once with symbolic sizes
        assert counter.aot_traces == 2


def _attention_block(x, w):
    b, t, c = x.shape
    h = 2
    d = c // h
    q = (x @ w).view(b, t, h, d).transpose(1, 2)
    att = (q @ q.transpose(-2, -1)) / d ** 0.5
    return (att.softmax(-1) @ q).transpose(1, 2).reshape(b, t, c)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_transformer_style_block_over_batch_sizes_with_gradients(backend):
    counter = CompileCounterWithBackend(backend)
    compiled = dynjit.compile(_attention_block, backend=counter)
    dynjit.manual_seed(0)
    w = dynjit.randn(4, 4)
    for b in range(2, 9):
        x = dynjit.randn(b, 3, 4)
        w1 = w.clone().requires_grad_(True)
        w2 = w.clone().requires_grad_(True)
        expected, got = _attention_block(x, w1), compiled(x, w2)
        _same(expected, got)
        expected.sum().backward()
        got.sum().backward()
        assert same(w2.grad, w1.grad, tol=1e-5)
    if backend in ("eager", "aot_eager"):      # they take number inputs
        assert counter.frame_count == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dynamic_int_used_as_a_size(backend):
    # the frontend passes k as a number; AOT specializes it (it decides shapes) and traces
    # once per value, giving the plain result for each
    def f(x, k):
        return x.view(k, -1).sum(0) * k + x.sum() / k

    counter = CompileCounterWithBackend(backend)
    compiled = dynjit.compile(f, backend=counter)
    x = dynjit.randn(4, 6)
    for k in [1, 2, 3, 4, 6, 8, 2, 3]:
        _same(f(x, k), compiled(x, k))
    if backend in ("eager", "aot_eager"):      # they take number inputs
        assert counter.frame_count == 2
    if backend == "aot_eager":
        # the first graph has k = 1 as a constant; the dynamic one is traced for 2, 3, 4, 6, 8
        assert counter.aot_traces == 6
