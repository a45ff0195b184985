"""Adversarial programs, round two: graph breaks with live state the resume
function must rebuild exactly: values half-way on the stack (a break inside an
argument list, a binary expression, a container display, an f-string), live
iterators of every kind (zip, enumerate, map, dict views, reversed, range
iterators, user iterators), objects and containers created before the break
and mutated after it, grad mode and autocast around the break, breaks inside
inlined helpers several calls deep, and breaks inside loops with else."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["break_inside_argument_list"] = '''
import dynjit
def combine(a, b, c, *, d):
    return a * 1 + b * 10 + c * 100 + d
def main(x, k):
    return combine(x * 2, print("mid", k) or k, x.sum(), d=x[0] + k)
def make_args(call):
    return dynjit.ones(2) * (call + 1), call
'''

PROGRAMS["break_inside_binary_expression_and_display"] = '''
import dynjit
def main(x, k):
    y = (x * 2) + (x.sum().item() * k) - (x * 3)
    lst = [x * 1, x.max().item(), x + k, {"a": x.tolist(), "b": x * k}]
    s = f"{x.sum().item():.1f}-{k}-{(x * 2).shape}"
    tup = (x, k, print("tuple") or None, x * 2)
    return y, lst, s, tup
def make_args(call):
    return dynjit.tensor([1.0, 2.0]) * (call + 1), call
'''

PROGRAMS["break_with_live_zip_enumerate_map_iterators"] = '''
import dynjit
def main(x, n):
    z = zip(range(n), "abcdef")
    e = enumerate([x * i for i in range(n)], start=5)
    m = map(lambda v: v * 2, range(n))
    first = (next(z), next(e)[0], next(m))
    print("break", first)
    return first, list(z), [(i, t) for i, t in e], list(m)
def make_args(call):
    return dynjit.ones(2), [3, 3, 4][call]
'''

PROGRAMS["break_with_live_dict_and_reversed_iterators"] = '''
import dynjit
def main(x, d):
    ki = iter(d)
    vi = iter(d.values())
    ii = iter(d.items())
    ri = reversed([1, 2, 3])
    rg = iter(range(10, 0, -3))
    a = (next(ki), next(vi), next(ii), next(ri), next(rg))
    dynjit.graph_break()
    return a, list(ki), list(vi), list(ii), list(ri), list(rg), x * len(d)
def make_args(call):
    return dynjit.ones(2), [{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}, {"z": 0, "y": 9}][call]
'''

PROGRAMS["break_with_live_user_iterator_and_generator_object"] = '''
import dynjit
class Count:
    def __init__(self, n):
        self.i = 0
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i
def main(x, n):
    it = Count(n)
    total = x
    for v in it:
        total = total + v
        if v == 1:
            print("break at", v)
    return total, it.i
def make_args(call):
    return dynjit.zeros(2), [3, 3, 5][call]
'''

PROGRAMS["break_inside_nested_inlined_helpers_with_locals"] = '''
import dynjit
LOG = []
def level3(t, k):
    LOG.append(("l3", k))
    print("deep", k)
    return t * k
def level2(t, k):
    local = [k, k + 1]
    r = level3(t, k) + local[1]
    local.append(r.shape[0])
    return r, local
def level1(t, k):
    acc = {"n": 0}
    r, local = level2(t, k)
    acc["n"] += len(local)
    return r * 2, acc, local
def main(x, k):
    return level1(x, k)
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["break_inside_no_grad_and_enable_grad_blocks"] = '''
import dynjit
def main(w, k):
    with dynjit.no_grad():
        a = w * 2
        print("in no_grad", dynjit.is_grad_enabled())
        b = w * k
        with dynjit.enable_grad():
            dynjit.graph_break()
            c = w * 3
        d = w * 4
    e = w * 5
    return [t.requires_grad for t in (a, b, c, d, e)], dynjit.is_grad_enabled(), e
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call
'''

PROGRAMS["break_inside_autocast_block"] = '''
import dynjit
def main(a, b):
    with dynjit.autocast("cpu", dtype=dynjit.bfloat16):
        c = a @ b
        print("autocast", str(c.dtype))
        d = a @ b
    e = a @ b
    return str(c.dtype), str(d.dtype), str(e.dtype), d.float()
def make_args(call):
    return dynjit.ones(2, 2) * (call + 1), dynjit.ones(2, 2)
'''

PROGRAMS["break_inside_user_context_manager_block"] = '''
import dynjit
LOG = []
class Tag:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        LOG.append(("enter", self.name))
        return self.name
    def __exit__(self, *a):
        LOG.append(("exit", self.name))
        return False
def main(x, k):
    with Tag("outer") as o:
        y = x * 2
        with Tag("inner") as i:
            print("inside", o, i)
            y = y + k
        y = y * 3
    return y
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["break_inside_for_else_and_while_else"] = '''
import dynjit
def main(x, stop):
    for i in range(4):
        if i == stop:
            print("found", i)
            break
        x = x + i
    else:
        x = x * -1
    j = 0
    while j < 3:
        j += 1
        if j == stop:
            dynjit.graph_break()
    else:
        x = x + 100
    return x, i, j
def make_args(call):
    return dynjit.zeros(2), [2, 2, 9][call]
'''

PROGRAMS["break_in_loop_body_mutating_outer_containers"] = '''
import dynjit
def main(x, n):
    hist = []
    seen = {}
    cur = x
    for i in range(n):
        cur = cur * 2
        hist.append(cur)
        seen[i] = cur.sum().item()
        if i % 2:
            print("odd", i)
    return hist, seen, cur, len(hist)
def make_args(call):
    return dynjit.ones(2), [3, 3, 4][call]
'''

PROGRAMS["break_with_object_created_before_and_mutated_after"] = '''
import dynjit
class State:
    def __init__(self):
        self.vals = []
        self.t = None
def main(x, k):
    s = State()
    s.vals.append(k)
    s.t = x * 2
    print("break")
    s.vals.append(k + 1)
    s.t.add_(1)
    s.extra = s.t.sum()
    return s
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["break_with_aliased_list_and_views"] = '''
import dynjit
def main(x, lst):
    alias = lst
    v = x.view(-1)
    first = v[0]
    lst.append(x * 2)
    print("between")
    alias.append(v * 3)
    first.add_(10)
    return lst is alias, len(lst), x, lst
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32).reshape(2, 2) + call, []
'''

PROGRAMS["break_between_global_writes"] = '''
import dynjit
A = 0
B = []
def main(x, k):
    global A, B
    A = A + k
    B.append(A)
    print("A is", A)
    A = A * 2
    B = B + [A]
    return x * A, list(B)
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["break_in_comprehension_with_outer_state"] = '''
import dynjit
def main(x, n):
    log = []
    res = [log.append(i) or print("item", i) or x * i for i in range(n)]
    d = {i: (print("d", i), x + i)[1] for i in range(n)}
    return res, log, d
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

PROGRAMS["break_with_rng_draws_on_both_sides"] = '''
import dynjit
def main(x):
    a = dynjit.rand(2)
    b = dynjit.nn.functional.dropout(x, 0.5)
    print("rng break")
    c = dynjit.randn(2)
    d = dynjit.nn.functional.dropout(x, 0.5)
    return a, b, c, d
def make_args(call):
    return (dynjit.ones(4) * (call + 1),)
'''

PROGRAMS["break_item_value_used_as_shape_after"] = '''
import dynjit
def main(x):
    n = int(x.sum().item())
    y = dynjit.zeros(n)
    z = x.repeat(n)
    return y, z, n, x[:n]
def make_args(call):
    return (dynjit.tensor([1.0, 1.0, 0.0]) * [1, 1, 2][call],)
'''

PROGRAMS["break_with_walrus_and_conditional_expression_on_stack"] = '''
import dynjit
def main(x, k):
    y = (x * 2 if (n := x.sum().item()) > k else x * 3) + n
    z = [w := x * k, print("w") or w * 2]
    return y, z, n
def make_args(call):
    return dynjit.ones(2) * (call + 1), 2.5
'''

PROGRAMS["break_in_method_call_with_self_mutated"] = '''
import dynjit
class Acc:
    def __init__(self):
        self.total = None
        self.n = 0
    def add(self, t):
        self.n += 1
        self.total = t if self.total is None else self.total + t
        if self.n == 2:
            print("second add")
        return self
def main(x, k):
    a = Acc()
    r = a.add(x).add(x * k).add(x * 2)
    return r is a, a.total, a.n
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["break_after_partial_unpacking_and_star"] = '''
import dynjit
def main(x, seq):
    a, *rest = seq
    print("unpacked", a)
    b, *mid, c = rest + [x]
    return a * x, mid, c * 2, len(rest)
def make_args(call):
    return dynjit.ones(2), [[1, 2, 3], [1, 2, 3], [5, 6]][call]
'''

PROGRAMS["break_with_dead_and_live_variables_changing_types"] = '''
import dynjit
def main(x, k):
    v = x * 2
    v = v.sum()
    v = [v, k]
    dynjit.graph_break()
    v = tuple(v) + (k,)
    w = v[0] * k
    print(type(v).__name__)
    v = "str"
    return v, w
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["break_in_recursive_function"] = '''
import dynjit
def walk(t, depth, log):
    if depth == 0:
        print("leaf")
        return t
    log.append(depth)
    return walk(t * 2, depth - 1, log) + depth
def main(x, d):
    log = []
    return walk(x, d, log), log
def make_args(call):
    return dynjit.ones(2), [2, 2, 3][call]
'''

XFAIL = {}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
