"""Running an AOT-compiled function: the steady-state call path.

A `CompiledEntry` holds one trace's compiled forward (and, in training, the
lazily compiled backward). Calling it:
1. picks the graph inputs from the call's leaves (a shared base for aliased
   arguments),
2. checks that inputs the function writes in place may be written (the
   errors eager would raise for a leaf that requires grad),
3. runs the compiled forward; in training, under no_grad, and wires one
   `CompiledFunctionBackward` autograd node to the differentiable outputs,
   saving what the partitioner chose,
4. copies new values into inputs that were written in place (with autograd
   when they need grad, so their history is eager's),
5. builds the user's outputs: graph outputs, or inputs, views and aliases
   rebuilt from the real tensors.
"""
import numpy as np

from ..autograd import graph as _graph
from ..autograd.grad_mode import no_grad, state as _grad_state
from ..ops.dispatch import check_inplace_allowed
from ..ops.registry import RANDOM, VIEW, registry
from ..tensor import Tensor
from .compilers import call_compiled
from .._pytree import tree_unflatten

_copy_ = registry["copy_"]


class CompiledFunctionBackward(_graph.Node):
    """The autograd node of one call of a compiled function: runs the compiled backward."""

    def __init__(self, entry, saved, n_inputs, written=()):
        super().__init__()
        self.entry = entry
        self._saved = saved
        self._n_inputs = n_inputs
        self._written = written     # inputs the backward writes in place
        self.diff_meta = entry.diff_meta    # (shape, dtype) of the outputs it takes gradients for

    def name(self):
        return "CompiledFunctionBackward"

    def num_outputs(self):
        return len(self.entry.diff_outputs)

    def release(self):
        self._saved = None

    def apply(self, grads):
        if _grad_state.enabled:
            if any(t._requires_grad for t in self._written):
                # the backward writes an input that requires grad: it runs (its writes land, as
                # eager's would), then the refusal names the mutation, as PyTorch's does
                with no_grad():
                    self.apply_with_saved(grads, self.saved_values())
                raise RuntimeError("aot_autograd does not support input mutations with requires_grad "
                                   "in backward for create_graph=True")
            raise RuntimeError(
                "dynjit's AOT-compiled backward does not support double backward (create_graph=True "
                "through an aot_function / aot_eager-compiled function); compute higher-order "
                "gradients with the uncompiled function")
        return self.apply_with_saved(grads, self.saved_values())

    def saved_values(self):
        if self._saved is None:
            raise RuntimeError(_graph.FREED_MESSAGE)
        return [s.unpack(self) if isinstance(s, _graph.SavedTensor) else s for s in self._saved]

    def apply_with_saved(self, grads, saved, traceable=False):
        """The backward on `saved` (from saved_values). `traceable`: run the backward graph
        op by op (for compiled autograd's tracer) instead of its compiled form."""
        entry = self.entry
        tangents = []
        for g, (shape, dtype) in zip(grads, self.diff_meta):
            if g is None:
                g = Tensor._make(np.zeros(shape, dtype=dtype.np))
            else:
                g = g.contiguous()
            tangents.append(g)
        if traceable:
            out = entry.bw_gm(*saved, *tangents)
        else:
            out = call_compiled(entry.backward_fn(), saved + tangents)
        n = len(entry.t.grad_inputs)
        for target, value in zip(self._written, out[n:]):
            _copy_(target, value)
        result = [None] * self._n_inputs
        for k, g in zip(entry.t.grad_inputs, out[:n]):
            result[k] = g
        return result


class FreedGraphBackward(_graph.Node):
    """The grad_fn of an output whose history a backward inside the compiled function freed
    (autograd.grad without retain_graph): eager's output keeps a grad_fn whose saved values
    are gone, so a backward through it raises; this node raises the same error."""

    def __init__(self):
        super().__init__()
        self._freed = True

    def apply(self, grads):
        raise RuntimeError(_graph.FREED_MESSAGE)


