"""Compiled nn.Modules and training steps: compiled vs eager, with frame and op counts."""
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit import nn
from dynjit.testing import CompileCounter, same


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_compiled_module_traces_its_submodules_into_one_graph():
    dynjit.manual_seed(0)
    model = MLP()
    cnt = CompileCounter()
    compiled = dynjit.compile(model, backend=cnt)
    x = dynjit.randn(5, 8)
    assert same(compiled(x), model(x))
    assert compiled(x).shape == (5, 4)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)     # linear, relu, linear


def test_sequential_iterates_its_children_at_trace_time():
    dynjit.manual_seed(0)
    seq = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4), nn.Sigmoid())
    cnt = CompileCounter()
    compiled = dynjit.compile(seq, backend=cnt)
    x = dynjit.randn(3, 8)
    assert same(compiled(x), seq(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 4)


def test_parameters_are_graph_inputs_so_updates_are_seen_without_recompiling():
    dynjit.manual_seed(0)
    model = MLP()
    cnt = CompileCounter()
    compiled = dynjit.compile(model, backend=cnt)
    x = dynjit.randn(5, 8)
    compiled(x)
    with dynjit.no_grad():
        model.fc1.weight.mul_(2.0)
    assert same(compiled(x), model(x))
    assert cnt.frame_count == 1


def test_module_as_argument_gradients_match_eager():
    def loss_fn(model, x, y):
        return F.cross_entropy(model(x), y)

    dynjit.manual_seed(0)
    model = MLP()
    x, y = dynjit.randn(6, 8), dynjit.randint(0, 4, (6,))
    compiled = dynjit.compile(loss_fn, backend="eager")
    compiled(model, x, y).backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    loss_fn(model, x, y).backward()
    assert all(same(g, p.grad) for g, p in zip(got, model.parameters()))


OPTIMIZERS = [
    pytest.param(lambda ps: dynjit.optim.SGD(ps, lr=0.1, momentum=0.9), id="sgd_momentum"),
    pytest.param(lambda ps: dynjit.optim.Adam(ps, lr=0.01), id="adam"),
]


def _train_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()                 # the one graph break
    opt.step()
    return loss


def _model_and_optimizer(make_opt):
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, make_opt(model.parameters())


class _Updater:
    def __init__(self, params):
        self.params = params

    def apply(self, lr):
        for p in self.params:
            if p.grad is None:
                continue
            p.add_(p.grad, alpha=-lr)


def test_bound_method_argument_is_traced_into_and_guarded_by_type():
    # a fresh bound method object arrives on every call: guarding its identity
    # would recompile every time
    def run(update):
        with dynjit.no_grad():
            update(0.5)

    w = dynjit.ones(3, requires_grad=True)
    w.sum().backward()
    upd = _Updater([w])
    cnt = CompileCounter()
    compiled = dynjit.compile(run, backend=cnt)
    for _ in range(3):
        compiled(upd.apply)
    assert same(w, dynjit.full((3,), -0.5))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)     # no_grad on, add_, no_grad off


def test_library_function_called_for_its_effects_runs_for_real():
    # a dynjit-library call whose result is None must not be dropped
    def clip(model):
        nn.utils.clip_grad_norm_(model.parameters(), 0.01)
        return model.fc1.weight.grad * 1

    dynjit.manual_seed(0)
    model = MLP()
    model(dynjit.randn(4, 8)).sum().backward()
    want_model = MLP()
    want_model.load_state_dict(model.state_dict())
    for p, q in zip(want_model.parameters(), model.parameters()):
        p.grad = q.grad.clone()
    got = dynjit.compile(clip, backend="eager")(model)
    want = clip(want_model)
    assert same(got, want)


