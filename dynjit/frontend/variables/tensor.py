"""TensorVariable: a tensor in the graph (an fx node plus an example value
computed while tracing), and the recording of calls into the graph."""
import operator

import numpy as np

from ...tensor import Tensor
from ...exc import Unsupported
from ..exc import unimplemented, DataDependent, BreakKind
from .. import trace_rules
from ..trace_rules import Action
from .base import VariableTracker, ConstantVariable
from .builder import wraps, wrap
from ...tensor import Size
from ..source import AttrSource, ItemSource
from .symbolic import SymNumberVariable
from ..dynamic_marks import ConstraintViolationError
from .containers import ListVariable, NamedTupleVariable, TupleVariable

STATIC_ATTRS = {"shape", "dtype", "ndim", "requires_grad", "is_leaf", "device", "is_cuda", "layout", "is_cpu",
                "is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized", "is_nested", "is_mkldnn"}
GRAPH_ATTRS = {"T", "mT", "H", "mH", "data", "real", "imag"}


def _marked_dimension_specialized(size_src, dim):
    def fail(why="the compiled code needs its value (a comparison, a size, a folded call)"):
        raise ConstraintViolationError(
            f"dimension {dim} of {size_src.base.base.expr()} was marked dynamic (dynjit.mark_dynamic), but it "
            f"cannot stay dynamic: {why}. Use dynjit.maybe_mark_dynamic to allow specializing it.")
    return fail


class SizeVariable(TupleVariable):
    """A tensor's shape whose sizes are dynamic numbers (a trace for dynamic sizes)."""
    python_cls = Size

    def getitem(self, tx, key):
        index = key.as_python_constant() if key.is_python_constant() else None
        if isinstance(index, slice):
            return SizeVariable(self.items[index])
        return super().getitem(tx, key)

    def getattr(self, tx, name):
        if name == "numel":
            from .functions import BuiltinMethodVariable
            return BuiltinMethodVariable(self, name)
        return super().getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name == "numel" and not args and not kwargs:
            total = ConstantVariable(1)
            for size in self.items:
                total = tx.binary_op(operator.mul, total, size)
            return total
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        return f"{cg.constant(Size)}(({''.join(cg.value(v) + ', ' for v in self.items)}))"


