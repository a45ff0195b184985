"""Differential tests for attribute stores through descriptors, iterators the function is given,
generators, dict views and super() outside instance methods: each program runs plain and
compiled on fresh, equal inputs; results, exceptions and effects on the arguments must agree."""
import itertools

import dynjit
from dynjit.testing import same

from test_soundness_classes import _deep_same, _outcome, _same_outcome


def _state(value):
    """What can be compared of an argument after the call: an object's attributes and slots,
    what an iterator has left (read without consuming it)."""
    if hasattr(value, "__next__") and hasattr(value, "__reduce__") and not hasattr(value, "send"):
        reduced = value.__reduce__()
        return ("iterator", list(reduced[1][0])[reduced[2]:] if len(reduced) > 2 else [])
    if hasattr(value, "__slots__"):
        return ("slots", {k: getattr(value, k) for k in value.__slots__ if hasattr(value, k)})
    if hasattr(value, "__dict__") and not isinstance(value, dynjit.Tensor):
        return ("object", dict(vars(value)))
    return value


def check(fn, make_args=lambda: (dynjit.tensor([1.0, 2.0]),)):
    """fn plain and compiled: same outcome and the same state of every argument after."""
    plain_args, compiled_args = make_args(), make_args()
    want = _outcome(fn, *plain_args)
    got = _outcome(dynjit.compile(fn), *compiled_args)
    assert _same_outcome(got, want), (got, want)
    assert _deep_same([_state(a) for a in compiled_args], [_state(a) for a in plain_args])
    return got


# -- attribute stores go through the class's data descriptors ----------------------------------
class Doubling:
    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, t):
        self._v = t * 2


class Positive:
    def __get__(self, obj, objtype=None):
        return obj._n

    def __set__(self, obj, value):
        if value < 0:
            raise ValueError("must be positive")
        obj._n = value


class Config:
    n = Positive()


class Slotted:
    __slots__ = ("a",)


class ReadOnly:
    @property
    def v(self):
        return 1


def test_a_property_setter_runs_on_an_existing_and_a_new_object():
    def fn(x, p):
        p.v = x
        q = Doubling()
        q.v = x + 1
        return p.v + 1, q.v, vars(q)
    got = check(fn, lambda: (dynjit.ones(2), Doubling()))
    assert same(got[1][0], dynjit.full((2,), 3.0))


def test_a_descriptor_set_validates_and_stores_where_it_says():
    def fn(x, n):
        c = Config()
        c.n = n
        return x * c.n, vars(c)
    assert check(fn, lambda: (dynjit.ones(2), 3))[1][1] == {"_n": 3}
    assert check(fn, lambda: (dynjit.ones(2), -1))[0] == "raised"


def test_stores_that_raise_are_caught_by_the_functions_own_try():
    def slot_miss(x, s):
        try:
            s.c = 1
        except AttributeError:
            return x + 1
        return x

    def read_only(x, o):
        try:
            o.v = 3
        except AttributeError as e:
            return x + 2, str(e)
        return x
    assert same(check(slot_miss, lambda: (dynjit.ones(2), Slotted()))[1], dynjit.full((2,), 2.0))
    check(read_only, lambda: (dynjit.ones(2), ReadOnly()))

    def slot_hit(x, s):
        s.a = x
        return s.a * 2
    check(slot_hit, lambda: (dynjit.ones(2), Slotted()))


# -- iterators and generators ------------------------------------------------------------------
def _remaining(it):
    return list(it)


def test_an_iterator_argument_is_advanced_as_plain_python_advances_it():
    def take_one(it, x):
        return x + next(it)

    def drain(it, x):
        for v in it:
            x = x + v
        return x

    def take_two_of_one(it, it2, x):
        return x + next(it) + next(it2)
    for fn in (take_one, drain):
        its = {}

        def make(fn=fn):
            it = iter([1, 2, 3])
            its.setdefault(fn, []).append(it)
            return it, dynjit.zeros(2)
        check(fn, make)
        plain_it, compiled_it = its[fn]
        assert _remaining(compiled_it) == _remaining(plain_it)
    it = iter([1, 2, 3])
    got = dynjit.compile(take_two_of_one)(it, it, dynjit.zeros(1))
    assert same(got, dynjit.tensor([3.0])) and list(it) == [3]


def test_islice_consumes_the_iterator_it_is_given():
    def fn(x):
        it = iter(range(10))
        first = list(itertools.islice(it, 3))
        return x + 1, next(it), first
    assert check(fn)[1][1:] == (3, [0, 1, 2])


def _accumulate():
    total = 0
    while True:
        v = yield total
        if v is None:
            break
        total = total + v


def _source(t):
    yield t
    return "done"


