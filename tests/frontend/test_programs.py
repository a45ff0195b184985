"""Small realistic programs, each run compiled and plain: same results, same
input mutations, same Python side effects (a global counter, an object's
call count)."""
import math

import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit.testing import same

counter = 0
def p1(x):
    global counter
    counter += 1
    return x * counter

def p2(x):
    total = 0
    n = 0
    while total < 3:            # Python loop
        total += 1
        x = x + total
    i = 0
    while x.sum() < 100:        # data-dependent loop
        x = x * 2
        i += 1
        if i > 20: break
    return x, i

def p3(x, opts={"scale": 2}):
    def inner(y, *, k=opts["scale"]):
        return y * k
    return inner(x), {k: v * 2 for k, v in opts.items()}

def p4(xs):
    out = []
    for i, (a, b) in enumerate(zip(xs, xs[1:])):
        out.append(a * i + b)
    return sum(out), len(out)

def p5(x):
    def make(k):
        def f(y):
            return y + k
        return f
    fs = [make(i) for i in range(3)]
    return [f(x) for f in fs]

def p6(x):
    acc = []
    def add(v):
        nonlocal_list = acc
        nonlocal_list.append(v)
    add(x.sin()); add(x.cos())
    return acc

class Scaler:
    def __init__(self, k): self.k = k; self.calls = 0
    def __call__(self, x):
        self.calls += 1
        return x * self.k

sc = Scaler(3)
def p7(x):
    return sc(x) + sc(x)

def p8(x):
    y = x.clone()
    y[0] = 5.0
    v = y[1:]
    v.mul_(2)
    return y, v

def p9(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    finally:
        z = 3
    return y * z

def p10(x):
    s = f"shape={tuple(x.shape)} n={x.numel()}"
    return x.reshape(-1)[: x.shape[0]], s

def p11(x):
    if isinstance(x, dynjit.Tensor) and x.dim() == 2:
        return x.t() @ x
    return x

def p12(x):
    d = {}
    d["a"] = x
    d.setdefault("b", x * 2)
    del d["a"]
    return d, sorted(d)

def p13(x):
    with dynjit.no_grad():
        y = x * 2
    with dynjit.enable_grad():
        z = x * 3
    return y, z, y.requires_grad, z.requires_grad

def p14(x):
    n = x.shape[0] // 2
    a, *rest = x.unbind(0)
    return a + sum(rest), n, [r.sum() for r in rest[:n]]

def p15(x):
    return max(x.sum().item(), 0.0), abs(-3), min([3, 1, 2]), round(2.567, 2), math.sqrt(16)

def p16(x, mode="a"):
    fn = {"a": dynjit.sin, "b": dynjit.cos}[mode]
    return fn(x), F.softmax(x, dim=-1), F.relu(x) - F.gelu(x)

def p17(x):
    ys = list(map(lambda t: t * 2, [x, x + 1]))
    zs = list(filter(lambda t: True, ys))
    return zs, any(v > 0 for v in [1, -1]), all([True, 1])

def p18(x):
    x2 = x.detach()
    x2.add_(1)          # writes through to x's memory
    return x * 1


PROGRAMS = [p1, p2, p3, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18]


def _deep_same(a, b):
    if isinstance(a, dynjit.Tensor):
        return isinstance(b, dynjit.Tensor) and same(a, b) and a.requires_grad == b.requires_grad
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_deep_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_deep_same(a[k], b[k]) for k in a)
    return a == b


def _input(fn):
    return dynjit.arange(6.0).reshape(2, 3) if fn is p11 else dynjit.arange(4.0) - 1


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_program_compiled_equals_plain(fn):
    global counter
    results = []
    for run in (fn, dynjit.compile(fn)):
        counter = 0
        sc.calls = 0
        x = _input(fn)
        out = run(x)
        results.append((out, x, counter, sc.calls))
    (want, x_plain, *effects_plain), (got, x_compiled, *effects_compiled) = results
    assert _deep_same(got, want)
    assert same(x_compiled, x_plain)                  # writes into the input
    assert effects_compiled == effects_plain          # global counter, calls of a stateful object


def test_pairs_of_a_list_argument():
    xs = [dynjit.ones(2) * i for i in range(4)]
    assert _deep_same(dynjit.compile(p4)(list(xs)), p4(list(xs)))

class Box:
    pass

def q1(x):
    if x.numel() > 100:
        raise ValueError("too big")
    return x + 1

def q2(x):
    raise KeyError("always")

def q3(x):
    v = x[0]
    return v

def q4(x, d):
    d["out"] = x * 2
    d["n"] = d.get("n", 0) + 1
    return d["out"]

def q5(x, box):
    box.last = x.sum()
    box.count = getattr(box, "count", 0) + 1
    return x

def q6(x):
    n = 0
    def bump():
        nonlocal n
        n += 1
    bump(); bump()
    return x * n

def q7(x, depth=3):
    if depth == 0:
        return x
    return q7(x * 2, depth - 1)