def test_library_call_returning_none_is_not_dropped():
    def load(vec, bias):
        nn.utils.vector_to_parameters(vec * 2, [bias])
        return bias + 1

    b_compiled, b_eager = dynjit.zeros(4), dynjit.zeros(4)
    vec = dynjit.arange(4.0)
    got = dynjit.compile(load, backend="eager")(vec, b_compiled)
    assert same(got, load(vec, b_eager))
    assert same(b_compiled, b_eager)


class _Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x).relu()
        print("inside the submodule")
        return y * 2


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.noisy = _Noisy()

    def forward(self, x):
        return self.noisy(self.a(x).tanh()) + 1


def test_graph_break_inside_a_submodule_compiles_the_submodule_as_its_own_frame(capsys):
    # The break stops the caller's graph at the submodule call; the submodule,
    # called natively, goes through the JIT: its part before and after print().
    dynjit.manual_seed(0)
    model = _Outer()
    cnt = CompileCounter()
    compiled = dynjit.compile(model, backend=cnt)
    x = dynjit.randn(2, 4)
    for _ in range(3):
        got = compiled(x)
        printed = capsys.readouterr().out
        assert same(got, model(x))
        assert printed == capsys.readouterr().out == "inside the submodule\n"
    # caller: linear, tanh | submodule: linear, relu | submodule resume: mul | caller resume: add
    assert (cnt.frame_count, cnt.op_count) == (4, 6)


def test_modules_called_by_a_frame_that_runs_eagerly_are_still_compiled(capsys):
    def fn(model, x):
        try:
            print("no graph break inside try: this frame runs eagerly")
            return model(x)
        except ValueError:
            return None

    dynjit.manual_seed(0)
    model = MLP()
    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    x = dynjit.randn(3, 8)
    assert same(compiled(x=x, model=model), fn(model, x))
    assert (cnt.frame_count, cnt.op_count) == (1, 3)      # MLP.forward, compiled on its own
    assert "runs eagerly" in capsys.readouterr().out


def test_optimize_as_a_context_manager_compiles_module_calls_in_the_block():
    dynjit.manual_seed(0)
    model = MLP()
    x = dynjit.randn(3, 8)
    cnt = CompileCounter()
    with dynjit.optimize(cnt):
        got = model(x)
        got_again = model(x)
    assert same(got, model(x)) and same(got_again, got)
    assert (cnt.frame_count, cnt.op_count) == (1, 3)       # compiled once, the second call hit
    model(x)                                                # outside the block: eager
    assert cnt.frame_count == 1


def test_optimize_context_manager_restores_on_error():
    model = MLP()
    with pytest.raises(ValueError):
        with dynjit.optimize("eager"):
            raise ValueError("boom")
    cnt = CompileCounter()
    with dynjit.optimize(cnt):
        model(dynjit.randn(2, 8))
    assert cnt.frame_count == 1
    from dynjit import _jit_callback
    assert _jit_callback.active() is None


def test_setting_grad_to_none_is_replayed_and_seen_by_later_reads():
    def clear(params):
        seen = []
        for p in params:
            p.grad = None
            seen.append(p.grad is None)
        return seen

    def setup():
        ps = [dynjit.ones(3, requires_grad=True), dynjit.ones(2, requires_grad=True)]
        sum(p.sum() for p in ps).backward()
        return ps

    dynjit.utils.counters.clear()
    cnt = CompileCounter()
    got_params, want_params = setup(), setup()
    assert dynjit.compile(clear, backend=cnt)(got_params) == clear(want_params) == [True, True]
    assert all(p.grad is None for p in got_params)
    assert cnt.frame_count == 0          # no tensor op: nothing handed to the backend, no break either
    assert not dynjit.utils.counters["graph_break"]


def test_member_iterators_read_the_module_tree_at_trace_time():
    def summary(model):
        total = 0
        for name, p in model.named_parameters():
            total = total + (p * p).sum()
        names = [n for n, _ in model.named_modules()]
        return total, names, len(list(model.children())), len(list(model.buffers()))

    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    cnt = CompileCounter()
    compiled = dynjit.compile(summary, backend=cnt)
    got, want = compiled(model), summary(model)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    assert cnt.frame_count == 1 and cnt.op_count == 3 * 6       # mul, sum, add per parameter
    model.append(nn.Linear(2, 2))                               # the tree changed: recompile
    got, want = compiled(model), summary(model)
    assert same(got[0], want[0]) and got[1:] == want[1:]
    assert cnt.frame_count == 2


