"""A program-generating differential fuzzer for dynjit's frontend.

It writes random (but always valid, deterministic given a seed) Python
functions over tensors and Python values (containers, user objects,
SimpleNamespaces, closures, loops, branches on Python values and on tensor
data, grad-mode blocks, try/except, graph breaks everywhere) and runs each
one plain and through ``dynjit.compile(fn, backend="eager")`` on identical
fresh inputs, three calls each (same inputs twice, then different values and
shapes), comparing the results, the side effects on the inputs and on module
globals, stdout, exceptions and the grad mode afterwards.

Programs run in child processes (a crash such as SIGSEGV, or a hang, is pinned
to the program that caused it); failures are minimized (statements deleted
while the failure persists) and reported.

CLI (from the repository root)::

    python -m tests.frontend.program_fuzz --n 20000 --seed 123 --jobs 2
    python -m tests.frontend.program_fuzz --show 123456     # print one program
    python -m tests.frontend.program_fuzz --check 123456    # run one program, print the verdict
"""
import os

if __name__ == "__main__":
    os.environ.setdefault("DYNJIT_STRICT", "1")   # before dynjit is imported: config reads it then

import argparse
import ast
import collections
import contextlib
import io
import json
import linecache
import math
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types

import numpy as np

import dynjit

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DYNJIT_DIR = os.path.dirname(os.path.abspath(dynjit.__file__))

# ---------------------------------------------------------------------------
# The fixed part of every program: imports, user classes, helpers, globals.
# ---------------------------------------------------------------------------

PRELUDE = '''\
import dataclasses
import enum
import functools
import itertools
import math
import time
import types

import dynjit


class FuzzError(Exception):
    pass


G_LIST = [1, 2]
G_DICT = {"g": 0}
G_COUNT = 0


class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


@dataclasses.dataclass
class DC:
    a: int = 1
    b: float = 2.0


class Base:
    scale = 2.0
    kind = "base"

    def __init__(self, count=0):
        self.count = count
        self.val = 1.5

    @property
    def prop(self):
        return self.count * 2 + 1

    def method(self, v):
        return v * self.scale

    def scale_t(self, t):
        return t * self.scale

    @classmethod
    def cm(cls, v):
        return len(cls.kind) + v

    @staticmethod
    def sm(v):
        return v * 3 - 1

    def bump(self, by=1):
        self.count += by
        return self.count

    def __add__(self, other):
        return type(self)(self.count + other.count)


class Derived(Base):
    scale = 3.0
    kind = "derived"

    def method(self, v):
        return super().method(v) + 1

    def method_brk(self, v):
        dynjit.graph_break()
        return super().method(v) * 2

    def bump(self, by=1):
        r = super().bump(by)
        return r + 100


def helper_t(t, s=2.0):
    return t * s + 1


def helper_brk(t):
    print("helper_brk")
    return t.sin()


def helper_item(t):
    return round(t.sum().item(), 4)


def helper_mut(L, v):
    L.append(v)
    return len(L)


@dynjit.no_grad()
def helper_ng(t):
    return t * 2


def helper_kw(a, b=2, *, c=3):
    return a * b + c


def helper_deep(t, n):
    if n <= 0:
        dynjit.graph_break()
        return t.cos()
    return helper_deep(t * 0.5, n - 1)


partial_h = functools.partial(helper_t, s=0.5)

# ---- generated ----
'''

PRELUDE_LINES = PRELUDE.count("\n")

# exception types a generated program may raise on purpose
EXPECTED_EXCEPTIONS = {"FuzzError", "KeyError", "IndexError", "ZeroDivisionError", "ValueError",
                       "AssertionError", "RuntimeError", "AttributeError"}

# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------


class Var:
    __slots__ = ("name", "kind", "shape", "inplace", "level", "rkind")

    def __init__(self, name, kind, shape=None, inplace=False, level=0, rkind=None):
        self.name, self.kind, self.shape, self.inplace, self.level, self.rkind = \
            name, kind, shape, inplace, level, rkind


