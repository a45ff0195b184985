"""Guards for what a trace reads from mutable state: each test runs one program
plain and compiled, changes the state the trace read (a class attribute, a
function's defaults, a module's hooks, the default dtype, an input's layout),
and checks that compiled still equals plain (recompiled, not a stale entry)."""
import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


def _value(r):
    if isinstance(r, dynjit.Tensor):
        return ("tensor", r.dtype, r.detach().numpy().tolist())
    if isinstance(r, tuple):
        return tuple(_value(v) for v in r)
    return r


def same_as_plain(fn, compiled, *args):
    want = _value(fn(*args))
    got = _value(compiled(*args))
    assert got == want
    return got


def test_class_attribute_shadowed_on_the_instance():
    class Cfg:
        alpha = 1.0

    def fn(x, c):
        return x * c.alpha

    compiled, x, c = dynjit.compile(fn), dynjit.ones(2), Cfg()
    same_as_plain(fn, compiled, x, c)
    c.alpha = 3.0
    same_as_plain(fn, compiled, x, c)
    assert "c.alpha was set on the instance" in compiled.recompile_reasons[-1]
    del c.alpha
    same_as_plain(fn, compiled, x, c)


def test_class_attribute_changed_on_the_class():
    class Cfg:
        alpha = 1.0

    def fn(x, c):
        return x * c.alpha

    compiled, x, c = dynjit.compile(fn), dynjit.ones(2), Cfg()
    same_as_plain(fn, compiled, x, c)
    Cfg.alpha = 5.0
    same_as_plain(fn, compiled, x, c)


def test_method_replaced_on_the_class():
    class M:
        def f(self, x):
            return x + 1

    mm = M()

    def fn(x):
        return mm.f(x)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    old_f = M.f         # still alive: the guard fails, and says so
    M.f = lambda self, x: x - 1
    same_as_plain(fn, compiled, x)
    assert "M.f changed" in compiled.recompile_reasons[-1]
    assert old_f is not M.f


def test_property_and_staticmethod_replaced_on_the_class():
    class P:
        @property
        def p(self):
            return 2.0

        @staticmethod
        def s(x):
            return x + 1

    obj = P()

    def fn(x):
        return P.s(x) * obj.p + obj.s(x)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    P.p = property(lambda self: 7.0)
    same_as_plain(fn, compiled, x)
    P.s = staticmethod(lambda x: x * 3)
    same_as_plain(fn, compiled, x)


def test_attribute_inherited_from_a_base_class():
    class Base:
        beta = 2.0

    class Derived(Base):
        pass

    d = Derived()

    def fn(x):
        return x * d.beta

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    Base.beta = 4.0          # changed on the base
    same_as_plain(fn, compiled, x)
    Derived.beta = 6.0       # now shadowed by the subclass
    same_as_plain(fn, compiled, x)
    assert "Derived.beta was defined" in compiled.recompile_reasons[-1]


def test_class_attribute_read_through_self_in_a_method():
    class Scaler:
        factor = 2.0

        def apply(self, x):
            return x * self.factor

    s = Scaler()

    def fn(x):
        return s.apply(x)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    Scaler.factor = 10.0
    same_as_plain(fn, compiled, x)


def test_module_methods_replaced_on_the_class_or_set_on_the_instance():
    class Mod(nn.Module):
        def helper(self, x):
            return x + 1

        def forward(self, x):
            return self.helper(x)

    m = Mod()

    def fn(x):
        return m(x)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    Mod.helper = lambda self, x: x - 1           # a method used by forward, replaced on the class
    same_as_plain(fn, compiled, x)
    m.helper = lambda x: x * 10                  # shadowed on the instance
    same_as_plain(fn, compiled, x)
    m.forward = lambda x: x * 0 + 7              # forward itself, set on the instance
    same_as_plain(fn, compiled, x)


def test_forward_replaced_on_the_module_class():
    class L2(nn.Linear):
        pass

    dynjit.manual_seed(0)
    lin = L2(2, 2)

    def fn(x):
        return lin(x)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    L2.forward = lambda self, x: x * 0 + 1
    same_as_plain(fn, compiled, x)


