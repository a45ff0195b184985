"""Bytecode for graph breaks, generated with the `bytecode` package.

At a graph break before instruction i of a frame, the transformed function
(Python source, see codegen.py) runs the graph, rebuilds the stack and the
live locals, and calls a *break function*: a small code object that pushes
the rebuilt stack, runs instruction i natively, and calls a *resume
function* with the resulting stack and the locals. A resume function is the
original code with a prologue that pushes its stack arguments and jumps to
the instruction after i; it goes through the JIT in turn, so the rest of the
frame is traced into its own graph. A conditional jump at i gets two resume
functions, one per target.
"""
import dis
import inspect
import sys

from bytecode import Bytecode, Instr, Label, BinaryOp, CellVar

from .bytecode_info import PY313

STACK_PREFIX = "___stack"
_CALLS = ("CALL", "CALL_KW", "CALL_FUNCTION_EX", "PRECALL")
_PSEUDO_SKIP = ("EXTENDED_ARG", "CACHE")


def _abstract(code):
    """The code's abstract instructions, and for each dis instruction its position in that list."""
    bc = Bytecode.from_code(code)
    items = list(bc)
    positions = [k for k, item in enumerate(items) if isinstance(item, Instr)]
    dis_insts = [i for i in dis.get_instructions(code) if i.opname not in _PSEUDO_SKIP]
    if len(positions) != len(dis_insts):
        raise NotImplementedError("cannot align this code's instructions for a graph break")
    return bc, items, positions, dis_insts


def _prefix_end(items):
    """Index just after the first RESUME (cell creation and free-var copying stay before it)."""
    for k, item in enumerate(items):
        if isinstance(item, Instr) and item.name == "RESUME":
            return k + 1
    return 0


def _push_callable(const):
    if PY313:
        return [Instr("LOAD_CONST", const), Instr("PUSH_NULL")]
    return [Instr("PUSH_NULL"), Instr("LOAD_CONST", const)]


def _load(name, cellvars):
    return Instr("LOAD_DEREF", CellVar(name)) if name in cellvars else Instr("LOAD_FAST", name)


def _discard_null():
    """Pop a NULL off the stack: POP_TOP cannot, but a call of a no-op function consumes it."""
    if PY313:
        return [Instr("LOAD_CONST", _nothing), Instr("SWAP", 2), Instr("CALL", 0), Instr("POP_TOP")]
    return [Instr("LOAD_CONST", _nothing), Instr("CALL", 0), Instr("POP_TOP")] if sys.version_info >= (3, 12) \
        else [Instr("LOAD_CONST", _nothing), Instr("PRECALL", 0), Instr("CALL", 0), Instr("POP_TOP")]


def _nothing():
    return None


def _drop_nulls(null_slots):
    """Instructions removing the NULLs at `null_slots` from the stack, other values kept in order."""
    out = []
    removed = 0
    for from_top, is_null in enumerate(reversed(null_slots)):
        if is_null:
            out += [Instr("SWAP", j) for j in range(2, from_top + 2 - removed)]
            out += _discard_null()
            removed += 1
    return out


def _call_resume(resume, null_slots, live, cellvars=(), tmp=STACK_PREFIX):
    """Instructions: call resume(*stack without NULLs, *live locals) and return its result."""
    out = _drop_nulls(null_slots)
    out += [Instr("BUILD_TUPLE", null_slots.count(False)), Instr("STORE_FAST", tmp)]
    out += _push_callable(resume)
    out += [Instr("LOAD_FAST", tmp)]
    out += [_load(name, cellvars) for name in live]
    out += [Instr("BUILD_TUPLE", len(live)), Instr("BINARY_OP", BinaryOp.ADD),
            Instr("CALL_FUNCTION_EX", 0), Instr("RETURN_VALUE")]
    return out


_SUPERINSTRUCTIONS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}


