"""Adversarial programs, round two: functions as values: closures over loop
variables, nonlocal rebinding across graph breaks, cells shared by several
closures that escape, decorators (functools.wraps, partial, lru_cache, cache
statistics, cached_property, singledispatchmethod), default arguments captured
at definition, recursion through closures, and functions created and mutated
inside the compiled frame."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["nonlocal_rebound_across_graph_break"] = '''
import dynjit
def main(x, k):
    acc = x
    count = 0
    def add(t):
        nonlocal acc, count
        acc = acc + t
        count += 1
    add(x)
    dynjit.graph_break()
    add(x * k)
    print("count", count)
    add(acc)
    return acc, count
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["escaping_closures_share_a_cell"] = '''
import dynjit
def main(x, k):
    state = {"n": 0}
    total = x * 0
    def inc(t):
        nonlocal total
        total = total + t
        state["n"] += 1
        return total
    def get():
        return total, state["n"]
    inc(x)
    inc(x * k)
    return inc, get
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["escaping_closures_used_after_return"] = '''
import dynjit
HOLD = []
def main(x, k):
    total = x * 0
    def inc(t):
        nonlocal total
        total = total + t
        return total
    def get():
        return total
    inc(x * k)
    HOLD.append((inc, get))
    if len(HOLD) > 1:
        prev_inc, prev_get = HOLD[-2]
        prev_inc(x)
        return get(), prev_get()
    return get(), None
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["closures_over_loop_variable_late_and_early_binding"] = '''
import dynjit
def main(x, n):
    late = []
    early = []
    cells = []
    for i in range(n):
        late.append(lambda t: t * i)
        early.append(lambda t, i=i: t * i)
        def make(j):
            return lambda t: t + j
        cells.append(make(i))
    i = 100
    return [f(x) for f in late], [f(x) for f in early], [f(x) for f in cells]
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

PROGRAMS["closure_cell_modified_by_comprehension_walrus"] = '''
import dynjit
def main(x, vals):
    last = None
    def peek():
        return last
    out = [last := v * 2 for v in vals]
    return out, peek(), x * (last or 0)
def make_args(call):
    return dynjit.ones(2), [[1, 2], [1, 2], []][call]
'''

PROGRAMS["functools_wraps_metadata_and_call_log"] = '''
import functools
import dynjit
LOG = []
def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        LOG.append((fn.__name__, len(args), sorted(kw)))
        return fn(*args, **kw)
    wrapper.calls = 0
    return wrapper
@logged
def scale(t, k=2):
    """Scale t."""
    return t * k
def main(x, k):
    y = scale(x, k=k)
    z = scale(y)
    return z, scale.__name__, scale.__doc__, scale.__wrapped__(x, 3), scale.calls
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["decorator_with_arguments_and_state"] = '''
import dynjit
def repeat(n):
    def deco(fn):
        def inner(t):
            inner.count += 1
            for _ in range(n):
                t = fn(t)
            return t
        inner.count = 0
        return inner
    return deco
@repeat(3)
def step(t):
    return t * 2 + 1
def main(x, k):
    y = step(x)
    local = repeat(k)(lambda t: t - 1)
    return y, local(x), step.count, local.count
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["lru_cache_hits_and_cache_info"] = '''
import functools
import dynjit
CALLS = []
@functools.lru_cache(maxsize=2)
def table(n):
    CALLS.append(n)
    return tuple(range(n))
def main(x, ns):
    out = [len(table(n)) for n in ns]
    info = table.cache_info()
    return x * sum(out), out, list(CALLS), (info.hits, info.misses, info.currsize)
def make_args(call):
    return dynjit.ones(2), [[1, 2, 1, 3, 1], [1, 2, 1, 3, 1], [4, 4]][call]
'''

PROGRAMS["lru_cache_on_tensor_argument"] = '''
import functools
import dynjit
@functools.lru_cache(maxsize=None)
def double(t):
    return t * 2
def main(x):
    a = double(x)
    b = double(x)
    return a, a is b, double.cache_info().hits
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["partial_objects_args_and_keywords"] = '''
import functools
import dynjit
def affine(t, a, b=0, *, c=1):
    return t * a + b * c
def main(x, k):
    p = functools.partial(affine, a=k)
    q = functools.partial(affine, b=2, c=k)
    r = functools.partial(q, a=3)
    pp = functools.partial(p, b=1)
    return p(x), q(x, 5), r(x), pp(x), p.keywords, q.args, r.func is affine, pp.keywords
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["partial_of_tensor_method_and_reduce"] = '''
import functools
import operator
import dynjit
def main(x, xs):
    add1 = functools.partial(dynjit.add, other=1)
    total = functools.reduce(operator.add, xs, x)
    prod = functools.reduce(lambda a, b: a * b, [2, 3, 4])
    mm = functools.reduce(dynjit.maximum, xs)
    return add1(x), total, prod, mm
def make_args(call):
    return dynjit.ones(2), [dynjit.arange(2, dtype=dynjit.float32) * i for i in range(2 + call)]
'''

PROGRAMS["cached_property_computed_once_and_invalidated"] = '''
import functools
import dynjit
class Model:
    def __init__(self, w):
        self.w = w
        self.computed = 0
    @functools.cached_property
    def norm(self):
        self.computed += 1
        return (self.w ** 2).sum()
def main(x, m):
    a = x * m.norm
    b = x + m.norm
    del m.norm
    c = m.norm
    return a, b, c, m.computed, "norm" in vars(m)
def make_args(call):
    return dynjit.ones(2), Model(dynjit.ones(2) * (call + 1))
'''

PROGRAMS["singledispatch_function_and_method"] = '''
import functools
import dynjit
@functools.singledispatch
def describe(v):
    return "obj"
@describe.register
def _(v: int):
    return "int"
@describe.register(list)
def _(v):
    return "list%d" % len(v)
class Proc:
    @functools.singledispatchmethod
    def run(self, v):
        return ("default", v)
    @run.register
    def _(self, v: float):
        return ("float", v * 2)
def main(x, vals):
    return [describe(v) for v in vals], [Proc().run(v) for v in vals], x * len(vals)
def make_args(call):
    return dynjit.ones(2), [[1, [1, 2], "s", 2.5], [1, [1, 2], "s", 2.5], [True, 0.5]][call]
'''

PROGRAMS["function_attributes_and_defaults_mutated_inside"] = '''
import dynjit
def scale(t, k=2):
    return t * k
def main(x, k):
    a = scale(x)
    scale.__defaults__ = (k,)
    b = scale(x)
    scale.tag = "tagged"
    scale.__kwdefaults__ = None
    r = (a, b, scale.tag, scale.__defaults__)
    scale.__defaults__ = (2,)
    return r
def make_args(call):
    return dynjit.ones(2), call + 3
'''

PROGRAMS["recursive_closure_and_mutual_recursion"] = '''
import dynjit
def main(x, n):
    def even(k):
        return True if k == 0 else odd(k - 1)
    def odd(k):
        return False if k == 0 else even(k - 1)
    def power(t, k):
        if k == 0:
            return t * 0 + 1
        half = power(t, k // 2)
        return half * half * (t if k % 2 else 1)
    return even(n), odd(n), power(x, n)
def make_args(call):
    return dynjit.full((2,), 1.5), [4, 4, 7][call]
'''

PROGRAMS["generator_closure_captures_variable_changed_later"] = '''
import dynjit
def main(x, n):
    k = 1
    gen = (x * k * i for i in range(n))
    k = 10
    first = next(gen)
    k = 100
    return first, list(gen)
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

PROGRAMS["class_body_scope_and_comprehension"] = '''
import dynjit
def main(x, k):
    class C:
        base = k
        squares = [i * i for i in range(3)]
        doubled = [base * 2 for _ in range(2)] if False else None
        def f(self, t):
            return t * self.base + len(self.squares)
    return C().f(x), C.squares, C.doubled
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["class_body_comprehension_cannot_see_class_var"] = '''
import dynjit
def main(x, k):
    class C:
        base = k
        bad = [base for _ in range(2)]
    return x * C.base
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["zero_arg_super_in_closure_and_class_cell"] = '''
import dynjit
class Base:
    def f(self, t):
        return t + 1
def main(x, k):
    class Child(Base):
        def f(self, t):
            g = lambda: super(Child, self).f(t)
            return g() * k
        def who(self):
            return __class__.__name__
    c = Child()
    return c.f(x), c.who()
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["lambda_default_evaluated_once"] = '''
import dynjit
COUNTER = [0]
def bump():
    COUNTER[0] += 1
    return COUNTER[0]
def main(x, n):
    fs = [lambda t, v=bump(): t * v for _ in range(n)]
    return [f(x) for f in fs], COUNTER[0]
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

PROGRAMS["function_identity_and_equality"] = '''
import dynjit
def helper(t):
    return t * 2
def main(x, f):
    g = helper
    m1 = x.sum
    m2 = x.sum
    return g is helper, f is helper, m1 == m2, m1 is m2, f(x), callable(f), g.__name__, f.__qualname__
def make_args(call):
    return dynjit.ones(2), [helper, helper, lambda t: t + 1][call]
'''

PROGRAMS["nonlocal_in_loop_closures_and_break"] = '''
import dynjit
def main(x, limit):
    total = 0
    fns = []
    for i in range(5):
        def bump(d=i):
            nonlocal total
            total += d
            return total
        fns.append(bump)
        if bump() > limit:
            break
    return total, len(fns), [f() for f in fns], total, x * total
def make_args(call):
    return dynjit.ones(2), [3, 3, 100][call]
'''

PROGRAMS["keyword_argument_errors_from_user_functions"] = '''
import dynjit
def f(a, *, b):
    return a * b
def main(x, mode):
    if mode == 0:
        return f(x, b=2)
    if mode == 1:
        return f(x, 2)
    return f(x, b=1, c=3)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["kwargs_dict_identity_and_mutation"] = '''
import dynjit
def collect(**kw):
    kw["seen"] = True
    return kw
def main(x, opts):
    a = collect(**opts)
    b = collect(**opts, extra=x)
    return a is opts, "seen" in opts, a, sorted(b), b["extra"] * 2
def make_args(call):
    return dynjit.ones(2), [{"lr": 1}, {"lr": 1}, {}][call]
'''

PROGRAMS["args_tuple_identity_and_star_forwarding"] = '''
import dynjit
def inner(*args):
    return args
def outer(*args, **kw):
    return inner(*args), kw
def main(x, t):
    a, kw = outer(*t, k=1)
    b = inner(*t)
    return a == t, type(a).__name__, b is t, x * len(a), kw
def make_args(call):
    return dynjit.ones(2), [(1, 2), (1, 2), ()][call]
'''

PROGRAMS["locals_dict_identity_and_refresh"] = '''
import dynjit
def main(x, k):
    a = k
    l1 = locals()
    b = a * 2
    l2 = locals()
    l1["extra"] = 5
    return l1 is l2, sorted(l1), sorted(l2), "b" in l1, x * b
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["genexpr_reads_rebound_variable_at_each_step"] = '''
import dynjit
def main(x, n):
    k = 1
    g = (x * k for _ in range(3))
    a = next(g)
    k = n
    b = next(g)
    k = n * 10
    c = next(g)
    return a, b, c
def make_args(call):
    return dynjit.ones(2), call + 2
'''

PROGRAMS["genexpr_over_list_appended_after_first_next"] = '''
import dynjit
def main(x, n):
    src = list(range(n))
    g = (x * v for v in src)
    first = next(g)
    src.append(100)
    return first, list(g)
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

XFAIL = {
    "locals_dict_identity_and_refresh": ("frontend: on 3.11/3.12 locals() is one dict per frame, refreshed by each "
                                         "call; compiled returns new snapshots (3.13 semantics) (findings R2-L1)",
                                         sys.version_info < (3, 13)),
}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
