"""The autograd engine: runs backward nodes in dependency order.

One call of `run_backward` is a *graph task* (as in PyTorch): it counts, for
every node reachable from the roots, how many edges lead into it, then pops
ready nodes from a heap (latest-created first; a leaf's AccumulateGrad as soon
as it is ready) until none is left. Nothing here recurses over the graph, so
graphs of any depth work. Per node it runs, in PyTorch's order: tensor
pre-hooks (`Tensor.register_hook`), retain_grad, node pre-hooks, the node,
node post-hooks.

With `inputs` (autograd.grad, or backward(inputs=...)) only the nodes that
lead to an input run ("needed"); autograd.grad captures the gradient flowing
into each input's edge instead of accumulating it. Graph tasks nest: a
backward started from inside a hook or a custom Function's backward
(reentrant backward) runs to completion as its own task.
"""
import heapq
import itertools
import sys
import threading
import types

import numpy as np
from .._dtype import round_to_bfloat16 as _round_to_bfloat16

from . import graph as _graph
from .. import _jit_callback
from ..utils import is_dynjit_module
from .grad_mode import state as _grad_state
from . import anomaly_mode as _anomaly_mode
from ..ops.dispatch import _modes as _dispatch_modes
from ..tensor import Tensor

_task_ids = itertools.count()


class _EngineState(threading.local):
    def __init__(self):
        self.tasks = []                  # the running graph tasks, innermost last
        self.multithreading = True       # only a flag: dynjit's engine is single-threaded
        self.compiled_backward = None    # the compiled-autograd slot (set_compiled_backward)


_state = _EngineState()
# the active autograd profilers: observer(node) is a context manager around the node's run
node_observers = []
# One backward pass at a time across threads (a thread's reentrant passes nest inside
# its own): passes over a shared graph or into the same leaves' .grad then give the
# results they give one after another, as PyTorch guarantees.
_engine_lock = threading.RLock()


class GraphTask:
    """The state of one backward pass."""

    def __init__(self, keep_graph, create_graph, accumulate_grad):
        self.id = next(_task_ids)
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate_grad = accumulate_grad
        self.root = None
        self.deps = {}              # node -> number of edges into it not yet processed
        self.initial_deps = None
        self.needed = None          # None: run every node; else the set of nodes to run
        self.captures = {}          # node -> [(input_nr, index into captured)]
        self.captured = []
        self.current_node = None
        self.retained = _graph.retained_grad_targets() if _graph._retaining else None
        self.callbacks = []         # queue_callback: run when this pass is done

    def should_execute(self, node):
        return self.needed is None or node in self.needed or node in self.captures


def _sum_grads(a, b, create_graph):
    if type(a._data) is not np.ndarray or type(b._data) is not np.ndarray:
        # a sparse gradient: sparse + sparse stays sparse, with a dense one the sum is dense
        # (dense + sparse: PyTorch's add takes the dense operand first)
        return b + a if type(b._data) is np.ndarray else a + b
    if create_graph or a._requires_grad or b._requires_grad or _dispatch_modes:
        return a + b
    total = np.add(a._data, b._data)
    if total.dtype.metadata is not None:       # bfloat16: the sum rounded, as every op's result
        total = _round_to_bfloat16(total)
    return Tensor._make(total)


def _graph_root(root_edges, root_grads):
    """The node the task starts from, and its incoming gradients.

    One root edge starts at its node directly; several go through a
    GraphRoot node whose outputs are the given gradients (like PyTorch)."""
    if len(root_edges) == 1:
        node, nr = root_edges[0]
        grads = [None] * node.num_outputs()
        grads[nr] = root_grads[0]
        return node, grads
    root = _graph.GraphRoot(root_edges)
    return root, list(root_grads)


