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

Both are always generated from the *original* code object, parsed once
(bytecode_info.CodeInfo.abstract): a break inside a resume function maps back
to the original instruction (`origin`), so n breaks cost n resume functions
of the original's size, and resume functions are shared per (code, offset,
stack shape, live locals) whatever path reached them.

The frame's own cells (co_cellvars) travel between these functions as cell
objects, in arguments named `___cell_<name>`; the generated code reads and
writes them through `cell_contents`, so a closure made before a break sees
the writes made after it. Generated code keeps the user's function name and
line numbers, so a traceback through it reads like the plain one. Every code
object is checked by bytecode_check.verify before it is returned.
"""
import dis
import inspect
import types
import weakref

from bytecode import Bytecode, Instr, Label, CellVar, FreeVar, TryBegin, TryEnd

from . import emit
from .frame_view import GlobalLookup, FRAME_BUILTINS
from .bytecode_check import verify
from .bytecode_info import code_info, loop_ranges, _NO_FALLTHROUGH
from .source import local_name

STACK_PREFIX = "___stack"
CELL_PREFIX = "___cell_"


class _CodeMap:
    """A mapping keyed by generated code objects, by identity, holding them weakly: an entry
    goes when its code object is freed (equal code objects are distinct keys)."""

    def __init__(self):
        self._items = {}      # id(code) -> (weak reference, value)

    def __setitem__(self, code, value):
        key = id(code)
        items = self._items

        def gone(ref, key=key):
            item = items.get(key)
            if item is not None and item[0] is ref:
                del items[key]
        items[key] = (weakref.ref(code, gone), value)

    def get(self, code, default=None):
        item = self._items.get(id(code))
        if item is None or item[0]() is not code:
            return default
        return item[1]

    def __len__(self):
        return len(self._items)


# generated code -> (original code, {generated offset: original real-instruction index})
_origin = _CodeMap()


_labels = _CodeMap()


def label(code):
    """What a generated code object is, for debug views (it carries the user's own name)."""
    return _labels.get(code, code.co_qualname)


def origin(code):
    """(original code, offset map) of a generated code object; (code, None) for an original."""
    return _origin.get(code, (code, None))


def original_index(code, offset):
    """(original code, index among its real instructions) of the instruction at `offset`."""
    orig, offsets = origin(code)
    if offsets is None:
        return code, code_info(code).real_index(offset)
    index = offsets.get(offset)
    if index is None:
        raise NotImplementedError("a graph break inside generated prologue code")
    return orig, index


def cell_arg(name):
    return CELL_PREFIX + name


def _prefix_end(items):
    """Index just after the first RESUME (cell creation and free-var copying stay before it)."""
    for k, item in enumerate(items):
        if isinstance(item, Instr) and item.name == "RESUME":
            return k + 1
    return 0


def _var_name(arg):
    if isinstance(arg, (CellVar, FreeVar)):
        return arg.name
    return arg if isinstance(arg, str) else None


_SUPERINSTRUCTIONS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}

_LOCAL_OPS = ("LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR")


def _new_cell_into(var, loc):
    """MAKE_CELL inside the body (a PEP 709 comprehension's own cell): a new empty cell."""
    return emit.push_callable(types.CellType) + emit.call(0) + [Instr("STORE_FAST", cell_arg(var), location=loc)]


