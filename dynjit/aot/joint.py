"""Tracing a function for AOT compilation into one functional graph.

`trace_function` runs the user's function once, on copies of its tensor
arguments, under a `FunctionalTracer`. In training mode (grad enabled and a
tensor argument requires grad) it then runs `autograd.grad` from the
differentiable outputs, still under the tracer, so the same graph also holds
the backward: the *joint* graph, with placeholders `primals_*` (inputs) and
`tangents_*` (incoming gradients) and output `(*forward_outputs, *grads)`.
Without training it is a forward-only (inference) graph.

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
  argument as a view of it, so that a write through one is seen by the others.
"""
import numpy as np

from .. import random as _random
from ..autograd import grad as autograd_grad
from ..autograd.function import Function, _apply_eager
from ..autograd.grad_mode import enable_grad, state as _grad_state
from ..autograd.graph import view_chain, replay_view_chain
from ..fx.graph_module import GraphModule
from ..fx.proxy_tensor import same_layout_copy
from ..ops import dispatch as _dispatch
from ..ops.registry import registry
from ..tensor import Tensor
from .flat import flatten, unflatten
from .functionalize import FunctionalTracer

_copy_ = registry["copy_"]


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


class TracedFunction:
    """One trace: the graph and how to map a call's values onto it and back.

    placeholders  -- per graph input: ("leaf", i) pass argument leaf i, or
                     ("root", i) pass the base that leaf i is a view of
    num_fwd_outputs, fw_requires_grad -- the forward outputs, and which of them
                     are differentiable
    copy_back     -- (placeholder, forward output) pairs: write the output into
                     the caller's tensor after the forward
    mutation_ops  -- (placeholder, op name) for inputs written in place
    grad_inputs   -- placeholders that receive gradients, in joint-output order
    program, out_values, out_spec -- how to build the user's outputs (see
                     runtime.build_outputs)
    """


def _isolated(fn):
    """Run a trace on its own: outer dispatch modes (an enclosing make_fx) do not see
    the tracing run, and the random number generator and grad mode are left as
    they were, so the compiled graph draws the numbers eager would have drawn on
    this call and the function's own grad-mode switches happen when it runs."""
    def wrapper(*args, **kwargs):
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


