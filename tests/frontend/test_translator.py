"""Differential tests of the bytecode translator: each program runs compiled
(fullgraph, so any unsupported construct fails the test) and eagerly, with
the same results, the same side effects, and one captured graph."""
import collections
import dataclasses
import enum
import math

import pytest

import dynjit
from dynjit.testing import CompileCounter, same


def check(fn, *args, ops=None, **kwargs):
    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter, fullgraph=True)
    got = compiled(*args, **kwargs)
    want = fn(*args, **kwargs)
    assert same(got, want), (got, want)
    assert counter.frame_count <= 1
    if ops is not None:
        assert counter.op_count == ops
    return compiled, counter


def t(*shape):
    return dynjit.randn(*shape)


def test_arithmetic_on_tensors_and_python_numbers():
    def fn(x, y, k):
        return (x + y) * k - x / 2 + y ** 2 - (-x) @ y.t() * 0 + abs(x) % 3
    check(fn, t(2, 2), t(2, 2), 3)


def test_comparisons_and_boolean_python_logic():
    def fn(x, n):
        if n > 2 and not n == 5 or n is None:
            x = x + 1
        if 1 < n <= 10:
            x = x * 2
        return x, x > 0
    check(fn, t(3), 4)
    check(fn, t(3), 5)


def test_containers_build_unpack_and_star():
    def fn(x, pair):
        a, b = pair
        first, *rest = [x, a, b]
        d = {"x": first, "n": len(rest)}
        d["y"] = rest[0] + rest[1]
        t2 = (*rest, x)
        return d["y"] * d["n"], t2[-1], {**d, "z": 1}["z"], list(d.keys())
    check(fn, t(3), (t(3), t(3)))


def test_comprehensions_and_generators():
    def fn(xs):
        squares = [x * x for x in xs]
        total = sum(v for v in squares)
        table = {i: v for i, v in enumerate(squares)}
        flags = all(v is not None for v in squares)
        return total, table[1], flags, [i for i in range(4) if i % 2]
    check(fn, [t(3), t(3), t(3)])


def test_fstrings_and_string_building():
    def fn(x, name):
        label = f"{name}-{len(name):03d}-{3.5!r}"
        return x * len(label), label
    check(fn, t(2), "abc")


def test_calls_with_defaults_varargs_kwargs_and_keyword_only():
    def helper(a, b=2, *rest, scale, shift=0.0, **extra):
        out = a * b * scale + shift
        for r in rest:
            out = out + r
        return out + extra.get("bias", 0)

    def fn(x):
        return helper(x, 3, x, x, scale=2, bias=1) + helper(x, scale=1)
    check(fn, t(3))


def test_nested_functions_closures_and_lambdas():
    def fn(x, k):
        def add_k(v):
            return v + k
        scale = lambda v, s=2: v * s  # noqa: E731
        counter = 0

        def bump():
            nonlocal counter
            counter += 1
            return counter
        bump()
        bump()
        return scale(add_k(x)), counter
    check(fn, t(3), 5)


class Base:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return x * self.w


class Child(Base):
    def __init__(self, w, b):
        super().__init__(w)
        self.b = b

    def apply(self, x):
        return super().apply(x) + self.b

    @property
    def double_w(self):
        return self.w * 2

    @staticmethod
    def twice(v):
        return v + v

    @classmethod
    def make(cls, w):
        return cls(w, 0.5)


def test_user_classes_methods_super_properties():
    def fn(x, obj):
        made = Child.make(3.0)
        return obj.apply(x) + made.apply(x) * obj.double_w + Child.twice(x)
    check(fn, t(3), Child(2.0, 1.0))


def test_loops_with_known_trip_counts_and_while():
    def fn(x, n):
        for i in range(n):
            x = x + i
        i = 0
        while i < 3:
            x = x * 1.5
            i += 1
        for a, b in zip([1, 2], [3, 4]):
            x = x - a * b
        return x
    check(fn, t(3), 4)


def test_try_finally_when_nothing_raises():
    def fn(x):
        try:
            y = x + 1
        finally:
            y = y * 2
        try:
            z = y - 1
        except ValueError:
            z = y
        return z
    check(fn, t(3))


