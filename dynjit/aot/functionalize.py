"""Functionalization while tracing: in-place ops become out-of-place ops.

`FunctionalTracer` records like make_fx's tracer, but an in-place op
`t.add_(y)` is recorded as `add(t, y)` and `t` is rebound to the new node; if
`t` is a view, its base is rebound to `view_scatter(base, new, chain)`, and
every other view of that base is re-derived from the base the next time it
is used (noticed through the shared version counter). The graph is then free
of mutation; mutations of graph inputs are reported so the runtime can copy
the final values back, exactly as eager would have mutated them.
"""
from ..autograd.graph import view_chain
from ..fx.proxy_tensor import GraphTracer, _trim_defaults
from ..ops.registry import INPLACE, registry

_view_scatter = registry["view_scatter"]


class AliasingNotSupported(RuntimeError):
    pass


class FunctionalTracer(GraphTracer):
    def __init__(self, graph=None):
        super().__init__(graph)
        self._versions = {}

    def track(self, tensor, node):
        super().track(tensor, node)
        self._versions[id(tensor)] = tensor._version_counter[0]

    def is_tracked(self, tensor):
        entry = self._nodes.get(id(tensor))
        return entry is not None and entry[0] is tensor

    def node_of(self, value):
        entry = self._nodes.get(id(value))
        if entry is None or entry[0] is not value:
            return super().node_of(value)
        if self._versions[id(value)] == value._version_counter[0]:
            return entry[1]
        # Written in place through an alias since we recorded it: re-derive from the base.
        base = value._base
        if base is None or not self.is_tracked(base):
            raise AliasingNotSupported(
                "a tensor was modified in place through an alias that is not a view of it (for "
                "example through .detach() or .data); dynjit's AOT tracing cannot follow that. "
                "Use .clone() before modifying, or modify the tensor itself.")
        node = self.node_of(base)
        for op, rest, index in view_chain(value):
            node = self.graph.call_function(op, (node,) + tuple(self.to_arg(list(rest))))
            if index is not None:
                import operator
                node = self.graph.call_function(operator.getitem, (node, index))
        self.track(value, node)
        return node

    def __dispatch__(self, op, args, kwargs):
        if op.kind != INPLACE:
            return super().__dispatch__(op, args, kwargs)
        target = args[0]
        arg_nodes = self.to_arg(_trim_defaults(op.functional, args))
        kwarg_nodes = self.to_arg(kwargs)
        base = target._base
        base_node = self.node_of(base) if base is not None else None
        result = op(*args, **kwargs)          # the real (eager) in-place update
        node = self.graph.call_function(op.functional, arg_nodes, kwarg_nodes)
        self.track(target, node)
        if base is not None:
            chain = tuple(view_chain(target))
            new_base = self.graph.call_function(_view_scatter, (base_node, node, chain))
            self.track(base, new_base)
        return result
