"""Tracing a function for AOT compilation into one functional graph.

`trace_function` runs the user's function once, on copies of its tensor
arguments, under a `FunctionalTracer`. If an output needs a gradient, it then
runs `autograd.grad` from the differentiable outputs, still under the tracer,
so the same graph also holds the backward: the *joint* graph, with
placeholders `primals_*` (inputs) and `tangents_*` (incoming gradients) and
output `(*forward_outputs, *grads)`. Otherwise it is a forward-only
(inference) graph with placeholders `arg*_1`.

Everything eager would do besides computing the graph's outputs is recorded
in the returned `TracedFunction` for the runtime to replay:
- inputs the function wrote in place: their new value is a forward output
  that the runtime copies back into the caller's tensor (or, with
  `keep_inference_input_mutations`, a `copy_` at the end of the graph);
- outputs that are an input, a view of an input, a view of another output or
  of an intermediate, or a `detach` of one: rebuilt at runtime from the real
  tensor, so that `out._base is inp` and in-place writes through the output
  behave as in eager;
- tensor arguments that share memory with a base that one of them writes:
  the graph takes their common base once (a "synthetic base") and makes each
  argument as a view of it, so that a write through one is seen by the others;
- outputs whose history a backward inside the function freed (`autograd.grad(loss, x)`
  without retain_graph, then `return loss`): left out of the joint backward, and given a
  grad_fn that raises eager's "backward through the graph a second time".
A `.backward()` inside the function (which accumulates into `.grad`, a side effect the graph
cannot replay) is refused with an error; `autograd.grad` inside is traced as ops.

The trace runs on real values but is replayed on others, so a Python read of a
traced tensor's value (`if x.sum() > 0`, `float(t)`, `.item()`) is refused with
an error rather than frozen into the graph (PyTorch's fake tensors refuse it too).

An int or float argument is a graph input too, traced as a number
(dynjit.fx.traced_number): the ops and arithmetic it takes part in read it from its
placeholder, in the forward and in the backward (the backward graph takes it as a saved
value), so the graph serves every value of it. A use that needs the value at trace time
specializes it: `TracedFunction.specialized` lists those arguments, and AOT autograd's
cache key then holds their values.
"""
import logging

import numpy as np

from .. import random as _random
from ..autograd import grad as autograd_grad
from ..autograd.function import Function, _apply_eager
from ..autograd.grad_mode import enable_grad, state as _grad_state
from ..autograd.graph import CopySlices, FREED_MESSAGE, view_chain, replay_view_chain
from ..autograd.saved import SavedTensorModifiedError
from ..fx.graph_module import GraphModule
from ..fx.interpreter import Interpreter
from ..fx.proxy_tensor import same_layout_copy
from ..fx.symbolic_shapes import NotSymbolic, Poly, ShapeEnv, poly_of, symbolic_sizes
from ..fx.traced_number import TracedNumber, _all_sizes, has_traced, is_traceable_number, plain, specialize_all
from ..ops import dispatch as _dispatch
from ..ops.registry import registry
from ..tensor import Tensor, _data_reads
from .._pytree import flatten_into, tree_unflatten
from .functionalize import FunctionalTracer

_copy_ = registry["copy_"]


class BackwardNotTraceable(Exception):
    """The backward of the traced function reads a tensor its forward modified in place
    after saving it: eager raises that error at backward time, if the backward runs; AOT
    traces the backward ahead of time, so the function runs uncompiled (see aot_function)."""