class Gen:
    """Writes one program. Shapes are tuples of dims: ints, 'R' (x's leading
    dim, 2 on the first calls and 4 on the third) or 'A' (an unknown shape:
    inside generated helpers only elementwise ops and full reductions)."""

    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.n = 0
        self.helpers = []          # names of generated module-level helpers
        self.budget = self.r.randint(4, 28)
        self.scopes = []           # list of dict name->Var
        self.level = 0             # def nesting level (0: module helper / fn)
        self.nonlocals = set()
        self.in_loop = False
        self.grad_off = False
        self.in_finally = False
        self.has_x = True
        self.grad_inputs = self.r.random() < 0.15
        self.factory = self.r.random() < 0.2
        self.comp_vars = set()

    # -- helpers --
    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def chance(self, p):
        return self.r.random() < p

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def wpick(self, items):
        """items: list of (weight, value)."""
        tot = sum(w for w, _ in items)
        x = self.r.random() * tot
        for w, v in items:
            x -= w
            if x <= 0:
                return v
        return items[-1][1]

    def vars(self, kind, shape=None, writable=False):
        out = []
        seen = set()
        for sc in reversed(self.scopes):
            for v in sc.values():
                if v.name in seen:
                    continue
                seen.add(v.name)
                if v.kind != kind:
                    continue
                if shape is not None and v.shape != shape:
                    continue
                if writable and not self.writable(v):
                    continue
                out.append(v)
        out.sort(key=lambda v: v.name)
        return out

    def writable(self, v):
        return v.level == self.level or v.name in self.nonlocals

    def add(self, name, kind, **kw):
        v = Var(name, kind, level=self.level, **kw)
        self.scopes[-1][name] = v
        return v

    @contextlib.contextmanager
    def block(self, **flags):
        saved = {k: getattr(self, k) for k in flags}
        for k, val in flags.items():
            setattr(self, k, val)
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()
            for k, val in saved.items():
                setattr(self, k, val)

    # -- shapes --
    def dim_code(self, d):
        return "x.shape[0]" if d == "R" else str(d)

    def concrete(self, S):
        return "A" not in S

    def tensor_shapes(self):
        shapes = sorted({v.shape for v in self.vars("tensor")}, key=repr)
        return shapes or [("A",)]

    # -- expressions --
    def T(self, S, d=2):
        """A tensor expression of shape S."""
        vs = self.vars("tensor", S)
        if d <= 0 or self.chance(0.12):
            return self.pick(vs).name if vs and not self.chance(0.1) else self.t_const(S)
        c = []
        if vs:
            c.append((6, lambda: self.pick(vs).name))
        c.append((1, lambda: self.t_const(S)))
        c.append((4, lambda: self.t_unary(S, d)))
        c.append((3, lambda: f"({self.T(S, d - 1)} {self.pick(['+', '-', '*'])} {self.T(S, d - 1)})"))
        c.append((3, lambda: self.t_scalar(S, d)))
        c.append((2, lambda: self.t_call(S, d)))
        c.append((1, lambda: f"dynjit.where({self.T(S, d - 1)} > 0, {self.T(S, d - 1)}, {self.T(S, d - 1)})"))
        if self.concrete(S):
            if len(S) == 2:
                a, b = S
                c.append((2, lambda: f"{self.T((b, a), d - 1)}{self.pick(['.t()', '.transpose(0, 1)', '.T'])}"))
                c.append((2, lambda: self.t_matmul(a, b, d)))
                c.append((1, lambda: self.t_reshape(S, d)))
                c.append((1, lambda: f"({self.T(S, d - 1)} + {self.T((b,), d - 1)})"))
                if b in (1, 2):
                    c.append((1, lambda: f"{self.T((a, 3), d - 1)}[:, :{b}]"))
                if a in (1, 2):
                    c.append((1, lambda: f"{self.T(('R', b), d - 1)}[:{a}]"))
                if a == 1:
                    c.append((1, lambda: f"{self.T((b,), d - 1)}.unsqueeze(0)"))
            elif len(S) == 1:
                a = S[0]
                c.append((2, lambda: self.t_reduce_dim(a, d)))
                m = self.pick([3, "R"])
                c.append((1, lambda: f"{self.T((m, a), d - 1)}[{self.pick([0, 1, -1])}]"))
                c.append((1, lambda: f"{self.T((a, 3), d - 1)}[:, {self.pick([0, 2])}]"))
            elif len(S) == 0:
                c.append((4, lambda: self.t_reduce_all(d)))
        else:
            if len(S) == 0:
                c.append((4, lambda: self.t_reduce_all(d)))
        return self.wpick(c)()

    def t_const(self, S):
        if not self.concrete(S):
            return self.pick(["dynjit.ones_like(a)", "(a * 0 + 1.5)", "dynjit.zeros_like(a)"])
        if len(S) == 0:
            return self.pick(["dynjit.tensor(0.5)", "dynjit.tensor(-1.25)", f"dynjit.tensor({self.F(0)})"])
        if S == (3,) and self.chance(0.5):
            return "dynjit.tensor([1.0, -2.0, 0.5])"
        dims = ", ".join(self.dim_code(d) for d in S)
        return self.pick([f"dynjit.ones({dims})", f"dynjit.zeros({dims})", f"dynjit.full(({dims},), 0.25)",
                          f"(dynjit.ones({dims}) * {self.pick(['2', '-1.5', '0.1'])})"])

    def t_unary(self, S, d):
        e = self.T(S, d - 1)
        m = self.pick(["sin", "cos", "tanh", "relu", "abs", "sigmoid", "neg", "exp", "square", "clone",
                       "detach", "float", "contiguous"])
        form = self.r.randrange(4)
        if m in ("clone", "detach", "float", "contiguous", "square"):
            form = 0
        if form == 0 or m == "neg" and form == 2:
            return f"{e}.{m}()"
        if form == 1:
            return f"dynjit.{m}({e})"
        if form == 2:
            return f"{e}.clamp({self.pick(['-1.0', '-2'])}, {self.pick(['1.0', '3'])})"
        return self.pick([f"(-{e})", f"({e} ** 2)", f"{e}.pow(2)", f"abs({e})"])

    def t_scalar(self, S, d):
        e = self.T(S, d - 1)
        s = self.wpick([(2, lambda: self.pick(["2", "0.5", "-1", "3.0"])), (2, lambda: self.I(1)),
                        (2, lambda: self.F(1)), (1, lambda: self.T((), d - 1))])()
        op = self.pick(["+", "-", "*"])
        if self.chance(0.3):
            return f"({s} {op} {e})"
        return f"({e} {op} {s})"

    def t_matmul(self, a, b, d):
        m = self.pick([3, "R", 2])
        l, r = self.T((a, m), d - 1), self.T((m, b), d - 1)
        return self.pick([f"({l} @ {r})", f"dynjit.matmul({l}, {r})", f"{l}.mm({r})", f"{l}.matmul({r})"])

    def t_reshape(self, S, d):
        a, b = S
        e = self.T((b, a), d - 1)
        if a == "R":
            return f"{e}.reshape(-1, {self.dim_code(b)})"
        if b == "R":
            return f"{e}.reshape({a}, -1)"
        return f"{e}.reshape({a}, {b})"

    def t_reduce_dim(self, a, d):
        m = self.pick([3, "R", 2])
        if self.chance(0.5):
            e = self.T((m, a), d - 1)
            return f"{e}.{self.pick(['sum', 'mean'])}(0)"
        e = self.T((a, m), d - 1)
        return self.pick([f"{e}.sum(1)", f"{e}.mean(1)", f"{e}.amax(1)", f"{e}.sum(-1)", f"dynjit.sum({e}, 1)"])

    def t_reduce_all(self, d):
        S = self.pick(self.tensor_shapes())
        e = self.T(S, d - 1)
        return self.pick([f"{e}.sum()", f"{e}.mean()", f"{e}.amax()", f"dynjit.sum({e})", f"{e}.max()"])

    def t_call(self, S, d):
        e = self.T(S, d - 1)
        c = [(2, lambda: f"helper_t({e}, {self.pick(['0.5', '2.0', 's=3'])})"),
             (1, lambda: f"helper_brk({e})"),
             (1, lambda: f"helper_ng({e})"),
             (1, lambda: f"partial_h({e})"),
             (1, lambda: f"helper_deep({e}, {self.pick([0, 1, 2])})")]
        if self.has_names("obj", "ns"):
            c += [(1, lambda: f"ns.fn({e})"), (1, lambda: f"obj.scale_t({e})")]
        if self.helpers:
            h = self.pick(self.helpers)
            c.append((4, lambda: f"{h}({e}, {self.I(0)})"))
            c.append((1, lambda: f"{h}({e}, b={self.I(0)})"))
        for v in self.vars("tlam"):
            c.append((1, lambda v=v: f"{v.name}({e})"))
        for v in self.vars("func0"):
            if v.rkind == ("tensor", S):
                c.append((2, lambda v=v: f"{v.name}()"))
        for v in self.vars("tpartial"):
            c.append((1, lambda v=v: f"{v.name}({e})"))
        return self.wpick(c)()

    def has_names(self, *names):
        return all(any(n in sc for sc in self.scopes) for n in names)

    def I(self, d=2):
        """An int expression (bounded magnitude)."""
        ints = self.vars("int")
        if d <= 0 or self.chance(0.2):
            if ints and self.chance(0.7):
                return self.pick(ints).name
            return str(self.r.randint(-2, 5))
        c = [(5, lambda: self.pick(ints).name if ints else "1"),
             (2, lambda: str(self.r.randint(-3, 6))),
             (3, lambda: f"({self.I(d - 1)} {self.pick(['+', '-'])} {self.I(d - 1)})"),
             (1, lambda: f"({self.I(d - 1)} * {self.pick([2, 3, -1])})"),
             (1, lambda: f"({self.I(d - 1)} // {self.pick([2, 3, -2])})"),
             (1, lambda: f"({self.I(d - 1)} % {self.pick([2, 3, 5])})"),
             (1, lambda: f"abs({self.I(d - 1)})"),
             (1, lambda: f"{self.pick(['min', 'max'])}({self.I(d - 1)}, {self.I(d - 1)})"),
             (1, lambda: f"round({self.F(d - 1)})"),
             (1, lambda: f"int({self.T((), d - 1)} > 0)"),
             (1, lambda: f"int({self.T((), d - 1)}.item() > {self.pick(['0', '0.5'])})"),
             (1, lambda: f"int(time.perf_counter() > 0)"),
             (1, lambda: f"len([c_.value for c_ in Color if c_.value > {self.I(0)}])"),
             (1, lambda: f"helper_kw({self.I(d - 1)}, c={self.I(0)})"),
             (1, lambda: f"helper_kw({self.I(d - 1)}, {self.pick([1, 2])})"),
             (1, lambda: f"G_COUNT"),
             (1, lambda: f"len(G_LIST)"),
             (1, lambda: f"{self.pick(['Base', 'Derived'])}.cm({self.I(0)})"),
             (1, lambda: f"{self.pick(['Base', 'Derived'] + (['obj'] if self.has_names('obj') else []))}.sm({self.I(0)})"),
             (1, lambda: f"math.floor({self.F(d - 1)} * 0.5)"),
             (1, lambda: f"math.floor({self.T((), d - 1)}.item())"),
             (1, lambda: f"len(str({self.I(0)}))")]
        if self.has_names("obj"):
            c += [(1, lambda: "obj.count"), (1, lambda: "obj.prop"), (1, lambda: f"obj.bump({self.pick([1, 2])})"),
                  (1, lambda: f"getattr(obj, {self.pick(['count', 'missing_attr'])!r}, 7)"),
                  (1, lambda: f"int(isinstance(obj, {self.pick(['Base', 'Derived', 'DC'])}))")]
        if self.has_names("x"):
            c.append((1, lambda: "x.shape[0]"))
            c.append((1, lambda: "len(x)"))
        for v in self.vars("list"):
            c += [(2, lambda v=v: f"len({v.name})"),
                  (1, lambda v=v: f"sum({v.name})"),
                  (1, lambda v=v: f"({v.name}[{self.I(0)} % len({v.name})] if {v.name} else 0)"),
                  (1, lambda v=v: f"sorted({v.name} + [{self.I(0)}])[0]"),
                  (1, lambda v=v: f"sum(v_ * 2 for v_ in {v.name} if v_ > 0)"),
                  (1, lambda v=v: f"max({v.name}, default=-1)"),
                  (1, lambda v=v: f"len(list(enumerate({v.name})))"),
                  (1, lambda v=v: f"helper_mut({v.name}, {self.I(0)})")]
        for v in self.vars("dict"):
            c += [(2, lambda v=v: f"{v.name}.get({self.key()!r}, 0)"), (1, lambda v=v: f"len({v.name})"),
                  (1, lambda v=v: f"sum({v.name}.values())")]
        for v in self.vars("ilam"):
            c.append((2, lambda v=v: f"{v.name}({self.I(d - 1)})"))
        for v in self.vars("ipartial"):
            c.append((1, lambda v=v: f"{v.name}({self.I(d - 1)})"))
        for v in self.vars("func0"):
            if v.rkind == ("int",):
                c.append((2, lambda v=v: f"{v.name}()"))
        for v in self.vars("objv"):
            c += [(1, lambda v=v: f"{v.name}.count"), (1, lambda v=v: f"{v.name}.bump()")]
        for v in self.vars("dc"):
            c.append((1, lambda v=v: f"{v.name}.a"))
        for v in self.vars("nsv"):
            c.append((1, lambda v=v: f"{v.name}.v"))
        return self.wpick(c)()

    def F(self, d=2):
        """A float expression."""
        fl = self.vars("float")
        if d <= 0 or self.chance(0.2):
            if fl and self.chance(0.7):
                return self.pick(fl).name
            return self.pick(["0.5", "1.25", "-0.75", "2.0"])
        c = [(4, lambda: self.pick(fl).name if fl else "0.5"),
             (3, lambda: f"{self.T((), d - 1)}.item()"),
             (2, lambda: f"float({self.T((), d - 1)})"),
             (2, lambda: f"({self.F(d - 1)} {self.pick(['+', '-', '*'])} {self.F(d - 1)})"),
             (1, lambda: f"({self.I(d - 1)} / {self.pick([2, 4, -8])})"),
             (1, lambda: f"math.sqrt(abs({self.F(d - 1)}))"),
             (1, lambda: f"float({self.I(d - 1)})")]
        if self.has_names("obj"):
            c += [(1, lambda: "obj.val"), (1, lambda: "obj.scale"), (1, lambda: f"obj.method({self.F(d - 1)})"),
                  (1, lambda: f"(obj.method_brk({self.F(d - 1)}) if isinstance(obj, Derived) else -1.0)"),
                  (0.1, lambda: f"obj.method_brk({self.F(d - 1)})")]
        if self.has_names("ns"):
            c.append((1, lambda: "ns.val"))
        if self.vars("tensor"):
            c.append((1, lambda: f"helper_item({self.T(self.pick(self.tensor_shapes()), d - 1)})"))
        for v in self.vars("dc"):
            c.append((1, lambda v=v: f"{v.name}.b"))
        for v in self.vars("func0"):
            if v.rkind == ("float",):
                c.append((2, lambda v=v: f"{v.name}()"))
        return self.wpick(c)()

    def C(self, d=2):
        """A condition."""
        c = [(3, lambda: f"{self.I(d - 1)} {self.pick(['>', '<', '==', '!=', '>='])} {self.I(d - 1)}"),
             (2, lambda: f"{self.F(d - 1)} {self.pick(['>', '<'])} {self.pick(['0', '0.5', '-0.5'])}"),
             (3, lambda: f"{self.T((), d - 1)} {self.pick(['>', '<'])} {self.pick(['0', '0.5', '-0.25'])}"),
             (1, lambda: f"bool({self.T((), d - 1)} > 0)"),
             (1, lambda: f"({self.T(self.pick(self.tensor_shapes()), d - 1)} > 0).any()")]
        if d > 0:
            c.append((1, lambda: f"not ({self.C(d - 1)})"))
            c.append((1, lambda: f"({self.C(d - 1)}) {self.pick(['and', 'or'])} ({self.C(d - 1)})"))
        if self.has_names("x"):
            c.append((1, lambda: "x.shape[0] > 2"))
        if self.has_names("obj"):
            c.append((1, lambda: f"isinstance(obj, {self.pick(['Base', 'Derived'])})"))
            c.append((1, lambda: "obj.count % 2 == 0"))
        for v in self.vars("list"):
            c.append((1, lambda v=v: f"len({v.name}) > {self.pick([0, 1, 2])}"))
            c.append((1, lambda v=v: f"{self.I(0)} in {v.name}"))
        for v in self.vars("dict"):
            c.append((1, lambda v=v: f"{self.key()!r} in {v.name}"))
        return self.wpick(c)()

    def key(self):
        return self.pick(["a", "b", "c", "k"])

    def any_expr(self, d=1):
        """Any value, for lists of mixed things and for return values."""
        c = [(3, lambda: self.I(d)), (2, lambda: self.F(d)),
             (3, lambda: self.T(self.pick(self.tensor_shapes()), d)),
             (1, lambda: repr(self.pick(["s", "tag", ""])))]
        for kind in ("list", "dict", "olist", "objv", "dc", "nsv", "func0", "set", "hdict", "tuple"):
            for v in self.vars(kind):
                c.append((1, lambda v=v: v.name))
        if self.has_names("obj"):
            c.append((1, lambda: "obj"))
        return self.wpick(c)()

    # -- statements --
    def body(self, depth, lo=1, hi=4):
        lines = []
        for _ in range(self.r.randint(lo, hi)):
            if self.budget <= 0 and lines:
                break
            lines.append("\n".join(self.stmt(depth)))
        return lines or ["pass"]

    def stmt(self, depth):
        self.budget -= 1
        c = [(6, self.s_assign), (3, self.s_reassign), (3, self.s_break), (2, self.s_print),
             (3, self.s_list), (2, self.s_dict), (2, self.s_attr), (2, self.s_global),
             (2, self.s_inplace), (1, self.s_comprehension), (1, self.s_lambda), (1, self.s_construct)]
        if depth > 0:
            c += [(3, self.s_if), (2, self.s_for), (1, self.s_while), (2, self.s_with), (2, self.s_try),
                  (2, self.s_def), (1, self.s_closure_pattern)]
        c += [(1, self.s_raise), (1, self.s_assert)]
        if not self.grad_off and self.has_names("x"):
            c.append((1, self.s_backward))
        if self.in_loop:
            c.append((2, self.s_loop_ctl))
        if depth < 3 and not self.in_finally and self.level == 0 and self.has_names("x"):
            c.append((1, self.s_early_return))
        return self.wpick(c)(depth)

    def s_assign(self, depth):
        kind = self.wpick([(5, "tensor"), (3, "int"), (2, "float"), (1, "list"), (1, "dict"), (1, "olist")])
        if kind == "tensor":
            S = self.pick(self.tensor_shapes() + ([(3,), ()] if self.has_names("x") else [()]))
            if self.has_names("x") and self.chance(0.3):
                S = self.pick([("R", 3), (3, "R"), ("R", "R"), (3, 3), ("R",), (3,), (), (1, 3), ("R", 2)])
            e = self.T(S)
            name = self.fresh("t")
            self.add(name, "tensor", shape=S, inplace=not self.grad_inputs or e.startswith("("))
            return [f"{name} = {e}"]
        if kind == "int":
            name = self.fresh("k")
            e = self.I()
            self.add(name, "int")
            return [f"{name} = {e}"]
        if kind == "float":
            name = self.fresh("f")
            e = self.F()
            self.add(name, "float")
            return [f"{name} = {e}"]
        if kind == "list":
            name = self.fresh("L")
            lists = self.vars("list")
            if lists and self.chance(0.35):
                src = self.pick(lists).name
                self.add(name, "list")
                return [f"{name} = {src}" if self.chance(0.6) else f"{name} = list({src})"]
            e = f"[{', '.join(self.I(1) for _ in range(self.r.randint(0, 3)))}]"
            self.add(name, "list")
            return [f"{name} = {e}"]
        if kind == "dict":
            name = self.fresh("D")
            e = "{" + ", ".join(f"{self.key()!r}: {self.I(1)}" for _ in range(self.r.randint(0, 3))) + "}"
            if self.chance(0.2):
                e = f"dict({', '.join(f'{k}={self.I(1)}' for k in sorted({self.key() for _ in range(2)}))})"
            self.add(name, "dict")
            return [f"{name} = {e}"]
        name = self.fresh("O")
        e = f"[{', '.join(self.any_expr() for _ in range(self.r.randint(0, 3)))}]"
        if self.chance(0.3):
            e = f"({e}, {self.any_expr()})"
            self.add(name, "tuple")
        else:
            self.add(name, "olist")
        return [f"{name} = {e}"]

    def s_reassign(self, depth):
        c = []
        for v in self.vars("tensor", writable=True):
            c.append((3, lambda v=v: [f"{v.name} = {self.T(v.shape)}"]))
            if v.inplace and self.chance(0.3):
                c.append((1, lambda v=v: [f"{v.name} {self.pick(['+=', '*=', '-='])} {self.T(v.shape, 1)}"]))
            else:
                c.append((1, lambda v=v: [f"{v.name} = {v.name} {self.pick(['+', '*'])} {self.T(v.shape, 1)}"]))
        for v in self.vars("int", writable=True):
            c.append((3, lambda v=v: [f"{v.name} = {self.I()}"]))
            c.append((2, lambda v=v: [f"{v.name} {self.pick(['+=', '-='])} {self.I(1)}"]))
        for v in self.vars("float", writable=True):
            c.append((2, lambda v=v: [f"{v.name} = {self.F()}"]))
            c.append((1, lambda v=v: [f"{v.name} *= {self.pick(['0.5', '2', '-1.0'])}"]))
        for v in self.vars("list", writable=True):
            c.append((1, lambda v=v: [f"{v.name} = [{self.I(1)}]"]))
            c.append((1, lambda v=v: [f"{v.name} += [{self.I(1)}]"]))
        if not c:
            return self.s_assign(depth)
        return self.wpick(c)()

    def s_inplace(self, depth):
        vs = [v for v in self.vars("tensor") if v.inplace]
        if not vs:
            return self.s_assign(depth)
        v = self.pick(vs)
        S = v.shape
        ops = [f"{v.name}.add_({self.T(S, 1)})", f"{v.name}.mul_({self.pick(['2', '0.5', '-1.0'])})",
               f"{v.name}.add_({self.F(1)})", f"{v.name}.clamp_(-1.0, 1.0)", f"{v.name}.sub_({self.T(S, 1)})",
               f"{v.name}.zero_()", f"{v.name}.copy_({self.T(S, 1)})"]
        if self.concrete(S) and len(S) >= 1:
            ops.append(f"{v.name}[0] = {self.pick(['0.0', '1.5'])}")
        return [self.pick(ops)]

    def s_break(self, depth):
        c = [(3, "dynjit.graph_break()"), (2, f'print("brk{self.n}")')]
        if self.has_names("ns"):
            c += [(2, f'ns.out("ns{self.n}", {self.I(1)})'), (1, "ns.brk()"), (1, "_ = ns.now()")]
        c += [(1, "_ = time.perf_counter()")]
        if self.vars("tensor"):
            c += [(2, f"_ = {self.T(self.pick(self.tensor_shapes()), 1)}.sum().item()")]
        for v in self.vars("float", writable=True):
            c.append((1, f"{v.name} = float({self.T((), 1)})"))
        for v in self.vars("int", writable=True):
            c.append((1, f"{v.name} = math.floor({self.T((), 1)}.item())"))
        return [self.wpick(c)]

    def s_print(self, depth):
        args = [repr(f"p{self.n}")]
        for _ in range(self.r.randint(0, 2)):
            args.append(self.pick([self.I(1), f"round({self.F(1)}, 3)"]))
        if self.has_names("ns") and self.chance(0.3):
            return [f"ns.out({', '.join(args)})"]
        if self.chance(0.2):
            return [f"print({', '.join(args)}, sep='|')"]
        return [f"print({', '.join(args)})"]

    def s_list(self, depth):
        lists = self.vars("list")
        ol = self.vars("olist")
        if not lists and not ol:
            return self.s_assign(depth)
        if ol and (not lists or self.chance(0.25)):
            v = self.pick(ol).name
            return [self.pick([f"{v}.append({self.any_expr()})", f"{v}.insert(0, {self.any_expr()})",
                               f"if {v}:\n    {v}.pop()", f"{v}.extend([{self.any_expr()}])"])]
        v = self.pick(lists).name
        ops = [f"{v}.append({self.I(1)})", f"{v}.extend([{self.I(1)}, {self.I(0)}])", f"{v}.insert(0, {self.I(1)})",
               f"if {v}:\n    {v}.pop()", f"if {v}:\n    {v}[0] = {self.I(1)}", f"if {v}:\n    del {v}[0]",
               f"{v}.sort()", f"{v}.reverse()", f"{v}[:] = {v}[::-1]", f"{v}.append(len({v}))",
               f"if len({v}) > 1:\n    {v}.pop(1)", f"{v}.extend(range({self.pick([0, 1, 2])}))"]
        ops.append(f"G_DICT['lst'] = {v}")
        if self.chance(0.3):
            h = self.fresh("H")
            self.add(h, "hdict")
            return [f"{h} = {{'lst': {v}, 'n': len({v})}}"]
        for o in self.vars("olist"):
            ops.append(f"{o.name}.append({v})")
        return [self.pick(ops)]

    def s_dict(self, depth):
        ds = self.vars("dict")
        if not ds:
            return self.s_assign(depth)
        v = self.pick(ds).name
        k = self.key()
        ops = [f"{v}[{k!r}] = {self.I(1)}", f"{v}.update({{{k!r}: {self.I(1)}}})",
               f"if {k!r} in {v}:\n    del {v}[{k!r}]", f"{v}.pop({k!r}, None)",
               f"{v}.setdefault({k!r}, {self.I(0)})", f"{v}[{k!r}] = {v}.get({k!r}, 0) + 1"]
        if self.chance(0.05):
            # deliberately raises RuntimeError: dictionary changed size during iteration
            it = self.fresh("q")
            ops.append(f"for {it} in {v}:\n    {v}[{it} + 'x'] = 1")
        return [self.pick(ops)]

    def s_attr(self, depth):
        c = []
        if self.has_names("obj"):
            c += [f"obj.val = {self.F(1)}", "obj.count += 1", f"obj.count = {self.I(1)}",
                  f"obj.scale = {self.pick(['0.5', '4.0'])}", f"obj.extra = {self.any_expr()}",
                  f"if hasattr(obj, 'extra'):\n    del obj.extra", f"obj.bump({self.pick([1, 3])})"]
        if self.has_names("ns"):
            c += [f"ns.val = {self.F(1)}", f"ns.tag = {self.pick(['a', 'b'])!r}", f"ns.extra = {self.any_expr()}",
                  f"ns.fn = {self.pick(['helper_t', 'partial_h', 'helper_ng'])}"]
        for v in self.vars("objv"):
            c += [f"{v.name}.val = {self.F(1)}", f"{v.name}.count += {self.I(0)}"]
        for v in self.vars("nsv"):
            c += [f"{v.name}.v = {self.I(1)}", f"{v.name}.w = {self.any_expr()}"]
        for v in self.vars("dc"):
            c += [f"{v.name}.a = {self.I(1)}"]
        if not c:
            return self.s_assign(depth)
        return [self.pick(c)]

    def s_global(self, depth):
        return [self.pick([f"G_LIST.append({self.any_expr()})", f"G_DICT[{self.key()!r}] = {self.I(1)}",
                           f"G_COUNT += {self.I(0)}", "G_COUNT += 1", "G_LIST.pop(0) if G_LIST else None",
                           f"G_DICT.update(g=G_DICT.get('g', 0) + 1)"])]

    def s_comprehension(self, depth):
        name = self.fresh("C")
        lists = self.vars("list")
        src = self.pick(lists).name if lists else f"range({self.pick([2, 3])})"
        S = self.pick(self.tensor_shapes())
        forms = [("list", f"[v_ * {self.pick([2, 3])} for v_ in {src}]"),
                 ("list", f"[v_ for v_ in {src} if v_ % 2 == 0]"),
                 ("olist", f"[{self.T(S, 1)} * i_ for i_ in range({self.pick([1, 2, 3])})]"),
                 ("olist", f"[round({self.T(S, 1)}[..., 0].sum().item() + i_, 3) for i_ in range(2)]"),
                 ("olist", f"[c_.name for c_ in Color]"),
                 ("list", f"[c_.value * {self.I(0)} for c_ in Color]"),
                 ("olist", f"[f_.name for f_ in dataclasses.fields(DC)]"),
                 ("olist", f"[(k_, len(list(g_))) for k_, g_ in itertools.groupby(sorted({src}))]"),
                 ("dict", f"{{str(v_): v_ for v_ in {src}}}"),
                 ("set", f"{{v_ % 3 for v_ in {src}}}"),
                 ("int", f"sum(v_ for v_ in {src})"),
                 ("olist", f"list(zip({src}, range(3)))"),
                 ("list", f"sorted({src}, reverse=True)")]
        if lists and len(lists) >= 2:
            a, b = self.r.sample(lists, 2)
            forms.append(("olist", f"list(zip({a.name}, {b.name}, strict=True))"))
        kind, e = self.pick(forms)
        if (not self.concrete(S) or not S) and "[..., 0]" in e:
            e = e.replace("[..., 0]", "")
        self.add(name, kind)
        return [f"{name} = {e}"]

    def s_lambda(self, depth):
        name = self.fresh("lam")
        if self.chance(0.5):
            self.add(name, "ilam")
            return [f"{name} = lambda v_: v_ * {self.pick([2, 3])} + {self.I(0)}"]
        if self.chance(0.3):
            self.add(name, "ipartial")
            return [f"{name} = functools.partial(helper_kw, c={self.I(0)})"]
        if self.chance(0.3):
            self.add(name, "tpartial")
            return [f"{name} = functools.partial(helper_t, s={self.F(0)})"]
        self.add(name, "tlam")
        return [f"{name} = lambda a_: a_ * {self.pick(['2.0', '0.5'])} + {self.F(0)}"]

    def s_construct(self, depth):
        name = self.fresh("o")
        c = self.r.randrange(5)
        if c == 0:
            e = f"{name} = {self.pick(['Base', 'Derived'])}({self.I(1)})"
            self.add(name, "objv")
        elif c == 1 and self.has_names("obj"):
            e = f"{name} = obj + {self.pick(['obj', 'Base(2)', 'Derived(1)'])}"
            self.add(name, "objv")
        elif c == 2:
            e = f"{name} = DC(a={self.I(1)}, b={self.F(0)})"
            self.add(name, "dc")
        else:
            e = f"{name} = types.SimpleNamespace(v={self.I(1)}, f=helper_kw)"
            self.add(name, "nsv")
        return [e]

    def s_if(self, depth):
        lines = [f"if {self.C()}:"]
        with self.block():
            lines += indent(self.body(depth - 1))
        if self.chance(0.3):
            lines.append(f"elif {self.C(1)}:")
            with self.block():
                lines += indent(self.body(depth - 1, 1, 2))
        if self.chance(0.5):
            lines.append("else:")
            with self.block():
                lines += indent(self.body(depth - 1))
        return lines

    def s_for(self, depth):
        lists = self.vars("list")
        dicts = self.vars("dict")
        forms = [("i", f"range({self.pick([1, 2, 3])})"),
                 ("i", f"range(min(abs({self.I(1)}), 3))")]
        if lists:
            L = self.pick(lists).name
            forms += [("i", f"list({L})"), ("i", f"{L}[:3]"), ("ii", f"enumerate({L}[:3])"),
                      ("ii", f"zip({L}, range(3))")]
            if len(lists) >= 2 and self.chance(0.5):
                a, b = self.r.sample(lists, 2)
                forms.append(("ii", f"zip({a.name}[:3], {b.name}[:3], strict=True)"))
        if dicts:
            D = self.pick(dicts).name
            forms += [("si", f"list({D}.items())"), ("s", f"sorted({D})")]
        forms.append(("e", "Color"))
        tk, it = self.pick(forms)
        lines = []
        with self.block(in_loop=True):
            if tk == "i":
                a = self.fresh("i")
                self.add(a, "int")
                head = f"for {a} in {it}:"
            elif tk == "ii":
                a, b = self.fresh("i"), self.fresh("j")
                self.add(a, "int")
                self.add(b, "int")
                head = f"for {a}, {b} in {it}:"
            elif tk == "si":
                a, b = self.fresh("s"), self.fresh("j")
                self.add(b, "int")
                head = f"for {a}, {b} in {it}:"
            elif tk == "s":
                a = self.fresh("s")
                head = f"for {a} in {it}:"
            else:
                a = self.fresh("e")
                b = self.fresh("i")
                self.add(b, "int")
                head = f"for {a} in {it}:"
                lines = [f"{b} = {a}.value"]
            lines = [head] + indent(lines + self.body(depth - 1))
        if self.chance(0.15):
            with self.block():
                lines += ["else:"] + indent(self.body(depth - 1, 1, 1))
        return lines

    def s_while(self, depth):
        w = self.fresh("w")
        lines = [f"{w} = 0", f"while {w} < {self.pick([1, 2, 3])}:", f"    {w} += 1"]
        with self.block(in_loop=True):
            self.add(w, "int_ro")
            lines += indent(self.body(depth - 1))
        return lines

    def s_loop_ctl(self, depth):
        return [f"if {self.C(1)}:", f"    {self.pick(['break', 'continue'])}"]

    def s_with(self, depth):
        cm, off = self.pick([("dynjit.no_grad()", True), ("dynjit.enable_grad()", False),
                             ("dynjit.inference_mode()", True), ("dynjit.set_grad_enabled(False)", True),
                             ("dynjit.no_grad()", True)])
        lines = [f"with {cm}:"]
        with self.block(grad_off=self.grad_off or off):
            lines += indent(self.body(depth - 1))
        return lines

    def s_try(self, depth):
        lines = ["try:"]
        raiser = self.raiser() if self.chance(0.5) else None
        with self.block():
            body = self.body(depth - 1, 1, 3)
            if raiser:
                body.insert(self.r.randrange(len(body) + 1), raiser)
            lines += indent(body)
        exc = self.pick(["FuzzError", "(FuzzError, KeyError)", "(ZeroDivisionError, IndexError, ValueError)",
                         "KeyError", "Exception"])
        if self.chance(0.8):
            e = self.fresh("err")
            lines.append(f"except {exc} as {e}:")
            with self.block():
                handler = [f"G_LIST.append(type({e}).__name__)"] if self.chance(0.5) else \
                    [f"print('caught', type({e}).__name__, {e})"]
                lines += indent(handler + (self.body(depth - 1, 0, 1) if self.chance(0.4) else []))
        else:
            lines.append("except FuzzError:")
            lines.append("    pass")
        if self.chance(0.3):
            lines.append("finally:")
            with self.block(in_finally=True, in_loop=False):
                lines += indent(self.body(0, 1, 2))
        return lines

    def raiser(self):
        lists = self.vars("list")
        c = [f"raise FuzzError('boom{self.n}', {self.I(0)})",
             f"if {self.C(1)}:\n    raise FuzzError(f'cond{self.n} {{{self.I(0)}}}')",
             f"_ = {{'a': 1}}[{self.pick(['a', 'zz'])!r}]",
             f"_ = 1 // ({self.I(0)} - {self.I(0)})",
             f"_ = int({self.pick(['3', 'x'])!r})"]
        if lists:
            L = self.pick(lists).name
            c.append(f"_ = {L}[len({L}) + {self.pick([-1, 0, 2])}]")
        return self.pick(c)

    def s_raise(self, depth):
        if self.chance(0.5):
            return [f"if {self.C()}:", f"    raise FuzzError('r{self.n}', {self.I(1)})"]
        return [self.raiser()] if self.chance(0.3) else [f"if {self.C()}:", f"    {self.raiser()}".replace("\n", "\n    ")]

    def s_assert(self, depth):
        cond = self.C(1)
        if self.chance(0.7):
            cond = f"{cond} or {self.I(0)} < 10"
        return [f"assert {cond}, {('a' + str(self.n))!r}"]

    def s_backward(self, depth):
        w, loss = self.fresh("wg"), self.fresh("loss")
        S = self.pick(self.tensor_shapes())
        src = self.T(S, 1)
        lines = [f"{w} = {src}.detach().clone().requires_grad_()",
                 f"{loss} = ({w}.{self.pick(['sin', 'tanh', 'exp', 'square'])}() * {self.F(0)}).sum()"]
        if self.chance(0.3):
            lines.append(self.pick(["dynjit.graph_break()", f"print('bw{self.n}')"]))
        lines.append(f"{loss}.backward()")
        if self.grad_inputs and self.has_names("x") and self.chance(0.5):
            lines.append(f"(x * {self.F(0)}).sum().backward()")
        g = self.fresh("t")
        lines.append(f"{g} = {w}.grad")
        self.add(w, "tensor", shape=S, inplace=False)
        self.add(g, "tensor", shape=S, inplace=False)
        return lines

    def s_def(self, depth):
        name = self.fresh("inner")
        rk = self.wpick([(3, ("int",)), (1, ("float",)), (3, ("tensor", self.pick(self.tensor_shapes())))])
        ints = self.vars("int", writable=True)
        nl = []
        if ints and self.chance(0.6):
            nl = [self.pick(ints).name]
        lines = [f"def {name}():"]
        saved = (self.level, self.nonlocals, self.in_loop, self.in_finally)
        self.level += 1
        self.nonlocals = set(nl)
        self.in_loop = False
        self.in_finally = False
        self.scopes.append({})
        try:
            inner = ["global G_COUNT"] + ([f"nonlocal {', '.join(nl)}"] if nl else [])
            if nl:
                inner.append(f"{nl[0]} += 1")
            inner += self.body(max(depth - 2, 0), 0, 2)
            if rk[0] == "int":
                ret = self.I()
            elif rk[0] == "float":
                ret = self.F()
            else:
                ret = self.T(rk[1])
            inner.append(f"return {ret}")
        finally:
            self.scopes.pop()
            self.level, self.nonlocals, self.in_loop, self.in_finally = saved
        lines += indent(inner)
        self.add(name, "func0", rkind=rk)
        return lines

    def s_closure_pattern(self, depth):
        ints = self.vars("int", writable=True)
        if not ints:
            return self.s_def(depth)
        k = self.pick(ints).name
        name = self.fresh("inner")
        r = self.fresh("k")
        lines = [f"def {name}():", f"    return {k} * {self.pick([2, 3])} + 1"]
        if self.chance(0.4):
            lines = [f"def {name}():", f"    nonlocal {k}", f"    {k} += 1", f"    return {k}"]
        lines.append(f"{k} = {self.I(1)}")
        lines += self.s_break(depth)
        lines.append(f"{r} = {name}()")
        self.add(name, "func0", rkind=("int",))
        self.add(r, "int")
        return lines

    def s_early_return(self, depth):
        return [f"if {self.C(1)}:"] + indent([f"return {self.ret_expr()}"])

    def ret_expr(self):
        items = [self.any_expr() for _ in range(self.r.randint(1, 4))]
        if self.chance(0.2):
            return "{" + ", ".join(f"'r{i}': {e}" for i, e in enumerate(items)) + "}"
        if len(items) == 1 and self.chance(0.5):
            return items[0]
        return "(" + ", ".join(items) + ",)"

    # -- whole program --
    def helper(self, idx):
        name = f"g{idx}"
        self.scopes = [{}]
        self.level = 0
        self.add("a", "tensor", shape=("A",), inplace=False)
        self.add("b", "int")
        self.has_x = False
        saved_budget = self.budget
        self.budget = self.r.randint(1, 6)
        lines = [f"def {name}(a, b=1):", "    global G_COUNT"]
        lines += indent(self.body(2, 1, 4) + [f"return {self.T(('A',))}"])
        self.budget = saved_budget
        self.helpers.append(name)
        return lines

    def program(self):
        out = []
        for i in range(self.r.choice([0, 0, 1, 1, 2, 3])):
            out += self.helper(i) + [""]
        self.scopes = [{}]
        self.level = 0
        self.has_x = True
        params = [("x", "tensor", ("R", 3)), ("y", "tensor", (3, 3)), ("n", "int", None), ("lst", "list", None),
                  ("d", "dict", None), ("obj", "obj", None), ("ns", "ns", None)]
        for name, kind, shape in params:
            self.add(name, kind, shape=shape, inplace=not self.grad_inputs)
        header = ["global G_COUNT"]
        if self.factory:
            self.scopes.insert(0, {})
            self.scopes[0]["fk"] = Var("fk", "int", level=0)
            self.scopes[0]["fl"] = Var("fl", "list", level=-1)
            self.scopes[0]["fscale"] = Var("fscale", "float", level=-1)
            header.append("nonlocal fk")
        body = header + self.body(3, 3, 8)
        body.append(f"return {self.ret_expr()}")
        if self.factory:
            out += ["def factory(fscale):", "    fk = 0", "    fl = [1]",
                    "    global FACTORY_STATE", "    FACTORY_STATE = lambda: (fk, fl)",
                    "    def fn(x, y, n, lst, d, obj, ns):"]
            out += indent(indent(body))
            out += ["    return fn", "", "fn = factory(1.5)"]
        else:
            out += ["def fn(x, y, n, lst, d, obj, ns):"] + indent(body)
        return "\n".join(out) + "\n"


