"""Compiled autograd: a whole `.backward()` pass traced into one graph and compiled.

Under `enable(compiler_fn)`, a backward pass (`Tensor.backward()`,
`autograd.backward()` without `inputs=` or `create_graph=`) does not walk the
autograd graph node by node. It

1. plans the pass: the nodes the engine would run, in the engine's order;
2. looks up a compiled backward by the pass's *structure* (node kinds and ops,
   their non-tensor arguments, the shape, dtype and strides of every incoming
   gradient and saved tensor, the edges, the hooks' code). On a miss it traces
   the pass with make_fx's tracer into one GraphModule `forward(self, inputs,
   hooks)` (every backward formula as ops; each hook as one `call_hook` /
   `call_pre_hook` / `call_post_hook` node calling a hook from `hooks`; each
   leaf's new gradient as `new_grad = clone(grad)`, returned, and each
   retained gradient) and hands it to `compiler_fn(gm)`, which returns a
   callable (it may return `dynjit.compile(gm, backend=..., fullgraph=True)`);
3. calls the compiled backward on `inputs` = [root gradients..., saved
   tensors...] and `hooks`, and accumulates each returned gradient into its
   leaf's `.grad` exactly as the engine's AccumulateGrad does (then
   post-accumulate-grad hooks and callbacks queued with `queue_callback`).

Custom autograd.Function backwards are run once while capturing (their ops are
recorded; ctx attributes join the key). A pass that needs what is not captured
(a backward whose Python reads tensor values, a node kind without
saved_values/apply_with_saved, anomaly mode, a backward started inside a trace) runs on the ordinary engine, so results never
differ; the reason is counted in `dynjit.utils.counters["compiled_autograd"]`.
"""
import contextlib
import logging
import operator
import threading
import types
import warnings

from . import config
from .autograd import engine as _engine
from .utils import counters

_loaded = False


def _load():
    """Import what a compiled backward needs (at its first use: `import dynjit` does not
    load aot)."""
    global _loaded, Tensor, _data_reads, _graph, anomaly_mode, _dispatch_modes, no_grad, \
        grad_state, GraphModule, GraphTracer, clone_op, AccumulateGrad, GraphRoot, OpBackward, \
        BackwardCFunction, CompiledFunctionBackward, CopySlices
    from .aot.runtime import CompiledFunctionBackward
    from .autograd import anomaly_mode
    from .autograd import graph as _graph
    from .autograd.function import BackwardCFunction
    from .autograd.grad_mode import no_grad, state as grad_state
    from .autograd.graph import AccumulateGrad, CopySlices, GraphRoot, OpBackward
    from .fx.graph_module import GraphModule
    from .fx.proxy_tensor import GraphTracer
    from .ops.dispatch import _modes as _dispatch_modes
    from .ops.registry import registry
    from .tensor import Tensor, _data_reads
    clone_op = registry["clone"]
    _loaded = True


class _State(threading.local):
    def __init__(self):
        self.compiler_fn = None
        self.running = False      # a compiled backward (or its capture) is running


_state = _State()
log = logging.getLogger("dynjit.compiled_autograd")
_caches = {}          # compiler key -> {structure key: compiled backward}
_warned_limit = set()  # compiler keys whose cache_size_limit warning was given


@contextlib.contextmanager
def enable(compiler_fn):
    """Inside the block, backward passes are traced and compiled with `compiler_fn(gm)`."""
    if not callable(compiler_fn):
        raise TypeError(f"compiled_autograd.enable expects a callable compiler_fn(gm), "
                        f"got {type(compiler_fn).__name__}")
    with _compiler(compiler_fn):
        yield


@contextlib.contextmanager
def disable():
    """Inside the block, backward passes run on the ordinary engine."""
    with _compiler(None):
        yield


@contextlib.contextmanager
def _compiler(compiler_fn):
    """This thread's compiler_fn inside the block; the engine's compiled-autograd slot holds
    run_backward while there is one."""
    prev = _state.compiler_fn
    _state.compiler_fn = compiler_fn
    prev_slot = _engine.set_compiled_backward(run_backward if compiler_fn is not None else None)
    try:
        yield
    finally:
        _state.compiler_fn = prev
        _engine.set_compiled_backward(prev_slot)


def reset():
    """Forget every compiled backward."""
    _caches.clear()
    _warned_limit.clear()


class _NotCaptured(Exception):
    """This pass uses something compiled autograd does not capture: run it eagerly."""


class _Eager:
    """A cache entry: passes of this structure run on the engine (capturing one failed)."""

    def __init__(self, reason):
        self.reason = reason