def _rewrite(instr, cellvars, renames, prologue=False):
    """The generated form of one original instruction, as a list of instructions.

    3.13's two-local instructions are split: their packed argument holds two 4-bit local
    indexes, and a generated code object has more locals than the original. An access to
    one of the frame's own cells goes through the cell object passed in `___cell_<name>`.
    Locals whose names are not identifiers are renamed (see resume_code)."""
    name = instr.name
    loc = instr.location
    parts = _SUPERINSTRUCTIONS.get(name)
    if parts is not None:
        out = []
        for opname, arg in zip(parts, instr.arg):
            out += _rewrite(Instr(opname, arg, location=loc), cellvars, renames)
        return out
    var = _var_name(instr.arg)
    if var in cellvars:
        # the cell variable's slot is `___cell_<name>`, holding its cell as CPython's slot does; a
        # comprehension inlined by PEP 709 (3.12+) that reuses the name saves the cell with
        # LOAD_FAST_AND_CLEAR, uses the slot for its own values or a new cell, and restores it
        load_cell = Instr("LOAD_FAST", cell_arg(var), location=loc)
        if name == "MAKE_CELL":
            return [] if prologue else _new_cell_into(var, loc)    # prologue: cells are arguments
        if name in ("LOAD_CLOSURE", "LOAD_FAST", "LOAD_FAST_CHECK"):   # the slot (cell or value)
            return [load_cell]
        if name in ("STORE_FAST", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"):
            return [Instr(name, cell_arg(var), location=loc)]
        if name == "LOAD_DEREF":
            return [load_cell, emit.load_attr("cell_contents", loc)]
        if name == "STORE_DEREF":
            return [load_cell, Instr("STORE_ATTR", "cell_contents", location=loc)]
        if name == "DELETE_DEREF":
            return [load_cell, Instr("DELETE_ATTR", "cell_contents", location=loc)]
        raise NotImplementedError(f"{name} of the cell {var!r} in a graph break")
    if renames and name in _LOCAL_OPS and var in renames:
        return [Instr(name, renames[var], location=loc)]
    return [instr.copy()]


class _Builder:
    """A generated code object under construction: instructions, and for each the original
    instruction it stands for (so a later break inside it maps back to the original)."""

    def __init__(self, code, argnames, label):
        self.code = code
        self.label = label
        self.items = []
        self.origin_of = {}
        self.argnames = list(argnames)

    def add(self, instrs, orig_index=None):
        for instr in instrs:
            if orig_index is not None and isinstance(instr, Instr):
                self.origin_of[id(instr)] = orig_index
            self.items.append(instr)

    def finish(self):
        code = self.code
        bc = Bytecode()
        bc.name = code.co_name
        bc.qualname = code.co_qualname
        bc.filename = code.co_filename
        bc.first_lineno = code.co_firstlineno
        bc.argnames = self.argnames
        bc.argcount = len(self.argnames)
        bc.posonlyargcount = 0
        bc.kwonlyargcount = 0
        bc.cellvars = []
        bc.freevars = list(code.co_freevars)
        bc.flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR)
        self.items = _drop_dead_code(_frame_view_globals(self.items, code))
        bc.extend(self.items)
        # exception-table depths are the original's (every region comes from it), never recomputed
        new = bc.to_code(compute_exception_stack_depths=False)
        verify(new)
        instrs = [item for item in self.items if isinstance(item, Instr)]
        real = [i for i in dis.get_instructions(new) if i.opname not in ("EXTENDED_ARG", "CACHE")]
        if len(real) != len(instrs):
            raise NotImplementedError("generated code does not align with its instructions")
        _origin[new] = (code, {inst.offset: self.origin_of.get(id(instr))
                               for inst, instr in zip(real, instrs)})
        _labels[new] = self.label
        return new


def _frame_view_globals(items, code):
    """`items` with each load of the global `locals` or `vars` done through a GlobalLookup
    (see frame_view.py), so that the generated code, run plain, shows the original frame's
    variables. The lookup is a call: the name is still resolved when the code runs."""
    out = []
    for item in items:
        if not isinstance(item, Instr) or item.name != "LOAD_GLOBAL":
            out.append(item)
            continue
        arg = item.arg
        name = arg[1] if isinstance(arg, tuple) else arg      # 3.11+: (with NULL, name)
        if name not in FRAME_BUILTINS:
            out.append(item)
            continue
        with_null = isinstance(arg, tuple) and arg[0]
        load = emit.push_callable(GlobalLookup(name, code)) + emit.call(0)
        if with_null:
            load = emit.with_null(load)
        for instr in load:
            instr.location = item.location
        out += load
    return out


