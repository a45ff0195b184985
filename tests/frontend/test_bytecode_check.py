"""bytecode_check.verify: real code verifies, broken code is rejected with a clear message,
and every code object dynjit generates at a graph break verifies."""
import collections
import contextlib
import dis
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import types
import warnings

import pytest
from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd

import dynjit
from dynjit.frontend import bytecode_check
from dynjit.frontend.bytecode_check import InvalidBytecode, verify

V = sys.version_info[:2]
PY311 = V == (3, 11)
PY312_PLUS = V >= (3, 12)
PY313 = V >= (3, 13)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---------------------------------------------------------------------------
# (a) real code verifies
# ---------------------------------------------------------------------------

G = 3


def f_loops(n, xs):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        while total < i:
            total += 1
            if total > 100:
                break
        else:
            total -= 1
    for a, (b, c) in zip(xs, xs):
        total += a
    return total


def f_comprehensions(xs, ys):
    sq = [x * x for x in xs if x]
    pairs = {x: y for x, y in zip(xs, ys)}
    uniq = {x % 3 for x in xs}
    gen = sum(x for x in xs)
    nested = [[x + y for y in ys] for x in xs]
    x = 5                                   # shadowed by the comprehension variable
    again = [x for x in xs]
    return sq, pairs, uniq, gen, nested, x, again


def f_maybe_bound_comprehension(flag, xs):
    if flag:
        x = 1
    ys = [x for x in xs]
    try:
        return x, ys
    except UnboundLocalError:
        return None


def f_cell_shadowed_by_comprehension(shapes):
    pairs = [(i, s) for i, s in enumerate(shapes) if s]
    s = 0
    return any(s + i for i in range(3)), pairs


def f_with(path, lock):
    with lock:
        x = 1
    with lock as a, lock as b:
        x += 1
        if a:
            return x
    return x


def f_try(x):
    try:
        y = 1 / x
    except ZeroDivisionError as e:
        y = str(e)
    except (TypeError, ValueError):
        y = None
    else:
        y = y * 2
    finally:
        x = 0
    try:
        try:
            raise KeyError(x)
        finally:
            x += 1
    except KeyError:
        pass
    return y, x


def f_try_return_in_finally(x):
    for i in range(3):
        try:
            if i == x:
                return i
        finally:
            x += 1
    return x


def f_closures(a):
    b = a + 1

    def inner(c):
        nonlocal b
        b += c
        return a + b

    lam = lambda d: d * b  # noqa: E731
    return inner(2) + lam(3), b


def f_methods(obj, items):
    items.append(obj)
    items.extend([1, 2])
    s = "x".join(str(i) for i in items)
    d = {}
    d.setdefault("k", []).append(s)
    return s.upper().lower(), d.get("k")


def f_kwargs(f, *args, **kwargs):
    r = f(1, 2, key=3, *args, **kwargs)
    r2 = f(*args)
    r3 = f(**kwargs)
    r4 = sorted(args, key=lambda v: -v, reverse=True)
    r5 = dict(a=1, **kwargs)
    return r, r2, r3, r4, r5


def f_star(a, b=2, *rest, c, d=4, **kw):
    first, *middle, last = (a, b, *rest)
    return first, middle, last, c, d, kw, [*rest, *kw], {**kw, "c": c}


def f_match(cmd):
    match cmd:
        case ["go", direction]:
            return direction
        case {"x": x, "y": y, **rest}:
            return x + y, rest
        case int(n) | float(n) if n > 0:
            return n
        case str() as s:
            return s
        case [1, 2, *others]:
            return others
        case Point(x=0, y=yy):
            return yy
        case None:
            return None
        case _:
            return "other"


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5

    @property
    def twice(self):
        return Point(self.x * 2, self.y * 2)

    def __repr__(self):
        return f"Point({self.x!r}, {self.y:>3}, {self.norm():.2f})"


class Child(Point):
    def __init__(self, x, y, z):
        super().__init__(x, y)
        self.z = z

    def norm(self):
        return super().norm() + abs(self.z)


def f_globals_and_dels(v):
    global G
    G = v
    del v
    v = G
    x = [1, 2, 3]
    del x[0]
    x[0] += 1
    x[1:2] = [7]
    return v, x[::-1], x[1:], x[:-1]


