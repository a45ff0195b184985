"""aot_function / aot_module / aot_module_simplified.

On the first call with a given input signature (shapes, dtypes,
requires_grad, grad mode, non-tensor values), the function is traced once
with functionalization into a joint forward+backward graph (or a forward-only
graph when no gradient is needed), partitioned, and the two graphs are handed
to `fw_compiler` / `bw_compiler`. Calls then run the compiled forward inside
one autograd Function whose backward runs the compiled backward. Mutations of
inputs are applied after the forward; outputs that alias an input are
regenerated from the runtime input, so aliasing is exactly as in eager.
"""
import functools

from ..autograd import grad as autograd_grad
from ..autograd.function import Function
from ..autograd.graph import view_chain, replay_view_chain
from ..autograd.grad_mode import enable_grad, no_grad, is_grad_enabled
from ..fx.graph_module import GraphModule
from ..fx.node import map_arg
from ..ops.registry import registry
from ..tensor import Tensor
from .compilers import call_compiled
from .functionalize import FunctionalTracer
from .partition import default_partition

_copy_ = registry["copy_"]


# -- flattening -----------------------------------------------------------------

def _flatten(value, leaves):
    """Replace leaves by indices into `leaves`; returns the spec."""
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return ("tuple", [_flatten(v, leaves) for v in value])
    if isinstance(value, tuple):
        return ("namedtuple", type(value), [_flatten(v, leaves) for v in value])
    if isinstance(value, list):
        return ("list", [_flatten(v, leaves) for v in value])
    if isinstance(value, dict):
        return ("dict", list(value), [_flatten(v, leaves) for v in value.values()])
    leaves.append(value)
    return ("leaf", len(leaves) - 1)


def _unflatten(spec, leaves):
    kind = spec[0]
    if kind == "leaf":
        return leaves[spec[1]]
    if kind == "tuple":
        return tuple(_unflatten(s, leaves) for s in spec[1])
    if kind == "namedtuple":
        return spec[1](*(_unflatten(s, leaves) for s in spec[2]))
    if kind == "list":
        return [_unflatten(s, leaves) for s in spec[1]]
    return dict(zip(spec[1], (_unflatten(s, leaves) for s in spec[2])))


def _freeze(spec):
    if isinstance(spec, list):
        return tuple(_freeze(s) for s in spec)
    if isinstance(spec, tuple):
        return tuple(_freeze(s) for s in spec)
    return spec


def _signature(spec, leaves):
    parts = [_freeze(spec), is_grad_enabled()]
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            parts.append(("T", leaf._data.shape, leaf.dtype.name, leaf._requires_grad, leaf.stride()))
        else:
            try:
                hash(leaf)
                parts.append(("C", type(leaf), leaf))
            except TypeError:
                parts.append(("C", type(leaf), id(leaf)))
    return tuple(parts)


# -- tracing ----------------------------------------------------------------------

class _Traced:
    """What one trace found: the graph module and how to map its I/O."""