def _post_order(root, deps):
    """Nodes reachable from `root`, children before parents; fills `deps`."""
    order = []
    seen = {root}
    stack = [(root, iter(root._edges))]
    while stack:
        node, edges = stack[-1]
        for edge in edges:
            if edge is None:
                continue
            child = edge[0]
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append((child, iter(child._edges)))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def _mark_needed(task, order, input_edges):
    """Which nodes must run so that every input edge receives its gradient."""
    explicit = set()
    for i, (node, nr) in enumerate(input_edges):
        if task.accumulate_grad:
            explicit.add(node)      # backward(inputs=...): the input's own node runs
        else:
            task.captures.setdefault(node, []).append((nr, i))
    needed = set()
    for node in order:     # children come first
        if node in explicit or any(e is not None and (e[0] in needed or e[0] in task.captures)
                                   for e in node._edges):
            needed.add(node)
    task.needed = needed


def set_compiled_backward(fn):
    """Fill this thread's compiled-autograd slot; return what was in it.

    `fn(root_edges, root_grads, keep_graph)` is offered every plain backward pass
    (accumulating, no `inputs`, no create_graph) first, and returns True when it ran
    the pass itself. dynjit.compiled_autograd.enable() fills the slot (the engine
    does not import that layer above it), as dynjit._jit_callback holds the frontend's
    frame hook."""
    prev = _state.compiled_backward
    _state.compiled_backward = fn
    return prev


def run_backward(root_edges, root_grads, keep_graph, create_graph, inputs=None,
                 accumulate_grad=True):
    """Run one backward pass from `root_edges` seeded with `root_grads`.

    `inputs` is a list of edges (node, input_nr). With accumulate_grad=False
    (autograd.grad) the gradients flowing into them are returned; with
    accumulate_grad=True (backward(inputs=...)) only the part of the graph
    leading to them runs.
    """
    compiled = _state.compiled_backward
    if (compiled is not None and accumulate_grad and inputs is None and not create_graph
            and compiled(root_edges, root_grads, keep_graph)):
        return None
    task = GraphTask(keep_graph, create_graph, accumulate_grad)
    root, root_buffer = _graph_root(root_edges, root_grads)
    task.root = root
    order = _post_order(root, task.deps)
    task.initial_deps = dict(task.deps)
    if inputs is not None:
        task.captured = [None] * len(inputs)
        _mark_needed(task, order, inputs)
    del order

    buffers = {root: root_buffer}
    del root_buffer, root_grads
    heap = [(-root._seq, 0, root)]
    tiebreak = itertools.count(1)
    prev_mode = _grad_state.enabled
    _grad_state.enabled = create_graph
    prev_limit = _make_room_for_reentrant_backward()
    _engine_lock.acquire()
    _state.tasks.append(task)
    try:
        while heap:
            _step(task, heapq.heappop(heap)[2], buffers, heap, tiebreak)
        # callbacks queued during the pass (or by other callbacks) run at its end
        for callback in task.callbacks:
            callback()
    finally:
        _state.tasks.pop()
        _engine_lock.release()
        _grad_state.enabled = prev_mode
        if prev_limit is not None:
            sys.setrecursionlimit(prev_limit)
    return task.captured if inputs is not None else None


_FRAMES_PER_REENTRANT_LEVEL = 64


def _make_room_for_reentrant_backward():
    """A backward started inside a backward (reentrant) nests Python frames; PyTorch
    allows thousands of levels, so raise the recursion limit to leave room for
    each level. Returns the limit to restore, or None if unchanged."""
    depth = len(_state.tasks)
    if not depth:
        return None
    limit = sys.getrecursionlimit()
    want = 1000 + _FRAMES_PER_REENTRANT_LEVEL * depth
    if limit >= want:
        return None
    sys.setrecursionlimit(want)
    return limit


def queue_callback(callback):
    """Run `callback()` when the running backward pass is done (before it returns)."""
    _current_task("queue_callback").callbacks.append(callback)