def _relay(g):
    got = yield from g
    return got


def test_generator_objects_keep_send_and_their_return_value():
    def sends(x):
        g = _accumulate()
        next(g)
        a = g.send(x)
        try:
            g.send(None)
        except StopIteration:
            pass
        return a

    def relays(x):
        g = _relay(_source(x))
        next(g)
        try:
            next(g)
        except StopIteration as e:
            return e.value
    check(sends)
    assert check(relays)[1] == "done"

    def returns_generator(x):
        return (x * i for i in range(3))
    got = dynjit.compile(returns_generator)(dynjit.ones(1))
    assert type(got).__name__ == "generator" and [float(t) for t in got] == [0.0, 1.0, 2.0]


# -- dict views are live -----------------------------------------------------------------------
def test_dict_views_see_later_changes_and_have_set_operations():
    def keys_later(d, x):
        ks = d.keys()
        d["new"] = 1
        return len(ks), list(ks), x + 1, "new" in ks

    def set_ops(d, x):
        return d.keys() & {"a"}, x + 1, d.keys() == {"a", "b"}, repr(d.keys()), d.keys() - {"b"}

    def values_later(d, x):
        out = x
        for _, v in d.items():
            out = out + v
        vs = d.values()
        d["c"] = x
        for v in vs:
            out = out + v
        return out, sorted(d.keys()), len(vs)

    def changed_while_iterated(d, x):
        it = iter(d.items())
        next(it)
        d["new"] = x
        try:
            return next(it)
        except RuntimeError as e:
            return str(e)
    assert check(keys_later, lambda: ({"a": 0, "b": 1}, dynjit.ones(2)))[1][:2] == (3, ["a", "b", "new"])
    check(set_ops, lambda: ({"a": 0, "b": 1}, dynjit.ones(2)))
    check(values_later, lambda: ({"a": dynjit.ones(2), "b": dynjit.ones(2)}, dynjit.ones(2)))
    assert "changed size" in check(changed_while_iterated, lambda: ({"a": 2.0, "b": 3.0}, dynjit.ones(2)))[1]


# -- super() in class and static methods, and to a property ----------------------------------
class Base:
    @classmethod
    def make(cls, t):
        return t * 2

    @staticmethod
    def shift(t):
        return t - 1

    @property
    def p(self):
        return 5

    def m(self, t):
        return t + 100


class Derived(Base):
    @classmethod
    def make(cls, t):
        return super().make(t) + 1

    @classmethod
    def make2(cls, t):
        return super(Derived, cls).make(t) + super().shift(t)

    @property
    def p(self):
        return super().p + 1

    def m(self, t):
        return super().m(t) + self.p


class Leaf(Derived):
    pass


def test_super_in_classmethods_and_properties():
    def fn(x):
        return Derived.make(x), Leaf.make2(x), Derived().m(x), Leaf().m(x)
    got = check(fn)
    assert same(got[1][2], dynjit.tensor([107.0, 108.0]))


# -- dynjit.Size made in compiled code, and warnings of values computed while tracing ---------
def test_a_size_made_in_compiled_code_is_a_size():
    def fn(x):
        s = dynjit.Size((2, 3))
        t = dynjit.Size(x.shape)
        return x.view(-1) * s.numel(), type(s).__name__, t.numel(), t, s + (1,), type(s + (1,)).__name__
    check(fn)
    from dynjit.testing import CompileCounter
    counter = CompileCounter()
    compiled = dynjit.compile(fn, backend=counter)
    for n in range(2, 8):
        want, got = fn(dynjit.ones(n, 2)), compiled(dynjit.ones(n, 2))
        assert same(got[0], want[0]) and got[1:] == want[1:]
    assert counter.frame_count == 2         # the second for dynamic sizes


def test_floating_point_warnings_are_given_once_as_in_plain_python():
    import warnings

    def fn(x):
        return x * 1e30 * 1e30
    for backend in ("eager", "aot_eager"):
        with warnings.catch_warnings(record=True) as plain:
            warnings.simplefilter("always")
            fn(dynjit.ones(2))
        with warnings.catch_warnings(record=True) as compiled:
            warnings.simplefilter("always")
            dynjit.compile(fn, backend=backend)(dynjit.ones(2))
        assert [str(w.message) for w in compiled] == [str(w.message) for w in plain] == \
            ["overflow encountered in multiply"]