def test_tied_parameters_are_counted_once_as_in_eager():
    def count(model):
        return len(list(model.parameters()))

    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    compiled = dynjit.compile(count, backend="eager")
    assert compiled(model) == count(model) == 4
    model[1].weight = model[0].weight                          # tie: eager now sees 3
    assert compiled(model) == count(model) == 3


def test_zero_grad_inside_a_compiled_function():
    def step(model, x):
        model.zero_grad()
        return model(x).sum()

    dynjit.manual_seed(0)
    model = MLP()
    x = dynjit.randn(2, 8)
    model(x).sum().backward()
    compiled = dynjit.compile(step, backend="eager")
    compiled(model, x).backward()
    got = [p.grad.clone() for p in model.parameters()]
    step(model, x).backward()
    assert all(same(g, p.grad) for g, p in zip(got, model.parameters()))


@pytest.mark.parametrize("make_opt", OPTIMIZERS)
def test_whole_training_step_matches_eager_and_reaches_a_steady_state(make_opt):
    # The optimizer's per-parameter state is a defaultdict keyed by the parameters:
    # traced, it costs one recompile (the first step creates the state), then none.
    x, y = dynjit.randn(32, 8), dynjit.randint(0, 3, (32,))
    eager_model, eager_opt = _model_and_optimizer(make_opt)
    model, opt = _model_and_optimizer(make_opt)
    cnt = CompileCounter()
    compiled = dynjit.compile(_train_step, backend=cnt)
    for _ in range(6):
        assert same(compiled(model, opt, x, y), _train_step(eager_model, eager_opt, x, y))
    assert all(same(a, b) for a, b in zip(model.parameters(), eager_model.parameters()))
    for p, q in zip(model.parameters(), eager_model.parameters()):
        assert opt.state[p].keys() == eager_opt.state[q].keys()
        assert all(same(opt.state[p][k], eager_opt.state[q][k]) for k in opt.state[p])
    # forward + loss, and the update, each compiled twice: the first step creates the state
    assert cnt.frame_count == 4


def test_dicts_keyed_by_tensors():
    from collections import defaultdict

    def fn(x, y, cache, counts):
        cache[x] = x * 2
        counts[y].append(y + 1)
        return cache[x] + (cache[y] if y in cache else 0)

    def args():
        x, y = dynjit.ones(2), dynjit.full((2,), 3.0)
        return x, y, {y: y * 10}, defaultdict(list)

    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    (x1, y1, c1, n1), (x2, y2, c2, n2) = args(), args()
    assert same(compiled(x1, y1, c1, n1), fn(x2, y2, c2, n2))
    # the same keys (the caller's own tensors, by identity, in eager's order) and values
    assert len(c1) == 2 and all(a is b for a, b in zip(c1, [y1, x1]))
    assert all(same(a, b) for a, b in zip(c1.values(), c2.values()))
    assert len(n1) == 1 and next(iter(n1)) is y1 and same(n1[y1][0], n2[y2][0])
    assert cnt.frame_count == 1


def test_dict_subclass_stays_traceable_after_being_deep_copied():
    import copy
    from dynjit.nn.modules.hooks import HookDict

    copy.deepcopy(HookDict(a=1))          # copyreg caches __slotnames__ on the class

    def fn(x, d):
        return x * len(d) + sum(d.values())

    cnt = CompileCounter()
    d = HookDict(a=1, b=2)
    assert same(dynjit.compile(fn, backend=cnt)(dynjit.ones(2), d), fn(dynjit.ones(2), d))
    assert cnt.frame_count == 1