def run_backward(root_edges, root_grads, keep_graph):
    """The engine's entry: run the pass compiled and return True, or return False to
    let the engine run it (compiled autograd off, nested, or not capturable)."""
    compiler_fn = _state.compiler_fn
    if compiler_fn is None or _state.running:
        return False
    if not _loaded:
        _load()
    try:
        plan = _Plan(root_edges, root_grads)
    except _NotCaptured as e:
        return _leave_to_engine(str(e))
    compiler_key = _compiler_key(compiler_fn)
    cache = _caches.get(compiler_key)
    if cache is None:
        cache = _caches[compiler_key] = {}
    compiled = cache.get(plan.key)
    if isinstance(compiled, _Eager):
        return _leave_to_engine(compiled.reason)
    if compiled is None:
        if len(cache) >= config.cache_size_limit:
            if compiler_key not in _warned_limit:
                _warned_limit.add(compiler_key)
                warnings.warn(f"compiled autograd: {config.cache_size_limit} backward graphs "
                              f"(config.cache_size_limit) were compiled with {compiler_fn!r}; "
                              "later new ones run on the ordinary engine", stacklevel=4)
            return _leave_to_engine("cache_size_limit reached")
        try:
            compiled = _compile(plan, compiler_fn)
        except _NotCaptured as e:
            cache[plan.key] = _Eager(str(e))      # this structure runs on the engine from now on
            return _leave_to_engine(str(e))
        cache[plan.key] = compiled
    else:
        counters["compiled_autograd"]["cache_hits"] += 1
        log.debug("cache hit: a backward of %d nodes", len(plan.order))
    _run(plan, compiled, keep_graph)
    return True


def _compiler_key(compiler_fn):
    """What identifies a compiler_fn's cache. A function is known by its code, defaults and
    closure contents, so `enable(lambda gm: dynjit.compile(gm, backend="llvm"))` written
    inside a training loop (a new lambda per step) reuses the backward compiled at step 1."""
    if type(compiler_fn) is types.FunctionType:
        try:
            cells = [c.cell_contents for c in compiler_fn.__closure__ or ()]
        except ValueError:                   # an empty cell
            cells = None
        if cells is not None:
            return ("function", compiler_fn.__code__,
                    tuple(_by_value_or_identity(v) for v in compiler_fn.__defaults__ or ()),
                    tuple(_by_value_or_identity(v) for v in cells))
    return _IdentityKeepsAlive(compiler_fn)


def _by_value_or_identity(value):
    """Numbers and strings by value (a backend name); anything else, a list the compiler
    records graphs into or a tensor, by identity."""
    return (type(value), value) if type(value) in _PLAIN else _IdentityKeepsAlive(value)