class _TraceInput(Function):
    """An identity between a traced argument and the leaf gradients are taken for.

    The function under trace sees a non-leaf tensor, which it may modify in
    place (whether the caller's tensor may be is checked at run time, as eager
    would), while gradients are still taken for the argument's value as it
    was passed in. Its backward adds no op to the graph."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)     # no gradient stays None, as eager gives it
        return Tensor._make(same_layout_copy(x._data))

    @staticmethod
    def backward(ctx, grad):
        return grad


class _StackTraceInterpreter(Interpreter):
    """Runs a GraphModule node by node, telling the tracer the stack trace of each node."""

    def __init__(self, module, tracer):
        super().__init__(module)
        self.tracer = tracer

    def run_node(self, node):
        prev = self.tracer.source_stack_trace
        self.tracer.source_stack_trace = node.meta.get("stack_trace")
        try:
            return super().run_node(node)
        finally:
            self.tracer.source_stack_trace = prev


class TracedFunction:
    """One trace: the graph and how to map a call's values onto it and back.

    gm, training  -- the joint graph (or, training False, the inference graph)
    placeholders  -- per graph input: ("leaf", i) pass argument leaf i, ("root", i)
                     pass the base that leaf i is a view of, ("const", t) pass t
    num_fwd_outputs, fw_requires_grad, fw_meta -- the forward outputs, which of
                     them are differentiable, their (shape, dtype)
    copy_back     -- (placeholder, forward output, with autograd?): write the
                     output into the caller's tensor after the forward
    meta_mutations -- (argument leaf, [(method, args, grad mode)]): in-place view ops
                     (t_, unsqueeze_ ...) replayed on the caller's tensor, before copy_back
    set_back      -- (placeholder, forward output): inputs set_() gave other memory
    mutation_ops  -- (placeholder, op name) for inputs written with autograd
                     recording (checked as eager checks in-place writes)
    grad_inputs   -- placeholders that receive gradients, in joint-output order (the only
                     inputs the backward node has edges to)
    bw_copy_back  -- placeholders the backward writes (extra backward outputs)
    program, out_values, out_spec -- how to build the user's outputs (see
                     runtime.build_outputs)
    grad_mode_after -- the grad mode the function left, if it switched it
    freed_outputs -- forward outputs whose history a backward inside the function freed
                     (see _JointTrace.find_freed_outputs): given a grad_fn that raises
    specialized   -- {argument leaf index: why}: the number arguments whose value the trace
                     read (the graph is only valid for their values in this call)
    """


def _isolated(fn):
    """Run a trace on its own: outer dispatch modes (an enclosing make_fx) do not see
    the tracing run, and the random number generator and grad mode are left as
    they were, so the compiled graph draws the numbers eager would have drawn on
    this call and the function's own grad-mode switches happen when it runs."""
    def wrapper(*args, **kwargs):
        # the trace draws from this thread's private copies of the generators (other threads
        # drawing meanwhile are neither handed the same numbers again nor skipped); inside an
        # outer trace's copies, those are put back as they were
        with _random.private_state():
            state = _random.get_rng_state()
            grad_mode = _grad_state.enabled
            outer = _dispatch._modes[:]
            _dispatch._modes.clear()
            try:
                return fn(*args, **kwargs)
            finally:
                _dispatch._modes[:] = outer
                _random.set_rng_state(state)
                _grad_state.enabled = grad_mode
    return wrapper


def _shares_memory_group(tensors):
    for a in range(len(tensors)):
        for b in range(a + 1, len(tensors)):
            if np.may_share_memory(tensors[a]._data, tensors[b]._data):
                return True
    return False


def _names_reached_by(fn):
    """A predicate: is a tensor one of fn's globals, closure cells or defaults?"""
    def is_global(t):
        f = getattr(fn, "__func__", fn)
        cells = [c.cell_contents for c in (getattr(f, "__closure__", None) or ()) if _filled(c)]
        values = list(getattr(f, "__globals__", {}).values()) + cells + list(getattr(f, "__defaults__", None) or ())
        return any(v is t for v in values)
    return is_global


def _holds_tensors(obj):
    """Does an object other than a list/tuple/dict keep tensors in its attributes?"""
    try:
        attrs = list(vars(obj).values())
    except TypeError:
        attrs = [getattr(obj, n, None) for n in getattr(type(obj), "__slots__", ())]
    return any(isinstance(a, Tensor) for a in attrs)


def _filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _lost_saved_values(node):
    """Did a backward that did not retain the graph free what this node's backward reads?"""
    inner = node.fn if isinstance(node, CopySlices) else node
    if not (inner._freed or getattr(inner, "_freed_saved", False)):
        return False
    saved_values = getattr(inner, "saved_values", None)
    if saved_values is None:
        return False
    try:
        saved_values()
    except RuntimeError as e:
        return str(e) == FREED_MESSAGE
    return False


def _reaches(roots, stop):
    """Does the autograd graph behind these nodes (not past the nodes whose ids are in `stop`)
    hold a node whose saved values were freed?"""
    stack, seen = list(roots), set()
    while stack:
        node = stack.pop()
        if id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        if _lost_saved_values(node):
            return True
        stack.extend(edge[0] for edge in node._edges if edge is not None)
    return False


_log = logging.getLogger("dynjit.dynamic")


