"""After a graph break the rest of the frame runs in generated code (traced, or plain when
it cannot be traced), whose own variables include dynjit's names for the frame's cells and
stack values. What the user's code sees of its frame there is the original's: `locals()`
and `vars()` show the user's variables (cells as their values) in the original order, and
the names `locals` and `vars` still resolve as globals first. Each test compares plain
with compiled on every backend."""
import builtins

import pytest

import dynjit
from dynjit.testing import same

BACKENDS = ["eager", "aot_eager", "llvm"]


def with_cells_after_a_break(x, n):
    out = []
    try:                     # a break inside try: the rest may run plain
        total = [0]
        count = 0

        def bump(t):
            nonlocal count
            count += 1
            total[0] += float(t.sum())
            return t * count
        out.append(bump(x))
        print("break", n)
        out.append(bump(x))
    except ValueError as e:
        out.append(str(e))
    out.append(list(locals()))
    out.append(sorted(vars()))
    out.append({k: v for k, v in locals().items() if isinstance(v, int)})
    out.append(locals()["total"])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_locals_and_vars_after_a_break_show_the_users_variables(backend, capsys):
    x = dynjit.ones(2)
    want = with_cells_after_a_break(x, 3)
    got = dynjit.compile(with_cells_after_a_break, backend=backend)(x, 3)
    assert got[2:] == want[2:]
    assert same(got[0], want[0]) and same(got[1], want[1])
    assert "count" in got[2] and not any(name.startswith("_") for name in got[2])


def test_a_global_named_locals_is_what_resumed_code_calls():
    namespace = {"dynjit": dynjit}
    exec("def locals():\n    return 'mine'\n"
         "def f(x):\n"
         "    y = x + 1\n"
         "    print('break')\n"
         "    return y, locals()\n", namespace)
    f = namespace["f"]
    assert f(dynjit.ones(1))[1] == "mine"
    assert dynjit.compile(f)(dynjit.ones(1))[1] == "mine"
    del namespace["locals"]              # now the builtin again
    got = dynjit.compile(f)(dynjit.ones(1))[1]
    assert list(got) == ["x", "y"] and got == dict(zip(["x", "y"], [got["x"], got["y"]]))
    assert builtins.locals is not None