def f_generator(n):
    for i in range(n):
        got = yield i
        if got:
            yield from range(got)
    return n


def f_conditional_expressions(a, b):
    c = a if a > b else b
    d = a and b or c
    e = not (a is None) and b is not None
    f = a in (1, 2) or b not in [3]
    g = -a + ~b if isinstance(a, int) else +b
    assert c is not None, "never"
    return c, d, e, f, g, 1 < a <= 10


def f_unpack_and_aug(seq):
    a, b, *c = seq
    a += 1
    b *= 2
    b //= 3
    b **= 2
    b <<= 1
    b |= 4
    b @ b if hasattr(b, "__matmul__") else None
    return a, b, c


def f_big_unpack(seq):
    (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, c0, c1, c2, c3, c4,
     c5, c6, c7, c8, c9, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, e0, e1, e2, e3, e4, e5, e6, e7, e8, e9,
     f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, g0, g1, g2, g3, g4, g5, g6, g7, g8, g9) = seq
    return (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + b0 + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8
            + b9 + c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + d0 + d1 + d2 + d3 + d4 + d5 + d6
            + d7 + d8 + d9 + e0 + e1 + e2 + e3 + e4 + e5 + e6 + e7 + e8 + e9 + f0 + f1 + f2 + f3 + f4
            + f5 + f6 + f7 + f8 + f9 + g0 + g1 + g2 + g3 + g4 + g5 + g6 + g7 + g8 + g9)


def f_import():
    import math
    from os import path as p
    return math.sqrt(4), p.sep


def f_many_locals(a):
    v0 = a; v1 = v0 + 1; v2 = v1 + 1; v3 = v2 + 1; v4 = v3 + 1; v5 = v4 + 1  # noqa: E702
    v6 = v5 + 1; v7 = v6 + 1; v8 = v7 + 1; v9 = v8 + 1; v10 = v9 + 1; v11 = v10 + 1  # noqa: E702
    v12 = v11 + 1; v13 = v12 + 1; v14 = v13 + 1; v15 = v14 + 1; v16 = v15 + 1  # noqa: E702
    v17 = v16 + 1; v18 = v17 + 1; v19 = v18 + 1; v20 = v19 + 1  # noqa: E702
    return v20 + v0 + v10 + v19


async def f_async(x):        # compiled only, never awaited
    async with x as y:
        async for z in y:
            await z
    return [w async for w in x]


def _big_function_source(n=60):
    """A long function (EXTENDED_ARG jumps, many constants, names and locals)."""
    lines = ["def big(a, b, c):", "    acc = []"]
    for i in range(n):
        lines.append(f"    v{i} = a.m{i}(b, {i}, k={i}.5) if c else [y + {i} for y in b]")
        lines.append(f"    if v{i} is None: acc.append(g{i}(v{i}, *b, **c))")
    lines += ["    try:", "        for q in a:", "            with c:", "                b = q * 2",
              "    except ValueError as e:", "        return e", "    finally:", "        print(a)",
              "    return acc"]
    return "\n".join(lines) + "\n"


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _sample_functions():
    fns = [f_loops, f_comprehensions, f_maybe_bound_comprehension, f_cell_shadowed_by_comprehension,
           f_with, f_try, f_try_return_in_finally, f_closures, f_methods, f_kwargs, f_star, f_match,
           Point.__init__, Point.norm, Point.twice.fget, Point.__repr__, Child.__init__, Child.norm,
           f_globals_and_dels, f_generator, f_conditional_expressions, f_unpack_and_aug, f_import,
           f_many_locals, f_big_unpack, f_async]
    return fns


def _sample_codes():
    codes = []
    for fn in _sample_functions():
        codes += list(_code_objects(fn.__code__))
    codes += list(_code_objects(compile(_big_function_source(), "<big>", "exec")))
    with open(__file__) as f:
        codes += list(_code_objects(compile(f.read(), __file__, "exec")))
    return codes


@pytest.mark.parametrize("fn", _sample_functions(), ids=lambda fn: fn.__qualname__)
def test_real_functions_verify(fn):
    for code in _code_objects(fn.__code__):
        verify(code)


def test_big_function_with_extended_args_verifies():
    codes = list(_code_objects(compile(_big_function_source(150), "<big>", "exec")))
    assert any(i.opname == "EXTENDED_ARG" for c in codes for i in dis.get_instructions(c))
    for code in codes:
        verify(code)


