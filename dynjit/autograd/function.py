"""`autograd.Function`: user-defined ops with a hand-written backward.

The ctx object *is* the backward node (as in PyTorch): a `BackwardCFunction`
subclass named `<Function>Backward`, created per call to `apply`. Both styles
are supported: `forward(ctx, *args)`, and `forward(*args)` with
`setup_context(ctx, inputs, output)`.
"""
import functools
import inspect
import weakref

from .. import _jit_callback
from . import graph as _graph
from .grad_mode import no_grad, state as _grad_state
from ..tensor import Tensor



class FunctionCtx:
    """The ctx API available in forward / setup_context / backward."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _graph.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _graph.Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; you should "
                                f"save non-tensors as attributes on ctx, got {type(t).__name__}")
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    _saved_override = None     # compiled autograd's traced stand-ins for the saved tensors

    @property
    def saved_tensors(self):
        if self._saved_override is not None:
            return self._saved_override
        saved = self._saved
        if saved is None:
            if self._freed_saved:
                raise RuntimeError(_graph.FREED_MESSAGE)
            return ()
        return tuple(s.unpack(self) if isinstance(s, _graph.SavedTensor) else s for s in saved)

    @property
    def _raw_saved_tensors(self):
        """The SavedTensor objects behind saved_tensors (to register pack/unpack hooks on)."""
        if self._saved is None:
            if self._freed_saved:
                raise RuntimeError(_graph.FREED_MESSAGE)
            return ()
        return self._saved

    @property
    def saved_variables(self):
        import warnings
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors


class BackwardCFunction(_graph.Node, FunctionCtx):
    """Backward node of one call to a custom Function; it is also the ctx."""
    _forward_cls = None
    _materialize_non_diff_grads = True   # set False in forward: None stays None for those outputs
    _non_diff_outputs = ()

    def __init__(self):
        _graph.Node.__init__(self)
        self.to_save = None
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None
        self._freed_saved = False
        self._input_meta = ()
        self._output_meta = ()

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        """As PyTorch lists them: one edge per Tensor argument of forward; the other
        arguments (numbers, functions, None) have none. (The engine's `_edges` keep one
        per argument, aligned with what backward returns.)"""
        edges = _graph.Node.next_functions.fget(self)
        if len(self._input_meta) != len(edges):
            return edges
        return tuple(e for e, meta in zip(edges, self._input_meta) if meta is not None)

    @next_functions.setter
    def next_functions(self, edges):
        _graph.Node.next_functions.fset(self, edges)

    def num_outputs(self):
        return len(self._output_meta)

    def release(self):
        if self._saved is not None:
            self._saved = None
            self._freed_saved = True

    # the node's own state, not what the user's forward left on ctx for backward
    _NODE_STATE = frozenset(("_seq", "to_save", "_saved", "_freed_saved", "_edges",
                             "_tensor_pre_hooks", "_pre_hooks", "_post_hooks", "_metadata",
                             "dirty_tensors", "non_differentiable", "saved_for_forward",
                             "_saved_override", "_freed"))

    def saved_values(self):
        """What backward reads: the saved tensors, and every attribute forward set on ctx
        (compiled autograd keys its cache on them and lifts their tensors to inputs)."""
        attrs = {k: v for k, v in vars(self).items() if k not in self._NODE_STATE}
        return [self.saved_tensors, attrs]

    def apply_with_saved(self, grads, values):
        """The user's backward with `values[0]` (from saved_values) as ctx.saved_tensors."""
        self._saved_override = tuple(values[0])
        try:
            return self.apply(grads)
        finally:
            self._saved_override = None

    def apply(self, grads):
        import numpy as np
        if self.materialize_grads:
            keep_none = () if self._materialize_non_diff_grads else self._non_diff_outputs
            grads = [g if g is not None or meta is None or i in keep_none
                     else Tensor._make(np.zeros(meta[0], dtype=meta[1].np))
                     for i, (g, meta) in enumerate(zip(grads, self._output_meta))]
        cls = self._forward_cls
        result = _user_backward(cls)(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_in = len(self._input_meta)
        if len(result) != n_in:
            if len(result) > n_in and all(r is None for r in result[n_in:]):
                result = result[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {n_in}, got {len(result)})")
        out = []
        for i, (g, meta, edge) in enumerate(zip(result, self._input_meta, self._edges)):
            if meta is None:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None "
                                       f"at position {i + 1}, but the corresponding forward input was "
                                       f"not a Variable")
                out.append(None)
                continue
            if g is None or edge is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise TypeError(f"function {self.name()} returned a {type(g).__name__} as the gradient "
                                f"at position {i + 1}; gradients must be Tensors or None")
            shape, dtype = meta
            if g._data.shape != shape:
                try:
                    np.broadcast_shapes(g._data.shape, shape)
                    ok = np.broadcast_shapes(g._data.shape, shape) == g._data.shape
                except ValueError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} "
                                       f"- got {list(g.shape)} but expected shape compatible with {list(shape)}")
            out.append(_graph.reduce_grad(g, shape, dtype))
        return out


