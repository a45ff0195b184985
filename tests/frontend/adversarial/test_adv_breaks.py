"""Adversarial programs: graph breaks in places a tracer has to resume from
inside (implicitly called dunder methods, property getters, __init__,
__exit__, sort keys, comprehension bodies, generator bodies, module hooks,
nested inlined functions with try/finally), with side effects around them."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["break_in_dunder_add_eq_hash_bool"] = '''
import dynjit
LOG = []
class V:
    def __init__(self, t):
        self.t = t
    def __add__(self, o):
        print("add")
        LOG.append("add")
        return V(self.t + o.t)
    def __eq__(self, o):
        print("eq")
        return isinstance(o, V) and bool((self.t == o.t).all())
    def __hash__(self):
        print("hash")
        return 7
    def __bool__(self):
        print("bool")
        return bool(self.t.sum() > 0)
    def __len__(self):
        print("len")
        return self.t.shape[0]
def main(x):
    a, b = V(x), V(x * 2)
    c = a + b
    d = {a: 1}
    found = b in d
    return c.t, found, bool(c), len(c), a == V(x), LOG[:]
def make_args(call):
    return (dynjit.ones(2) * (call - 1),)
'''

PROGRAMS["break_in_property_getter_and_init"] = '''
import dynjit
class P:
    def __init__(self, t):
        print("init")
        self.t = t * 2
        dynjit.graph_break()
        self.n = 1
    @property
    def double(self):
        print("getter")
        self.n += 1
        return self.t * 2
def main(x):
    p = P(x)
    return p.double + p.double, p.n
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["break_in_exit"] = '''
import dynjit
LOG = []
class CM:
    def __enter__(self):
        return self
    def __exit__(self, et, ev, tb):
        print("exit", et)
        LOG.append(et.__name__ if et else None)
        return et is ValueError
def main(x):
    with CM():
        y = x * 2
    with CM():
        y = y + 1
        if y.sum() > 5:
            raise ValueError("big")
        y = y * 10
    return y, LOG[:]
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["break_in_sort_key_and_map"] = '''
import dynjit
def key(t):
    print("key")
    return t.sum().item()
def main(xs):
    s = sorted(xs, key=key)
    m = list(map(lambda t: (print("map"), t * 2)[1], xs))
    return s, m
def make_args(call):
    return ([dynjit.tensor([float((i * 5 + call) % 3)]) for i in range(3)],)
'''

PROGRAMS["break_in_comprehension_body"] = '''
import dynjit
def f(t, i):
    print("f", i)
    return t * i
def main(x):
    a = [f(x, i) for i in range(3)]
    b = {i: f(x, i) for i in range(2)}
    c = [v for v in a if (print("filter") or True) and v.sum() >= 0]
    return a, b, c
def make_args(call):
    return (dynjit.ones(2) * (call - 1),)
'''

PROGRAMS["break_in_generator_body_consumed"] = '''
import dynjit
def gen(t):
    for i in range(3):
        dynjit.graph_break()
        t = t + i
        yield t
def main(x):
    total = x
    for v in gen(x):
        total = total + v
        print("got")
    return total
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["break_in_nested_inlined_try_finally"] = '''
import dynjit
LOG = []
def inner(t, n):
    try:
        LOG.append("inner-try")
        print("inner")
        if n == 2:
            raise KeyError("k")
        return t + n
    finally:
        LOG.append("inner-finally")
def middle(t, n):
    try:
        return inner(t, n) * 2
    except KeyError:
        LOG.append("middle-except")
        return t
    finally:
        LOG.append("middle-finally")
def main(x, n):
    return middle(x, n), LOG[:]
def make_args(call):
    return dynjit.ones(2), [1, 1, 2][call]
'''

PROGRAMS["break_in_module_hook_and_forward"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        print("forward", self.calls)
        return x * self.calls
def hook(m, a, out):
    print("hook")
    return out + 1
NET = M()
NET.register_forward_hook(hook)
def main(x):
    return NET(x) + NET(x), NET.calls
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["break_inside_while_with_else_and_tensor_cond"] = '''
import dynjit
def main(x):
    i = 0
    while x.sum() < 20:
        x = x * 2
        i += 1
        print("iter", i)
        if i > 10:
            break
    else:
        x = x - 1
    return x, i
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["break_between_inplace_on_aliases"] = '''
import dynjit
def main(x):
    v = x[:2]
    v.add_(1)
    print("between")
    x.mul_(2)
    w = v.view(-1)
    dynjit.graph_break()
    w.sub_(3)
    return x, v, w
def make_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32) + call,)
'''

PROGRAMS["break_with_live_generator_and_iterator"] = '''
import dynjit
def gen(n):
    for i in range(n):
        yield i
def main(x, n):
    g = gen(n)
    it = iter([10, 20, 30])
    a = next(g)
    b = next(it)
    print("break")
    c = next(g, -1)
    d = next(it)
    return x * (a + b + c + d), list(g), list(it)
def make_args(call):
    return dynjit.ones(2), 3 + call
'''

PROGRAMS["break_with_live_closure_cells"] = '''
import dynjit
def main(x):
    hits = []
    k = 1
    def f(t):
        nonlocal k
        hits.append(k)
        k *= 2
        return t * k
    y = f(x)
    print("break", k)
    y = f(y)
    k += 100
    return y, hits, f(x), k
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["break_in_except_and_finally_blocks"] = '''
import dynjit
def main(x, d):
    out = []
    try:
        out.append(d["k"])
    except KeyError as e:
        print("except", e)
        out.append(x * 2)
    finally:
        print("finally")
        out.append(x + 1)
    return out
def make_args(call):
    return dynjit.ones(2), ({"k": 1} if call == 2 else {})
'''

PROGRAMS["break_in_lambda_default_and_kwargs"] = '''
import dynjit
def main(x, **kw):
    f = lambda t, s=kw.get("s", 2): (print("lam"), t * s)[1]
    return f(x), f(x, 5), sorted(kw)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["dunder_call_counts"] = '''
import dynjit
LOG = []
class K:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        LOG.append("eq")
        return isinstance(o, K) and o.v == self.v
    def __hash__(self):
        LOG.append("hash")
        return self.v
    def __lt__(self, o):
        LOG.append("lt")
        return self.v < o.v
    def __str__(self):
        LOG.append("str")
        return f"K{self.v}"
    def __format__(self, spec):
        LOG.append("format")
        return "F" + str(self.v)
    def __index__(self):
        LOG.append("index")
        return self.v
    def __len__(self):
        LOG.append("len")
        return 2
    def __bool__(self):
        LOG.append("bool")
        return True
    def __contains__(self, item):
        LOG.append("contains")
        return True
    def __getitem__(self, i):
        LOG.append("getitem")
        if i > 2: raise IndexError
        return i
def main(x, ks):
    r = []
    r.append(K(1) in ks)
    r.append(sorted(ks)[0].v)
    r.append(f"{ks[0]}")
    r.append(str(ks[0]))
    r.append([0, 1, 2, 3][ks[0]])
    r.append(len(ks[0]))
    r.append(bool(ks[0]))
    r.append(5 in ks[0])
    r.append(list(ks[0]))
    r.append(min(ks).v)
    r.append(ks.index(K(2)))
    r.append(ks.count(K(1)))
    s = set(ks)
    r.append(K(3) in s)
    return x * len(r), r, list(LOG)
def make_args(call):
    return dynjit.ones(2), [K(2), K(1), K(3)]
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
