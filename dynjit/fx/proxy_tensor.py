"""make_fx: trace a function at the op-dispatch level.

While tracing, a DispatchMode sees every op: it runs the op for real (so
Python control flow and `.item()` see real values) and records a
call_function node whose arguments are the nodes of the input tensors.
Custom autograd Functions and autograd.grad inside the function are traced
through: their ops (including the backward formulas) become nodes.

Tracing with real values means that a branch on a tensor's value is taken
once and baked into the graph, as with any tracer; tensors the function
reads that are not its inputs (globals, closure cells) become constants
(`get_attr` nodes) that refer to those tensors.
"""
import inspect
import operator

import numpy as np
from numpy.lib.array_utils import byte_bounds

from .._pytree import tree_flatten, tree_unflatten
from ..ops import dispatch as _dispatch
from ..ops.dispatch import DispatchMode
from ..ops.registry import INPLACE, registry
from ..tensor import Size, Tensor, _data_reads
from .graph import Graph
from .graph_module import GraphModule
from .traced_number import NumberTracing, TracedNumber, acting_as_values, call_op, check_specialized, \
    has_traced, is_traceable_number


_clone = registry["clone"]


class TensorMeta:
    """What a node's `meta["val"]` records about a tensor: shape, dtype, stride."""
    __slots__ = ("shape", "dtype", "stride", "requires_grad", "sym_shape")

    def __init__(self, shape, dtype, stride=None, requires_grad=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.stride = stride
        self.requires_grad = requires_grad
        self.sym_shape = None       # in a symbolic trace: each size as a string ("s0", "4*s0", "3")

    @classmethod
    def of(cls, t):
        # a sparse tensor (ops/sparse.py) has no strides
        stride = t.stride() if type(t._data) is np.ndarray else None
        return cls(t._data.shape, t.dtype, stride, t._requires_grad)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    def __repr__(self):
        shape = self.sym_shape if self.sym_shape is not None else self.shape
        return f"TensorMeta({self.dtype._short}[{', '.join(str(s) for s in shape)}])"


def meta_of(value):
    if isinstance(value, Tensor):
        return TensorMeta.of(value)
    if isinstance(value, (tuple, list)):
        return type(value)(meta_of(v) for v in value) if not hasattr(value, "_fields") \
            else type(value)(*(meta_of(v) for v in value))
    return value


class GraphTracer(DispatchMode):
    """Records every dispatched op into `self.graph`."""

    def __init__(self, graph=None):
        self.graph = graph if graph is not None else Graph()
        self._nodes = {}        # id(tensor) -> (tensor, node); holds the tensor alive
        self._by_data = {}      # id(numpy array) -> (array, node): aliases made without an op
        self.constants = {}     # attribute name -> tensor, for tensors made outside the trace
        self.decompositions = {}
        self.record_stack_traces = False    # give each op node meta["stack_trace"] (user frames)
        self.numbers = NumberTracing(self.graph)    # the graph's int and float inputs
        self.shape_env = None   # symbolic sizes (dynjit.fx.symbolic_shapes.ShapeEnv), when traced so
        # make_fx's tracing_mode "fake"/"symbolic": the tensors made outside the trace stand for
        # PyTorch's non-fake tensors, whose metadata (size, strides) the trace must not change
        self.fake_tracing = False
        self._external = {}     # id(tensor) -> tensor, for each tensor made a constant

    def track(self, tensor, node):
        self._nodes[id(tensor)] = (tensor, node)
        self._by_data[id(tensor._data)] = (tensor._data, node)
        node.meta["val"] = node.meta["tensor_meta"] = TensorMeta.of(tensor)

    def is_tracked(self, tensor):
        entry = self._nodes.get(id(tensor))
        return entry is not None and entry[0] is tensor

    def node_of(self, value):
        """The node for a tensor; an untracked tensor becomes a constant attribute."""
        entry = self._nodes.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1]
        # A tensor wrapping the very array of a traced tensor (e.g. an input that a
        # custom Function returned as is) is that tensor's value.
        alias = self._by_data.get(id(value._data))
        if alias is not None and alias[0] is value._data:
            if self.shape_env is not None:
                source = next((t for t, n in self._nodes.values() if n is alias[1]), None)
                shape = self.shape_env.shape_of(source) if source is not None else None
                self.shape_env.set_shape(value, shape if shape is not None else
                                         tuple(None for _ in value._data.shape))
            self.track(value, alias[1])
            return alias[1]
        return self.add_constant(value)

    def add_constant(self, value, snapshot=False):
        """A get_attr node for a tensor made outside the trace (`snapshot`: of a copy of it)."""
        name = f"_tensor_constant{len(self.constants)}"
        if snapshot:
            copy = Tensor._make(value._data.copy())
            copy._requires_grad = value._requires_grad
            self.constants[name] = copy
        else:
            self.constants[name] = value
        self._external[id(value)] = value
        with self.graph.inserting_before(self._first_non_placeholder()):
            node = self.graph.get_attr(name)
        self.track(value, node)
        return node

    def _first_non_placeholder(self):
        for n in self.graph.nodes:
            if n.op != "placeholder":
                return n
        return None

    def to_arg(self, value):
        if isinstance(value, Tensor):
            return self.node_of(value)
        if type(value) is TracedNumber:
            return self.number_arg(value)
        if isinstance(value, (list, tuple)):
            mapped = [self.to_arg(v) for v in value]
            return type(value)(*mapped) if hasattr(value, "_fields") else type(value)(mapped)
        if isinstance(value, dict):
            return {k: self.to_arg(v) for k, v in value.items()}
        if type(value) is slice and has_traced(value):
            return slice(self.to_arg(value.start), self.to_arg(value.stop), self.to_arg(value.step))
        return value

    def number_arg(self, number):
        """The node of a traced number of this trace; one of another (finished or enclosing)
        trace is a constant of this graph, specialized there."""
        if number._tracing is self.numbers and self.numbers.active:
            return number._node
        return int(number) if type(number._value) is int else float(number)

    def run_op(self, op, args, kwargs):
        """Run an op for real (see traced_number.call_op for arguments holding traced numbers)."""
        if has_traced(args) or (kwargs and has_traced(kwargs)):
            return call_op(op, args, kwargs)
        if self.shape_env is not None:
            with acting_as_values():      # the op's own reads of sizes are its business
                return op(*args, **kwargs)
        return op(*args, **kwargs)

    def __dispatch__(self, op, args, kwargs):
        decomp = self.decompositions.get(op)
        if decomp is not None:
            with self:     # the decomposition's own ops are traced
                return decomp(*args, **kwargs)
        if op.kind == INPLACE:
            result = self.run_inplace(op, args, kwargs)
        else:
            result = self.run_op(op, args, kwargs)
        env = self.shape_env
        if env is not None:
            args = symbolic_size_arguments(env, op, args)
        node = self.graph.call_function(op, self.to_arg(_trim_defaults(op, args)), self.to_arg(kwargs))
        if self.record_stack_traces:
            node.meta["stack_trace"] = user_stack_trace()
        self.record_result(node, result)
        if env is not None:
            self.record_symbolic_result(env, op, args, kwargs, result)
        return result

    def record_symbolic_result(self, env, op, args, kwargs, result):
        """The symbolic shapes of an op's results, for the sizes read from them later; the
        input shapes its autograd node keeps for its derivative become symbolic too."""
        outs = env.infer(op, args, kwargs, result)
        for o in outs or ():
            entry = self._nodes.get(id(o))
            shape = env.shape_of(o)
            if entry is not None and entry[0] is o and shape is not None:
                meta = entry[1].meta.get("val")
                if isinstance(meta, TensorMeta) and meta.sym_shape is None:
                    meta.sym_shape = env.sym_strs(shape)
        first = result if isinstance(result, Tensor) else next(
            (r for r in result if isinstance(r, Tensor)), None) if isinstance(result, (tuple, list)) else None
        grad_fn = getattr(first, "_grad_fn", None)
        if grad_fn is not None and getattr(grad_fn, "op", None) is op and getattr(grad_fn, "_shapes", None):
            try:
                full = op.normalize(tuple(args), kwargs or {})
            except TypeError:
                return
            symbolic = {}
            for name, i in op.shape_params:
                shape = env.shape_of(full[i]) if isinstance(full[i], Tensor) else None
                if shape is not None and any(p is None or not p.is_const() for p in shape):
                    symbolic[name] = Size(env.size_of(full[i]))
            if symbolic:
                grad_fn._shapes = {**grad_fn._shapes, **symbolic}

    def check_metadata_mutation(self, name, tensor, args):
        """PyTorch's error for a metadata mutation (`resize_`, `t_`, `set_`) of a tensor made
        outside a fake or symbolic trace (a module's real weight or buffer): its size and
        strides are not the trace's to change."""
        if self.fake_tracing and self._made_outside(tensor):
            def show(a):
                if isinstance(a, Tensor):
                    return f"tensor([...], size={tuple(a._data.shape)})"
                return repr(list(a)) if isinstance(a, tuple) else repr(a)
            overload = "source_Tensor" if name == "set_" else "default"
            raise RuntimeError("Can't call metadata mutating ops on non-Fake Tensor inputs. Found in "
                               f"aten.{name}.{overload}({', '.join(show(a) for a in (tensor,) + tuple(args))})")

    def _made_outside(self, tensor):
        """Is `tensor` neither an input of the trace nor made (or aliased) by it?"""
        if self.is_tracked(tensor):
            return self._external.get(id(tensor)) is tensor
        alias = self._by_data.get(id(tensor._data))
        return alias is None or alias[0] is not tensor._data

    def __metadata_mutation__(self, kind, tensor, args):
        """An in-place view op (`x.t_()`) is recorded as its view op, whose node `x` is from
        then on; `x.set_(y)` makes `x` the node of `y` (see dynjit.ops.metadata)."""
        from ..ops.metadata import INPLACE_VIEWS, eager_metadata_mutation
        self.check_metadata_mutation(kind, tensor, args)
        if kind == "set_":
            node = self.node_of(args[0])
            eager_metadata_mutation(kind, tensor, args)
        else:
            src = self.node_of(tensor)
            eager_metadata_mutation(kind, tensor, args)
            node = self.graph.call_function(INPLACE_VIEWS[kind], (src,) + self.to_arg(tuple(args)))
        self.track(tensor, node)
        return tensor

    def run_inplace(self, op, args, kwargs):
        """Run an in-place op for real, tracing the copy of the old value that autograd saves."""
        _dispatch._snapshot_observers.append(self.record_snapshot)
        try:
            return self.run_op(op, args, kwargs)
        finally:
            _dispatch._snapshot_observers.pop()

    def record_snapshot(self, tensor, snapshot):
        """`snapshot` is a copy of `tensor` taken just before an in-place write."""
        self.track(snapshot, self.graph.call_function(_clone, (self.node_of(tensor),)))
        if self.shape_env is not None and self.shape_env.shape_of(tensor) is not None:
            self.shape_env.set_shape(snapshot, self.shape_env.shape_of(tensor))

    def record_result(self, node, result):
        if isinstance(result, Tensor):
            self.track(result, node)
        elif isinstance(result, (tuple, list)):
            node.meta["val"] = meta_of(result)
            for i, r in enumerate(result):
                if isinstance(r, Tensor):
                    self.track(r, self.graph.call_function(operator.getitem, (node, i)))
        else:
            node.meta["val"] = result


