"""AOT autograd traces once and replays: a function whose Python reads a traced tensor's
value (a branch on it, .item(), float()) is refused instead of frozen into the graph."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.fx import make_fx
from dynjit.testing import same


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def scaled(x):
    return x * float(x.max())


@pytest.mark.parametrize("fn, what", [(branchy, "__bool__"), (scaled, "item")])
def test_aot_function_refuses_a_python_read_of_a_traced_value(fn, what):
    with pytest.raises(RuntimeError, match=rf"reads a tensor's value in Python \(Tensor\.{what}\(\)"):
        aot_function(fn, nop)(dynjit.ones(3))


def test_values_read_from_tensors_that_are_not_traced_are_fine():
    limit = dynjit.tensor(2.0)                       # not an input: a constant of the trace

    def clipped(x):
        return x.clamp(max=limit.item())

    compiled = aot_function(clipped, nop)
    for x in (dynjit.arange(4.0), dynjit.arange(4.0) - 3):
        assert same(compiled(x), clipped(x))


def test_the_frontend_breaks_the_graph_there_instead():
    compiled = dynjit.compile(branchy, backend="aot_eager")
    for x in (dynjit.ones(3), -dynjit.ones(3)):
        assert same(compiled(x), branchy(x))


def test_make_fx_still_traces_with_the_values_it_sees():
    gm = make_fx(branchy)(dynjit.ones(3))         # documented: the branch taken is recorded
    assert "mul" in gm.code and "sub" not in gm.code
