"""aot_export_module / aot_export_joint_simple: export a module or function as one graph.

Where `aot_function` compiles a function and hides its graphs behind a callable
that replays mutations and aliasing at run time, export hands the graph itself
to the caller, with a calling convention simple enough for another system to
run it (an exporter, a training loop that owns its parameters):

- `aot_export_module(mod, args, trace_joint=..., output_loss_index=...,
  pre_dispatch=...)` -> `(gm, signature)`. The graph takes
  `(*parameters, *buffers, *user inputs)` (flattened) and returns
  `(*new values of mutated buffers and inputs, *user outputs)`, and with
  `trace_joint=True` also the gradients of the scalar loss
  (`output_loss_index`) with respect to every parameter and user input that
  requires grad (the backward is seeded with ones, so there are no tangent
  inputs). `signature` (a `GraphSignature`) names which graph input is which
  parameter or buffer and which output writes which buffer or is which
  gradient.
- `aot_export_joint_simple(fn, args, trace_joint=...)` -> `gm`: for a
  function without input mutations or aliased outputs; with `trace_joint=False`
  the graph is `fn` itself (same inputs, same flat outputs); with `True` it is
  the joint graph `(*primals, *tangents) -> (*outputs, *grads)` (one gradient
  per input, `None` where an input needs none) that `default_partition` /
  `min_cut_rematerialization_partition` split.

What export cannot express is refused with an error in the user's terms:
mutations of an input's shape or strides (`t_()`), `set_()`, mutations of an
input passed twice or of inputs sharing memory, mutations of inputs that
require grad in a joint graph, and (joint) outputs other than the loss that
require grad.

`pre_dispatch=True` records the graph as the user's code wrote it: grad-mode
switches the user's code makes (`with no_grad():`, `enable_grad`,
`set_grad_enabled`) become `_set_grad_enabled(mode)` nodes at the point they
happen, and eval-mode dropout is its input itself (a frozen alias, as the
composite dropout returns its input), so writing into it in place is refused.

The tracing itself is AOT autograd's (`joint._JointTrace`, `FunctionalTracer`):
in-place ops are functionalized, and the graph is the one `aot_function` would
compile, before partitioning.
"""
import contextlib
import os
import sys
import threading

import numpy as np

from ..autograd import grad_mode as _grad_mode
from ..autograd.grad_mode import no_grad, state as _grad_state
from ..fx.graph_module import GraphModule
from ..fx.proxy_tensor import TensorMeta, same_layout_copy
from ..ops import dispatch as _dispatch
from ..ops.dispatch import _GradState
from ..ops.registry import INPLACE, registry
from ..tensor import Tensor
from .._pytree import flatten_into
from .flat import call_key
from .functionalize import FunctionalTracer
from .joint import _JointTrace, _isolated

_ones = registry["ones"]
_native_dropout = registry["native_dropout"]

__all__ = ["aot_export_module", "aot_export_joint_simple", "GraphSignature", "BackwardSignature"]


# -- the signature ----------------------------------------------------------------------

class BackwardSignature:
    """What the gradient outputs of a joint exported graph are.

    gradients_to_parameters  -- {output node name: parameter name}
    gradients_to_user_inputs -- {output node name: user input (placeholder) name}
    loss_output              -- the name of the output node that is the loss
    """

    def __init__(self, gradients_to_parameters, gradients_to_user_inputs, loss_output):
        self.gradients_to_parameters = gradients_to_parameters
        self.gradients_to_user_inputs = gradients_to_user_inputs
        self.loss_output = loss_output

    def __repr__(self):
        return (f"BackwardSignature(gradients_to_parameters={self.gradients_to_parameters}, "
                f"gradients_to_user_inputs={self.gradients_to_user_inputs}, "
                f"loss_output={self.loss_output!r})")


