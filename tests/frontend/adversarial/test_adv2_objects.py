"""Adversarial programs, round two: user classes the tracer models: dataclasses
(frozen, slots, __post_init__, default factories, replace/asdict/astuple,
ordering), enums and flags, NamedTuple, __slots__, metaclasses with __call__,
__getattr__/__getattribute__, __init_subclass__, __class_getitem__, __set_name__,
total_ordering, and operator protocols (__radd__, NotImplemented fallbacks,
__iadd__ falling back to __add__, __index__, __bool__/__len__ misbehaving,
__eq__ returning non-bools, __contains__, __hash__ = None, __format__)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["dataclass_post_init_and_factory"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass
class Cfg:
    scale: float
    names: list = dataclasses.field(default_factory=list)
    total: float = dataclasses.field(init=False)
    hidden: int = dataclasses.field(default=3, repr=False, compare=False)
    def __post_init__(self):
        self.total = self.scale * 2
        self.names.append("post")
def main(x, s):
    a = Cfg(s)
    b = Cfg(s, ["x"])
    c = dataclasses.replace(a, scale=s + 1)
    return x * a.total, a == Cfg(s), repr(b), c.names, a.names is c.names, dataclasses.astuple(b), dataclasses.fields(a)[1].name
def make_args(call):
    return dynjit.ones(2), [1.0, 1.0, 2.5][call]
'''

PROGRAMS["dataclass_frozen_assignment_raises"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass(frozen=True)
class P:
    a: int
    b: int = 0
def main(x, k):
    p = P(k)
    h = hash(p) == hash(P(k))
    q = dataclasses.replace(p, b=5)
    if k > 1:
        p.a = 3
    return x * q.b, h, p, q
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["dataclass_slots_and_order"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass(order=True, slots=True)
class Item:
    prio: int
    name: str = dataclasses.field(compare=False)
def main(x, prios):
    items = [Item(p, f"n{p}") for p in prios]
    items.sort()
    best = min(items)
    has_dict = hasattr(items[0], "__dict__")
    return [i.name for i in items], best.prio, has_dict, Item(1, "a") < Item(2, "b"), Item(1, "a") == Item(1, "z"), x * best.prio
def make_args(call):
    return dynjit.ones(2), [[3, 1, 2], [3, 1, 2], [5, 5, 0]][call]
'''

PROGRAMS["dataclass_asdict_deep_copies_and_tensors"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass
class Inner:
    t: object
    tags: list
@dataclasses.dataclass
class Outer:
    inner: Inner
    k: int
def main(x):
    o = Outer(Inner(x * 2, ["a"]), 1)
    d = dataclasses.asdict(o)
    d["inner"]["tags"].append("b")
    return d["inner"]["t"], o.inner.tags, d["k"], d["inner"]["t"] is o.inner.t
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["enum_auto_flag_and_iteration"] = '''
import enum
import dynjit
class Color(enum.Enum):
    RED = enum.auto()
    GREEN = enum.auto()
    BLUE = 10
    ALIAS = 10
class Perm(enum.Flag):
    R = enum.auto()
    W = enum.auto()
    X = enum.auto()
class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2
def main(x, c, p):
    r = (c.value, c.name, Color(10).name, Color["GREEN"].value, [m.name for m in Color], len(Color),
         Color.ALIAS is Color.BLUE, bool(p & Perm.W), (p | Perm.X).value, Perm.R in p, Level.HIGH + 1,
         Level.LOW < Level.HIGH, Level(2).name, isinstance(Level.LOW, int), sorted([Level.HIGH, Level.LOW]),
         str(Level.HIGH), f"{Level.LOW}", repr(c))
    return r, x * c.value * Level.HIGH
def make_args(call):
    return dynjit.ones(2), [Color.RED, Color.RED, Color.BLUE][call], [Perm.R, Perm.R, Perm.R | Perm.W][call]
'''

PROGRAMS["namedtuple_methods_and_defaults"] = '''
import collections
import typing
import dynjit
class Batch(typing.NamedTuple):
    x: object
    y: object
    n: int = 1
    def scaled(self, k):
        return self._replace(x=self.x * k)
P = collections.namedtuple("P", "a b", defaults=[7])
def main(x, k):
    b = Batch(x, x + 1)
    c = b.scaled(k)
    p = P(1)
    a, bb, n = c
    return (c.x, c.n, b._asdict()["n"], Batch._fields, Batch._field_defaults, p, p._replace(b=2), a is c.x,
            c == (c.x, c.y, 1), len(c), c[1:], P._make([5, 6]), isinstance(c, tuple), n + k)
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["slots_class_without_dict"] = '''
import dynjit
class V:
    __slots__ = ("t", "n")
    def __init__(self, t):
        self.t = t
class W(V):
    __slots__ = ("extra",)
def main(x, k):
    v = V(x)
    v.n = k
    w = W(x * 2)
    w.extra = "e"
    has_n = hasattr(w, "n")
    try_set = None
    del v.n
    return v.t, hasattr(v, "n"), w.t, w.extra, has_n, hasattr(v, "__dict__"), W.__slots__
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["slots_assign_unknown_attr_raises"] = '''
import dynjit
class V:
    __slots__ = ("t",)
def main(x, k):
    v = V()
    v.t = x
    if k > 0:
        v.other = 1
    return v.t * 2
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["metaclass_call_and_registry"] = '''
import dynjit
class Meta(type):
    registry = {}
    calls = 0
    def __new__(mcls, name, bases, ns):
        cls = super().__new__(mcls, name, bases, ns)
        mcls.registry[name] = cls
        return cls
    def __call__(cls, *args, **kw):
        Meta.calls += 1
        obj = super().__call__(*args, **kw)
        obj.made_by_meta = True
        return obj
class Layer(metaclass=Meta):
    def __init__(self, k):
        self.k = k
    def __call__(self, t):
        return t * self.k
def main(x, k):
    l1 = Layer(k)
    l2 = Meta.registry["Layer"](k + 1)
    return l2(l1(x)), Meta.calls, l1.made_by_meta, type(Layer).__name__
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["getattr_fallback_and_getattribute_counting"] = '''
import dynjit
class Proxy:
    def __init__(self, target):
        object.__setattr__(self, "_t", target)
        object.__setattr__(self, "_log", [])
    def __getattr__(self, name):
        self._log.append(name)
        return getattr(self._t, name)
class Counted:
    def __init__(self):
        self.hits = 0
        self.val = 3
    def __getattribute__(self, name):
        if name != "hits":
            object.__setattr__(self, "hits", object.__getattribute__(self, "hits") + 1)
        return object.__getattribute__(self, name)
def main(x, c):
    p = Proxy(x)
    s = p.shape
    y = p.mul(2)
    z = x * c.val + c.val
    return y, s, p._log, c.hits, z
def make_args(call):
    return dynjit.ones(2 + call), Counted()
'''

PROGRAMS["init_subclass_and_class_getitem"] = '''
import dynjit
class Plugin:
    kinds = []
    def __init_subclass__(cls, kind=None, **kw):
        super().__init_subclass__(**kw)
        cls.kind = kind
        Plugin.kinds.append(kind)
    def __class_getitem__(cls, item):
        return (cls.__name__, item)
def main(x, k):
    class A(Plugin, kind="a"):
        pass
    class B(A, kind=f"b{k}"):
        pass
    return x * len(Plugin.kinds), B.kind, A.kind, Plugin[int], B["x"], list(Plugin.kinds)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["set_name_descriptor_and_validation"] = '''
import dynjit
class Positive:
    def __set_name__(self, owner, name):
        self.name = "_" + name
        self.owner = owner.__name__
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.name)
    def __set__(self, obj, value):
        if value <= 0:
            raise ValueError(f"{self.name[1:]} must be positive, got {value}")
        setattr(obj, self.name, value)
class Opt:
    lr = Positive()
    def __init__(self, lr):
        self.lr = lr
def main(x, lr):
    o = Opt(1.0)
    o.lr = lr
    return x * o.lr, Opt.lr.name, Opt.lr.owner, vars(o)
def make_args(call):
    return dynjit.ones(2), [0.5, 0.5, 2.0, -1.0][call]
'''

PROGRAMS["total_ordering_and_sorting_objects"] = '''
import functools
import dynjit
@functools.total_ordering
class Ver:
    def __init__(self, *parts):
        self.parts = parts
    def __eq__(self, other):
        return self.parts == other.parts
    def __lt__(self, other):
        return self.parts < other.parts
def main(x, vs):
    objs = [Ver(*v) for v in vs]
    s = sorted(objs)
    return [o.parts for o in s], Ver(1, 2) >= Ver(1, 1), Ver(1) <= Ver(1), max(objs).parts, x * len(s)
def make_args(call):
    return dynjit.ones(2), [[(1, 2), (1, 0), (0, 9)], [(1, 2), (1, 0), (0, 9)], [(3,), (2, 2)]][call]
'''

PROGRAMS["radd_and_notimplemented_chain"] = '''
import dynjit
class Money:
    def __init__(self, v):
        self.v = v
    def __add__(self, other):
        if isinstance(other, Money):
            return Money(self.v + other.v)
        if isinstance(other, (int, float)):
            return Money(self.v + other)
        return NotImplemented
    def __radd__(self, other):
        if other == 0:
            return self
        return self.__add__(other)
    def __mul__(self, other):
        return NotImplemented
    def __rmul__(self, other):
        return Money(self.v * other)
def main(x, vals):
    total = sum(Money(v) for v in vals)
    a = 3 + Money(1)
    b = 2 * Money(5)
    return x * total.v, a.v, b.v, (Money(1) + Money(2)).v
def make_args(call):
    return dynjit.ones(2), [[1, 2], [1, 2], [5]][call]
'''

PROGRAMS["notimplemented_both_sides_typeerror"] = '''
import dynjit
class A:
    def __add__(self, o):
        return NotImplemented
class B:
    def __radd__(self, o):
        return NotImplemented
def main(x, k):
    if k:
        return A() + B()
    return x
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["iadd_falls_back_to_add_and_rebinds"] = '''
import dynjit
class Acc:
    def __init__(self, v):
        self.v = v
    def __add__(self, o):
        return Acc(self.v + o)
class InPlace:
    def __init__(self, v):
        self.v = v
    def __iadd__(self, o):
        self.v += o
        return self
class Weird:
    def __iadd__(self, o):
        return "replaced"
def main(x, k):
    a = Acc(1)
    a0 = a
    a += k
    b = InPlace(1)
    b0 = b
    b += k
    w = Weird()
    w += 1
    lst = [Acc(0)]
    lst[0] += k
    return x * a.v, a is a0, a0.v, b is b0, b.v, w, lst[0].v
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["subclass_reflected_operator_priority"] = '''
import dynjit
class Base:
    def __init__(self, v):
        self.v = v
    def __sub__(self, o):
        return ("Base.sub", self.v, o.v)
    def __rsub__(self, o):
        return ("Base.rsub", self.v, o.v)
class Sub(Base):
    def __rsub__(self, o):
        return ("Sub.rsub", self.v, o.v)
def main(x, k):
    return Base(1) - Sub(k), Sub(k) - Base(1), Base(1) - Base(k), x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["tensor_with_user_reflected_operators"] = '''
import dynjit
class Scale:
    def __init__(self, k):
        self.k = k
    def __rmul__(self, t):
        return t * self.k
    def __radd__(self, t):
        return t + self.k
    def __rmatmul__(self, t):
        return t.sum() * self.k
def main(x, k):
    s = Scale(k)
    return x * s, x + s, x @ s
def make_args(call):
    return dynjit.ones(3) * (call + 1), call + 2
'''

PROGRAMS["index_dunder_in_tensor_and_range"] = '''
import dynjit
class Ix:
    def __init__(self, v):
        self.v = v
    def __index__(self):
        return self.v
def main(x, k):
    i = Ix(k)
    return x[i], x[Ix(0):i], list(range(i)), [10, 20, 30][i], "abcd"[i], x.narrow(0, 0, i) if k else None, hex(i), bin(Ix(5))
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32) * (call + 1), [1, 1, 2][call]
'''

PROGRAMS["bool_returning_non_bool_raises"] = '''
import dynjit
class Bad:
    def __init__(self, r):
        self.r = r
    def __bool__(self):
        return self.r
def main(x, r):
    if Bad(r):
        return x * 2
    return x
def make_args(call):
    return dynjit.ones(2), [True, True, False, 1][call]
'''

PROGRAMS["len_misbehaving_raises"] = '''
import dynjit
class L:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
def main(x, n):
    obj = L(n)
    if obj:
        x = x * 2
    return x, len(obj)
def make_args(call):
    return dynjit.ones(2), [2, 2, 0, -1][call]
'''

PROGRAMS["len_returning_float_raises"] = '''
import dynjit
class L:
    def __len__(self):
        return 2.0
def main(x, k):
    if k:
        return len(L())
    return x
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["eq_returning_non_bool_values"] = '''
import dynjit
class Sym:
    def __init__(self, name):
        self.name = name
    def __eq__(self, other):
        return ("eq", self.name, getattr(other, "name", other))
    def __ne__(self, other):
        return []
    __hash__ = object.__hash__
def main(x, n):
    a, b = Sym("a"), Sym(n)
    r = (a == b, a != b, a == 3, 3 == a, a in [b], [a] == [b], (a == b) and "truthy", not (a != b))
    return r, x * len(n)
def make_args(call):
    return dynjit.ones(2), ["b", "b", "cc"][call]
'''

PROGRAMS["contains_and_hash_none"] = '''
import dynjit
class Box:
    def __init__(self, items):
        self.items = items
    def __contains__(self, v):
        return len([i for i in self.items if i == v])
class Unhashable:
    __hash__ = None
def main(x, items, k):
    b = Box(items)
    r = (k in b, k not in b, 99 in b)
    if k > 1:
        {Unhashable(): 1}
    return r, x * len(items)
def make_args(call):
    return dynjit.ones(2), [[1, 2, 2], [1, 2, 2], [2]][call], call
'''

PROGRAMS["format_str_repr_dunders_in_fstrings"] = '''
import dynjit
class F:
    def __init__(self, v):
        self.v = v
    def __format__(self, spec):
        return f"F<{spec}|{self.v}>"
    def __str__(self):
        return f"str{self.v}"
    def __repr__(self):
        return f"repr{self.v}"
def main(x, v):
    f = F(v)
    return f"{f}|{f:>5}|{f!s}|{f!r}|{f!a}|{[f]}|{f'{f:{v}}'}", str([f, f]), "%s %r" % (f, f), format(f, "q"), x * v
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["abstract_class_instantiation_and_partial_impl"] = '''
import abc
import dynjit
class Base(abc.ABC):
    @abc.abstractmethod
    def f(self, t): ...
    def g(self, t):
        return self.f(t) + 1
class Good(Base):
    def f(self, t):
        return t * 2
class Half(Base):
    pass
def main(x, k):
    r = Good().g(x)
    if k == 2:
        Half()
    return r, Base.__abstractmethods__, isinstance(Good(), Base), issubclass(Half, Base)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["property_raising_non_attribute_error"] = '''
import dynjit
class P:
    def __init__(self, k):
        self.k = k
    @property
    def val(self):
        if self.k > 1:
            raise KeyError("no val")
        return self.k
    def __getattr__(self, name):
        return "fallback-" + name
def main(x, k):
    p = P(k)
    return x * p.val, p.missing
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["classmethod_staticmethod_and_class_attr_mutation"] = '''
import dynjit
class Counter:
    count = 0
    items = []
    @classmethod
    def make(cls, t):
        cls.count += 1
        cls.items.append(t.shape[0])
        return cls()
    @staticmethod
    def scale(t, k):
        return t * k
class Sub(Counter):
    pass
def main(x, k):
    Counter.make(x)
    Sub.make(x)
    Sub.make(x)
    return Counter.scale(x, k), Counter.count, Sub.count, Counter.items is Sub.items, list(Sub.items), "count" in vars(Sub)
def make_args(call):
    return dynjit.ones(2 + call), call
'''

PROGRAMS["object_identity_of_new_objects_and_caches"] = '''
import dynjit
class Node:
    cache = {}
    def __new__(cls, key):
        if key in cls.cache:
            return cls.cache[key]
        obj = super().__new__(cls)
        cls.cache[key] = obj
        obj.inits = 0
        return obj
    def __init__(self, key):
        self.key = key
        self.inits += 1
def main(x, keys):
    nodes = [Node(k) for k in keys]
    return [n.inits for n in nodes], nodes[0] is Node(keys[0]), len(Node.cache), x * len(nodes)
def make_args(call):
    return dynjit.ones(2), [["a", "b", "a"], ["a", "b", "a"], ["c"]][call]
'''

PROGRAMS["dunder_class_and_type_checks"] = '''
import dynjit
class A:
    def who(self):
        return "A"
class B:
    def who(self):
        return "B"
def main(x, flip):
    o = A()
    before = o.who()
    if flip:
        o.__class__ = B
    return before, o.who(), type(o).__name__, isinstance(o, A), x * (2 if flip else 1)
def make_args(call):
    return dynjit.ones(2), call % 2 == 1
'''

PROGRAMS["instance_method_shadowed_by_attribute"] = '''
import dynjit
class M:
    def f(self, t):
        return t + 1
def main(x, k):
    m = M()
    a = m.f(x)
    m.f = lambda t: t * k
    b = m.f(x)
    del m.f
    c = m.f(x)
    M.f = lambda self, t: t - k
    d = m.f(x)
    return a, b, c, d
def make_args(call):
    return dynjit.ones(2), call + 2
'''

PROGRAMS["user_tensor_container_with_torch_function_like_api"] = '''
import dynjit
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b
    def __iter__(self):
        yield self.a
        yield self.b
    def __getitem__(self, i):
        return (self.a, self.b)[i]
    def __len__(self):
        return 2
    def map(self, f):
        return Pair(f(self.a), f(self.b))
def main(x):
    p = Pair(x, x * 2).map(lambda t: t + 1)
    a, b = p
    c = dynjit.stack(list(p))
    d = dynjit.cat(tuple(p))
    return a, b, c, d, p[-1], len(p)
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["three_arg_type_in_helper_with_bare_globals"] = '''
import dynjit
_NS = {}
exec("def make(k):\\n    C = type('Dyn', (), {'k': k})\\n    return C().k, C.__name__, hasattr(C, '__module__')\\n", _NS)
make = _NS["make"]
def main(x, k):
    return make(k), x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["bound_method_equality_of_user_objects"] = '''
import dynjit
class A:
    def m(self):
        return 1
def main(x, a):
    b = A()
    return a.m == a.m, a.m != a.m, a.m == b.m, a.m is a.m, A.m == A.m, x * 2
def make_args(call):
    return dynjit.ones(2), A()
'''

PROGRAMS["sequence_equality_calls_user_eq"] = '''
import dynjit
LOG = []
class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        LOG.append(("eq", self.v))
        return isinstance(o, V) and self.v == o.v
    __hash__ = object.__hash__
def main(x, a, b):
    r = ([V(a)] == [V(b)], (V(a), 1) == (V(b), 1), [V(a), V(a)] != [V(b), V(a)], [[V(a)]] == [[V(b)]])
    return r, list(LOG), x * a
def make_args(call):
    return dynjit.ones(2), [1, 1, 2][call], [1, 1, 3][call]
'''

PROGRAMS["namedtuples_through_sorted_min_max_reversed"] = '''
import collections
import typing
import dynjit
class Item(typing.NamedTuple):
    prio: int
    name: str = "x"
Pair = collections.namedtuple("Pair", "a b")
def main(x, prios):
    items = [Item(p, f"n{p}") for p in prios]
    s = sorted(items)
    best = max(items)
    low = min(Item(5), Item(1))
    rev = list(reversed(items))
    pairs = sorted([Pair(2, 0), Pair(1, 0)])
    return s, s[0].name, best.prio, low, rev, pairs, x * best.prio
def make_args(call):
    return dynjit.ones(2), [[3, 1, 2], [3, 1, 2], [5, 4]][call]
'''

XFAIL = {}

CALLS = {"bool_returning_non_bool_raises": 4, "len_misbehaving_raises": 4, "set_name_descriptor_and_validation": 4}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
