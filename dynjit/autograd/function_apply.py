"""`autograd_function_apply`: the graph node a traced `Function.apply` becomes.

The frontend traces a custom Function's forward and backward into two
GraphModules and records one call

    autograd_function_apply(fwd_body, bwd_body, *tensors, args_tensor_mask=[...])

`tensors` are the tensor arguments of `apply` (the positions where
`args_tensor_mask` is True), then the tensors forward read from elsewhere
(lifted free variables: an attribute of a dataclass argument, a global).
`fwd_body(ctx, *tensors)` returns `(output, [saved tensors])`;
`bwd_body(ctx, *grad_outputs, *saved)` returns one gradient (or None) per
tensor argument of `apply`. The call runs as an ordinary autograd Function,
so the backward node, saved tensors, non-differentiable and dirty outputs
behave as the user's own Function does in eager mode; its backward node is
named after the user's Function (`<Name>Backward`).
"""
import weakref

import numpy as np

from .function import Function
from .grad_mode import state as _grad_state
from ..tensor import Tensor


class _Spec:
    """What one call needs besides its tensors (kept on the runtime ctx)."""

    def __init__(self, fwd_body, bwd_body, n_args, non_differentiable_idx, dirty_idx):
        self.fwd_body = fwd_body
        self.bwd_body = bwd_body
        self.n_args = n_args                # tensor arguments of apply (the rest are lifted)
        self.non_differentiable_idx = non_differentiable_idx
        self.dirty_idx = dirty_idx


class CompiledFunctionApply(Function):
    """Runs a traced forward / backward pair as one autograd Function."""

    @staticmethod
    def forward(ctx, *tensors_and_spec):
        # the spec goes last so that gradient errors number the tensors as the user's Function does
        *tensors, spec = tensors_and_spec
        ctx.spec = spec
        out, saved = spec.fwd_body(None, *tensors)
        ctx.save_for_backward(*saved)
        outs = out if isinstance(out, tuple) else (out,)
        ctx.out_meta = tuple((o.shape, o.dtype) for o in outs)
        if spec.non_differentiable_idx:
            ctx.mark_non_differentiable(*[outs[i] for i in spec.non_differentiable_idx])
        if spec.dirty_idx:
            ctx.mark_dirty(*[outs[i] for i in spec.dirty_idx])
        return out

    @staticmethod
    def backward(ctx, *grads):
        spec = ctx.spec
        if _grad_state.enabled:
            raise RuntimeError(
                f"double backward (create_graph=True) through the compiled autograd.Function "
                f"{type(ctx).__name__[:-len('Backward')]} is not supported: its backward was traced "
                "with grad mode off. Compute higher-order gradients with the uncompiled function.")
        # the traced backward took a tensor for every gradient: a None (an unused
        # output under set_materialize_grads(False)) is given as zeros
        grads = [g if g is not None else Tensor._make(np.zeros(shape, dtype=dtype.np))
                 for g, (shape, dtype) in zip(grads, ctx.out_meta)]
        try:
            result = spec.bwd_body(None, *grads, *ctx.saved_tensors)
        finally:
            _grad_state.enabled = False
        n_lifted = len(ctx._edges) - 1 - spec.n_args
        return tuple(result) + (None,) * n_lifted + (None,)


_runtime_classes = weakref.WeakKeyDictionary()


def _runtime_class(user_cls):
    """A CompiledFunctionApply subclass named like the user's Function (for grad_fn names)."""
    if user_cls is None:
        return CompiledFunctionApply
    cls = _runtime_classes.get(user_cls)
    if cls is None:
        cls = _runtime_classes[user_cls] = type(user_cls.__name__, (CompiledFunctionApply,),
                                                {"__module__": user_cls.__module__})
    return cls


def autograd_function_apply(fwd_body, bwd_body, *tensors, args_tensor_mask, non_differentiable_idx=(),
                            dirty_idx=()):
    """Apply a traced custom Function (see the module docstring)."""
    n_args = sum(1 for m in args_tensor_mask if m)
    spec = _Spec(fwd_body, bwd_body, n_args, tuple(non_differentiable_idx), tuple(dirty_idx))
    user_cls = getattr(fwd_body, "meta", {}).get("autograd_function")
    return _runtime_class(user_cls).apply(*tensors, spec)