@_isolated
def trace_function(fn, leaves, spec, training=True, keep_inference_input_mutations=False,
                   decompositions=None, symbolic=None, log=True):
    """Trace fn(*tree_unflatten(spec, leaves)) into a TracedFunction (see the module docstring).

    `training`: trace the backward too when an output needs a gradient (a trace
    whose outputs need none is an inference graph either way). `symbolic`: a
    `SymbolicSpec` of the sizes to trace as symbols (see symbolic.py); the trace raises
    NotSymbolic where it cannot. `log`: log the numbers it specialized (DYNJIT_LOGS=dynamic)."""
    if symbolic is not None:
        return _JointTrace(fn, leaves, spec, training, keep_inference_input_mutations, decompositions,
                           trace_numbers=True, symbolic=symbolic).run()
    numbers = [i for i, v in enumerate(leaves) if is_traceable_number(v)]
    if not numbers:
        return _JointTrace(fn, leaves, spec, training, keep_inference_input_mutations, decompositions).run()
    state = _random.get_rng_state()
    failure = None
    try:
        tr = _JointTrace(fn, leaves, spec, training, keep_inference_input_mutations, decompositions,
                         trace_numbers=True).run()
    except Exception as e:
        failure = f"tracing with it as a number raised {type(e).__name__}: {e}"
    if failure is not None:
        # Some Python code did not take a traced number for a number (it raised): trace again
        # with plain numbers, all specialized. An error of the function itself raises again.
        _random.set_rng_state(state)
        tr = _JointTrace(fn, leaves, spec, training, keep_inference_input_mutations, decompositions).run()
        tr.specialized = {i: failure for i in numbers}
    if log and tr.specialized and _log.isEnabledFor(logging.DEBUG):
        name = getattr(fn, "__qualname__", type(fn).__name__)
        for i, why in sorted(tr.specialized.items()):
            _log.debug("AOT trace of %s specialized number argument %d = %r: %s", name, i, leaves[i], why)
    return tr


def _symbolic_chain(chain):
    """A view chain (no multi-output view) whose traced numbers are all symbolic sizes."""
    return all(index is None for _, _, index in chain) and has_traced(tuple(chain)) and _all_sizes(tuple(chain))


def _sizes_as_polys(value, env):
    """`value` with each traced size replaced by its Poly (evaluated for each call)."""
    if type(value) is TracedNumber:
        return env.norm(poly_of(value))
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_sizes_as_polys(v, env) for v in value)
    return value