@_isolated
def trace_function(fn, leaves, spec, training, keep_inference_input_mutations=False,
                   decompositions=None):
    """Trace fn(*unflatten(spec, leaves)) into a TracedFunction (see the module docstring)."""
    tracer = FunctionalTracer()
    if decompositions:
        tracer.decompositions = dict(decompositions)
    graph = tracer.graph
    tr = TracedFunction()
    tr.training = training
    tr.n_leaves = len(leaves)

    # -- inputs: one placeholder per distinct tensor, or per shared base ----------
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

    tr.placeholders = []
    inner = []           # per placeholder: the tensor the trace uses for it
    grad_leaves = []     # per placeholder: the leaf gradients are taken for, or None
    ph_nodes = []
    traced = list(leaves)
    root_ph = {}         # id(runtime root) -> placeholder index

    def add_placeholder(runtime, source):
        k = len(tr.placeholders)
        node = graph.placeholder(f"primals_{k + 1}" if training else f"arg{k}_1")
        arr = same_layout_copy(runtime._data)
        if training and runtime._requires_grad:
            leaf = Tensor._make(arr)
            leaf._requires_grad = True
            with enable_grad():
                t = _apply_eager(_TraceInput, (leaf,), {})
        else:
            leaf = None
            t = Tensor._make(arr)
            t._requires_grad = runtime._requires_grad and not training
        tracer.track(t, node)
        tr.placeholders.append(source)
        inner.append(t)
        grad_leaves.append(leaf)
        ph_nodes.append(node)
        return k

    lifted = set()

    def lift(t):
        """A tensor the function reads that is not an argument but needs a gradient (a
        closure or global parameter): an extra input, fed that same tensor on every call."""
        k = len(tr.placeholders)
        where = graph.inserting_after(ph_nodes[-1]) if ph_nodes else graph.inserting_before(None)
        with where:
            node = graph.placeholder(f"primals_{k + 1}")
        tracer.track(t, node)
        tr.placeholders.append(("const", t))
        inner.append(t)
        grad_leaves.append(t)
        ph_nodes.append(node)
        lifted.add(k)
        return node
    if training:
        tracer.lift = lift
    tracer.is_global = _names_reached_by(fn)

    synthetic_views = []
    for i, v in enumerate(leaves):
        if not isinstance(v, Tensor):
            continue
        first = next(j for j in range(i + 1) if leaves[j] is v)
        if first != i:
            traced[i] = traced[first]        # the same tensor passed twice
            continue
        if i in synthetic:
            root = synthetic[i]
            k = root_ph.get(id(root))
            if k is None:
                k = root_ph[id(root)] = add_placeholder(root, ("root", i))
            synthetic_views.append((i, k, view_chain(v) if v._base is not None else []))
        else:
            traced[i] = inner[add_placeholder(v, ("leaf", i))]
    with tracer:
        for i, k, chain in synthetic_views:
            traced[i] = replay_view_chain(inner[k], chain)

    # -- run the function ---------------------------------------------------------
    args, kwargs = unflatten(spec, iter(traced)) if spec is not None else (traced, {})
    grad_mode = _grad_state.enabled
    with tracer:
        out = fn(*args, **kwargs)
    # a graph may switch grad mode (the frontend's graphs do, at no_grad boundaries):
    # the compiled function leaves grad mode as the function did
    tr.grad_mode_after = _grad_state.enabled if _grad_state.enabled != grad_mode else None

    fw_nodes, fw_tensors, fw_diff, fw_index = [], [], [], {}

    def forward_output(node, tensor, differentiable):
        j = fw_index.get(node)
        if j is None:
            j = fw_index[node] = len(fw_nodes)
            fw_nodes.append(node)
            fw_tensors.append(tensor)
            fw_diff.append(False)
        fw_diff[j] = fw_diff[j] or differentiable
        return j

    # -- inputs written in place ------------------------------------------------------
    # A write autograd recorded gives the caller's tensor a new history (copied back
    # with autograd); a write under no_grad, or to a tensor without grad, is copied
    # back without (or kept in the graph as a copy_).
    tr.copy_back = []
    tr.mutation_ops = []
    kept = []
    for k, t in enumerate(inner):
        new = tracer.node_of(t)
        if new is ph_nodes[k]:
            continue
        if k in lifted:
            raise RuntimeError(
                "the traced function modifies in place a tensor that requires grad and is not one "
                "of its arguments (a global or closure tensor); AOT autograd cannot replay that. "
                "Pass the tensor as an argument.")
        op_name = tracer.autograd_writes.get(id(t))
        if op_name is not None:
            tr.mutation_ops.append((k, op_name))
        differentiable = training and op_name is not None and t._requires_grad
        if keep_inference_input_mutations and not differentiable:
            kept.append((ph_nodes[k], new))
        else:
            tr.copy_back.append((k, forward_output(new, t, differentiable), differentiable))

    # -- outputs ----------------------------------------------------------------------
    out_leaves = []
    tr.out_spec = flatten(out, out_leaves)
    leaf_pos = {}
    for i, v in enumerate(traced):
        if isinstance(v, Tensor):
            leaf_pos.setdefault(id(v), i)
    inner_pos = {id(t): k for k, t in enumerate(inner)}
    program, memo, multi_views = [], {}, {}

    def value_of(t):
        """Index of the program step that produces (the runtime counterpart of) t."""
        k = memo.get(id(t))
        if k is not None:
            return k
        if id(t) in leaf_pos:
            step = ("leaf", leaf_pos[id(t)])
        elif id(t) in inner_pos:
            step = ("ph", inner_pos[id(t)])
        elif t._base is not None:
            chain = tuple(view_chain(t))
            base = value_of(t._base)
            op, rest, index = chain[-1] if chain else (None, None, None)
            if index is None:
                step = ("view", base, chain)
            else:
                # one output of a multi-output view (unbind, split): the call is made once
                # for all its outputs, which share one autograd node as in eager
                key = (base, repr(chain[:-1]), op.name, repr(rest))
                whole = multi_views.get(key)
                if whole is None:
                    program.append(("view", base, chain[:-1] + ((op, rest, None),)))
                    whole = multi_views[key] = len(program) - 1
                step = ("item", whole, index)
        elif id(t) in tracer.alias_of:
            op, source = tracer.alias_of[id(t)]
            step = ("alias", op, value_of(source))
        else:
            node = tracer.node_of(t)
            if node.op == "get_attr":
                step = ("const", t)
            elif node.op == "placeholder":
                step = ("ph", ph_nodes.index(node))
            else:
                diff = training and t._requires_grad and t.dtype.is_floating_point
                step = ("out", forward_output(node, t, diff))
        program.append(step)
        memo[id(t)] = len(program) - 1
        return len(program) - 1

    tr.out_values = []
    for o in out_leaves:
        if isinstance(o, Tensor):
            tr.out_values.append(value_of(o))
        else:
            if _holds_tensors(o):
                raise TypeError(
                    f"the traced function returned a {type(o).__name__} holding tensors; AOT "
                    "compilation returns tensors, Python values, and lists, tuples and dicts of "
                    "them. Return the tensors themselves (e.g. as a tuple or dict).")
            program.append(("const", o))
            tr.out_values.append(len(program) - 1)
    tr.program = program
    tr.simple_outputs = all(program[k][0] == "out" for k in tr.out_values) and len(program) == len(tr.out_values)

    # -- the backward -----------------------------------------------------------------
    if training and not any(fw_diff):
        # Nothing the caller gets back needs a gradient (the function ran under no_grad,
        # or nothing required grad): an inference graph, as eager would record no history.
        training = tr.training = False
        for k, node in enumerate(ph_nodes):
            node.name = node.target = graph._names.create(f"arg{k}_1")
    tr.num_fwd_outputs = len(fw_nodes)
    tr.fw_meta = [(n.meta["val"].shape, n.meta["val"].dtype) for n in fw_nodes]
    tr.fw_requires_grad = fw_diff
    tr.grad_inputs = [k for k, leaf in enumerate(grad_leaves) if leaf is not None] if training else []
    tr.bw_copy_back = []
    grad_nodes = []
    if training:
        diff = [j for j, g in enumerate(tr.fw_requires_grad) if g]
        tangents, tangent_nodes = [], []
        with graph.inserting_after(ph_nodes[-1] if ph_nodes else None):
            for n, j in enumerate(diff):
                node = graph.placeholder(f"tangents_{n + 1}")
                meta = fw_nodes[j].meta["val"]
                tangent = Tensor._make(np.ones(meta.shape, dtype=meta.dtype.np))
                tracer.track(tangent, node)
                tangents.append(tangent)
                tangent_nodes.append(node)
        after_forward = [tracer.node_of(t) for t in inner]
        grads = [None] * len(tr.grad_inputs)
        if diff and tr.grad_inputs:
            with tracer:
                grads = autograd_grad([fw_tensors[j] for j in diff],
                                      [grad_leaves[k] for k in tr.grad_inputs],
                                      tangents, allow_unused=True)
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
        for k, t in enumerate(inner):
            new = tracer.node_of(t)
            if new is not after_forward[k]:
                tr.bw_copy_back.append(k)
                grad_nodes.append(new)

    for target, value in kept:
        graph.call_function(_copy_, (target, value))
    graph.output(tuple(fw_nodes) + tuple(grad_nodes))
    graph.eliminate_dead_code()
    graph.lint()
    tr.gm = GraphModule(tracer.constants, graph)
    tr.example_inputs = [grad_leaves[k] if grad_leaves[k] is not None else inner[k]
                         for k in range(len(inner))]
    return tr
