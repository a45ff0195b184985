"""OutputGraph: what one trace produces — the fx graph of tensor ops, the
graph inputs (with their sources), the guards, the side effects — and the
generation of the transformed function that runs the compiled graph."""
import operator
import types

from ..autograd.grad_mode import state as _grad_state
from ..autograd.saved import suspended_hooks
from ..fx.graph import Graph
from ..ops.dispatch import DispatchMode
from ..ops.meta import DataDependentOutputError
from ..ops.registry import INPLACE, OTHER, RANDOM, POINTWISE, FACTORY, OpDef, get as registry_get
from ..fx.proxy_tensor import TensorMeta
from ..tensor import Tensor
from .exc import unimplemented, DataDependent, BreakKind, trace_time_warnings, refuse_warned
from .guards import GuardBuilder
from .source import local_name, AttrSource, ItemSource
from .dynamic_marks import marks_of
from .side_effects import SideEffects
from .variables import ConstantVariable, TensorVariable, TupleVariable, ListVariable, DictVariable
from .variables.tensor import wrap_result, example_like
from .variables.symbolic import SymNumberVariable, ARITHMETIC


def set_grad_enabled_node(mode):
    """Graph node target: switch grad mode at run time (what `with no_grad():` traces to)."""
    _grad_state.enabled = mode


set_grad_enabled_node.__name__ = "_set_grad_enabled"