def indent(lines):
    res = []
    for ln in lines:
        for sub in ln.split("\n"):
            res.append("    " + sub)
    return res


def generate(seed):
    """(source, meta) of program `seed` (seeds from ADV_SEED_BASE on: the adversarial family)."""
    if seed >= ADV_SEED_BASE:
        return PRELUDE + AdvGen(seed).program(), {"grad_inputs": False, "calls": ADV_CALLS}
    g = Gen(seed)
    src = g.program()
    return PRELUDE + src, {"grad_inputs": g.grad_inputs}


# ---------------------------------------------------------------------------
# The adversarial family (seeds >= ADV_SEED_BASE): programs composed from
# snippets of the Python the classic generator does not write (generators and
# send, iterators over the inputs, live dict views, descriptors and property
# setters, __slots__, __class__ assignment, super() in classmethods, set
# displays, kernel errors that depend on the data of a later call, locals(),
# suppressing context managers, yield from), joined by graph breaks, try
# blocks and loops. `--family adv` runs these seeds.
# ---------------------------------------------------------------------------

ADV_SEED_BASE = 10 ** 9

ADV_PRELUDE = '''\
class AdvProp:
    def __init__(self):
        self.log = []
        self._v = 0

    @property
    def v(self):
        self.log.append("get")
        return self._v

    @v.setter
    def v(self, t):
        self.log.append("set")
        self._v = t * 2


class AdvNonNeg:
    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, o, owner=None):
        return self if o is None else getattr(o, self.slot, 0)

    def __set__(self, o, value):
        if value < 0:
            raise ValueError("negative " + self.slot)
        setattr(o, self.slot, value)


class AdvCfg:
    k = AdvNonNeg()


class AdvSlots:
    __slots__ = ("a",)


class AdvA:
    @classmethod
    def make(cls, t):
        return t + 1

    def f(self, t):
        return t * 2


class AdvB(AdvA):
    @classmethod
    def make(cls, t):
        return super().make(t) * 3

    def f(self, t):
        return t - 5


class AdvSuppress:
    def __init__(self):
        self.seen = []

    def __enter__(self):
        self.seen.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.seen.append(et.__name__ if et else None)
        return et is not None and issubclass(et, (ValueError, KeyError, IndexError, RuntimeError))


class AdvHashed:
    calls = 0

    def __init__(self, v):
        self.v = v

    def __hash__(self):
        AdvHashed.calls += 1
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, AdvHashed) and other.v == self.v


class AdvCountdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


@dataclasses.dataclass
class AdvPoint:
    t: object
    k: int = 1


ADV_PROP = AdvProp()
ADV_CFG = AdvCfg()
ADV_LOG = []


def adv_gen(t, k):
    for i in range(k):
        got = yield t * i
        if got is not None:
            t = t + got


def adv_inner(t):
    yield t
    yield t + 1
    return "inner-done"


def adv_closing_gen(t):
    try:
        yield t
        yield t * 2
    finally:
        ADV_LOG.append("closed")


def adv_outer(t):
    r = yield from adv_inner(t)
    ADV_LOG.append(r)
    yield t * 3

'''


