"""Automatic dynamic numbers: an int or float (argument, attribute, dict item, global) whose
value changes between calls is compiled once more as a symbolic value, then never again for
new values, unless the trace needs the value itself (a comparison, a size), which
specializes it. Every call gives the plain result; the tests count compiles."""
import pytest

import dynjit
from dynjit import nn
from dynjit.testing import CompileCounter, same
from dynjit.utils import counters

BACKENDS = ["eager", "aot_eager", "llvm"]


def _both(fn, compiled, *args):
    expected, got = fn(*args), compiled(*args)
    assert type(got) is type(expected)
    if isinstance(expected, tuple):
        for e, g in zip(expected, got):
            assert type(g) is type(e)
            assert same(g, e) if isinstance(e, dynjit.Tensor) else g == e
    else:
        assert same(got, expected)
    return got


def test_an_int_and_a_float_argument_taking_100_values_compile_at_most_twice():
    def f(x, k, lr):
        y = x * k + lr
        return y - lr * 2 + (k + 1), lr * 3, k - 1, k / 2, -k, abs(lr - 1)

    cnt = CompileCounter()
    compiled = dynjit.compile(f, backend=cnt)
    x = dynjit.randn(3)
    for i in range(100):
        _both(f, compiled, x, i, 0.01 * i)
    assert cnt.frame_count == 2          # both changed at the second call: one recompile
    assert compiled.recompile_reasons == ["k changed from 0 to 1; now dynamic: k, lr"]


def test_each_number_that_changes_later_adds_one_compile():
    def f(x, k, lr):
        return x * k + lr

    cnt = CompileCounter()
    compiled = dynjit.compile(f, backend=cnt)
    x = dynjit.randn(3)
    for i in range(30):
        _both(f, compiled, x, i, 0.5)
    for i in range(30):
        _both(f, compiled, x, 7, 0.1 * i)
    assert cnt.frame_count == 3


def test_dynamic_false_keeps_numbers_static_and_dynamic_true_starts_symbolic():
    def f(x, k):
        return x * k

    static, symbolic = CompileCounter(), CompileCounter()
    c_static = dynjit.compile(f, backend=static, dynamic=False)
    c_symbolic = dynjit.compile(f, backend=symbolic, dynamic=True)
    for k in range(5):
        _both(f, c_static, dynjit.ones(2), k)
        _both(f, c_symbolic, dynjit.ones(2), k)
    assert (static.frame_count, symbolic.frame_count) == (5, 1)


def test_a_number_the_trace_compares_is_specialized_and_stays_correct():
    def f(x, k):
        if k > 3:
            return x * k
        return x - k

    compiled = dynjit.compile(f, backend="eager")
    for k in [0, 1, 5, 2, 9, 3, 4]:
        _both(f, compiled, dynjit.ones(2), k)


def test_a_value_error_or_zero_division_raises_as_in_python():
    def f(x, k):
        return x * (1 / k)

    compiled = dynjit.compile(f, backend="eager")
    _both(f, compiled, dynjit.ones(2), 1)
    _both(f, compiled, dynjit.ones(2), 2)      # k is dynamic now
    with pytest.raises(ZeroDivisionError):
        compiled(dynjit.ones(2), 0)
    _both(f, compiled, dynjit.ones(2), 4)


class Counter:
    def __init__(self):
        self.count = 0
        self.scale = 1.5

    def bump(self):
        self.count += 1
        return self.count

    @property
    def doubled(self):
        return self.count * 2 + 1


def test_attributes_updated_from_dynamic_numbers_read_their_old_value_first():
    def f(x, obj):
        obj.bump()
        return x * obj.scale, obj.doubled, obj.count

    plain_obj, compiled_obj = Counter(), Counter()
    cnt = CompileCounter()
    compiled = dynjit.compile(f, backend=cnt)
    for i in range(10):
        plain_obj.scale = compiled_obj.scale = 1.0 + i
        x = dynjit.randn(2)
        expected, got = f(x, plain_obj), compiled(x, compiled_obj)
        assert same(got[0], expected[0]) and got[1:] == expected[1:]
        assert compiled_obj.count == plain_obj.count
    assert cnt.frame_count == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_the_plain_result_for_new_values(backend):
    def f(x, k, lr):
        return (x * lr + k).sum() * 2, k * 2

    # aot_eager and llvm take tensor inputs only: a number a tensor op uses is specialized there
    # (a compile per value, up to config.cache_size_limit); the eager backend keeps it symbolic
    cnt = CompileCounter() if backend == "eager" else None
    compiled = dynjit.compile(f, backend=cnt or backend)
    for i in range(8):
        _both(f, compiled, dynjit.randn(4), i, 0.1 * i)
    assert cnt is None or cnt.frame_count == 2


def _make():
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    return model, dynjit.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _train_step(model, opt, x, y, total, step):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    total += loss.item()
    return total, step + 1


def test_a_training_step_with_a_changing_lr_a_running_total_and_a_counter_stops_recompiling():
    plain_model, plain_opt = _make()
    model, opt = _make()
    cnt = CompileCounter()
    compiled = dynjit.compile(_train_step, backend=cnt)
    totals = [0.0, 0.0]
    steps = [0, 0]
    frames = []
    for i in range(20):
        x, y = dynjit.randn(5, 4), dynjit.randn(5, 1)
        for o in (plain_opt, opt):
            for group in o.param_groups:
                group["lr"] = 0.1 / (1 + i)          # a schedule
        totals[0], steps[0] = _train_step(plain_model, plain_opt, x, y, totals[0], steps[0])
        totals[1], steps[1] = compiled(model, opt, x, y, totals[1], steps[1])
        frames.append(cnt.frame_count)
    assert totals[0] == totals[1] and steps[0] == steps[1] == 20
    for p, q in zip(plain_model.parameters(), model.parameters()):
        assert dynjit.equal(p, q)
    assert frames[-1] == frames[3]            # nothing compiles after the first few steps
    assert frames[-1] <= 5, frames