class OutputGraph:
    def __init__(self, fn, backend_call):
        self.fn = fn
        self.root_globals = fn.__globals__
        self.graph = Graph()
        self.submodules = {}          # name -> GraphModule reached by get_attr (traced Function bodies)
        self.consts = {"__fn": fn, "MethodType": types.MethodType, "FunctionType": types.FunctionType,
                       "new": object.__new__}
        self._const_ids = {}
        self.guards = GuardBuilder(self)
        self.side_effects = SideEffects()
        # whether a graph op writes memory or draws random numbers (_EffectObserver): a graph
        # without either can be abandoned when it raises, and the frame run plain instead
        self.graph_has_effects = False
        self.inputs = {}              # id(real tensor) -> (tensor, source, TensorVariable)
        self.placeholder_examples = {}
        self.grad_enabled = _grad_state.enabled
        self.guards.grad_mode(self.grad_enabled)
        self.backend_call = backend_call
        self.placeholder_sources = {}
        self.scalar_inputs = {}          # source expression -> placeholder of a dynamic number
        self.tensor_marks = {}           # source expression -> {dim: "dynamic"/"maybe"/"static"}
        self.dynamic_scalars = ()        # sources (expressions) of numbers to make symbolic, or ALL
        self.dynamic = False             # guard input sizes by rank only (if no size was read)
        self.shape_specialized = False   # the trace read a concrete size
        self.shape_numbers = []          # dynamic numbers that ops took where they may decide a size
        self.translators = []            # every InstructionTranslator of this trace (release)

    def release(self):
        """Drop what the trace holds once its entry is built (or the trace failed). The trace's
        objects (this graph, its translators, guards and variables) refer to one another, so
        without this the user's objects they hold (a generator, an object with __del__, the
        target of a weakref) would live until the garbage collector runs, not until the user's
        last reference goes as in plain Python."""
        for tx in self.translators:
            tx.__dict__.clear()
        self.__dict__.clear()

    # -- constants stashed for generated code -------------------------------------------
    def stash(self, value):
        key = self._const_ids.get(id(value))
        if key is not None and self.consts[key] is value:
            return key
        key = f"c{len(self.consts)}"
        self.consts[key] = value
        self._const_ids[id(value)] = key
        return key

    # -- inputs ----------------------------------------------------------------------------
    def input_tensor(self, value, source):
        entry = self.inputs.get(id(value))
        if entry is not None and entry[0] is value:
            if entry[1] != source:
                self.guards.alias(source, entry[1])
            return entry[2]
        self.guards.tensor(source, value)
        marks = marks_of(value)
        if marks:       # mark_dynamic / mark_static: the dims not dynamic are guarded one by one
            self.tensor_marks[source.expr()] = marks
            for dim, size in enumerate(value._data.shape):
                how = marks.get(dim)
                if how == "static" or (how is None and not self.dynamic):
                    self.guards.constant(ItemSource(AttrSource(source, "shape"), dim), size)
        name = _placeholder_name(source)
        first_op = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        if first_op is None:
            node = self.graph.placeholder(name)
        else:
            with self.graph.inserting_before(first_op):
                node = self.graph.placeholder(name)
        example = example_like(value)       # same strides as the input
        node.meta["val"] = TensorMeta.of(value)
        node.meta["source"] = source
        var = TensorVariable(node, example, source=source)
        if type(value) is not type(example):
            var.real_type = type(value)
        self.inputs[id(value)] = (value, source, var)
        self.placeholder_examples[node] = value
        self.placeholder_sources[node] = source
        return var

    @property
    def backend_takes_scalars(self):
        """Whether the backend accepts graphs with number inputs (`dynjit_scalar_inputs`)."""
        from ..compiler.registry import lookup_backend
        return bool(getattr(lookup_backend(self.backend_call), "dynjit_scalar_inputs", False))

    def input_scalar(self, value, source):
        """The placeholder of a dynamic number read from `source` (symbolic.SymNumberVariable)."""
        key = source.expr()
        node = self.scalar_inputs.get(key)
        if node is not None:
            return node
        first_op = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        name = _placeholder_name(source)
        if first_op is None:
            node = self.graph.placeholder(name)
        else:
            with self.graph.inserting_before(first_op):
                node = self.graph.placeholder(name)
        node.meta["val"] = value
        node.meta["source"] = source
        self.scalar_inputs[key] = node
        self.placeholder_examples[node] = value
        self.placeholder_sources[node] = source
        return node

    def real_value(self, source):
        ns = self.guards.namespace(self.fn)
        ns.update({local_name(k): v for k, v in self._bound_args.items()})
        return eval(source.expr(), ns)

    # -- recording ops -------------------------------------------------------------------------
    def set_grad_enabled(self, mode):
        if mode != self.grad_enabled:
            self.graph.call_function(set_grad_enabled_node, (mode,))
            self.grad_enabled = mode

    def _unwrap(self, v, want):
        if isinstance(v, SymNumberVariable) and not v.specialized:
            if not self.backend_takes_scalars:
                return v.as_python_constant()        # a tensors-only backend: specialized (guarded)
            return v._value if want == "example" else v.graph_node(self)
        if isinstance(v, TensorVariable):
            return v.example if want == "example" else v.node
        if isinstance(v, (TupleVariable, ListVariable)):
            items = [self._unwrap(i, want) for i in v.items]
            if hasattr(v, "cls"):
                return v.cls(*items)
            return tuple(items) if isinstance(v, TupleVariable) else items
        if isinstance(v, DictVariable):
            return {k: self._unwrap(i, want) for k, i in v.items.items()}
        if v.is_python_constant():
            return v.as_python_constant()
        unimplemented(BreakKind.UNSUPPORTED_VALUE, f"passing {v.describe()} to a tensor operation")

    def _run(self, fn, args, kwargs):
        prev = (_grad_state.enabled, _grad_state.inference)
        _grad_state.enabled = self.grad_enabled
        observer = _EffectObserver(self)
        try:
            with suspended_hooks(), observer, trace_time_warnings() as caught:
                value = fn(*args, **kwargs)
        except Exception as e:
            unimplemented(BreakKind.USER_EXCEPTION, f"{type(e).__name__} raised by a tensor operation while tracing: {e}")
        finally:
            changed = (_grad_state.enabled, _grad_state.inference) != (self.grad_enabled, prev[1])
            _grad_state.enabled, _grad_state.inference = prev
        if changed:
            # e.g. a real grad-mode manager's __exit__ left on the stack by a graph break: its
            # effect is on the caller's state, so it runs natively, not folded at trace time
            unimplemented(BreakKind.GRAD_MODE, f"{getattr(fn, '__qualname__', fn)}() changes grad mode (runs natively)")
        refuse_warned(getattr(fn, "__qualname__", None) or _op_name(fn) or repr(fn), caught)
        if observer.data_dependent_shape:
            # the graph would hold the size this call's data gave (as torch.compile, a break)
            raise DataDependent(BreakKind.TENSOR_DATA_READ, f"{observer.data_dependent_shape} (an output whose "
                                "size depends on the values of its input)")
        return value

    def specialize_sizes(self, computed=True):
        """The trace reads a concrete size: the entry guards its inputs' sizes exactly, and,
        for a size of a tensor `computed` in the graph (or a count of outputs that depends on
        sizes), the value of every dynamic number an op took where it may decide a size (a
        repeat count, a view's size, a chunk count), since that size follows them."""
        self.shape_specialized = True
        if computed:
            for number in self.shape_numbers:
                number.as_python_constant()      # installs its guard
            del self.shape_numbers[:]

    def _note_shape_numbers(self, fn, args, kwargs):
        kind = _op_kind(fn)
        if kind in (POINTWISE, INPLACE):
            return
        for a in _flat(args, kwargs):
            # a size is an int; a float decides one only in a factory (arange(0, end))
            if isinstance(a, SymNumberVariable) and not a.specialized and \
                    (type(a._value) is int or kind == FACTORY):
                self.shape_numbers.append(a)

    def _count_follows_sizes(self, fn, args, kwargs, value):
        """An op whose number of outputs depends on a size (chunk, split or unbind along a dim
        whose size varies): the count the trace saw is only right for that size, so the
        sizes (and the numbers the op took) are guarded exactly."""
        if not isinstance(value, (tuple, list)):
            return
        name = _op_name(fn)
        if name not in VARIABLE_COUNT_OPS:
            return
        if any(isinstance(a, SymNumberVariable) and not a.specialized for a in _flat(args, kwargs)):
            self.specialize_sizes()
            return
        tensor = args[0].example if args and isinstance(args[0], TensorVariable) else None
        dim = _split_dim(name, tensor, args, kwargs)
        if tensor is None or dim is None or not self._static_size(tensor.shape[dim]):
            self.specialize_sizes()

    def _static_size(self, size):
        """Whether `size` is fixed for every call the guards admit, as far as the trace can
        tell: a size of a parameter or buffer (a layer's width: qkv.chunk(3, -1)) that no other
        input tensor has (so it cannot be a batch or sequence length that came in)."""
        in_params, in_others = False, False
        for value, source, _ in self.inputs.values():
            expr = source.expr() if source is not None else ""
            if "._parameters[" in expr or "._buffers[" in expr:
                in_params = in_params or size in value.shape
            elif size in value.shape:
                in_others = True
        return in_params and not in_others

    def record(self, fn, args, kwargs):
        """Run `fn` on the example values and record a call_function node for it."""
        _refuse_out(fn, kwargs)
        _refuse_new_leaf(fn, kwargs)
        self._note_shape_numbers(fn, args, kwargs)
        ex_args = [self._unwrap(a, "example") for a in args]
        ex_kwargs = {k: self._unwrap(v, "example") for k, v in kwargs.items()}
        value = self._run(fn, ex_args, ex_kwargs)
        has_tensor = any(isinstance(a, TensorVariable) for a in _flat(args, kwargs))
        if fn is operator.setitem:      # mutates a tensor in place: keep the node, result is None
            self.graph_has_effects = True
            self.graph.call_function(fn, tuple(self._unwrap(a, "node") for a in args))
            return ConstantVariable(None)
        if not _produces_tensors(value):
            if has_tensor:
                raise DataDependent(BreakKind.TENSOR_DATA_READ, f"{getattr(fn, '__name__', fn)}() returned a Python value computed "
                                    "from tensor data (data-dependent)")
            if value is None:
                # called for its effects, which ran on example values only: run it for real
                unimplemented(BreakKind.SIDE_EFFECT_CALL, f"{getattr(fn, '__qualname__', fn)}() returns None (called for its side "
                              "effects)")
            return wrap_result(None, None, value)
        self._count_follows_sizes(fn, args, kwargs, value)
        node = self.graph.call_function(fn, tuple(self._unwrap(a, "node") for a in args),
                                        {k: self._unwrap(v, "node") for k, v in kwargs.items()})
        node.meta["val"] = _meta(value)
        return wrap_result(_Tx(self), node, value)

    def record_method(self, name, self_var, args, kwargs):
        _refuse_out(name, kwargs)
        _refuse_new_leaf(name, kwargs)
        self._note_shape_numbers(name, args, kwargs)
        ex_self = self_var.example
        ex_args = [self._unwrap(a, "example") for a in args]
        ex_kwargs = {k: self._unwrap(v, "example") for k, v in kwargs.items()}
        method = getattr(ex_self, name)
        value = self._run(method, ex_args, ex_kwargs)
        if not _produces_tensors(value):
            raise DataDependent(BreakKind.TENSOR_DATA_READ, f"Tensor.{name}() returned a Python value computed from tensor data")
        self._count_follows_sizes(name, [self_var] + list(args), kwargs, value)
        node = self.graph.call_method(name, (self_var.node,) + tuple(self._unwrap(a, "node") for a in args),
                                      {k: self._unwrap(v, "node") for k, v in kwargs.items()})
        node.meta["val"] = _meta(value)
        if value is ex_self:       # in-place method: the same tensor, now produced by this node
            self_var.node = node
            return self_var
        return wrap_result(_Tx(self), node, value)

    def prune_unused_inputs(self):
        for node in list(self.graph.nodes):
            if node.op == "placeholder" and not node.users:
                self.graph.erase_node(node)
                del self.placeholder_sources[node]
                del self.placeholder_examples[node]

    @property
    def example_inputs(self):
        return [self.placeholder_examples[n] for n in self.graph.nodes if n.op == "placeholder"]

    def count_ops(self):
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


