"""compiled_autograd.enable: backward passes traced into one graph, compiled, cached, and
giving eager's gradients and side effects (seed 003's compiled-autograd tests and
differential tests against the ordinary engine)."""
import warnings

import pytest

import dynjit
from dynjit import compiled_autograd, nn
from dynjit.backends.registry import lookup_backend
from dynjit.fx import trace_wrapped
from dynjit.testing import CompileCounterWithBackend, normalize_gm, same
from dynjit.utils import counters

BACKENDS = ["eager", "aot_eager", "llvm"]


@pytest.fixture(autouse=True)
def _fresh():
    dynjit.reset()
    yield
    dynjit.reset()


def _multiply(x):
    return x * x


def _multiply_invoke(grad):
    return trace_wrapped(grad, fn=_multiply)


class Recorder:
    """A compiler_fn that keeps the graphs it is given and returns them uncompiled (or
    compiled with dynjit.compile on `backend`)."""

    def __init__(self, backend=None, fullgraph=True):
        self.backend = backend
        self.fullgraph = fullgraph
        self.graphs = []

    def __call__(self, gm):
        self.graphs.append(gm)
        if self.backend is None:
            return gm
        return dynjit.compile(gm, backend=self.backend, fullgraph=self.fullgraph)


_CAPTURED = '''\
class GraphModule(dynjit.nn.Module):
    def forward(self, inputs, hooks):
        getitem: "f32[2]" = inputs[0];  inputs = None
        hook = hooks[0];  hooks = None
        call_hook: "f32[2]" = dynjit.compiled_autograd.call_hook(hook, getitem);  hook = None
        new_grad: "f32[2]" = dynjit.ops.clone(call_hook);  call_hook = None
        new_grad_1: "f32[2]" = dynjit.ops.clone(getitem);  getitem = None
        return (new_grad, new_grad_1)
'''

_COMPILED = '''\
class GraphModule(dynjit.nn.Module):
    def forward(self, L_inputs_0: "f32[2]"):
        result: "f32[2]" = operator.mul(L_inputs_0, L_inputs_0)
        new_grad: "f32[2]" = dynjit.ops.clone(result);  result = None
        new_grad_1: "f32[2]" = dynjit.ops.clone(L_inputs_0);  L_inputs_0 = None
        return (new_grad, new_grad_1)
'''


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_in_pt2_compiled_autograd
@pytest.mark.parametrize("backend", BACKENDS)
def test_hook_through_trace_wrapped_in_a_compiled_backward(backend):
    captured, compiled = [], []

    def compiler_fn(gm):
        captured.append(gm)

        def inner_compiler(gm_, example_inputs_):
            assert not compiled, "the backward graph is compiled once"
            compiled.append(gm_)
            return lookup_backend("llvm")(gm_, example_inputs_)
        return dynjit.compile(gm, backend=inner_compiler, fullgraph=True, dynamic=True)

    x = dynjit.tensor([0.5, 0.5], requires_grad=True)
    y = dynjit.tensor([0.5, 0.5], requires_grad=True)

    def fn(x, y):
        x.register_hook(_multiply_invoke)
        return x + y

    out = dynjit.optimize(backend)(fn)(x, y)
    grad_out = dynjit.tensor([2.0, 2.0])
    with compiled_autograd.enable(compiler_fn):
        out.backward(grad_out)
    assert same(x.grad, grad_out * grad_out)
    assert same(y.grad, grad_out)
    # the traced pass: the hook is one opaque call, each leaf's new gradient a clone
    assert normalize_gm(captured[0].print_readable(False)) == _CAPTURED
    # dynjit.compile traced through the hook and trace_wrapped into the user's multiply
    assert normalize_gm(compiled[0].print_readable(False)) == _COMPILED
    assert counters["compiled_autograd"]["compiles"] == 1


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_in_pt2_compiled_autograd_graph_breaks
@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_a_hook_of_a_fullgraph_compiled_backward_raises(backend, capsys):
    def _graph_breaking_fn(x):
        print("Boo!")
        return _multiply(x)

    def _graph_break_invoke(grad):
        return trace_wrapped(grad, fn=_graph_breaking_fn)

    def compiler_fn(gm):
        return dynjit.compile(gm, backend="llvm", fullgraph=True, dynamic=True)

    x = dynjit.tensor([0.5, 0.5], requires_grad=True)
    y = dynjit.tensor([0.5, 0.5], requires_grad=True)

    def fn(x, y):
        x.register_hook(_graph_break_invoke)
        return x + y

    out = dynjit.optimize(backend, nopython=True)(fn)(x, y)
    with pytest.raises(dynjit.exc.Unsupported, match="print") as info:
        with compiled_autograd.enable(compiler_fn):
            out.backward(dynjit.tensor([2.0, 2.0]))
    assert "_graph_breaking_fn" in str(info.value) or "print" in str(info.value)
    assert capsys.readouterr().out == ""       # the hook never ran: no half-done backward
    assert x.grad is None and y.grad is None
    # the graph is kept: the same pass runs eagerly afterwards, printing once
    out.backward(dynjit.tensor([2.0, 2.0]))
    assert capsys.readouterr().out == "Boo!\n"
    assert same(x.grad, dynjit.tensor([4.0, 4.0]))