class AdvGen:
    """Writes one program of the adversarial family: fn(x, y, n, lst, d, obj, ns) made of snippets."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.k = 0
        self.tensors = ["x"]

    def fresh(self):
        self.k += 1
        return self.k

    def T(self):
        return self.r.choice(self.tensors)

    def brk(self):
        return [self.r.choice(["dynjit.graph_break()", 'print("brk", n)', "ns.brk()",
                               "ADV_LOG.append(len(ADV_LOG))"])]

    # each snippet: lines at the function body's level; results go to `out`
    def s_gen_partial(self):
        k = self.fresh()
        return [f"g{k} = adv_gen({self.T()}, n + 2)", f"out.append(next(g{k}))"] + self.brk() + \
               [f"out.append(sum(g{k}, x * 0))"]

    def s_gen_send(self):
        k = self.fresh()
        return [f"g{k} = adv_gen({self.T()}, n + 3)", f"next(g{k})", f"out.append(g{k}.send(x * 0 + 1))"] + \
               (self.brk() if self.r.random() < 0.5 else []) + \
               [f"out.append([v.sum() for v in g{k}])"]

    def s_yield_from(self):
        k = self.fresh()
        return [f"out.append(list(adv_outer({self.T()})))", f"out.append(len(ADV_LOG))"]

    def s_iter_arg(self):
        k = self.fresh()
        return [f"it{k} = iter(lst)", f"v{k} = next(it{k}, 0)", f"t{k} = {self.T()} * v{k}"] + \
               (self.brk() if self.r.random() < 0.3 else []) + [f"out.append((t{k}, list(it{k})))"]

    def s_islice(self):
        k = self.fresh()
        return [f"it{k} = iter(range(n + 5))", f"head{k} = list(itertools.islice(it{k}, 2))",
                f"out.append(({self.T()} * sum(head{k}), next(it{k})))"]

    def s_dict_view(self):
        k = self.fresh()
        view = self.r.choice(["keys", "values", "items"])
        return [f"kv{k} = d.{view}()", f'd["k{k}"] = n', f"out.append(len(kv{k}))",
                f"out.append(list(kv{k}))"]

    def s_dict_iter_mutation(self):
        k = self.fresh()
        return ["try:", f"    for key{k} in d:", f'        d[str(key{k}) + "{k}"] = 1',
                "except RuntimeError as e:", "    out.append(str(e))"]

    def s_property(self):
        return [f"ADV_PROP.v = {self.T()}", "out.append(ADV_PROP.v + 1)", "out.append(list(ADV_PROP.log))"]

    def s_descriptor(self):
        return ["try:", "    ADV_CFG.k = n - 2", "except ValueError as e:", "    out.append(str(e))",
                f"out.append(({self.T()} * ADV_CFG.k, sorted(vars(ADV_CFG))))"]

    def s_slots(self):
        k = self.fresh()
        return [f"sl{k} = AdvSlots()", f"sl{k}.a = {self.T()}", "try:", f"    sl{k}.b = 1",
                "except AttributeError as e:", "    out.append(type(e).__name__)", f"out.append(sl{k}.a)"]

    def s_class_swap(self):
        k = self.fresh()
        return [f"o{k} = AdvA()", f"out.append(o{k}.f({self.T()}))", f"o{k}.__class__ = AdvB",
                f"out.append(o{k}.f({self.T()}))"]

    def s_super_classmethod(self):
        return [f"out.append(AdvB.make({self.T()}))"]

    def s_set_display(self):
        k = self.fresh()
        return [f"s{k} = {{n, len(lst)}}", f"s{k}.add(-1)", f"out.append(sorted(s{k}))"]

    def s_data_error(self):
        k = self.fresh()
        kind = self.r.choice(["index", "div"])
        # the error depends on tensor data, so a graph traced on one call's data can fail on the next
        if kind == "index":
            op = "y[(y.sum() > 0).long() * 7]"
            exc = "IndexError"
        else:
            op = "dynjit.arange(3) // (y.sum() > 0).long()"
            exc = "RuntimeError"
        pre = [f"ADV_LOG.append({k})"]
        if self.r.random() < 0.6:
            return pre + ["try:", f"    out.append({op})", f"except {exc} as e:", '    out.append("caught")']
        return pre + [f"out.append({op})"]

    def s_locals(self):
        return ["out.append(sorted(k for k in locals() if not k.startswith('_')))"]

    def s_suppress(self):
        k = self.fresh()
        body = [f"    w{k} = {self.T()} * 2"]
        if self.r.random() < 0.5:
            body += ["    " + b for b in self.brk()]
        body += [f'    w{k} = w{k} + d["missing{k}"]']
        return [f"cm{k} = AdvSuppress()", f"w{k} = x", f"with cm{k}:"] + body + [f"out.append((w{k}, cm{k}.seen))"]

    def s_tensor_op(self):
        k = self.fresh()
        line = (f"t{k} = ({self.T()} * {self.r.choice([0.5, 2, -1])} + {self.T()})"
                f".{self.r.choice(['sin', 'relu', 'tanh', 'abs'])}()")
        self.tensors.append(f"t{k}")
        return [line]

    def s_mask_size(self):
        k = self.fresh()
        # y has the same shape in every call, so a graph traced for one call's data is reused with another's
        return [f"m{k} = y[y > {self.r.choice([0, 0.5])}]", f"out.append(m{k}.shape[0])",
                f"if m{k}.numel() == 0:", '    out.append("empty")', "else:", f"    out.append(m{k}.mean())"]

    def s_hash_count(self):
        k = self.fresh()
        return [f"hk{k} = AdvHashed(n)", f"dd{k} = {{hk{k}: {self.T()}}}", f"out.append(dd{k}[hk{k}] + 1)",
                "out.append(AdvHashed.calls)"]

    def s_nonlocal_closure(self):
        k = self.fresh()
        return [f"acc{k} = [0]", f"cnt{k} = 0", f"def bump{k}(t):", f"    nonlocal cnt{k}", f"    cnt{k} += 1",
                f"    acc{k}[0] = acc{k}[0] + t.sum().item()", f"    return t * cnt{k}",
                f"out.append(bump{k}({self.T()}))"] + self.brk() + \
               [f"out.append(bump{k}({self.T()}))", f"out.append((cnt{k}, round(acc{k}[0], 4)))"]

    def s_user_iterator(self):
        k = self.fresh()
        return [f"ui{k} = AdvCountdown(n + 1)", f"for c{k} in ui{k}:", f"    if c{k} == 1:", "        break",
                f"    out.append({self.T()} * c{k})", f"out.append((ui{k}.n, list(ui{k})))"]

    def s_walrus_match(self):
        k = self.fresh()
        lines = [f"if (w{k} := len(lst)) > 1:", f"    out.append(w{k})"]
        if sys.version_info >= (3, 10):
            lines += ["match lst:", "    case []:", '        out.append("empty")',
                      "    case [a_, *rest_] if a_ > 0:", "        out.append((a_, len(rest_)))",
                      "    case _:", '        out.append("other")']
        return lines

    def s_try_finally_loop(self):
        k = self.fresh()
        return [f"for i{k} in range(3):", "    try:", f"        if i{k} == n % 3:", "            break",
                f"        out.append({self.T()} * i{k})", "    finally:", f'        ADV_LOG.append("f{k}")']

    def s_sorted_key(self):
        k = self.fresh()
        return [f"sk{k} = sorted(lst, key=lambda v: (-v, v % 2))", f"out.append(sk{k})",
                f"out.append(max(lst, default=0, key=abs) * {self.T()})"]

    def s_dataclass(self):
        k = self.fresh()
        return [f"dc{k} = AdvPoint({self.T()}, n)", f"dc{k}b = dataclasses.replace(dc{k}, k=n + 1)",
                f"out.append((dc{k}b.t * dc{k}b.k, dc{k} == dc{k}b, dataclasses.astuple(dc{k})[1]))"]

    def s_dict_alias(self):
        k = self.fresh()
        return [f"ns.__dict__['val'] = ns.val + n", f"out.append({self.T()} * ns.val)",
                f"globals()['G_COUNT'] = G_COUNT + {k}", "out.append(G_COUNT)"]

    def s_gen_dropped(self):
        k = self.fresh()
        return [f"gd{k} = adv_closing_gen({self.T()})", f"out.append(next(gd{k}))", f"del gd{k}",
                "out.append(len(ADV_LOG))"]

    SNIPPETS = ("s_gen_partial", "s_gen_send", "s_yield_from", "s_iter_arg", "s_islice", "s_dict_view",
                "s_dict_iter_mutation", "s_property", "s_descriptor", "s_slots", "s_class_swap",
                "s_super_classmethod", "s_set_display", "s_data_error", "s_locals", "s_suppress",
                "s_tensor_op", "s_tensor_op", "s_mask_size", "s_hash_count", "s_nonlocal_closure",
                "s_user_iterator", "s_walrus_match", "s_try_finally_loop", "s_sorted_key", "s_dataclass",
                "s_dict_alias", "s_gen_dropped")

    def wrapper(self):
        """A function wrapping snippet lines in a try, a loop or a data-dependent if (or not)."""
        c = self.r.random()
        if c < 0.15:
            return lambda lines: ["try:"] + indent(lines) + ["except Exception as e:",
                                                             "    out.append(type(e).__name__)"]
        if c < 0.25:
            return lambda lines: ["for rep in range(2):"] + indent(lines)
        if c < 0.32:
            cond = self.T()     # chosen before the snippet binds new names
            return lambda lines: [f"if {cond}.sum() > 0:"] + indent(lines)
        return None

    def program(self):
        # DYNJIT_FUZZ_ADV_SKIP=s_locals,s_set_display leaves snippets out (to look past known failures)
        skip = set(os.environ.get("DYNJIT_FUZZ_ADV_SKIP", "").split(","))
        snippets = [s for s in self.SNIPPETS if s not in skip] or ["s_tensor_op"]
        body = ["out = []"]
        for _ in range(self.r.randint(2, 6)):
            known = len(self.tensors)
            wrap = self.wrapper()
            lines = getattr(self, self.r.choice(snippets))()
            if wrap is not None:
                lines = wrap(lines)
                del self.tensors[known:]     # names bound inside a try/loop/if may stay unbound
            body += lines
            if self.r.random() < 0.3:
                body += self.brk()
        body.append("return out, " + self.T())
        return ADV_PRELUDE + "\ndef fn(x, y, n, lst, d, obj, ns):\n" + "\n".join(indent(body)) + "\n"


# ---------------------------------------------------------------------------
# Running one program plain and compiled
# ---------------------------------------------------------------------------

_mod_counter = [0]


def load_module(src, tag):
    _mod_counter[0] += 1
    name = f"fuzzprog_{tag}_{_mod_counter[0]}"
    filename = f"/fuzzprog/{name}.py"
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), mod.__dict__)
    return mod


def make_inputs(mod, seed, variant, meta):
    rng = random.Random(seed * 31 + variant)
    dynjit.manual_seed((seed * 7 + variant) % (2 ** 31))
    R = 4 if variant == 1 else 2      # variant 2: variant 0's shapes with other values
    x = dynjit.randn(R, 3)
    y = dynjit.randn(3, 3)
    if meta.get("grad_inputs"):
        x.requires_grad_()
    n = rng.randint(0, 3) + 2 * variant
    lst = [rng.randint(-3, 5) for _ in range(rng.randint(0, 3) + variant)]
    d = {"a": rng.randint(0, 4), "b": 2 + variant}
    obj = (mod.Derived if rng.random() < 0.6 else mod.Base)(rng.randint(0, 3))
    ns = types.SimpleNamespace(out=print, fn=mod.helper_t, brk=dynjit.graph_break, now=time.perf_counter,
                               val=0.5 + variant, tag="ns")
    return (x, y, n, lst, d, obj, ns)


class Ref:
    def __init__(self, i):
        self.i = i

    def __eq__(self, o):
        return isinstance(o, Ref) and o.i == self.i

    def __repr__(self):
        return f"<same object as #{self.i}>"


def normalize(v, memo, depth=0):
    """A comparable picture of v: types, values, and which objects are one object."""
    if depth > 12:
        return ("deep",)
    if v is None or isinstance(v, (bool, int, str)):
        return (type(v).__name__, v)
    if isinstance(v, float):
        return ("float", v)
    if isinstance(v, np.generic):
        return ("np." + type(v).__name__, v.item())
    if isinstance(v, dynjit.Size):
        return ("Size", tuple(v))
    if id(v) in memo:
        return Ref(memo[id(v)][0])
    memo[id(v)] = (len(memo), v)          # keep v alive so ids stay unique
    nd = depth + 1
    if isinstance(v, dynjit.Tensor):
        grad = None
        if v.is_leaf and v.requires_grad:
            grad = normalize(v.grad, memo, nd)
        return ("tensor", str(v.dtype), tuple(v.shape), bool(v.requires_grad), grad,
                np.array(v.detach().numpy(), copy=True))
    if isinstance(v, list):
        return ("list", [normalize(e, memo, nd) for e in v])
    if isinstance(v, tuple):
        return (type(v).__name__, [normalize(e, memo, nd) for e in v])
    if isinstance(v, dict):
        return ("dict", [(normalize(k, memo, nd), normalize(e, memo, nd)) for k, e in v.items()])
    if isinstance(v, (set, frozenset)):
        return ("set", sorted(repr(e) for e in v))
    if isinstance(v, types.FunctionType):
        res = ("function", v.__name__)
        if v.__name__.startswith("inner") and v.__code__.co_argcount == 0:
            try:
                r = v()
            except Exception as e:
                r = ("raised", type(e).__name__, str(e))
            res += (normalize(r, memo, nd),)
        return res
    if isinstance(v, (types.BuiltinFunctionType, types.MethodType)) or callable(v) and not hasattr(v, "__dict__"):
        return ("callable", getattr(v, "__qualname__", type(v).__name__))
    if hasattr(v, "__dict__") and not isinstance(v, type):
        if isinstance(v, __import__("enum").Enum):
            return ("enum", type(v).__name__, v.name)
        if callable(v) and not type(v).__module__.startswith("fuzzprog"):
            return ("callable", type(v).__name__)
        return ("obj", type(v).__name__, [(k, normalize(e, memo, nd)) for k, e in sorted(vars(v).items())])
    if isinstance(v, type):
        return ("class", v.__name__)
    return ("other", type(v).__name__, repr(v)[:80])


def diff(a, b, path="", floats_tol=1e-6):
    """First difference between two normalized pictures, or None."""
    if isinstance(a, Ref) or isinstance(b, Ref):
        if a != b:
            return f"{path}: plain {a!r} / compiled {b if isinstance(b, Ref) else short(b)}" if isinstance(a, Ref) \
                else f"{path}: plain {short(a)} / compiled {b!r}"
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{path}: array vs non-array"
        if a.shape != b.shape:
            return f"{path}: shape {a.shape} vs {b.shape}"
        if a.dtype.kind in "fc":
            if not np.allclose(a, b, rtol=floats_tol, atol=floats_tol, equal_nan=True):
                return f"{path}: values differ: plain {np.array2string(a, precision=4)} / compiled {np.array2string(b, precision=4)}"
        elif not np.array_equal(a, b):
            return f"{path}: values differ: plain {a} / compiled {b}"
        return None
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) >= 1 and len(b) >= 1 and a[0] != b[0]:
            return f"{path}: plain {short(a)} / compiled {short(b)}"
        if a[:1] == ("float",) and b[:1] == ("float",):
            x, y = a[1], b[1]
            if x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=floats_tol, abs_tol=floats_tol):
                return None
            return f"{path}: plain {x!r} / compiled {y!r}"
        if len(a) != len(b):
            return f"{path}: plain {short(a)} / compiled {short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = diff(x, y, path + (f".{a[1]}" if a[0] == "obj" and i == 1 else ""), floats_tol)
            if r:
                return r
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}: plain {short(a)} / compiled {short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            sub = f"{path}[{i}]"
            if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and not isinstance(x[1], list) \
                    and isinstance(y, tuple) and x[0] == y[0] and x[0] not in ("float", "int", "str", "bool", "NoneType",
                                                                                "Size", "function", "callable", "set"):
                sub = f"{path}.{x[0]}"
                r = diff(x[1], y[1], sub, floats_tol)
            else:
                r = diff(x, y, sub, floats_tol)
            if r:
                return r
        return None
    if a != b:
        return f"{path}: plain {short(a)} / compiled {short(b)}"
    return None


def short(v, n=160):
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."


def _through_dynjit(tb):
    """Was the exception raised inside the frontend (not by user code or the tensor library)?"""
    frames = traceback.extract_tb(tb)
    return bool(frames) and frames[-1].filename.startswith(DYNJIT_DIR + os.sep + "frontend")


def _internal_error_types():
    exc = getattr(dynjit, "exc", None)
    t = getattr(exc, "InternalError", None)
    return (t,) if isinstance(t, type) else ()


def run_once(fn, args, mod):
    buf = io.StringIO()
    exc = None
    result = None
    dynjit.set_grad_enabled(True)
    try:
        with contextlib.redirect_stdout(buf):
            result = fn(*args)
    except Exception as e:
        tb = e.__traceback__
        exc = {"type": type(e).__name__, "msg": str(e)[:300],
               "internal": isinstance(e, _internal_error_types()),
               "through_dynjit": _through_dynjit(tb),
               "tb": "".join(traceback.format_exception(type(e), e, tb))[-3000:]}
    grad = dynjit.is_grad_enabled()
    inf = dynjit.is_inference_mode_enabled()
    # leave a clean state for the next call whatever happened
    dynjit.set_grad_enabled(True)
    memo = {}
    with contextlib.redirect_stdout(buf):
        state = {"globals": normalize({k: mod.__dict__.get(k) for k in OBSERVED_GLOBALS}, memo)}
        state["return"] = normalize(result, memo)
        state["inputs"] = normalize(list(args), memo)
        fs = mod.__dict__.get("FACTORY_STATE")
        if fs is not None:
            state["factory_state"] = normalize(fs(), memo)
    return {"state": state, "stdout": buf.getvalue(), "exc": exc, "grad": grad, "inference": inf}


def compare(p, c):
    """(kind, aspect, message) of the first difference, or None."""
    pe, ce = p["exc"], c["exc"]
    if ce and (ce["internal"] or ce["through_dynjit"]) and not (pe and pe["type"] == ce["type"] and pe["msg"] == ce["msg"]):
        return ("internal-error", f"exc:{ce['type']}", f"compiled raised {ce['type']}: {ce['msg']}\n"
                f"(plain: {pe['type'] + ': ' + pe['msg'] if pe else 'no exception'})\n{ce['tb']}")
    if (pe is None) != (ce is None) or pe and (pe["type"] != ce["type"] or pe["msg"] != ce["msg"]):
        pt = f"{pe['type']}: {pe['msg']}" if pe else "no exception"
        ct = f"{ce['type']}: {ce['msg']}" if ce else "no exception"
        return ("exception-mismatch", f"exc:{pe['type'] if pe else None}->{ce['type'] if ce else None}",
                f"plain: {pt}\ncompiled: {ct}" + (f"\ncompiled traceback:\n{ce['tb']}" if ce else ""))
    if p["stdout"] != c["stdout"]:
        return ("mismatch", "stdout", f"stdout differs:\nplain:    {p['stdout'][-400:]!r}\ncompiled: {c['stdout'][-400:]!r}")
    if (p["grad"], p["inference"]) != (c["grad"], c["inference"]):
        return ("mismatch", "grad_mode", f"grad mode after the call: plain grad={p['grad']} inference={p['inference']}"
                f" / compiled grad={c['grad']} inference={c['inference']}")
    for key in ("return", "inputs", "globals", "factory_state"):
        if key not in p["state"] and key not in c["state"]:
            continue
        d = diff(p["state"].get(key), c["state"].get(key), key)
        if d:
            return ("mismatch", key, d)
    return None


# module globals compared after every call (the adversarial family's state objects included)
OBSERVED_GLOBALS = ("G_LIST", "G_DICT", "G_COUNT", "ADV_LOG", "ADV_PROP", "ADV_CFG")

# the adversarial family's calls: also variant 2 (same shapes, other values), so a graph traced on one
# call's data is reused with another's (data-dependent sizes and kernel errors)
ADV_CALLS = (0, 0, 2, 1)

# input variants of the three calls (DYNJIT_FUZZ_CALLS=0,0,2,1 adds a call with the first call's
# shapes and other values to the classic programs too)
CALLS = tuple(int(v) for v in os.environ.get("DYNJIT_FUZZ_CALLS", "0,0,1").split(","))


def check_source(src, seed, meta):
    """Run program text plain and compiled; returns a dict: ok / failure info and stats."""
    np.seterr(all="ignore")
    P = load_module(src, "p")
    C = load_module(src, "c")
    fp = P.fn
    try:
        fc = dynjit.compile(C.fn, backend="eager")
    except Exception as e:
        return {"fail": ("internal-error", "compile", f"dynjit.compile raised {type(e).__name__}: {e}")}
    plain_excs = []
    for call, variant in enumerate(meta.get("calls", CALLS)):
        p = run_once(fp, make_inputs(P, seed, variant, meta), P)
        c = run_once(fc, make_inputs(C, seed, variant, meta), C)
        if p["exc"]:
            plain_excs.append(p["exc"]["type"])
        r = compare(p, c)
        if r:
            return {"fail": (r[0], r[1], f"call {call + 1} (input variant {variant}): {r[2]}"), "plain_excs": plain_excs}
    return {"ok": True, "plain_excs": plain_excs}


def check_seed(seed):
    src, meta = generate(seed)
    return src, meta, check_source(src, seed, meta)


# ---------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------


def worker_main(seeds, out_path):
    import warnings
    warnings.simplefilter("ignore")
    logging_off()
    with open(out_path, "a", buffering=1) as out:
        for seed in seeds:
            out.write(json.dumps({"start": seed}) + "\n")
            t0 = time.perf_counter()
            try:
                src, meta, res = check_seed(seed)
            except Exception as e:     # a bug in the fuzzer itself, or the plain program misbehaving
                res = {"fuzzer_error": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"}
                src, meta = generate(seed)
            res["seed"] = seed
            res["time"] = time.perf_counter() - t0
            if "fail" in res or "fuzzer_error" in res:
                res["source"] = src
                res["meta"] = meta
            out.write(json.dumps(res) + "\n")
            out.flush()


def logging_off():
    """Quiet dynjit's logs, and make internal errors raise (strict mode) in this process."""
    import logging
    if hasattr(dynjit.config, "strict_internal_errors"):
        dynjit.config.strict_internal_errors = True
    logging.getLogger("dynjit").setLevel(logging.CRITICAL)
    logging.getLogger("dynjit").propagate = False


