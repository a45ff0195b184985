"""Adversarial programs, round two: the exact rules of Python's object
protocols, which a tracer re-implements: rich comparison fallbacks
(NotImplemented, reflected __gt__, identity fallback for ==, != derived from
__eq__), sorting/min/max with user __lt__, dict lookups with colliding hashes,
__eq__ without __hash__, augmented subscript assignment (c[k] += v calls
__getitem__ then __setitem__), descriptor precedence, getattr/hasattr with
non-AttributeError exceptions, cells read late by inner functions, and del of
a closed-over variable."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["rich_comparison_reflection_and_fallbacks"] = '''
import dynjit
LOG = []
class A:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        LOG.append("A.lt")
        return NotImplemented
    def __eq__(self, o):
        LOG.append("A.eq")
        return NotImplemented
class B:
    def __init__(self, v):
        self.v = v
    def __gt__(self, o):
        LOG.append("B.gt")
        return self.v > o.v
def main(x, k):
    a, b = A(k), B(1)
    r = (a < b, a == a, a == b, a != b, a != a)
    return r, list(LOG), x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["ne_derived_from_eq_and_explicit_ne"] = '''
import dynjit
class E:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, E) and self.v == o.v
    __hash__ = None
class N(E):
    def __ne__(self, o):
        return "custom-ne"
def main(x, k):
    r = (E(k) != E(k), E(k) != E(k + 1), N(k) != N(k), E(1) == 1, 1 != E(1), hasattr(E(1), "__hash__"), E.__hash__)
    return r, x + k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["sorted_min_max_with_user_lt_only"] = '''
import dynjit
class P:
    calls = 0
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        P.calls += 1
        return self.v < o.v
    def __repr__(self):
        return f"P({self.v})"
def main(x, vals):
    ps = [P(v) for v in vals]
    s = sorted(ps)
    lo = min(ps)
    hi = max(ps)
    ps.sort(reverse=True)
    return [p.v for p in s], lo.v, hi.v, [p.v for p in ps], P.calls, x * lo.v
def make_args(call):
    return dynjit.ones(2), [[3, 1, 2, 1], [3, 1, 2, 1], [5, 4]][call]
'''

PROGRAMS["max_with_gt_only_raises_typeerror"] = '''
import dynjit
class G:
    def __init__(self, v):
        self.v = v
    def __gt__(self, o):
        return self.v > o.v
def main(x, k):
    items = [G(1), G(k)]
    m = max(items)
    s = sorted(items)
    return m.v, [i.v for i in s], x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["dict_lookup_with_hash_collisions_and_eq_calls"] = '''
import dynjit
class K:
    eqs = 0
    def __init__(self, v):
        self.v = v
    def __hash__(self):
        return 7
    def __eq__(self, o):
        K.eqs += 1
        return isinstance(o, K) and self.v == o.v
def main(x, vals):
    d = {}
    for v in vals:
        d[K(v)] = v
    found = [d.get(K(v), -1) for v in (0, 1, 2, 9)]
    s = {K(v) for v in vals}
    return found, len(d), len(s), K.eqs, x * len(d)
def make_args(call):
    return dynjit.ones(2), [[0, 1, 1, 2], [0, 1, 1, 2], [5]][call]
'''

PROGRAMS["augmented_subscript_calls_getitem_then_setitem"] = '''
import dynjit
class Store:
    def __init__(self):
        self.d = {}
        self.log = []
    def __getitem__(self, k):
        self.log.append(("get", k))
        return self.d.get(k, 0)
    def __setitem__(self, k, v):
        self.log.append(("set", k, v if not hasattr(v, "shape") else "T"))
        self.d[k] = v
    def __delitem__(self, k):
        self.log.append(("del", k))
        del self.d[k]
def main(x, k):
    s = Store()
    s["a"] += k
    s["a"] *= 3
    s["t"] = x
    s["t"] += 1
    del s["a"]
    return s.log, s.d
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["augmented_attribute_calls_getattr_then_setattr"] = '''
import dynjit
class Obj:
    def __init__(self):
        object.__setattr__(self, "log", [])
        object.__setattr__(self, "n", 0)
    def __setattr__(self, name, value):
        self.log.append(("set", name))
        object.__setattr__(self, name, value)
def main(x, k):
    o = Obj()
    o.n += k
    o.n *= 2
    o.t = x
    o.t += 1
    o.t = o.t * 2
    return o.log, o.n, o.t
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["descriptor_precedence_data_vs_instance_dict"] = '''
import dynjit
class Data:
    def __get__(self, obj, typ=None):
        return "data"
    def __set__(self, obj, v):
        obj.__dict__["_d"] = v
class NonData:
    def __get__(self, obj, typ=None):
        return "nondata"
class C:
    d = Data()
    n = NonData()
def main(x, k):
    c = C()
    c.__dict__["d"] = "instance-d"
    c.__dict__["n"] = "instance-n"
    c.d = k
    return c.d, c.n, c.__dict__, C.d, C.n, x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["getattr_default_with_non_attributeerror"] = '''
import dynjit
class G:
    def __getattr__(self, name):
        if name.startswith("k"):
            raise KeyError(name)
        raise AttributeError(name)
def main(x, name):
    g = G()
    a = getattr(g, "missing", "default")
    b = hasattr(g, "other")
    c = getattr(g, name, "default")
    return a, b, c, x
def make_args(call):
    return dynjit.ones(2), ["zzz", "zzz", "key"][call]
'''

PROGRAMS["hasattr_property_raising_valueerror_propagates"] = '''
import dynjit
class P:
    @property
    def bad(self):
        raise ValueError("property failed")
    @property
    def missing(self):
        raise AttributeError("nope")
def main(x, k):
    p = P()
    r = hasattr(p, "missing")
    if k:
        r = (r, hasattr(p, "bad"))
    return r, x
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["inner_function_reads_cell_late"] = '''
import dynjit
def main(x, k):
    scale = 1
    def apply(t):
        return t * scale
    a = apply(x)
    scale = k
    b = apply(x)
    f = lambda: scale + 1
    scale = 10 * k
    return a, b, f()
def make_args(call):
    return dynjit.ones(2), call + 2
'''

PROGRAMS["deleted_closure_variable_raises_nameerror"] = '''
import dynjit
def main(x, k):
    v = x * k
    def get():
        return v
    a = get()
    del v
    return a, get()
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["list_contains_uses_identity_then_eq"] = '''
import dynjit
class AlwaysFalse:
    eqs = 0
    def __eq__(self, o):
        AlwaysFalse.eqs += 1
        return False
    __hash__ = object.__hash__
def main(x, k):
    a = AlwaysFalse()
    lst = [AlwaysFalse(), a]
    r = (a in lst, lst.count(a), lst.index(a), AlwaysFalse() in lst, a in (a,), a in {a}, a in {a: 1})
    return r, AlwaysFalse.eqs, x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["bool_falls_back_to_len_and_default_truthy"] = '''
import dynjit
class L:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
class Plain:
    pass
class Both:
    def __bool__(self):
        return False
    def __len__(self):
        return 5
def main(x, n):
    r = (bool(L(n)), not L(n), bool(Plain()), bool(Both()), L(n) and "yes", L(n) or "no")
    y = x * 2 if L(n) else x * 3
    return r, y
def make_args(call):
    return dynjit.ones(2), [1, 1, 0][call]
'''

PROGRAMS["setitem_on_dict_subclass_with_missing"] = '''
import dynjit
class Auto(dict):
    def __missing__(self, k):
        v = self[k] = Auto()
        return v
class Counting(dict):
    sets = 0
    def __setitem__(self, k, v):
        Counting.sets += 1
        super().__setitem__(k, v)
def main(x, k):
    a = Auto()
    a["x"]["y"]["z"] = k
    c = Counting(a=1)
    c["b"] = 2
    c.update(c2=3)
    c |= {"d": 4}
    return a, sorted(c), Counting.sets, x * k, type(a["x"]).__name__
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["list_subclass_overrides_used_by_builtins"] = '''
import dynjit
class Log(list):
    def append(self, v):
        super().append(("logged", v))
    def __len__(self):
        return 100
    def __iter__(self):
        return iter(["over"])
def main(x, k):
    l = Log([1, 2])
    l.append(k)
    return len(l), list(l), [*l], list.__len__(l), l[2], sum(1 for _ in l), x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["str_subclass_and_int_subclass_arithmetic"] = '''
import dynjit
class Name(str):
    def shout(self):
        return self.upper() + "!"
class Meters(int):
    def __add__(self, o):
        return Meters(int(self) + int(o))
    def __repr__(self):
        return f"Meters({int(self)})"
def main(x, k):
    n = Name("abc")
    m = Meters(k) + 2
    return n.shout(), type(n + "d").__name__, type(n[1:]).__name__, m, type(m + 1).__name__, type(1 + m).__name__, x * m
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["class_attribute_lookup_through_mro_and_super_property"] = '''
import dynjit
class A:
    tag = "A"
    @property
    def name(self):
        return "A-" + self.tag
class B(A):
    pass
class C(A):
    tag = "C"
    @property
    def name(self):
        return "C/" + super().name
class D(B, C):
    pass
def main(x, k):
    d = D()
    r1 = (d.tag, d.name, [c.__name__ for c in D.__mro__])
    C.tag = "C2"
    r2 = d.name
    d.tag = "inst"
    return r1, r2, d.name, x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["callable_instances_and_call_on_class"] = '''
import dynjit
class Mult:
    def __init__(self, k):
        self.k = k
        self.calls = 0
    def __call__(self, t, extra=0):
        self.calls += 1
        return t * self.k + extra
class Later:
    pass
def main(x, k):
    m = Mult(k)
    a = m(x)
    b = m(x, extra=1)
    Later.__call__ = lambda self, t: t - 1
    c = Later()(x)
    return a, b, c, m.calls, callable(m)
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["iter_protocol_getitem_with_len_and_reversed"] = '''
import dynjit
class Seq:
    def __init__(self, n):
        self.n = n
        self.gets = []
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        self.gets.append(i)
        if i >= self.n:
            raise IndexError
        return i * 2
def main(x, n):
    s = Seq(n)
    r = (list(s), list(reversed(s)), 4 in s, sorted(s.gets))
    return r, x * n
def make_args(call):
    return dynjit.ones(2), [3, 3, 1][call]
'''

XFAIL = {}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