def symbolic_size_arguments(env, op, args):
    """sum_to_size(g, size) called with plain sizes (autograd reducing a broadcast gradient to
    an input's shape): each target size other than 1 equals g's size there, so it is g's
    symbolic size."""
    if op.name != "sum_to_size" or len(args) < 2 or not isinstance(args[0], Tensor):
        return args
    shape = env.shape_of(args[0])
    size = args[1]
    if shape is None or not isinstance(size, (tuple, list)) or has_traced(size):
        return args
    offset = len(shape) - len(size)
    new = list(size)
    for d, n in enumerate(size):
        p = shape[offset + d] if offset + d >= 0 else None
        if type(n) is int and n != 1 and p is not None and args[0]._data.shape[offset + d] == n:
            new[d] = env.number_for(p)
    return (args[0], tuple(new)) + tuple(args[2:])


def user_stack_trace():
    """The calling frames outside dynjit, formatted like a traceback (most recent call last)."""
    import os
    import traceback
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_stack()[:-1] if not os.path.abspath(f.filename).startswith(pkg)]
    return "".join(traceback.format_list(frames))


def _trim_defaults(op, args):
    """Drop trailing positional arguments equal to the op's defaults (for readable graphs)."""
    n = len(args)
    defaults = op.defaults
    while n > op.required and n <= len(defaults):
        a, d = args[n - 1], defaults[n - 1]
        if isinstance(a, Tensor) or type(a) is not type(d) or has_traced(a) or a != d:
            break
        n -= 1
    return args[:n]