def _trace(fn, spec, leaves, training, keep_inference_input_mutations, decompositions):
    tracer = FunctionalTracer()
    if decompositions:
        tracer.decompositions = dict(decompositions)
    tensor_pos = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
    copies = {}
    inputs = []
    for k, i in enumerate(tensor_pos):
        src = leaves[i]
        node = tracer.graph.placeholder(f"primals_{k + 1}" if training else f"arg{k}_1")
        copy = Tensor._make(src._data.copy())
        copy._requires_grad = src._requires_grad if training else False
        tracer.track(copy, node)
        copies[i] = copy
        inputs.append((copy, node))
    traced_leaves = [copies.get(i, v) for i, v in enumerate(leaves)]
    args, kwargs = _unflatten(spec, traced_leaves)
    with tracer:
        with (enable_grad() if training else no_grad()):
            out = fn(*args, **kwargs)
    out_leaves = []
    out_spec = _flatten(out, out_leaves)
    t = _Traced()
    t.out_spec = out_spec
    t.n_inputs = len(tensor_pos)
    t.tensor_pos = tensor_pos
    # outputs: graph outputs, or aliases of an input regenerated at runtime
    t.out_kinds = []
    graph_outs = []
    input_index = {id(c): k for k, (c, _) in enumerate(inputs)}
    for o in out_leaves:
        if not isinstance(o, Tensor):
            t.out_kinds.append(("const", o))
        elif id(o) in input_index:
            t.out_kinds.append(("input", input_index[id(o)]))
        elif o._base is not None and id(o._base) in input_index and tracer.is_tracked(o):
            t.out_kinds.append(("view", input_index[id(o._base)], tuple(view_chain(o))))
        else:
            t.out_kinds.append(("graph", len(graph_outs)))
            graph_outs.append(o)
    # inputs mutated in place: their final value is an extra output (or a copy_ in the graph)
    t.mutated = [k for k, (c, node) in enumerate(inputs) if tracer.node_of(c) is not node]
    graph = tracer.graph
    out_nodes = [tracer.node_of(o) for o in graph_outs]
    mutated_nodes = [tracer.node_of(inputs[k][0]) for k in t.mutated]
    t.diff_outputs = []
    t.training = training
    if training:
        diff = [i for i, o in enumerate(graph_outs) if o._requires_grad]
        t.diff_outputs = diff
        wrt = [k for k, (c, _) in enumerate(inputs) if c._requires_grad]
        t.grad_inputs = wrt
        tangents = []
        with graph.inserting_after(inputs[-1][1] if inputs else None):
            for j, i in enumerate(diff):
                node = graph.placeholder(f"tangents_{j + 1}")
                tangent = Tensor._make(graph_outs[i]._data * 0 + 1)
                tracer.track(tangent, node)
                tangents.append(tangent)
        grads = []
        if diff and wrt:
            with tracer:
                grads = autograd_grad([graph_outs[i] for i in diff], [inputs[k][0] for k in wrt],
                                      tangents, allow_unused=True)
        grad_nodes = [tracer.node_of(g) if g is not None else None for g in grads]
        graph.output(tuple(out_nodes) + tuple(mutated_nodes) + tuple(grad_nodes))
        t.num_fwd_outputs = len(out_nodes) + len(mutated_nodes)
    elif keep_inference_input_mutations and t.mutated:
        for k, node in zip(t.mutated, mutated_nodes):
            graph.call_function(_copy_, (inputs[k][1], node))
        t.mutated_in_graph = True
        graph.output(tuple(out_nodes))
        t.num_fwd_outputs = len(out_nodes)
    else:
        graph.output(tuple(out_nodes) + tuple(mutated_nodes))
        t.num_fwd_outputs = len(out_nodes) + len(mutated_nodes)
    t.mutated_in_graph = getattr(t, "mutated_in_graph", False)
    graph.eliminate_dead_code()
    graph.lint()
    t.gm = GraphModule(tracer.constants, graph)
    t.example_inputs = [inputs[k][0] for k in range(len(inputs))]
    return t


# -- runtime ----------------------------------------------------------------------

class _CompiledEntry:
    def __init__(self, traced, fw, bw_compile, num_saved):
        self.t = traced
        self.fw = fw
        self._bw_compile = bw_compile
        self.bw = None
        self.num_saved = num_saved
        if traced.training:
            self.fn_cls = _make_autograd_function(self)

    def backward_fn(self):
        if self.bw is None:
            self.bw = self._bw_compile()
        return self.bw

    def run(self, leaves):
        t = self.t
        tensors = [leaves[i] for i in t.tensor_pos]
        if t.training:
            outs = self.fn_cls.apply(*tensors)
        else:
            outs = call_compiled(self.fw, tensors)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        n_graph = t.num_fwd_outputs - (0 if t.mutated_in_graph else len(t.mutated))
        graph_outs, new_values = outs[:n_graph], outs[n_graph:t.num_fwd_outputs]
        if not t.mutated_in_graph and t.mutated:
            with no_grad():
                for k, value in zip(t.mutated, new_values):
                    _copy_(tensors[k], value)
        result = []
        for kind in t.out_kinds:
            if kind[0] == "graph":
                result.append(graph_outs[kind[1]])
            elif kind[0] == "input":
                result.append(tensors[kind[1]])
            elif kind[0] == "view":
                result.append(replay_view_chain(tensors[kind[1]], kind[2]))
            else:
                result.append(kind[1])
        return _unflatten(t.out_spec, result)


