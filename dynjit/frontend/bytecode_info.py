"""Per-code-object facts, computed once and cached: the instruction list read
with `dis` (what the translator walks), the same instructions as the
`bytecode` package's abstract instructions (what graph-break code is generated
from, parsed lazily and aligned one to one), offset -> index maps, liveness.

The Python versions the frontend knows are listed here explicitly; every other
module asks this one (a version not listed fails at `dynjit.compile`)."""
import dis
import sys

SUPPORTED_VERSIONS = ((3, 11), (3, 12), (3, 13))
VERSION = sys.version_info[:2]
PY311 = VERSION == (3, 11)
PY312 = VERSION in ((3, 12), (3, 13))     # 3.12 instruction set or later (of the supported ones)
PY313 = VERSION == (3, 13)


def check_python_version():
    if VERSION not in SUPPORTED_VERSIONS:
        known = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
        raise RuntimeError(f"dynjit's bytecode frontend supports Python {known}; this is Python "
                           f"{VERSION[0]}.{VERSION[1]}, whose bytecode it does not know. Run the function "
                           "without dynjit.compile, or use a supported Python.")


_PSEUDO_SKIP = ("EXTENDED_ARG", "CACHE")
_cache = {}   # code objects are immortal for the functions users compile


class CodeInfo:
    def __init__(self, code):
        self.code = code
        self.instructions = list(dis.get_instructions(code))
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.cellvars = set(code.co_cellvars)
        self.freevars = code.co_freevars
        self._abstract = None

    def abstract(self):
        """(items, positions, real): the `bytecode` package's view of this code, parsed once.
        `items` holds instructions, labels and try markers; `real[k]` is the k-th real dis
        instruction and `positions[k]` its abstract instruction's index in `items`."""
        if self._abstract is None:
            from bytecode import Bytecode, Instr
            items = list(Bytecode.from_code(self.code))
            positions = [k for k, item in enumerate(items) if isinstance(item, Instr)]
            real = [i for i in self.instructions if i.opname not in _PSEUDO_SKIP]
            if len(positions) != len(real):
                raise NotImplementedError("cannot align this code's instructions for a graph break")
            _set_try_depths(self.code, items, real)
            self._abstract = (items, positions, real)
        return self._abstract

    def real_index(self, offset):
        """Position of the instruction at `offset` among the real (non-EXTENDED_ARG) instructions."""
        idx = getattr(self, "_real_index", None)
        if idx is None:
            real = [i for i in self.instructions if i.opname not in _PSEUDO_SKIP]
            idx = self._real_index = {inst.offset: k for k, inst in enumerate(real)}
        return idx[offset]


def _set_try_depths(code, items, real):
    """Give each parsed TryBegin the stack depth of its exception-table entry (the `bytecode`
    package leaves 0): generated code keeps these depths rather than recomputing them from its
    own, partial, control flow."""
    from bytecode import Instr, TryBegin
    entries = dis._parse_exception_table(code)
    k = 0
    for n, item in enumerate(items):
        if isinstance(item, Instr):
            k += 1
        elif isinstance(item, TryBegin):
            if k >= len(real):
                continue
            offset = real[k].offset
            entry = next((e for e in entries if e.start <= offset < e.end), None)
            if entry is None:
                raise NotImplementedError("a try region with no exception-table entry")
            item.stack_depth = entry.depth


def code_info(code):
    info = _cache.get(code)
    if info is None:
        info = _cache[code] = CodeInfo(code)
    return info


_NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
                   "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))


def _reads_and_writes(inst):
    """Locals `inst` reads (in order, before its writes) and locals it writes."""
    name, arg = inst.opname, inst.argval
    if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"):
        return (arg,), ()
    if name == "STORE_FAST":
        return (), (arg,)
    if name == "LOAD_FAST_LOAD_FAST":
        return tuple(arg), ()
    if name == "STORE_FAST_LOAD_FAST":
        stored, loaded = arg
        return ((loaded,) if loaded != stored else ()), (stored,)
    if name == "STORE_FAST_STORE_FAST":
        return (), tuple(arg)
    return (), ()


def _successors(info, exceptions=True):
    """Per instruction index, the indices control may go to next (through exception handlers
    too unless `exceptions` is False); None if this Python's exception table cannot be read."""
    insts = info.instructions
    succ = [[] for _ in insts]
    for i, inst in enumerate(insts):
        if inst.opname not in _NO_FALLTHROUGH and i + 1 < len(insts):
            succ[i].append(i + 1)
        if inst.opcode in _JUMPS and inst.argval in info.index_of:
            succ[i].append(info.index_of[inst.argval])
    if not exceptions:
        return succ
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return None
    for entry in parse(info.code):
        handler = info.index_of.get(entry.target)
        for i, inst in enumerate(insts):
            if entry.start <= inst.offset < entry.end and handler is not None:
                succ[i].append(handler)
    return succ


# builtins that read the calling frame's locals: with one of them, every bound local is live
_READS_FRAME = frozenset(("locals", "vars", "eval", "exec", "dir"))


def live_after(code, index):
    """Locals that may be read after instruction `index` before being written again
    (backward dataflow over the control-flow graph, exception handlers included).
    None if this Python cannot tell (then every bound local counts as live), or if the code
    can read its locals by name (locals(), vars(), eval, exec, dir)."""
    if _READS_FRAME.intersection(code.co_names):
        return None
    info = code_info(code)
    live_in = getattr(info, "_live_in", None)
    if live_in is None:
        succ = _successors(info)
        if succ is None:
            return None
        effects = [_reads_and_writes(inst) for inst in info.instructions]
        live_in = [frozenset()] * len(info.instructions)
        changed = True
        while changed:
            changed = False
            for i in range(len(info.instructions) - 1, -1, -1):
                out = frozenset().union(*(live_in[s] for s in succ[i]))
                reads, writes = effects[i]
                new = (out - frozenset(writes)) | frozenset(reads)
                if new != live_in[i]:
                    live_in[i] = new
                    changed = True
        info._live_in = live_in
        info._succ = succ
    return frozenset().union(*(live_in[s] for s in info._succ[index]))


def loop_ranges(code):
    """(first offset, last offset) of each loop: a backward jump that normal control flow
    from its target reaches again. The backward jump 3.12+ put at the end of a `with`
    block's exception path returns to code after the block, it closes no loop."""
    info = code_info(code)
    loops = getattr(info, "_loops", None)
    if loops is None:
        succ = _successors(info, exceptions=False)
        loops = []
        for i, inst in enumerate(info.instructions):
            if inst.opcode in _JUMPS and isinstance(inst.argval, int) and inst.argval <= inst.offset \
                    and inst.argval in info.index_of and _reaches(succ, info.index_of[inst.argval], i):
                loops.append((inst.argval, inst.offset))
        info._loops = loops
    return loops


def _reaches(succ, start, goal):
    seen, todo = {start}, [start]
    while todo:
        i = todo.pop()
        if i == goal:
            return True
        for j in succ[i]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return False