class _IdentityKeepsAlive:
    """Part of an identity key: compares by identity and keeps the object (so its id is not
    reused while its cache exists)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _IdentityKeepsAlive) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _leave_to_engine(reason):
    counters["compiled_autograd"][f"eager: {reason}"] += 1
    log.debug("runs on the engine: %s", reason)
    return False


# -- planning: the nodes, their inputs, the cache key -----------------------------------

class _Plan:
    """One backward pass about to run: its nodes in engine order, the real tensors the
    compiled graph takes as inputs, and a hashable key of everything else it depends on."""

    def __init__(self, root_edges, root_grads):
        if anomaly_mode.state.enabled:
            raise _NotCaptured("anomaly mode")
        if _dispatch_modes:
            raise _NotCaptured("backward inside a dispatch mode (make_fx tracing)")
        root, root_buffer = _engine._graph_root(root_edges, root_grads)
        deps = {}
        _engine._post_order(root, deps)
        self.root = root
        self.root_slots = [i for i, g in enumerate(root_buffer) if g is not None]
        self.order = order = _engine.execution_order(root, deps)
        retained = _graph.retained_grad_targets() if _graph._retaining else None
        index = {node: i for i, node in enumerate(order)}
        self.inputs = [root_buffer[i] for i in self.root_slots]
        key = [tuple(_tensor_key(g) for g in self.inputs), tuple(self.root_slots)]
        self.saved = []          # per node: its saved_values() (None for nodes without)
        self.hooks = []          # every hook the pass calls, in order: the graph's `hooks`
        self.retained = {}       # (position, output_nr) -> weakref of a tensor retaining grad
        for position, node in enumerate(order):
            if retained:
                for nr in range(node.num_outputs()):
                    ref = retained.get((node, nr))
                    if ref is not None:
                        self.retained[(position, nr)] = ref
                        key.append(("retain_grad", position, nr))
            edges = tuple(None if e is None else (index[e[0]], e[1]) for e in node._edges)
            hooks = self._add_hooks(node)
            kind = type(node)
            if kind is AccumulateGrad:
                v = node.variable
                part = (kind, v._data.shape, v.dtype, hooks)
                if node._pre_hooks or node._post_hooks:
                    raise _NotCaptured("hooks registered on a leaf's AccumulateGrad node")
                values = None
            elif kind is GraphRoot:
                part = (kind, edges)
                values = None
            elif isinstance(node, (OpBackward, BackwardCFunction)) or kind is CompiledFunctionBackward:
                if kind is CompiledFunctionBackward and node.entry.bw_gm is None:
                    raise _NotCaptured("an AOT-compiled node without a backward graph")
                values = node.saved_values()
                structure = _freeze(values, self.inputs)
                if kind is CompiledFunctionBackward:
                    extra = (node.entry, node._n_inputs, tuple(node._written))
                else:
                    extra = _formula_key(node)
                part = (kind, edges, hooks, structure, extra)
            elif kind is CopySlices and isinstance(node.fn, (OpBackward, BackwardCFunction)):
                values = node.saved_values()
                structure = _freeze(values, self.inputs)
                view_tensors = []
                chain = _freeze(getattr(node.view_fn, "chain", None), view_tensors)
                if view_tensors or chain == (type(None), None):
                    raise _NotCaptured("an in-place write through a view made with tensor arguments")
                extra = (type(node.fn), _formula_key(node.fn), chain, node.self_index, node.base_meta)
                part = (kind, edges, hooks, structure, extra)
            else:
                raise _NotCaptured(f"{node.name()} (a node kind compiled autograd does not "
                                   "trace yet)")
            self.saved.append(values)
            key.append(part)
        self.key = tuple(key)

    def _add_hooks(self, node):
        """Append the node's hooks (tensor hooks, pre-hooks, post-hooks) to self.hooks and
        return their part of the key. The graph takes hooks as inputs, so a hook made anew
        for every pass (a closure per forward, as nn.Module full backward hooks are) reuses
        the graph: the key holds a function's code, not the function."""
        tensor_hooks = _tensor_hooks(node)
        pre = list(node._pre_hooks.values()) if node._pre_hooks else []
        post = list(node._post_hooks.values()) if node._post_hooks else []
        if not (tensor_hooks or pre or post):
            return None
        self.hooks.extend(h for _, h in tensor_hooks)
        self.hooks.extend(pre)
        self.hooks.extend(post)
        return (tuple((nr, _hook_key(h)) for nr, h in tensor_hooks),
                tuple(_hook_key(h) for h in pre), tuple(_hook_key(h) for h in post))


def _formula_key(node):
    """What an op's backward formula depends on besides its saved values."""
    if isinstance(node, BackwardCFunction):
        return ()             # the ctx's attributes are in the saved values
    return (tuple(node._inputs), tuple(node._positions), node._n_outputs,
            None if node._result_meta is None else tuple(node._result_meta))


def _tensor_key(t):
    try:
        return (t._data.shape, t.dtype, t._data.strides, type(t))
    except RuntimeError as e:      # a saved tensor modified in place: eager decides if it is read
        raise _NotCaptured(f"a saved tensor was modified in place ({e})") from None


_PLAIN = frozenset((int, float, bool, complex, str, bytes, type(None)))


def _freeze(value, tensors):
    """A hashable stand-in for a node's saved values; tensors are appended to `tensors`
    (they become graph inputs) and stand in the key by their metadata. Values keep their
    type in the key: 1, 1.0 and True are equal in Python but not to a formula."""
    kind = type(value)
    if kind in _PLAIN:
        return (kind, value)
    if isinstance(value, Tensor):
        tensors.append(value)
        return _tensor_key(value)
    if kind is tuple or kind is list:
        return (kind, tuple([_freeze(v, tensors) for v in value]))
    if kind is dict:
        return (kind, tuple([(k, _freeze(v, tensors)) for k, v in value.items()]))
    if kind is slice:         # unhashable before Python 3.12
        return (kind, _freeze(value.start, tensors), _freeze(value.stop, tensors),
                _freeze(value.step, tensors))
    try:
        hash(value)
    except TypeError:
        raise _NotCaptured(f"a backward formula reads an unhashable {kind.__name__}") from None
    return (kind, value)