def _step(task, node, buffers, heap, tiebreak):
    """Run one ready node and pass its outputs on to the buffers of its next nodes.

    A function of its own so that no reference to a gradient outlives it: a leaf's
    AccumulateGrad takes the incoming gradient as .grad without copying only when
    nothing else refers to it (see graph.AccumulateGrad)."""
    if _anomaly_mode.state.enabled:
        outs = _evaluate_detecting_anomalies(task, node, buffers.pop(node))
    else:
        outs = _evaluate(task, node, buffers.pop(node))
    if outs is None:
        return
    for edge, g in zip(node._edges, outs):
        if edge is None:
            continue
        child, nr = edge
        left = task.deps[child] - 1
        task.deps[child] = left
        if not task.should_execute(child):
            continue
        buf = buffers.get(child)
        if buf is None:
            buf = buffers[child] = [None] * child.num_outputs()
        if g is not None:
            buf[nr] = g if buf[nr] is None else _sum_grads(buf[nr], g, task.create_graph)
        if left == 0:
            heapq.heappush(heap, (-child._seq, next(tiebreak), child))


def _evaluate_detecting_anomalies(task, node, grads):
    try:
        outs = _evaluate(task, node, grads)
        if outs is not None:
            _anomaly_mode.check_outputs(node, outs)
        return outs
    except Exception:
        _anomaly_mode.report_failure(node)
        raise


def _evaluate(task, node, grads):
    """Run `node` (with its hooks) and return its outputs, or None if it does not run."""
    task.current_node = node
    try:
        needed = task.needed is None or node in task.needed
        captures = task.captures.get(node)
        if captures:
            if not needed:
                grads = _call_tensor_pre_hooks(node, grads, task.retained)
            for nr, i in captures:
                task.captured[i] = grads[nr]
        if not needed:
            return None
        grads = _call_tensor_pre_hooks(node, grads, task.retained)
        grads = _call_pre_hooks(node, grads)
        if node_observers:
            with node_observers[-1](node):
                outs = node.apply(grads)
        else:
            outs = node.apply(grads)
        if not node._is_accumulate and len(outs) != len(node._edges):
            raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                               f"(expected {len(node._edges)}, got {len(outs)})")
        if not task.keep_graph:
            node.release()
        if node._post_hooks:
            for hook in list(node._post_hooks.values()):
                r = hook(tuple(outs), tuple(grads))
                if r is not None:
                    outs = _check_hook_outputs(node, r, len(outs))
        return outs
    finally:
        task.current_node = None


def _call_tensor_pre_hooks(node, grads, retained):
    """Hooks registered on the tensors this node produced (or, for AccumulateGrad, on
    its leaf), then retain_grad, which thus sees what those hooks returned."""
    hooks = node._tensor_pre_hooks
    if hooks:
        for nr, hs in hooks.items():
            # as PyTorch: a hook of an output whose gradient is undefined (an unused output
            # of a multi-output op, an UndefinedGrad) runs too, with None
            for h in list(hs.values()):
                r = _user_hook(h)(grads[nr])
                if r is not None:
                    if grads[nr] is None:
                        raise RuntimeError("can't replace a None gradient with a non-None value")
                    grads[nr] = _check_hook_result(r, grads[nr])
    if node._is_accumulate:
        hs = node.variable._hooks
        if hs and grads[0] is not None:
            for h in list(hs.values()):
                r = _user_hook(h)(grads[0])
                if r is not None:
                    grads[0] = _check_hook_result(r, grads[0])
    if retained:
        for nr, g in enumerate(grads):
            ref = retained.get((node, nr)) if g is not None else None
            t = ref() if ref is not None else None
            if t is not None:
                _graph.fill_retained_grad(t, g)
    return grads


def _user_hook(h):
    """A user's tensor hook, compiled when a compiled frame's native code (a graph break) runs
    this backward (as the frame hook would compile the hook's frame)."""
    jit = _jit_callback.active()
    if jit is None or type(h) is not types.FunctionType or is_dynjit_module(h.__module__ or ""):
        return h
    return jit(h)