def _drop_dead_code(items):
    """`items` without the instructions no path from the entry reaches (a resume function
    jumps over the code before its target) and without try regions left with none: the
    `bytecode` package gives a region it cannot reach a placeholder depth."""
    labels = {id(item): k for k, item in enumerate(items) if isinstance(item, Label)}
    ends = {id(item.entry): k for k, item in enumerate(items) if isinstance(item, TryEnd)}
    regions = [(k, ends.get(id(item), len(items)), labels[id(item.target)])
               for k, item in enumerate(items) if isinstance(item, TryBegin)]
    reachable = set()
    work = [0]
    while work:
        while work:
            k = work.pop()
            while k < len(items) and k not in reachable:
                reachable.add(k)
                item = items[k]
                if isinstance(item, Instr):
                    if isinstance(item.arg, Label):
                        work.append(labels[id(item.arg)])
                    if item.name in _NO_FALLTHROUGH:
                        break
                k += 1
        for begin, end, handler in regions:       # a handler is live if its region has live code
            if handler not in reachable and any(k in reachable for k in range(begin, end)):
                work.append(handler)
    live_regions = {id(items[begin]) for begin, end, _ in regions
                    if any(isinstance(items[k], Instr) and k in reachable for k in range(begin, end))}
    out = []
    for k, item in enumerate(items):
        if isinstance(item, Instr) and k not in reachable:
            continue
        if isinstance(item, TryBegin) and id(item) not in live_regions:
            continue
        if isinstance(item, TryEnd) and id(item.entry) not in live_regions:
            continue
        out.append(item)
    return out


def _body(info, renames, start, end=None, label_at=None):
    """The original instructions items[start:end], rewritten, with `label_at` = (index of a real
    instruction, label) placed just before that instruction."""
    items, positions, _ = info.abstract()
    cellvars = info.cellvars
    index_of_position = {pos: k for k, pos in enumerate(positions)}
    prologue_end = _prefix_end(items)
    out = []
    for p in range(start, len(items) if end is None else end):
        item = items[p]
        k = index_of_position.get(p)
        if label_at is not None and k == label_at[0]:
            out.append((label_at[1], None))
        if isinstance(item, Instr):
            for instr in _rewrite(item, cellvars, renames, prologue=p < prologue_end):
                out.append((instr, k))
        else:
            out.append((item, None))
    return out


def _add_all(builder, pairs):
    for item, k in pairs:
        builder.add([item], k)


def _prologue_items(info):
    """The original's prologue up to RESUME, without MAKE_CELL (cells arrive as arguments)."""
    items, _, _ = info.abstract()
    return items[:_prefix_end(items)]


def stack_prefix(code):
    """A name prefix for stack arguments that no local of `code` uses."""
    n = 0
    while any(v.startswith(f"{STACK_PREFIX}{n}_") for v in code.co_varnames):
        n += 1
    return f"{STACK_PREFIX}{n}_"


def _push_stack(prefix, null_slots):
    return [Instr("PUSH_NULL") if is_null else Instr("LOAD_FAST", f"{prefix}{k}")
            for k, is_null in enumerate(null_slots)]


def self_first(code):
    """Zero-argument super() reads the frame's first local as `self` (3.11 at run time; the
    translator does the same), so generated code of a method using it takes that argument
    first, before the stack."""
    return "__class__" in code.co_freevars and code.co_argcount > 0


def _split_lead(code, live):
    if self_first(code) and live and live[0] == code.co_varnames[0]:
        return list(live[:1]), list(live[1:])
    return [], list(live)


def _renames(live):
    # a resume function's parameters must be identifiers, or its signature could not be read
    return {n: local_name(n) for n in live if not n.isidentifier()}


def resume_code(code, dis_index, null_slots, live):
    """The original `code` entered at its real instruction `dis_index` with the given stack.

    Arguments: each non-NULL stack slot (NULLs of pending calls are pushed by the prologue),
    the live locals, then one cell argument per cell of the frame."""
    info = code_info(code)
    prefix = stack_prefix(code)
    renames = _renames(live)
    cells = [cell_arg(n) for n in code.co_cellvars]
    stack_args = [f"{prefix}{k}" for k, is_null in enumerate(null_slots) if not is_null]
    lead, rest = _split_lead(code, [renames.get(n, n) for n in live])
    line = info.abstract()[2][dis_index].positions.lineno
    builder = _Builder(code, lead + stack_args + rest + cells,
                       f"resume function of {code.co_qualname} at instruction {dis_index} (line {line})")
    items, positions, _ = info.abstract()
    start = _prefix_end(items)
    target = Label()
    _add_all(builder, _body(info, renames, 0, start))
    builder.add(_push_stack(prefix, null_slots))
    builder.add([Instr("JUMP_FORWARD", target)])
    body = _body(info, renames, start, label_at=(dis_index, target))
    entered_bound = set(lead) | set(stack_args) | set(rest) | {renames.get(n, n) for n in live}
    _add_all(builder, _split_try_at(_checked_loads(body, entered_bound), target))
    return builder.finish()