class GraphSignature:
    """How an exported graph's inputs and outputs map onto the module.

    parameters, buffers      -- their names (named_parameters / named_buffers order), which
                                are the graph's first inputs
    user_inputs              -- placeholder names of the caller's (flattened) inputs
    user_outputs             -- names of the output nodes that are the caller's outputs
    inputs_to_parameters     -- {placeholder name: parameter name}
    inputs_to_buffers        -- {placeholder name: buffer name}
    buffers_to_mutate        -- {output node name: buffer name} for buffers written in place
    parameters_to_mutate     -- {output node name: parameter name} (only without trace_joint)
    user_inputs_to_mutate    -- {output node name: user input name} for inputs written in place
    in_spec, out_spec        -- how the flat inputs / outputs nest (dynjit._pytree specs)
    backward_signature       -- a BackwardSignature with trace_joint=True, else None
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return "GraphSignature(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


# -- pre-dispatch tracing ---------------------------------------------------------------

def _set_grad_enabled(mode):
    """A grad-mode switch recorded in a pre-dispatch graph; running the graph switches it."""
    _grad_state.enabled = mode


_set_grad_enabled._is_impure = True     # kept in the graph though nothing reads its result

_GRAD_MODE_FILE = os.path.abspath(_grad_mode.__file__)    # where no_grad & co. switch grad mode
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _switch_made_by_user():
    """Is the grad-mode switch being made now made by user code (not inside dynjit itself,
    e.g. batch_norm updating its running statistics under no_grad)?"""
    frame = sys._getframe(3)    # the property setter, _record_switch, the caller of the switch
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == _GRAD_MODE_FILE:
        frame = frame.f_back
    if frame is None:
        return False
    return not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


class _RecordingGradState(_GradState):
    """The grad-mode state while a pre-dispatch trace runs: a switch the user's code makes
    is recorded as a node in the graph of the innermost pre-dispatch tracer."""

    @property
    def enabled(self):
        return self.__dict__["enabled"]

    @enabled.setter
    def enabled(self, mode):
        self.__dict__["enabled"] = mode
        _record_switch(mode)


_recording = threading.local()


def _record_switch(mode):
    if getattr(_recording, "depth", 0) == 0 or not _dispatch._modes:
        return
    tracer = _dispatch._modes[-1]
    if isinstance(tracer, _PreDispatchTracer) and _switch_made_by_user():
        tracer.graph.call_function(_set_grad_enabled, (bool(mode),))


@contextlib.contextmanager
def _recording_grad_mode():
    """Record grad-mode switches into pre-dispatch graphs while the block runs (this thread)."""
    _recording.depth = getattr(_recording, "depth", 0) + 1
    swapped = type(_grad_state) is _GradState
    if swapped:
        _grad_state.__class__ = _RecordingGradState
    try:
        yield
    finally:
        _recording.depth -= 1
        if swapped:
            _grad_state.__class__ = _GradState


class _PreDispatchTracer(FunctionalTracer):
    """AOT autograd's functionalizing tracer, with pre-dispatch semantics: eval-mode
    dropout gives its input back (a frozen alias) instead of a copy."""

    def __init__(self, graph=None):
        super().__init__(graph)
        self.frozen = {}        # id(tensor) -> tensor: aliases that must not be written

    def __dispatch__(self, op, args, kwargs):
        if op.kind == INPLACE:
            target = args[0]
            for t in (target, target._base):
                if t is not None and self.frozen.get(id(t)) is t:
                    raise RuntimeError(
                        f"the exported function writes in place ({op.name}) into the result of an "
                        "eval-mode dropout, which with pre_dispatch=True is its input itself, not a "
                        "copy; export cannot mutate tensors with frozen storage. Clone the result "
                        "before writing into it, or export with pre_dispatch=False.")
        result = super().__dispatch__(op, args, kwargs)
        if op is _native_dropout:
            p, train = args[1], args[2]
            if not train or p == 0:
                self.frozen[id(result[0])] = result[0]
        return result


# -- the trace --------------------------------------------------------------------------

class _ExportTrace(_JointTrace):
    """AOT autograd's trace, keeping what export needs: the graph node of every user
    output (so the graph returns it, even an input, a view or a detach) and, for a
    joint graph, the check that only the loss requires grad."""

    def __init__(self, fn, leaves, spec, training, decompositions, pre_dispatch, output_loss_index):
        super().__init__(fn, leaves, spec, training, False, decompositions)
        self.pre_dispatch = pre_dispatch
        self.output_loss_index = output_loss_index
        if pre_dispatch:
            self.tracer = _PreDispatchTracer()
            if decompositions:
                self.tracer.decompositions = dict(decompositions)
            self.graph = self.tracer.graph

    def call(self, traced):
        if not self.pre_dispatch:
            return super().call(traced)
        with _recording_grad_mode():
            return super().call(traced)

    def describe_outputs(self, out, traced):
        super().describe_outputs(out, traced)
        outs = []
        self.tr.export_out_spec = flatten_into(out, outs)
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                raise TypeError(
                    f"the exported function returned a {type(o).__name__} as output {i}; an exported "
                    "graph returns tensors only (in tuples, lists and dicts). Return it as a tensor, "
                    "or leave it out.")
        loss = self.output_loss_index
        if self.training and loss is not None:
            if not 0 <= loss < len(outs):
                raise IndexError(f"output_loss_index={loss}, but the function returned {len(outs)} "
                                 "outputs")
            for i, o in enumerate(outs):
                if i != loss and o._requires_grad:
                    raise RuntimeError(
                        "Found an output of the forward that requires gradients, that was not the "
                        "scalar loss. We require all outputs of the forward that are not the scalar "
                        "loss to not require gradient, because we will only compute a backward graph "
                        f"against the scalar loss. You specified that output index {loss} is the loss, "
                        f"but output {i} requires gradients. Call .detach() on it before returning it.")
            if outs[loss].numel() != 1:
                raise RuntimeError(
                    f"the loss (output {loss}) must be a scalar, got a tensor of shape "
                    f"{list(outs[loss].shape)}; reduce it (e.g. .sum()) before returning it.")
        self.tr.user_out_meta = [TensorMeta.of(o) for o in outs]
        self.tr.user_outputs = [self.forward_output(self.tracer.node_of(o), o, False) for o in outs]
        if self.training and loss is not None:
            # the backward is taken from the loss alone: a forward output kept only to rebuild
            # an alias (the source of a returned detach()) gets no gradient of its own
            keep = {self.tr.user_outputs[loss]} | {j for _, j, _ in self.tr.copy_back}
            for j in range(len(self.fw_diff)):
                if j not in keep:
                    self.fw_diff[j] = False


def _distinct(t):
    """A tensor with t's value, layout and requires_grad that shares no memory with it."""
    copy = Tensor._make(same_layout_copy(t._data))
    copy._requires_grad = t._requires_grad
    return copy


