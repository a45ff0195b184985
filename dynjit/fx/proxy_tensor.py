"""make_fx: trace a function at the op-dispatch level.

While tracing, a DispatchMode sees every op: it runs the op for real (so
Python control flow and `.item()` see real values) and records a
call_function node whose arguments are the nodes of the input tensors.
Custom autograd Functions and autograd.grad inside the function are traced
through: their ops (including the backward formulas) become nodes.
"""
import inspect
import operator

from ..ops.dispatch import DispatchMode
from ..tensor import Tensor
from .graph import Graph
from .graph_module import GraphModule
from .node import map_arg


class TensorMeta:
    """What a node's `meta["val"]` records about a tensor: shape, dtype, stride."""
    __slots__ = ("shape", "dtype", "stride", "requires_grad")

    def __init__(self, shape, dtype, stride=None, requires_grad=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.stride = stride
        self.requires_grad = requires_grad

    @classmethod
    def of(cls, t):
        return cls(t._data.shape, t.dtype, t.stride(), t._requires_grad)

    def __repr__(self):
        return f"TensorMeta({self.dtype._short}{list(self.shape)})"


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
        self.constants = {}     # attribute name -> tensor, for tensors made outside the trace
        self.decompositions = {}

    def track(self, tensor, node):
        self._nodes[id(tensor)] = (tensor, node)
        node.meta["val"] = TensorMeta.of(tensor)

    def node_of(self, value):
        """The node for a tensor; an untracked tensor becomes a constant attribute."""
        entry = self._nodes.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1]
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = value
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
        if isinstance(value, (list, tuple)):
            mapped = [self.to_arg(v) for v in value]
            return type(value)(*mapped) if hasattr(value, "_fields") else type(value)(mapped)
        if isinstance(value, dict):
            return {k: self.to_arg(v) for k, v in value.items()}
        return value

    def __dispatch__(self, op, args, kwargs):
        decomp = self.decompositions.get(op)
        if decomp is not None:
            return decomp(*args, **kwargs)
        result = op(*args, **kwargs)
        node = self.graph.call_function(op, self.to_arg(_trim_defaults(op, args)), self.to_arg(kwargs))
        self.record_result(node, result)
        return result

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


def _trim_defaults(op, args):
    """Drop trailing positional arguments equal to the op's defaults (for readable graphs)."""
    n = len(args)
    defaults = op.defaults
    while n > op.required and n <= len(defaults):
        a, d = args[n - 1], defaults[n - 1]
        if isinstance(a, Tensor) or type(a) is not type(d) or a != d:
            break
        n -= 1
    return args[:n]


def _flatten(args):
    leaves = []

    def rec(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                rec(x)
        elif isinstance(a, dict):
            for x in a.values():
                rec(x)
        else:
            leaves.append(a)
    rec(args)
    return leaves


def _placeholder_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    return [f"{names[i]}_1" if i < len(names) else f"arg{i}_1" for i in range(n)]


def make_fx(fn, decomposition_table=None, tracing_mode="real", *, pre_dispatch=False,
            record_module_stack=False, _allow_non_fake_inputs=False):
    """make_fx(fn)(*args) -> GraphModule that replays fn's ops on new inputs.

    Tensors among `args` (nested lists/tuples/dicts are flattened) become the
    graph's placeholders, in order; the traced function runs on copies of
    them, so tracing never mutates the caller's tensors.
    """
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise ValueError(f"tracing_mode must be 'real', 'fake' or 'symbolic', got {tracing_mode!r}")

    def wrapped(*args):
        leaves = _flatten(args)
        tracer = GraphTracer()
        if decomposition_table:
            tracer.decompositions = dict(decomposition_table)
        names = _placeholder_names(fn, len(leaves)) if len(leaves) == len(args) else \
            [f"arg{i}_1" for i in range(len(leaves))]
        copies = {}
        for name, leaf in zip(names, leaves):
            node = tracer.graph.placeholder(name)
            if isinstance(leaf, Tensor):
                copy = Tensor._make(leaf._data.copy())
                copy._requires_grad = leaf._requires_grad
                copies[id(leaf)] = copy
                tracer.track(copy, node)
        traced_args = _replace(args, copies)
        with tracer:
            out = fn(*traced_args)
        tracer.graph.output(map_arg(tracer.to_arg(out), lambda n: n))
        tracer.graph.eliminate_dead_code()
        return GraphModule(tracer.constants, tracer.graph)
    return wrapped


def _replace(value, copies):
    if isinstance(value, Tensor):
        return copies.get(id(value), value)
    if isinstance(value, tuple):
        items = [_replace(v, copies) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_replace(v, copies) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, copies) for k, v in value.items()}
    return value