_STDLIB_MODULES = ("json.decoder", "argparse", "dataclasses", "asyncio.base_events", "typing",
                   "enum", "inspect", "pathlib", "collections", "functools", "re._parser",
                   "email.message", "ast", "tokenize", "difflib", "statistics", "textwrap",
                   "contextlib", "logging", "zipfile")


@pytest.mark.parametrize("modname", _STDLIB_MODULES)
def test_stdlib_modules_verify(modname):
    spec = importlib.util.find_spec(modname)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        pytest.skip(f"no source for {modname}")
    with open(spec.origin, encoding="utf-8") as f:
        top = compile(f.read(), spec.origin, "exec")
    n = 0
    for code in _code_objects(top):
        verify(code)
        n += 1
    assert n >= 1


def test_decoder_matches_dis():
    """The verifier reads co_code itself (fast); it must see what dis sees."""
    for code in _sample_codes():
        recs, prefixes = bytecode_check._decode(code)
        insts = [i for i in dis.get_instructions(code) if i.opname not in ("EXTENDED_ARG", "CACHE")]
        assert [(r[5], r[7]) for r in recs] == [(i.offset, i.opname) for i in insts], code
        for rec, inst in zip(recs, insts):
            if inst.opcode in dis.hasjrel:
                assert rec[9] == inst.argval, (code, inst)
            elif inst.arg is not None and rec[8] is not None:
                assert rec[8] == inst.arg, (code, inst)
        assert prefixes == [i.offset for i in dis.get_instructions(code) if i.opname == "EXTENDED_ARG"]


def test_version_table_agrees_with_dis_stack_effect():
    """Pushes derived from dis.stack_effect are never negative, and the explicit NULL-aware
    rules move the depth exactly as dis.stack_effect says (3.11 PRECALL/CALL: together)."""
    table = bytecode_check._TABLE
    checked = 0
    for op, entry in enumerate(table):
        if entry is None:
            continue
        name, rule, has_arg, *_ = entry
        for arg in ((None,) if not has_arg else range(0, 40)):
            if name == "BUILD_SLICE" and arg not in (2, 3) or name == "EXTENDED_ARG":
                continue
            res = bytecode_check._resolve(op, arg)
            form, a, b, c = res[1], res[2], res[3], res[4]
            if res[10] is not None:          # an argument the rule itself rejects
                continue
            effect = dis.stack_effect(op, arg, jump=False)
            if form == bytecode_check._G:
                assert a >= 0 and len(b) - a == effect, (name, arg)
                assert c is None or len(c) - a == dis.stack_effect(op, arg, jump=True), (name, arg)
            elif form == bytecode_check._PUSH and name == "RETURN_GENERATOR":
                # the resumed generator has the sent value pushed (3.11/3.12's dis says 0)
                assert len(b) == 1 and effect in (0, 1)
            elif form == bytecode_check._PUSH:
                assert len(b) - a == effect, (name, arg)
            elif form == bytecode_check._CALL and name not in ("PRECALL", "CALL") or \
                    form == bytecode_check._CALL and not PY311:
                assert 1 - a == effect, (name, arg)
            elif name == "CALL" and PY311:
                precall = dis.stack_effect(dis.opmap["PRECALL"], arg)
                assert 1 - a == effect + precall, (name, arg)
            checked += 1
    assert checked > 500


def test_every_version_is_listed_explicitly():
    assert set(bytecode_check._VERSIONS) == {(3, 11), (3, 12), (3, 13)}


def test_unsupported_version_is_rejected(monkeypatch):
    monkeypatch.setattr(bytecode_check, "_TABLE", None)
    with pytest.raises(InvalidBytecode, match="unsupported Python version"):
        verify(f_loops.__code__)


# ---------------------------------------------------------------------------
# (b) broken code is rejected
# ---------------------------------------------------------------------------

def make(instrs, argnames=("a",), stacksize=10, varnames=(), **kw):
    """A code object from `bytecode` instructions, with no sanity checks by `bytecode`."""
    bc = Bytecode(list(instrs))
    bc.name = "broken"
    bc.argnames = list(argnames)
    bc.argcount = len(argnames)
    kw.setdefault("compute_exception_stack_depths", False)
    return bc.to_code(stacksize=stacksize, check_pre_and_post=False, **kw)


