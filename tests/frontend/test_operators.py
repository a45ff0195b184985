"""Operators in traced code go through one table per arity (frontend/operators.py), keyed on
the operator and the operands' kinds; every row gives plain Python's result."""
import collections
import operator

import pytest

import dynjit
from dynjit.frontend import operators
from dynjit.testing import same


class Vec:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Vec(self.v + (other.v if isinstance(other, Vec) else other))

    def __radd__(self, other):
        return Vec(other + self.v)

    def __neg__(self):
        return Vec(-self.v)

    def __eq__(self, other):
        return isinstance(other, Vec) and self.v == other.v


class Plain:
    pass


P = collections.namedtuple("P", "a b")


def tensor_and_number(x):
    return x * 2 + 1, 3 - x, -x, abs(x)


def lists_and_tuples(x):
    a = [1, 2]
    alias = a
    a += [3]                      # in place: the alias sees it
    b = a + [4]
    c = (1, 2) + (3,)
    d = [0] * 3 + list((5,) * 2)
    return x + len(alias) + len(b) + sum(c) + sum(d)


def constants(x):
    n = 7
    return x * (n // 2) + (n % 3) + (2 ** 3) + (not n) + (~n)


def identity_and_user_operators(x):
    p, q = Plain(), Plain()
    v = Vec(2) + Vec(3)
    w = 1 + Vec(4)
    u = -Vec(5)
    u += 1                        # no __iadd__: falls back to __add__
    return x * v.v + w.v + u.v, p == p, p == q, p != q, Vec(1) == Vec(1), not p


def namedtuple_concat(x):
    return x + len(P(1, 2) + (3,))


def list_repeat_in_place(x):
    a = [1]
    a *= 3
    return x + len(a)


@pytest.mark.parametrize("fn", [tensor_and_number, lists_and_tuples, constants, identity_and_user_operators,
                                namedtuple_concat, list_repeat_in_place])
def test_operator_rows_give_plain_results(fn):
    x = dynjit.tensor([1.0, -2.0])
    want, got = fn(x), dynjit.compile(fn)(x)
    flat_want = want if isinstance(want, tuple) else (want,)
    flat_got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(flat_want, flat_got, strict=True):
        assert same(g, w) if isinstance(w, dynjit.Tensor) else g == w


def test_tensor_operands_become_graph_nodes():
    counter = dynjit.testing.CompileCounter()
    dynjit.compile(tensor_and_number, backend=counter)(dynjit.ones(2))
    assert counter.frame_count == 1 and counter.op_count == 5


def test_every_binary_operator_has_a_symbol_and_a_table_row():
    assert set(operators._SYMBOL_OF) == {fn for fn, _, _ in operators.BINARY_OPS.values()}
    assert all(ops is operators.ANY_OP or ops <= set(operators._SYMBOL_OF)
               for ops, *_ in operators.BINARY_RULES)
    assert operator.not_ in {fn for ops, *_ in operators.UNARY_RULES if ops for fn in ops}
