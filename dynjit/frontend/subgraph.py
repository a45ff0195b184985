"""SubgraphOutput: where a nested body (an autograd.Function's forward or
backward) is recorded while the enclosing function is traced.

It stands in for the OutputGraph (`tx.output`) while the body is inlined:
ops go into its own Graph; guards, side effects and constants are the
enclosing trace's. A tensor of an enclosing graph that the body uses (a
tensor argument, an attribute of a dataclass argument, a global, a value the
forward saved for the backward) is *lifted*: it becomes a placeholder of the
body, and the enclosing value is remembered in `lifted` so that the caller
passes it in (in the backward, the forward's value is *saved* and passed).
Tensors read from sources during the body are the root trace's inputs; they
are lifted where an op, or the body's result, uses them.
"""
from ..fx.graph import Graph
from ..fx.proxy_tensor import TensorMeta
from .output_graph import OutputGraph
from .variables import TensorVariable, TupleVariable, ListVariable, DictVariable


class SubgraphOutput(OutputGraph):
    def __init__(self, parent, grad_enabled):
        # OutputGraph.__init__ is not called: what is not set here is the root trace's
        self.__dict__["parent"] = parent
        self.graph = Graph()
        self.grad_enabled = grad_enabled
        self.submodules = {}
        self.lifted = []          # enclosing-graph trackers passed in, in placeholder order
        self._lift_map = {}       # enclosing node -> tracker of its placeholder here

    def __getattr__(self, name):
        return getattr(self.parent, name)

    @property
    def shape_specialized(self):
        return self.parent.shape_specialized

    @shape_specialized.setter
    def shape_specialized(self, value):
        self.parent.shape_specialized = value

    # -- placeholders --------------------------------------------------------------------
    def placeholder(self, name, example=None):
        """A new placeholder after the existing ones (before the first op)."""
        first_op = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        if first_op is None:
            node = self.graph.placeholder(name)
        else:
            with self.graph.inserting_before(first_op):
                node = self.graph.placeholder(name)
        if example is not None:
            node.meta["val"] = TensorMeta.of(example)
        return node

    def add_input(self, outer, name=None):
        """A placeholder for the enclosing tracker `outer` (always a new one)."""
        node = self.placeholder(name or outer.node.name.lower(), outer.example)
        var = TensorVariable(node, outer.example)
        self.lifted.append(outer)
        self._lift_map.setdefault(outer.node, var)
        return var

    def lift(self, var):
        """`var` as a tracker of this graph (a placeholder if it belongs to an enclosing one)."""
        node = var.node
        if node.graph is self.graph:
            return var
        hit = self._lift_map.get(node)
        if hit is not None:
            return hit
        outer = var
        if node.graph is not self.parent.graph:
            if not isinstance(self.parent, SubgraphOutput):
                raise AssertionError("a tensor from another traced body (escaped through a side effect?)")
            outer = self.parent.lift(var)
            hit = self._lift_map.get(outer.node)
            if hit is not None:
                self._lift_map[node] = hit
                return hit
        lifted = self.add_input(outer)
        self._lift_map[node] = lifted
        return lifted

    def lift_all(self, v):
        """Lift every tensor inside a (nested) argument."""
        if isinstance(v, TensorVariable):
            return self.lift(v)
        if isinstance(v, (TupleVariable, ListVariable)):
            items = [self.lift_all(i) for i in v.items]
            if all(a is b for a, b in zip(items, v.items)):
                return v
            new = TupleVariable(items) if isinstance(v, TupleVariable) else ListVariable(items)
            if hasattr(v, "cls"):
                new.cls = v.cls
            return new
        if isinstance(v, DictVariable):
            items = {k: self.lift_all(i) for k, i in v.items.items()}
            if all(items[k] is v.items[k] for k in items):
                return v
            return DictVariable(items)
        return v

    # -- recording ------------------------------------------------------------------------
    def input_scalar(self, value, source):
        """A dynamic number the body uses is specialized (its value guarded): the body's
        runtime (autograd_function_apply) passes it tensors only."""
        self.parent.guards.constant(source, value)
        return value

    def input_tensor(self, value, source):
        # the enclosing graph's tracker: trackers get cached (an object's attribute, a list's
        # items) and are read again after the body, so they are lifted only where used
        return self.parent.input_tensor(value, source)

    def record(self, fn, args, kwargs):
        return OutputGraph.record(self, fn, [self.lift_all(a) for a in args],
                                  {k: self.lift_all(v) for k, v in kwargs.items()})

    def record_method(self, name, self_var, args, kwargs):
        lifted = self.lift(self_var)
        result = OutputGraph.record_method(self, name, lifted, [self.lift_all(a) for a in args],
                                           {k: self.lift_all(v) for k, v in kwargs.items()})
        if result is lifted and lifted is not self_var:
            return lifted        # in place on an enclosing tensor: the body's new value
        return result
