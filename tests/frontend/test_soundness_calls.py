"""Differential tests for calls that used to crash the compile or lose an effect: compiling a
generator function, a class made with three-argument type() in code whose globals have no
__name__, an autograd.Function given a Python number that changes between calls,
copy.deepcopy of a leaf tensor, and an operation folded at trace time that warns. Each runs
plain and compiled on every backend (strict: an internal error fails the test)."""
import copy
import warnings

import pytest

import dynjit
from dynjit.testing import same

BACKENDS = ["eager", "aot_eager", "llvm"]


def multiples(x, n):
    for i in range(n):
        yield x * i


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compiled_generator_function_runs_plain(backend):
    got = list(dynjit.compile(multiples, backend=backend)(dynjit.ones(1), 3))
    assert [t.item() for t in got] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_argument_type_with_globals_lacking_a_name(backend):
    namespace = {"dynjit": dynjit}
    exec("def f(x):\n    return type('Dyn', (), {'k': 3})().k, x * 2\n", namespace)
    f = namespace["f"]
    want, got = f(dynjit.ones(1)), dynjit.compile(f, backend=backend)(dynjit.ones(1))
    assert got[0] == want[0] and same(got[1], want[1])


class Scale(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


def scaled(x, k):
    return Scale.apply(x, k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_autograd_function_given_a_changing_number(backend):
    compiled = dynjit.compile(scaled, backend=backend)
    for k in (1.0, 2.0, 3.5):
        a, b = dynjit.ones(2, requires_grad=True), dynjit.ones(2, requires_grad=True)
        want, got = scaled(a, k), compiled(b, k)
        want.sum().backward()
        got.sum().backward()
        assert same(got, want) and same(b.grad, a.grad)


def deep_copied(w):
    c = copy.deepcopy(w)
    return c * 2, c.is_leaf, c.requires_grad, c is w


@pytest.mark.parametrize("backend", BACKENDS)
def test_deepcopy_of_a_leaf_that_requires_grad(backend):
    w = dynjit.ones(2, requires_grad=True)
    want, got = deep_copied(w), dynjit.compile(deep_copied, backend=backend)(w)
    assert same(got[0], want[0]) and got[1:] == want[1:]


def inverts(x, b):
    return x * (~b)          # ~ on a bool warns (3.12+)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_folded_operation_that_warns_warns_on_every_call(backend):
    compiled = dynjit.compile(inverts, backend=backend)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as plain:
            warnings.simplefilter("always")
            inverts(dynjit.ones(1), True)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            compiled(dynjit.ones(1), True)
        assert [(w.category, str(w.message)) for w in got] == [(w.category, str(w.message)) for w in plain]
