"""A differential fuzzer for the JIT: hypothesis writes random programs over
tensors, ints, lists, calls, branches (on Python values and on tensor data)
and graph-breaking calls; each runs compiled and eagerly, and the results
and side effects (a log list) must be equal."""
import textwrap

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import dynjit
from dynjit.testing import same

UNARY = ["sin", "cos", "tanh", "abs", "relu", "neg"]
BINARY = ["+", "-", "*"]


@dynjit.disable
def breaker(log, x):
    """Not traceable: every call is a graph break."""
    log.append(("breaker", x.sum().item()))
    return x * 0.5


def helper(x, k):
    y = x * k
    if k > 1:
        y = y + 1
    return y.tanh()


@st.composite
def programs(draw):
    tensors = ["t0", "t1"]
    ints = ["n0"]
    lines = []
    for i in range(draw(st.integers(2, 10))):
        kind = draw(st.sampled_from(["bin", "unary", "int", "if", "for", "log", "call", "break",
                                     "tensor_if", "list", "item"]))
        new = f"t{len(tensors)}"
        a, b = draw(st.sampled_from(tensors)), draw(st.sampled_from(tensors))
        n = draw(st.sampled_from(ints))
        c = draw(st.integers(-3, 3))
        if kind == "bin":
            lines.append(f"{new} = {a} {draw(st.sampled_from(BINARY))} {b}")
        elif kind == "unary":
            lines.append(f"{new} = {a}.{draw(st.sampled_from(UNARY))}()")
        elif kind == "int":
            name = f"n{len(ints)}"
            lines.append(f"{name} = {n} {draw(st.sampled_from(BINARY))} {c}")
            ints.append(name)
            continue
        elif kind == "if":
            lines.append(f"if {n} > {c}:\n    {new} = {a} * {c}\nelse:\n    {new} = {b} + {c}")
        elif kind == "for":
            lines.append(f"{new} = {a}\nfor i in range({abs(c)}):\n    {new} = {new} + {b} * i")
        elif kind == "log":
            lines.append(f"log.append({a} * 2)\n{new} = {a}")
        elif kind == "call":
            lines.append(f"{new} = helper({a}, {n})")
        elif kind == "break":
            lines.append(f"{new} = breaker(log, {a}) + {b}")
        elif kind == "tensor_if":
            lines.append(f"if {a}.sum() > {c}:\n    {new} = {a} + 1\nelse:\n    {new} = {b} - 1")
        elif kind == "item":
            lines.append(f"log.append(round({a}.sum().item(), 2) > {c})\n{new} = {b} * {c}")
        elif kind == "list":
            lines.append(f"xs = [{a}, {b}]\nxs.append({a} * {c})\n{new} = xs[0] + xs[-1]")
        tensors.append(new)
    body = "\n".join(lines)
    ret = ", ".join(tensors + ints)
    src = f"def program(t0, t1, n0, log):\n{textwrap.indent(body, '    ')}\n    return ({ret},)\n"
    return src


def _run(src, n0):
    ns = {"helper": helper, "breaker": breaker, "dynjit": dynjit}
    exec(compile(src, "<fuzz>", "exec"), ns)
    fn = ns["program"]
    compiled = dynjit.compile(fn)
    for seed in (0, 1):
        dynjit.manual_seed(seed)
        t0, t1 = dynjit.randn(4), dynjit.randn(4)
        log_c, log_e = [], []
        got = compiled(t0, t1, n0, log_c)
        want = fn(t0, t1, n0, log_e)
        assert same(got, want), src
        assert len(log_c) == len(log_e) and all(same(a, b) for a, b in zip(log_c, log_e)), src


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(-2, 4))
def test_random_programs_compiled_equal_eager(src, n0):
    _run(src, n0)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(-2, 4))
def test_random_programs_compiled_equal_eager_long(src, n0):
    _run(src, n0)
