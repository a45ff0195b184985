"""Autograd functions with a fixed backward, for testing the engine (PyTorch's
torch._C._functions): `DelayedError` poisons a gradient path, `UndefinedGrad`
makes the gradient flowing back undefined (None)."""
from .graph import Node, edge_of


class Error(Node):
    """The backward node DelayedError gives its outputs (PyTorch's torch::autograd::Error):
    running it raises the message."""

    def __init__(self, msg, edges):
        super().__init__()
        self.msg = msg
        self._edges = tuple(edges)

    def num_outputs(self):
        return len(self._edges)

    def name(self):
        return "Error"

    def apply(self, grads):
        raise RuntimeError(self.msg)


class _UndefinedGradBackward(Node):
    def __init__(self, edges):
        super().__init__()
        self._edges = tuple(edges)

    def num_outputs(self):
        return len(self._edges)

    def name(self):
        return "UndefinedGradBackward"

    def apply(self, grads):
        return [None] * len(self._edges)


def _pass_through(node_factory, tensors):
    """Outputs aliasing `tensors` whose backward is a node made by `node_factory(edges)`
    (a None among the tensors passes through as None, with no edge)."""
    edges = tuple(edge_of(t) if t is not None and t._requires_grad else None for t in tensors)
    node = node_factory(edges) if any(e is not None for e in edges) else None
    outs = []
    for i, t in enumerate(tensors):
        if t is None:
            outs.append(None)
            continue
        o = t.detach()
        if node is not None and t._requires_grad:
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True
        outs.append(o)
    return outs[0] if len(outs) == 1 else tuple(outs)


class DelayedError:
    """DelayedError(msg, num_inputs)(*tensors): the tensors, unchanged, but any backward
    through them raises RuntimeError(msg)."""

    def __init__(self, msg, num_inputs):
        self.msg = msg
        self.num_inputs = num_inputs

    def __call__(self, *tensors):
        if len(tensors) != self.num_inputs:
            raise TypeError(f"DelayedError: expected {self.num_inputs} tensors, got {len(tensors)}")
        return _pass_through(lambda edges: Error(self.msg, edges), tensors)


class UndefinedGrad:
    """UndefinedGrad()(*tensors): the tensors, unchanged, but the gradient they pass
    back is undefined (None), whatever flows into them."""

    def __call__(self, *tensors):
        return _pass_through(_UndefinedGradBackward, tensors)
