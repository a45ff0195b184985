"""Differential tests for Python's comparison and operator rules (container equality,
reflected-operator priority), the inputs a compiled frame is given (is_leaf of a non-leaf
input, out= tensors, in-place changes of an input's shape or storage), generators reading
variables when they run, and lazy iterators that escape. Each program runs plain and compiled
on every backend; results, exceptions and the state of the arguments must agree."""
import collections

import pytest

import dynjit

from test_soundness_classes import _deep_same, _outcome, _same_outcome

BACKENDS = ["eager", "aot_eager", "llvm"]


def check(fn, make_args, backend):
    plain_args, compiled_args = make_args(), make_args()
    want = _outcome(fn, *plain_args)
    got = _outcome(dynjit.compile(fn, backend=backend), *compiled_args)
    assert _same_outcome(got, want), (got, want)
    assert _deep_same(compiled_args, plain_args)
    return got


def _ones():
    return (dynjit.ones(2),)


class Truthy:
    """== returns a truthy non-bool: a sequence compare takes its truth value."""

    def __eq__(self, other):
        return ("eq",)

    __hash__ = object.__hash__


class Counted:
    calls = []

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        Counted.calls.append(self.v)
        return isinstance(other, Counted) and self.v == other.v

    __hash__ = object.__hash__


def sequences_compare_element_by_element(x):
    Counted.calls.clear()
    return ([Truthy()] == [Truthy()], (x,) == (x,), [x] == [x], [x] != [x],
            [Counted(1), Counted(2)] == [Counted(1), Counted(3)], (Counted(1),) == (Counted(1),),
            [1] == (1,), [1, 2] == [1], list(Counted.calls))


def dicts_compare_by_key(x, d):
    return (d == {"b": 2, "a": 1}, d != {"b": 2, "a": 1}, {"k": [1, x]} == {"k": [1, x]},
            {1: "a"} == {1.0: "a"}, collections.defaultdict(int, {"a": 1}) == {"a": 1},
            collections.OrderedDict(a=1, b=2) == collections.OrderedDict(b=2, a=1),
            collections.OrderedDict(a=1, b=2) == {"b": 2, "a": 1}, d == {"a": 1})


@pytest.mark.parametrize("backend", BACKENDS)
def test_container_equality_follows_python(backend):
    got = check(sequences_compare_element_by_element, _ones, backend)
    assert got[1][:8] == (True, True, True, False, False, True, False, False)
    got = check(dicts_compare_by_key, lambda: (dynjit.ones(2), {"a": 1, "b": 2}), backend)
    assert got[1] == (True, False, True, True, True, False, True, False)


class Base:
    def __sub__(self, other):
        return "Base.__sub__"

    def __eq__(self, other):
        return "Base.__eq__"

    def __lt__(self, other):
        return "Base.__lt__"

    __hash__ = object.__hash__


class Sub(Base):
    def __rsub__(self, other):
        return "Sub.__rsub__"

    def __eq__(self, other):
        return "Sub.__eq__"

    def __gt__(self, other):
        return "Sub.__gt__"

    __hash__ = object.__hash__


class Plain(Base):
    pass


def reflected_priority(x):
    return Base() - Sub(), Base() == Sub(), Base() < Sub(), Base() - Plain(), Sub() - Base()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_subclass_on_the_right_gets_its_reflected_method_first(backend):
    got = check(reflected_priority, _ones, backend)
    assert got[1] == ("Sub.__rsub__", "Sub.__eq__", "Sub.__gt__", "Base.__sub__", "Base.__sub__")


def reads_is_leaf(a):
    return a * 2, a.is_leaf


@pytest.mark.parametrize("backend", BACKENDS)
def test_is_leaf_of_an_input_is_the_callers(backend):
    w = dynjit.ones(2, requires_grad=True)
    compiled = dynjit.compile(reads_is_leaf, backend=backend)
    for arg in (w * 1, w, dynjit.ones(2), w * 3):
        assert compiled(arg)[1] == reads_is_leaf(arg)[1]


def into_out(a):
    out = dynjit.empty(2)
    r = dynjit.add(a, 1, out=out)
    small = dynjit.empty(1)
    s = dynjit.mul(a, 2, out=small)          # resized, with eager's warning
    return r is out, out, s is small, small.shape


def shape_in_place(x, y):
    a = x.mul_(2).t_()
    b = y.unsqueeze_(0)
    return a is x, b is y, x.shape, y.shape


def resizes(x):
    return x.resize_(3, 2), x.shape


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("backend", BACKENDS)
def test_out_tensors_and_in_place_shape_changes_act_on_the_callers_tensors(backend):
    got = check(into_out, _ones, backend)
    assert got[1][0] is True and got[1][2] is True
    got = check(shape_in_place, lambda: (dynjit.ones(2, 3), dynjit.ones(3)), backend)
    assert got[1][:2] == (True, True)
    check(resizes, lambda: (dynjit.zeros(2, 3),), backend)


def late_binding(x):
    k = 1
    gen = (x * k for _ in range(2))
    k = 100
    return list(gen), sum(t.sum() for t in [x, x * k])


LOG = []


def escaping_map(x, vals):
    return map(lambda v: LOG.append(v) or x * v, vals), x * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_generators_run_when_consumed_and_lazy_iterators_stay_lazy(backend):
    got = check(late_binding, _ones, backend)
    assert got[1][0][0].tolist() == [100.0, 100.0]
    LOG.clear()
    mapped, _ = dynjit.compile(escaping_map, backend=backend)(dynjit.ones(1), [1, 2])
    assert type(mapped) is map and LOG == []
    assert [t.item() for t in mapped] == [1.0, 2.0] and LOG == [1, 2]


def steps_through(x, src):
    k = 1
    scaled = (x * k * v for v in src)
    first = next(scaled)            # runs the body to its first yield only
    k = 10
    src.append(5)                   # the running generator sees the new item
    second = next(scaled)
    k = 100
    return first, second, list(scaled)


def interleaves_effects(x):
    log = []

    def item(i):
        log.append(("make", i))
        return x * i
    gen = (item(i) for i in range(4))
    first = next(gen)
    log.append("between")
    found = any(t.sum() > 2 for t in gen)     # stops at the first match: item 3 is never made
    return log, first, found


def counts_down(n, log):
    while n > 0:
        log.append(n)
        yield n
        n -= 1


def consumes_a_generator_function(x, log):
    gen = counts_down(3, log)
    head = next(gen)
    log.append("head")
    return [x * v for v in gen], head


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_generator_runs_one_step_per_next_in_plain_pythons_order(backend):
    got = check(steps_through, lambda: (dynjit.ones(2), [1, 2, 3]), backend)
    assert [t[0].item() for t in got[1][:2]] == [1.0, 20.0]
    got = check(interleaves_effects, _ones, backend)
    assert got[1][0] == [("make", 0), "between", ("make", 1), ("make", 2)]
    got = check(consumes_a_generator_function, lambda: (dynjit.ones(1), []), backend)