class TensorVariable(VariableTracker):
    real_type = None        # a graph input's own class (nn.Parameter, a subclass): its guard pins it

    def __init__(self, node, example, source=None):
        super().__init__(source)
        self.node = node
        self.example = example

    def describe(self):
        return "a tensor"

    def python_type(self):
        return self.real_type or type(self.example)

    def truth(self, tx):
        raise DataDependent(BreakKind.DATA_DEPENDENT_BRANCH, "data-dependent branching on a tensor's value (the truth value of a tensor)")

    def length(self, tx):
        tx.output.specialize_sizes(computed=self.source is None)
        if self.example.ndim == 0:
            unimplemented(BreakKind.USER_EXCEPTION, "len() of a 0-d tensor")
        return self.example.shape[0]

    def iterate(self, tx):
        return [self.getitem(tx, ConstantVariable(i)) for i in range(self.length(tx))]

    # sizes ------------------------------------------------------------------------------------
    def _marks(self, tx):
        return tx.output.tensor_marks.get(self.source.expr(), {}) if self.source is not None else {}

    def size_var(self, tx, dim):
        """Size `dim`: in a trace for dynamic sizes, or for a dimension marked dynamic, an input
        tensor's size is a dynamic number (read when the compiled code runs; a use that needs
        the value guards it); other sizes are constants, guarded exactly."""
        output = tx.output
        size = self.example.shape[dim]
        dim = dim % self.example.ndim
        marks = self._marks(tx)
        how = marks.get(dim)
        size_src = ItemSource(AttrSource(self.source, "shape"), dim) if self.source is not None else None
        wants_dynamic = how in ("dynamic", "maybe") or (output.dynamic and how != "static")
        if size_src is not None and wants_dynamic and output.backend_takes_scalars:
            sym = SymNumberVariable.from_source(size, size_src, output.guards)
            if how == "dynamic":
                sym.on_specialize = _marked_dimension_specialized(size_src, dim)
            return sym
        if how == "dynamic":
            _marked_dimension_specialized(size_src, dim)("this backend takes tensor inputs only, so sizes "
                                                         "are constants (backend='eager' keeps them dynamic)")
        if marks:                  # a marked tensor: its sizes are guarded one dimension at a time
            output.guards.constant(size_src, size)
            return ConstantVariable(size)
        output.specialize_sizes(computed=self.source is None)
        return ConstantVariable(size)

    def shape_var(self, tx):
        if self.source is None or not (tx.output.dynamic or self._marks(tx)):
            tx.output.specialize_sizes(computed=self.source is None)
            return ConstantVariable(self.example.shape)
        sizes = [self.size_var(tx, d) for d in range(self.example.ndim)]
        if all(isinstance(v, ConstantVariable) and not isinstance(v, SymNumberVariable) for v in sizes):
            return ConstantVariable(self.example.shape)
        return SizeVariable(sizes)

    def getattr(self, tx, name):
        if name == "shape":
            return self.shape_var(tx)
        if name == "is_leaf" and self.source is not None:
            # an input: a leaf or not as the caller's tensor is (its example is always a leaf)
            is_leaf = tx.output.real_value(self.source).is_leaf
            tx.output.guards.constant(AttrSource(self.source, "is_leaf"), is_leaf)
            return ConstantVariable(is_leaf)
        if name in STATIC_ATTRS and hasattr(self.example, name):
            return ConstantVariable(getattr(self.example, name))
        if name == "real" and not self.example.is_complex():
            return self         # a real tensor's .real is the tensor itself
        if name in GRAPH_ATTRS:
            return tx.output.record(getattr, [self, ConstantVariable(name)], {})
        if name == "grad":
            if self.source is not None:
                written = tx.output.side_effects.grad_written(tx.output.real_value(self.source))
                if written is not None:
                    return written
                return wrap(tx, self.example_source_value(tx, "grad"), AttrSource(self.source, "grad"))
            unimplemented(BreakKind.ATTRIBUTE, "reading .grad of a tensor computed inside the compiled function")
        if name in ("grad_fn", "_version", "_base"):
            unimplemented(BreakKind.ATTRIBUTE, f"reading tensor.{name} inside a compiled function")
        if hasattr(Tensor, name) and callable(getattr(Tensor, name)):
            return TensorMethodVariable(self, name)
        unimplemented(BreakKind.ATTRIBUTE, f"tensor attribute {name!r}")

    def setattr(self, tx, name, value):
        if name != "grad" or self.source is None:
            unimplemented(BreakKind.MUTATION, f"setting attribute {name!r} of a tensor")
        if not (isinstance(value, TensorVariable) or (value.is_python_constant() and value.as_python_constant() is None)):
            unimplemented(BreakKind.MUTATION, f"setting .grad to {value.describe()}")
        # replayed after the graph, like eager's write; later reads in the trace see it
        tx.output.side_effects.write_grad(tx.output.real_value(self.source), self, value)

    def example_source_value(self, tx, name):
        return getattr(tx.output.real_value(self.source), name)

    def call_method(self, tx, name, args, kwargs):
        return TensorMethodVariable(self, name).call(tx, args, kwargs)

    def getitem(self, tx, key):
        return tx.output.record(operator.getitem, [self, key], {})

    def setitem(self, tx, key, value):
        tx.output.record(operator.setitem, [self, key, value], {})

    def reconstruct(self, cg):
        return cg.graph_output(self)

    def __repr__(self):
        return f"TensorVariable({self.node.name})"


