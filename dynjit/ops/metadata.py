"""Metadata mutations: ops that change a tensor's shape and strides in place
(`t_`, `transpose_`, `swapdims_`, `unsqueeze_`, `squeeze_`) and `set_`, which
makes a tensor use another tensor's memory.

An in-place view op `x.t_()` is the view op `t` whose result `x` becomes:
x keeps its identity (and stays a view of its base, or not a view) but takes
the view's numpy array, its autograd history (a `TBackward0` on x's previous
history, as in eager PyTorch) and a bumped version counter. As in PyTorch, a
leaf that requires grad may not have its metadata changed while grad mode is
on.

Views made from x before the change keep their layout: each tensor keeps, in
`_meta_ops`, the inverses of the in-place view ops applied to it, and each
view remembers (`_src_meta`) how many there were when it was made, so that
`autograd.graph.view_chain` can undo the later ones before replaying the
view's own op.

Both kinds of mutation go to the innermost dispatch mode first: a mode that
defines `__metadata_mutation__(kind, tensor, args)` (graph tracers,
functionalization) handles it; otherwise it runs eagerly.
"""
from . import dispatch as _dispatch
from .dispatch import check_inplace_allowed, dispatch, grad_state as _grad_state
from .registry import registry

_T, _TRANSPOSE = registry["t"], registry["transpose"]
_UNSQUEEZE, _SQUEEZE = registry["unsqueeze"], registry["squeeze"]


def _norm(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _inverse(name, shape, args):
    """(view op, args) steps that undo the in-place view op `name(*args)` on a tensor of `shape`."""
    ndim = len(shape)
    if name == "t_":
        return ((_T, ()),)
    if name in ("transpose_", "swapdims_", "swapaxes_"):
        return ((_TRANSPOSE, tuple(args)),)
    if name == "unsqueeze_":
        return ((_SQUEEZE, (_norm(args[0], ndim + 1),)),)
    if name == "squeeze_":
        if ndim == 0:
            return ()
        dims = range(ndim) if not args or args[0] is None else \
            [args[0]] if isinstance(args[0], int) else list(args[0])
        dims = sorted({_norm(d, ndim) for d in dims if shape[_norm(d, ndim)] == 1})
        return tuple((_UNSQUEEZE, (d,)) for d in dims)
    raise KeyError(name)


# method name -> the view op it applies in place (declared as the op's `inplace_views`)
INPLACE_VIEWS = {m: op for op in registry.values() for m in op.inplace_views}


def metadata_mutation(kind, tensor, args):
    """Run `tensor.<kind>(*args)` (an in-place view op name, or "set_") through the active mode."""
    modes = _dispatch._modes
    if modes:
        mode = modes.pop()
        try:
            handler = getattr(mode, "__metadata_mutation__", None)
            if handler is not None:
                return handler(kind, tensor, args)
            return eager_metadata_mutation(kind, tensor, args)
        finally:
            modes.append(mode)
    return eager_metadata_mutation(kind, tensor, args)


def eager_metadata_mutation(kind, tensor, args):
    if kind == "set_":
        return eager_set_(tensor, *args)
    return eager_inplace_view(tensor, kind, args)


class _Before:
    """What a tensor was before an in-place view op changed it: the source of its new view link."""
    __slots__ = ("_data", "_base", "_view_of", "_src_meta", "_meta_ops")

    def __init__(self, t):
        self._data = t._data
        self._base = t._base
        self._view_of = t._view_of
        self._src_meta = t._src_meta
        self._meta_ops = t._meta_ops


def eager_inplace_view(self, name, args):
    """`self.<name>(*args)` for an in-place view op, run eagerly (see the module docstring)."""
    op = INPLACE_VIEWS[name]
    needs_grad = _grad_state.enabled and self._requires_grad
    check_inplace_allowed(self, needs_grad, name)
    shape = tuple(self._data.shape)
    out = dispatch(op, (self,) + tuple(args), {})
    inverse = _inverse(name, shape, args)
    if self._base is not None:
        before = _Before(self)
        self._view_of = (before, op, tuple(args), False, 0)
        self._src_meta = len(before._meta_ops)
    self._meta_ops = self._meta_ops + (inverse,)
    self._data = out._data
    if out._grad_fn is not None:
        self._grad_fn = out._grad_fn
        self._output_nr = out._output_nr
        self._requires_grad = True
    self._version_counter[0] += 1
    self._view_version = self._version_counter[0]
    return self


def eager_set_(self, source):
    """`self.set_(source)`: self uses source's memory, shape and strides from now on (and its
    version counter, so that writes through either are seen by both). Only without autograd
    recording (under no_grad, or when neither tensor requires grad)."""
    if not isinstance(source, _dispatch.Tensor):
        raise TypeError(f"set_() expects a tensor to take the memory of, got {type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"set_(): the source tensor is {source.dtype.name} but this tensor is "
                           f"{self.dtype.name}; set_() cannot change a tensor's dtype")
    if _grad_state.enabled and (self._requires_grad or source._requires_grad):
        raise RuntimeError("set_() on a tensor that requires grad (or from one) while grad mode is on "
                           "is not supported by dynjit; call it under dynjit.no_grad()")
    if self._base is not None:
        raise RuntimeError("set_() on a view is not supported by dynjit; call it on the base tensor")
    self._data = source._data
    self._version_counter = source._version_counter
    self._meta_ops = ()
    # as in PyTorch, the tensor is a new leaf for autograd: graphs recorded before reach it
    # through its old accumulator (a gradient edge taken earlier still works), not this one
    self._accumulator = None
    return self
