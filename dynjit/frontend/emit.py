"""Every difference between the supported Pythons in *emitting* bytecode, in one
place: how a callable and its NULL are pushed, how a NULL is dropped, the form
of LOAD_ATTR and of `+`. resume.py builds graph-break code only from these."""
from bytecode import Instr, BinaryOp

from .bytecode_info import VERSION


def push_callable(const):
    """Push a constant callable with the NULL that CALL's calling convention expects."""
    if VERSION == (3, 13):
        return [Instr("LOAD_CONST", const), Instr("PUSH_NULL")]
    if VERSION in ((3, 11), (3, 12)):
        return [Instr("PUSH_NULL"), Instr("LOAD_CONST", const)]
    raise NotImplementedError(f"emitting bytecode for Python {VERSION}")


def call(argc):
    """A CALL of `argc` positional arguments (3.11 needs its PRECALL)."""
    if VERSION == (3, 11):
        return [Instr("PRECALL", argc), Instr("CALL", argc)]
    return [Instr("CALL", argc)]


def with_null(push_value):
    """`push_value` (instructions that push one value) with the NULL that CALL expects
    beside a callable loaded as LOAD_GLOBAL with its NULL bit does."""
    if VERSION == (3, 13):
        return push_value + [Instr("PUSH_NULL")]
    return [Instr("PUSH_NULL")] + push_value


def _nothing():
    return None


def discard_null():
    """Pop a NULL off the stack: POP_TOP cannot, but a call of a no-op function consumes it."""
    if VERSION == (3, 13):        # [NULL] -> [nothing, NULL]: callable below, NULL as self
        return [Instr("LOAD_CONST", _nothing), Instr("SWAP", 2)] + call(0) + [Instr("POP_TOP")]
    return [Instr("LOAD_CONST", _nothing)] + call(0) + [Instr("POP_TOP")]


def drop_nulls(null_slots):
    """Instructions removing the NULLs at `null_slots` from the stack, other values kept in order."""
    out = []
    removed = 0
    for from_top, is_null in enumerate(reversed(null_slots)):
        if is_null:
            out += [Instr("SWAP", j) for j in range(2, from_top + 2 - removed)]
            out += discard_null()
            removed += 1
    return out


def load_attr(name, location=None):
    """A plain (not method-form) attribute load."""
    if VERSION == (3, 11):
        return Instr("LOAD_ATTR", name, location=location)
    return Instr("LOAD_ATTR", (False, name), location=location)


def binary_add():
    return Instr("BINARY_OP", BinaryOp.ADD)


def plain_method_load(instr):
    """A method-form load run natively at a graph break, with a stack shape known statically.

    LOAD_METHOD (3.11) and method-form LOAD_ATTR / LOAD_SUPER_ATTR (3.12, 3.13) push
    either [method, self] or [NULL, attribute], which generated code cannot tell apart (a
    NULL cannot be tested, passed or packed). Emitted as the plain load (a bound method,
    called the same way) plus an explicit NULL where CALL expects it. LOAD_GLOBAL with the
    NULL bit always pushes its NULL. Returns (instructions, which of the two pushed slots
    is NULL), or None if `instr` is none of these."""
    name, arg, loc = instr.name, instr.arg, instr.location
    null_first = VERSION in ((3, 11), (3, 12))     # [NULL, callable]; 3.13: [callable, NULL]
    layout = [True, False] if null_first else [False, True]
    if name == "LOAD_GLOBAL" and isinstance(arg, tuple) and arg[0]:
        return [instr.copy()], layout
    if VERSION == (3, 11) and name == "LOAD_METHOD":
        plain = Instr("LOAD_ATTR", arg, location=loc)
    elif VERSION != (3, 11) and name == "LOAD_ATTR" and isinstance(arg, tuple) and arg[0]:
        plain = Instr("LOAD_ATTR", (False, arg[1]), location=loc)
    elif name == "LOAD_SUPER_ATTR" and isinstance(arg, tuple) and arg[0]:
        plain = Instr("LOAD_SUPER_ATTR", (False,) + tuple(arg[1:]), location=loc)
    else:
        return None
    if null_first:
        return [plain, Instr("PUSH_NULL"), Instr("SWAP", 2)], layout
    return [plain, Instr("PUSH_NULL")], layout