class _EffectObserver(DispatchMode):
    """Notes on the OutputGraph whether an op its example values run writes memory (in place,
    into `out=`) or draws random numbers, and whether the size of an op's output depends on
    its input's values (the op's meta says so: x[mask], nonzero, masked_select); it changes
    nothing."""

    def __init__(self, output):
        self.output = output
        self.data_dependent_shape = None     # what the op's meta said, when it cannot know the size

    def __dispatch__(self, op, args, kwargs):
        if op.kind == INPLACE or RANDOM in op.tags or getattr(op, "_is_impure", False) or "out" in kwargs:
            self.output.graph_has_effects = True
        if op.kind == OTHER and op._meta is not None:
            try:
                op.meta(args, kwargs)
            except DataDependentOutputError as e:
                self.data_dependent_shape = str(e)
            except Exception:       # the op itself raises it, as the user sees it
                pass
        return op(*args, **kwargs)


# ops whose number of outputs follows their input's sizes
VARIABLE_COUNT_OPS = frozenset({"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
                                "split_with_sizes", "unsafe_split", "unsafe_chunk"})
_SIZE_NEUTRAL_OPERATORS = frozenset(ARITHMETIC) | {operator.neg, operator.pos, operator.abs, operator.lt,
                                                   operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                                                   operator.and_, operator.or_, operator.xor}


