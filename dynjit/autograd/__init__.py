"""dynjit.autograd: reverse-mode automatic differentiation.

`backward` and `grad` run the engine (engine.py) over the graph of backward
nodes that the dispatcher records (graph.py); `Function` defines custom ops.
Forward mode (dual tensors, JVPs) is `forward_ad`.
"""
import warnings

import numpy as np

from ..tensor import Tensor, Size
from ..ops.registry import registry

from . import graph
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                        is_grad_enabled, is_inference_mode_enabled, is_view_replay_enabled, is_inference,
                        _force_original_view_tracking)
from .graph import _unsafe_preserve_version_counter, SavedTensor
from .function import Function, FunctionCtx, once_differentiable, InplaceFunction
from . import function
from .engine import run_backward, set_multithreading_enabled, is_multithreading_enabled
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from . import forward_ad

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Variable"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
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
    return Tensor._make(np.ones(t._data.shape, dtype=t.dtype.np))


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


def _input_edge(t, accumulate_grad):
    """The edge whose incoming gradient is wanted for input `t` (a tensor or a GradientEdge)."""
    if isinstance(t, graph.GradientEdge):
        return tuple(t)
    if not isinstance(t, Tensor):
        raise TypeError(f"inputs must be Tensors or GradientEdges, got {type(t).__name__}")
    if not t._requires_grad:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    if accumulate_grad and t.grad_fn is not None:
        t.retain_grad()     # like PyTorch: a non-leaf input gets its .grad through retain_grad
    return graph.edge_of(t)


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak.")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Compute the sum of gradients of `tensors` w.r.t. graph leaves, accumulated into `.grad`.

    With `inputs` (tensors or GradientEdges), only those receive gradients.
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    grad_tensors = _as_tuple(grad_tensors) if not isinstance(grad_tensors, (list, tuple)) else tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(_CREATE_GRAPH_WARNING, UserWarning, stacklevel=2)
    input_edges = None
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, (Tensor, graph.GradientEdge)) else tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        input_edges = [_input_edge(t, accumulate_grad=True) for t in inputs]
    grads = _make_grads(tensors, grad_tensors)
    edges, root_grads = _root_edges(tensors, grads)
    if edges:
        run_backward(edges, root_grads, retain_graph, create_graph, inputs=input_edges)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` w.r.t. `inputs` (tensors or GradientEdges), returned, not
    accumulated into .grad."""
    outputs = _as_tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, (Tensor, graph.GradientEdge)) else tuple(inputs)
    if not inputs:
        raise ValueError("grad requires non-empty inputs.")
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if materialize_grads and any(isinstance(t, graph.GradientEdge) for t in inputs):
        raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    input_edges = [_input_edge(t, accumulate_grad=False) for t in inputs]
    grads = _make_grads(outputs, grad_outputs)
    edges, root_grads = _root_edges(outputs, grads)
    captured = (run_backward(edges, root_grads, retain_graph, create_graph, inputs=input_edges,
                             accumulate_grad=False) if edges else [None] * len(inputs))
    result = []
    for t, g in zip(inputs, captured):
        if g is None:
            if materialize_grads:     # like PyTorch: zeros that can be differentiated again
                g = Tensor._make(np.zeros(t._data.shape, dtype=t.dtype.np)).requires_grad_()
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """grad(..., is_grads_batched=True): the first dimension of every grad_output is a batch,
    and each input's gradient stacks the gradients for the batch's elements (PyTorch computes
    them under vmap; the values are the same)."""
    grad_outputs = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs for {len(outputs)} outputs")
    batch = None
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(g, Tensor):
            raise RuntimeError("is_grads_batched=True needs a grad_output tensor (with a batch dimension) "
                               f"for every output; grad_output[{i}] is {type(g).__name__}")
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(out.shape):
            # (PyTorch's message shows the shape of grad_output[i][0] without its first dimension)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                "shape of corresponding output, but a mismatch was detected: grad_output["
                f"{i}] has a shape of {Size(g.shape[2:])} and output[{i}] has a shape of {Size(out.shape)}. "
                "If you only want some tensors in `grad_output` to be considered batched, consider using vmap.")
        if batch is not None and g.shape[0] != batch:
            raise RuntimeError(f"is_grads_batched=True: grad_output[{i}] has a batch of {g.shape[0]}, "
                               f"grad_output[0] one of {batch}")
        batch = g.shape[0]
    if retain_graph is None:
        retain_graph = create_graph
    per_element = [grad(outputs, inputs, [g[b] for g in grad_outputs],
                        retain_graph=retain_graph or b < batch - 1, create_graph=create_graph,
                        allow_unused=allow_unused, materialize_grads=materialize_grads)
                   for b in range(batch)]
    stack = registry["stack"]
    return tuple(None if not per_element or any(p[i] is None for p in per_element)
                 else stack([p[i] for p in per_element]) for i in range(len(inputs)))


def Variable(data, requires_grad=False):
    """Old name for a tensor; returns the tensor itself (with requires_grad set)."""
    if requires_grad:
        data.requires_grad_(True)
    return data


class _ExecutionEngine:
    """`Variable._execution_engine`, PyTorch's handle on the engine."""

    @staticmethod
    def queue_callback(callback):
        from .engine import queue_callback
        queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()
from . import profiler  # noqa: E402,F401
from .profiler import _profiler_enabled, kineto_available  # noqa: E402,F401
from .engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: E402,F401