# -- a cached graph that raises on this call's data -------------------------------------------
def test_an_error_in_a_cached_graph_is_caught_by_the_users_try_and_keeps_earlier_effects():
    def divides(i, d):
        try:
            return i // d
        except RuntimeError:
            return "caught"

    log = []

    def indexes(x, idx):
        log.append("before")
        return (x * 2)[idx]
    for backend in ("eager", "aot_eager", "llvm"):
        f = dynjit.compile(divides, backend=backend)
        assert same(f(dynjit.arange(3), dynjit.tensor(1)), dynjit.arange(3))
        assert f(dynjit.arange(3), dynjit.tensor(0)) == "caught"
        log.clear()
        g = dynjit.compile(indexes, backend=backend)
        g(dynjit.arange(3), dynjit.tensor([0, 1]))
        try:
            g(dynjit.arange(3), dynjit.tensor([0, 5]))
        except IndexError as e:
            assert "out of bounds" in str(e)
        else:
            raise AssertionError("no IndexError")
        assert log == ["before", "before"]


# -- sizes that depend on data, signed zeros, tensor classes, unbound locals -------------------
def test_sizes_that_depend_on_the_data_are_not_baked_in():
    programs = [
        lambda x: x[x > 0].shape[0],
        lambda x: len(x[x > 0]),
        lambda x: x.masked_select(x > 0).numel(),
        lambda x: dynjit.where(x > 0)[0].shape[0],
        lambda x: x.nonzero().shape[0],
        lambda x: (x[x > 0] * 2).sum(),
    ]
    for fn in programs:
        for backend in ("eager", "aot_eager", "llvm"):
            f = dynjit.compile(fn, backend=backend)
            for data in ([1.0, -2.0, 3.0], [-1.0, -1.0, -1.0], [1.0, 2.0, 3.0]):
                want, got = fn(dynjit.tensor(data)), f(dynjit.tensor(data))
                assert (same(got, want) if isinstance(want, dynjit.Tensor) else got == want), (data, got, want)


def test_a_float_guard_tells_minus_zero_from_zero():
    import math

    def fn(x, k):
        return x * math.copysign(1.0, k), str(k)
    f = dynjit.compile(fn)
    for k in (0.0, -0.0, 0.0, -0.0):
        want, got = fn(dynjit.ones(2), k), f(dynjit.ones(2), k)
        assert same(got[0], want[0]) and got[1] == want[1]


def test_isinstance_sees_the_class_of_a_tensor_argument():
    from dynjit import nn

    def fn(t):
        if isinstance(t, nn.Parameter):
            return "param", t * 2
        return "tensor", t * 3
    f = dynjit.compile(fn)
    for t in (dynjit.ones(2), nn.Parameter(dynjit.ones(2)), dynjit.ones(2)):
        want, got = fn(t), f(t)
        assert got[0] == want[0] and same(got[1], want[1])


def test_reading_an_unbound_local_twice_raises_unbound_local_error():
    def fn(x):
        t1 = (t1 * 0.5 + t1).tanh()     # noqa: F821
        return t1
    assert check(fn)[1][0] is UnboundLocalError


def test_builtins_are_guarded_against_a_global_of_their_name():
    def fn(x):
        return x * len([1, 2])
    f = dynjit.compile(fn)
    assert same(f(dynjit.ones(2)), dynjit.full((2,), 2.0))
    globals()["len"] = lambda v: 10
    try:
        assert same(f(dynjit.ones(2)), dynjit.full((2,), 10.0))
    finally:
        del globals()["len"]
    assert same(f(dynjit.ones(2)), dynjit.full((2,), 2.0))


def test_sets_made_in_the_frame_are_sets_and_locals_are_the_users():
    def sets(a, b, x):
        s = {a is b, 1}
        s.add(5)
        t = set([1, 2])
        t.add(3)
        u = {i * 2 for i in range(3)}
        u.discard(2)
        s |= {7}
        return type(s).__name__, sorted(s), sorted(t), sorted(u), sorted(s | t), x + len(s), 3 in t

    def reads_locals(x):
        loc = locals()
        y = 2
        dynjit.graph_break()
        return sorted(loc), x + y, sorted(locals())
    check(sets, lambda: (1, 2, dynjit.ones(1)))
    check(reads_locals)


def test_library_calls_returning_tensors_and_none_stay_in_the_graph():
    from dynjit.testing import CompileCounter
    dynjit.manual_seed(0)
    layer = dynjit.nn.TransformerEncoder(dynjit.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                                           dropout=0.0), 2)
    attention = dynjit.nn.MultiheadAttention(8, 2, batch_first=True)

    def attend(x):
        out, weights = attention(x, x, x, need_weights=False)
        return out.sum(), weights

    def encode(x):
        return layer(x).sum()
    x = dynjit.randn(2, 3, 8)
    for fn in (attend, encode):
        counter = CompileCounter()
        got, want = dynjit.compile(fn, backend=counter)(x), fn(x)
        assert counter.frame_count == 1
        assert dynjit.allclose(got[0] if isinstance(got, tuple) else got,
                               want[0] if isinstance(want, tuple) else want, atol=1e-6)