class CompiledEntry:
    def __init__(self, traced, fw, bw_compile=None, fw_gm=None, bw_gm=None):
        t = self.t = traced
        self.fw = fw
        self.fw_boxed = bool(getattr(fw, "_boxed_call", False))
        self.grad_mode_after = t.grad_mode_after
        self.fw_gm, self.bw_gm = fw_gm, bw_gm
        self._bw_compile = bw_compile
        self.bw = None
        self.n_fw = t.num_fwd_outputs
        self.diff_outputs = [j for j, g in enumerate(t.fw_requires_grad) if g]
        self.diff_meta = [t.fw_meta[j] for j in self.diff_outputs]
        self.plain_inputs = all(kind == "leaf" for kind, _ in t.placeholders)
        self.input_leaves = [i for _, i in t.placeholders] if self.plain_inputs else None
        # the common call: the leaves are exactly the graph's inputs
        self.leaves_are_inputs = self.plain_inputs and self.input_leaves == list(range(t.n_leaves))
        self.copied_back = {k for k, _, _ in t.copy_back}
        self.simple_out = [t.program[k][1] for k in t.out_values] if t.simple_outputs else None
        # forward outputs made by a view op in the graph (an intermediate transposed in place
        # and returned): views of a value the caller never sees, returned as plain tensors
        outs = next(n for n in reversed(t.gm.graph.nodes) if n.op == "output").args[0][:self.n_fw]
        self.unview = [j for j, n in enumerate(outs) if n is not None and n.op == "call_function"
                       and getattr(n.target, "kind", None) == VIEW]
        # a symbolic trace: the leaves, then the sizes its symbols are read from
        n = t.n_leaves
        self.sizes_tail = None
        if len(t.placeholders) > n and all(p == ("leaf", i) for i, p in enumerate(t.placeholders[:n])) \
                and all(kind == "size" for kind, _ in t.placeholders[n:]):
            self.sizes_tail = [i for _, i in t.placeholders[n:]]
        # the graph does not write its inputs itself (copied back after it) and draws no random
        # numbers: if it raises on a call's data, running the function eagerly on the untouched
        # inputs does what eager does, the writes before the failing op included
        self.replays_eagerly = bool(t.copy_back or t.set_back or t.meta_mutations) and not any(
            getattr(n.target, "kind", None) == RANDOM for n in t.gm.graph.nodes)
        # nothing to check or write back, outputs straight from the graph
        self.fast = (not t.training and not t.mutation_ops and not t.copy_back and not self.unview
                     and not t.meta_mutations and not t.set_back and self.simple_out is not None
                     and not t.freed_outputs)

    def backward_fn(self):
        if self.bw is None:
            self.bw = self._bw_compile()
        return self.bw

    def __call__(self, leaves):
        if self.fast and self.sizes_tail is not None:
            leaves = list(leaves)
            leaves += [leaves[i]._data.shape[d] for i, d in self.sizes_tail]
            return self._fast_call(leaves)
        if self.fast and self.leaves_are_inputs:
            return self._fast_call(leaves)
        return self.call(leaves)

    def _fast_call(self, leaves):
        """No check, no write-back: the graph's outputs are the results."""
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            fw_outs = self.fw(leaves) if self.fw_boxed else self.fw(*leaves)
        finally:
            _grad_state.enabled = prev if self.grad_mode_after is None else self.grad_mode_after
        if not isinstance(fw_outs, (list, tuple)):
            fw_outs = (fw_outs,)
        if self.t.out_spec is None:
            return fw_outs[self.simple_out[0]]
        return tree_unflatten(self.t.out_spec, [fw_outs[j] for j in self.simple_out])

    def call(self, leaves):
        t = self.t
        if self.plain_inputs:
            inputs = [leaves[i] for i in self.input_leaves]
        else:
            inputs = [leaves[i] if kind == "leaf" else _root(leaves[i]) if kind == "root" else
                      leaves[i[0]]._data.shape[i[1]] if kind == "size" else i
                      for kind, i in t.placeholders]
        if t.mutation_ops and _grad_state.enabled:
            for k, op_name in t.mutation_ops:
                x = inputs[k]
                check_inplace_allowed(x, x._requires_grad, op_name)
        if t.training:
            fw_outs = self._forward_with_autograd(inputs)
        else:
            # no output needs a gradient: run without recording autograd, as eager did
            prev = _grad_state.enabled
            _grad_state.enabled = False
            try:
                fw_outs = self.fw(inputs) if self.fw_boxed else self.fw(*inputs)
            finally:
                _grad_state.enabled = prev
            if not isinstance(fw_outs, (list, tuple)):
                fw_outs = (fw_outs,)
            if self.unview:
                fw_outs = list(fw_outs)
                for j in self.unview:
                    fw_outs[j] = _unviewed(fw_outs[j], inputs)
        if t.freed_outputs:
            fw_outs = list(fw_outs)
            for j in t.freed_outputs:
                fw_outs[j] = _with_freed_history(fw_outs[j])
        for i, steps in t.meta_mutations:
            # shapes and strides first: a new value is then copied in the new layout
            x = leaves[i]
            prev = _grad_state.enabled
            try:
                for name, args, grad_mode in steps:
                    _grad_state.enabled = prev and grad_mode
                    getattr(x, name)(*args)
            finally:
                _grad_state.enabled = prev
        for k, j in t.set_back:
            with no_grad():
                inputs[k].set_(fw_outs[j])
        for k, j, differentiable in t.copy_back:
            value = fw_outs[j]
            if differentiable and _grad_state.enabled:
                _copy_(inputs[k], value)
            else:
                with no_grad():
                    _copy_(inputs[k], value)
        if self.simple_out is not None:
            result = [fw_outs[j] for j in self.simple_out]
        else:
            result = build_outputs(t, fw_outs, inputs, leaves)
        if self.grad_mode_after is not None:
            _grad_state.enabled = self.grad_mode_after
        if t.out_spec is None:
            return result[0]
        return tree_unflatten(t.out_spec, result)

    def _forward_with_autograd(self, inputs):
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            outs = self.fw(inputs) if self.fw_boxed else self.fw(*inputs)
        finally:
            _grad_state.enabled = prev
        n = self.n_fw
        fw_outs = list(outs[:n])
        for j in self.unview:
            fw_outs[j] = _unviewed(fw_outs[j], inputs)
        saved = outs[n:]
        if self.copied_back:
            # An input written in place is saved as its value before the write.
            mutated = {id(inputs[k]) for k in self.copied_back}
            with no_grad():
                saved = [s.clone() if isinstance(s, Tensor) and id(s) in mutated else s for s in saved]
        # Saved outputs and intermediates are kept as plain aliases: an output (or a view
        # of one) holds this node as its grad_fn, and the node must not hold it back.
        input_ids = {id(x) for x in inputs}
        node = CompiledFunctionBackward(
            self, [_graph.SavedTensor(s if id(s) in input_ids else _alias(s)) if isinstance(s, Tensor) else s
                   for s in saved], len(inputs), [inputs[k] for k in self.t.bw_copy_back])
        if getattr(self.t, "shape_env", None) is not None:
            # symbolic sizes: a missing gradient is zeros of this call's output shape
            node.diff_meta = [(fw_outs[j]._data.shape, dtype) for j, (_, dtype) in
                              zip(self.diff_outputs, self.diff_meta)]
        graded = self.t.grad_inputs     # the inputs the backward gives a gradient (joint.py)
        node.next_functions = tuple(_graph.edge_of(x) if k in graded and x._requires_grad else None
                                    for k, x in enumerate(inputs))
        for nr, j in enumerate(self.diff_outputs):
            o = fw_outs[j]
            if id(o) in input_ids:
                # an input returned as-is (a custom Function's output): a new alias of it carries
                # this node's history, as in eager; the input keeps its own
                o = fw_outs[j] = _as_is_alias(o)
            o._grad_fn = node
            o._output_nr = nr
            o._requires_grad = True
        return fw_outs