def _split_superinstructions(items):
    """3.13's two-local instructions, as two plain ones.

    Their packed argument holds two 4-bit local indexes; a generated code
    object has more locals than the original (the stack arguments come
    first), and `bytecode` packs an index of 16 or more without complaint,
    which silently reads the wrong local. Plain instructions have no limit.
    """
    out = []
    for item in items:
        names = _SUPERINSTRUCTIONS.get(getattr(item, "name", None))
        if names is None:
            out.append(item)
            continue
        for opname, arg in zip(names, item.arg):
            out.append(Instr(opname, arg, location=item.location))
    return out


def _finish(bc, items):
    bc.extend(_split_superinstructions(items) if PY313 else items)
    return bc.to_code()


def _new_like(code, name, argnames):
    bc = Bytecode()
    src = Bytecode.from_code(code)
    bc.name = name
    bc.qualname = name
    bc.filename = code.co_filename
    bc.first_lineno = code.co_firstlineno
    bc.argnames = list(argnames)
    bc.argcount = len(argnames)
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.cellvars = list(src.cellvars)
    bc.freevars = list(src.freevars)
    bc.flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR)
    return bc


def index_of_offset(code, offset):
    """Position of the instruction at `offset` among the code's real instructions."""
    _, _, _, dis_insts = _abstract(code)
    for k, inst in enumerate(dis_insts):
        if inst.offset == offset:
            return k
    raise ValueError(f"no instruction at offset {offset}")


def stack_prefix(code):
    """A name prefix for stack arguments that no local of `code` uses (resume functions nest)."""
    n = 0
    while any(v.startswith(f"{STACK_PREFIX}{n}_") for v in code.co_varnames):
        n += 1
    return f"{STACK_PREFIX}{n}_"


def resume_code(code, dis_index, null_slots, live):
    """The original code entered at dis instruction `dis_index` with the given stack.

    Each stack slot is an argument, except NULLs of pending calls, which the
    prologue pushes itself (a NULL cannot be passed).
    """
    bc, items, positions, _ = _abstract(code)
    prefix = stack_prefix(code)
    stack_args = [f"{prefix}{k}" for k, is_null in enumerate(null_slots) if not is_null]
    # locals become parameters: names that are not identifiers (pytest's rewritten asserts
    # use `@py_assert1`) are renamed, or the function's signature could not be read
    renames = {n: f"___local{k}_{prefix}" for k, n in enumerate(live) if not n.isidentifier()}
    if renames:
        items = [_renamed(item, renames) for item in items]
    live = [renames.get(n, n) for n in live]
    new = _new_like(code, f"__resume_at_{dis_index}_{_base_name(code)}", stack_args + list(live))
    target = Label()
    start = _prefix_end(items)
    body = list(items)
    body.insert(positions[dis_index], target)
    prologue = [Instr("PUSH_NULL") if is_null else Instr("LOAD_FAST", f"{prefix}{k}")
                for k, is_null in enumerate(null_slots)]
    prologue.append(Instr("JUMP_FORWARD", target))
    return _finish(new, body[:start] + prologue + body[start:])


_LOCAL_OPS = ("LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR",
              "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST")


def _renamed(item, renames):
    if not isinstance(item, Instr) or item.name not in _LOCAL_OPS:
        return item
    arg = tuple(renames.get(a, a) for a in item.arg) if isinstance(item.arg, tuple) else renames.get(item.arg, item.arg)
    if arg == item.arg:
        return item
    return Instr(item.name, arg, location=item.location)


def _base_name(code):
    """The user's function name under any resume-function prefixes."""
    name = code.co_name
    while name.startswith("__resume_at_"):
        name = name[len("__resume_at_"):].split("_", 1)[1]
    return name


def null_slots_after(inst, null_slots, jump):
    """Which slots of the stack after `inst` hold NULLs (those below what it consumed)."""
    below = list(null_slots[:len(null_slots) - consumed_by(inst)])
    return below + [False] * (stack_depth_after(inst, len(null_slots), jump) - len(below))


def stack_depth_after(inst, depth, jump):
    """Stack depth after `inst` runs (for the instructions a break can happen at)."""
    name, arg = inst.opname, inst.arg
    if name == "CALL":
        return depth - (arg + 2) + 1
    if name == "CALL_KW":
        return depth - (arg + 3) + 1
    if name == "CALL_FUNCTION_EX":
        return depth - (3 + (arg & 1)) + 1
    return depth + dis.stack_effect(inst.opcode, arg, jump=jump)


