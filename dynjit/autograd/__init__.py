"""dynjit.autograd: reverse-mode automatic differentiation.

`backward` and `grad` run the engine (engine.py) over the graph of backward
nodes that the dispatcher records (graph.py); `Function` defines custom ops.
"""
import numpy as np

from . import graph
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                        is_grad_enabled, is_inference_mode_enabled)
from .function import Function, FunctionCtx, once_differentiable, InplaceFunction
from . import function
from .engine import run_backward
from .gradcheck import gradcheck, gradgradcheck, GradcheckError

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Variable"]


def _tensor_cls():
    from ..tensor import Tensor
    return Tensor


def _as_tuple(x):
    Tensor = _tensor_cls()
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    Tensor = _tensor_cls()
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype.name}")
                g = _ones_like(out)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif g._data.shape != out._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                               f"output[{i}] has a shape of {out.shape}.")
        grads.append(g)
    return grads


def _ones_like(t):
    from ..ops.dispatch import _modes
    if _modes:      # a tracing mode should see (and record) the seed gradient
        from ..ops import registry
        return registry["ones"]((t._data.shape), t.dtype)
    return _tensor_cls()._make(np.ones(t._data.shape, dtype=t.dtype.np))


def _root_edges(outputs, grads):
    edges, root_grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        edge = graph.edge_of(out) if out._requires_grad else None
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            continue
        edges.append(edge)
        root_grads.append(g)
    return edges, root_grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the sum of gradients of `tensors` w.r.t. graph leaves, accumulated into `.grad`."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    grad_tensors = _as_tuple(grad_tensors) if not isinstance(grad_tensors, (list, tuple)) else tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grad_tensors)
    edges, root_grads = _root_edges(tensors, grads)
    if inputs is None:
        run_backward(edges, root_grads, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    captures = []
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        captures.append(graph.edge_of(t))
    captured = run_backward(edges, root_grads, retain_graph, create_graph, captures=captures,
                            accumulate_at_capture=True)
    for t, g in zip(inputs, captured):
        if t.grad_fn is not None and g is not None:   # non-leaf inputs accumulate into .grad too
            t._grad = g if t._grad is None else t._grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` w.r.t. `inputs`, returned (not accumulated into .grad)."""
    Tensor = _tensor_cls()
    single_input = isinstance(inputs, Tensor)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported by dynjit")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad() inputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, grad_outputs)
    edges, root_grads = _root_edges(outputs, grads)
    captures = [graph.edge_of(t) for t in inputs]
    captured = run_backward(edges, root_grads, retain_graph, create_graph, captures=captures)
    result = []
    for t, g in zip(inputs, captured):
        if g is None:
            if materialize_grads:
                g = Tensor._make(np.zeros(t._data.shape, dtype=t.dtype.np))
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


def Variable(data, requires_grad=False):
    """Old name for a tensor; returns the tensor itself (with requires_grad set)."""
    if requires_grad:
        data.requires_grad_(True)
    return data
