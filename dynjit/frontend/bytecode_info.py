"""Per-code-object facts the translator needs, computed once and cached:
the instruction list (read with `dis`) and offset -> index maps."""
import dis
import sys

PY313 = sys.version_info >= (3, 13)
PY312 = sys.version_info >= (3, 12)

_cache = {}   # code objects are immortal for the functions users compile


class CodeInfo:
    def __init__(self, code):
        self.code = code
        self.instructions = list(dis.get_instructions(code))
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.cellvars = set(code.co_cellvars)
        self.freevars = code.co_freevars


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


def _successors(info):
    insts = info.instructions
    succ = [[] for _ in insts]
    for i, inst in enumerate(insts):
        if inst.opname not in _NO_FALLTHROUGH and i + 1 < len(insts):
            succ[i].append(i + 1)
        if inst.opcode in _JUMPS and inst.argval in info.index_of:
            succ[i].append(info.index_of[inst.argval])
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return None
    for entry in parse(info.code):
        handler = info.index_of.get(entry.target)
        for i, inst in enumerate(insts):
            if entry.start <= inst.offset < entry.end and handler is not None:
                succ[i].append(handler)
    return succ


def live_after(code, index):
    """Locals that may be read after instruction `index` before being written again
    (backward dataflow over the control-flow graph, exception handlers included).
    None if this Python cannot tell (then every bound local counts as live)."""
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
