"""Adversarial programs, round two: structural pattern matching under tracing
(class patterns with __match_args__, mapping patterns with **rest, sequence
patterns with stars, or/as patterns, guards that read tensors, value patterns
from enums and module attributes, matching on tensor shapes and dtypes)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["match_class_pattern_match_args"] = '''
import dynjit
class Point:
    __match_args__ = ("x", "y")
    def __init__(self, x, y):
        self.x = x
        self.y = y
class Circle:
    __match_args__ = ("center", "r")
    def __init__(self, center, r):
        self.center = center
        self.r = r
def area(shape, t):
    match shape:
        case Circle(Point(0, 0), r):
            return t * r * r, "origin"
        case Circle(Point(x, y), r) if r > 2:
            return t * (x + y), "big"
        case Circle(center=c, r=r):
            return t + c.x, "small"
        case Point(x=0):
            return t, "y-axis"
        case Point():
            return -t, "point"
        case _:
            return t * 0, "other"
def main(t, shapes):
    return [area(s, t) for s in shapes]
def make_args(call):
    shapes = [Circle(Point(0, 0), 2), Circle(Point(1, 2), 3), Circle(Point(1, 1), 1),
              Point(0, 5), Point(3, 3), "x"]
    return dynjit.ones(2) * (call + 1), shapes[call:]
'''

PROGRAMS["match_mapping_rest_and_guard"] = '''
import dynjit
def route(msg, t):
    match msg:
        case {"op": "scale", "by": k, **rest} if not rest:
            return t * k, None
        case {"op": "scale", "by": k, **rest}:
            return t * k, sorted(rest)
        case {"op": "shift", "by": float(k) | int(k)}:
            return t + k, "shift"
        case {"op": op}:
            return t, "unknown " + op
        case {}:
            return t, "empty"
def main(t, msgs):
    return [route(m, t) for m in msgs]
def make_args(call):
    msgs = [{"op": "scale", "by": 2}, {"op": "scale", "by": 3, "z": 1, "a": 2},
            {"op": "shift", "by": 1.5}, {"op": "shift", "by": "no"}, {"x": 1}]
    return dynjit.arange(3, dtype=dynjit.float32) + call, msgs[call:]
'''

PROGRAMS["match_sequence_star_patterns"] = '''
import dynjit
def f(seq, t):
    match seq:
        case []:
            return "empty", t
        case [x]:
            return "one", t * x
        case [x, *mid, y] if len(mid) > 1:
            return "long", t * (x + y) + len(mid)
        case [x, *mid, y]:
            return "short", t + x - y, mid
        case _:
            return "?", t
def main(t, lists):
    out = [f(s, t) for s in lists]
    out.append(f((1, 2), t))
    out.append(f("ab", t))
    return out
def make_args(call):
    return dynjit.ones(2), [[], [3], [1, 2, 3, 4], [1, 9]][call:]
'''

PROGRAMS["match_on_tensor_shape"] = '''
import dynjit
def main(x):
    match x.shape:
        case (n,):
            r = x * n
        case (1, m):
            r = x.sum() + m
        case (n, m) if n == m:
            r = x @ x
        case (n, m):
            r = x.t()
        case _:
            r = x.flatten()
    return r
def make_args(call):
    shapes = [(3,), (3,), (1, 4), (2, 2), (2, 3), (2, 1, 2)]
    return (dynjit.ones(*shapes[call]) * 0.5,)
'''

PROGRAMS["match_enum_value_patterns"] = '''
import enum
import dynjit
class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2
    TEST = 3
class Flag(enum.IntFlag):
    A = 1
    B = 2
def main(x, mode, flag):
    match mode:
        case Mode.TRAIN:
            y = x * 2
        case Mode.EVAL | Mode.TEST as m:
            y = x - m.value
    match flag:
        case Flag.A:
            z = "A"
        case 3:
            z = "AB"
        case _:
            z = "other"
    return y, z, mode.name
def make_args(call):
    return dynjit.ones(2), [Mode.TRAIN, Mode.TRAIN, Mode.EVAL, Mode.TEST][call], [Flag.A, Flag.A, Flag.A | Flag.B, Flag.B][call]
'''

PROGRAMS["match_as_capture_and_nested_or"] = '''
import dynjit
def main(x, items):
    out = []
    for it in items:
        match it:
            case (("a" | "b") as tag, [int() as n, *_]) | (("c") as tag, n):
                out.append((tag, x * n))
            case (str() as s, dict() as d) if s in d:
                out.append((s, d[s]))
            case (_, _):
                out.append("pair")
            case other:
                out.append(("other", other))
    return out
def make_args(call):
    items = [("a", [2, 5]), ("c", 3), ("k", {"k": 1}), (1, 2), 7, ("b", [1])]
    return dynjit.ones(2), items[call:]
'''

PROGRAMS["match_dataclass_and_namedtuple"] = '''
import dataclasses
import typing
import dynjit
@dataclasses.dataclass
class Linear:
    w: object
    b: object = None
class Pair(typing.NamedTuple):
    a: int
    b: int
def main(x, layer, p):
    match layer:
        case Linear(w, None):
            y = x * w
        case Linear(w, b):
            y = x * w + b
    match p:
        case Pair(0, b):
            z = b
        case Pair(a, b=2):
            z = a * 100
        case (a, b):
            z = a - b
    return y, z
def make_args(call):
    layers = [Linear(2.0), Linear(2.0), Linear(3.0, dynjit.ones(2)), Linear(dynjit.ones(2) * 4)]
    pairs = [Pair(0, 5), Pair(0, 5), Pair(7, 2), Pair(9, 1)]
    return dynjit.ones(2), layers[call], pairs[call]
'''

PROGRAMS["match_guard_reads_tensor_value"] = '''
import dynjit
def main(x, tag):
    match tag:
        case "pos" if x.sum() > 0:
            return x * 2
        case "pos":
            return -x
        case "neg" if (x < 0).all():
            return x.abs()
        case str(s):
            return x + len(s)
def make_args(call):
    xs = [dynjit.ones(2), dynjit.ones(2), -dynjit.ones(2), dynjit.tensor([1.0, -1.0])]
    return xs[call], ["pos", "pos", "neg", "neg"][call]
'''

PROGRAMS["match_class_pattern_getattr_side_effect"] = '''
import dynjit
LOG = []
class Lazy:
    __match_args__ = ("val",)
    def __init__(self, v):
        self._v = v
    @property
    def val(self):
        LOG.append(("val", self._v))
        return self._v
def main(x, obj):
    match obj:
        case Lazy(0):
            return x
        case Lazy(v) if v > 1:
            return x * v
        case Lazy(v):
            return x - v
def make_args(call):
    return dynjit.ones(2), Lazy([0, 0, 3, 1][call])
'''

PROGRAMS["match_no_case_matches_and_falls_through"] = '''
import dynjit
def main(x, v):
    r = x
    match v:
        case 1:
            r = r + 1
        case [1, 2]:
            r = r + 2
    match v:
        case {"k": _}:
            r = r * 3
    return r, v
def make_args(call):
    return dynjit.ones(2), [1, 5, [1, 2], {"k": 0}][call]
'''

PROGRAMS["match_mapping_on_user_mapping"] = '''
import collections.abc
import dynjit
class Cfg(collections.abc.Mapping):
    def __init__(self, d):
        self.d = d
        self.gets = 0
    def __getitem__(self, k):
        self.gets += 1
        return self.d[k]
    def __iter__(self):
        return iter(self.d)
    def __len__(self):
        return len(self.d)
def main(x, cfg):
    match cfg:
        case {"lr": lr, **rest}:
            return x * lr, dict(rest), cfg.gets
        case _:
            return x, None, cfg.gets
def make_args(call):
    return dynjit.ones(2), Cfg([{"lr": 0.5, "m": 1}, {"lr": 0.5, "m": 1}, {"wd": 1}][call])
'''

PROGRAMS["match_class_pattern_missing_attr_raises"] = '''
import dynjit
class Bad:
    __match_args__ = ("a", "b")
    def __init__(self):
        self.a = 1
def main(x, o):
    match o:
        case Bad(1, b):
            return x + b
        case _:
            return x
def make_args(call):
    return dynjit.ones(2), Bad()
'''

PROGRAMS["match_too_many_positional_patterns"] = '''
import dynjit
class P:
    __match_args__ = ("a",)
    def __init__(self, a):
        self.a = a
def main(x, o):
    try:
        match o:
            case P(a, b):
                return x
    except TypeError as e:
        return x * 2, str(e)
def make_args(call):
    return dynjit.ones(2) * call, P(call)
'''

PROGRAMS["match_inside_loop_with_break_and_graph_break"] = '''
import dynjit
def main(x, cmds):
    acc = x
    for c in cmds:
        match c:
            case ("add", v):
                acc = acc + v
            case ("print",):
                print("acc", acc.tolist())
            case ("break",):
                break
            case ("sync",):
                dynjit.graph_break()
                acc = acc * 1
            case _:
                continue
        acc = acc * 1.5
    return acc
def make_args(call):
    cmds = [("add", 1), ("print",), ("sync",), ("zz",), ("add", 2), ("break",), ("add", 100)]
    return dynjit.ones(2), cmds[call:]
'''

PROGRAMS["match_literal_float_bool_none"] = '''
import dynjit
def main(x, v):
    match v:
        case True:
            k = "true"
        case 1:
            k = "one"
        case 0.5:
            k = "half"
        case None:
            k = "none"
        case -1:
            k = "minus"
        case 1j:
            k = "complex"
        case _:
            k = "other"
    return k, x * len(k)
def make_args(call):
    return dynjit.ones(2), [True, True, 1, 1.0, 0.5, None, -1.0, 1j][call]
'''

CALLS = {"match_literal_float_bool_none": 8, "match_on_tensor_shape": 6}

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