def test_the_recompile_log_names_the_number_made_dynamic(caplog):
    def f(x, k):
        return x + k

    compiled = dynjit.compile(f, backend="eager")
    dynjit.set_logs("dynamic")
    try:
        with caplog.at_level("DEBUG", logger="dynjit.dynamic"):
            compiled(dynjit.ones(1), 2)
            compiled(dynjit.ones(1), 3)
    finally:
        dynjit.set_logs()
    assert any("dynamic numbers k" in r.getMessage() for r in caplog.records)
    counters.clear()


# -- sizes: once a tensor's size changed, an input's sizes are dynamic numbers -----------------
def _heads(x, w):
    b, t = x.shape[0], x.size(1)
    h = x.view(b, t, 2, -1).transpose(1, 2)          # a transformer-style split into heads
    y = h.reshape(b, -1) @ w
    return y * x.shape[-1] + b, x.shape[1:], b * t


def test_reading_sizes_compiles_twice_for_twenty_batch_sizes():
    cnt = CompileCounter()
    compiled = dynjit.compile(_heads, backend=cnt)
    for n in range(2, 22):
        x, w = dynjit.randn(n, 3, 4), dynjit.randn(12, 5)
        _both(_heads, compiled, x, w)
    assert cnt.frame_count == 2
    assert compiled.recompile_reasons == ["x: size (3, 3, 4) (compiled for (2, 3, 4))"]


def test_a_size_the_trace_compares_is_guarded():
    def f(x):
        if x.shape[0] > 3:
            return x * 2
        return x.view(x.shape[0], -1) - 1

    compiled = dynjit.compile(f, backend="eager")
    for n in [1, 2, 5, 3, 7, 4]:
        _both(f, compiled, dynjit.randn(n, 2, 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_on_every_backend_give_the_plain_result(backend):
    compiled = dynjit.compile(_heads, backend=backend)
    for n in range(2, 8):
        _both(_heads, compiled, dynjit.randn(n, 3, 4), dynjit.randn(12, 5))


def test_a_training_step_over_batches_of_every_size_compiles_a_bounded_number_of_times():
    plain_model, plain_opt = _make()
    model, opt = _make()
    cnt = CompileCounter()

    def step(model, opt, x, y):
        opt.zero_grad()
        out = model(x.view(x.shape[0], -1))
        loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = dynjit.compile(step, backend=cnt)
    for n in range(2, 22):
        x, y = dynjit.randn(n, 2, 2), dynjit.randn(n, 1)
        assert same(compiled(model, opt, x, y), step(plain_model, plain_opt, x, y))
    for p, q in zip(plain_model.parameters(), model.parameters()):
        assert dynjit.allclose(p, q)
    assert cnt.frame_count <= 6


# -- mark_dynamic / maybe_mark_dynamic / mark_static ---------------------------------------------
def _flatten_rows(x):
    return x.view(x.shape[0], -1) * 2


def test_mark_dynamic_compiles_once_for_every_size_of_the_marked_dimension():
    cnt = CompileCounter()
    compiled = dynjit.compile(_flatten_rows, backend=cnt)
    for n in range(2, 9):
        x = dynjit.randn(n, 3, 2)
        dynjit.mark_dynamic(x, 0)
        _both(_flatten_rows, compiled, x)
    assert cnt.frame_count == 1
    x = dynjit.randn(4, 5, 2)          # an unmarked dimension changed: guarded, compiles again
    dynjit.mark_dynamic(x, 0)
    _both(_flatten_rows, compiled, x)
    assert cnt.frame_count == 2


def test_specializing_a_dimension_marked_dynamic_is_an_error_naming_the_line():
    def f(x):
        if x.shape[0] > 3:
            return x * 2
        return x

    x = dynjit.randn(5, 2)
    dynjit.mark_dynamic(x, 0)
    with pytest.raises(dynjit.frontend.ConstraintViolationError,
                       match=r"dimension 0 of x was marked dynamic(.|\n)*test_dynamic_scalars.py:\d+"):
        dynjit.compile(f, backend="eager")(x)
    y = dynjit.randn(5, 2)
    dynjit.maybe_mark_dynamic(y, 0)               # may be specialized: guarded instead
    _both(f, dynjit.compile(f, backend="eager"), y)
    def tensor_inputs_only(gm, example_inputs):     # aot_eager takes numbers now (issue 16)
        return gm.forward
    with pytest.raises(dynjit.frontend.ConstraintViolationError, match="takes tensor inputs only"):
        dynjit.compile(_flatten_rows, backend=tensor_inputs_only)(x)


def test_mark_static_keeps_a_dimension_guarded_exactly_under_dynamic_true():
    cnt = CompileCounter()
    compiled = dynjit.compile(lambda x: x.view(x.shape[0], -1) + 1, backend=cnt, dynamic=True)
    for n in range(2, 5):
        x = dynjit.randn(n, 3)
        dynjit.mark_static(x, 0)
        assert same(compiled(x), x.view(n, -1) + 1)
    assert cnt.frame_count == 3
    with pytest.raises(IndexError):
        dynjit.mark_dynamic(dynjit.ones(2), 1)