def test_a_graph_break_in_a_hook_without_fullgraph_runs_the_hook_as_eager(capsys):
    def noisy(grad):
        print("hook saw", grad.tolist())
        return grad * 3

    def run(enabled):
        x = dynjit.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(noisy)
        loss = (x * x).sum()
        if enabled:
            with compiled_autograd.enable(lambda gm: dynjit.compile(gm, backend="eager")):
                loss.backward()
        else:
            loss.backward()
        return x.grad, capsys.readouterr().out

    eager_grad, eager_out = run(False)
    compiled_grad, compiled_out = run(True)
    assert same(eager_grad, compiled_grad)
    assert compiled_out == eager_out == "hook saw [2.0, 4.0]\n"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(dynjit.tanh(self.fc1(x)))


def _train(steps, compiler_fn=None, forward_backend=None):
    """Steps of SGD on a fixed batch; returns every step's gradients and the final weights."""
    dynjit.manual_seed(0)
    model = MLP()
    opt = dynjit.optim.SGD(model.parameters(), lr=0.1)
    x = dynjit.randn(6, 4)
    target = dynjit.randn(6, 3)
    forward = model if forward_backend is None else dynjit.compile(model, backend=forward_backend)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((forward(x) - target) ** 2).mean()
        if compiler_fn is None:
            loss.backward()
        else:
            with compiled_autograd.enable(compiler_fn):
                loss.backward()
        history.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    return history, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("backend", [None] + BACKENDS)
def test_training_steps_match_the_engine_and_compile_once(backend):
    eager_history, eager_weights = _train(4)
    recorder = Recorder(backend)
    history, weights = _train(4, recorder)
    for step_eager, step_compiled in zip(eager_history, history):
        for a, b in zip(step_eager, step_compiled):
            assert same(a, b)
    for a, b in zip(eager_weights, weights):
        assert same(a, b)
    assert len(recorder.graphs) == 1
    assert counters["compiled_autograd"]["captures"] == 1
    assert counters["compiled_autograd"]["cache_hits"] == 3


@pytest.mark.parametrize("forward_backend", BACKENDS)
def test_compiled_forward_and_compiled_backward_together(forward_backend):
    eager_history, eager_weights = _train(3)
    backward_counter = CompileCounterWithBackend("llvm")
    history, weights = _train(3, lambda gm: dynjit.compile(gm, backend=backward_counter, fullgraph=True),
                              forward_backend=forward_backend)
    for step_eager, step_compiled in zip(eager_history, history):
        for a, b in zip(step_eager, step_compiled):
            assert same(a, b)
    for a, b in zip(eager_weights, weights):
        assert same(a, b)
    assert backward_counter.frame_count == 1
    assert backward_counter.op_count > 0


def test_a_new_shape_compiles_a_new_backward():
    recorder = Recorder()
    w = dynjit.randn(3, requires_grad=True)
    with compiled_autograd.enable(recorder):
        for n in (2, 2, 5, 5, 2):
            (dynjit.ones(n, 3) * w).sum().backward()
    assert len(recorder.graphs) == 2
    assert counters["compiled_autograd"]["cache_hits"] == 3
    assert same(w.grad, dynjit.full((3,), 2.0 + 2 + 5 + 5 + 2))


def test_gradients_accumulate_into_existing_grad_like_the_engine():
    def run(enabled):
        dynjit.manual_seed(1)
        a = dynjit.randn(3, 2, requires_grad=True)
        b = dynjit.randn(2, requires_grad=True)      # broadcast: its gradient is summed
        for _ in range(3):
            loss = (a * b).exp().sum() + (a @ b).sin().sum()
            if enabled:
                with compiled_autograd.enable(Recorder("aot_eager")):
                    loss.backward()
            else:
                loss.backward()
        return a.grad, b.grad

    for e, c in zip(run(False), run(True)):
        assert same(e, c)