def _user_backward(cls):
    """The backward the user wrote: `backward`, or `vjp` (its other name), not both."""
    own_backward = inspect.getattr_static(cls, "backward") is not inspect.getattr_static(Function, "backward")
    own_vjp = inspect.getattr_static(cls, "vjp") is not inspect.getattr_static(Function, "vjp")
    if own_backward and own_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           "allowed. You should only implement one of them.")
    return cls.vjp if own_vjp else cls.backward


class FunctionMeta(type):
    """Gives every Function subclass its own backward-node class, `<Name>Backward`."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom differentiable operations (like torch.autograd.Function)."""

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self).__name__} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself.",
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method. "
                           f"(Call {type(self).__name__}.apply(...) instead.)")

    # An instance of a Function subclass (made by the deprecated `Id()`) is no backward node: the
    # node attributes are refused with a clear error rather than reported missing. Looked up
    # only on instances (through __getattr__), so the class itself answers as before.
    _NODE_ONLY_ATTRIBUTES = frozenset(("_register_hook_dict", "register_hook", "register_prehook",
                                       "next_functions", "name"))

    def __getattr__(self, attribute):
        if attribute in Function._NODE_ONLY_ATTRIBUTES:
            raise RuntimeError(f"Attribute '{attribute}' is invalid for this instance of _C._FunctionBase. "
                               "Accessing this attribute directly on an instance of autograd.Function is "
                               "a legacy access pattern that is no longer supported. Use the grad_fn of "
                               "the output of Function.apply for the backward node.")
        if attribute == "metadata":
            raise RuntimeError("You attempted to access the anomaly metadata of a custom autograd "
                               "function but the underlying PyNode has already been deallocated (or, for "
                               "an instance made by calling the Function class, never existed). Use the "
                               "grad_fn of the output of Function.apply instead.")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attribute}'")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function "
                                  "to use it with forward mode AD.")

    # PyTorch's vmap support declarations: no generated rule and no vmap rule by default
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the "
                                  "vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        # called by code a compiled frame runs natively: a user Function's forward compiles
        # as its own frame (the library's own Functions just run)
        hook = _jit_callback.active()
        if hook is not None and cls.__module__.startswith("dynjit."):
            hook = None
        return _apply_eager(cls, args, kwargs, forward_hook=hook)


_plain_params = weakref.WeakKeyDictionary()    # Function class -> its number of forward parameters


def _n_plain_params(cls):
    """How many parameters forward has, when they are all plain (no *args / **kwargs)."""
    n = _plain_params.get(cls)
    if n is None:
        params = inspect.signature(cls.forward).parameters.values()
        n = -1 if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) else len(params)
        _plain_params[cls] = n
    return n


def uses_setup_context(cls):
    return inspect.getattr_static(cls, "setup_context") is not inspect.getattr_static(Function, "setup_context")


def _bind_kwargs(cls, args, kwargs):
    if not kwargs and not (uses_setup_context(cls) and len(args) < _n_plain_params(cls)):
        return args
    # (with setup_context, `inputs` holds every forward argument, defaults included)
    fwd = cls.forward
    sig = inspect.signature(fwd)
    params = list(sig.parameters)
    if not uses_setup_context(cls):
        params = params[1:]
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments[p] for p in params if p in bound.arguments)


def _apply_eager(cls, args, kwargs, forward_hook=None):
    """Run cls.forward and wrap its outputs; `forward_hook(fn)` (from the JIT, at a graph
    break) gives the callable that runs forward in place of fn."""
    if isinstance(inspect.getattr_static(cls, "forward"), type(lambda: 0)) and \
            inspect.getattr_static(cls, "forward") is not inspect.getattr_static(Function, "forward"):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method.")
    args = _bind_kwargs(cls, args, kwargs)
    ctx = cls._backward_cls()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    is_differentiable = _grad_state.enabled and any(ctx.needs_input_grad)
    forward = cls.forward if forward_hook is None else forward_hook(cls.forward)
    from . import forward_ad
    levels = forward_ad._levels_with_tangents(args) if forward_ad._levels else ()
    with no_grad(), forward_ad._set_fwd_grad_enabled(False if levels else forward_ad._fwd_grad_enabled[0]):
        if uses_setup_context(cls):
            outputs = forward(*args)
            cls.setup_context(ctx, args, outputs)
        else:
            outputs = forward(ctx, *args)
    if levels:
        inputs_as_given = outputs if isinstance(outputs, tuple) else (outputs,)
        wrapped = _wrap_outputs(ctx, args, outputs, is_differentiable)
        forward_ad._custom_function_jvp(cls, ctx, args, inputs_as_given, wrapped, levels)
        return wrapped
    return _wrap_outputs(ctx, args, outputs, is_differentiable)


