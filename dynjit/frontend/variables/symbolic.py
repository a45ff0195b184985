"""Dynamic Python numbers: an int or float (argument, attribute, dict item, global) whose value
changed between calls (automatic dynamic), or any of them under `dynamic=True`.

Its value is not guarded. Arithmetic on it builds an expression; a tensor op given it takes
it as a graph input (the arithmetic runs in the graph); a value it becomes that leaves the
trace (returned, stored) is rebuilt in the transformed function from the sources it reads.
Anything that needs the concrete value at trace time (a comparison, `if`, `range`, a size,
a call that is folded) specializes it: the value of each source it reads is then guarded,
exactly as for a static number. So the results are always the plain program's; only the
number of compiles changes.
"""
import operator

from .base import ConstantVariable

NUMBER_TYPES = (int, float)

# the operators whose result on numbers stays symbolic (the in-place forms act as the plain
# ones on immutable numbers)
ARITHMETIC = {
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.truediv: operator.truediv, operator.floordiv: operator.floordiv,
    operator.mod: operator.mod, operator.pow: operator.pow,
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow,
}
UNARY_ARITHMETIC = (operator.neg, operator.pos, operator.abs)


class _AllSources:
    """`dynamic=True`: every number read from a source is symbolic."""

    def __contains__(self, source_expr):
        return True


ALL_SOURCES = _AllSources()


def is_dynamic_number(value):
    """A value automatic dynamic may make symbolic: an int or float, never a bool."""
    return type(value) in NUMBER_TYPES


class SymNumberVariable(ConstantVariable):
    """A number that is symbolic until the trace needs its value (see the module docstring)."""

    def __init__(self, value, expr, leaves, guards):
        super().__init__(value, guard_on_use=self._specialize)
        self.expr = expr          # ("source", source) or (fn, [operand, ...]) (operands: trackers or numbers)
        self.leaves = leaves      # (source, value) of every source the expression reads
        self._guards = guards
        self._nodes = {}          # id(output graph) -> graph node computing it

    @classmethod
    def from_source(cls, value, source, guards):
        guards.type(source, value)
        return cls(value, ("source", source), [(source, value)], guards)

    @classmethod
    def apply(cls, fn, operands):
        """fn(*operands) kept symbolic, or None where that would not be the plain result's type."""
        values = [o._value if isinstance(o, SymNumberVariable) else o for o in operands]
        if not all(type(v) in NUMBER_TYPES or type(v) is bool for v in values):
            return None
        try:
            result = fn(*values)
        except Exception:
            return None          # raises natively: the fold path specializes and reports it
        if type(result) not in NUMBER_TYPES:
            return None
        syms = [o for o in operands if isinstance(o, SymNumberVariable)]
        leaves = [leaf for s in syms for leaf in s.leaves]
        return cls(result, (fn, list(operands)), leaves, syms[0]._guards)

    def is_literal(self):
        return self.specialized      # otherwise it reads its sources: before the side effects

    @property
    def specialized(self):
        return self._guard_on_use is None

    on_specialize = None     # called first when specializing (a dimension marked dynamic raises)

    def _specialize(self):
        if self.on_specialize is not None:
            self.on_specialize()
        for source, value in self.leaves:
            self._guards.constant(source, value)

    def describe(self):
        return f"dynamic number (now {self._value!r})"

    def graph_node(self, output):
        """The node of `output`'s graph that computes this number (a graph input for a source)."""
        node = self._nodes.get(id(output))
        if node is None:
            if self.expr[0] == "source":
                node = output.input_scalar(self._value, self.expr[1])
            else:
                fn, operands = self.expr
                args = tuple(o.graph_node(output) if isinstance(o, SymNumberVariable) else o for o in operands)
                node = output.graph.call_function(fn, args)
                node.meta["val"] = self._value
            self._nodes[id(output)] = node
        return node

    def reconstruct(self, cg):
        if self.specialized:
            return cg.constant(self._value)
        if self.expr[0] == "source":
            return self.expr[1].expr()
        fn, operands = self.expr
        parts = [o.reconstruct(cg) if isinstance(o, SymNumberVariable) else cg.constant(o) for o in operands]
        return f"{cg.constant(fn)}({', '.join(parts)})"

    def __repr__(self):
        return f"SymNumberVariable({self._value!r}, {self.expr[0] if self.expr[0] == 'source' else 'expr'})"
