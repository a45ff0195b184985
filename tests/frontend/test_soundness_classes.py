"""Differential tests, one per class of unsoundness the frontend had: each program runs
plain and compiled on fresh, equal inputs, and results, side effects, exceptions and the
caller's grad mode must be the same. Each runs in a subprocess too where the old failure
was a crash of the interpreter."""
import dataclasses
import enum
import itertools
import subprocess
import sys
import textwrap
import time
import types

import pytest

import dynjit
from dynjit.testing import same


def _outcome(fn, *args):
    try:
        return "returned", fn(*args)
    except Exception as e:
        return "raised", (type(e), str(e))


def _same_outcome(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "raised":
        return a[1] == b[1]
    return _deep_same(a[1], b[1])


def _deep_same(a, b):
    if isinstance(a, dynjit.Tensor):
        return isinstance(b, dynjit.Tensor) and same(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_deep_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_deep_same(a[k], b[k]) for k in a)
    return a == b


def check(fn, make_args=lambda: (dynjit.tensor([1.0, 2.0]),)):
    """fn plain and compiled: same outcome, same effects on the arguments, same grad mode."""
    plain_args, compiled_args = make_args(), make_args()
    want = _outcome(fn, *plain_args)
    want_mode = dynjit.is_grad_enabled()
    dynjit.set_grad_enabled(True)
    got = _outcome(dynjit.compile(fn), *compiled_args)
    got_mode = dynjit.is_grad_enabled()
    dynjit.set_grad_enabled(True)
    assert _same_outcome(got, want), (got, want)
    assert _deep_same(list(compiled_args), list(plain_args))
    assert got_mode == want_mode
    return got


_CRASH_PROGRAM = """
import types, time, dynjit
ns = types.SimpleNamespace(out=lambda *a: None, graph_break=dynjit.graph_break,
                           perf_counter=time.perf_counter)
def fn(x):
    y = x * 2
    ns.out("hi")
    ns.graph_break()
    ns.perf_counter()
    return y + 1
got = dynjit.compile(fn)(dynjit.ones(2))
assert dynjit.allclose(got, fn(dynjit.ones(2)))
print("ok")
"""


def test_break_at_a_call_through_an_attribute_of_an_unmodelled_object_does_not_crash():
    # the method-form attribute load pushed a NULL that the break code packed into a tuple
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_CRASH_PROGRAM)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_a_list_made_in_the_frame_keeps_its_identity_across_a_break():
    def fn(x):
        out = []
        out.append(x.sum().item())
        alias = out
        alias.append(1)
        return out, alias is out
    got = check(fn)
    assert got[1] == ([3.0, 1], True)


def test_closures_made_before_a_break_see_later_writes():
    def fn(x):
        k = 1

        def get():
            return k
        dynjit.graph_break()
        k = 2
        return x * get()
    check(fn)


def test_nonlocal_writes_through_a_closure_after_a_break():
    def fn(x):
        total = 0

        def add(v):
            nonlocal total
            total += v
        add(1)
        dynjit.graph_break()
        add(2)
        return x * total, total
    check(fn)


def test_nested_function_capturing_a_variable_of_an_enclosing_function():
    def outer():
        data = [1]

        def fn(x):
            def get():
                return data
            return x + 1, get
        return fn
    fn = outer()
    plain, compiled = fn(dynjit.ones(2)), dynjit.compile(fn)(dynjit.ones(2))
    assert same(plain[0], compiled[0]) and compiled[1]() is plain[1]() is fn.__closure__[0].cell_contents


class Color(enum.Enum):
    R = 1
    G = 2


@dataclasses.dataclass
class Pair:
    a: int = 1
    b: int = 2


def test_comprehensions_whose_body_cannot_be_traced():
    def fn(x):
        s = [c.value for c in Color]
        t = [f.name for f in dataclasses.fields(Pair())]
        u = [k for k, _ in itertools.groupby([1, 1, 2])]
        g = [v for v in (i for i in range(3))]
        return x * sum(s), t, u, g
    check(fn)


class _Base:
    def f(self, x):
        return x + 1


class _Derived(_Base):
    def f(self, x):
        dynjit.graph_break()
        return super().f(x) * 2


def test_zero_argument_super_after_a_break():
    obj = _Derived()
    assert same(dynjit.compile(obj.f)(dynjit.ones(2)), obj.f(dynjit.ones(2)))