def test_a_tensor_used_twice_and_several_roots():
    def run(enabled):
        dynjit.manual_seed(2)
        x = dynjit.randn(4, requires_grad=True)
        h = x.sigmoid()
        a, b = (h * x).sum(), (h + 1).log().sum()
        if enabled:
            with compiled_autograd.enable(Recorder()):
                dynjit.autograd.backward([a, b], [dynjit.tensor(1.0), dynjit.tensor(0.5)])
        else:
            dynjit.autograd.backward([a, b], [dynjit.tensor(1.0), dynjit.tensor(0.5)])
        return x.grad

    assert same(run(False), run(True))


def test_hooks_run_once_per_backward_in_the_engines_order():
    recorder = Recorder("eager", fullgraph=False)

    def run(enabled, calls):
        x = dynjit.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: calls.append(("y", g.tolist())))          # returns None
        y.register_hook(lambda g: g + 1)
        x.register_hook(lambda g: calls.append(("x", g.tolist())) or g * 10)
        x.register_post_accumulate_grad_hook(lambda t: calls.append(("acc", t.grad.tolist())))
        for _ in range(2):
            loss = (y * y).sum()
            if enabled:
                with compiled_autograd.enable(recorder):     # the hooks' .tolist() break the graph
                    loss.backward(retain_graph=True)
            else:
                loss.backward(retain_graph=True)
        return x.grad

    eager_calls, compiled_calls = [], []
    assert same(run(False, eager_calls), run(True, compiled_calls))
    assert compiled_calls == eager_calls
    assert [c[0] for c in eager_calls] == ["y", "x", "acc"] * 2
    assert len(recorder.graphs) == 1


def test_freed_graph_raises_the_engines_error_on_a_second_backward():
    x = dynjit.randn(3, requires_grad=True)
    loss = (x.exp() * x).sum()
    with compiled_autograd.enable(Recorder()):
        loss.backward()
        with pytest.raises(RuntimeError, match="a second time"):
            loss.backward()


class Scale(dynjit.autograd.Function):
    """A custom Function whose backward reads a saved tensor, a tensor and a float on ctx."""

    @staticmethod
    def forward(ctx, x, w, k):
        ctx.save_for_backward(x)
        ctx.w = w
        ctx.k = k
        return x * w * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.w * ctx.k, (g * x * ctx.k).sum(0), None


@pytest.mark.parametrize("backend", [None, "llvm"])
def test_custom_function_backward_is_captured_and_keyed_on_ctx(backend):
    recorder = Recorder(backend)
    w = dynjit.randn(3, requires_grad=True)
    with compiled_autograd.enable(recorder):
        for k in (2.0, 2.0, 3.0):
            x = dynjit.randn(4, 3, requires_grad=True)
            Scale.apply(x.sin(), w, k).sum().backward()
            assert same(x.grad, x.detach().cos() * w.detach() * k)
    # ctx.k is a Python float baked into the graph: a new value is a new graph
    assert len(recorder.graphs) == 2
    assert counters["compiled_autograd"]["cache_hits"] == 1
    assert not [r for r in counters["compiled_autograd"] if r.startswith("eager")]
    code = recorder.graphs[0].code
    assert "cos" in code and "2.0" in code       # the Function's backward and sin's, as ops
    expected = dynjit.zeros(3)
    dynjit.manual_seed(0)
    dynjit.randn(3)
    for k in (2.0, 2.0, 3.0):
        x = dynjit.randn(4, 3)
        expected += (x.sin() * k).sum(0)
    assert same(w.grad, expected)