class _JointTrace:
    """The state of one trace; `run` does the steps in order."""

    def __init__(self, fn, leaves, spec, training, keep_input_mutations, decompositions,
                 trace_numbers=False, symbolic=None):
        self.fn, self.leaves, self.spec = fn, leaves, spec
        self.symbolic = symbolic
        self.shape_env = None
        self.trace_numbers = trace_numbers
        self.training = training
        self.keep_input_mutations = keep_input_mutations
        self.tracer = FunctionalTracer()
        if decompositions:
            self.tracer.decompositions = dict(decompositions)
        self.graph = self.tracer.graph
        self.tr = TracedFunction()
        self.tr.n_leaves = len(leaves)
        self.tr.placeholders = []
        self.tr.specialized = {}
        self.tr.shape_env = None     # the symbols and guards of a symbolic trace
        self.size_nodes = []         # the placeholders of symbols read from tensor sizes
        self.inner = []          # per placeholder: the tensor (or traced number) the trace uses for it
        self.grad_leaves = []    # per placeholder: the tensor gradients are taken for, or None
        self.ph_nodes = []
        self.lifted = set()      # placeholders for closure tensors that need grad
        self.grads_at_lift = {}  # lifted placeholder -> (its .grad, that grad's version) when lifted
        self.fw_nodes, self.fw_tensors, self.fw_diff, self.fw_index = [], [], [], {}

    def run(self):
        try:
            if self.symbolic is None:
                return self._run()
            self.shape_env = ShapeEnv(self.tracer.numbers)
            self.tracer.shape_env = self.shape_env
            with symbolic_sizes(self.shape_env):
                tr = self._run()
            tr.shape_env = self.shape_env
            tr.size_nodes = self.size_nodes
            return tr
        finally:
            self.tracer.numbers.finish()
            # the tracer and this trace refer to each other: without this, the caller's inputs
            # would live on until the garbage collector runs
            self.__dict__.clear()

    def _run(self):
        tr = self.tr
        traced = self.make_inputs()
        out = self.call(traced)
        self.refuse_grad_accumulation()
        kept = self.find_input_writes()
        self.describe_outputs(out, traced)
        tr.freed_outputs = self.find_freed_outputs() if self.training else []
        if self.training and not any(self.fw_diff):
            # Nothing the caller gets back needs a gradient (the function ran under
            # no_grad, or nothing required grad): an inference graph, as eager would
            # record no history.
            self.training = False
            for k, node in enumerate(self.ph_nodes):
                node.name = node.target = self.graph._names.create(f"arg{k}_1")
        tr.training = self.training
        tr.num_fwd_outputs = len(self.fw_nodes)
        tr.fw_meta = [(n.meta["val"].shape, n.meta["val"].dtype) for n in self.fw_nodes]
        tr.fw_requires_grad = self.fw_diff
        tr.grad_inputs = [k for k, g in enumerate(self.grad_leaves) if g is not None] if self.training else []
        tr.bw_copy_back = []
        grad_nodes = self.trace_backward() if self.training else []
        graph = self.graph
        for target, value, trace in kept:
            node = graph.call_function(_copy_, (target, value))
            if trace is not None:
                node.meta["stack_trace"] = trace     # the line of the write it replays
        graph.output(tuple(self.fw_nodes) + tuple(grad_nodes))
        tr.specialized = dict(self.tracer.numbers.specialized)
        graph.eliminate_dead_code()
        graph.lint()
        # the tracer's node-making hook held the tracer, and through it this trace and the
        # caller's tensors, for as long as the graph lived
        graph.__dict__.pop("call_function", None)
        tr.gm = GraphModule(self.tracer.constants, graph)
        tr.example_inputs = [g if g is not None else plain(t) for g, t in zip(self.grad_leaves, self.inner)]
        return tr

    # -- inputs ---------------------------------------------------------------------
    def add_placeholder(self, runtime, source):
        k = len(self.tr.placeholders)
        node = self.graph.placeholder(f"primals_{k + 1}" if self.training else f"arg{k}_1")
        arr = same_layout_copy(runtime._data)
        if self.training and runtime._requires_grad:
            leaf = Tensor._make(arr)
            leaf._requires_grad = True
            with enable_grad():
                t = _apply_eager(_TraceInput, (leaf,), {})
        else:
            leaf = None
            t = Tensor._make(arr)
            t._requires_grad = runtime._requires_grad and not self.training
        self._record_placeholder(t, node, source, leaf)
        return k

    def lift(self, t):
        """A tensor the function reads that is not an argument but needs a gradient (a
        closure or global parameter): an extra input, fed that same tensor on every call."""
        k = len(self.tr.placeholders)
        where = self.graph.inserting_after(self.ph_nodes[-1]) if self.ph_nodes else \
            self.graph.inserting_before(None)
        with where:
            node = self.graph.placeholder(f"primals_{k + 1}")
        self._record_placeholder(t, node, ("const", t), t)
        self.lifted.add(k)
        self.grads_at_lift[k] = (t._grad, t._grad._version if t._grad is not None else None)
        return node

    def add_number_placeholder(self, value, i):
        """An int or float argument (leaf i): a placeholder, and the traced number for it."""
        k = len(self.tr.placeholders)
        node = self.graph.placeholder(f"primals_{k + 1}" if self.training else f"arg{k}_1")
        if self.symbolic is not None and i in self.symbolic.numbers:
            number = self.shape_env.symbols[self.shape_env.add_symbol(value, node, [("leaf", i)])].number
        else:
            number = self.tracer.numbers.input(value, node, i)
        self.tr.placeholders.append(("leaf", i))
        self.inner.append(number)
        self.grad_leaves.append(None)
        self.ph_nodes.append(node)
        return number

    def _record_placeholder(self, t, node, source, grad_leaf):
        self.tracer.track(t, node)
        if source[0] != "const":
            self.tracer.inputs[id(t)] = (t, node, f"argument {source[1]}", (
                t.data_ptr(), t._data.shape, t._data.strides, id(t._version_counter), t._version_counter[0]))
        self.tr.placeholders.append(source)
        self.inner.append(t)
        self.grad_leaves.append(grad_leaf)
        self.ph_nodes.append(node)

    def make_inputs(self):
        """The values the function is traced on: one placeholder per distinct tensor
        argument, or one per shared base that the arguments are views of."""
        leaves = self.leaves
        groups = {}
        for i, v in enumerate(leaves):
            if isinstance(v, Tensor):
                root = v._base if v._base is not None else v
                members = groups.setdefault(id(root), [])
                if all(leaves[j] is not v for j in members):
                    members.append(i)
        synthetic = {}       # leaf index -> group root, for groups traced through their base
        for members in groups.values():
            if len(members) > 1 and _shares_memory_group([leaves[i] for i in members]):
                for i in members:
                    v = leaves[i]
                    synthetic[i] = v._base if v._base is not None else v
        if self.training:
            self.tracer.lift = self.lift
        self.tracer.is_global = _names_reached_by(self.fn)

        traced = list(leaves)
        root_ph = {}         # id(runtime root) -> placeholder index
        synthetic_views = []
        for i, v in enumerate(leaves):
            if not isinstance(v, Tensor):
                if self.trace_numbers and is_traceable_number(v):
                    traced[i] = self.add_number_placeholder(v, i)
                continue
            first = next(j for j in range(i + 1) if leaves[j] is v)
            if first != i:
                traced[i] = traced[first]        # the same tensor passed twice
            elif i in synthetic:
                root = synthetic[i]
                k = root_ph.get(id(root))
                if k is None:
                    k = root_ph[id(root)] = self.add_placeholder(root, ("root", i))
                synthetic_views.append((i, k, view_chain(v) if v._base is not None else []))
            else:
                traced[i] = self.inner[self.add_placeholder(v, ("leaf", i))]
        if self.symbolic is not None:
            if synthetic_views:
                raise NotSymbolic("arguments that share memory")
            self.make_symbols(traced)
        with self.tracer:
            for i, k, chain in synthetic_views:
                traced[i] = replay_view_chain(self.inner[k], chain)
        self.traced = traced
        return traced

    def make_symbols(self, traced):
        """The symbols of the tensor sizes the spec names: one shared with the int argument
        read from that size (the frontend passes `x.shape[0]` as a number), else a new
        placeholder ("size", (leaf, dim)); then the inputs' symbolic shapes."""
        env = self.shape_env
        by_leaf = {src[1]: k for k, s in enumerate(env.symbols) for src in s.sources if src[0] == "leaf"}
        by_value = {}        # duck sizing: size -> its symbol
        for i, v in enumerate(self.leaves):
            if not isinstance(v, Tensor) or traced[i] is None or not isinstance(traced[i], Tensor):
                continue
            dims = self.symbolic.dims.get(i, ())
            polys = []
            for d, n in enumerate(v._data.shape):
                k = None
                if d in dims and n >= 2:
                    j = self.symbolic.ties.get((i, d))
                    k = by_leaf.get(j) if j is not None else None
                    duck = k is None and self.symbolic.duck and by_value.get(n) is not None
                    if duck:
                        k = by_value[n]
                    if k is not None and env.symbols[k].hint == n and not duck:
                        env.symbols[k].sources.append(("dim", i, d))
                    else:
                        p = len(self.tr.placeholders)
                        node = self.graph.placeholder(f"primals_{p + 1}" if self.training else f"arg{p}_1")
                        if duck:    # the same symbol, read from this (tensor, dim) as PyTorch's sym_size
                            env.symbols[k].sources.append(("dim", i, d))
                            number = env.dim_number(k, node, traced[i], d)
                        else:
                            k = env.add_symbol(n, node, [("dim", i, d)])
                            number = env.symbols[k].number
                        node.meta["size_of"] = (self.tracer.node_of(traced[i]).name, d)   # partition.py
                        self.tr.placeholders.append(("size", (i, d)))
                        self.inner.append(number)
                        self.grad_leaves.append(None)
                        self.ph_nodes.append(node)
                        self.size_nodes.append(node)
                        by_value.setdefault(n, k)
                polys.append(Poly.sym(k) if k is not None else Poly.const(n))
            if any(not p.is_const() for p in polys):
                env.set_shape(traced[i], tuple(polys))
                meta = self.tracer.node_of(traced[i]).meta.get("val")
                if meta is not None:
                    meta.sym_shape = env.sym_strs(polys)

    def call(self, traced):
        args, kwargs = tree_unflatten(self.spec, traced) if self.spec is not None else (traced, {})
        grad_mode = _grad_state.enabled
        gm = self.fn if isinstance(self.fn, GraphModule) else getattr(self.fn, "_aot_graph_module", None)
        _data_reads.append(self.refuse_data_read)
        try:
            with self.tracer:
                if gm is not None and gm._in_spec is None and not kwargs and \
                        any("stack_trace" in n.meta for n in gm.graph.nodes):
                    out = _StackTraceInterpreter(gm, self.tracer).run(*args)
                else:
                    out = self.fn(*args, **kwargs)
        finally:
            _data_reads.pop()
        # a function may switch grad mode (the frontend's graphs do, at no_grad
        # boundaries): the compiled function leaves grad mode as the function did
        self.tr.grad_mode_after = _grad_state.enabled if _grad_state.enabled != grad_mode else None
        return out

    def refuse_grad_accumulation(self):
        """A `.backward()` (or autograd.backward) inside the function accumulates into .grad, a
        side effect the graph does not replay: it went to the trace's own leaves (or, for a
        closure tensor, happened once, while tracing). autograd.grad returns its gradients and
        is traced as ops; .backward() is refused rather than silently lost."""
        for k, leaf in enumerate(self.grad_leaves):
            if leaf is None or leaf._grad is None:
                continue
            before = self.grads_at_lift.get(k)
            if before is not None and leaf._grad is before[0] and leaf._grad._version == before[1]:
                continue
            name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
            raise RuntimeError(
                f"AOT autograd traced {name} and it calls .backward() (or autograd.backward), which "
                f"accumulates gradients into the .grad of {self.describe_placeholder(k)}: the compiled "
                "graph cannot replay that. Return the loss and call .backward() outside the compiled "
                "function, compute the gradients with autograd.grad and return them, or compile "
                "with dynjit.compile, which breaks the graph at .backward().")

    def refuse_data_read(self, tensor, what):
        """The graph is traced once and replayed: a Python value read from a traced tensor
        (a branch on it, float(t)) would be frozen into it, silently wrong on other inputs."""
        if self.tracer.is_tracked(tensor):
            name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
            raise RuntimeError(
                f"AOT autograd traced {name} and it reads a tensor's value in Python "
                f"(Tensor.{what}(), or a branch on a tensor): the compiled graph would freeze the "
                "value of this first call. Compute it with tensor ops (dynjit.where instead of "
                "an if), or compile the function with dynjit.compile, which breaks the graph "
                "there and runs that part as Python.")

    # -- forward outputs ------------------------------------------------------------
    def forward_output(self, node, tensor, differentiable):
        """Index of `node` among the forward graph's outputs (added if new)."""
        j = self.fw_index.get(node)
        if j is None:
            j = self.fw_index[node] = len(self.fw_nodes)
            self.fw_nodes.append(node)
            self.fw_tensors.append(tensor)
            self.fw_diff.append(False)
        self.fw_diff[j] = self.fw_diff[j] or differentiable
        return j

    def find_input_writes(self):
        """Inputs the function wrote in place. A write autograd recorded gives the
        caller's tensor a new history (copied back with autograd); a write under
        no_grad, or to a tensor without grad, is copied back without one, or kept in
        the graph as a copy_. Returns the (placeholder, new value) pairs kept."""
        tr, tracer = self.tr, self.tracer
        tr.copy_back, tr.mutation_ops, tr.set_back, kept = [], [], [], []
        tr.meta_mutations = self.find_metadata_mutations()
        metadata_changed = {id(self.traced[i]) for i, _ in tr.meta_mutations}
        for k, t in enumerate(self.inner):
            if type(t) is TracedNumber:
                continue
            new = tracer.node_of(t)
            if id(t) in tracer.set_targets and new is not self.ph_nodes[k]:
                self.set_input(k, t, new)
                continue
            if new is self.ph_nodes[k] or id(t) not in tracer.data_written:
                continue        # unchanged, or only its shape/strides changed (replayed on its own)
            if k in self.lifted:
                raise RuntimeError(
                    "the traced function modifies in place a tensor that requires grad and is not one "
                    "of its arguments (a global or closure tensor); AOT autograd cannot replay that. "
                    "Pass the tensor as an argument.")
            op_name = tracer.autograd_writes.get(id(t))
            if op_name is not None:
                tr.mutation_ops.append((k, op_name))
            differentiable = self.training and op_name is not None and t._requires_grad
            if self.keep_input_mutations and not differentiable and id(t) not in metadata_changed:
                kept.append((self.ph_nodes[k], new, tracer.write_traces.get(id(t))))
            else:
                tr.copy_back.append((k, self.forward_output(new, t, differentiable), differentiable))
        return kept

    def find_metadata_mutations(self):
        """[(argument leaf index, [(method name, args, grad mode)])]: the in-place view ops
        (t_, unsqueeze_ ...) the function applied to its arguments, replayed on the caller's
        tensors after the forward (before new values are copied into them)."""
        found = []
        seen = set()
        for i, v in enumerate(self.traced):
            if not isinstance(v, Tensor) or id(v) in seen:
                continue
            seen.add(id(v))
            entry = self.tracer.meta_mutations.get(id(v))
            if entry is not None and entry[0] is v:
                # replayed on the caller's tensor, outside the graph: with the traced values
                steps = [(name, specialize_all(args, f"the in-place view op {name} of an argument"), mode)
                         for name, args, mode in entry[1]]
                found.append((i, steps))
        return found

    def set_input(self, k, t, new):
        """Argument k ends the function on other memory (set_()): its new value is a forward
        output, which the runtime gives the caller's tensor with set_()."""
        if self.tr.placeholders[k][0] != "leaf" or id(t) in self.tracer.data_written:
            raise RuntimeError(
                f"the traced function calls set_() on argument {self.tr.placeholders[k][1]}, but the "
                "input has other mutations that we cannot replay together with set_() (it was "
                "written in place, or it shares memory with another argument); AOT autograd only "
                "supports set_() on an input that is not otherwise modified.")
        self.tr.set_back.append((k, self.forward_output(new, t, False)))

    def describe_outputs(self, out, traced):
        """The output program: how each returned value is had at run time."""
        tr = self.tr
        out_leaves = []
        tr.out_spec = flatten_into(out, out_leaves)
        leaf_pos = {}
        for i, v in enumerate(traced):
            if isinstance(v, Tensor):
                leaf_pos.setdefault(id(v), i)
        self.leaf_pos = leaf_pos
        self.inner_pos = {id(t): k for k, t in enumerate(self.inner)}
        self.program, self.memo, self.multi_views = [], {}, {}
        tr.out_values = []
        for o in out_leaves:
            if isinstance(o, Tensor):
                tr.out_values.append(self.value_of(o))
            else:
                o = specialize_all(o, "returned from the function (outputs are tensors)")
                if _holds_tensors(o):
                    raise TypeError(
                        f"the traced function returned a {type(o).__name__} holding tensors; AOT "
                        "compilation returns tensors, Python values, and lists, tuples and dicts of "
                        "them. Return the tensors themselves (e.g. as a tuple or dict).")
                self.program.append(("const", o))
                tr.out_values.append(len(self.program) - 1)
        tr.program = self.program
        tr.simple_outputs = all(self.program[k][0] == "out" for k in tr.out_values) and \
            len(self.program) == len(tr.out_values)

    def value_of(self, t):
        """Index of the program step that produces (the runtime counterpart of) t."""
        program = self.program
        k = self.memo.get(id(t))
        if k is not None:
            return k
        if id(t) in self.leaf_pos:
            step = ("leaf", self.leaf_pos[id(t)])
        elif id(t) in self.inner_pos:
            step = ("ph", self.inner_pos[id(t)])
        elif t._base is not None and t._view_of is None and self.training and t.grad_fn is not None:
            # an input a custom Function returned as-is: an alias whose gradient is that
            # Function's backward, so it must come out of the compiled node (not be rebuilt
            # from the input, which would give it an identity gradient)
            step = ("out", self.forward_output(self.tracer.node_of(t), t, True))
        elif t._base is not None and self.shape_env is not None and _symbolic_chain(view_chain(t)):
            # rebuilt at run time from the caller's tensor, with this call's sizes
            chain = _sizes_as_polys(tuple(view_chain(t)), self.shape_env)
            step = ("symview", self.value_of(t._base), chain)
        elif t._base is not None:
            # rebuilt at run time from the caller's tensor, outside the graph
            chain = specialize_all(tuple(view_chain(t)), "a view op whose output is a view of an argument")
            base = self.value_of(t._base)
            op, rest, index = chain[-1] if chain else (None, None, None)
            if index is None:
                step = ("view", base, chain)
            else:
                # one output of a multi-output view (unbind, split): the call is made once
                # for all its outputs, which share one autograd node as in eager
                key = (base, repr(chain[:-1]), op.name, repr(rest))
                whole = self.multi_views.get(key)
                if whole is None:
                    program.append(("view", base, chain[:-1] + ((op, rest, None),)))
                    whole = self.multi_views[key] = len(program) - 1
                step = ("item", whole, index)
        elif id(t) in self.tracer.alias_of:
            op, source = self.tracer.alias_of[id(t)]
            step = ("alias", op, self.value_of(source))
        else:
            node = self.tracer.node_of(t)
            if node.op == "get_attr":
                step = ("const", t)
            elif node.op == "placeholder":
                step = ("ph", self.ph_nodes.index(node))
            else:
                diff = self.training and t._requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)
                step = ("out", self.forward_output(node, t, diff))
        program.append(step)
        self.memo[id(t)] = len(program) - 1
        return len(program) - 1

    def describe_placeholder(self, k):
        kind, i = self.tr.placeholders[k]
        return f"argument {i}" if kind == "leaf" else \
            f"the base of argument {i}" if kind == "root" else "a global or closure tensor"

    def find_freed_outputs(self):
        """Differentiable outputs whose history a backward inside the function freed
        (`autograd.grad(loss, x)` without retain_graph, then `return loss`): in eager the
        output keeps its grad_fn, and a backward through it raises "Trying to backward
        through the graph a second time". The joint backward cannot trace through the
        freed nodes either, so these outputs leave it (their fw_diff becomes False) and the
        runtime gives them a grad_fn that raises that error (runtime.FreedGraphBackward)."""
        roots = [(j, t.grad_fn) for j, t in enumerate(self.fw_tensors)
                 if self.fw_diff[j] and t.grad_fn is not None]
        # the joint backward stops at the inputs: a lifted closure tensor's own history is not
        # part of this trace (a backward through it is the caller's, as in eager)
        inputs = {id(g.grad_fn) for g in self.grad_leaves if g is not None and g.grad_fn is not None}
        if not _reaches([r for _, r in roots], inputs):
            return []           # the common case: no backward ran inside the function
        freed = [j for j, root in roots if _reaches([root], inputs)]
        for j in freed:
            self.fw_diff[j] = False
        return freed

    # -- the backward ---------------------------------------------------------------
    def trace_backward(self):
        """autograd.grad from the differentiable forward outputs, seeded with tangent
        placeholders, recorded into the same graph; returns the gradient nodes (and the
        new values of inputs the backward writes, see bw_copy_back)."""
        tr, tracer, graph = self.tr, self.tracer, self.graph
        diff = [j for j, g in enumerate(self.fw_diff) if g]
        tangents, tangent_nodes = [], []
        with graph.inserting_after(self.ph_nodes[-1] if self.ph_nodes else None):
            for n, j in enumerate(diff):
                node = graph.placeholder(f"tangents_{n + 1}")
                meta = self.fw_nodes[j].meta["val"]
                tangent = Tensor._make(np.ones(meta.shape, dtype=meta.dtype.np))
                tracer.track(tangent, node)
                if self.shape_env is not None:
                    shape = self.shape_env.shape_of(self.fw_tensors[j])
                    if shape is not None:
                        self.shape_env.set_shape(tangent, shape)
                        node.meta["val"].sym_shape = self.shape_env.sym_strs(shape)
                tangents.append(tangent)
                tangent_nodes.append(node)
        after_forward = [tracer.node_of(t) if isinstance(t, Tensor) else None for t in self.inner]
        meta_before = {k: len(v[1]) for k, v in tracer.meta_mutations.items()}
        grads = [None] * len(tr.grad_inputs)
        if diff and tr.grad_inputs:
            try:
                with tracer:
                    grads = autograd_grad([self.fw_tensors[j] for j in diff],
                                          [self.grad_leaves[k] for k in tr.grad_inputs],
                                          tangents, allow_unused=True)
            except SavedTensorModifiedError as e:
                raise BackwardNotTraceable(str(e)) from None
        # An input that requires grad but that no differentiable output depends on (one the
        # function detaches, as truncated BPTT does with its carried hidden state) gets no
        # gradient and no autograd edge, as in eager: an edge would make the backward run
        # the input's own grad_fn, whose saved values an earlier backward may have freed.
        kept = [(k, g) for k, g in zip(tr.grad_inputs, grads) if g is not None]
        tr.grad_inputs = [k for k, _ in kept]
        grads = [g for _, g in kept]
        for k, t in enumerate(self.inner):
            entry = tracer.meta_mutations.get(id(t))
            if entry is not None and len(entry[1]) != meta_before.get(id(t), 0):
                raise RuntimeError(
                    f"the backward of the traced function changes the shape or strides of an input "
                    f"in place ({entry[1][-1][0]} on {self.describe_placeholder(k)}, e.g. in a custom "
                    "autograd.Function's backward); AOT autograd cannot replay an input that had its "
                    "metadata mutated in the backward. Use an out-of-place view (transpose, "
                    "unsqueeze ...) instead.")
        grad_nodes = [tracer.node_of(g) if g is not None else None for g in grads]
        for tangent, node in zip(tangents, tangent_nodes):
            if tracer.node_of(tangent) is not node:
                raise RuntimeError(
                    "the backward of the traced function modifies a gradient it was given in place "
                    "(an input to the backward that was mutated during the backward, e.g. "
                    "grad_output.mul_() in a custom autograd.Function's backward); AOT autograd "
                    "does not support that. Use an out-of-place op (grad_output * 2) instead.")
        # Inputs the backward writes (a custom Function's backward zeroing a saved input):
        # their new values are extra backward outputs, copied back after the backward.
        for k, t in enumerate(self.inner):
            if not isinstance(t, Tensor):
                continue
            new = tracer.node_of(t)
            if new is not after_forward[k]:
                tr.bw_copy_back.append(k)
                grad_nodes.append(new)
        return grad_nodes
