"""Adversarial programs, round two: generators and iterators the tracer runs
itself: send/throw/close on simple generators, yield from with return values
and delegated send, generators resumed across calls (state kept in globals),
lazily evaluated map/filter/zip objects returned unconsumed, itertools
iterators shared between consumers, and contextlib helpers (ExitStack
callbacks, suppress, redirect_stdout, nullcontext, closing)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["generator_send_accumulator"] = '''
import dynjit
def running_sum(start):
    total = start
    while True:
        v = yield total
        if v is None:
            break
        total = total + v
    return total
def main(x, vals):
    g = running_sum(x)
    out = [next(g)]
    for v in vals:
        out.append(g.send(v))
    return out
def make_args(call):
    return dynjit.zeros(2), [[1, 2], [1, 2], [5, 6, 7]][call]
'''

PROGRAMS["generator_state_kept_across_calls"] = '''
import dynjit
def counter():
    i = 0
    while True:
        i += 1
        yield i
GEN = counter()
def main(x):
    a = next(GEN)
    b = next(GEN)
    return x * a + b
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["generator_close_and_exhausted_next"] = '''
import dynjit
def gen(x):
    yield x
    yield x * 2
    yield x * 3
def main(x, take):
    g = gen(x)
    got = [next(g) for _ in range(take)]
    g.close()
    after = next(g, "exhausted")
    return got, after
def make_args(call):
    return dynjit.ones(2), [1, 1, 2][call]
'''

PROGRAMS["yield_from_delegates_send_and_return"] = '''
import dynjit
def inner(t):
    got = yield t
    got2 = yield t * got
    return got + got2
def outer(t):
    r = yield from inner(t)
    yield r * 10
def main(x, a, b):
    g = outer(x)
    v1 = next(g)
    v2 = g.send(a)
    v3 = g.send(b)
    return v1, v2, v3, next(g, None)
def make_args(call):
    return dynjit.ones(2), call + 1, [3, 3, 4][call]
'''

PROGRAMS["yield_from_iterable_and_nested_generators"] = '''
import dynjit
def flatten(items):
    for it in items:
        if isinstance(it, list):
            yield from flatten(it)
        else:
            yield it
def main(x, nested):
    flat = list(flatten(nested))
    return flat, x * sum(flat), list(flatten([]))
def make_args(call):
    return dynjit.ones(2), [[1, [2, [3]], 4], [1, [2, [3]], 4], [[[5]], 6]][call]
'''

PROGRAMS["generator_throw_caught_inside"] = '''
import dynjit
def resilient():
    n = 0
    while True:
        try:
            yield n
        except ValueError:
            n += 100
        n += 1
def main(x, k):
    g = resilient()
    a = next(g)
    b = g.throw(ValueError("x"))
    c = next(g)
    return a, b, c, x * k
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["unconsumed_map_filter_zip_returned"] = '''
import dynjit
def main(x, vals):
    m = map(lambda v: x * v, vals)
    f = filter(lambda v: v > 1, vals)
    z = zip(vals, "abc")
    first = next(m)
    return first, m, f, z
def make_args(call):
    return dynjit.ones(2), [[1, 2, 3], [1, 2, 3], [4, 0]][call]
'''

PROGRAMS["unconsumed_generator_returned_then_consumed"] = '''
import dynjit
LOG = []
def gen(x, n):
    for i in range(n):
        LOG.append(i)
        yield x * i
def main(x, n):
    g = gen(x, n)
    first = next(g)
    return first, g, list(LOG)
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

PROGRAMS["itertools_shared_iterator_consumers"] = '''
import itertools
import dynjit
def main(x, n):
    it = iter(range(n))
    head = list(itertools.islice(it, 2))
    pairs = list(zip(it, it))
    c = itertools.count(10, -2)
    firsts = [next(c) for _ in range(3)]
    acc = list(itertools.accumulate([1, 2, 3], lambda a, b: a * b))
    chain = list(itertools.chain.from_iterable([[1], [2, 3]]))
    prod = list(itertools.product("ab", repeat=2))[:3]
    perms = list(itertools.permutations(range(3), 2))[-2:]
    combs = list(itertools.combinations_with_replacement("xy", 2))
    tw = list(itertools.takewhile(lambda v: v < 3, range(10)))
    dw = list(itertools.dropwhile(lambda v: v < 8, range(10)))
    return head, pairs, firsts, acc, chain, prod, perms, combs, tw, dw, x * n
def make_args(call):
    return dynjit.ones(2), [6, 6, 9][call]
'''

PROGRAMS["exitstack_callbacks_order_and_pop_all"] = '''
import contextlib
import dynjit
LOG = []
def main(x, k):
    with contextlib.ExitStack() as stack:
        stack.callback(LOG.append, "first")
        stack.callback(lambda: LOG.append(("second", k)))
        y = x * 2
        if k > 1:
            kept = stack.pop_all()
    LOG.append("after with")
    if k > 1:
        kept.close()
    return y
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["suppress_and_redirect_stdout_inside"] = '''
import contextlib
import io
import dynjit
def main(x, key):
    d = {"a": x}
    r = None
    with contextlib.suppress(KeyError):
        r = d[key] * 2
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("captured", key)
    print("visible", key)
    return r, buf.getvalue()
def make_args(call):
    return dynjit.ones(2), ["a", "a", "b"][call]
'''

PROGRAMS["nullcontext_and_closing"] = '''
import contextlib
import dynjit
class Res:
    def __init__(self):
        self.closed = False
    def close(self):
        self.closed = True
def main(x, use_grad):
    ctx = contextlib.nullcontext(x) if use_grad else dynjit.no_grad()
    with ctx as v:
        y = x * 2
    r = Res()
    with contextlib.closing(r) as rr:
        same = rr is r
    return y.requires_grad, v is x if use_grad else v, r.closed, same
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call != 1
'''

PROGRAMS["contextmanager_generator_yield_value_and_cleanup"] = '''
import contextlib
import dynjit
LOG = []
@contextlib.contextmanager
def scaled(k):
    LOG.append(("enter", k))
    yield k * 2
    LOG.append(("exit", k))
def main(x, k):
    with scaled(k) as s:
        y = x * s
    with scaled(k + 1) as s2, scaled(k + 2) as s3:
        z = y + s2 + s3
    return y, z
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["iterator_exhaustion_shared_between_loops"] = '''
import dynjit
def main(x, vals):
    it = iter(vals)
    total = x
    for v in it:
        total = total + v
        if v == 2:
            break
    rest = [v for v in it]
    again = list(it)
    return total, rest, again
def make_args(call):
    return dynjit.zeros(2), [[1, 2, 3, 4], [1, 2, 3, 4], [5, 6]][call]
'''

PROGRAMS["enumerate_zip_over_tensors_and_dicts"] = '''
import dynjit
def main(x, d):
    out = {}
    for i, (k, v) in enumerate(sorted(d.items())):
        out[k] = x[i] * v
    pairs = [(a, b) for a, b in zip(x, d.values())]
    return out, pairs, dict(zip(d, range(3)))
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32), [{"b": 2, "a": 1}, {"b": 2, "a": 1}, {"z": 3, "y": 1, "x": 0}][call]
'''

PROGRAMS["generator_expression_in_builtin_calls"] = '''
import dynjit
def main(x, n):
    s = sum(x * i for i in range(n))
    m = max((i * i for i in range(n)), default=-1)
    t = tuple(i for i in range(n) if i % 2)
    a = any(x.sum() > i for i in range(n))
    j = "-".join(str(i) for i in range(n))
    d = dict((i, i * 2) for i in range(n))
    return s, m, t, a, j, d
def make_args(call):
    return dynjit.ones(2), [3, 3, 0][call]
'''

PROGRAMS["user_iterable_reiterated_and_len_hint"] = '''
import dynjit
class Window:
    def __init__(self, data, size):
        self.data = data
        self.size = size
        self.iters = 0
    def __iter__(self):
        self.iters += 1
        for i in range(0, len(self.data) - self.size + 1):
            yield self.data[i:i + self.size]
def main(x, data):
    w = Window(data, 2)
    sums = [sum(p) for p in w]
    count = len(list(w))
    return x * len(sums), sums, count, w.iters
def make_args(call):
    return dynjit.ones(2), [[1, 2, 3], [1, 2, 3], [4, 5, 6, 7]][call]
'''

PROGRAMS["unconsumed_map_with_side_effects_escapes"] = '''
import dynjit
LOG = []
def main(x, vals):
    m = map(lambda v: LOG.append(v) or v * 2, vals)
    vals.append(100)
    return m, x * 2, list(LOG)
def make_args(call):
    return dynjit.ones(2), [[1, 2], [1, 2], [3]][call]
'''

PROGRAMS["compiled_function_is_a_generator_function"] = '''
import dynjit
def main(x, n):
    for i in range(n):
        yield x * i
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

XFAIL = {}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
