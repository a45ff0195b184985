"""Differential tests for values that kept the wrong class, globals another module's function
rebinds, tensors created as leaves inside compiled code, backwards that eager refuses, bound
method equality, a module's __dict__, and warnings given on every call.

- tuples of a subclass (namedtuples, a user's tuple with methods) keep their class through
  builtins folded at trace time (sorted, max, reversed, map) and as arguments;
- a module attribute read after an inlined function of that module rebinds the global;
- a factory with requires_grad=True inside compiled code makes a leaf, as eager does;
- a saved tensor modified in place: eager raises only when a backward reads it, so compiled
  code runs the forward and raises at that backward, not at compile time.
Each program runs plain and compiled on every backend; results, exceptions and the state of
the arguments must agree."""
import collections
import collections.abc
import sys
import types
import typing
import warnings

import numpy as np
import pytest

import dynjit

from dynjit.testing import CompileCounterWithBackend
from test_soundness_classes import _same_outcome
from test_soundness_operators_inputs import check as check_once

BACKENDS = ["eager", "aot_eager", "llvm"]


def check(fn, make_args, backend, calls=2):
    """Plain and compiled agree on every call (the second one hits the cache)."""
    for _ in range(calls):
        got = check_once(fn, make_args, backend)
    return got


class Item(typing.NamedTuple):
    rank: int
    label: str = "x"


Pair = collections.namedtuple("Pair", "u v")


class Span(tuple):
    def width(self):
        return self[1] - self[0]


def sorts_records(x):
    by_rank = sorted([Item(2), Item(1, "y")])
    nested = sorted([(Item(3),), (Item(0),)])
    return (by_rank, by_rank[0].label, max([Item(2), Item(1)]).rank, list(reversed([Pair(1, 2)]))[0].v,
            tuple(sorted([Pair(2, 1), Pair(1, 2)])), nested[0][0].rank, list(map(lambda p: p, [Item(5)])),
            type(max([[Item(1)], [Item(2)]])[0]).__name__, x * by_rank[-1].rank)


@pytest.mark.parametrize("backend", BACKENDS)
def test_namedtuples_keep_their_class_through_folded_builtins(backend):
    got = check(sorts_records, lambda: (dynjit.ones(2),), backend)
    assert type(got[1][0][0]) is Item


def measures(x, span):
    return type(span).__name__, span.width(), isinstance(span, Span), sorted([span])[0].width(), x * len(span)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tuple_subclass_argument_keeps_its_class_and_methods(backend):
    check(measures, lambda: (dynjit.ones(2), Span((1, 4))), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_plain_tuple_and_a_tuple_subclass_with_equal_items_get_separate_entries(backend):
    def kind(x, t):
        return type(t).__name__, x + len(t)
    compiled = dynjit.compile(kind, backend=backend)
    assert compiled(dynjit.ones(1), (1, 2))[0] == "tuple"
    assert compiled(dynjit.ones(1), Span((1, 2)))[0] == "Span"
    assert compiled(dynjit.ones(1), (1, 2))[0] == "tuple"


def _counter_module():
    # a user's module whose name starts with "dynjit" is user code, traced into as such
    name = "dynjit_test_counter_module"
    mod = types.ModuleType(name)
    exec("N = 0\nNAMES = ()\n"
         "def bump():\n    global N\n    N += 1\n"
         "def rename(new):\n    global NAMES\n    NAMES = NAMES + (new,)\n", mod.__dict__)
    sys.modules[name] = mod
    return mod


COUNTER = _counter_module()


def bumps_and_reads(x):
    before = COUNTER.N
    COUNTER.bump()
    COUNTER.rename("a")
    after = COUNTER.N
    COUNTER.bump()
    return x * after, before, after, COUNTER.N, COUNTER.NAMES


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_module_attribute_read_after_its_function_rebinds_the_global(backend):
    COUNTER.N, COUNTER.NAMES = 0, ()
    want = bumps_and_reads(dynjit.ones(2))
    state = (COUNTER.N, COUNTER.NAMES)
    COUNTER.N, COUNTER.NAMES = 0, ()
    got = dynjit.compile(bumps_and_reads, backend=backend)(dynjit.ones(2))
    assert _same_outcome(("returned", got), ("returned", want))
    assert (COUNTER.N, COUNTER.NAMES) == state == (2, ("a",))


def leaf_inside(x):
    w = dynjit.ones(2, requires_grad=True)
    y = (w * x).sum()
    y.backward()
    return w.is_leaf, w.grad_fn is None, w.grad, y


def writes_new_leaf(x):
    w = dynjit.ones(2, requires_grad=True)
    w.add_(1)                       # eager: a leaf that requires grad used in an in-place op
    return w * x


def numpy_of_new_leaf_product(x):
    return (dynjit.ones(2, requires_grad=True) * x).numpy()


def perturbation(x):
    delta = dynjit.zeros_like(x)
    delta.requires_grad_()
    loss = ((x + delta) ** 2).sum()
    loss.backward()
    return delta.grad, delta.is_leaf


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [leaf_inside, writes_new_leaf, numpy_of_new_leaf_product, perturbation])
def test_a_tensor_made_with_requires_grad_inside_is_a_leaf(fn, backend):
    check(fn, lambda: (dynjit.arange(2.0) + 1,), backend)