def _wrap_outputs(ctx, args, outputs, is_differentiable):
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    input_ids = {id(a): a for a in args if isinstance(a, Tensor)}
    dirty = {id(t) for t in ctx.dirty_tensors}
    nondiff = {id(t) for t in ctx.non_differentiable}
    for t in ctx.dirty_tensors:
        if id(t) not in input_ids:
            raise RuntimeError("mark_dirty only accepts input tensors, but an output that is not an input was given")
        if t._base is not None and len(outs) > 1 and is_differentiable:
            raise RuntimeError("Functions which modify views in-place must return a single Variable "
                               f"({ctx.name()} marked a view dirty and returned {len(outs)} outputs)")
    if is_differentiable:
        ctx._edges = tuple(_graph.edge_of(a) if isinstance(a, Tensor) and a._requires_grad else None
                                   for a in args)
    ctx._input_meta = tuple((a._data.shape, a.dtype) if isinstance(a, Tensor) else None for a in args)
    new_outs = []
    output_meta = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            new_outs.append(o)
            output_meta.append(None)
            continue
        output_meta.append((o._data.shape, o.dtype))
        if id(o) in dirty:
            if is_differentiable:
                if o._grad_fn is None and o._requires_grad and o._base is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
                if o._base is not None:
                    # a view written in place: its base's history goes through CopySlices
                    if o._base._grad_fn is None and o._base._requires_grad:
                        raise RuntimeError("a view of a leaf Variable that requires grad is being used "
                                           "in an in-place operation.")
                    index = next(k for k, a in enumerate(args) if a is o)
                    _graph.rebase_view(o, ctx, index)
                else:
                    o._grad_fn = ctx
                    o._output_nr = i
                    o._requires_grad = True
            new_outs.append(o)
            continue
        if id(o) in input_ids:
            # an input returned as-is: the output is a new tensor aliasing it
            alias = Tensor._make(o._data)
            alias._version_counter = o._version_counter
            alias._base = o._base if o._base is not None else o
            alias._view_version = o._version_counter[0]
            o = alias
        if o._base is not None:
            # a view made in forward (under no_grad): with grad mode on, writing it in
            # place later would bypass the custom backward, so that is refused
            o._creation_meta = (("custom", ctx.name(), i) if _grad_state.enabled
                                else ("no_grad",))
            o._view_version = o._version_counter[0]     # its history is this Function's node
            if not _grad_state.enabled:
                o._requires_grad = o._base._requires_grad
        if is_differentiable:
            if id(outs[i]) in nondiff or id(o) in nondiff:
                o._requires_grad = False
                ctx._non_diff_outputs += (i,)
            elif o._data.dtype.kind in "fc":      # floating point or complex
                o._grad_fn = ctx
                o._output_nr = i
                o._requires_grad = True
        new_outs.append(o)
    ctx._output_meta = tuple(output_meta)
    if ctx.to_save is not None:
        # outputs saved before wrapping refer to the wrapped outputs, kept as outputs (not
        # referring to their grad_fn, which is ctx: that would be a reference cycle)
        remap = {id(a): b for a, b in zip(outs, new_outs) if isinstance(b, Tensor)}
        ctx._saved = tuple(_save(t, remap) if t is None or isinstance(t, Tensor) else t
                           for t in ctx.to_save)
        ctx.to_save = None
    return new_outs[0] if single else tuple(new_outs)


def _save(t, outputs):
    out = outputs.get(id(t))
    if out is None:
        return _graph.SavedTensor.of(t)
    return _graph.SavedTensor(out, is_output=out._grad_fn is not None)


class _DelayedErrorNode(_graph.Node):
    def __init__(self, msg, edges):
        super().__init__()
        self.msg = msg
        self._edges = tuple(edges)

    def name(self):
        return "DelayedError"

    def apply(self, grads):
        raise RuntimeError(self.msg)


def _differentiable(value):
    return isinstance(value, Tensor) and (value.is_floating_point() or value.is_complex())


def once_differentiable(fn):
    """Mark a backward as not differentiable: its outputs get a node that raises
    if anyone tries to differentiate through it."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _grad_state.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        # as PyTorch: the outputs go through a DelayedError whose Error node has, for inputs,
        # detached copies of them that require grad (None stays None), so differentiating
        # through any of them raises
        from ._functions import DelayedError
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        fakes = [o.detach().requires_grad_() if _differentiable(o) else o for o in outs]
        if any(f is not None and not isinstance(f, Tensor) for f in fakes):
            return outputs          # a backward returning something else fails in the engine's checks
        wrapped = DelayedError("trying to differentiate twice a function that was marked with "
                               "@once_differentiable", len(fakes))(*fakes)
        if len(fakes) == 1:
            wrapped = (wrapped,)
        return wrapped[0] if single else tuple(wrapped)
    wrapper._dynjit_once_differentiable = fn    # the JIT traces fn itself (grad mode is off there)
    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    pass
