"""Functionalization while tracing: in-place ops become out-of-place ops.

`FunctionalTracer` records like make_fx's tracer, but an in-place op
`t.add_(y)` is recorded as `add(t, y)` and `t` is rebound to the new node; if
`t` is a view, its base is rebound to `view_scatter(base, new, chain)`, and
every other view of that base is re-derived from the base the next time it
is used (noticed through the shared version counter). The graph is then free
of mutation; mutations of graph inputs are found afterwards by comparing an
input's node with its placeholder, so the runtime can apply them exactly as
eager would have.
"""
import operator

import numpy as np

from ..autograd.grad_mode import no_grad, state as _grad_state
from ..autograd.graph import view_chain
from ..fx.proxy_tensor import GraphTracer, _trim_defaults
from ..fx.traced_number import plain
from ..ops.registry import INPLACE, registry
from ..tensor import Tensor

_view_scatter = registry["view_scatter"]
_to_dtype = registry["to_dtype"]


class AliasingNotSupported(RuntimeError):
    pass


class FunctionalTracer(GraphTracer):
    def __init__(self, graph=None):
        super().__init__(graph)
        self.lift = None        # lift(tensor) -> placeholder node, for constants that need grad
        self.is_global = lambda tensor: False   # is a tensor one the function reaches by name?
        self._versions = {}
        self.alias_of = {}      # id(alias) -> (op, source tensor), for ops like detach
        # id(root tensor) -> name of the first in-place op that wrote it with autograd
        # recording (grad mode on and an operand requiring grad); writes under no_grad
        # or on tensors without grad are hidden from autograd
        self.autograd_writes = {}
        self.data_written = set()   # ids of tensors whose memory an in-place op wrote
        # id(tensor) -> (tensor, [(method name, args, grad mode)]): in-place view ops applied
        self.meta_mutations = {}
        self.set_targets = {}       # id(tensor) -> tensor, for tensors given other memory by set_()
        # id(input tensor) -> (tensor, its placeholder node, name, its layout at the start):
        # the function's arguments, whose memory set_() may leave and come back to
        self.inputs = {}
        # stack traces: the user's source lines of the node being run (when the traced function
        # is a graph whose nodes carry meta["stack_trace"]) are copied onto the nodes made for
        # it; backward nodes get those of the forward op whose derivative they compute
        self.source_stack_trace = None
        self.write_traces = {}      # id(tensor) -> stack trace of the last in-place write to it
        self._call_function = self.graph.call_function
        self.graph.call_function = self._call_function_with_trace

    def current_stack_trace(self):
        if self.source_stack_trace is not None:
            return self.source_stack_trace
        from ..autograd.graph import _current_autograd_node
        try:
            node = _current_autograd_node()
        except Exception:
            return None
        return getattr(node, "_aot_stack_trace", None)

    def _call_function_with_trace(self, *args, **kwargs):
        node = self._call_function(*args, **kwargs)
        trace = self.current_stack_trace()
        if trace is not None:
            node.meta.setdefault("stack_trace", trace)
        return node

    def _tag_autograd_nodes(self, result):
        """Remember on the autograd nodes an op made which user line made the op."""
        trace = self.source_stack_trace
        if trace is None:
            return
        for r in (result if isinstance(result, (tuple, list)) else (result,)):
            fn = getattr(r, "_grad_fn", None) if isinstance(r, Tensor) else None
            if fn is not None and getattr(fn, "_aot_stack_trace", None) is None:
                try:
                    fn._aot_stack_trace = trace
                except AttributeError:
                    pass

    def track(self, tensor, node):
        super().track(tensor, node)
        self._versions[id(tensor)] = tensor._version_counter[0]

    def node_of(self, value):
        entry = self._nodes.get(id(value))
        if entry is not None and entry[0] is value:
            if self._versions[id(value)] == value._version_counter[0]:
                return entry[1]
            return self._rederive(value)      # written in place through an alias since
        base = value._base
        if base is not None and self.is_tracked(base) and value._view_of is not None:
            return self._rederive(value)
        return super().node_of(value)

    def add_constant(self, value, snapshot=False):
        if self.lift is not None and value._requires_grad and not snapshot:
            return self.lift(value)
        return super().add_constant(value, snapshot)

    def _rederive(self, value):
        """The node of a view (or alias) of a tensor written in place: recomputed from its base."""
        base = value._base
        if base is None or not self.is_tracked(base):
            source = self.alias_of.get(id(value))
            if source is not None and self.is_tracked(source[1]):
                node = self.graph.call_function(source[0], (self.node_of(source[1]),))
                self.track(value, node)
                return node
            raise AliasingNotSupported(
                "a tensor was modified in place through another tensor sharing its memory that is "
                "neither a view nor a detach() of it (made outside dynjit's ops, e.g. from the same "
                "numpy array); AOT tracing cannot follow that write. Use .clone() before modifying, "
                "or modify the tensor itself.")
        node = self.node_of(base)
        for op, rest, index in view_chain(value):
            node = self.graph.call_function(op, (node,) + tuple(self.to_arg(list(rest))))
            if index is not None:
                node = self.graph.call_function(operator.getitem, (node, index))
        self.track(value, node)
        return node

    def __metadata_mutation__(self, kind, tensor, args):
        """In-place view ops and set_() (see dynjit.ops.metadata): the tensor is rebound to
        the view's node (or the source's); what happened to which tensor is recorded so that
        AOT autograd can replay it on the caller's tensors."""
        if kind == "set_":
            return self._set_(tensor, args[0])
        base = tensor._base
        base_current = base is not None and self.is_tracked(base) and \
            self._versions[id(base)] == base._version_counter[0]
        super().__metadata_mutation__(kind, tensor, args)
        if base_current:
            # the version bump changed no data: the base's node is still its value
            self._versions[id(base)] = base._version_counter[0]
        self.meta_mutations.setdefault(id(tensor), (tensor, []))[1].append(
            (kind, tuple(args), _grad_state.enabled))
        return tensor

    def _set_(self, tensor, source):
        node = self.node_of(source)
        layout = (source.data_ptr(), source._data.shape, source._data.strides,
                  id(source._version_counter), source._version_counter[0])
        for t, ph, _, original in self.inputs.values():
            if layout == original:
                # back on an argument's own memory, with its layout and unwritten: its placeholder
                node = ph
                break
        from ..ops.metadata import eager_set_
        eager_set_(tensor, source)
        self.track(tensor, node)
        self.set_targets[id(tensor)] = tensor
        return tensor

    def _check_write_after_set_(self, op, target, root):
        entry = self.inputs.get(id(root))
        if id(root) not in self.set_targets:
            return
        if not np.may_share_memory(target._data, root._data):
            raise RuntimeError(
                f"the traced function writes in place ({op.name}) into memory that "
                f"{entry[2] if entry else 'a tensor'} used before set_() gave it other memory (through "
                "a view taken before the set_()); AOT autograd cannot replay that write, since it "
                "cannot mutate tensors with frozen storage. Write through a view taken after set_(), "
                "or clone() before writing.")
        if entry is not None:
            raise RuntimeError(
                f"the traced function calls set_() on {entry[2]}, but the input has other mutations "
                f"that we cannot replay together with set_() (an in-place {op.name} after it); AOT "
                "autograd only supports set_() on an input that is not otherwise modified. Write "
                "into a clone instead.")

    def __dispatch__(self, op, args, kwargs):
        if op.kind != INPLACE:
            result = super().__dispatch__(op, args, kwargs)
            if op.aliases_input:
                self.alias_of[id(result)] = (op, args[0])
            self._tag_autograd_nodes(result)
            return result
        target = args[0]
        base = target._base
        root = base if base is not None else target
        if not self.is_tracked(root) and id(root._data) not in self._by_data:
            if (self.lift is not None and root._requires_grad) or self.is_global(root):
                raise RuntimeError(
                    f"the traced function modifies in place ({op.name}) a tensor that is not one of "
                    "its arguments (a global or closure tensor); AOT tracing cannot replay that "
                    "write on every call. Pass the tensor as an argument.")
            # A tensor made outside the trace (a literal built inside the function):
            # the graph must start from its value before this write.
            self.add_constant(root, snapshot=True)
        if self.set_targets:
            self._check_write_after_set_(op, target, root)
        arg_nodes = self.to_arg(_trim_defaults(op.functional, args))
        kwarg_nodes = self.to_arg(kwargs)
        writes = self._writes_through(target)
        if _grad_state.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
            for t, b, _ in writes:
                self.autograd_writes.setdefault(id(b if b is not None else t), op.name)
        out_dtype = self._functional_dtype(op, args, kwargs)
        result = self.run_inplace(op, args, kwargs)     # the real (eager) in-place update
        value = self.graph.call_function(op.functional, arg_nodes, kwarg_nodes)
        if out_dtype is not target.dtype:
            # the in-place op casts its result into self's dtype (x32.add_(y64), x.logical_not_())
            value = self.graph.call_function(_to_dtype, (value, target.dtype))
        trace = self.current_stack_trace()
        self._tag_autograd_nodes(target)
        for t, b, base_node in writes:
            self.data_written.add(id(t))
            self.write_traces[id(t)] = trace
            if b is not None:
                self.data_written.add(id(b))
                self.write_traces[id(b)] = trace
            self.track(t, value)
            if b is not None:
                value = self.graph.call_function(_view_scatter, (base_node, value, tuple(view_chain(t))))
                self.track(b, value)
        return result

    @staticmethod
    def _functional_dtype(op, args, kwargs):
        args, kwargs = plain(args), plain(kwargs)     # the dtype follows the numbers' types
        try:
            meta = op.functional.meta(args, kwargs)
        except Exception:
            with no_grad():
                meta = op.functional(*args, **kwargs)
        return meta[1] if isinstance(meta, tuple) else meta.dtype

    def record_snapshot(self, tensor, snapshot):
        # In a functional graph the node of the old value still exists.
        self.track(snapshot, self.node_of(tensor))

    def _writes_through(self, target):
        """[(tensor, its base, the base's node now)] for each tensor a write to `target`
        changes: the target, its base, and through aliases (detach) their sources."""
        writes = []
        t = target
        while t is not None and len(writes) < 64:
            base = t._base
            writes.append((t, base, self.node_of(base) if base is not None else None))
            source = self.alias_of.get(id(base if base is not None else t))
            t = source[1] if source is not None else None
        return writes