def _tensor_hooks(node):
    """[(output_nr, hook), ...]: Tensor.register_hook hooks on the node's outputs (on the
    leaf, for AccumulateGrad), in the order the engine calls them."""
    hooks = []
    if node._tensor_pre_hooks:
        for nr, hs in node._tensor_pre_hooks.items():
            hooks.extend((nr, h) for h in hs.values())
    if node._is_accumulate and node.variable._hooks:
        hooks.extend((0, h) for h in node.variable._hooks.values())
    return hooks


def _hook_key(hook):
    code = getattr(hook, "__code__", None)
    return code if code is not None else hook


# -- capture: trace the pass into one graph ---------------------------------------------

def _compile(plan, compiler_fn):
    gm, sinks = _capture(plan)
    counters["compiled_autograd"]["captures"] += 1
    log.debug("captured a backward of %d nodes:\n%s", len(plan.order), gm.print_readable(False))
    fn = compiler_fn(gm)
    if not callable(fn):
        raise TypeError(f"compiled autograd: compiler_fn must return a callable, "
                        f"got {type(fn).__name__}")
    counters["compiled_autograd"]["compiles"] += 1
    return _CompiledBackward(fn, sinks)


class _CompiledBackward:
    """A compiled backward and, per output, where it goes: (position in the plan, None) for
    a leaf's AccumulateGrad, (position, output_nr) for a tensor retaining its grad."""

    def __init__(self, fn, sinks):
        self.fn = fn
        self.sinks = sinks


def _capture(plan):
    """Trace `plan` into GraphModule forward(self, inputs, hooks), which returns the leaves'
    new gradients and retained gradients; and where each output goes (_CompiledBackward.sinks)."""
    tracer = GraphTracer()
    graph = tracer.graph
    inputs = graph.placeholder("inputs")
    hooks = graph.placeholder("hooks")
    for i, t in enumerate(plan.inputs):
        tracer.track(t, graph.call_function(operator.getitem, (inputs, i)))
    next_hook = iter(range(len(plan.hooks)))

    def hook_input():
        return graph.call_function(operator.getitem, (hooks, next(next_hook)), name="hook")

    def call_tensor_hook(grad):
        value = Tensor._make(grad._data.copy())      # a stand-in: the hook does not run now
        tracer.track(value, graph.call_function(call_hook, (hook_input(), tracer.node_of(grad))))
        return value

    def call_node_hook(fn, args, like):
        """A call of a grad_fn hook, returning one gradient (or None) per entry of `like`."""
        call = graph.call_function(fn, (hook_input(),) + tuple(tracer.to_arg(tuple(a)) for a in args))
        values = []
        for i, g in enumerate(like):
            if g is not None:
                g = Tensor._make(g._data.copy())
                tracer.track(g, graph.call_function(operator.getitem, (call, i)))
            values.append(g)
        return values

    outputs, sinks = [], []
    root_buffer = [None] * plan.root.num_outputs()
    for slot, g in zip(plan.root_slots, plan.inputs):
        root_buffer[slot] = g
    buffers = {plan.root: root_buffer}
    def on_data_read(t, what):
        if tracer.is_tracked(t):
            reads.append(what)
            raise _NotCaptured(f"a backward reads tensor values in Python (Tensor.{what}())")

    reads = []
    prev = _state.running
    _state.running = True
    _data_reads.append(on_data_read)
    try:
        with no_grad(), tracer:
            for position, (node, values) in enumerate(zip(plan.order, plan.saved)):
                grads = buffers.pop(node)
                for nr, hook in _tensor_hooks(node):
                    if grads[nr] is not None:
                        grads[nr] = call_tensor_hook(grads[nr])
                    else:
                        next(next_hook)           # not called: nothing flows into this output
                for nr, g in enumerate(grads):
                    if g is not None and (position, nr) in plan.retained:
                        outputs.append(g)
                        sinks.append((position, nr))
                if type(node) is AccumulateGrad:
                    if grads[0] is not None:
                        new_grad = Tensor._make(grads[0]._data.copy())
                        tracer.track(new_grad, graph.call_function(
                            clone_op, (tracer.node_of(grads[0]),), name="new_grad"))
                        outputs.append(new_grad)
                        sinks.append((position, None))
                    continue
                if node._pre_hooks:
                    for _ in node._pre_hooks:
                        grads = call_node_hook(call_pre_hook, (grads,), grads)
                if type(node) is GraphRoot:
                    outs = list(grads)
                elif type(node) is CompiledFunctionBackward:
                    outs = node.apply_with_saved(grads, values, traceable=True)
                else:
                    outs = node.apply_with_saved(grads, values)
                if node._post_hooks:
                    for _ in node._post_hooks:
                        outs = call_node_hook(call_post_hook, (outs, grads), outs)
                _pass_on(node, outs, buffers, _engine._sum_grads)
    finally:
        _data_reads.pop()
        _state.running = prev
    if reads:       # the user's code caught the error: its values were read all the same
        raise _NotCaptured(f"a backward reads tensor values in Python (Tensor.{reads[0]}())")
    graph.output(tuple(tracer.to_arg(o) for o in outputs))
    graph.eliminate_dead_code()
    return GraphModule(tracer.constants, graph), sinks