def _checked_loads(pairs, bound):
    """Loads of locals not bound where the resume function starts become LOAD_FAST_CHECK
    (3.12+): the original's compiler used LOAD_FAST where an earlier read had already raised
    if the local was unbound, and that earlier read may be before the resume point."""
    if not hasattr(dis, "opmap") or "LOAD_FAST_CHECK" not in dis.opmap:
        return pairs
    out = []
    for item, k in pairs:
        if isinstance(item, Instr) and item.name == "LOAD_FAST" and isinstance(item.arg, str) \
                and item.arg not in bound:
            item = Instr("LOAD_FAST_CHECK", item.arg, location=item.location)
        elif isinstance(item, Instr) and item.name == "LOAD_FAST_LOAD_FAST" \
                and not set(item.arg) <= bound:
            out.append((Instr("LOAD_FAST_CHECK", item.arg[0], location=item.location), k))
            item = Instr("LOAD_FAST_CHECK", item.arg[1], location=item.location)
        out.append((item, k))
    return out


def _split_try_at(pairs, label):
    """Restart the try region open at `label` just after it, with the region's own depth.

    The prologue jumps to `label`, so the region's TryBegin before it is dead code (and is
    dropped); without a TryBegin after the label the code there would be unprotected."""
    open_try = None
    for k, (item, _) in enumerate(pairs):
        if item is label:
            break
        if isinstance(item, TryBegin):
            open_try = item
        elif isinstance(item, TryEnd) and item.entry is open_try:
            open_try = None
    else:
        return pairs
    if open_try is None:
        return pairs
    # the depth CPython unwinds to is the original's (the prologue rebuilt the same stack),
    # not the depth at the label
    fresh = TryBegin(open_try.target, open_try.push_lasti, stack_depth=open_try.stack_depth)
    out = pairs[:k] + [(TryEnd(open_try), None), (label, None), (fresh, None)]
    for item, orig in pairs[k + 1:]:
        if isinstance(item, TryEnd) and item.entry is open_try:
            item = TryEnd(fresh)
        out.append((item, orig))
    return out


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
    if name == "LOAD_SUPER_ATTR":
        return 3
    return max(1, -dis.stack_effect(inst.opcode, arg, jump=False))


def _call_resume(resume, null_slots, lead, live, cells, tmp):
    """Instructions: call resume(*lead, *stack without NULLs, *live locals, *cells) and
    return its result."""
    out = emit.drop_nulls(null_slots)
    out += [Instr("BUILD_TUPLE", null_slots.count(False)), Instr("STORE_FAST", tmp)]
    out += emit.push_callable(resume)
    out += [Instr("LOAD_FAST", name) for name in lead]
    out += [Instr("BUILD_TUPLE", len(lead)), Instr("LOAD_FAST", tmp), emit.binary_add()]
    out += [Instr("LOAD_FAST", name) for name in list(live) + list(cells)]
    out += [Instr("BUILD_TUPLE", len(live) + len(cells)), emit.binary_add(),
            Instr("CALL_FUNCTION_EX", 0), Instr("RETURN_VALUE")]
    return out