def child_env():
    env = dict(os.environ)
    env["DYNJIT_STRICT"] = "1"
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def _spawn(args, out_path):
    cmd = [sys.executable, "-m", "tests.frontend.program_fuzz"] + args + ["--out", out_path]
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _read_lines(path):
    try:
        with open(path) as f:
            return [json.loads(ln) for ln in f if ln.endswith("\n")]
    except FileNotFoundError:
        return []


def run_seeds(seeds, jobs=2, batch=40, program_timeout=20.0, log=None):
    """Run programs `seeds` in worker processes; returns list of per-program results
    (crashes and hangs included as failures)."""
    pending = collections.deque(seeds[i:i + batch] for i in range(0, len(seeds), batch))
    running = []   # (proc, seeds, path, last_progress_time, nlines)
    results = {}
    tmpdir = tempfile.mkdtemp(prefix="progfuzz")
    counter = 0
    while pending or running:
        while pending and len(running) < jobs:
            b = list(pending.popleft())
            counter += 1
            path = os.path.join(tmpdir, f"b{counter}.jsonl")
            proc = _spawn(["--worker", "--seeds", ",".join(map(str, b))], path)
            running.append([proc, b, path, time.monotonic(), 0])
        time.sleep(0.05)
        for item in list(running):
            proc, b, path, last, nl = item
            lines = _read_lines(path)
            if len(lines) != nl:
                item[3], item[4] = time.monotonic(), len(lines)
            rc = proc.poll()
            hung = rc is None and time.monotonic() - item[3] > program_timeout
            if rc is None and not hung:
                continue
            if hung:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = proc.returncode
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            lines = _read_lines(path)
            running.remove(item)
            done = set()
            started = None
            for ln in lines:
                if "start" in ln:
                    started = ln["start"]
                else:
                    results[ln["seed"]] = ln
                    done.add(ln["seed"])
            if rc != 0 or len(done) < len(b):
                if started is not None and started not in done:
                    src, meta = generate(started)
                    kind = "hang" if hung else ("crash" if rc < 0 else "crash")
                    sig = (f"signal {signal.Signals(-rc).name}" if rc < 0 and not hung else
                           "no progress for %.0fs" % program_timeout if hung else f"exit code {rc}")
                    results[started] = {"seed": started, "fail": (kind, sig, f"worker died: {sig}\n{err[-3000:]}"),
                                        "source": src, "meta": meta}
                    done.add(started)
                rest = [s for s in b if s not in done]
                if rest:
                    pending.appendleft(rest)
            if log:
                log(len(results))
    return [results[s] for s in seeds if s in results]