inner = dynjit.compile(lambda t: t.exp())
def q8(x):
    return inner(x) + inner(x * 2)

def q9(*args, scale=1, **kw):
    return sum(a * scale for a in args) + kw.get("bias", 0)

def q10(x):
    return x.T, x.ndim, x.dtype == dynjit.float32, x.dtype.is_floating_point, x.shape[-1]

def q11(x):
    i = dynjit.arange(4)
    return i / 2, i // 3, i * 1.5, (i > 1).sum(), x.to(dynjit.int64) + 1

def q12(xs):
    del xs[0]
    xs.insert(0, xs[-1] * 3)
    xs.pop()
    return len(xs)

def q13(x):
    y = x.view(2, 2)
    y.add_(1)          # in-place through a view of an input
    return y.sum()

def q14(x):
    return x.add_(1)   # leaf requiring grad: eager raises


def _outcome(fn, args):
    try:
        return "returned", fn(*args)
    except Exception as e:
        return "raised", type(e).__name__


def _four():
    return dynjit.arange(4.0)


CASES = [
    (q1, lambda: (_four(),)), (q2, lambda: (_four(),)), (q3, lambda: (_four(),)),
    (q4, lambda: (_four(), {})), (q5, lambda: (_four(), Box())), (q6, lambda: (_four(),)),
    (q7, lambda: (_four(),)), (q8, lambda: (_four(),)), (q9, lambda: (_four(), _four() * 2)),
    (q10, lambda: (dynjit.ones(2, 3),)), (q11, lambda: (_four(),)),
    (q12, lambda: ([_four(), _four() + 1, _four() + 2],)), (q13, lambda: (_four(),)),
    (q14, lambda: (dynjit.ones(3, requires_grad=True),)),
]


@pytest.mark.parametrize("fn,make_args", CASES, ids=[c[0].__name__ for c in CASES])
def test_program_outcome_and_argument_effects_match(fn, make_args):
    plain_args, compiled_args = make_args(), make_args()
    want = _outcome(fn, plain_args)
    got = _outcome(dynjit.compile(fn), compiled_args)
    assert got[0] == want[0] and (_deep_same(got[1], want[1]) if got[0] == "returned" else got[1] == want[1])
    for a, b in zip(plain_args, compiled_args):
        if isinstance(a, Box):
            assert vars(a).keys() == vars(b).keys() and all(_deep_same(vars(a)[k], vars(b)[k]) for k in vars(a))
        else:
            assert _deep_same(a, b)


def test_returned_view_aliases_the_input_as_in_eager():
    x = _four()
    dynjit.compile(q3)(x).fill_(42.0)
    assert x[0].item() == 42.0


# -- exceptions, context managers, assert, del/walrus, match, local classes, lambdas ----------
import contextlib  # noqa: E402

def _raiser(x):
    raise ValueError("inner")

def r1(x):
    try:
        _raiser(x)
    except ValueError:
        return x + 1
    return x

effect_log = []
@contextlib.contextmanager
def tag(name):
    effect_log.append(("enter", name))
    yield name
    effect_log.append(("exit", name))

def r2(x):
    with tag("a") as n:
        y = x * 2
    return y, n

def r3(x):
    assert x.sum() > -100, "bad"
    return x + 1

def r4(x):
    y = x * 2
    del y
    if (n := x.numel()) > 2:
        return x * n
    return x

def r5(x, cmd="scale"):
    match cmd:
        case "scale":
            return x * 3
        case "shift":
            return x + 3
        case _:
            return x

def r6(x):
    class Local:
        def __init__(self, k):
            self.k = k
        def apply(self, t):
            return t * self.k
    return Local(4).apply(x)

def r7(x):
    fs = [lambda t, k=k: t + k for k in range(3)]
    return [f(x) for f in fs], " ".join(["a", "b"]).upper(), "x={}".format(3)

def r8(x):
    parts = {"a": x, "b": x * 2}
    total = x * 0
    for key in sorted(parts, reverse=True):
        total = total + parts[key]
    return total, isinstance(parts, (list, dict)), type(x).__name__

def r9(x):
    out = []
    i = 0
    while True:
        i += 1
        if i > 3:
            break
        if i == 2:
            continue
        out.append(x * i)
    return out

def r10(x):
    try:
        y = x + 1
        return y
    finally:
        effect_log.append("finally")


R_PROGRAMS = [r1, r2, r3, r4, r5, r6, r7, r8, r9, r10]


@pytest.mark.parametrize("fn", R_PROGRAMS, ids=lambda f: f.__name__)
def test_control_flow_program_compiled_equals_plain(fn):
    outcomes = []
    for run in (fn, dynjit.compile(fn)):
        effect_log.clear()
        outcomes.append((_outcome(run, (_four(),)), list(effect_log)))
    (want, want_log), (got, got_log) = outcomes
    assert got[0] == want[0] and (_deep_same(got[1], want[1]) if got[0] == "returned" else got[1] == want[1])
    assert got_log == want_log
