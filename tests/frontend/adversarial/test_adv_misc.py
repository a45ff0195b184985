"""Adversarial programs, third round: more iterator forms (iter(callable,
sentinel), zip(it, it), live dict views, the rest of itertools), descriptor
variants (cached_property, non-data descriptors, __delattr__), tensor
protocol edges (iteration, unpacking, membership, len of a 0-d tensor,
reflected and bitwise operators), functools (singledispatch, cache), and
compiling a module or a bound method directly."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["iter_callable_sentinel"] = '''
import dynjit
def main(x, vals):
    pop = vals.pop
    out = []
    for v in iter(pop, 0):
        out.append(x * v)
    return out, vals
def make_args(call):
    return dynjit.ones(2), [0, 5, 0, 3, 2][call:]
'''

PROGRAMS["zip_same_iterator_pairs"] = '''
import dynjit
def main(xs):
    it = iter(xs)
    return [a * b for a, b in zip(it, it)]
def make_args(call):
    return ([dynjit.ones(2) * i for i in range(4 + call)],)
'''

PROGRAMS["dict_values_items_live"] = '''
import dynjit
def main(d, x):
    vals = d.values()
    items = d.items()
    d["z"] = x
    return len(vals), [k for k, _ in items], ("z", x) in items
def make_args(call):
    return {"a": 1}, dynjit.ones(2)
'''

PROGRAMS["itertools_rest"] = '''
import itertools
import dynjit
def main(x, n):
    r = []
    r.append([k for k, g in itertools.groupby("aabbbc")])
    r.append(list(itertools.pairwise(range(n))))
    r.append(list(itertools.zip_longest([1, 2], "abc", fillvalue=0)))
    r.append(list(itertools.starmap(pow, [(2, 3), (3, 2)])))
    r.append(list(itertools.islice(itertools.cycle("ab"), 5)))
    a, b = itertools.tee(range(3))
    r.append((list(a), list(b)))
    r.append(list(itertools.islice(itertools.count(5, 2), 3)))
    r.append(list(itertools.compress("abcd", [1, 0, 1, 0])))
    r.append(list(itertools.takewhile(lambda v: v < 3, range(10))))
    r.append(list(itertools.dropwhile(lambda v: v < 3, range(5))))
    r.append(len(list(itertools.combinations(range(n), 2))))
    r.append(len(list(itertools.permutations(range(3)))))
    return r, x * n
def make_args(call):
    return dynjit.ones(2), 3 + call
'''

PROGRAMS["cached_property_and_nondata_descriptor"] = '''
import functools
import dynjit
class Tag:
    def __get__(self, obj, owner):
        return "tag-of-" + (type(obj).__name__ if obj is not None else "class")
class C:
    tag = Tag()
    def __init__(self, t):
        self.t = t
        self.n = 0
    @functools.cached_property
    def heavy(self):
        self.n += 1
        return self.t * 2
def main(c):
    a = c.heavy
    b = c.heavy
    c.tag = "instance wins"
    return a, b is a, c.n, c.tag, C.tag, "heavy" in vars(c)
def make_args(call):
    return (C(dynjit.ones(2) * call),)
'''

PROGRAMS["delattr_override"] = '''
import dynjit
class D:
    def __init__(self):
        self.log = []
        self.a = 1
    def __delattr__(self, name):
        self.log.append(name)
        if name == "keep":
            raise AttributeError("cannot delete keep")
        super().__delattr__(name)
def main(x, d):
    del d.a
    try:
        del d.keep
    except AttributeError as e:
        msg = str(e)
    return x + len(d.log), msg, hasattr(d, "a")
def make_args(call):
    return dynjit.ones(2), D()
'''

PROGRAMS["tensor_iteration_and_unpack"] = '''
import dynjit
def main(m):
    rows = [r * 2 for r in m]
    a, b = m[:2]
    (p, q), *_ = m
    return rows, a + b, p * q, len(m)
def make_args(call):
    return (dynjit.arange(6 + 2 * call, dtype=dynjit.float32).reshape(-1, 2),)
'''

PROGRAMS["tensor_membership_and_len0d"] = '''
import dynjit
def main(x, y):
    r = [x in [x], x is y]
    try:
        r.append(y in [x])
    except RuntimeError as e:
        r.append("ambiguous")
    try:
        r.append(len(x.sum()))
    except TypeError as e:
        r.append(str(e))
    try:
        r.append(x.item())
    except (RuntimeError, ValueError) as e:
        r.append(type(e).__name__)
    return r
def make_args(call):
    return dynjit.ones(1 + call), dynjit.ones(1 + call)
'''

PROGRAMS["reflected_and_bitwise_ops"] = '''
import dynjit
def main(x, i):
    f = [3 - x, 2 / x, 2 ** x, x ** 2, -x, abs(-x), 7 % x, 7 // x, round(x * 1.5), divmod(x, 2)]
    b = [i & 3, i | 4, i ^ 1, ~i, i << 1, i >> 1, 5 & i, (i > 1) & (i < 3), ~(i > 1)]
    return f, b
def make_args(call):
    return dynjit.arange(1, 4 + call, dtype=dynjit.float32), dynjit.arange(4 + call)
'''

PROGRAMS["int_tensor_div_by_zero"] = '''
import dynjit
def main(i, d):
    try:
        return i // d
    except (RuntimeError, ZeroDivisionError) as e:
        return type(e).__name__, str(e)
def make_args(call):
    return dynjit.arange(3), dynjit.tensor([1, 2, 0][call])
'''

PROGRAMS["singledispatch_and_cache"] = '''
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
    return "list" + str(len(v))
@functools.cache
def sq(n):
    return n * n
def main(x, v):
    return describe(v), describe(x), sq(3) + sq(3), x * sq(2)
def make_args(call):
    return dynjit.ones(2), [1, 1, [1, 2]][call]
'''

PROGRAMS["compile_module_directly"] = '''
import dynjit
import dynjit.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 2)
        self.seen = 0
    def forward(self, x):
        self.seen += x.shape[0]
        return self.l(x).tanh()
dynjit.manual_seed(0)
main = Net()
def make_args(call):
    return (dynjit.ones(1 + call, 3),)
'''

PROGRAMS["compile_bound_method"] = '''
import dynjit
class Acc:
    def __init__(self):
        self.total = None
        self.n = 0
    def add(self, x):
        self.n += 1
        self.total = x if self.total is None else self.total + x
        return self.total * self.n
A = Acc()
main = A.add
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["function_attributes"] = '''
import dynjit
def counter(t):
    counter.calls = getattr(counter, "calls", 0) + 1
    return t * counter.calls
def main(x):
    return counter(x), counter(x), counter.calls
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["delete_deref_and_global_in_nested"] = '''
import dynjit
FLAG = 0
def main(x):
    v = x * 2
    def read():
        return v
    a = read()
    del v
    try:
        read()
    except NameError as e:
        err = type(e).__name__
    def setg():
        global FLAG
        FLAG += 1
    setg()
    return a, err, FLAG
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["list_shrinks_under_index_loop"] = '''
import dynjit
def main(L, x):
    try:
        for i in range(len(L)):
            if L[i] > 1:
                L.pop(i)
            x = x + i
    except IndexError as e:
        return str(e), x, L
    return x, L
def make_args(call):
    return [1, 2, 3, 0][: 3 + call % 2], dynjit.zeros(2)
'''

PROGRAMS["sorted_tuples_with_tensor_tiebreak"] = '''
import dynjit
def main(xs):
    pairs = [(1, xs[0]), (0, xs[1]), (1, xs[2])]
    try:
        return sorted(pairs)
    except RuntimeError as e:
        return "ambiguous", [p[0] for p in sorted(pairs, key=lambda p: p[0])]
def make_args(call):
    return ([dynjit.ones(1 + call) * i for i in range(3)],)
'''

PROGRAMS["min_max_of_0d_tensors"] = '''
import dynjit
def main(a, b):
    return min(a, b), max(a, b), max([a, b, a + b]), sorted([b, a])
def make_args(call):
    return dynjit.tensor(float(call)), dynjit.tensor(1.0)
'''

PROGRAMS["backward_twice_error"] = '''
import dynjit
def main(w):
    loss = (w * w).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as e:
        return "second", str(e)[:40], w.grad
    return w.grad
def make_args(call):
    return (dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["recompile_many_constants"] = '''
import dynjit
def main(x, k):
    return x * k + k
def make_args(call):
    return dynjit.ones(2), call * 3 + 1
'''

PROGRAMS["many_shapes"] = '''
import dynjit
def main(x):
    return x.sum(0) * x.shape[0], x.reshape(-1)[:3]
def make_args(call):
    return (dynjit.ones(call + 1, 3),)
'''

PROGRAMS["exception_inside_inlined_with_break_in_try"] = '''
import dynjit
def inner(t, n):
    print("inner", n)
    if n == 2:
        raise KeyError(n)
    return t * n
def main(x):
    out = []
    for n in range(4):
        try:
            out.append(inner(x, n))
        except KeyError as e:
            out.append(("key", e.args))
            break
        finally:
            out.append("f")
    return out
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["except_star_group"] = '''
import sys
import dynjit
def main(x):
    if sys.version_info < (3, 11):
        return x
    caught = []
    try:
        raise ExceptionGroup("g", [ValueError(1), KeyError(2)])
    except* ValueError as eg:
        caught.append(("v", len(eg.exceptions)))
    except* KeyError as eg:
        caught.append(("k", len(eg.exceptions)))
    return caught, x * len(caught)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["cached_graph_error_keeps_prior_effects"] = '''
import dynjit
LOG = []
def main(x, idx):
    LOG.append("before")
    y = x * 2
    return y[idx]
def make_args(call):
    return dynjit.arange(3), dynjit.tensor([[0, 1], [0, 5]][min(call, 1)])
'''

if sys.version_info >= (3, 12):
    PROGRAMS["pep695_generics_and_nested_fstrings"] = '''
import dynjit
def first[T](xs: list[T]) -> T:
    return xs[0]
class Box[T]:
    def __init__(self, v: T):
        self.v = v
type Pair = tuple[int, int]
def main(x):
    def local_generic[U](u: U) -> U:
        return u
    b = Box(x * 2)
    s = f"{'nested' + f'{x.shape[0]}'}"
    return first([x, x + 1]), local_generic(b.v), s, Pair.__name__
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

XFAIL = {
}

CALLS = {"recompile_many_constants": 12, "many_shapes": 10}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