# ---------------------------------------------------------------------------
# Minimizer
# ---------------------------------------------------------------------------

def _check_in_fork(src, seed, meta, timeout=20.0):
    """Verdict signature (kind, aspect) for program text, run in a forked child."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                res = check_source(src, seed, meta)
            sig = res.get("fail")
            msg = json.dumps(list(sig[:2]) + [sig[2][:4000]] if sig else None)
        except BaseException as e:
            msg = json.dumps(["fuzzer-error", type(e).__name__, str(e)])
        os.write(wfd, msg.encode())
        os.close(wfd)
        os._exit(code)
    os.close(wfd)
    t0 = time.monotonic()
    while True:
        r, status = os.waitpid(pid, os.WNOHANG)
        if r:
            break
        if time.monotonic() - t0 > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(rfd)
            return ["hang", "no progress for %.0fs" % timeout, ""]
        time.sleep(0.005)
    data = b""
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(rfd)
    if os.WIFSIGNALED(status):
        return ["crash", f"signal {signal.Signals(os.WTERMSIG(status)).name}", ""]
    return json.loads(data.decode()) if data else ["crash", f"exit code {os.WEXITSTATUS(status)}", ""]


def _bodies(tree):
    """Every statement list in the generated part, outermost first."""
    out = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            val = getattr(node, field, None)
            if isinstance(val, list) and val and isinstance(val[0], (ast.stmt, ast.excepthandler)) \
                    and field != "handlers":
                out.append((node, field))
    return out


def minimize(src, seed, meta, target, max_checks=300, time_limit=120.0):
    """Delete statements (and unwrap compound ones) while the failure keeps its signature `target`."""
    gen_src = src[len(PRELUDE):] if src.startswith(PRELUDE) else src
    prelude = PRELUDE if src.startswith(PRELUDE) else ""
    tree = ast.parse(gen_src)
    checks = [0]
    t0 = time.monotonic()

    def still_fails(t):
        if checks[0] >= max_checks or time.monotonic() - t0 > time_limit:
            return False
        try:
            s = ast.unparse(t)
            compile(s, "<min>", "exec")
        except Exception:
            return False
        checks[0] += 1
        v = _check_in_fork(prelude + s + "\n", seed, meta)
        return v is not None and failure_signature({"fail": v}) == target

    import copy
    progress = True
    while progress and checks[0] < max_checks and time.monotonic() - t0 < time_limit:
        progress = False
        bodies = _bodies(tree)
        for bi in range(len(bodies)):
            bodies = _bodies(tree)
            if bi >= len(bodies):
                break
            node, field = bodies[bi]
            lst = getattr(node, field)
            i = len(lst) - 1
            while i >= 0:
                stmt = lst[i]
                cands = []
                new = lst[:i] + lst[i + 1:]
                cands.append(new if new or field in ("orelse", "finalbody") else [ast.Pass()])
                for sub in ("body", "orelse"):
                    inner = getattr(stmt, sub, None)
                    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)) and inner:
                        cands.append(lst[:i] + inner + lst[i + 1:])
                if isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.Tuple, ast.Dict)):
                    n_el = len(stmt.value.elts) if isinstance(stmt.value, ast.Tuple) else len(stmt.value.keys)
                    for j in range(n_el):
                        s2 = copy.deepcopy(stmt)
                        if isinstance(s2.value, ast.Tuple):
                            del s2.value.elts[j]
                        else:
                            del s2.value.keys[j]
                            del s2.value.values[j]
                        cands.append(lst[:i] + [s2] + lst[i + 1:])
                for cand in cands:
                    setattr(node, field, cand)
                    if still_fails(tree):
                        lst = cand
                        progress = True
                        break
                    setattr(node, field, lst)
                i = min(i - 1, len(lst) - 1)
        # drop unused helper functions / try finalbody-less cleanup handled by compile check
    return prelude_trim(prelude) + ast.unparse(tree) + "\n", checks[0]


def prelude_trim(prelude):
    return prelude


def minimize_main(in_path, out_path):
    import warnings
    warnings.simplefilter("ignore")
    logging_off()
    with open(in_path) as f:
        job = json.load(f)
    src, n = minimize(job["source"], job["seed"], job["meta"], job["target"],
                      max_checks=job.get("max_checks", 300), time_limit=job.get("time_limit", 120))
    verdict = _check_in_fork(src, job["seed"], job["meta"])
    with open(out_path, "w") as f:
        json.dump({"source": src, "checks": n, "verdict": verdict}, f)


def run_minimize(failures, max_checks=300, time_limit=120.0, jobs=2):
    """Minimize failure dicts (from run_seeds) in subprocesses, `jobs` at a time;
    returns a list of (source, verdict)."""
    tmp = tempfile.mkdtemp(prefix="progfuzzmin")
    todo = collections.deque(enumerate(failures))
    running = []
    out = [(f["source"], None) for f in failures]
    while todo or running:
        while todo and len(running) < max(jobs, 1):
            i, failure = todo.popleft()
            inp = os.path.join(tmp, f"in{i}.json")
            outp = os.path.join(tmp, f"out{i}.json")
            with open(inp, "w") as f:
                json.dump({"source": failure["source"], "seed": failure["seed"], "meta": failure["meta"],
                           "target": failure_signature(failure), "max_checks": max_checks,
                           "time_limit": time_limit}, f)
            running.append((i, _spawn(["--minimize", inp], outp), outp, time.monotonic()))
        time.sleep(0.05)
        for item in list(running):
            i, p, outp, t0 = item
            if p.poll() is None:
                if time.monotonic() - t0 < time_limit + 120:
                    continue
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            running.remove(item)
            try:
                with open(outp) as f:
                    r = json.load(f)
                out[i] = (r["source"], r["verdict"])
            except Exception:
                pass
    return out


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

def _norm_msg(m):
    m = re.sub(r"0x[0-9a-f]+", "0x..", m)
    m = re.sub(r"fuzzprog_[pc]_\d+", "fuzzprog", m)
    m = re.sub(r"\b(g|inner|k|t|f|L|D|O|C|H|o|lam|w|i|j|s|e|err|wg|loss)\d+\b", r"\1N", m)
    m = re.sub(r"\d+", "N", m)
    m = re.sub(r"local '\w+'", "local '?'", m)
    return m


def failure_signature(res):
    """Failures grouped by kind, aspect and (for internal errors) the inner error message."""
    kind, aspect, msg = res["fail"]
    extra = ""
    if kind == "internal-error":
        m = re.search(r"(?:InternalError|compiled raised \w+): (.*)", msg)
        if m:
            inner = m.group(1)
            inner = re.sub(r"^dynjit failed while compiling \S+ \([^)]*\): ", "", inner)
            extra = " " + _norm_msg(inner)[:110]
    elif kind == "exception-mismatch":
        m = re.search(r"compiled: (.*)", msg)
        if m:
            extra = " " + _norm_msg(m.group(1))[:80]
    return f"{kind} [{aspect}]{extra}"


def strip_prelude(src):
    return src[len(PRELUDE):] if src.startswith(PRELUDE) else src


def format_failure(res, minimized=None, verdict=None):
    kind, aspect, msg = res["fail"]
    msg = msg.strip()
    if len(msg) > 2500:
        msg = msg[:700] + "\n[...]\n" + msg[-1800:]
    out = [f"### {kind} [{aspect}] seed={res['seed']} meta={res.get('meta')}", "", "```", msg, "```"]
    if minimized is not None:
        out += ["minimized program (after the standard prelude, see program_fuzz.PRELUDE):", "```python",
                strip_prelude(minimized).strip(), "```"]
        if verdict and verdict[2]:
            v = verdict[2].strip()
            if len(v) > 1500:
                v = v[:500] + "\n[...]\n" + v[-1000:]
            out += ["minimized verdict:", "```", v, "```"]
    else:
        out += ["program (after the prelude):", "```python", strip_prelude(res["source"]).strip(), "```"]
    return "\n".join(out)


def fuzz(n, seed, jobs=2, batch=40, minimize_per_class=1, min_checks=200, min_time=90.0, verbose=True,
         program_timeout=20.0, max_minimized=None):
    """Run n programs from seed; returns (results, failures, report_text)."""
    seeds = list(range(seed, seed + n))
    t0 = time.monotonic()
    last = [0.0]

    def log(k):
        if verbose and time.monotonic() - last[0] > 5:
            last[0] = time.monotonic()
            print(f"  {k}/{n} programs, {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)

    results = run_seeds(seeds, jobs=jobs, batch=batch, program_timeout=program_timeout, log=log)
    failures = [r for r in results if "fail" in r]
    fuzzer_errors = [r for r in results if "fuzzer_error" in r]
    groups = collections.OrderedDict()
    for r in failures:
        groups.setdefault(failure_signature(r), []).append(r)
    plain_excs = collections.Counter(e for r in results for e in r.get("plain_excs", []))
    lines = [f"# program_fuzz: {n} programs from seed {seed} on Python {sys.version.split()[0]}: "
             f"{len(failures)} failing, {len(fuzzer_errors)} fuzzer errors, {time.monotonic() - t0:.0f}s", "",
             f"plain-run exceptions (per call): {dict(plain_excs.most_common())}",
             "replay one program: python -m tests.frontend.program_fuzz --check SEED", ""]
    chosen = [(sig, r) for sig, rs in groups.items()
              for r in sorted(rs, key=lambda r: len(r["source"]))[:minimize_per_class]][:max_minimized]
    if minimize_per_class and min_checks:
        minimized = run_minimize([r for _, r in chosen], max_checks=min_checks, time_limit=min_time, jobs=jobs)
    else:
        minimized = [(None, None)] * len(chosen)
    for sig, rs in groups.items():
        lines.append(f"## {sig}: {len(rs)} programs (seeds {', '.join(str(r['seed']) for r in rs[:12])}"
                     f"{' ...' if len(rs) > 12 else ''})")
        for (sig2, r), (src, verdict) in zip(chosen, minimized):
            if sig2 == sig:
                lines.append(format_failure(r, src, verdict))
        lines.append("")
    for r in fuzzer_errors[:5]:
        lines += [f"## fuzzer error seed={r['seed']}", "```", r["fuzzer_error"], "```"]
    return results, failures, "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", choices=("classic", "adv"), default="classic",
                    help="adv: the adversarial family (its seeds are ADV_SEED_BASE + seed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--minimize-per-class", type=int, default=1)
    ap.add_argument("--min-checks", type=int, default=200)
    ap.add_argument("--report", default=None, help="write the markdown report here")
    ap.add_argument("--json", default=None, help="write all failures (with sources) here as JSON lines")
    ap.add_argument("--show", type=int, default=None, help="print the program of this seed")
    ap.add_argument("--check", type=int, default=None, help="run the program of this seed, print the verdict")
    ap.add_argument("--check-file", default=None, help="run a program file (prelude included or not), --seed for inputs")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seeds", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--minimize", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker_main([int(s) for s in a.seeds.split(",")], a.out)
        return 0
    if a.minimize:
        minimize_main(a.minimize, a.out)
        return 0
    if a.show is not None:
        print(strip_prelude(generate(a.show)[0]))
        return 0
    if a.check is not None or a.check_file:
        logging_off()
        if a.check_file:
            with open(a.check_file) as f:
                src = f.read()
            if not src.startswith(PRELUDE):
                src = PRELUDE + src
            seed, meta = a.seed, {}
        else:
            seed = a.check
            src, meta = generate(seed)
        res = check_source(src, seed, meta)
        print(strip_prelude(src))
        print(json.dumps(res, indent=1) if "fail" not in res else "\n".join(map(str, res["fail"])))
        return 0 if "fail" not in res else 1
    if a.family == "adv":
        a.seed += ADV_SEED_BASE
    results, failures, report = fuzz(a.n, a.seed, jobs=a.jobs, batch=a.batch,
                                     minimize_per_class=a.minimize_per_class, min_checks=a.min_checks)
    print(report)
    if a.report:
        with open(a.report, "w") as f:
            f.write(report)
    if a.json:
        with open(a.json, "w") as f:
            for r in failures:
                f.write(json.dumps(r) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
