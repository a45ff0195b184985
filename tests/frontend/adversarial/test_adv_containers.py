"""Adversarial programs: list/dict/set mutation during and across graph breaks,
aliasing (one list passed twice), del of names/items/attributes, global
writes, walrus, match, f-strings with tensors, *args/**kwargs forwarding,
keyword-only args, functools, operator, sorted/min/max with keys."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["same_list_passed_twice"] = '''
import dynjit
def main(a, b, x):
    a.append(x)
    b.append(x * 2)
    n = len(a)
    a.pop(0)
    return n, a is b, len(b)
def make_args(call):
    L = [dynjit.ones(1)] * (call + 1)
    return L, L, dynjit.ones(2)
'''

PROGRAMS["aliased_dict_across_break"] = '''
import dynjit
def main(d1, d2, x):
    d1["a"] = x
    dynjit.graph_break()
    d2["b"] = d1["a"] + 1
    del d1["a"]
    return sorted(d2), d1 is d2
def make_args(call):
    d = {"z": call}
    return d, d, dynjit.ones(2)
'''

PROGRAMS["list_mutation_during_iteration"] = '''
import dynjit
def main(L, x):
    out = []
    for v in L:
        out.append(v * x)
        if len(L) < 5:
            L.append(v + 1)
    return out
def make_args(call):
    return [1.0, 2.0 + call], dynjit.ones(2)
'''

PROGRAMS["set_mutation_during_iteration_raises"] = '''
import dynjit
def main(s, x):
    try:
        for v in s:
            s.add(v + 10)
            x = x + v
    except RuntimeError as e:
        return str(e), x
    return "no error", x
def make_args(call):
    return {1, 2}, dynjit.ones(2)
'''

PROGRAMS["dict_pop_del_setdefault"] = '''
import dynjit
def main(d, x):
    v = d.pop("a", None)
    d.setdefault("lst", []).append(x)
    if "b" in d:
        del d["b"]
    d.update(c=x * 2, e=3)
    k = next(iter(d))
    d |= {"f": 1}
    return v, k, list(d.keys()), d.get("zz", "dflt")
def make_args(call):
    return ({"a": 1, "b": 2} if call != 2 else {"lst": [1]}), dynjit.ones(2)
'''

PROGRAMS["list_slice_assign_and_del"] = '''
import dynjit
def main(L, x):
    L[1:3] = [x, x * 2, x * 3]
    del L[::2]
    L[:0] = ["head"]
    L.insert(-1, "mid")
    L.extend(reversed(L[:2]))
    L.sort(key=lambda v: 0 if isinstance(v, str) else 1)
    return len(L), L.index("mid")
def make_args(call):
    return list(range(5 + call)), dynjit.ones(2)
'''

PROGRAMS["del_local_then_use"] = '''
import dynjit
def main(x, flag):
    y = x * 2
    if flag:
        del y
    try:
        return y
    except UnboundLocalError as e:
        return "unbound", x
def make_args(call):
    return dynjit.ones(2), call == 1
'''

PROGRAMS["del_attribute_then_class_attr"] = '''
import dynjit
class O:
    v = "class"
def main(o, x):
    o.v = x
    a = o.v
    del o.v
    b = o.v
    try:
        del o.v
    except AttributeError as e:
        c = "attrerr"
    return a * 2, b, c
def make_args(call):
    return O(), dynjit.ones(2) * call
'''

PROGRAMS["global_writes"] = '''
import dynjit
COUNT = 0
CACHE = {}
LAST = None
def bump():
    global COUNT
    COUNT += 1
    return COUNT
def main(x):
    global LAST, NEW_GLOBAL
    n = bump()
    CACHE[n] = x
    LAST = x * n
    NEW_GLOBAL = n
    dynjit.graph_break()
    n2 = bump()
    return LAST + n2, COUNT
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["global_deleted"] = '''
import dynjit
TMP = 5
def main(x):
    global TMP
    if "TMP" in globals():
        y = x * TMP
        del TMP
    else:
        y = x
        TMP = 1
    return y
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["walrus"] = '''
import dynjit
def main(xs):
    out = [y for x in xs if (y := x * 2).sum() > 1]
    if (n := len(out)) > 1:
        out.append(n)
    while (k := len(xs)) > 2:
        xs.pop()
    return out, y, k
def make_args(call):
    return ([dynjit.ones(2) * i for i in range(3 + call)],)
'''

PROGRAMS["fstring_with_tensors"] = '''
import dynjit
def main(x):
    s = f"{x.shape} {x.sum().item():.2f} {x.dtype} {len(x)!r:>4}"
    t = "{} {}".format(x.numel(), x.dim())
    u = "%d-%s" % (x.shape[0], "k")
    return s, t, u, x * len(s)
def make_args(call):
    return (dynjit.ones(2 + call) * call,)
'''

PROGRAMS["fstring_tensor_repr"] = '''
import dynjit
def main(x):
    y = x * 2
    return f"{y}", repr(y), str(y[0])
def make_args(call):
    return (dynjit.tensor([1.5, -2.0]) + call,)
'''

PROGRAMS["args_kwargs_forwarding"] = '''
import dynjit
def inner(a, b=2, *rest, c, d=4, **kw):
    return a * b + c * d + sum(rest) + sum(kw.values()), sorted(kw)
def mid(*args, **kwargs):
    kwargs.setdefault("c", 1)
    return inner(*args, **kwargs)
def main(x, extra):
    r1 = mid(x, 3, 5, 6, d=2, z=1)
    r2 = mid(x, **extra)
    try:
        inner(x)
    except TypeError as e:
        r3 = str(e)
    return r1, r2, r3
def make_args(call):
    return dynjit.ones(2), {"c": call, "q": 2}
'''

PROGRAMS["kwonly_and_posonly"] = '''
import dynjit
def f(a, /, b, *, c=2):
    return a + b * c
def main(x):
    r = [f(x, 1), f(x, b=2, c=3)]
    try:
        f(a=x, b=1)
    except TypeError as e:
        r.append(str(e))
    return r
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["functools_partial_lru_wraps"] = '''
import functools
import dynjit
CALLS = []
@functools.lru_cache(maxsize=None)
def table(n):
    CALLS.append(n)
    return tuple(range(n))
def deco(f):
    @functools.wraps(f)
    def w(*a, **k):
        CALLS.append(f.__name__)
        return f(*a, **k)
    return w
@deco
def scale(t, k=2):
    return t * k
def main(x, n):
    p = functools.partial(scale, k=n)
    q = functools.partial(p, k=n + 1)
    return p(x), q(x), sum(table(n)), scale.__name__, len(CALLS), functools.reduce(lambda a, b: a + b, [x, x, x])
def make_args(call):
    return dynjit.ones(2), 2 + call % 2
'''

PROGRAMS["operator_module"] = '''
import operator
import dynjit
def main(x, objs):
    ops = [operator.add, operator.mul, operator.sub, operator.truediv]
    r = [op(x, 2) for op in ops]
    g = operator.itemgetter(1, 0)
    a = operator.attrgetter("real")
    m = operator.methodcaller("sum")
    L = [x, x]
    operator.setitem(L, 0, x * 5)
    operator.iadd(L, [1])
    return r, g(objs), a(3), m(x), L, operator.neg(x), operator.index(4)
def make_args(call):
    return dynjit.ones(2) * (call + 1), ["a", "b", "c"]
'''

PROGRAMS["sorted_min_max_keys"] = '''
import dynjit
def main(xs):
    s = sorted(xs, key=lambda t: t.sum().item(), reverse=True)
    mn = min(xs, key=lambda t: t.abs().sum().item())
    mx = max(range(len(xs)), key=lambda i: xs[i][0].item())
    d = {f"k{i}": t for i, t in enumerate(xs)}
    best = max(d, key=lambda k: d[k].sum().item())
    return s, mn, mx, best, min([], default="empty")
def make_args(call):
    return ([dynjit.tensor([float((i * 7 + call) % 5), -1.0]) for i in range(4)],)
'''

PROGRAMS["sorted_stability_and_items"] = '''
import dynjit
def main(d, x):
    items = sorted(d.items(), key=lambda kv: kv[1])
    return [k for k, _ in items], x * items[0][1]
def make_args(call):
    return {"b": 1, "a": 1, "c": 0 + call}, dynjit.ones(2)
'''

PROGRAMS["nested_loops_break_continue_else"] = '''
import dynjit
def main(x, n):
    found = None
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 2:
                continue
            x = x + i * j
            if i * j == 4:
                found = (i, j)
                break
        else:
            x = x - 1
            continue
        if found:
            break
    else:
        x = x * 10
    k = 0
    while k < 5:
        k += 1
        if k == 3:
            continue
        x = x + 0.5
    else:
        x = x + 1000
    return x, found
def make_args(call):
    return dynjit.zeros(2), [3, 3, 5][call]
'''

def long_program(n):
    """A straight-line function of 2n statements with a data-dependent branch every 9th step."""
    body = "".join(
        f"    x = x {'+-+'[i % 3]} (y * {i % 7 + 1}) / {i % 5 + 2}\n    y = y + {i}\n" +
        (f"    if x.sum() > {i * 10}:\n        x = x * 0.5\n" if i % 9 == 0 else "")
        for i in range(n))
    return ("import dynjit\ndef main(x, y):\n" + body + "    return x, y\n"
            "def make_args(call):\n    return dynjit.ones(2), dynjit.ones(2) * call\n")


PROGRAMS["very_long_function"] = long_program(25)

PROGRAMS["chained_comparison_and_bool_ops"] = '''
import dynjit
def main(x, a):
    r = 0 < a <= 3 < a * 3
    s = (a and x) if a else (x or None)
    t = not a or [x]
    u = [] or {} or 0 or "last"
    return r, s, t, u
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["unpacking_star"] = '''
import dynjit
def main(xs):
    a, *mid, b = xs
    first, (p, q), *_ = [1, (xs[0], xs[-1]), 3, 4]
    d = {**{"a": 1}, **{"b": a}}
    L = [*mid, *range(2), *"ab"]
    return a * b, len(mid), p + q, d, L
def make_args(call):
    return ([dynjit.ones(2) * i for i in range(3 + call)],)
'''

PROGRAMS["dict_views_and_set_algebra"] = '''
import dynjit
def main(d, x):
    ks = d.keys()
    d["new"] = 1
    both = ks & {"a", "new", "q"}
    vals = list(d.values())
    s = set(d) - {"a"}
    s |= {"z"}
    fs = frozenset(s)
    return sorted(both), len(vals), sorted(s), "z" in fs, x * len(ks)
def make_args(call):
    return {"a": 0, "b": 1}, dynjit.ones(2)
'''

PROGRAMS["int_float_edge_arith"] = '''
import math
import dynjit
def main(x, n):
    r = [n // 3, n % 3, -n // 3, -n % 3, divmod(n, -4), round(2.5), round(3.5), round(-0.5),
         int(-2.7), math.floor(-2.5), 7 ** -1, abs(-n), pow(3, n, 5), (1 << 65) >> 63,
         True + True, 0.1 + 0.2 == 0.3, math.isclose(0.1 + 0.2, 0.3), float("inf") - float("inf") != 0]
    return r, x * r[0]
def make_args(call):
    return dynjit.ones(2), [7, 7, -11][call]
'''

PROGRAMS["string_methods"] = '''
import dynjit
def main(x, s):
    parts = s.split(",")
    j = "-".join(p.strip().upper() for p in parts)
    return j, x * len(parts), s.startswith("a"), s.replace("a", "b").count("b"), s[::-1], f"{s!r}"
def make_args(call):
    return dynjit.ones(2), ["a, b ,c", "a, b ,c", "x"][call]
'''

if sys.version_info >= (3, 10):
    PROGRAMS["match_statement"] = '''
import dataclasses
import dynjit
@dataclasses.dataclass
class Pt:
    x: int
    y: int
def main(v, t):
    match v:
        case 0:
            return t
        case [a, b, *rest]:
            return t * (a + b), len(rest)
        case {"k": k, **others}:
            return t + k, sorted(others)
        case Pt(x=0, y=yy):
            return t - yy
        case Pt(x=xx) if xx > 5:
            return "big", xx
        case str() as s:
            return s.upper()
        case _:
            return "other"
def make_args(call):
    return [[1, 2, 3], {"k": 2, "z": 1}, Pt(0, 4)][call], dynjit.ones(2)
'''
    PROGRAMS["match_many"] = '''
import dynjit
def classify(v):
    match v:
        case int(n) if n < 0:
            return "neg"
        case int() | float():
            return "num"
        case (x, y):
            return "pair"
        case {"a": _}:
            return "map"
        case _:
            return "?"
def main(t, vs):
    return [classify(v) for v in vs], t * len(vs)
def make_args(call):
    return dynjit.ones(2), [-1, 2.0, (1, 2), {"a": 1, "b": 2}, "s", [1, 2, 3]][call:]
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])


@pytest.mark.slow
def test_very_long_function_300_statements():
    check_program(long_program(150))