def _pass_on(node, outs, buffers, sum_grads):
    for edge, g in zip(node._edges, outs):
        if edge is None:
            continue
        child, nr = edge
        buf = buffers.get(child)
        if buf is None:
            buf = buffers[child] = [None] * child.num_outputs()
        if g is not None:
            buf[nr] = g if buf[nr] is None else sum_grads(buf[nr], g, False)


def _traced_into(fn):
    fn._dynjit_trace_into = True       # dynjit.compile of the graph traces into it, and the hook
    return fn


@_traced_into
def call_hook(hook, grad):
    """The graph's call of a tensor hook: one returning None passes the gradient on."""
    result = hook(grad)
    if result is None:
        return grad
    if result.shape != grad.shape:
        raise RuntimeError(f"hook changed the gradient's shape from {list(grad.shape)} to "
                           f"{list(result.shape)}")
    return result


@_traced_into
def call_pre_hook(hook, grads):
    """The graph's call of a grad_fn pre-hook: fn(grad_outputs) -> new grad_outputs or None."""
    result = hook(grads)
    return grads if result is None else _checked_grads(result, grads)


@_traced_into
def call_post_hook(hook, grad_inputs, grad_outputs):
    """The graph's call of a grad_fn hook: fn(grad_inputs, grad_outputs) -> new grad_inputs
    or None."""
    result = hook(grad_inputs, grad_outputs)
    return grad_inputs if result is None else _checked_grads(result, grad_inputs)


def _checked_grads(result, grads):
    if len(result) != len(grads):
        raise RuntimeError(f"a grad_fn hook returned {len(result)} gradients, expected {len(grads)}")
    for r, g in zip(result, grads):
        if g is None and r is not None:
            raise RuntimeError("under compiled autograd a grad_fn hook cannot give a gradient where "
                               "none flows (None in, a tensor out); run this backward with "
                               "compiled_autograd.disable()")
    return tuple(result)


# -- running a compiled backward --------------------------------------------------------

def _run(plan, compiled, keep_graph):
    """Call the compiled backward on the plan's inputs and accumulate into the leaves as
    the engine would; the pass is a graph task (queue_callback, current_graph_task_id)."""
    task = _engine.GraphTask(keep_graph, False, True)
    task.root = plan.root
    prev_running, prev_grad = _state.running, grad_state.enabled
    _engine._engine_lock.acquire()
    _engine._state.tasks.append(task)
    _state.running = True
    grad_state.enabled = False
    try:
        inputs = plan.inputs
        plan.inputs = None
        new_grads = compiled.fn(inputs, plan.hooks)
        del inputs
        if not isinstance(new_grads, (tuple, list)):
            new_grads = (new_grads,)
        new_grads = list(new_grads)
        if len(new_grads) != len(compiled.sinks):
            raise RuntimeError(f"compiled autograd: the compiled backward returned {len(new_grads)} "
                               f"gradients, expected {len(compiled.sinks)}")
        if not keep_graph:
            for node in plan.order:
                node.release()
        for i, (position, nr) in enumerate(compiled.sinks):
            if nr is None:
                _accumulate(plan.order[position], new_grads, i)
            else:
                t = plan.retained[(position, nr)]()
                if t is not None:
                    _graph.fill_retained_grad(t, new_grads[i])
        for callback in task.callbacks:
            callback()
    finally:
        grad_state.enabled = prev_grad
        _state.running = prev_running
        _engine._state.tasks.pop()
        _engine._engine_lock.release()


def _accumulate(node, new_grads, i):
    """AccumulateGrad's own semantics (steal, copy or add in place; post-accumulate hooks)."""
    grads = [new_grads[i]]
    new_grads[i] = None          # the gradient may become .grad without a copy if unshared
    v = node.variable
    if grads[0]._data.shape != v._data.shape:
        raise RuntimeError(f"compiled autograd: the gradient for a leaf of shape {list(v.shape)} has "
                           f"shape {list(grads[0].shape)} (did a tensor hook change its shape?)")
    node.apply(grads)
