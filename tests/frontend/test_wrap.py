"""One wrapper: `variables.builder.wrap(tx, value, source=None)` is the only way a Python
value becomes a tracker; its type-dispatch table is filled by the tracker modules."""
import collections
import types

import pytest

import dynjit
from dynjit.frontend import output_graph, translator
from dynjit.frontend.variables import builder


def test_every_rule_has_its_handler():
    assert set(builder._handlers) == set(builder.RULES)


def test_a_rule_must_be_declared_in_the_table():
    with pytest.raises(ValueError, match="RULES"):
        builder.wraps("no_such_rule", object)


def test_the_old_wrapping_functions_are_gone():
    assert not hasattr(output_graph.OutputGraph, "trusted")
    assert not hasattr(output_graph.OutputGraph, "trusted_or_build")
    assert not hasattr(translator.InstructionTranslator, "wrap_constant_result")


def test_sourceless_values_are_not_guarded():
    assert builder.NO_GUARDS.identity("source", object()) is None
    assert builder.NO_GUARDS.any_guard_kind() is None


Point = collections.namedtuple("Point", "x y")


def _fold_divmod(x):
    q, r = divmod(7, 2)                      # folded at trace time, wrapped without a source
    return x * q + r


def _read_namedtuple(x, p):
    return x * p.x + p.y, type(p).__name__


def _generator_result(x):
    return x + sum(v for v in (1, 2, 3))


def _dict_of_lists(x, d):
    d["a"].append(3)
    return x * len(d["a"])


@pytest.mark.parametrize("fn, extra", [
    (_fold_divmod, ()),
    (_read_namedtuple, (Point(2, 3),)),
    (_generator_result, ()),
    (_dict_of_lists, ({"a": [1, 2]},)),
])
def test_values_of_every_rule_compile_like_plain(fn, extra):
    import copy
    x = dynjit.tensor([1.0, 2.0])
    plain_extra, compiled_extra = copy.deepcopy(extra), copy.deepcopy(extra)
    want = fn(x, *plain_extra)
    got = dynjit.compile(fn)(x, *compiled_extra)
    assert repr(got) == repr(want)
    assert compiled_extra == plain_extra