def test_real_and_imag_attributes():
    def fn(x):
        return x.real is x, x.real * 2, x.T
    check(fn)
    z = dynjit.tensor([1 + 2j, 3 - 1j])
    for backend in ("eager", "aot_eager", "llvm"):
        got = dynjit.compile(lambda z: z.real + z.imag * 2, backend=backend, fullgraph=True)(z)
        assert same(got, dynjit.tensor([5.0, 1.0]))


def test_grad_mode_after_a_graph_is_the_traced_one_on_every_backend():
    @dynjit.enable_grad()
    def doubled(t):
        return t * 2

    def calls_enable_grad(w):
        with dynjit.no_grad():
            a = doubled(w)
            b = w * 2
        return a.requires_grad, b.requires_grad

    def breaks_inside(w):
        with dynjit.no_grad():
            dynjit.graph_break()
            b = w * 2
        return b.requires_grad, dynjit.is_grad_enabled()
    for fn in (calls_enable_grad, breaks_inside):
        want = fn(dynjit.ones(2, requires_grad=True))
        for backend in ("eager", "aot_eager", "llvm"):
            assert dynjit.compile(fn, backend=backend)(dynjit.ones(2, requires_grad=True)) == want


def test_a_user_hash_runs_only_where_plain_python_runs_it():
    log = []

    class Key:
        def __hash__(self):
            log.append("hash")
            return 7

    def fn(x, a):
        d = {a: 1}
        return x + d[a], len(log)
    log.clear()
    want = fn(dynjit.ones(2), Key())[1]
    log.clear()
    assert dynjit.compile(fn)(dynjit.ones(2), Key())[1] == want == 2


def test_objects_with_a_finalizer_and_generators_with_cleanup_are_made_for_real():
    log = []

    class Finalized:
        def __del__(self):
            log.append("del")

    def gen(t):
        try:
            yield t
            yield t * 2
        finally:
            log.append("closed")

    def makes_and_drops(x):
        r = Finalized()
        del r
        return x * 2

    def drains(x):
        return [t for t in gen(x)], x + 1
    for fn in (makes_and_drops, drains):
        log.clear()
        want = fn(dynjit.ones(1))
        plain_log = list(log)
        log.clear()
        got = dynjit.compile(fn)(dynjit.ones(1))
        import gc
        gc.collect()
        assert log == plain_log and repr(got) == repr(want)


COUNT = 0


def test_a_write_through_globals_is_seen_by_the_next_read_of_the_global():
    def through_call(x):
        globals()["COUNT"] = COUNT + 1
        return x * COUNT

    def through_name(x):
        g = globals()
        g["COUNT"] += 1
        return x * COUNT
    for fn in (through_call, through_name):
        globals()["COUNT"] = 0
        want = fn(dynjit.ones(2))
        globals()["COUNT"] = 0
        got = dynjit.compile(fn)(dynjit.ones(2))
        assert same(got, want) and COUNT == 1


def test_writes_through_an_objects_dict_are_seen_by_its_attributes():
    class Obj:
        def __init__(self):
            self.a = 1

    def through_dict(x, o):
        o.__dict__["a"] = 5
        return x * o.a

    def cleared(x, o):
        o.t = x * 2
        o.__dict__.clear()
        return hasattr(o, "t")

    def through_vars(x, o):
        vars(o)["a"] = 7
        return x * o.a, sorted(vars())
    for fn in (through_dict, cleared, through_vars):
        check(fn, lambda: (dynjit.ones(2), Obj()))


def test_builtins_that_read_a_generator_whole_are_traced():
    def fn(x, names):
        return (x * len(", ".join(n.upper() for n in names)), sorted(n for n in names),
                sum(len(n) for n in names), any(n == "b" for n in names),
                max((len(n) for n in names), default=0), min(names, key=len), max([], default=-1))
    counter = __import__("dynjit.testing", fromlist=["CompileCounter"]).CompileCounter()
    want = fn(dynjit.ones(1), ("a", "bb"))
    got = dynjit.compile(fn, backend=counter, fullgraph=True)(dynjit.ones(1), ("a", "bb"))
    assert same(got[0], want[0]) and got[1:] == want[1:] and counter.frame_count == 1

    def locals_in_a_resumed_frame(x):
        out = []
        dynjit.graph_break()
        cnt = 0

        def bump(t):
            nonlocal cnt
        out.append(sorted(k for k in locals() if not k.startswith("_")))
        return out
    check(locals_in_a_resumed_frame)