def _placeholder_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    return [f"{names[i]}_1" if i < len(names) else f"arg{i}_1" for i in range(n)]


def same_layout_copy(arr):
    """A copy of a numpy array with the same shape and strides (a transposed or sliced
    input stays transposed or sliced), so that tracing on it sees what the caller's
    tensor would show."""
    if arr.flags.c_contiguous or arr.size == 0:
        return arr.copy()
    lo, hi = byte_bounds(arr)
    item = arr.itemsize
    buf = np.empty((hi - lo) // item, dtype=arr.dtype)
    start = (arr.__array_interface__["data"][0] - lo) // item
    out = np.lib.stride_tricks.as_strided(buf[start:], arr.shape, arr.strides)
    np.copyto(out, arr)
    if not arr.flags.writeable:
        out.flags.writeable = False
    return out


def _check_specialized_numbers(tracer, number_inputs, leaves):
    """The graph checks, first thing, that each number input the trace specialized has the
    value it was traced with (make_fx's graph has no cache to retrace for another)."""
    # after the last placeholder (a trace run again with plain numbers may have made a
    # constant before them): a node never reads a placeholder defined after it
    placeholders = [n for n in tracer.graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    for i, why in sorted(tracer.numbers.specialized.items(), reverse=True):
        node = number_inputs[i]
        if anchor is None:
            with tracer.graph.inserting_before(tracer._first_non_placeholder()):
                tracer.graph.call_function(check_specialized, (node, leaves[i], node.name, why))
        else:
            with tracer.graph.inserting_after(anchor):
                tracer.graph.call_function(check_specialized, (node, leaves[i], node.name, why))


def make_fx(fn, decomposition_table=None, tracing_mode="real", *, pre_dispatch=False,
            record_module_stack=False, _allow_non_fake_inputs=False, record_stack_traces=False):
    """make_fx(fn)(*args) -> GraphModule that replays fn's ops on new inputs.

    Every argument becomes a placeholder (nested lists/tuples/dicts are
    flattened; the GraphModule accepts the same nesting). The traced function
    runs on copies of the tensor arguments, so tracing never mutates the
    caller's tensors; in-place ops are recorded as in-place ops.
    `decomposition_table` maps ops (`dynjit.ops.<name>`) to Python functions
    that are traced instead of the op. Only real tracing exists:
    `tracing_mode` "fake" and "symbolic" are accepted and trace with the
    real values; as in PyTorch, changing the metadata (`resize_`, `t_`, `set_`) of a
    tensor made outside the trace (a module's weight or buffer) raises there. `record_stack_traces` gives each op node `meta["stack_trace"]`: the
    user's frames (outside dynjit) that called the op, which AOT autograd carries over
    to the nodes it makes from that node.

    An int or float argument is traced as a number (dynjit.fx.traced_number): ops it is
    passed to, and arithmetic on it, take it from its placeholder, so the graph computes
    with the value it is called with. Where the function needs the value itself (an `if`,
    `range`, `int()`, `math.sqrt`, a size), the number is specialized: the graph then starts
    by checking that it is called with the traced value, and raises otherwise. Reading a
    traced tensor's value (`.item()`, `if t.sum() > 0`) specializes every number input, as
    that value may depend on any of them.
    """
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise ValueError(f"tracing_mode must be 'real', 'fake' or 'symbolic', got {tracing_mode!r}")
    if decomposition_table is not None and not isinstance(decomposition_table, dict):
        raise TypeError("decomposition_table must be a dict mapping ops to Python functions")

    def wrapped(*args):
        leaves, spec = tree_flatten(args)
        if not any(is_traceable_number(v) for v in leaves):
            return trace(leaves, spec, False)
        from .. import random as _random
        state = _random.get_rng_state()
        try:
            return trace(leaves, spec, True)
        except Exception as e:
            failure = f"tracing with it as a number raised {type(e).__name__}: {e}"
        # Python code that does not take a traced number for a number: plain numbers, all
        # checked by the graph (an error of the function itself raises again)
        _random.set_rng_state(state)
        return trace(leaves, spec, False, failure)

    def trace(leaves, spec, trace_numbers, failure=None):
        _, _, arg_specs = spec
        nested = any(s is not None for s in arg_specs)
        tracer = GraphTracer()
        tracer.fake_tracing = tracing_mode != "real"
        tracer.record_stack_traces = record_stack_traces
        if decomposition_table:
            tracer.decompositions = dict(decomposition_table)
        names = [f"arg{i}_1" for i in range(len(leaves))] if nested else _placeholder_names(fn, len(leaves))
        traced_leaves = []
        number_inputs = {}
        for i, (name, leaf) in enumerate(zip(names, leaves)):
            node = tracer.graph.placeholder(name)
            if isinstance(leaf, Tensor):
                copy = Tensor._make(same_layout_copy(leaf._data))
                copy._requires_grad = leaf._requires_grad
                tracer.track(copy, node)
                leaf = copy
            elif is_traceable_number(leaf):
                number_inputs[i] = node
                if trace_numbers:
                    leaf = tracer.numbers.input(leaf, node, i)
                else:
                    tracer.numbers.specialized[i] = failure
            traced_leaves.append(leaf)
        traced_args = tree_unflatten(spec, traced_leaves)

        def on_data_read(tensor, what):
            # a branch on a traced tensor's value is baked into the graph; that value may
            # depend on the numbers (x * n), so the graph holds only for their values
            if tracer.is_tracked(tensor):
                tracer.numbers.specialize_inputs(f"Tensor.{what}() of a traced tensor, which may depend on it")
        _data_reads.append(on_data_read)
        try:
            with tracer:
                out = fn(*traced_args)
            tracer.graph.output(tracer.to_arg(out))
        finally:
            _data_reads.pop()
            tracer.numbers.finish()
        _check_specialized_numbers(tracer, number_inputs, leaves)
        tracer.graph.eliminate_dead_code()
        gm = GraphModule(tracer.constants, tracer.graph)
        if nested:
            gm._in_spec = spec
        return gm
    return wrapped