def run(code, *args):
    return types.FunctionType(code, {"len": len})(*args)


POP_JUMP_IF_FALSE = "POP_JUMP_FORWARD_IF_FALSE" if PY311 else "POP_JUMP_IF_FALSE"


def call(n):
    """Instructions that call with n arguments (3.11: PRECALL + CALL)."""
    return ([Instr("PRECALL", n)] if PY311 else []) + [Instr("CALL", n)]


def push_null_and(instrs):
    """Push a NULL and the callable pushed by `instrs`, in the running version's layout."""
    return instrs + [Instr("PUSH_NULL")] if PY313 else [Instr("PUSH_NULL")] + instrs


def method_load(name):
    """Load obj.name (obj = argument a) in method form: NULL|meth, self|attr on the stack."""
    if PY311:
        return [Instr("LOAD_FAST", "a"), Instr("LOAD_METHOD", name)]
    return [Instr("LOAD_FAST", "a"), Instr("LOAD_ATTR", (True, name))]


RET_NONE = [Instr("LOAD_CONST", None), Instr("RETURN_VALUE")]


def rejected(code, pattern):
    with pytest.raises(InvalidBytecode) as info:
        verify(code)
    assert re.search(pattern, str(info.value)), str(info.value)
    assert re.search(r"offset \d+ [A-Z_]+", str(info.value)) or "exception table" in str(info.value)
    return str(info.value)


def test_well_formed_calls_verify():
    codes = [
        # global call: LOAD_GLOBAL with its NULL bit
        make([Instr("LOAD_GLOBAL", (True, "len")), Instr("LOAD_FAST", "a"), *call(1), Instr("RETURN_VALUE")]),
        # explicit PUSH_NULL in the version's layout
        make(push_null_and([Instr("LOAD_CONST", len)]) + [Instr("LOAD_FAST", "a"), *call(1),
                                                        Instr("RETURN_VALUE")]),
        # method call: NULL|meth, self|attr
        make(method_load("count") + [Instr("LOAD_CONST", 1), *call(1), Instr("RETURN_VALUE")]),
        # CALL_FUNCTION_EX with its NULL slot
        make(push_null_and([Instr("LOAD_CONST", len)]) + [Instr("LOAD_FAST", "a"), Instr("BUILD_TUPLE", 1),
                                                        Instr("CALL_FUNCTION_EX", 0), Instr("RETURN_VALUE")]),
    ]
    for code in codes:
        verify(code)
        if code.co_name:
            assert code.co_name == "broken"
    assert run(codes[0], ["x", "y"]) == 2 and run(codes[1], "abc") == 3
    assert run(codes[2], [1, 1]) == 2 and run(codes[3], "ab") == 2


def test_null_into_build_tuple_is_rejected():
    code = make([Instr("PUSH_NULL"), Instr("LOAD_CONST", 1), Instr("BUILD_TUPLE", 2), Instr("RETURN_VALUE")])
    msg = rejected(code, r"BUILD_TUPLE: an operand \(stack slot 2 from the top\) is NULL")
    assert msg.startswith("broken: offset ")


def test_pop_top_of_a_null_is_rejected():
    rejected(make([Instr("PUSH_NULL"), Instr("POP_TOP"), *RET_NONE]), r"POP_TOP: .* is NULL")


def test_swap_moves_the_null():
    code = make([Instr("PUSH_NULL"), Instr("LOAD_CONST", 1), Instr("SWAP", 2), Instr("POP_TOP"),
                 Instr("POP_TOP"), *RET_NONE])
    rejected(code, r"POP_TOP: .* is NULL")
    # the NULL below, popped after the value: still a NULL popped by POP_TOP
    code = make([Instr("PUSH_NULL"), Instr("LOAD_CONST", 1), Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE])
    rejected(code, r"offset \d+ POP_TOP: .* is NULL")


def test_copy_of_a_null_is_rejected():
    rejected(make([Instr("PUSH_NULL"), Instr("COPY", 1), *RET_NONE]), r"COPY: the copied slot .* is NULL")