def modifies_saved(w):
    y = w.exp()
    y.add_(1)                 # exp's backward reads y: eager raises only if a backward runs
    return y * 2


def modifies_saved_then_backward(w, log):
    out = modifies_saved(w)
    log.append("forward done")
    out.sum().backward()
    return out


def modifies_saved_other_output_backward(w):
    y = w.exp()
    y.add_(1)
    z = w * 3                 # a backward from z alone never reads y
    z.sum().backward()
    return y, w.grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_saved_tensor_modified_in_place_raises_at_backward_not_at_compile(backend):
    got = check(modifies_saved, lambda: (dynjit.ones(2, requires_grad=True),), backend)
    assert got[0] == "returned" and got[1].requires_grad
    got = check(modifies_saved_then_backward, lambda: (dynjit.ones(2, requires_grad=True), []), backend)
    assert got[0] == "raised" and "modified by an inplace operation" in str(got[1])
    check(modifies_saved_other_output_backward, lambda: (dynjit.ones(2, requires_grad=True),), backend)


def test_aot_function_runs_a_function_whose_backward_eager_refuses_uncompiled():
    from dynjit.aot import aot_function, nop
    f = aot_function(modifies_saved, nop)
    w = dynjit.ones(2, requires_grad=True)
    out = f(w)
    assert dynjit.allclose(out, modifies_saved(dynjit.ones(2, requires_grad=True)).detach())
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


class Remembers(dynjit.nn.Module):
    def forward(self, t):
        self.last = t * 2
        return "last" in self.__dict__, sorted(k for k in self.__dict__ if not k.startswith("_")), t + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_modules_dict_shows_an_attribute_just_set_in_forward(backend):
    want = Remembers()(dynjit.ones(2))
    compiled = dynjit.compile(Remembers(), backend=backend)
    got = compiled(dynjit.ones(2))
    assert _same_outcome(("returned", got), ("returned", want)) and got[0] is True


class Greeter:
    def hello(self):
        return "hi"


def compares_methods(x, a, b, items):
    return (x.sum == x.sum, x.sum != x.sum, x.sum == x.mean, a.hello == a.hello, a.hello == b.hello,
            a.hello != b.hello, items.append == items.append, x.sum is x.sum, Greeter.hello == Greeter.hello,
            x * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bound_methods_compare_by_function_and_object(backend):
    a, b = Greeter(), Greeter()
    got = check(lambda x, items: compares_methods(x, a, b, items), lambda: (dynjit.ones(2), []), backend)
    assert got[1][:3] == (True, False, False)


def implicit_softmax(x):
    return dynjit.nn.functional.softmax(x) * 2       # warns: implicit dim


def numpy_scalar_division(x, v):
    return x * float(np.float64(1.0) / v)            # RuntimeWarning: divide by zero


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", [(implicit_softmax, lambda: (dynjit.ones(2, 3),)),
                                           (numpy_scalar_division, lambda: (dynjit.ones(2), 0.0))],
                         ids=["library_warning", "numpy_scalar_warning"])
def test_a_warning_is_given_once_on_every_call_as_in_plain_python(fn, make_args, backend):
    compiled = dynjit.compile(fn, backend=backend)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as plain:
            warnings.simplefilter("always")
            fn(*make_args())
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            compiled(*make_args())
        assert [(w.category, str(w.message)) for w in got] == [(w.category, str(w.message)) for w in plain]
        assert len(plain) == 1


def test_a_warning_under_the_default_filter_is_shown_on_the_first_call():
    compiled = dynjit.compile(implicit_softmax, backend="aot_eager")
    with warnings.catch_warnings(record=True) as got:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        compiled(dynjit.ones(2, 3))
    assert len(got) == 1 and "Implicit dimension" in str(got[0].message)