@dynjit.no_grad()
def _no_grad_helper(x):
    return x * 2


@pytest.mark.parametrize("body", ["inference", "decorated", "break_in_no_grad", "raise_in_inference"])
def test_grad_mode_does_not_leak_out_of_a_compiled_call(body):
    def fn(x):
        if body == "inference":
            with dynjit.inference_mode():
                y = x + 1
            return y
        if body == "decorated":
            return _no_grad_helper(x)
        if body == "break_in_no_grad":
            with dynjit.no_grad():
                dynjit.graph_break()
                return x + 1
        with dynjit.inference_mode():
            raise KeyError("boom")
    check(fn)


def test_zip_strict_and_a_dict_growing_while_iterated_raise():
    def zipped(x):
        return [a * b for a, b in zip([x, x], [1, 2, 3], strict=True)]

    def grows(x):
        d = {1: x}
        for k in d:
            d[k + 1] = x
        return d
    assert check(zipped)[0] == "raised"
    assert check(grows)[0] == "raised"


def test_list_appended_while_iterated_and_extended_in_place():
    def fn(x, lst):
        for v in lst:
            if len(lst) < 5:
                lst.append(v + 1)
        lst += [x.sum().item()]
        return len(lst)
    check(fn, lambda: (dynjit.ones(2), [1]))


def test_user_exceptions_at_trace_time_keep_the_effects_before_them():
    log = []

    def fn(x):
        log.append(len(log))
        y = x * 2
        return int("x"), y
    log_plain = []
    got = check(fn)
    assert got[0] == "raised" and got[1][0] is ValueError
    del log_plain


def test_a_long_loop_with_a_break_runs_without_recursion():
    def fn(x, n):
        s = 0.0
        for _ in range(n):
            x = x + 1
            s += x.sum().item()
        return x, s
    check(fn, lambda: (dynjit.ones(2), 3000))


def test_a_break_after_a_with_block_resumes_compiled():
    # 3.12+ end a `with` block's exception path with a backward jump: it closes no loop, so a
    # break after the block still compiles the rest instead of running the frame plain
    def fn(x):
        with dynjit.no_grad():
            y = x * 2
        z = y + 1
        dynjit.graph_break()
        return z * 3
    counter = dynjit.testing.CompileCounter()
    x = dynjit.tensor([1.0, 2.0])
    assert same(dynjit.compile(fn, backend=counter)(x), fn(x))
    assert counter.frame_count == 2
    check(fn)


def test_generated_code_carries_the_user_function_name():
    def user_function(x):
        y = x * 2
        dynjit.graph_break()
        raise ValueError("boom")
    compiled = dynjit.compile(user_function)
    with pytest.raises(ValueError) as info:
        compiled(dynjit.ones(2))
    names = [frame.name for frame in info.traceback]
    assert not any(n.startswith(("__resume_at", "__break_at")) for n in names)
    assert names.count("user_function") >= 1


_ = (types, time)


def test_an_unknown_python_version_fails_at_compile_with_a_clear_message(monkeypatch):
    from dynjit.frontend import bytecode_info
    monkeypatch.setattr(bytecode_info, "VERSION", (3, 14))
    with pytest.raises(RuntimeError, match=r"supports Python 3\.11, 3\.12, 3\.13; this is Python 3\.14"):
        dynjit.compile(lambda x: x + 1)


def test_builtin_iterators_over_a_list_changed_in_the_loop_are_live():
    # zip / enumerate / reversed / iter pull from the list as Python's do (found by the fuzzer)
    def shrink(x, lst):
        for _ in zip(lst, range(3)):
            lst.pop()
        return x + len(lst)

    def grow(x, lst):
        for _ in zip(lst, range(3)):
            lst.insert(0, len(lst))
        return x

    def several(x, lst):
        out = []
        for i, v in enumerate(lst):
            if i < 3:
                lst.append(v + 1)
            out.append((i, v))
        for v in reversed(lst):
            if len(lst) > 3:
                lst.pop()
            out.append(v)
        doubled = list(map(lambda a: a * 2, lst))
        kept = list(filter(None, [0, 1, 2]))
        it = iter(lst)
        first = next(it)
        lst.append(9)
        return x * len(out), out, doubled, kept, first, list(it)

    def strict_zip(x, a, b):
        try:
            return x, list(zip(a, b, strict=True))
        except ValueError as e:
            return x, str(e)
    check(shrink, lambda: (dynjit.ones(2), [1, 2, 3, 4]))
    check(grow, lambda: (dynjit.ones(2), [3, 2, 1]))
    check(several, lambda: (dynjit.ones(2), [1, 2]))
    for a, b in (([1, 2], [3]), ([1], [2, 3]), ([1, 2], [3, 4])):
        check(strict_zip, lambda: (dynjit.ones(1), list(a), list(b)))