def _call_pre_hooks(node, grads):
    if node._pre_hooks:
        for h in list(node._pre_hooks.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = _check_hook_outputs(node, r, len(grads))
    return grads


def _check_hook_outputs(node, r, n):
    if not isinstance(r, (tuple, list)):
        raise TypeError(f"a hook of {node.name()} must return a tuple of gradients or None, "
                        f"got {type(r).__name__}")
    if len(r) != n:
        raise RuntimeError(f"a hook of {node.name()} returned {len(r)} gradients, expected {n}")
    return list(r)


def _check_hook_result(r, old):
    if not isinstance(r, Tensor):
        raise TypeError(f"a tensor hook must return a Tensor or None, got {type(r).__name__}")
    if r._data.shape != old._data.shape:
        raise RuntimeError(f"hook changed the gradient's shape from {list(old.shape)} to {list(r.shape)}")
    return r


# -- introspection of the running backward (PyTorch's torch._C helpers) -------

def _current_task(what):
    if not _state.tasks:
        raise RuntimeError(f"{what} should only be called during the backward pass")
    return _state.tasks[-1]


def current_graph_task_id():
    """The id of the running backward pass, or -1 outside backward."""
    return _state.tasks[-1].id if _state.tasks else -1


def is_checkpoint_valid():
    """False inside a backward pass limited to some inputs (autograd.grad, backward(inputs=)),
    or nested in one: the reentrant checkpoint cannot run there (torch.autograd._is_checkpoint_valid)."""
    return all(task.needed is None for task in _state.tasks)


def current_autograd_node():
    """The node whose hooks or backward are running now, or None."""
    return _state.tasks[-1].current_node if _state.tasks else None


def will_engine_execute_node(node):
    """Whether the running backward pass will run (or has run) `node`."""
    if not isinstance(node, _graph.Node):
        raise RuntimeError(f"_will_engine_execute_node expects an grad_fn (a backward Node), "
                           f"got {type(node).__name__}")
    task = _current_task("_will_engine_execute_node")
    if node not in task.initial_deps and node is not task.root:
        return False
    if task.needed is None:
        return True
    if node._is_accumulate and not task.accumulate_grad:
        raise RuntimeError(
            "_will_engine_execute_node was given an AccumulateGrad node while you are currently "
            "running autograd.grad(): the gradients of leaves passed as inputs are returned, and "
            "leaves' AccumulateGrad nodes never run. Ask about the leaf's consumer nodes instead.")
    return task.should_execute(node)


def will_compute_grad(edge):
    """Whether the running backward pass computes the gradient flowing into `edge`."""
    task = _current_task("will_compute_grad")
    node = edge[0]
    if node is not task.root and node not in task.initial_deps:
        return False
    return task.should_execute(node)


def current_graph_task_execution_order():
    """The nodes of the running backward pass, in the order the engine runs them."""
    task = _current_task("_current_graph_task_execution_order")
    if _state.multithreading:
        raise RuntimeError(
            "_current_graph_task_execution_order expects the current backward to be executed with "
            "multithreading disabled, e.g. by running:\n\n"
            ">>> with dynjit.autograd.set_multithreading_enabled(False):\n"
            "...     dynjit.autograd.grad(...)")
    order = execution_order(task.root, task.initial_deps, task.should_execute)
    # the GraphRoot made for several roots is the engine's own, not part of the user's graph
    return [node for node in order if not isinstance(node, _graph.GraphRoot)]


def execution_order(root, deps, should_execute=None):
    """The nodes from `root` in the order `run_backward` runs them (`deps`: edges into
    each node, from _post_order; not modified)."""
    deps = dict(deps)
    out = []
    tiebreak = itertools.count()
    heap = [(-root._seq, 0, root)]
    while heap:
        node = heapq.heappop(heap)[2]
        out.append(node)
        for edge in node._edges:
            if edge is None or (should_execute is not None and not should_execute(edge[0])):
                continue
            deps[edge[0]] -= 1
            if deps[edge[0]] == 0:
                heapq.heappush(heap, (-edge[0]._seq, next(tiebreak), edge[0]))
    return out


def is_multithreading_enabled():
    return _state.multithreading


class set_multithreading_enabled:
    """Context manager kept for PyTorch compatibility: dynjit's engine always runs
    on the calling thread; the flag is only recorded."""

    def __init__(self, mode):
        self.prev = _state.multithreading
        _state.multithreading = bool(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state.multithreading = self.prev
        return False