# instructions that only push: a break at one (3.13 turns LOAD_CLOSURE into LOAD_FAST of the
# cell) leaves every slot below it, a NULL of a pending call included, where it was
_PUSH_ONLY = frozenset(("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
                        "LOAD_CLOSURE", "LOAD_DEREF", "LOAD_CONST", "LOAD_SMALL_INT", "LOAD_GLOBAL",
                        "LOAD_NAME", "PUSH_NULL", "LOAD_ASSERTION_ERROR", "LOAD_BUILD_CLASS"))


def consumed_by(inst):
    name, arg = inst.opname, inst.arg
    if name in _PUSH_ONLY:
        return 0
    if name == "CALL":
        return arg + 2
    if name == "CALL_KW":
        return arg + 3
    if name == "CALL_FUNCTION_EX":
        return 3 + (arg & 1)
    return max(1, -dis.stack_effect(inst.opcode, arg, jump=False))


def break_code(code, dis_index, null_slots, live, make_resume):
    """Code for: push the stack, run instruction `dis_index` natively, then resume.

    `null_slots[k]` says stack slot k holds the NULL of a pending call (pushed
    with PUSH_NULL, not passed as an argument). `make_resume(target_dis_index,
    null_slots_after)` returns the callable to resume with.
    """
    bc, items, positions, dis_insts = _abstract(code)
    inst = dis_insts[dis_index]
    depth = len(null_slots)
    prefix = stack_prefix(code)
    stack_args = [f"{prefix}{k}" for k in range(depth) if not null_slots[k]]
    new = _new_like(code, f"__break_at_{dis_index}_{code.co_name}", stack_args + list(live))
    start = _prefix_end(items)
    body = [item for item in items[:start]]
    body += [Instr("PUSH_NULL") if null_slots[k] else Instr("LOAD_FAST", f"{prefix}{k}")
             for k in range(depth)]
    # instructions that must travel with the breaking one (3.11 PRECALL, KW_NAMES)
    first = dis_index
    while first > 0 and dis_insts[first - 1].opname in ("PRECALL", "KW_NAMES"):
        first -= 1
    for k in range(first, dis_index):
        body.append(items[positions[k]].copy())
    original = items[positions[dis_index]]
    if inst.opname == "RETURN_VALUE" or inst.opname == "RETURN_CONST":
        body.append(original.copy())
    elif "JUMP" in inst.opname and isinstance(original.arg, Label):
        taken = Label()
        # the taken branch is placed after this instruction: 3.11's backward jumps become forward ones
        jump = Instr(original.name.replace("_BACKWARD_", "_FORWARD_"), taken)
        body.append(jump)
        after = null_slots_after(inst, null_slots, jump=False)
        body += _call_resume(make_resume(dis_index + 1, after), after, live, new.cellvars, prefix + "all")
        body.append(taken)
        target_index = _dis_index_of(items, positions, original.arg)
        after_jump = null_slots_after(inst, null_slots, jump=True)
        body += _call_resume(make_resume(target_index, after_jump), after_jump, live, new.cellvars, prefix + "all")
    else:
        body.append(original.copy())
        after = null_slots_after(inst, null_slots, jump=False)
        body += _call_resume(make_resume(dis_index + 1, after), after, live, new.cellvars, prefix + "all")
    return _finish(new, body)


def _dis_index_of(items, positions, label):
    k = items.index(label)
    for j, pos in enumerate(positions):
        if pos > k:
            return j
    raise ValueError("jump target not found")


_ = sys


def in_try_block(code, offset):
    """True if `offset` is protected by a try/except/finally handler (not just a `with` block).

    A native instruction run at a break would escape that handler, so no break is made there.
    """
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return True
    insts = {i.offset: i for i in dis.get_instructions(code)}
    for entry in parse(code):
        if entry.start <= offset < entry.end:
            handler = [insts[o].opname for o in sorted(insts) if o >= entry.target][:4]
            if "WITH_EXCEPT_START" not in handler:
                return True
    return False