def _trace(fn, args, kwargs, *, training, decompositions, pre_dispatch, output_loss_index):
    """Trace fn(*args, **kwargs) for export; returns (TracedFunction, leaves, dupes, aliased).

    An input passed twice, or sharing memory with an earlier input, is traced as an
    input of its own (export keeps one graph input per input); `dupes` and `aliased`
    map its leaf index to the earlier one's, to refuse mutations of such inputs."""
    _, leaves, spec = call_key(tuple(args), dict(kwargs or {}))
    leaves = list(leaves)
    dupes, aliased = {}, {}
    for i, v in enumerate(leaves):
        if not isinstance(v, Tensor):
            continue
        for j in range(i):
            w = leaves[j]
            if not isinstance(w, Tensor):
                continue
            if w is v:
                dupes[i] = j
            elif np.may_share_memory(w._data, v._data):
                aliased[i] = j
            else:
                continue
            leaves[i] = _distinct(v)
            break
    ctx = contextlib.nullcontext() if training or pre_dispatch else no_grad()
    with ctx:
        tr = _isolated(lambda: _ExportTrace(fn, leaves, spec, training, decompositions, pre_dispatch,
                                            output_loss_index).run())()
    return tr, leaves, dupes, aliased


def _check_mutations(tr, dupes, aliased, who):
    """Refuse what the export calling convention cannot express; returns the placeholders
    written in place (in order)."""
    mutated = [k for k, _, _ in tr.copy_back]
    leaf_of = {k: s[1] for k, s in enumerate(tr.placeholders) if s[0] == "leaf"}
    for k in mutated + [k for k, _ in tr.set_back]:
        i = leaf_of.get(k)
        partners = sorted(({i, dupes.get(i)} | {d for d, j in dupes.items() if j == i}) - {None})
        if len(partners) > 1:
            raise RuntimeError(
                f"Encountered duplicated inputs that are mutated in the graph, but {who} does not "
                f"support that: inputs {partners} are the same tensor and one of them is written in "
                "place. Pass distinct tensors (e.g. a clone).")
        if i in aliased or any(j == i for j in aliased.values()):
            raise RuntimeError(
                f"Encountered aliased inputs that are mutated in the graph, but {who} does not support "
                f"that: input {i} shares memory with another input and one of them is written in "
                "place (AOT autograd would need a synthetic base for them). Pass inputs that do not "
                "share memory (e.g. a clone).")
    if tr.meta_mutations:
        i, ops = tr.meta_mutations[0]
        raise RuntimeError(
            f"Found an input that received a metadata mutation, through e.g. a call to `.resize_()` or "
            f"`.transpose_()` (input {i}: {ops[0][0]}). This is currently banned in the {who} "
            "workflow: the exported graph cannot change its caller's tensors' shape or strides. Use an "
            "out-of-place view (x = x.t()) instead.")
    if tr.set_back:
        raise RuntimeError(f"{who} does not support set_() on an input: the exported graph cannot "
                           "give its caller's tensor other memory.")
    if tr.bw_copy_back:
        raise RuntimeError(f"{who} does not support a backward that writes into an input in place "
                           "(e.g. a custom autograd.Function's backward modifying a saved input).")
    if any(s[0] == "const" for s in tr.placeholders):
        raise RuntimeError(
            f"the function exported by {who} reads a tensor that requires grad and is neither an "
            "input nor (for a module) a parameter or buffer (a global or closure tensor); pass it as "
            "an input or register it as a parameter.")
    return mutated