def test_defaults_of_the_compiled_function_and_of_an_inlined_one():
    def top(x, s=2.0, *, t=1.0):
        return x * s + t

    compiled, x = dynjit.compile(top), dynjit.ones(2)
    same_as_plain(top, compiled, x)
    top.__defaults__ = (9.0,)
    same_as_plain(top, compiled, x)
    top.__kwdefaults__ = {"t": 5.0}
    same_as_plain(top, compiled, x)

    def inner(x, s=2.0, *, t=1.0):
        return x * s + t

    def outer(x):
        return inner(x)

    compiled = dynjit.compile(outer)
    same_as_plain(outer, compiled, x)
    inner.__defaults__ = (5.0,)
    same_as_plain(outer, compiled, x)
    inner.__kwdefaults__ = {"t": -1.0}
    same_as_plain(outer, compiled, x)


@pytest.mark.parametrize("kind", ["forward", "pre", "global_forward", "global_pre"])
def test_hook_registered_after_compiling_on_an_inlined_module(kind):
    dynjit.manual_seed(0)
    lin = nn.Linear(2, 2)

    def fn(x):
        return lin(x) * 2

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    if kind == "forward":
        handle = lin.register_forward_hook(lambda mod, inp, out: out * 0 + 42)
    elif kind == "pre":
        handle = lin.register_forward_pre_hook(lambda mod, inp: (inp[0] * 0,))
    elif kind == "global_forward":
        handle = register_module_forward_hook(lambda mod, inp, out: out * 0 + 42)
    else:
        handle = register_module_forward_pre_hook(lambda mod, inp: (inp[0] * 0,))
    try:
        same_as_plain(fn, compiled, x)
    finally:
        handle.remove()
    same_as_plain(fn, compiled, x)


def test_hook_registered_after_compiling_the_module_itself():
    dynjit.manual_seed(0)
    lin = nn.Linear(2, 2)
    compiled, x = dynjit.compile(lin), dynjit.ones(2)
    same_as_plain(lin, compiled, x)
    handle = register_module_forward_hook(lambda mod, inp, out: out * 0 + 42)
    try:
        same_as_plain(lin, compiled, x)
    finally:
        handle.remove()


def test_default_dtype_changed_after_compiling():
    def fn(x):
        return x.to(dynjit.ones(1).dtype), dynjit.ones(2)

    compiled, x = dynjit.compile(fn), dynjit.ones(2, dtype=dynjit.float16)
    same_as_plain(fn, compiled, x)
    dynjit.set_default_dtype(dynjit.float64)
    try:
        same_as_plain(fn, compiled, x)
        assert "default dtype is dynjit.float64" in str(compiled.recompile_reasons[-1])
    finally:
        dynjit.set_default_dtype(dynjit.float32)
    same_as_plain(fn, compiled, x)


def layout(x):
    return x.stride(), x.is_contiguous(), (x + 1).is_contiguous(), x.t().contiguous().stride()


@pytest.mark.parametrize("dynamic", [False, True])
def test_strides_and_contiguity_of_inputs(dynamic):
    compiled = dynjit.compile(layout, dynamic=dynamic)
    y = dynjit.arange(6.0).reshape(2, 3)
    same_as_plain(layout, compiled, y)
    same_as_plain(layout, compiled, y.t())
    same_as_plain(layout, compiled, y[:, ::2])


def test_a_non_contiguous_input_on_the_first_call():
    compiled = dynjit.compile(layout)
    y = dynjit.arange(12.0).reshape(3, 4)
    same_as_plain(layout, compiled, y.t())
    same_as_plain(layout, compiled, y[::2, 1:])
    same_as_plain(layout, compiled, y.flip(0) if hasattr(y, "flip") else y)


def test_is_contiguous_under_dynamic_shapes():
    def fn(x):
        return x.is_contiguous()

    compiled = dynjit.compile(fn, dynamic=True)
    y = dynjit.ones(2, 3)
    same_as_plain(fn, compiled, y)
    same_as_plain(fn, compiled, y.t())


def test_guard_records_and_their_views():
    class Cfg:
        alpha = 1.0

    def fn(x, c, n):
        return x * c.alpha * n

    compiled, c = dynjit.compile(fn), Cfg()
    compiled(dynjit.ones(3), c, 2)
    compiled(dynjit.ones(3), c, 3)
    compiled(dynjit.ones(4), c, 3)
    guard = compiled.entries[0].guard
    from dynjit.frontend.guards import Guard, Kind
    assert all(isinstance(g, Guard) and isinstance(g.kind, Kind) for g in guard.guards)
    kinds = {g.kind for g in guard.guards}
    assert {Kind.TENSOR, Kind.CONSTANT, Kind.NO_KEY, Kind.GRAD_MODE, Kind.DEFAULT_DTYPE} <= kinds
    assert "def ___guard(x, c, n)" in guard.source
    assert compiled.recompile_reasons[0] == "n changed from 2 to 3; now dynamic: n"
    reason = compiled.recompile_reasons[1]
    assert reason == "x: size (4,) (compiled for (3,))" and reason.tensor


