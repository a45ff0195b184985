"""functionalize: run a function with its in-place ops replaced by out-of-place ones.

Each call traces the function on copies of its arguments with AOT's
functionalization (dynjit.aot.functionalize.FunctionalTracer), with any outer
dispatch modes hidden, and then runs the functional graph on the real arguments,
so that an outer tracer (make_fx) records only the functional ops. Arguments
the function modified in place are updated at the end with one `copy_` each, as
PyTorch's functionalize does.
"""
import functools

from ..fx.graph_module import GraphModule
from ..fx.proxy_tensor import same_layout_copy
from ..ops import dispatch as _dispatch
from ..tensor import Tensor
from .._pytree import tree_flatten, tree_unflatten


def functionalize(func, *, remove="mutations"):
    """func with its mutations removed: in-place ops become out-of-place ops (and views
    written in place are rebuilt from their base); mutated arguments are copied into
    once at the end. Only remove="mutations" is supported."""
    if remove != "mutations":
        if remove == "mutations_and_views":
            raise NotImplementedError("functionalize(remove='mutations_and_views'): dynjit has no "
                                      "view_copy ops; only remove='mutations' is supported")
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for "
                           f"remove={remove}. Valid options are:\n     remove='mutations': all "
                           "inplace and out= operators will be removed from the program, and "
                           "replaced with their out-of-place equivalents.")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
        gm, out_spec, n_out, mutated = _trace_functional(func, leaves, spec)
        inputs = [x for x in leaves if isinstance(x, Tensor)]
        results = gm(*inputs)
        results = list(results) if isinstance(results, (tuple, list)) else [results]
        for k, new in zip(mutated, results[n_out:]):
            inputs[k].copy_(new)
        return tree_unflatten(out_spec, iter(results[:n_out]))
    return wrapped


def _trace_functional(func, leaves, spec):
    """(functional GraphModule over the tensor leaves, output spec, number of outputs,
    indices of the tensor inputs it writes) for func on these arguments."""
    from ..aot.functionalize import FunctionalTracer
    outer = list(_dispatch._modes)
    _dispatch._modes.clear()          # the trace must not be seen by an outer tracer
    try:
        tracer = FunctionalTracer()
        copies, placeholders, traced = [], [], []
        for x in leaves:
            if isinstance(x, Tensor):
                node = tracer.graph.placeholder(f"arg{len(copies)}_1")
                c = Tensor._make(same_layout_copy(x._data))
                c._requires_grad = x._requires_grad
                tracer.track(c, node)
                copies.append(c)
                placeholders.append(node)
                traced.append(c)
            else:
                traced.append(x)
        args, kwargs = tree_unflatten(spec, iter(traced))
        with tracer:
            out = func(*args, **kwargs)
        out_leaves, out_spec = tree_flatten(out)
        mutated, new_values = [], []
        for k, (c, ph) in enumerate(zip(copies, placeholders)):
            node = tracer.node_of(c)
            if node is not ph:
                mutated.append(k)
                new_values.append(node)
        tracer.graph.output(tuple(tracer.to_arg(out_leaves)) + tuple(new_values))
        tracer.graph.eliminate_dead_code()
        gm = GraphModule(tracer.constants, tracer.graph)
    finally:
        _dispatch._modes[:] = outer
    return gm, out_spec, len(out_leaves), mutated