CHECKS = []


class Permissive(type):
    def __instancecheck__(cls, obj):
        CHECKS.append(("instance", type(obj).__name__))
        return True

    def __subclasscheck__(cls, sub):
        CHECKS.append(("subclass", sub.__name__))
        return False


class Anything(metaclass=Permissive):
    pass


class Plain:
    pass


def checks_types(x, log):
    return (isinstance(3, Anything), issubclass(int, Anything), isinstance(Anything(), Anything),
            isinstance(x, (Plain, Anything)), isinstance([], collections.abc.Sequence), isinstance(x, dynjit.Tensor),
            list(CHECKS), x + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_isinstance_and_issubclass_call_a_metaclass_hook_as_python_does(backend):
    def run(x, log):
        CHECKS.clear()
        return checks_types(x, log)
    got = check(run, lambda: (dynjit.ones(1), []), backend)
    assert got[1][6] == [("instance", "int"), ("subclass", "int"), ("instance", "Tensor")]


class CountsReads:
    def __init__(self):
        self.reads = 0
        self.scale = 3

    def __getattribute__(self, name):
        if name != "reads":
            object.__setattr__(self, "reads", object.__getattribute__(self, "reads") + 1)
        return object.__getattribute__(self, name)


def scales(x, c):
    return x * c.scale


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_object_with_getattribute_sees_the_reads_plain_python_makes(backend):
    plain_obj, compiled_obj = CountsReads(), CountsReads()
    compiled = dynjit.compile(scales, backend=backend)
    for _ in range(3):
        assert _same_outcome(("returned", compiled(dynjit.ones(2), compiled_obj)),
                             ("returned", scales(dynjit.ones(2), plain_obj)))
        assert compiled_obj.reads == plain_obj.reads


SWAPPED = dynjit.nn.Linear(2, 1, bias=False)


def calls_with_swapped_weight(x, w):
    old = SWAPPED._parameters["weight"]
    SWAPPED._parameters["weight"] = w          # what functional_call does
    swapped = SWAPPED(x)
    SWAPPED._parameters["weight"] = old
    return swapped, SWAPPED(x), SWAPPED.weight is old


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_module_call_sees_a_parameter_written_into_its_dict(backend):
    got = check(calls_with_swapped_weight, lambda: (dynjit.ones(1, 2), dynjit.full((1, 2), 10.0)), backend)
    assert got[1][0].item() == 20.0


def pairs_twice(x, d):
    out = [list(d.items()) for _ in range(2)]
    zipped = [list(zip("ab", (1, 2))) for _ in range(2)]
    return out[0][0] is out[1][0], zipped[0][0] is zipped[1][0], out, x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuples_made_at_run_time_are_new_objects_each_time(backend):
    got = check(pairs_twice, lambda: (dynjit.ones(1), {"a": 4}), backend)
    out = got[1][2]
    assert out[0][0] == out[1][0] and out[0][0] is not out[1][0]


def builds_a_loss_module(x, y):
    return dynjit.nn.MSELoss()(x, y) * 2       # the module is made before a break, anew each call


def test_a_module_made_anew_on_every_call_compiles_once():
    counter = CompileCounterWithBackend("eager")
    compiled = dynjit.compile(builds_a_loss_module, backend=counter)
    for _ in range(5):
        x, y = dynjit.randn(3), dynjit.randn(3)
        assert _same_outcome(("returned", compiled(x, y)), ("returned", builds_a_loss_module(x, y)))
    assert counter.frame_count == 1


LINEAR_A, LINEAR_B = dynjit.nn.Linear(2, 2), dynjit.nn.Linear(2, 3)
LOSSES = {"mean": dynjit.nn.MSELoss(), "sum": dynjit.nn.MSELoss(reduction="sum")}


def picks_after_a_break(x, which, log):
    layer = LINEAR_A if which == "a" else LINEAR_B
    loss = LOSSES["mean" if which == "a" else "sum"]
    log.append(which)
    print("", end="")                      # a graph break: the rest resumes with layer and loss
    out = layer(x)
    return out, loss(out, out * 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_code_resumed_with_another_module_of_the_same_class_uses_that_module(backend):
    for which in ("a", "b", "a", "b"):
        check(lambda x, log: picks_after_a_break(x, which, log), lambda: (dynjit.ones(1, 2), []), backend, calls=1)
