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