def test_null_in_an_argument_slot_is_rejected():
    code = make([Instr("LOAD_GLOBAL", (True, "len")), Instr("PUSH_NULL"), *call(1), Instr("RETURN_VALUE")])
    rejected(code, r"(PRECALL|CALL): an argument .* is NULL")


def test_null_in_the_callable_slot_is_rejected():
    # the other version's layout: NULL where this version expects the callable
    if PY313:
        instrs = [Instr("PUSH_NULL"), Instr("LOAD_CONST", len)]
    else:
        instrs = [Instr("LOAD_CONST", len), Instr("PUSH_NULL")]
    code = make(instrs + [Instr("LOAD_FAST", "a"), *call(1), Instr("RETURN_VALUE")])
    rejected(code, r"CALL: the callable.* is NULL")


def test_stack_underflow_is_rejected():
    rejected(make([Instr("POP_TOP"), *RET_NONE]), r"POP_TOP: stack underflow")
    rejected(make([Instr("LOAD_CONST", 1), Instr("BUILD_TUPLE", 3), Instr("RETURN_VALUE")]),
             r"BUILD_TUPLE: stack underflow: pops 3 from a stack of depth 1")
    rejected(make([Instr("LOAD_CONST", len), *call(1), Instr("RETURN_VALUE")]), r"stack underflow")
    rejected(make([Instr("SWAP", 2), *RET_NONE]), r"SWAP: stack underflow")


def test_depth_above_stacksize_is_rejected():
    code = make([Instr("LOAD_CONST", 1), Instr("LOAD_CONST", 2), Instr("BUILD_TUPLE", 2),
                 Instr("RETURN_VALUE")], stacksize=1)
    rejected(code, r"exceeds co_stacksize 1")


def test_depth_mismatch_at_a_join_is_rejected():
    join = Label()
    code = make([Instr("LOAD_FAST", "a"), Instr(POP_JUMP_IF_FALSE, join), Instr("LOAD_CONST", 1),
                 join, *RET_NONE])
    rejected(code, r"stack depth mismatch at a join")


def _count_args(*args):
    return len(args)


def test_kinds_merge_to_maybe_null_at_a_join():
    """NULL on one path, a value on the other: fine for a call's NULL slot, not for POP_TOP."""
    other, join = Label(), Label()
    first = [Instr("LOAD_FAST", "a"), Instr(POP_JUMP_IF_FALSE, other)]
    with_null = push_null_and([Instr("LOAD_CONST", _count_args)])
    with_self = [Instr("LOAD_CONST", _count_args), Instr("LOAD_CONST", "self")]
    body = with_null + [Instr("JUMP_FORWARD", join), other] + with_self + [join]
    ok = make(first + body + [Instr("LOAD_CONST", "xyz"), *call(1), Instr("RETURN_VALUE")])
    verify(ok)
    assert run(ok, True) == 1 and run(ok, False) == 2
    bad = make(first + body + [Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE])
    rejected(bad, r"POP_TOP: .* is (a maybe-)?NULL")      # whichever path is walked first
    # the value path alone reaches POP_TOP as maybe-NULL once merged: a join after a value
    # on both inputs stays a value
    both = first + with_self + [Instr("JUMP_FORWARD", join), other] + with_self + [join]
    verify(make(both + [Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE]))


def test_jump_to_a_non_instruction_is_rejected():
    target = Label()
    code = make([Instr("JUMP_FORWARD", target), target, Instr("LOAD_GLOBAL", (False, "len")),
                 Instr("RETURN_VALUE")])
    verify(code)
    raw = bytearray(code.co_code)
    jumps = [i for i in dis.get_instructions(code) if i.opname == "JUMP_FORWARD"]
    assert len(jumps) == 1 and jumps[0].arg == 0
    raw[jumps[0].offset + 1] = 1         # into LOAD_GLOBAL's inline cache
    rejected(code.replace(co_code=bytes(raw)), r"JUMP_FORWARD: jump target \d+ is not an instruction offset")
    raw[jumps[0].offset + 1] = 100       # past the end
    rejected(code.replace(co_code=bytes(raw)), r"jump target \d+ is not an instruction offset")


def test_falling_off_the_end_is_rejected():
    rejected(make([Instr("LOAD_CONST", 1), Instr("POP_TOP")]), r"falls off the end")