def test_a_backward_reading_tensor_values_in_python_runs_on_the_engine():
    class Clip(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            if g.abs().max().item() > 1:      # data-dependent: cannot be replayed as a graph
                return g / g.abs().max()
            return g

    recorder = Recorder()
    x = dynjit.tensor([1.0, -4.0], requires_grad=True)
    with compiled_autograd.enable(recorder):
        for scale in (0.5, 4.0, 0.5):
            (Clip.apply(x) * scale).sum().backward()
    assert recorder.graphs == []
    assert same(x.grad, dynjit.tensor([0.5 + 1.0 + 0.5] * 2))     # the middle pass was clipped
    reason = "eager: a backward reads tensor values in Python (Tensor.item())"
    # captured once, then remembered: the next passes go straight to the engine
    assert counters["compiled_autograd"][reason] == 3
    assert counters["compiled_autograd"]["captures"] == 0


def test_retained_gradients_are_outputs_of_the_graph():
    def run(enabled):
        x = dynjit.tensor([1.0, 2.0], requires_grad=True)
        z = x * 3
        z.retain_grad()
        z.register_hook(lambda g: g * 2)      # retain_grad sees what the hooks returned
        w = z.sin()
        w.retain_grad()
        for _ in range(2):
            loss = (w * w).sum()
            if enabled:
                with compiled_autograd.enable(recorder):
                    loss.backward(retain_graph=True)
            else:
                loss.backward(retain_graph=True)
        return x.grad, z.grad, w.grad

    recorder = Recorder()
    for e, c in zip(run(False), run(True)):
        assert same(e, c)
    assert len(recorder.graphs) == 1
    assert counters["compiled_autograd"]["cache_hits"] == 1


@pytest.mark.parametrize("backend", [None, "eager", "llvm"])
def test_grad_fn_hooks_and_module_backward_hooks_are_calls_in_the_graph(backend):
    def run(enabled):
        dynjit.manual_seed(3)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        calls = []
        # a closure made anew on every forward: the graph takes hooks as inputs
        model[0].register_full_backward_hook(
            lambda mod, grad_in, grad_out: calls.append(("module", grad_out[0].sum().item())))
        for _ in range(3):
            x = dynjit.randn(5, 3, requires_grad=True)
            y = model(x)
            y.grad_fn.register_prehook(lambda grads: (grads[0] * 2,))
            y.grad_fn.register_hook(lambda grad_in, grad_out: calls.append(("post", len(grad_in))))
            if enabled:
                with compiled_autograd.enable(recorder):
                    y.sum().backward()
            else:
                y.sum().backward()
        return [p.grad for p in model.parameters()] + [x.grad], calls

    recorder = Recorder(backend, fullgraph=False)     # the hooks' .item() is a graph break
    (eager, eager_calls), (compiled, compiled_calls) = run(False), run(True)
    for a, b in zip(eager, compiled):
        assert same(a, b)
    assert [c[0] for c in compiled_calls] == [c[0] for c in eager_calls] == ["post", "module"] * 3
    assert [c[1] for c in compiled_calls] == pytest.approx([c[1] for c in eager_calls], rel=1e-5)
    assert len(recorder.graphs) == 1
    assert counters["compiled_autograd"]["cache_hits"] == 2
    code = recorder.graphs[0].code
    assert "call_pre_hook" in code and "call_post_hook" in code


def test_what_is_not_captured_runs_on_the_engine_with_the_reason_counted():
    recorder = Recorder()
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)
    with compiled_autograd.enable(recorder):
        with pytest.warns(UserWarning, match="Anomaly Detection"), dynjit.autograd.detect_anomaly():
            x.exp().sum().backward()
    assert same(x.grad, x.detach().exp())
    assert recorder.graphs == []
    assert counters["compiled_autograd"]["eager: anomaly mode"] == 1


def test_a_modified_saved_tensor_raises_as_in_eager():
    x = dynjit.randn(3, requires_grad=True)
    y = x.exp()
    loss = (y * 2).sum() + y.sum()
    y.add_(1)                    # exp saved its result
    with compiled_autograd.enable(Recorder()):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_backward_inside_a_hook_and_queue_callback():
    order = []
    x = dynjit.tensor([1.0, 2.0], requires_grad=True)

    def hook(g):
        dynjit.autograd.engine.queue_callback(lambda: order.append("callback"))
        order.append("hook")
        return g

    x.register_hook(hook)
    with compiled_autograd.enable(Recorder()):
        (x * x).sum().backward()
    assert order == ["hook", "callback"]
    assert same(x.grad, dynjit.tensor([2.0, 4.0]))


def test_bad_compiler_fn_is_reported():
    with pytest.raises(TypeError, match="callable compiler_fn"):
        with compiled_autograd.enable("llvm"):
            pass
    x = dynjit.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="compiler_fn must return a callable, got str"):
        with compiled_autograd.enable(lambda gm: "llvm"):
            (x * 2).sum().backward()


def test_past_the_cache_size_limit_backward_runs_on_the_engine(monkeypatch):
    monkeypatch.setattr(dynjit.config, "cache_size_limit", 2)
    recorder = Recorder()
    w = dynjit.randn(2, requires_grad=True)
    with compiled_autograd.enable(recorder), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (1, 2, 3, 4):
            (dynjit.ones(n, 2) * w).sum().backward()
    assert len(recorder.graphs) == 2
    assert sum("cache_size_limit" in str(w.message) for w in caught) == 1
    assert counters["compiled_autograd"]["eager: cache_size_limit reached"] == 2
    assert same(w.grad, dynjit.full((2,), 10.0))