def _with_freed_history(t):
    """t (a graph output no one else holds) as an output whose history was freed."""
    t._grad_fn = FreedGraphBackward()
    t._output_nr = 0
    t._requires_grad = True
    return t


def _unviewed(t, inputs):
    """A graph output that is a view of one of the graph's intermediates, as a tensor of its own
    (not a view of a base the caller never sees, whose history would replace its own)."""
    if isinstance(t, Tensor) and t._base is not None and all(t._base is not x for x in inputs):
        a = Tensor._make(t._data)
        a._version_counter = t._version_counter
        a._grad_fn, a._output_nr, a._requires_grad = t._grad_fn, t._output_nr, t._requires_grad
        return a
    return t


def _as_is_alias(t):
    """A view of t with no view op: t's memory, version counter and base."""
    a = Tensor._make(t._data)
    a._version_counter = t._version_counter
    a._base = t._base if t._base is not None else t
    a._view_version = t._version_counter[0]
    return a


def _alias(t):
    """A tensor on t's memory and version counter, without t's autograd history or base."""
    a = Tensor._make(t._data)
    a._version_counter = t._version_counter
    return a


def _root(t):
    return t._base if t._base is not None else t


def build_outputs(t, fw_outs, inputs, leaves):
    """Run the output program: each step makes one value from the graph's outputs,
    the call's tensors or earlier steps."""
    values = []
    for step in t.program:
        kind = step[0]
        if kind == "out":
            values.append(fw_outs[step[1]])
        elif kind == "leaf":
            values.append(leaves[step[1]])
        elif kind == "ph":
            values.append(inputs[step[1]])
        elif kind == "view":
            values.append(_graph.replay_view_chain(values[step[1]], step[2]))
        elif kind == "symview":
            sizes = symbol_values(t.shape_env, leaves)
            values.append(_graph.replay_view_chain(values[step[1]], _evaluated(step[2], sizes)))
        elif kind == "item":
            values.append(values[step[1]][step[2]])
        elif kind == "alias":
            values.append(step[1](values[step[2]]))
        else:
            values.append(step[1])
    return [values[k] for k in t.out_values]


def symbol_values(env, leaves):
    """The values of a symbolic trace's symbols in a call (symbol id -> int)."""
    values = {}
    for k, sym in enumerate(env.symbols):
        src = sym.sources[0]
        values[k] = leaves[src[1]]._data.shape[src[2]] if src[0] == "dim" else leaves[src[1]]
    return values


def _evaluated(value, sizes):
    from ..fx.symbolic_shapes import Poly
    if isinstance(value, Poly):
        return value.evaluate(sizes)
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_evaluated(v, sizes) for v in value)
    return value