def _finish(tr, outputs, rename):
    """Make `outputs` (a tuple of nodes) the graph's output, drop what nothing uses, and
    name the placeholders arg<k>_1 if `rename`."""
    graph = tr.gm.graph
    out = graph.output_node()
    out.args = (tuple(outputs),)
    graph.eliminate_dead_code()
    if rename:
        for k, node in enumerate(n for n in graph.nodes if n.op == "placeholder"):
            if node.name != f"arg{k}_1":
                node.name = node.target = graph._names.create(f"arg{k}_1")
    graph.lint()
    tr.gm.recompile()
    return tr.gm


def _seed_with_ones(tr):
    """Replace the loss's tangent placeholder by ones shaped like the loss."""
    graph = tr.gm.graph
    tangents = [n for n in graph.nodes if n.op == "placeholder" and n.name.startswith("tangents")]
    for node in tangents:
        meta = node.meta["val"]
        users = [n for n in graph.nodes if n in node.users]
        with graph.inserting_before(users[0] if users else graph.output_node()):
            ones = graph.call_function(_ones, (tuple(meta.shape), meta.dtype))
        ones.meta["val"] = ones.meta["tensor_meta"] = meta
        node.replace_all_uses_with(ones)
        graph.erase_node(node)


def aot_export_module(mod, args, *, decompositions=None, trace_joint, output_loss_index=None,
                      pre_dispatch=False, kwargs=None):
    """Export `mod(*args, **kwargs)` as one graph; returns (GraphModule, GraphSignature).

    See the module docstring for the graph's calling convention. The module itself is not
    changed (tracing runs on copies: its buffers keep their values)."""
    if not hasattr(mod, "named_parameters"):
        raise TypeError(f"aot_export_module needs an nn.Module, got {type(mod).__name__}; use "
                        "aot_export_joint_simple for a function")
    if trace_joint and output_loss_index is None:
        raise RuntimeError("If trace_joint=True, one of the forward outputs must be a scalar loss: "
                           "say which one with output_loss_index.")
    from .functional_call import functional_call
    params = list(mod.named_parameters())
    buffers = list(mod.named_buffers())
    names = [n for n, _ in params] + [n for n, _ in buffers]
    n_params, n_state = len(params), len(params) + len(buffers)
    user_args = tuple(args)

    def flat_fn(*flat, **kw):
        return functional_call(mod, dict(zip(names, flat[:n_state])), tuple(flat[n_state:]), kw)
    flat_fn.__name__ = type(mod).__name__ + "_forward"

    state = [t for _, t in params] + [t for _, t in buffers]
    tr, leaves, dupes, aliased = _trace(flat_fn, state + list(user_args), kwargs, training=trace_joint,
                                        decompositions=decompositions, pre_dispatch=pre_dispatch,
                                        output_loss_index=output_loss_index if trace_joint else None)
    mutated = _check_mutations(tr, dupes, aliased, "aot_export_module")
    joint = tr.training
    if trace_joint:
        if not joint:
            raise RuntimeError(
                f"trace_joint=True, but the loss (output {output_loss_index}) does not require "
                "gradients: no parameter or input it depends on requires grad (or it was computed "
                "under no_grad), so there is no backward to trace.")
        for k, _, differentiable in tr.copy_back:
            if differentiable or leaves[tr.placeholders[k][1]].requires_grad:
                what = f"parameter {names[k]!r}" if k < n_state else f"input {k - n_state}"
                raise RuntimeError(
                    f"Found a graph input that requires gradients, and received a mutation ({what}). "
                    "This is currently banned in the aot_export workflow with trace_joint=True: the "
                    "joint graph cannot both update it and give its gradient. Mutate a clone instead.")
        _seed_with_ones(tr)
    graph = tr.gm.graph
    ph = [n for n in graph.nodes if n.op == "placeholder"]
    fw_out = list(graph.output_node().args[0])
    num_fwd = tr.num_fwd_outputs
    mutation_nodes = [fw_out[j] for _, j, _ in tr.copy_back]
    user_nodes = [fw_out[j] for j in tr.user_outputs]
    grad_nodes = fw_out[num_fwd:] if joint else []
    gm = _finish(tr, mutation_nodes + user_nodes + grad_nodes, rename=True)
    for node, meta in zip(user_nodes, tr.user_out_meta):
        node.meta.setdefault("val", meta)

    ph_names = [n.name for n in ph]
    param_names, buffer_names = names[:n_params], names[n_params:]
    buffers_to_mutate, parameters_to_mutate, user_inputs_to_mutate = {}, {}, {}
    for node, k in zip(mutation_nodes, mutated):
        if k < n_params:
            parameters_to_mutate[node.name] = names[k]
        elif k < n_state:
            buffers_to_mutate[node.name] = names[k]
        else:
            user_inputs_to_mutate[node.name] = ph_names[k]
    backward = None
    if joint:
        to_params, to_inputs = {}, {}
        for node, k in zip(grad_nodes, tr.grad_inputs):
            if node is None:
                continue
            if k < n_params:
                to_params[node.name] = names[k]
            elif k >= n_state:
                to_inputs[node.name] = ph_names[k]
        backward = BackwardSignature(to_params, to_inputs, user_nodes[output_loss_index].name)
    signature = GraphSignature(
        parameters=param_names, buffers=buffer_names, user_inputs=ph_names[n_state:],
        user_outputs=[n.name for n in user_nodes],
        inputs_to_parameters=dict(zip(ph_names[:n_params], param_names)),
        inputs_to_buffers=dict(zip(ph_names[n_params:n_state], buffer_names)),
        buffers_to_mutate=buffers_to_mutate, parameters_to_mutate=parameters_to_mutate,
        user_inputs_to_mutate=user_inputs_to_mutate,
        in_spec=call_key(user_args, dict(kwargs or {}))[2], out_spec=tr.export_out_spec,
        backward_signature=backward)
    return gm, signature


