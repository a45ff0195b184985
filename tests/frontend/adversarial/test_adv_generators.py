"""Adversarial programs: generators, yield from, send, iterators consumed partly
outside and inside compiled code, itertools over generators."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["gen_consumed_inside"] = '''
import dynjit
def gen(t, n):
    for i in range(n):
        yield t * i
def main(x, n):
    out = []
    for v in gen(x, n):
        out.append(v.sum())
    return out
def make_args(call):
    return dynjit.tensor([1.0, 2.0 + call]), 3 + (call == 2)
'''

PROGRAMS["gen_partly_consumed_before"] = '''
import dynjit
def gen(t):
    yield t
    yield t * 2
    yield t * 3
def main(it, x):
    a = next(it)
    b = [v + x for v in it]
    return a, b
def make_args(call):
    t = dynjit.tensor([1.0, 2.0]) * (call + 1)
    g = gen(t)
    next(g)
    return g, dynjit.ones(2)
'''

PROGRAMS["gen_returned_unconsumed"] = '''
import dynjit
LOG = []
def gen(t):
    LOG.append("start")
    yield t + 1
    LOG.append("mid")
    yield t + 2
def main(x):
    g = gen(x * 2)
    first = next(g)
    return first, g
def make_args(call):
    return (dynjit.tensor([float(call), 1.0]),)
'''

PROGRAMS["gen_send"] = '''
import dynjit
def acc():
    total = 0
    while True:
        v = yield total
        if v is None:
            break
        total = total + v
def main(x):
    g = acc()
    next(g)
    a = g.send(x)
    b = g.send(x * 2)
    try:
        g.send(None)
    except StopIteration:
        pass
    return a, b
def make_args(call):
    return (dynjit.tensor([1.0, 2.0]) + call,)
'''

PROGRAMS["gen_yield_from_return_value"] = '''
import dynjit
def inner(t):
    yield t
    yield t + 1
    return t.sum()
def outer(t):
    r = yield from inner(t)
    yield r * 10
def main(x):
    return list(outer(x))
def make_args(call):
    return (dynjit.tensor([1.0, 2.0, 3.0][: 2 + (call == 2)]),)
'''

PROGRAMS["gen_close_finally"] = '''
import dynjit
EVENTS = []
def gen(t):
    try:
        yield t
        yield t * 2
    finally:
        EVENTS.append("closed")
def main(x):
    g = gen(x)
    a = next(g)
    g.close()
    return a, len(EVENTS)
def make_args(call):
    return (dynjit.tensor([3.0, 4.0]) * call,)
'''

PROGRAMS["gen_throw"] = '''
import dynjit
def gen(t):
    while True:
        try:
            yield t
        except ValueError as e:
            t = t * 2
            yield str(e)
def main(x):
    g = gen(x)
    a = next(g)
    msg = g.throw(ValueError("boom"))
    b = next(g)
    return a, msg, b
def make_args(call):
    return (dynjit.tensor([1.0, 2.0]) + call,)
'''

PROGRAMS["iter_list_partly"] = '''
import dynjit
def main(it, x):
    y = x
    for v in it:
        if v > 2:
            break
        y = y + v
    rest = list(it)
    return y, rest
def make_args(call):
    return iter([1, 2, 3, 4, 5 + call]), dynjit.zeros(2)
'''

PROGRAMS["iter_passed_and_exhausted_break"] = '''
import dynjit
def main(it, x):
    total = x
    for v in it:
        total = total + v
        dynjit.graph_break()
        if v.sum() > 5:
            break
    return total, next(it, None)
def make_args(call):
    return iter([dynjit.tensor([float(i), 1.0]) for i in range(5 + call)]), dynjit.zeros(2)
'''

PROGRAMS["itertools_on_generators"] = '''
import itertools
import dynjit
def squares(t, n):
    for i in range(n):
        yield t * i
def main(x, n):
    ch = list(itertools.chain(squares(x, n), [x]))
    acc = list(itertools.accumulate(squares(x, n)))
    isl = list(itertools.islice(squares(x, 10), 1, n, 2))
    prod = [a * b for a, b in itertools.product([1, 2], [x, x + 1])]
    return ch, acc, isl, prod
def make_args(call):
    return dynjit.tensor([1.0, 2.0]) * (call + 1), 3 + call
'''

PROGRAMS["islice_shared_iterator"] = '''
import itertools
import dynjit
def main(x):
    it = iter(range(10))
    first = list(itertools.islice(it, 3))
    y = x * sum(first)
    second = list(itertools.islice(it, 2))
    return y, second, next(it)
def make_args(call):
    return (dynjit.tensor([1.0, -1.0]) + call,)
'''

PROGRAMS["gen_expression_lazy"] = '''
import dynjit
STATE = {"n": 0}
def bump(v):
    STATE["n"] += 1
    return v
def main(x):
    g = (bump(x * i) for i in range(4))
    a = next(g)
    STATE["n"] += 100
    b = sum(g)
    return a, b, STATE["n"]
def make_args(call):
    return (dynjit.tensor([1.0, 2.0]) * call,)
'''

PROGRAMS["generator_with_graph_break_inside"] = '''
import dynjit
def gen(t):
    for i in range(3):
        print("gen", i)
        yield t.sum().item() + i
def main(x):
    vals = []
    for v in gen(x):
        vals.append(v)
        x = x + v
    return x, vals
def make_args(call):
    return (dynjit.tensor([1.0, 2.0]) + call,)
'''

PROGRAMS["gen_yield_from_generator_passed_in"] = '''
import dynjit
def relay(g):
    got = yield from g
    return got
def src(t):
    yield t
    return "done"
def main(x):
    g = relay(src(x))
    v = next(g)
    try:
        next(g)
    except StopIteration as e:
        return v * 2, e.value
def make_args(call):
    return (dynjit.tensor([1.0]) + call,)
'''

PROGRAMS["zip_strict_mismatch"] = '''
import dynjit
def main(a, b):
    out = []
    try:
        for p, q in zip(a, b, strict=True):
            out.append(p * q)
    except ValueError as e:
        out.append(str(e))
    return out
def make_args(call):
    return [dynjit.tensor([1.0, 2.0])] * (2 + call), [2.0, 3.0, 4.0][: 2 + (call % 2)]
'''

PROGRAMS["enumerate_start_and_reversed"] = '''
import dynjit
def main(xs):
    out = {}
    for i, t in enumerate(reversed(xs), start=10):
        out[i] = t * i
    for i, t in enumerate(xs, -1):
        out[i] = out.get(i, 0) + t
    return out
def make_args(call):
    return ([dynjit.tensor([float(i)]) for i in range(2 + call)],)
'''

PROGRAMS["iter_dict_items_mutated_later"] = '''
import dynjit
def main(d, x):
    it = iter(d.items())
    k, v = next(it)
    d["new"] = x
    try:
        nxt = next(it)
    except RuntimeError as e:
        nxt = str(e)
    return x * v, k, nxt
def make_args(call):
    return {"a": 2.0, "b": 3.0}, dynjit.tensor([1.0, 2.0]) * call
'''

PROGRAMS["map_filter_lazy"] = '''
import dynjit
CALLS = []
def f(t):
    CALLS.append(1)
    return t * 2
def main(xs):
    m = map(f, xs)
    first = next(m)
    fl = filter(lambda t: t.sum() > 1, m)
    return first, list(fl), len(CALLS)
def make_args(call):
    return ([dynjit.tensor([float(i), 0.5]) for i in range(3 + call)],)
'''

PROGRAMS["exhausted_iterator_stays_exhausted"] = '''
import dynjit
def main(it, L, x):
    for v in it:
        x = x + v
    L.append(3)
    return x, next(it, "exhausted")
def make_args(call):
    L = [1.0, 2.0 + call]
    return iter(L), L, dynjit.zeros(2)
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
