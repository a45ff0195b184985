"""VariableTracker: what a value is at trace time, and where it came from.

The translator's stack and locals hold trackers. Each tracker knows how to be
called, have attributes read / written, be indexed, iterated and tested for
truth at trace time, and how to be rebuilt as a Python expression in the
transformed function (`reconstruct`). Anything a tracker cannot do raises
Unsupported with a reason in the user's terms.
"""
import types

from ..exc import unimplemented, BreakKind
from ..source import LocalSource


class VariableTracker:
    source = None

    def __init__(self, source=None):
        self.source = source

    # what the value is -----------------------------------------------------------
    def is_python_constant(self):
        return False

    def as_python_constant(self):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"{self.describe()} is not a constant known at trace time")

    def python_type(self):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"the type of {self.describe()} is not known at trace time")

    def describe(self):
        return type(self).__name__.replace("Variable", "").lower() or "value"

    # protocol -------------------------------------------------------------------------
    def call(self, tx, args, kwargs):
        unimplemented(BreakKind.UNKNOWN_CALLABLE, f"calling {self.describe()}")

    def getattr(self, tx, name):
        unimplemented(BreakKind.ATTRIBUTE, f"reading attribute {name!r} of {self.describe()}")

    def setattr(self, tx, name, value):
        unimplemented(BreakKind.MUTATION, f"setting attribute {name!r} of {self.describe()}")

    def getitem(self, tx, key):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"indexing {self.describe()}")

    def setitem(self, tx, key, value):
        unimplemented(BreakKind.MUTATION, f"item assignment on {self.describe()}")

    def delitem(self, tx, key):
        unimplemented(BreakKind.MUTATION, f"deleting an item of {self.describe()}")

    def iterate(self, tx):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"iterating over {self.describe()}")

    def truth(self, tx):
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"the truth value of {self.describe()}")

    def length(self, tx):
        return len(self.iterate(tx))

    def call_method(self, tx, name, args, kwargs):
        return self.getattr(tx, name).call(tx, args, kwargs)

    def reconstruct(self, cg):
        """A Python expression (string) that rebuilds this value in the transformed function."""
        if self.source is not None:
            return self.source.expr()
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"returning or storing {self.describe()} out of compiled code")

    def __repr__(self):
        return f"{type(self).__name__}({self.source!r})"


class ConstantVariable(VariableTracker):
    """An immutable Python value known at trace time (numbers, strings, None, dtypes, slices...)."""

    def __init__(self, value, source=None, guard_on_use=None):
        super().__init__(source)
        self._value = value
        # For an argument only passed along (stored, returned, handed to a
        # graph break), guarding its value would recompile for every new
        # value; the value guard is installed the first time the trace uses it.
        self._guard_on_use = guard_on_use

    @property
    def value(self):
        if self._guard_on_use is not None:
            install, self._guard_on_use = self._guard_on_use, None
            install()
        return self._value

    def is_python_constant(self):
        return True

    def is_literal(self):
        """Rebuilt as a literal (no temporary needed: it reads nothing that side effects change)."""
        return True

    def as_python_constant(self):
        return self.value

    def python_type(self):
        return type(self.value)

    def describe(self):
        return f"constant {self.value!r}"

    def truth(self, tx):
        return bool(self.value)

    def iterate(self, tx):
        try:
            return [ConstantVariable(v) for v in self.value]
        except TypeError:
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"iterating over {self.describe()}")

    def length(self, tx):
        return len(self.value)

    def getattr(self, tx, name):
        attr = getattr(self.value, name)
        if callable(attr):
            from .functions import BuiltinVariable, BoundMethodVariable, FunctionVariable
            if isinstance(attr, types.MethodType) and isinstance(attr.__func__, types.FunctionType):
                # a Python method of a constant (dynjit.Size.numel): traced like any method
                return BoundMethodVariable(FunctionVariable(attr.__func__), self)
            return BuiltinVariable(attr)
        return ConstantVariable(attr)

    def getitem(self, tx, key):
        import operator
        from ..exc import fold
        return ConstantVariable(fold(operator.getitem, self.value, key.as_python_constant()))

    def reconstruct(self, cg):
        if self._guard_on_use is not None and isinstance(self.source, LocalSource):
            return self.source.expr()       # never used: passed through from the argument
        # read from a container or an object the graph's effects may write: its value now
        # (which guards it)
        return cg.constant(self.value)

    def __repr__(self):
        return f"ConstantVariable({self._value!r})"


NULL = object()   # the NULL that CALL's calling convention pushes (3.11+)
