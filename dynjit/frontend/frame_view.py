"""`locals()` and `vars()` in a resumed frame that runs plain, as the original frame's.

After a graph break the rest of a frame runs in a generated function whose locals differ
from the original's: the frame's cells arrive as `___cell_<name>` arguments and stack
values as `___stack<k>_<i>`. When that function runs plain (not traced), the builtins
`locals()` and `vars()` would show those names. The generated code reads the global names
`locals` and `vars` through a `GlobalLookup` instead: at run time it resolves the name as
LOAD_GLOBAL does (a global of the module first, then the builtin) and, for the builtins,
gives a function that returns the original frame's view (cells as their contents, dynjit's
own names left out, in the original frame's order). The tracer resolves a `GlobalLookup`
as the global it stands for."""
import builtins
import sys
import types

FRAME_BUILTINS = ("locals", "vars")
_GENERATED_PREFIX = "___"


class GlobalLookup:
    """Called with no arguments from generated code: the value of the global `name` in the
    calling frame's module, with `locals`/`vars` made to show `code`'s own variables."""

    def __init__(self, name, code):
        self.name = name
        self.order = (list(code.co_varnames) + [n for n in code.co_cellvars if n not in code.co_varnames]
                      + list(code.co_freevars))

    def __call__(self):
        frame_globals = sys._getframe(1).f_globals
        if self.name in frame_globals:
            return frame_globals[self.name]
        space = frame_globals.get("__builtins__", builtins)
        space = vars(space) if isinstance(space, types.ModuleType) else space
        if self.name not in space:
            raise NameError(f"name {self.name!r} is not defined")
        value = space[self.name]
        if value is builtins.locals:
            return self.locals
        if value is builtins.vars:
            return self.vars
        return value

    def locals(self):
        return self._view(sys._getframe(1))

    def vars(self, *args):
        if args:
            return vars(*args)
        return self._view(sys._getframe(1))

    def _view(self, frame):
        raw = dict(frame.f_locals)
        from .resume import CELL_PREFIX
        if not any(name.startswith(_GENERATED_PREFIX) for name in frame.f_code.co_varnames):
            return raw              # called from some other frame: that frame's own locals
        mine = {}
        for name, value in raw.items():
            if name.startswith(CELL_PREFIX):
                if isinstance(value, types.CellType):
                    try:
                        value = value.cell_contents
                    except ValueError:      # an empty cell: an unbound variable
                        continue
                mine[name[len(CELL_PREFIX):]] = value
            elif not name.startswith(_GENERATED_PREFIX):
                mine[name] = value
        ordered = {name: mine.pop(name) for name in self.order if name in mine}
        ordered.update(mine)
        return ordered