class TensorMethodVariable(VariableTracker):
    """A bound tensor method, e.g. `x.sum`; calling it becomes a call_method node."""

    def __init__(self, tensor, name):
        super().__init__()
        self.tensor = tensor
        self.name = name

    def describe(self):
        return f"tensor method {self.name}"

    def reconstruct(self, cg):
        return f"{cg.value(self.tensor)}.{self.name}"

    def call(self, tx, args, kwargs):
        name = self.name
        rule = trace_rules.tensor_method(name)
        if rule.action is Action.BREAK:
            raise (DataDependent if rule.kind is BreakKind.TENSOR_DATA_READ else Unsupported)(rule.kind, rule.detail)
        if rule.action is Action.FOLD:
            if name == "size" and not kwargs and len(args) <= 1 and all(a.is_python_constant() for a in args):
                return self.tensor.size_var(tx, args[0].as_python_constant()) if args else self.tensor.shape_var(tx)
            if name in ("size", "numel", "stride", "nelement", "is_contiguous"):
                # sizes and layout are read: guard them exactly (strides too, under dynamic shapes)
                tx.output.specialize_sizes(computed=self.tensor.source is None)
            a = [x.as_python_constant() for x in args]
            k = {n: v.as_python_constant() for n, v in kwargs.items()}
            return ConstantVariable(getattr(self.tensor.example, name)(*a, **k))
        if rule.action is Action.HANDLED:
            if self.tensor.source is None or len(args) != 1 or kwargs:
                unimplemented(BreakKind.MUTATION, f"Tensor.{name}() inside a compiled function (on a tensor "
                              "computed inside it)")
            # on a tensor from the caller: registered on it after the graph runs (backward
            # consults hooks when it runs, so this is what eager's registration does)
            if not self.tensor.example.requires_grad:
                raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
            handle = HookHandleVariable(self.tensor.source, name, args[0])
            tx.output.side_effects.call_later(handle)
            return handle
        return tx.output.record_method(name, self.tensor, args, kwargs)


class HookHandleVariable(VariableTracker):
    """The handle of a hook registered on an input tensor; the registration itself is a side
    effect, emitted once: where the handle is first needed, or after the graph."""

    def __init__(self, tensor_source, method, fn):
        super().__init__()
        self.tensor_source = tensor_source
        self.method = method
        self.fn = fn

    def describe(self):
        return "a hook handle"

    def reconstruct(self, cg):
        name = cg.temp(f"{self.tensor_source.expr()}.{self.method}({cg.value(self.fn)})")
        cg.memo[id(self)] = name
        return name


def example_like(value):
    """The example a graph input is traced with: a copy of `value` with its exact strides (a
    transposed or sliced input stays non-contiguous, as what the trace reads of it must be)."""
    a = value._data
    if a.flags.c_contiguous or a.size == 0:
        arr = a.copy()
        if a.size == 0 and arr.strides != a.strides:
            arr = np.lib.stride_tricks.as_strided(arr, a.shape, a.strides)
    else:
        lo = sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
        buf = np.empty(hi - lo, np.uint8)
        arr = np.ndarray(a.shape, a.dtype, buffer=buf, offset=-lo, strides=a.strides)
        np.copyto(arr, a)
        if not a.flags.writeable:
            arr.flags.writeable = False
    example = Tensor._make(arr)
    example._requires_grad = value._requires_grad
    if value._is_inference:        # what eager refuses on an inference tensor is refused while tracing
        example._is_inference = True
    return example


@wraps("tensor", Tensor)
def _wrap_tensor(tx, value, source, guards):
    """A graph input: a placeholder node guarded on dtype, shape, strides and requires_grad."""
    if source is None:
        return NotImplemented
    return tx.output.input_tensor(value, source)


def wrap_result(tx, node, value):
    """Tracker for the value an op produced at trace time."""
    if isinstance(value, Tensor):
        return TensorVariable(node, value)
    if isinstance(value, (tuple, list)):
        items = []
        for i, v in enumerate(value):
            if isinstance(v, Tensor):
                items.append(TensorVariable(tx.output.graph.call_function(operator.getitem, (node, i)), v))
            elif isinstance(v, (int, float, bool, type(None))):
                items.append(ConstantVariable(v))
            else:
                unimplemented(BreakKind.UNSUPPORTED_VALUE, f"an op returning {type(v).__name__} inside a sequence")
        cls = type(value)
        if hasattr(value, "_fields"):
            return NamedTupleVariable(cls, items)
        return TupleVariable(items) if isinstance(value, tuple) else ListVariable(items)
    if isinstance(value, (int, float, bool, type(None), str)) or value is NotImplemented:
        return ConstantVariable(value)
    if isinstance(value, Size):
        return ConstantVariable(value)
    unimplemented(BreakKind.UNSUPPORTED_VALUE, f"an op returning {type(value).__name__}")