def test_an_exception_leaving_a_with_block_inside_try_is_caught():
    class Boom(Exception):
        pass

    def fn(x):
        try:
            with dynjit.no_grad():
                raise Boom("r", x.shape[0])
        except Boom:
            x = x + 1
        return x * 2
    check(fn)


def test_an_inference_tensor_argument_is_guarded_and_traced_as_one():
    # an in-place op on an inference tensor outside inference mode raises in eager; compiled, the
    # effects before it must stay (found by the fuzzer: the graph raised before they were replayed)
    log = {}

    def fn(x):
        y = x * 2
        log["before"] = 1
        x.sub_(dynjit.where(x > 0, x, x))
        return y

    with dynjit.inference_mode():
        inference_tensor = dynjit.ones(2)
    compiled = dynjit.compile(fn)
    assert same(compiled(dynjit.ones(2)), fn(dynjit.ones(2)))       # compiled for a normal tensor
    for run in (fn, compiled):
        log.clear()
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            run(inference_tensor)
        assert log == {"before": 1}


def test_comprehension_variables_that_share_a_cells_name():
    # PEP 709 (3.12+) inlines comprehensions: one whose variable has the name of a cell of the
    # function saves the cell (LOAD_FAST_AND_CLEAR), uses the slot for its own values or a new
    # cell of its own, and puts the function's cell back after. The function's `b` must be 10
    # afterwards, with or without a graph break before the comprehensions.
    def no_break(x):
        b = 10
        g = lambda: b
        n = [b * 2 for b in range(3)]
        m = [(lambda: b)() for b in range(3)]
        return x + g() + n[-1] + m[-1] + b

    def with_break(x):
        b = 10
        g = lambda: b
        k = int(x.sum())                                   # graph break
        n = [b * 2 for b in range(3)]
        m = [(lambda: b)() for b in range(3)]
        return x + g() + n[-1] + m[-1] + b + k

    def break_at_the_comprehension(x):
        n = [int(b) for b in x.tolist()]                   # graph break (data read)
        m = [sum(1 for a in n if a > b) for b in range(3)]  # `b` is also a cell
        return x + m[0]

    for fn in (no_break, with_break, break_at_the_comprehension):
        check(fn)


def _helper(t):
    return t * 2


class _Box:
    pass


def test_is_between_objects_reached_two_ways_is_guarded():
    # `fn is _helper` compares the objects, and the answer is guarded: the same compiled code
    # must not answer for another function, nor for two arguments that become one object
    def by_function(x, fn):
        return fn(x) + 100 if fn is _helper else fn(x)

    compiled = dynjit.compile(by_function)
    for fn in (_helper, lambda t: t * 3, _helper, lambda t: t * 2):
        assert same(compiled(dynjit.ones(2), fn), by_function(dynjit.ones(2), fn))

    def by_object(x, a, b):
        return x + 1 if a is b else x - 1

    compiled = dynjit.compile(by_object)
    one, other = _Box(), _Box()
    for a, b in ((one, other), (one, one), (other, one), (other, other)):
        assert same(compiled(dynjit.ones(2), a, b), by_object(dynjit.ones(2), a, b))


def test_a_lambda_made_for_each_call_does_not_recompile_each_time():
    from dynjit.testing import CompileCounter
    counter = CompileCounter()

    def apply(fn, x):
        return fn(x) + 1

    compiled = dynjit.compile(apply, backend=counter)
    for k in range(12):
        scale = 2.0
        assert same(compiled(lambda t: t * scale + k, dynjit.ones(2)), apply(lambda t: t * scale + k, dynjit.ones(2)))
    assert counter.frame_count <= 2         # k changed: one more compile, with k dynamic

    def outer(x, k):
        def inner(t):
            return t * k
        return compiled(inner, x)

    counter.clear()
    for k in (3, 3, 3, 4):
        assert same(outer(dynjit.ones(2), k), dynjit.ones(2) * k + 1)
    assert counter.frame_count <= 2