def _op_name(fn):
    if isinstance(fn, str):
        return fn
    return getattr(fn, "name", None) if isinstance(fn, OpDef) else getattr(fn, "__name__", None)


def _split_dim(name, tensor, args, kwargs):
    """The dimension a chunk/split/unbind call cuts (None if the trace cannot tell)."""
    if tensor is None:
        return None
    default = {"unbind": 0, "hsplit": 1 if tensor.ndim > 1 else 0, "vsplit": 0, "dsplit": 2}.get(name, 0)
    position = 1 if name == "unbind" else 2       # after the tensor (and the count or sizes)
    dim = kwargs.get("dim", args[position] if len(args) > position and name not in
                     ("hsplit", "vsplit", "dsplit") else None)
    if dim is None:
        dim = default
    elif dim.is_python_constant():
        dim = dim.as_python_constant()
    else:
        return None
    if not isinstance(dim, int) or not -tensor.ndim <= dim < max(tensor.ndim, 1):
        return None
    return dim % tensor.ndim if tensor.ndim else None


def _op_kind(fn):
    """The registry kind of `fn` (an op, or a Tensor method's name); POINTWISE for Python's
    arithmetic and comparison operators, whose numbers are operands, never sizes."""
    if isinstance(fn, str):
        try:
            return registry_get(fn).kind
        except AttributeError:
            return None
    if isinstance(fn, OpDef):
        return fn.kind
    return POINTWISE if fn in _SIZE_NEUTRAL_OPERATORS else None


def _refuse_new_leaf(fn, kwargs):
    """A factory given requires_grad=True makes a leaf: a graph's outputs are results of its
    backward-traced computation (or of none), never leaves, so the call runs natively and the
    code after it takes the leaf as an input."""
    flag = kwargs.get("requires_grad")
    if flag is not None and flag.is_python_constant() and flag.as_python_constant():
        unimplemented(BreakKind.UNSUPPORTED_VALUE,
                      f"{_op_name(fn) or fn}(..., requires_grad=True) makes a leaf tensor, which a graph "
                      "cannot output")


def _refuse_out(fn, kwargs):
    """An op writing into `out=` runs natively: it returns the caller's tensor itself, which
    it may resize (a graph's outputs are new tensors)."""
    out = kwargs.get("out")
    if out is not None and not (out.is_python_constant() and out.as_python_constant() is None):
        unimplemented(BreakKind.MUTATION, f"{getattr(fn, '__name__', fn)}(..., out=) writes into a tensor it is given")


class _Tx:
    """The bit of a translator wrap_result needs."""

    def __init__(self, output):
        self.output = output


def _produces_tensors(value):
    if isinstance(value, Tensor):
        return True
    # a sequence of tensors, where some may be None (attention's weights with need_weights=False)
    if isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value) \
            and all(v is None or isinstance(v, Tensor) for v in value):
        return True
    return False


def _meta(value):
    if isinstance(value, Tensor):
        return TensorMeta.of(value)
    return tuple(None if v is None else TensorMeta.of(v) for v in value)


def _flat(args, kwargs):
    out = []

    def rec(v):
        if isinstance(v, (TupleVariable, ListVariable)):
            for i in v.items:
                rec(i)
        elif isinstance(v, DictVariable):
            for i in v.items.values():
                rec(i)
        else:
            out.append(v)
    for a in list(args) + list(kwargs.values()):
        rec(a)
    return out


def _placeholder_name(source):
    import re
    e = source.expr()
    if e.startswith("G["):
        body = "G_" + re.sub(r"[^0-9a-zA-Z]+", "_", e[2:]).strip("_")
    else:
        body = "L_" + re.sub(r"[^0-9a-zA-Z]+", "_", e).strip("_")
    return body + ("_" if "." not in e and "[" not in e or e.startswith("G[") and e.count("[") == 1 else "")