def aot_export_joint_simple(func, args, *, trace_joint, num_params_buffers=0, decompositions=None):
    """Export `func(*args)` (flat tensor inputs) as a graph with func's own calling convention.

    trace_joint=False: a forward graph taking func's inputs and returning its flat outputs.
    trace_joint=True: the joint graph (primals_*, tangents_*) -> (*outputs, *one gradient per
    input), to split with a partitioner. func must not write into its inputs, and its outputs
    must not alias its inputs or each other."""
    who = "aot_export_joint_simple"
    tr, leaves, dupes, aliased = _trace(func, list(args), None, training=trace_joint,
                                        decompositions=decompositions, pre_dispatch=False,
                                        output_loss_index=None)
    mutated = _check_mutations(tr, dupes, aliased, who)
    if mutated:
        raise RuntimeError(
            f"{who} does not support input mutations: input {tr.placeholders[mutated[0]][1]} is "
            "written in place. Write into a clone, or use aot_export_module, whose graph returns the "
            "new values of mutated inputs.")
    if not tr.simple_outputs or len(set(tr.user_outputs)) != len(tr.user_outputs):
        raise RuntimeError(
            f"{who} does not support outputs that alias each other or an input (an input returned "
            "as is, a view of an input or of another output, or the same tensor twice); the graph "
            "would return a copy where eager returns an alias. Return a clone instead.")
    graph = tr.gm.graph
    fw_out = list(graph.output_node().args[0])
    user_nodes = [fw_out[j] for j in tr.user_outputs]
    if tr.training:
        grads = [None] * len(tr.placeholders)
        for node, k in zip(fw_out[tr.num_fwd_outputs:], tr.grad_inputs):
            grads[k] = node
        return _finish(tr, user_nodes + grads, rename=False)
    return _finish(tr, user_nodes, rename=True)
