"""Adversarial programs, round two: values made inside the compiled frame that
escape it unevaluated (returned, stored on objects or in globals): lazy
iterators (map over lambdas, bound methods and builtins, zip, enumerate,
reversed, iterators over tensors), closures and partials over tensors made in
the graph, bound methods of intermediate tensors, generator expressions,
dict views of new dicts. The caller consumes them after the call."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

# Each program's `body` makes the escaping value; `main` returns it and keeps it in ESC; the
# next call's make_args (plain code, never compiled) consumes what ESC holds into SEEN, a global
# the harness compares.
_CONSUME = '''
import itertools
ESC = []
SEEN = []
def main(*args):
    r = body(*args)
    ESC.append(r)
    return r
def make_args(call):
    while ESC:
        SEEN.append(consume(ESC.pop(0)))
    return fresh_args(call)
def consume(v):
    if isinstance(v, (map, filter, zip, enumerate, reversed, itertools.chain, itertools.islice)) or \\
            type(v).__name__.endswith("iterator") or type(v).__name__ == "generator":
        return (type(v).__name__, [consume(e) for e in v])
    if isinstance(v, (list, tuple)):
        return [consume(e) for e in v]
    if callable(v) and not hasattr(v, "shape"):
        return ("called", consume(v()))
    return v
'''


def _prog(body):
    return _CONSUME + body


PROGRAMS["escaping_map_bound_method_of_input"] = _prog('''
import dynjit
def body(x, n):
    return map(x.mul, range(1, n))
def fresh_args(call):
    return dynjit.ones(2) * (call + 1), [3, 3, 4][call]
''')

PROGRAMS["escaping_map_two_iterables_operator_add"] = _prog('''
import operator
import dynjit
def body(x, n):
    return map(operator.add, [x, x], [n, n * 2])
def fresh_args(call):
    return dynjit.ones(2), call + 1
''')

PROGRAMS["escaping_map_stored_on_object_attribute"] = _prog('''
import dynjit
class Box:
    pass
def body(x, n):
    b = Box()
    b.f = lambda: x * n
    b.m = map(lambda v: v + x, range(n))
    return b
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

PROGRAMS["escaping_map_stored_in_global_consumed_next_call"] = _prog('''
import dynjit
PENDING = []
DONE = []
def body(x, n):
    if PENDING:
        DONE.append(consume(PENDING.pop()))
    PENDING.append(map(lambda v: x * v, range(n)))
    return x + 1
def fresh_args(call):
    return dynjit.ones(2) * (call + 1), [2, 2, 3][call]
''')

PROGRAMS["escaping_zip_enumerate_reversed_types"] = _prog('''
import dynjit
def body(x, n):
    ys = [x + i for i in range(n)]
    return zip(ys, range(n)), enumerate(ys), reversed(ys), iter(x * 2), type(iter(x)).__name__
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

PROGRAMS["escaping_map_over_list_mutated_after_return"] = _prog('''
import dynjit
SRC = []
def body(x, n):
    SRC[:] = list(range(n))
    m = map(lambda v: x * v, SRC)
    return m, x * 0
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

PROGRAMS["escaping_closures_and_partials_over_graph_tensors"] = _prog('''
import functools
import dynjit
def body(x, n):
    y = x * n
    f = lambda: y + 1
    g = functools.partial(dynjit.add, y, 2)
    h = (y * 2).sum
    fs = [lambda i=i: y * i for i in range(n)]
    return f, g, h, fs
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

PROGRAMS["escaping_generator_expressions_over_tensors"] = _prog('''
import dynjit
def body(x, n):
    y = x * n
    g1 = (r * 2 for r in y)
    g2 = (y + i for i in range(n))
    g3 = (t.sum() for t in [x, y])
    first = next(g2)
    return g1, first, g2, g3
def fresh_args(call):
    return dynjit.arange(3, dtype=dynjit.float32), [2, 2, 3][call]
''')

PROGRAMS["escaping_filter_and_starmap_and_islice"] = _prog('''
import itertools
import dynjit
def body(x, n):
    ys = [x * i for i in range(n)]
    f = filter(lambda t: t.sum() > 1, ys)
    s = itertools.starmap(dynjit.add, [(x, i) for i in range(n)])
    i = itertools.islice(ys, 1, None)
    return f, s, i
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

PROGRAMS["escaping_dict_views_of_new_dict_then_mutated"] = _prog('''
import dynjit
def body(x, n):
    d = {i: x * i for i in range(n)}
    ks, vs, its = d.keys(), d.values(), d.items()
    d[99] = x
    return list(ks), [v for v in vs], len(its), d
def fresh_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
''')

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