def break_code(code, dis_index, null_slots, live, make_resume):
    """Code for: push the stack, run real instruction `dis_index` of `code` natively, resume.

    `null_slots[k]` says stack slot k holds the NULL of a pending call (pushed with
    PUSH_NULL, not passed as an argument). `make_resume(target_index, null_slots_after)`
    returns the callable to resume with."""
    info = code_info(code)
    items, positions, real = info.abstract()
    inst = real[dis_index]
    prefix = stack_prefix(code)
    cells = [cell_arg(n) for n in code.co_cellvars]
    stack_args = [f"{prefix}{k}" for k, is_null in enumerate(null_slots) if not is_null]
    lead, rest = _split_lead(code, live)
    builder = _Builder(code, lead + stack_args + rest + cells,
                       f"break function of {code.co_qualname} at instruction {dis_index} "
                       f"{inst.opname} (line {inst.positions.lineno})")
    _add_all(builder, _body(info, {}, 0, _prefix_end(items)))
    builder.add(_push_stack(prefix, null_slots))
    # instructions that must travel with the breaking one (3.11 PRECALL, KW_NAMES)
    first = dis_index
    while first > 0 and real[first - 1].opname in ("PRECALL", "KW_NAMES"):
        first -= 1
    for k in range(first, dis_index):
        builder.add(_rewrite(items[positions[k]], info.cellvars, {}), k)
    original = items[positions[dis_index]]
    tmp = prefix + "all"
    if "JUMP" in inst.opname and isinstance(original.arg, Label):
        taken = Label()
        # the taken branch is placed after this instruction: 3.11's backward jumps become forward ones
        builder.add([Instr(original.name.replace("_BACKWARD_", "_FORWARD_"), taken,
                           location=original.location)], dis_index)
        after = null_slots_after(inst, null_slots, jump=False)
        builder.add(_call_resume(make_resume(dis_index + 1, after), after, lead, rest, cells, tmp))
        builder.add([taken])
        target_index = _index_of_label(items, positions, original.arg)
        after_jump = null_slots_after(inst, null_slots, jump=True)
        builder.add(_call_resume(make_resume(target_index, after_jump), after_jump, lead, rest, cells, tmp))
    elif emit.plain_method_load(original) is not None:
        native, pushed = emit.plain_method_load(original)
        builder.add(native, dis_index)
        after = list(null_slots[:len(null_slots) - consumed_by(inst)]) + pushed
        builder.add(_call_resume(make_resume(dis_index + 1, after), after, lead, rest, cells, tmp))
    else:
        if isinstance(original.arg, Label):
            raise NotImplementedError(f"a graph break at {inst.opname}")
        builder.add(_rewrite(original, info.cellvars, {}), dis_index)
        if inst.opname not in ("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"):
            after = null_slots_after(inst, null_slots, jump=False)
            builder.add(_call_resume(make_resume(dis_index + 1, after), after, lead, rest, cells, tmp))
    return builder.finish()


def _index_of_label(items, positions, label):
    k = items.index(label)
    for j, pos in enumerate(positions):
        if pos > k:
            return j
    raise ValueError("jump target not found")


def in_loop(code, offset):
    """True if `offset` lies inside a loop (between a backward jump's target and the jump).

    A graph break there would resume the rest of the frame, loop included, from inside a
    call: every iteration would nest a deeper call, until a RecursionError. So no break is
    made in a loop: the frame runs plain (as Dynamo skips such frames)."""
    return any(start <= offset <= end for start, end in loop_ranges(code))


def _handlers_around(code, offset):
    """The exception-table entries an exception raised at `offset` passes through, innermost
    first, each with the first opnames of its handler: through the cleanup of `with` blocks
    (and of their cleanup) until a handler that is neither."""
    info = code_info(code)
    insts = {i.offset: i for i in info.instructions}
    entries = dis._parse_exception_table(code)
    seen = set()
    while offset not in seen:
        seen.add(offset)
        entry = next((e for e in entries if e.start <= offset < e.end), None)
        if entry is None:
            return
        handler = [insts[o].opname for o in sorted(insts) if o >= entry.target][:4]
        yield entry, handler
        if not _is_cleanup(handler):
            return
        offset = entry.target          # where the exception goes next: is that protected?


def _is_cleanup(handler):
    return "WITH_EXCEPT_START" in handler or handler[:1] == ["COPY"] and "POP_EXCEPT" in handler[:3]


def in_try_block(code, offset):
    """True if `offset` is protected by a try/except/finally handler, directly or through the
    cleanup of `with` blocks around it (an exception leaving a `with` inside a `try` reaches the
    try's handler).

    A native instruction run at a break would escape that handler, so no break is made there.
    """
    return any(not _is_cleanup(handler) for _, handler in _handlers_around(code, offset))


def with_exit_slots(code, offset):
    """The stack slots holding the bound `__exit__` of each `with` block open at `offset`,
    innermost first. (A native instruction run at a break escapes their cleanup too: only a
    grad mode, which the transformed function restores itself, may be open there.)"""
    return [entry.depth - 1 for entry, handler in _handlers_around(code, offset)
            if "WITH_EXCEPT_START" in handler]