def test_no_grad_and_enable_grad_blocks():
    def fn(x):
        y = x * 2
        with dynjit.no_grad():
            z = y * 3
            with dynjit.enable_grad():
                w = z * x
        return y, z, w
    x = t(3).requires_grad_()
    compiled, _ = check(fn, x)
    y, z, w = compiled(x)
    assert y.requires_grad and not z.requires_grad and w.requires_grad
    assert dynjit.is_grad_enabled()


def test_set_grad_enabled_as_function_persists_like_eager():
    def fn(x):
        dynjit.set_grad_enabled(False)
        return x * 2
    x = t(3).requires_grad_()
    try:
        out = dynjit.compile(fn, backend="eager", fullgraph=True)(x)
        assert not out.requires_grad
        assert not dynjit.is_grad_enabled()
    finally:
        dynjit.set_grad_enabled(True)


def test_gradients_flow_through_compiled_code():
    def fn(x, w):
        return ((x @ w).relu() * 2).sum()
    x, w = t(4, 3), t(3, 2).requires_grad_()
    loss = dynjit.compile(fn, fullgraph=True)(x, w)
    loss.backward()
    g = w.grad.clone()
    w.grad = None
    fn(x, w).backward()
    assert same(g, w.grad)


@dataclasses.dataclass
class Config:
    scale: float
    shift: float = 0.0


class Mode(enum.Enum):
    ADD = 1
    MUL = 2


Pair = collections.namedtuple("Pair", ["a", "b"])


def test_dataclasses_enums_and_named_tuples():
    def fn(x, cfg, mode, pair):
        y = x * cfg.scale + cfg.shift
        if mode is Mode.ADD:
            y = y + pair.a
        else:
            y = y * pair.b
        made = Pair(y, 1)
        return made.a, made.b, Config(2.0).scale
    check(fn, t(3), Config(2.0, 1.0), Mode.ADD, Pair(t(3), t(3)))
    check(fn, t(3), Config(2.0, 1.0), Mode.MUL, Pair(t(3), t(3)))


def test_tensor_methods_shapes_and_indexing():
    def fn(x):
        n = x.size(0)
        y = x.view(n, -1)[:, 1:].transpose(0, 1)
        z = x.unsqueeze(0).expand(2, *x.shape)
        parts = x.split(1, dim=0)
        m, idx = x.max(dim=1)
        return y.contiguous(), z.sum(0), parts[0] + parts[-1], m, idx, x.shape[1], x.dtype
    check(fn, t(3, 4))


def test_builtins_on_python_values():
    def fn(x, xs):
        k = max(3, len(xs)) + min([4, 2, 9]) + abs(-2) + int(2.7) + round(2.5)
        ok = isinstance(x, dynjit.Tensor) and isinstance(k, int) and hasattr(xs, "append")
        names = sorted(["b", "a"])
        return x * k, ok, names, math.sqrt(16.0), getattr(x, "shape")
    check(fn, t(2), [1, 2])


def test_in_place_tensor_updates():
    def fn(x, y):
        z = x.clone()
        z += y
        z.mul_(2)
        z[0] = 0.0
        return z
    check(fn, t(3), t(3))


def test_side_effects_replayed_after_the_graph():
    log = []
    state = {"calls": 0}

    class Box:
        pass
    box = Box()

    def fn(x):
        log.append(x * 2)
        state["calls"] += 1
        box.last = x + 1
        return x

    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter, fullgraph=True)
    x = t(3)
    compiled(x)
    assert len(log) == 1 and same(log[0], x * 2)
    assert state["calls"] == 1
    assert same(box.last, x + 1)
    compiled(x)
    assert len(log) == 2 and state["calls"] == 2


counter_global = 0


def test_global_assignment_and_reads():
    def fn(x):
        global counter_global
        counter_global += 1
        return x * counter_global

    global counter_global
    counter_global = 0
    compiled = dynjit.compile(fn, fullgraph=True)
    r1 = compiled(t(2))
    assert counter_global == 1
    r2 = compiled(dynjit.ones(2))
    assert counter_global == 2
    assert same(r2, dynjit.ones(2) * 2)
    del r1


def test_guards_recompile_on_change_and_reuse_on_hit():
    def fn(x, n):
        return x * n

    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter)
    compiled(t(3), 2)
    compiled(t(3), 2)
    assert counter.frame_count == 1
    compiled(t(3), 3)            # a different constant
    compiled(t(4), 3)            # a different shape
    compiled(t(4).double(), 3)   # a different dtype
    assert counter.frame_count == 4
    # reasons in the user's terms, not the guard's generated source
    assert compiled.recompile_reasons == ["n changed from 2 to 3; now dynamic: n", "x: size (4,) (compiled for (3,))",
                                          "x: dtype float64 (compiled for float32)"]


