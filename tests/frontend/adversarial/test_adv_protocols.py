"""Adversarial programs: user classes implementing Python protocols (__iter__,
__next__, __eq__/__hash__, __index__, __getitem__ iteration, __bool__),
collections and copy, comprehension scoping (PEP 709 inlining on 3.12+),
metaclasses and __init_subclass__, partial effects before an exception,
with-blocks around graph breaks, numpy views of tensors."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["user_iterator_class"] = '''
import dynjit
class Countdown:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n
def main(x, c):
    for i in c:
        x = x + i
        if i == 2:
            break
    return x, c.n, list(c)
def make_args(call):
    return dynjit.zeros(2), Countdown(4 + call)
'''

PROGRAMS["user_iterable_with_generator_iter"] = '''
import dynjit
class Bag:
    def __init__(self, items):
        self.items = items
    def __iter__(self):
        for it in self.items:
            yield it * 2
    def __len__(self):
        return len(self.items)
def main(x, b):
    return sum(b, x), len(b), [v for v in b if v > 2]
def make_args(call):
    return dynjit.zeros(2), Bag([1, 2, 3][: 2 + call % 2])
'''

PROGRAMS["old_getitem_iteration_protocol"] = '''
import dynjit
class Seq:
    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i * 10
def main(x):
    return [x + v for v in Seq()], list(Seq()), 20 in Seq()
def make_args(call):
    return (dynjit.ones(1) * call,)
'''

PROGRAMS["eq_hash_override_dict_keys"] = '''
import dynjit
class Key:
    def __init__(self, k):
        self.k = k
    def __eq__(self, other):
        return isinstance(other, Key) and self.k % 3 == other.k % 3
    def __hash__(self):
        return self.k % 3
def main(x, keys):
    d = {}
    for k in keys:
        d[k] = d.get(k, 0) + 1
    found = Key(4) in keys
    return [(k.k, v) for k, v in d.items()], found, x * len(d)
def make_args(call):
    return dynjit.ones(2), [Key(i) for i in range(3 + call)]
'''

PROGRAMS["index_dunder_in_slicing"] = '''
import dynjit
class I:
    def __init__(self, v):
        self.v = v
    def __index__(self):
        return self.v
def main(x, i):
    L = list(range(10))
    return x[I(1):], L[I(i)], x[I(0)], range(I(i))[-1]
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32), 2 + call
'''

PROGRAMS["bool_len_dunders_in_conditions"] = '''
import dynjit
class Maybe:
    def __init__(self, v):
        self.v = v
    def __bool__(self):
        return self.v is not None
class Sized:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
def main(x, m, s):
    r = x
    if m:
        r = r + m.v
    if not s:
        r = r * 2
    while s:
        s.n -= 1
        r = r + 1
    return r, bool(m), s.n
def make_args(call):
    return dynjit.ones(2), Maybe([None, 3.0, 1.0][call]), Sized(call)
'''

PROGRAMS["collections_family"] = '''
import collections
import dynjit
def main(x, words):
    c = collections.Counter(words)
    dd = collections.defaultdict(list)
    for w in words:
        dd[len(w)].append(w)
    od = collections.OrderedDict()
    od["b"] = 1
    od["a"] = 2
    od.move_to_end("b")
    dq = collections.deque([1, 2, 3], maxlen=3)
    dq.append(4)
    dq.appendleft(0)
    return c.most_common(2), dict(dd), list(od), list(dq), x * c["a"]
def make_args(call):
    return dynjit.ones(2), ["a", "bb", "a", "cc", "a"][: 3 + call]
'''

PROGRAMS["copy_and_deepcopy"] = '''
import copy
import dynjit
class Box:
    def __init__(self, t, items):
        self.t = t
        self.items = items
def main(b):
    s = copy.copy(b)
    d = copy.deepcopy(b)
    s.items.append(1)
    d.items.append(2)
    d.t.add_(5)
    s.t = s.t * 2
    return b.items, d.items, b.t, d.t, s.t
def make_args(call):
    return (Box(dynjit.ones(2) * call, [0]),)
'''

PROGRAMS["comprehension_scope_shadowing"] = '''
import dynjit
def main(x):
    i = "outer"
    a = [i * 2 for i in range(3)]
    y = x
    b = {y: y * 2 for y in range(2)}
    c = [[x * i * j for j in range(2)] for i in range(2)]
    g = list(x * i for i in range(2))
    return i, a, y, b, c, g
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["comprehension_with_closure_capture"] = '''
import dynjit
def main(x):
    fs = [lambda t: t * k for k in range(3)]
    gs = [(lambda k: lambda t: t + k)(k) for k in range(3)]
    return [f(x) for f in fs], [g(x) for g in gs]
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["class_in_function_with_super_and_closure"] = '''
import dynjit
def main(x, k):
    class Base:
        def f(self, t):
            return t + k
    class Child(Base):
        def f(self, t):
            return super().f(t) * 2
    return Child().f(x), Child.__name__, Child.__qualname__
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["init_subclass_and_metaclass"] = '''
import dynjit
REG = []
class Meta(type):
    def __call__(cls, *a, **k):
        REG.append(("meta-call", cls.__name__))
        return super().__call__(*a, **k)
class Plugin(metaclass=Meta):
    def __init_subclass__(cls, tag="none", **kw):
        super().__init_subclass__(**kw)
        REG.append(("sub", cls.__name__, tag))
    def __init__(self, t):
        self.t = t
def main(x):
    class P(Plugin, tag="p"):
        pass
    obj = P(x * 2)
    return obj.t, isinstance(obj, Plugin), type(type(obj)).__name__
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["abc_abstract_instantiation"] = '''
import abc
import dynjit
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
class Sq(Shape):
    def __init__(self, t):
        self.t = t
    def area(self):
        return self.t * self.t
def main(x):
    try:
        Shape()
    except TypeError as e:
        msg = str(e).split(" with")[0]
    return Sq(x).area(), msg, isinstance(Sq(x), Shape)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["partial_effects_before_raise"] = '''
import dynjit
def main(x, L, n):
    L.append("a")
    x.add_(1)
    y = x * 2
    L.append(y)
    if n > 0:
        raise ValueError(f"n={n}")
    x.mul_(3)
    return y
def make_args(call):
    return dynjit.ones(2), [], call
'''

PROGRAMS["partial_effects_before_tensor_error"] = '''
import dynjit
STATE = {"n": 0}
def main(x, b, L):
    STATE["n"] += 1
    x.mul_(2)
    L.append(x.sum())
    y = x @ b
    L.append("after")
    return y
def make_args(call):
    return dynjit.ones(2, 3), dynjit.ones(3 - call, 2), []
'''

PROGRAMS["user_cm_around_graph_break"] = '''
import dynjit
LOG = []
class CM:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        LOG.append("enter " + self.name)
        return self
    def __exit__(self, *exc):
        LOG.append("exit " + self.name)
        return False
def main(x):
    with CM("a") as c:
        y = x * 2
        print("inside", c.name)
        y = y + 1
    with CM("b"):
        with CM("c"):
            dynjit.graph_break()
            y = y * 3
    return y
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["user_cm_exception_with_graph_break"] = '''
import dynjit
LOG = []
class CM:
    def __enter__(self):
        LOG.append("enter")
    def __exit__(self, et, ev, tb):
        LOG.append(("exit", et.__name__ if et else None))
        return et is KeyError
def main(x, d):
    with CM():
        y = x * 2
        print("mid")
        y = y + d["k"]
    return y
def make_args(call):
    return dynjit.ones(2), ({"k": 1.0} if call != 1 else {})
'''

PROGRAMS["numpy_view_of_tensor_mutated"] = '''
import numpy as np
import dynjit
def main(x):
    a = x.numpy()
    a[0] = 42.0
    y = x * 2
    b = np.asarray(y) + 1
    return x, y, b.tolist(), dynjit.from_numpy(b).sum()
def make_args(call):
    return (dynjit.ones(3) * call,)
'''

PROGRAMS["stopiteration_inside_generator_pep479"] = '''
import dynjit
def gen(it):
    while True:
        yield next(it)
def main(x):
    try:
        return [x * v for v in gen(iter([1, 2]))]
    except RuntimeError as e:
        return str(e)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["vars_locals_globals_reads"] = '''
import dynjit
G = 3
def main(x, o):
    loc = locals()
    v = vars(o)
    g = globals()["G"]
    return sorted(loc), sorted(v), g * x
class O:
    def __init__(self):
        self.a = 1
        self.b = 2
def make_args(call):
    return dynjit.ones(2), O()
'''

PROGRAMS["eval_and_exec_inside"] = '''
import dynjit
def main(x):
    k = eval("1 + 2")
    ns = {}
    exec("z = 5", ns)
    return x * k + ns["z"]
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["method_binding_variants"] = '''
import types
import dynjit
class A:
    def __init__(self, k):
        self.k = k
    def f(self, t):
        return t * self.k
    @staticmethod
    def s(t):
        return t + 1
def free(self, t):
    return t - self.k
def main(x, a):
    bound = a.f
    unbound = A.f
    m = types.MethodType(free, a)
    return bound(x), unbound(a, x), m(x), a.s(x), A.s(x), bound.__self__ is a
def make_args(call):
    return dynjit.ones(2), A(call + 1)
'''

PROGRAMS["class_assignment_dunder_class"] = '''
import dynjit
class A:
    def f(self, t):
        return t + 1
class B(A):
    def f(self, t):
        return t * 10
def main(x, o):
    r1 = o.f(x)
    o.__class__ = B
    r2 = o.f(x)
    return r1, r2, type(o).__name__
def make_args(call):
    return dynjit.ones(2), A()
'''

PROGRAMS["property_raising_attributeerror_falls_to_getattr"] = '''
import dynjit
class W:
    @property
    def p(self):
        raise AttributeError("inner")
    def __getattr__(self, name):
        return "fallback:" + name
def main(x, w):
    return w.p, getattr(w, "p"), hasattr(w, "p"), x + 1
def make_args(call):
    return dynjit.ones(2), W()
'''

PROGRAMS["sum_max_on_tensor_lists"] = '''
import dynjit
def main(xs):
    s = sum(xs)
    s2 = sum(xs, dynjit.ones(2))
    m = max(t.sum() for t in xs)
    any_pos = any(t.sum() > 3 for t in xs)
    all_pos = all((t > -1).all() for t in xs)
    return s, s2, m, any_pos, all_pos
def make_args(call):
    return ([dynjit.ones(2) * i for i in range(1, 4 + call)],)
'''

PROGRAMS["string_of_tensors_and_format_spec"] = '''
import dynjit
def main(x):
    s = x.sum()
    return f"{s:.3f}", format(s.item(), "e"), "%.2f" % s, str(x.shape), repr(x.dtype)
def make_args(call):
    return (dynjit.tensor([1.25, 2.5]) * (call + 1),)
'''

PROGRAMS["hash_and_id_stable"] = '''
import dynjit
def main(x, o):
    return hash("abc") == hash("abc"), id(o) == id(o), hash((1, "a")) == hash((1, "a")), x + 1
def make_args(call):
    return dynjit.ones(2), object()
'''

SLOW = {'copy_and_deepcopy'}

PROGRAMS["locals_with_cell_variables"] = '''
import dynjit
def main(x):
    acc = [0]
    def bump(t):
        acc[0] = acc[0] + t.sum().item()
    bump(x)
    return sorted(locals()), acc, x * 2
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["locals_cell_variable_after_break"] = '''
import dynjit
def main(x):
    out = []
    dynjit.graph_break()
    cnt = 0
    def bump(t):
        nonlocal cnt
    out.append(sorted(k for k in locals() if not k.startswith("_")))
    return out
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL, slow=SLOW))
def test_program(name):
    check_program(PROGRAMS[name])