def test_recompile_reason_for_a_layout():
    def fn(x):
        return x * 2

    compiled = dynjit.compile(fn)
    y = dynjit.ones(2, 3)
    compiled(y)
    same_as_plain(fn, compiled, dynjit.ones(3, 2).t())
    assert compiled.recompile_reasons == ["x: stride (1, 2) (compiled for (3, 1))"]


def test_objects_distinct_when_traced_passed_as_one_object():
    class O:
        pass

    def fn(x, a, b, log, other):
        a.v = 5.0
        log.append(1)
        return x * b.v * len(other)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)

    def args(same):
        a, b = O(), O()
        a.v = b.v = 2.0
        log = []
        return (x, a, a if same else b, log, log if same else [])
    same_as_plain(fn, compiled, *args(False))
    want = _value(fn(*args(True)))
    assert _value(compiled(*args(True))) == want
    assert "are one object" in compiled.recompile_reasons[-1]


@pytest.mark.parametrize("where", ["instance", "class", "module"])
def test_an_attribute_absent_when_traced_set_later(where):
    class C:
        pass

    obj = nn.Linear(2, 2) if where == "module" else C()

    def fn(x):
        return x * getattr(obj, "beta", 1.0) * (2.0 if hasattr(obj, "beta") else 1.0)

    compiled, x = dynjit.compile(fn), dynjit.ones(2)
    same_as_plain(fn, compiled, x)
    if where == "class":
        C.beta = 3.0
    else:
        obj.beta = 3.0
    same_as_plain(fn, compiled, x)


def test_a_guard_looks_up_a_shared_path_once():
    """Parameters reached through one path (`opt.param_groups[0]['params'][i]`) are guarded
    without walking the path again for each: the path is looked up once, then named."""
    class Reads:
        def __init__(self, groups):
            self.groups, self.reads = groups, 0

        @property
        def param_groups(self):
            return self.groups

    def fn(holder, x):
        g = holder.param_groups[0]
        return x * g["lr"] + g["params"][0] + g["params"][1] * g["momentum"]

    holder = Reads([{"lr": 0.5, "momentum": 0.9, "params": [dynjit.ones(3), dynjit.ones(3)]}])
    compiled = dynjit.compile(fn)
    same_as_plain(fn, compiled, holder, dynjit.arange(3.0))
    guard = compiled.entries[0].guard
    assert guard.source.count(".groups") == 1, guard.source
    # a change anywhere under the shared path still fails the guard
    holder.groups[0]["params"][1] = dynjit.ones(4)
    with pytest.raises(RuntimeError, match="must match the size"):
        fn(holder, dynjit.arange(3.0))
    with pytest.raises(RuntimeError, match="must match the size"):
        compiled(holder, dynjit.arange(3.0))
    holder.groups[0]["params"][1] = dynjit.full((3,), 2.0)
    holder.groups[0]["momentum"] = 0.1
    same_as_plain(fn, compiled, holder, dynjit.arange(3.0))
    holder.groups = [dict(holder.groups[0], lr=2.0)]
    same_as_plain(fn, compiled, holder, dynjit.arange(3.0))


def test_the_entry_the_last_call_ran_is_tried_first():
    def fn(x):
        return x * 2
    compiled = dynjit.compile(fn)
    compiled(dynjit.ones(2))
    compiled(dynjit.ones(3, 3))          # a second entry (rank changed)
    first = compiled.entries[0]
    calls = []
    real_guard = first.guard

    def counting(*args, **kwargs):
        calls.append(1)
        return real_guard(*args, **kwargs)
    first.guard = counting
    for _ in range(5):
        same_as_plain(fn, compiled, dynjit.ones(3, 3))
    assert len(calls) <= 1
    same_as_plain(fn, compiled, dynjit.ones(2))      # the first entry still serves its inputs
    assert len(compiled.entries) == 2
