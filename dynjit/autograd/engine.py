"""The autograd engine: runs backward nodes in dependency order.

`run_backward` walks the graph from the roots, counts dependencies, and
executes ready nodes (latest-created first, leaves' AccumulateGrad as soon as
ready, like PyTorch), running tensor hooks, node pre/post hooks and
retain_grad, and freeing saved tensors unless `retain_graph`. With `capture`
it records the gradients flowing into given edges (autograd.grad) and only
runs the part of the graph that leads to them.
"""
import heapq

import numpy as np

from . import graph as _graph
from .grad_mode import state as _grad_state
from ..ops.dispatch import _modes as _dispatch_modes


def _sum_grads(a, b, create_graph):
    if create_graph or a._requires_grad or b._requires_grad or _dispatch_modes:
        return a + b
    from ..tensor import Tensor
    return Tensor._make(np.add(a._data, b._data))


def _reachability(roots, captures, accumulate_at_capture):
    """Nodes to visit, with dependency counts; and which of them must run."""
    deps = {}
    order = []
    seen = set()
    stack = [n for n in roots]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for edge in node.next_functions:
            if edge is not None:
                stack.append(edge[0])
    if captures is None:
        for node in order:
            for edge in node.next_functions:
                if edge is not None:
                    deps[edge[0]] = deps.get(edge[0], 0) + 1
        return deps, None
    capture_nodes = {e[0] for e in captures}
    # reach: node leads to (or is) a capture point. Iterate to a fixed point in reverse DFS order.
    reach = set(capture_nodes)
    changed = True
    while changed:
        changed = False
        for node in reversed(order):
            if node in reach:
                continue
            if any(e is not None and e[0] in reach for e in node.next_functions):
                reach.add(node)
                changed = True
    run = set()
    for node in reach:
        if node._is_accumulate:
            if accumulate_at_capture and node in capture_nodes:
                run.add(node)
        elif any(e is not None and e[0] in reach for e in node.next_functions):
            run.add(node)
    for node in run:
        for edge in node.next_functions:
            if edge is not None and edge[0] in reach:
                deps[edge[0]] = deps.get(edge[0], 0) + 1
    return deps, (reach, run)


def run_backward(root_edges, root_grads, keep_graph, create_graph, captures=None,
                 accumulate_at_capture=False):
    """Run backward from `root_edges` seeded with `root_grads`.

    Returns the gradients captured at `captures` (a list of edges), or None.
    """
    roots = []
    buffers = {}
    for (node, nr), g in zip(root_edges, root_grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_outputs()
            roots.append(node)
        buf[nr] = g if buf[nr] is None else _sum_grads(buf[nr], g, create_graph)
    deps, sets = _reachability(roots, captures, accumulate_at_capture)
    reach, run = sets if sets is not None else (None, None)
    capture_at = {}
    captured = None
    if captures is not None:
        captured = [None] * len(captures)
        for i, (node, nr) in enumerate(captures):
            capture_at.setdefault(node, []).append((i, nr))

    heap = []
    for node in roots:
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node._seq, id(node), node))
    prev_mode = _grad_state.enabled
    _grad_state.enabled = create_graph
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            grads = buffers.pop(node, None) or [None] * node.num_outputs()
            grads = _run_pre_hooks(node, grads)
            if capture_at:
                for i, nr in capture_at.get(node, ()):
                    g = grads[nr]
                    captured[i] = g if captured[i] is None or g is None else _sum_grads(captured[i], g, create_graph)
            if run is not None and node not in run:
                outs = ()
            elif all(g is None for g in grads):
                outs = [None] * len(node.next_functions)
            else:
                outs = node.apply(grads)
                if len(outs) != len(node.next_functions) and not node._is_accumulate:
                    raise RuntimeError(f"{node.name()} returned {len(outs)} gradients for "
                                       f"{len(node.next_functions)} inputs")
                if node._post_hooks:
                    for h in list(node._post_hooks.values()):
                        r = h(tuple(outs), tuple(grads))
                        if r is not None:
                            outs = list(r)
            if not keep_graph:
                node.release()
            for edge, g in zip(node.next_functions, outs):
                if edge is None:
                    continue
                child, nr = edge
                if reach is not None and child not in reach:
                    continue
                if g is not None:
                    buf = buffers.get(child)
                    if buf is None:
                        buf = buffers[child] = [None] * child.num_outputs()
                    buf[nr] = g if buf[nr] is None else _sum_grads(buf[nr], g, create_graph)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    heapq.heappush(heap, (-child._seq, id(child), child))
    finally:
        _grad_state.enabled = prev_mode
    return captured


def _run_pre_hooks(node, grads):
    hooks = node._tensor_pre_hooks
    if hooks:
        for nr, hs in hooks.items():
            for h in list(hs.values()):
                if grads[nr] is None:
                    break
                r = h(grads[nr])
                if r is not None:
                    grads[nr] = _check_hook_result(r, grads[nr])
    if node._is_accumulate:
        hs = node.variable._hooks
        if hs and grads[0] is not None:
            for h in list(hs.values()):
                r = h(grads[0])
                if r is not None:
                    grads[0] = _check_hook_result(r, grads[0])
    if node._retain_grad_hooks:
        for nr, fn in node._retain_grad_hooks.items():
            if grads[nr] is not None:
                fn(grads[nr])
    if node._pre_hooks:
        for h in list(node._pre_hooks.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _check_hook_result(r, old):
    from ..tensor import Tensor
    if not isinstance(r, Tensor):
        raise TypeError(f"a tensor hook must return a Tensor or None, got {type(r).__name__}")
    if r._data.shape != old._data.shape:
        raise RuntimeError(f"hook changed the gradient's shape from {list(old.shape)} to {list(r.shape)}")
    return r
