"""One table of trace rules: every callable dynjit knows, and every Tensor method, has a rule
(inline, graph, fold, handled by a tracker, or a break of a named kind)."""
import math
import operator
import time

import pytest

import dynjit
from dynjit.exc import BreakKind
from dynjit.frontend import trace_rules
from dynjit.frontend.trace_rules import Action, lookup, tensor_method

PUBLIC_MODULES = [dynjit, dynjit.nn.functional, dynjit.autograd, dynjit.func]


def _public_callables():
    for mod in PUBLIC_MODULES:
        for name in dir(mod):
            value = getattr(mod, name)
            if not name.startswith("_") and callable(value) and not isinstance(value, type):
                yield f"{mod.__name__}.{name}", value


def test_every_public_dynjit_callable_has_a_rule():
    unknown = [name for name, fn in _public_callables()
               if lookup(fn).action is Action.BREAK and lookup(fn).kind is BreakKind.UNKNOWN_CALLABLE]
    assert not unknown
    assert len(list(_public_callables())) > 200


def test_every_tensor_method_has_a_rule():
    names = [n for n in dir(dynjit.Tensor) if not n.startswith("_") and callable(getattr(dynjit.Tensor, n))]
    rules = {n: tensor_method(n) for n in names}
    assert rules["item"].kind is BreakKind.TENSOR_DATA_READ and rules["tolist"].kind is BreakKind.TENSOR_DATA_READ
    assert rules["size"].action is Action.FOLD and rules["stride"].action is Action.FOLD
    assert rules["backward"].kind is BreakKind.MUTATION and rules["requires_grad_"].kind is BreakKind.MUTATION
    assert rules["register_hook"].action is Action.HANDLED
    # in-place ops on values are graph ops; in-place changes of shape or storage run natively
    inplace = [n for n in names if n.endswith("_") and n != "requires_grad_"]
    metadata = [n for n in inplace if n in trace_rules.TENSOR_METADATA_INPLACE]
    assert {"t_", "unsqueeze_", "resize_", "set_"} <= set(metadata)
    assert all(rules[n].kind is BreakKind.MUTATION for n in metadata)
    assert inplace and all(rules[n].action is Action.GRAPH for n in inplace if n not in metadata)
    assert {n for n, r in rules.items() if r.action is Action.BREAK} <= (
        trace_rules.TENSOR_DATA_METHODS | trace_rules.TENSOR_STATE_METHODS | trace_rules.TENSOR_METADATA_INPLACE)


def _user_function(x):
    return x


@pytest.mark.parametrize("fn, action, kind", [
    (_user_function, Action.INLINE, None),
    (dynjit.sin, Action.GRAPH, None),
    (dynjit.nn.functional.relu, Action.GRAPH, None),
    (math.sqrt, Action.FOLD, None),
    (operator.add, Action.FOLD, None),
    (len, Action.HANDLED, None),
    (int, Action.FOLD, None),
    (getattr, Action.HANDLED, None),
    (dynjit.no_grad, Action.HANDLED, None),
    (print, Action.BREAK, BreakKind.SIDE_EFFECT_CALL),
    (time.perf_counter, Action.BREAK, BreakKind.UNKNOWN_CALLABLE),
    (dynjit.graph_break, Action.BREAK, BreakKind.EXPLICIT),
    (dynjit.manual_seed, Action.BREAK, BreakKind.MUTATION),
    (dynjit.compile, Action.BREAK, BreakKind.UNSUPPORTED_BUILTIN),
    (dynjit.nn.Linear, Action.INLINE, None),
])
def test_rules(fn, action, kind):
    rule = lookup(fn)
    assert (rule.action, rule.kind) == (action, kind), rule


def test_disable_and_allow_in_graph_change_the_rule():
    def helper(x):
        return x + 1
    assert lookup(helper).action is Action.INLINE
    dynjit.allow_in_graph(helper)
    assert lookup(helper).action is Action.GRAPH

    def skipped(x):
        return x
    assert lookup(dynjit.disable(skipped)).kind is BreakKind.DISABLED


def test_calling_the_jit_api_inside_compiled_code_is_a_break_with_the_plain_result():
    def inner(x):
        return x * 3

    def fn(x):
        y = x + 1
        return dynjit.compile(inner)(y) - 1
    x = dynjit.tensor([1.0, 2.0])
    out = dynjit.explain(fn)(x)
    assert dynjit.allclose(out.result, fn(x))
    assert [b.kind for b in out.break_reasons][:1] == [BreakKind.UNSUPPORTED_BUILTIN]
