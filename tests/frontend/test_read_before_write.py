"""A value read from an attribute, dict entry, global or closure cell keeps the value it
had when read, even when the compiled function then overwrites that place (compiled ==
eager, with and without a graph break between the read and the write)."""
import pytest

import dynjit
from dynjit.testing import same

COUNTER = [0]


class Box:
    pass


def _box(**attrs):
    b = Box()
    b.__dict__.update(attrs)
    return b


def read_then_overwrite_attribute(obj, x):
    result = obj.g
    obj.g = None
    return result, x + 1


def swap_attributes(obj, x):
    obj.a, obj.b = obj.b, obj.a
    return obj.a * x


def read_then_overwrite_dict_entry(d, x):
    old = d["k"]
    d["k"] = x * 2
    return old


def read_then_overwrite_global(x):
    global COUNTER
    old = COUNTER
    COUNTER = [len(old) + 1]
    return old, x.sin()


def break_between(obj, x):
    obj.g = [x, x * 2]
    print("a graph break")
    result = obj.g
    obj.g = None
    return tuple(result[i] for i in (1, 0))


def _closure_hook(holder):
    def hook(x):
        holder.items = [x, x + 1]
        for item in holder.items:
            print("break inside a loop", item.sum().item())
        result = holder.items
        holder.items = None
        return tuple(r * 2 for r in result)
    return hook


CASES = {
    "attribute": (read_then_overwrite_attribute, lambda: (_box(g=[dynjit.ones(2)]), dynjit.ones(2))),
    "swap": (swap_attributes, lambda: (_box(a=dynjit.ones(2), b=dynjit.full((2,), 3.0)), dynjit.ones(2))),
    "dict": (read_then_overwrite_dict_entry, lambda: ({"k": dynjit.zeros(2)}, dynjit.ones(2))),
    "break": (break_between, lambda: (_box(), dynjit.arange(2.0))),
}


def _state(value):
    if isinstance(value, Box):
        return {k: _state(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_state(v) for v in value]
    if isinstance(value, dynjit.Tensor):
        return value.tolist()
    return value


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_matches_eager(case, backend, capsys):
    fn, make_args = CASES[case]
    eager_args = make_args()
    expected = fn(*eager_args)
    eager_out = capsys.readouterr().out
    compiled = dynjit.compile(fn, backend=backend)
    for _ in range(2):              # the first call converts the frame, the second runs the cache
        args = make_args()
        result = compiled(*args)
        assert _state(result) == _state(expected)
        assert _state(list(args)) == _state(list(eager_args))
        assert capsys.readouterr().out == eager_out


def test_global_read_then_overwritten():
    global COUNTER
    COUNTER = [0]
    old, _ = read_then_overwrite_global(dynjit.ones(1))
    assert old == [0] and COUNTER == [2]
    compiled = dynjit.compile(read_then_overwrite_global, backend="eager")
    for _ in range(2):
        COUNTER = [0]
        old, _ = compiled(dynjit.ones(1))
        assert old == [0] and COUNTER == [2]


def test_closure_with_a_break_in_a_loop_and_a_generator_expression(capsys):
    x = dynjit.arange(2.0)
    expected = _closure_hook(_box())(x)
    eager_out = capsys.readouterr().out
    holder = _box()
    compiled = dynjit.compile(_closure_hook(holder), backend="eager")
    for _ in range(2):
        result = compiled(x)
        assert all(same(a, b) for a, b in zip(result, expected))
        assert holder.items is None
        assert capsys.readouterr().out == eager_out