def test_unknown_opcode_is_rejected():
    # an opcode number the interpreter does not define at all: a specialized one would do
    # too, but a code object holding one corrupts memory on 3.11 (never build those)
    undefined = [op for op in range(1, 256) if dis._all_opname[op].startswith("<")]
    assert undefined and all(bytecode_check._TABLE[op] is None for op in undefined)
    code = make(RET_NONE)
    offset = next(i.offset for i in dis.get_instructions(code) if i.opname == "LOAD_CONST")
    raw = bytearray(code.co_code)
    raw[offset] = undefined[0]
    rejected(code.replace(co_code=bytes(raw)), r"unknown opcode")
    # the instrumented opcodes (3.12+) are real opcodes but never in a code object's co_code
    for name in ("INSTRUMENTED_LINE", "ENTER_EXECUTOR"):
        op = dis.opmap.get(name)
        assert op is None or bytecode_check._TABLE[op] is None


def test_return_with_values_left_on_the_stack_is_rejected():
    rejected(make([Instr("LOAD_CONST", 1), *RET_NONE]), r"RETURN_VALUE: returns with 1 values left")


def test_load_fast_of_an_unbound_local():
    plain = make([Instr("LOAD_FAST", "x"), Instr("RETURN_VALUE")])
    checked = make([Instr("LOAD_FAST_CHECK" if PY312_PLUS else "LOAD_FAST", "x"), Instr("RETURN_VALUE")])
    verify(checked)
    if PY311:
        verify(plain)                   # 3.11's LOAD_FAST raises UnboundLocalError itself
    else:
        rejected(plain, r"LOAD_FAST: local 'x' may be unbound here")
    verify(make([Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE")]))     # an argument is bound


def test_load_fast_of_a_local_bound_on_one_path_only():
    skip = Label()
    instrs = [Instr("LOAD_FAST", "a"), Instr(POP_JUMP_IF_FALSE, skip), Instr("LOAD_CONST", 1),
              Instr("STORE_FAST", "x"), skip, Instr("LOAD_FAST", "x"), Instr("RETURN_VALUE")]
    if PY311:
        verify(make(instrs))
    else:
        rejected(make(instrs), r"local 'x' may be unbound")
    # bound on both paths: fine
    both = [Instr("LOAD_CONST", 0), Instr("STORE_FAST", "x")] + instrs
    verify(make(both))
    # DELETE_FAST unbinds
    deleted = [Instr("LOAD_CONST", 0), Instr("STORE_FAST", "x"), Instr("DELETE_FAST", "x"),
               Instr("LOAD_FAST", "x"), Instr("RETURN_VALUE")]
    if not PY311:
        rejected(make(deleted), r"local 'x' may be unbound")


@pytest.mark.skipif(not PY312_PLUS, reason="LOAD_FAST_AND_CLEAR is 3.12+")
def test_load_fast_and_clear():
    # saved and restored: fine, and the local is not definitely bound afterwards
    restore = [Instr("LOAD_FAST_AND_CLEAR", "x"), Instr("STORE_FAST", "x")]
    verify(make(restore + RET_NONE))
    rejected(make(restore + [Instr("LOAD_FAST", "x"), Instr("RETURN_VALUE")]), r"local 'x' may be unbound")
    # a maybe-NULL consumed by anything else
    rejected(make([Instr("LOAD_FAST_AND_CLEAR", "x"), Instr("BUILD_TUPLE", 1), Instr("RETURN_VALUE")]),
             r"BUILD_TUPLE: an operand .* is a maybe-NULL")
    rejected(make([Instr("LOAD_FAST_AND_CLEAR", "x"), Instr("RETURN_VALUE")]),
             r"RETURN_VALUE: .* is a maybe-NULL")
    # of a bound local it is a value
    verify(make([Instr("LOAD_FAST_AND_CLEAR", "a"), Instr("RETURN_VALUE")]))


def test_method_load_maybe_null_consumed_by_a_non_call_is_rejected():
    code = make(method_load("count") + [Instr("BUILD_TUPLE", 2), Instr("RETURN_VALUE")])
    rejected(code, r"BUILD_TUPLE: an operand .* is a maybe-NULL")


def test_load_global_null_position():
    # the NULL of LOAD_GLOBAL's low bit: below the value on 3.11/3.12, above it on 3.13
    code = make([Instr("LOAD_GLOBAL", (True, "len")), Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE])
    rejected(code, r"offset \d+ POP_TOP: .* is NULL")
    try:
        verify(code)
    except InvalidBytecode as e:
        first_pop = [i.offset for i in dis.get_instructions(code) if i.opname == "POP_TOP"][0]
        assert (f"offset {first_pop} POP_TOP" in str(e)) == PY313


def test_exception_handler_deeper_than_the_stack_is_rejected():
    handler = Label()
    try_begin = TryBegin(handler, push_lasti=False, stack_depth=2)
    code = make([try_begin, Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE"), TryEnd(try_begin),
                 handler, Instr("POP_TOP"), *RET_NONE], compute_exception_stack_depths=False)
    rejected(code, r"below the depth 2 of its exception handler")
    ok_begin = TryBegin(handler, push_lasti=False, stack_depth=0)
    ok = make([ok_begin, Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE"), TryEnd(ok_begin),
               handler, Instr("POP_TOP"), *RET_NONE], compute_exception_stack_depths=False)
    verify(ok)


def test_exception_handler_pops_what_the_table_says():
    """The handler starts with depth + 1 (+ 2 with lasti): popping more underflows."""
    handler = Label()
    tb = TryBegin(handler, push_lasti=False, stack_depth=0)
    code = make([tb, Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE"), TryEnd(tb),
                 handler, Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE], compute_exception_stack_depths=False)
    rejected(code, r"POP_TOP: stack underflow")
    tb = TryBegin(handler, push_lasti=True, stack_depth=0)
    verify(make([tb, Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE"), TryEnd(tb),
                 handler, Instr("POP_TOP"), Instr("POP_TOP"), *RET_NONE], compute_exception_stack_depths=False))


@pytest.mark.skipif(not PY312_PLUS, reason="3.12+ FOR_ITER skips the END_FOR at its target")
def test_for_iter_must_jump_to_end_for():
    def loop(end):
        top, done = Label(), Label()
        tail = [Instr("END_FOR")] + ([Instr("POP_TOP")] if PY313 else []) if end else [Instr("NOP")]
        return make([Instr("LOAD_FAST", "a"), Instr("GET_ITER"), top, Instr("FOR_ITER", done),
                     Instr("POP_TOP"), Instr("JUMP_BACKWARD", top), done, *tail, *RET_NONE])
    verify(loop(True))
    rejected(loop(False), r"FOR_ITER: jump target \d+ is NOP, not END_FOR")


def test_bad_indexes_are_rejected():
    code = make([Instr("LOAD_CONST", 7), Instr("RETURN_VALUE")])
    raw = bytearray(code.co_code)
    off = next(i.offset for i in dis.get_instructions(code) if i.opname == "LOAD_CONST")
    raw[off + 1] = 200
    rejected(code.replace(co_code=bytes(raw)), r"LOAD_CONST: const index 200 out of range")
    code = make([Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE")])
    raw = bytearray(code.co_code)
    off = next(i.offset for i in dis.get_instructions(code) if i.opname == "LOAD_FAST")
    raw[off + 1] = 9
    rejected(code.replace(co_code=bytes(raw)), r"LOAD_FAST: local index 9 out of range")


# ---------------------------------------------------------------------------
# (c) every code object dynjit generates at a graph break verifies
# ---------------------------------------------------------------------------

class _Recorder:
    """Patches Bytecode.to_code: every code object built is verified and recorded."""

    def __init__(self):
        self.codes = []
        self.rejected = []

    def __enter__(self):
        self._orig = orig = Bytecode.to_code
        recorder = self

        @functools.wraps(orig)
        def to_code(bc, *args, **kwargs):
            code = orig(bc, *args, **kwargs)
            recorder.codes.append(code)
            try:
                verify(code)
            except InvalidBytecode as e:
                recorder.rejected.append(f"{e}\n{_dis(code)}")
            return code

        Bytecode.to_code = to_code
        return self

    def __exit__(self, *exc):
        Bytecode.to_code = self._orig


def _dis(code):
    import io
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


class VerifyAllPlugin:
    """A pytest plugin (for a child pytest): record every generated code object."""

    def __init__(self, out_path):
        self.out_path = out_path
        self.recorder = _Recorder()

    def pytest_sessionstart(self, session):
        self.recorder.__enter__()

    def pytest_sessionfinish(self, session, exitstatus):
        self.recorder.__exit__(None, None, None)
        with open(self.out_path, "w") as f:
            json.dump({"codes": len(self.recorder.codes), "rejected": self.recorder.rejected}, f)


def _helper_break(t):
    print("break")
    return t + 1


def _kw_target(a, b=1, *, c=2):
    return a * b + c


class _Obj:
    def __init__(self):
        self.n = 1

    def method(self, t, k=1):
        return t * k + self.n


def _break_programs():
    x = dynjit.ones(3)

    def in_call_args(x):
        return _kw_target(x + 1, _helper_break(x), c=x.sum())

    def in_method_args(x):
        o = _Obj()
        return o.method(x * 2, k=_helper_break(x).sum())

    def in_loop(x):
        for i in range(3):
            x = x + i
            print(i)
        return x

    def in_while(x):
        n = 0
        while n < 3:
            print("tick")
            n += 1
        return x * n

    def in_with(x):
        with dynjit.no_grad():
            y = x * 2
            print("in with")
            z = y + 1
        return z

    def data_dependent(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    def closure(x):
        k = 2

        def inner(t):
            return t * k

        y = inner(x)
        print("closure")
        return inner(y) + k

    def comprehension(x):
        ys = [x * i for i in range(3)]
        print(len(ys))
        return sum(ys)

    def star_args(x, *rest, **kw):
        print("star")
        return x + len(rest) + len(kw)

    def tuple_build(x):
        return (x + 1, print("mid"), x * 2)

    def nested_calls(x):
        return max(1, min(2, _helper_break(x).sum().item()), abs(-3))

    fns = [(in_call_args, (x,)), (in_method_args, (x,)), (in_loop, (x,)), (in_while, (x,)),
           (in_with, (x,)), (data_dependent, (x,)), (data_dependent, (-x,)), (closure, (x,)),
           (comprehension, (x,)), (star_args, (x, 1, 2)), (tuple_build, (x,)), (nested_calls, (x,))]
    return fns


def test_generated_code_of_graph_breaks_verifies(capsys):
    with _Recorder() as rec:
        for fn, args in _break_programs():
            compiled = dynjit.compile(fn, backend="eager")
            with contextlib.suppress(Exception):     # a dynjit failure elsewhere is not ours
                compiled(*args)
    assert not rec.rejected, "\n\n".join(rec.rejected)
    assert len(rec.codes) >= 10


_GRAPH_BREAK_TEST_FILES = ("test_graph_breaks.py", "test_read_before_write.py", "test_programs.py",
                           "test_frontend_fuzz.py", "test_modules.py", "test_autograd_function.py",
                           "test_register_hook_compiled.py", "test_translator.py", "test_opcodes.py")


def test_generated_code_of_the_frontend_suite_verifies(tmp_path):
    """Run the frontend tests that break graphs in a child pytest recording every generated
    code object; their own pass/fail is theirs, every code object must verify."""
    out = tmp_path / "verified.json"
    files = [os.path.join(HERE, f) for f in _GRAPH_BREAK_TEST_FILES if os.path.exists(os.path.join(HERE, f))]
    script = textwrap.dedent(f"""
        import sys, pytest
        sys.path.insert(0, {HERE!r})
        import test_bytecode_check as m
        sys.exit(pytest.main({files!r} + ["-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                                          "-m", "not slow"], plugins=[m.VerifyAllPlugin({str(out)!r})]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert not result["rejected"], "\n\n".join(result["rejected"])
    assert result["codes"] >= 20, (result, proc.stdout[-2000:])


def test_resume_inside_a_with_block_keeps_the_handler_depth():
    """Regression: a resume function entered inside a `with` block got its handler depth from
    `bytecode` (the minimum depth in the region: 2) instead of the original's (1), so the
    handler would call the wrong object as __exit__ and return with a value left on the
    stack (the verifier rejected it: "returns with 1 values left on the stack")."""
    def fn(x):
        with dynjit.no_grad():
            return {"r0": x, "r1": float(x.sum())}

    with _Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")          # "internal error ... runs uncompiled"
        dynjit.compile(fn, backend="eager")(dynjit.ones(3))
    assert rec.codes
    assert not rec.rejected, "\n\n".join(rec.rejected)