def _make_autograd_function(entry):
    t = entry.t
    n_out = t.num_fwd_outputs

    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx, *tensors):
            outs = call_compiled(entry.fw, tensors)
            outs = list(outs)
            fw_outs, saved = outs[:n_out], outs[n_out:]
            ctx.save_for_backward(*saved)
            diff = set(t.diff_outputs)
            ctx.mark_non_differentiable(*[o for i, o in enumerate(fw_outs) if i not in diff])
            return tuple(fw_outs)

        @staticmethod
        def backward(ctx, *grad_outputs):
            if is_grad_enabled():
                raise RuntimeError("dynjit's AOT-compiled backward does not support double backward "
                                   "(create_graph=True through a compiled function)")
            saved = ctx.saved_tensors
            tangents = [grad_outputs[i] for i in t.diff_outputs]
            tangents = [g.contiguous() for g in tangents]
            grads = call_compiled(entry.backward_fn(), list(saved) + tangents)
            grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
            result = [None] * t.n_inputs
            for k, g in zip(t.grad_inputs, grads):
                result[k] = g
            return tuple(result)

    CompiledFunction.__name__ = "CompiledFunction"
    return CompiledFunction


def _compile(traced, fw_compiler, bw_compiler, partition_fn, inference_compiler):
    if not traced.training:
        compiler = inference_compiler or fw_compiler
        fw = compiler(traced.gm, traced.example_inputs)
        return _CompiledEntry(traced, fw, None, 0)
    fw_gm, bw_gm = partition_fn(traced.gm, traced.example_inputs, num_fwd_outputs=traced.num_fwd_outputs)
    num_saved = fw_gm.meta["num_saved"]
    fw = fw_compiler(fw_gm, traced.example_inputs)

    def compile_bw():
        return bw_compiler(bw_gm, None)
    entry = _CompiledEntry(traced, fw, compile_bw, num_saved)
    entry.fw_gm, entry.bw_gm = fw_gm, bw_gm
    return entry


def aot_function(fn, fw_compiler, bw_compiler=None, partition_fn=default_partition,
                 decompositions=None, num_params_buffers=0, keep_inference_input_mutations=False,
                 inference_compiler=None, dynamic=False):
    """Compile `fn` ahead of time: trace forward and backward, partition, compile both."""
    if bw_compiler is None:
        bw_compiler = fw_compiler
    cache = {}

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        leaves = []
        spec = _flatten((args, kwargs), leaves)
        key = _signature(spec, leaves)
        entry = cache.get(key)
        if entry is None:
            training = is_grad_enabled() and any(isinstance(v, Tensor) and v._requires_grad for v in leaves)
            traced = _trace(fn, spec, leaves, training, keep_inference_input_mutations, decompositions)
            entry = _compile(traced, fw_compiler, bw_compiler, partition_fn, inference_compiler)
            cache[key] = entry
        return entry.run(leaves)

    compiled._cache = cache
    return compiled


def aot_module(mod, fw_compiler, bw_compiler=None, **kwargs):
    """aot_function for an nn.Module: its parameters and buffers become graph inputs."""
    from .functional_call import functional_call
    names = [n for n, _ in mod.named_parameters()] + [n for n, _ in mod.named_buffers()]

    def flat_fn(params_and_buffers, *args, **kw):
        return functional_call(mod, dict(zip(names, params_and_buffers)), args, kw)
    compiled = aot_function(flat_fn, fw_compiler, bw_compiler, num_params_buffers=len(names), **kwargs)

    class AOTModule:
        def __init__(self):
            self.orig_module = mod

        def __call__(self, *args, **kw):
            state = [p for _, p in mod.named_parameters()] + [b for _, b in mod.named_buffers()]
            return compiled(state, *args, **kw)

        forward = __call__
    return AOTModule()


def aot_module_simplified(mod, example_inputs, fw_compiler, bw_compiler=None,
                          partition_fn=default_partition, decompositions=None,
                          keep_inference_input_mutations=False, inference_compiler=None):
    """The entry backends use: `mod` is a GraphModule (or callable) taking flat tensors."""
    if hasattr(mod, "named_parameters"):
        return aot_module(mod, fw_compiler, bw_compiler, partition_fn=partition_fn,
                          decompositions=decompositions,
                          keep_inference_input_mutations=keep_inference_input_mutations,
                          inference_compiler=inference_compiler)
    compiled = aot_function(mod, fw_compiler, bw_compiler, partition_fn=partition_fn,
                            decompositions=decompositions,
                            keep_inference_input_mutations=keep_inference_input_mutations,
                            inference_compiler=inference_compiler)

    def forward(*args):
        return compiled(*args)
    forward.zero_grad = lambda: None
    forward.named_parameters = lambda: iter(())
    forward.named_buffers = lambda: iter(())
    return forward
