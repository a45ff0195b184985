"""Adversarial programs, round two: which special method Python calls, in
which order: subclass priority for reflected comparisons, __iadd__ returning
NotImplemented, divmod/pow(3 args)/unary/rounding/math dunders, __index__ in
every place that takes one, __getitem__ with slices/tuples/Ellipsis/None,
__reversed__ and __contains__ fallbacks, metaclass __instancecheck__ and
__subclasscheck__, __hash__ call counts, and int/float/str subclasses
overriding arithmetic."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

_NUM = '''
import math
import operator
import dynjit
LOG = []
class Num:
    def __init__(self, v):
        self.v = v
    def __iadd__(self, o):
        LOG.append("iadd")
        return NotImplemented
    def __add__(self, o):
        LOG.append("add")
        return Num(self.v + o)
    def __divmod__(self, o):
        return ("divmod", self.v, o)
    def __rdivmod__(self, o):
        return ("rdivmod", self.v, o)
    def __pow__(self, o, m=None):
        return ("pow", self.v, o, m)
    def __neg__(self):
        return ("neg", self.v)
    def __pos__(self):
        return ("pos", self.v)
    def __invert__(self):
        return ("inv", self.v)
    def __abs__(self):
        return ("abs", self.v)
    def __round__(self, n=None):
        return ("round", self.v, n)
    def __trunc__(self):
        return 7
    def __floor__(self):
        return 8
    def __ceil__(self):
        return 9
    def __int__(self):
        return 42
    def __float__(self):
        return 4.5
    def __complex__(self):
        return 1j
    def __index__(self):
        return self.v
    def __matmul__(self, o):
        return ("matmul", o)
    def __rmatmul__(self, o):
        return ("rmatmul",)
    def __getitem__(self, k):
        return ("getitem", repr(k))
    def __reversed__(self):
        return iter(["rev"])
    def __iter__(self):
        return iter([1, 2, 3])
def make_args(call):
    return dynjit.ones(1) * (call + 1), call + 1
'''

PROGRAMS["subclass_rich_comparison_priority"] = '''
import dynjit
LOG = []
class Base:
    def __eq__(self, o):
        LOG.append("Base.eq")
        return "Base.eq"
    def __lt__(self, o):
        LOG.append("Base.lt")
        return "Base.lt"
    __hash__ = object.__hash__
class Sub(Base):
    def __eq__(self, o):
        LOG.append("Sub.eq")
        return "Sub.eq"
    def __gt__(self, o):
        LOG.append("Sub.gt")
        return "Sub.gt"
    __hash__ = object.__hash__
def main(x, k):
    return Base() == Sub(), Sub() == Base(), Base() < Sub(), Sub() > Base(), list(LOG), x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["metaclass_instancecheck_and_subclasscheck"] = '''
import dynjit
LOG = []
class Meta(type):
    def __instancecheck__(cls, obj):
        LOG.append(("instancecheck", type(obj).__name__))
        return isinstance(obj, (int, str))
    def __subclasscheck__(cls, sub):
        LOG.append(("subclasscheck", sub.__name__))
        return sub in (int, bool)
class IntLike(metaclass=Meta):
    pass
def main(x, v):
    r = (isinstance(v, IntLike), issubclass(type(v), IntLike), isinstance(x, IntLike), isinstance(v, (float, IntLike)))
    return r, list(LOG), x * 2
def make_args(call):
    return dynjit.ones(2), [3, 3, "s", 2.5][call]
'''

PROGRAMS["iadd_notimplemented_falls_back_to_add"] = _NUM + '''
def main(x, k):
    n = Num(k)
    n0 = n
    n += 2
    return n.v, n is n0, list(LOG), x * n.v
'''

PROGRAMS["divmod_pow_unary_and_rounding_dunders"] = _NUM + '''
def main(x, k):
    n = Num(k)
    return (divmod(n, 2), divmod(3, n), pow(n, 3), pow(n, 3, 5), n ** 2, -n, +n, ~n, abs(n), round(n), round(n, 2),
            math.trunc(n), math.floor(n), math.ceil(n), int(n), float(n), complex(n), operator.index(n), x * k)
'''

PROGRAMS["index_dunder_everywhere"] = _NUM + '''
def main(x, k):
    n = Num(k)
    lst = [10, 20, 30, 40]
    return (lst[n], "abcd"[n], hex(n), oct(n), bin(n), lst[n:], lst[:n], lst[::n], range(n)[-1], (1, 2, 3, 4)[n],
            bytes(n), [0] * n, "ab" * n, x.repeat(n), x[:n], chr(ord("a") + operator.index(n)))
'''

PROGRAMS["getitem_key_forms_and_matmul"] = _NUM + '''
def main(x, k):
    n = Num(k)
    return n[1:2], n[1:2, 3], n[...], n[::k], n[None], n[k, ...], n @ 3, 3 @ n, x * k
'''

PROGRAMS["reversed_and_contains_fallbacks"] = _NUM + '''
def main(x, k):
    n = Num(k)
    return list(reversed(n)), k in n, 5 in n, list(n), sorted(n, reverse=True), max(n), x * k
'''

PROGRAMS["hash_call_counts_in_dict_and_set"] = '''
import dynjit
class H:
    n = 0
    def __hash__(self):
        H.n += 1
        return 5
def main(x, k):
    h = H()
    d = {h: 1}
    d[h] = 2
    s = {h}
    r = (h in d, h in s, d.get(h), len({h: 0, k: 1}))
    return r, H.n, x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["int_float_str_subclass_operator_overrides"] = '''
import dynjit
class I(int):
    def __add__(self, o):
        return "I.add"
    def __radd__(self, o):
        return "I.radd"
class F(float):
    def __rsub__(self, o):
        return "F.rsub"
class S(str):
    def __radd__(self, o):
        return "S.radd"
    def __mod__(self, o):
        return "S.mod"
def main(x, k):
    return (1 + I(k), I(k) + 1, I(k) * 3, type(I(k) * 3).__name__, 1.0 - F(k), 1 - F(k), F(k) - 1,
            "a" + S("b"), S("%s") % 1, "%s" % S("z"), x * I(k), x + F(k))
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["tensor_compared_with_user_object_reflection"] = '''
import dynjit
LOG = []
class Thr:
    def __init__(self, v):
        self.v = v
    def __lt__(self, t):
        LOG.append("lt")
        return t > self.v
    def __gt__(self, t):
        LOG.append("gt")
        return t < self.v
    def __eq__(self, t):
        LOG.append("eq")
        return "user-eq"
    __hash__ = object.__hash__
def main(x, k):
    th = Thr(k)
    r = (th < x, th > x, x == th)
    return r, list(LOG)
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32), call + 1
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
