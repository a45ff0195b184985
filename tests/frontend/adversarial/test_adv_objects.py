"""Adversarial programs: closures and cells, functions and classes defined in
compiled code, super(), properties, descriptors, __getattr__/__setattr__,
__slots__, dataclasses, NamedTuples, enums, type(x)(...)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["nonlocal_shared_cells"] = '''
import dynjit
def main(x):
    count = 0
    acc = x
    def inc(t):
        nonlocal count, acc
        count += 1
        acc = acc + t
    def get():
        return count, acc
    inc(x); inc(x * 2)
    dynjit.graph_break()
    inc(x)
    return get()
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["closure_returned_and_called_later"] = '''
import dynjit
def main(x):
    scale = x.sum()
    calls = []
    def f(t):
        calls.append(1)
        return t * scale
    scale = scale + 1
    return f, calls
def make_args(call):
    return (dynjit.ones(2) * call,)
def _observe(res):
    pass
'''

PROGRAMS["closure_returned_called"] = '''
import dynjit
HOLD = []
def main(x, y):
    k = 2
    def f(t):
        return t * k + x
    k = 3
    HOLD.append(f)
    return f(y), HOLD[0](y) if len(HOLD) == 1 else HOLD[-2](y)
def make_args(call):
    return dynjit.ones(2) * call, dynjit.ones(2)
'''

PROGRAMS["closure_cell_in_loop_late_binding"] = '''
import dynjit
def main(x):
    fs = []
    for i in range(3):
        def f(t):
            return t + i
        fs.append(f)
    gs = [lambda t, i=i: t * i for i in range(3)]
    return [f(x) for f in fs], [g(x) for g in gs]
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["nonlocal_across_graph_break_in_inner"] = '''
import dynjit
def main(x):
    total = x
    n = 0
    def add(t):
        nonlocal total, n
        total = total + t
        print("n is", n)
        n += 1
    for i in range(3):
        add(x * i)
    return total, n
def make_args(call):
    return (dynjit.ones(2) + call,)
'''

PROGRAMS["class_defined_inside"] = '''
import dynjit
def main(x):
    class Box:
        count = 0
        def __init__(self, t):
            Box.count += 1
            self.t = t
        def double(self):
            return Box(self.t * 2)
    b = Box(x).double().double()
    return b.t, Box.count, type(b).__name__
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["super_chain_and_mro"] = '''
import dynjit
class A:
    def f(self, t):
        return t + 1
class B(A):
    def f(self, t):
        return super().f(t) * 2
class C(A):
    def f(self, t):
        return super().f(t) - 3
class D(B, C):
    def f(self, t):
        return super().f(t) + 100
def main(x):
    return D().f(x), [k.__name__ for k in D.__mro__]
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["super_two_arg_and_classmethod"] = '''
import dynjit
class A:
    @classmethod
    def make(cls, t):
        return cls, t * 2
class B(A):
    @classmethod
    def make(cls, t):
        c, v = super(B, cls).make(t)
        return c.__name__, v + 1
def main(x):
    return B.make(x), B().make(x)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["property_setter_and_deleter"] = '''
import dynjit
class P:
    def __init__(self):
        self._v = None
        self.log = []
    @property
    def v(self):
        self.log.append("get")
        return self._v
    @v.setter
    def v(self, t):
        self.log.append("set")
        self._v = t * 2
    @v.deleter
    def v(self):
        self.log.append("del")
        self._v = None
def main(x, p):
    p.v = x
    y = p.v + 1
    del p.v
    return y, p.v
def make_args(call):
    return dynjit.ones(2) * call, P()
'''

PROGRAMS["data_descriptor"] = '''
import dynjit
class Positive:
    def __set_name__(self, owner, name):
        self.name = "_" + name
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return getattr(obj, self.name)
    def __set__(self, obj, value):
        if value < 0:
            raise ValueError(f"{self.name} must be >= 0, got {value}")
        setattr(obj, self.name, value)
class Cfg:
    n = Positive()
    def __init__(self, n):
        self.n = n
def main(x, n):
    c = Cfg(1)
    c.n = n
    return x * c.n, vars(c)
def make_args(call):
    return dynjit.ones(2), [3, 5, -1][call]
'''

PROGRAMS["getattr_override"] = '''
import dynjit
class Lazy:
    def __init__(self):
        self.hits = []
    def __getattr__(self, name):
        self.hits.append(name)
        if name.startswith("w"):
            return len(name)
        raise AttributeError(name)
def main(x, o):
    y = x * o.weight + o.w
    z = getattr(o, "missing", 7)
    has = hasattr(o, "nope")
    return y, z, has, o.hits
def make_args(call):
    return dynjit.ones(2) * call, Lazy()
'''

PROGRAMS["setattr_override"] = '''
import dynjit
class Frozenish:
    def __init__(self):
        object.__setattr__(self, "log", [])
    def __setattr__(self, name, value):
        self.log.append(name)
        if name == "locked":
            raise AttributeError("locked is read-only")
        object.__setattr__(self, name, value)
def main(x, o):
    o.a = x * 2
    o.b = o.a + 1
    try:
        o.locked = 1
    except AttributeError as e:
        o.err = str(e)
    return o.b
def make_args(call):
    return dynjit.ones(2) * call, Frozenish()
'''

PROGRAMS["slots_object"] = '''
import dynjit
class S:
    __slots__ = ("a", "b")
    def __init__(self, a):
        self.a = a
def main(x, s):
    s.b = x + s.a
    try:
        s.c = 1
    except AttributeError as e:
        msg = type(e).__name__
    del s.a
    return s.b, hasattr(s, "a"), msg
def make_args(call):
    return dynjit.ones(2), S(call)
'''

PROGRAMS["dataclass_ops"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass
class Pt:
    x: float
    y: float = 0.0
    tags: list = dataclasses.field(default_factory=list)
@dataclasses.dataclass(frozen=True)
class Frozen:
    k: int
def main(t, p):
    q = dataclasses.replace(p, y=p.y + 1)
    q.tags.append("q")
    same = p == Pt(p.x, p.y, p.tags)
    f = Frozen(3)
    try:
        f.k = 4
    except dataclasses.FrozenInstanceError as e:
        err = type(e).__name__
    return t * q.x + q.y, same, dataclasses.astuple(q), err, hash(f) == hash(Frozen(3))
def make_args(call):
    return dynjit.ones(2), Pt(float(call))
'''

PROGRAMS["namedtuple_ops"] = '''
import collections
import typing
import dynjit
P = collections.namedtuple("P", "a b")
class Q(typing.NamedTuple):
    t: object
    n: int = 2
def main(x):
    p = P(x, 2)
    q = Q(x * 3)
    p2 = p._replace(b=5)
    a, b = p2
    return a * b + q.t * q.n, q._asdict()["n"], p2, type(p2).__name__, isinstance(q, tuple)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["enum_ops"] = '''
import enum
import dynjit
class Mode(enum.Enum):
    ADD = "add"
    MUL = "mul"
class Flag(enum.IntFlag):
    A = 1
    B = 2
def main(x, m, f):
    if m is Mode.ADD:
        y = x + 1
    elif m == Mode("mul"):
        y = x * 2
    if Flag.B in f:
        y = y - 1
    return y, m.name, m.value, int(f | Flag.A), [k.name for k in Mode]
def make_args(call):
    return dynjit.ones(2), [Mode.ADD, Mode.ADD, Mode.MUL][call], Flag(call + 1)
'''

PROGRAMS["type_of_x_constructs"] = '''
import dynjit
class V(list):
    pass
def main(x, seq):
    out = type(seq)(v * 2 for v in seq)
    out.append(x)
    return out, type(out).__name__, type(x)
def make_args(call):
    return dynjit.ones(2), [V([1, 2]), (3, 4), V([5])][call] if call != 1 else V([1, 2])
'''

PROGRAMS["isinstance_tuples_abcs"] = '''
import collections.abc as abc
import numbers
import dynjit
def main(x, v):
    r = []
    r.append(isinstance(v, (int, float)))
    r.append(isinstance(v, abc.Sequence))
    r.append(isinstance(v, abc.Mapping))
    r.append(isinstance(v, numbers.Number))
    r.append(isinstance(v, abc.Iterable))
    r.append(isinstance(x, (dynjit.Tensor, list)))
    r.append(issubclass(type(v), abc.Hashable))
    return r, x * len(r)
def make_args(call):
    return dynjit.ones(2), [3, [1], {"a": 1}][call]
'''

PROGRAMS["object_attr_mutation_across_break"] = '''
import dynjit
class St:
    def __init__(self):
        self.items = []
        self.total = None
def main(x, s):
    s.items.append(x)
    s.total = x * 2
    print("break", len(s.items))
    s.items.append(s.total + 1)
    del s.total
    s.done = True
    return len(s.items)
def make_args(call):
    return dynjit.ones(2) * call, St()
'''

PROGRAMS["call_override_and_dunder"] = '''
import dynjit
class Fn:
    def __init__(self, k):
        self.k = k
        self.n = 0
    def __call__(self, t):
        self.n += 1
        return t * self.k
    def __len__(self):
        return self.n
    def __bool__(self):
        return self.n > 1
    def __getitem__(self, i):
        return self.k + i
    def __contains__(self, v):
        return v == self.k
def main(x, f):
    y = f(x)
    y = f(y) if f else y
    y = f(y) if f else y
    return y, len(f), f[3], 2 in f
def make_args(call):
    return dynjit.ones(2), Fn(call + 1)
'''

PROGRAMS["functions_defined_and_mutated_defaults"] = '''
import dynjit
def main(x):
    def f(t, acc=[]):
        acc.append(t)
        return len(acc)
    a = f(x); b = f(x)
    f.__defaults__[0].append(1)
    return a, b, f(x), f.__name__, f.__qualname__
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["module_level_mutable_default"] = '''
import dynjit
def helper(t, seen=[]):
    seen.append(t.sum().item())
    return t * len(seen)
def main(x):
    return helper(x), helper(x + 1)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["class_attr_mutation_visible"] = '''
import dynjit
class Cfg:
    scale = 2.0
    registry = {}
def main(x, k):
    Cfg.registry[k] = x
    y = x * Cfg.scale
    Cfg.scale = Cfg.scale + 1
    return y, dict(Cfg.registry), Cfg.scale
def make_args(call):
    return dynjit.ones(2), f"k{call % 2}"
'''

PROGRAMS["recursion_with_tensors"] = '''
import dynjit
def fact(t, n):
    if n <= 1:
        return t
    return n * fact(t, n - 1)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def main(x, n):
    return fact(x, n), fib(n + 3)
def make_args(call):
    return dynjit.ones(2), 3 + call
'''

PROGRAMS["getattribute_override"] = '''
import dynjit
class Spy:
    def __init__(self, t):
        self.t = t
        self.reads = 0
    def __getattribute__(self, name):
        if name == "t":
            object.__setattr__(self, "reads", object.__getattribute__(self, "reads") + 1)
        return object.__getattribute__(self, name)
def main(x, s):
    return s.t * x + s.t, s.reads
def make_args(call):
    return dynjit.ones(2), Spy(dynjit.ones(2) * call)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