def test_disable_and_nesting():
    recorder = Recorder()
    x = dynjit.randn(2, requires_grad=True)
    with compiled_autograd.enable(recorder):
        with compiled_autograd.disable():
            (x * 2).sum().backward()
        assert recorder.graphs == []
        (x * 2).sum().backward()
    assert len(recorder.graphs) == 1
    (x * 2).sum().backward()
    assert len(recorder.graphs) == 1
    assert same(x.grad, dynjit.full((2,), 6.0))


def _programs():
    """Backward passes over a spread of ops: multi-output ops with unused outputs (their
    zero gradients are constants of the graph), indexing, reductions, in-place ops."""
    import dynjit.nn.functional as F
    return {
        "split": lambda x: x.split(2, dim=1)[0].sin().sum(),
        "topk": lambda x: x.topk(2, dim=1)[0].sum(),
        "sort": lambda x: (x.sort(dim=1)[0] * dynjit.arange(6.0)).sum(),
        "max": lambda x: x.max(dim=1)[0].sum(),
        "softmax": lambda x: (F.softmax(x, dim=1) * dynjit.arange(6.0)).sum(),
        "index": lambda x: x[:, [0, 2, 2]].pow(2).sum(),
        "where": lambda x: dynjit.where(x > 0, x, x * 0.1).sum(),
        "cross_entropy": lambda x: F.cross_entropy(x, dynjit.tensor([0, 1, 2, 3])),
        "norm": lambda x: x.norm(),
        "inplace": lambda x: (x * 1).add_(1).relu_().sum(),
        "inplace_through_view": _write_through_view,
        "setitem": _setitem,
    }


def _write_through_view(x):
    y = x * 1
    y[1:3].mul_(x[0])            # an in-place op through a view: the base gets CopySlices
    return (y * y).sum()


def _setitem(x):
    y = x.sin()
    y[:, 2] = x[:, 0] * 3
    return y.sum()


@pytest.mark.parametrize("backend", [None, "llvm"])
@pytest.mark.parametrize("name", sorted(_programs()))
def test_op_sweep_matches_the_engine(name, backend):
    program = _programs()[name]
    x = dynjit.randn(4, 6, requires_grad=True)
    program(x).backward()
    expected, x.grad = x.grad, None
    recorder = Recorder(backend)
    with compiled_autograd.enable(recorder):
        for _ in range(2):
            x.grad = None
            program(x).backward()
    assert same(x.grad, expected)
    assert len(recorder.graphs) == 1
    assert counters["compiled_autograd"]["cache_hits"] == 1


def test_captures_and_fallbacks_are_logged(caplog):
    dynjit.set_logs("compiled_autograd")
    try:
        x = dynjit.randn(3, requires_grad=True)
        with caplog.at_level("DEBUG", logger="dynjit.compiled_autograd"):
            with compiled_autograd.enable(Recorder()):
                for _ in range(2):
                    x.sin().sum().backward()
                with pytest.warns(UserWarning, match="Anomaly"), dynjit.autograd.detect_anomaly():
                    x.sin().sum().backward()
    finally:
        dynjit.set_logs()
    messages = [r.getMessage() for r in caplog.records if r.name == "dynjit.compiled_autograd"]
    assert messages[0].startswith("captured a backward of 3 nodes:\nclass GraphModule")
    assert "dynjit.ops.cos" in messages[0]
    assert messages[1:] == ["cache hit: a backward of 3 nodes", "runs on the engine: anomaly mode"]


def test_a_compiler_lambda_written_inside_the_loop_reuses_the_compiled_backward():
    compiled = []
    w = dynjit.randn(3, requires_grad=True)
    for _ in range(3):
        # a new function object every step, with the same code and closure
        with compiled_autograd.enable(lambda gm: compiled.append(gm) or gm):
            (w * w).sum().backward()
    assert len(compiled) == 1
    assert counters["compiled_autograd"]["cache_hits"] == 2
    # compilers that differ in what they close over do not share
    seen_a, seen_b = [], []
    for seen in (seen_a, seen_b):
        with compiled_autograd.enable(lambda gm, seen=seen: seen.append(gm) or gm):
            (w * w).sum().backward()
    assert len(seen_a) == len(seen_b) == 1
    assert same(w.grad, 10 * w.detach())


@pytest.mark.parametrize("backend", [None, "eager"])
def test_a_hook_changing_the_gradients_shape_is_refused_as_in_eager(backend):
    x = dynjit.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match=r"hook changed the gradient's shape from \[3\] to \[\]"):
        y.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match=r"hook changed the gradient's shape from \[3\] to \[\]"):
        with compiled_autograd.enable(Recorder(backend, fullgraph=False)):
            y.sum().backward()
    assert x.grad is None