def test_cache_size_limit_runs_eagerly_with_one_warning(monkeypatch):
    monkeypatch.setattr(dynjit.config, "cache_size_limit", 2)

    def fn(x, n):
        return x + n

    compiled = dynjit.compile(fn, backend=CompileCounter(), dynamic=False)    # n static: a compile per value
    with pytest.warns(UserWarning, match="cache_size_limit"):
        for n in range(5):
            assert same(compiled(dynjit.ones(2), n), dynjit.ones(2) + n)
    assert len(compiled.entries) == 2


def test_fullgraph_print_raises_unsupported_naming_print_and_line():
    def fn(x):
        x = x + 1
        print("hello")
        return x

    compiled = dynjit.compile(fn, fullgraph=True)
    with pytest.raises(dynjit.exc.Unsupported, match="builtin: print") as info:
        compiled(t(2))
    assert "test_translator.py:" in str(info.value)


def test_unsupported_construct_without_fullgraph_runs_eagerly_and_counts_the_break(capsys):
    def fn(x):
        x = x + 1
        print("side effect")
        return x * 2

    dynjit.utils.counters.clear()
    compiled = dynjit.compile(fn)
    x = t(2)
    assert same(compiled(x), fn(x))
    assert capsys.readouterr().out.count("side effect") == 2
    assert dynjit.utils.counters["graph_break"]["builtin: print"] == 1


def test_data_dependent_branch_is_not_baked_in():
    def fn(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    compiled = dynjit.compile(fn)
    pos, neg = dynjit.ones(3), -dynjit.ones(3)
    assert same(compiled(pos), pos + 1)
    assert same(compiled(neg), neg - 1)
    with pytest.raises(dynjit.exc.Unsupported, match="data-dependent"):
        dynjit.compile(fn, fullgraph=True)(pos)


def test_compile_on_modules_and_bound_methods():
    class Scale:
        def __init__(self, k):
            self.k = k

        def run(self, x):
            return x * self.k

    s = Scale(3.0)
    compiled = dynjit.compile(s.run, fullgraph=True)
    assert same(compiled(dynjit.ones(2)), dynjit.ones(2) * 3)
    s.k = 4.0    # an attribute the trace read: guarded, so it recompiles
    assert same(compiled(dynjit.ones(2)), dynjit.ones(2) * 4)


def test_graph_module_handed_to_the_backend_is_readable():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def fn(x, y):
        return (x * y).sin().sum()
    dynjit.compile(fn, backend=backend)(t(2, 3), t(3))
    text = graphs[0].print_readable(print_output=False)
    assert 'L_x_: "f32[2, 3]"' in text and 'L_y_: "f32[3]"' in text
    assert "operator.mul(L_x_, L_y_)" in text and ".sin()" in text


def test_automatic_dynamic_shapes_a_third_size_does_not_recompile():
    def fn(x):
        return (x * 2 + 1).sin()

    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter)
    for n in (3, 4, 5, 6):
        x = t(n)
        assert same(compiled(x), fn(x))
    assert counter.frame_count == 2      # static first, then dynamic sizes
    assert compiled.entries[-1].dynamic


def test_a_size_read_into_a_view_is_dynamic_after_the_first_change():
    def fn(x):
        return x.view(x.size(0), -1) * 2

    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter)
    for n in (2, 3, 4):
        x = t(n, 2)
        assert same(compiled(x), fn(x))
    assert counter.frame_count == 2     # static, then x.size(0) a graph input


def test_a_size_a_python_branch_reads_stays_static():
    def fn(x):
        return x * 2 if x.size(0) > 2 else x - 1

    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter)
    for n in (2, 3, 4):
        x = t(n, 2)
        assert same(compiled(x), fn(x))
    assert counter.frame_count == 3


def test_dynamic_false_always_specializes_and_true_never_does():
    def fn(x):
        return x + 1

    static = CompileCounter()
    c1 = dynjit.compile(fn, backend=static, dynamic=False)
    dyn = CompileCounter()
    c2 = dynjit.compile(fn, backend=dyn, dynamic=True)
    for n in (2, 3, 4):
        c1(t(n))
        c2(t(n))
    assert static.frame_count == 3 and dyn.frame_count == 1
