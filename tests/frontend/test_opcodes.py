"""Every opcode of the running Python version is either traced or breaks the
graph with a stated reason; constructs that break run eagerly, correctly."""
import dis

import pytest

import dynjit
from dynjit.frontend.opcode_support import unsupported_reason
from dynjit.frontend.translator import InstructionTranslator
from dynjit.testing import same


def opcode_table():
    """(traced, breaking) opcode names for this Python version."""
    traced = sorted(n for n in dis.opmap if hasattr(InstructionTranslator, n))
    breaking = {n: unsupported_reason(n) for n in dis.opmap if not hasattr(InstructionTranslator, n)}
    return traced, breaking


def test_every_opcode_is_traced_or_has_a_reason():
    traced, breaking = opcode_table()
    unclassified = [n for n, reason in breaking.items() if reason is None]
    assert not unclassified, f"opcodes with neither a handler nor a reason: {unclassified}"
    assert {"CALL", "LOAD_ATTR", "BINARY_OP", "FOR_ITER", "RETURN_VALUE"} <= set(traced)


def _match(x, cmd):
    match cmd:
        case [a, b]:
            return x * a + b
        case _:
            return x


def _defines_class(x):
    class Local:
        k = 2
    return x * Local.k


def _raises_and_catches(x):
    try:
        raise ValueError("boom")
    except ValueError:
        return x + 1


@pytest.mark.parametrize("fn,args,reason", [
    (_match, ([2, 3],), "match"),
    (_defines_class, (), "class"),
    (_raises_and_catches, (), "exception"),
])
def test_untraceable_constructs_break_with_reason_and_run_eagerly(fn, args, reason):
    x = dynjit.randn(3)
    compiled = dynjit.compile(fn)
    assert same(compiled(x, *args), fn(x, *args))
    with pytest.raises(dynjit.exc.Unsupported, match=reason):
        dynjit.compile(fn, fullgraph=True)(x, *args)
