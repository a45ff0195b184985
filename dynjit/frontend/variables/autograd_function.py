"""Custom autograd Functions while tracing.

`F.apply(*args)` — reached through the class, an instance (`F().apply`) or a
stored bound method (`self.fn = F.apply`) — traces `F.forward` (and
`F.setup_context`) with grad mode off into one body graph and `F.backward`
into another, then records one node

    autograd_function_apply(fwd_body_0, bwd_body_0, *tensors, args_tensor_mask=[...])

(see dynjit/autograd/function_apply.py for what it does at run time). The
ctx is a FunctionCtxVariable: attributes, `save_for_backward`,
`needs_input_grad`, `mark_non_differentiable`, `mark_dirty`,
`set_materialize_grads` are all traced; tensors the backward reads from
the forward (saved tensors, tensor attributes of ctx) become the forward
body's saved outputs and the backward body's inputs.

If the forward or backward cannot be traced, the `apply` call is a graph
break; at run time the forward then goes through the JIT as its own frame
(`HookedApply`). `dynjit.allow_in_graph(F)` instead records `F.apply` as one
opaque call node.
"""
import inspect
import types

import numpy as np

from ...autograd.function import Function, BackwardCFunction, FunctionCtx, uses_setup_context, _apply_eager
from ...autograd.function_apply import autograd_function_apply
from ...fx.graph_module import GraphModule
from ...tensor import Tensor
from ..exc import unimplemented, Unsupported, BreakKind
from ..side_effects import SideEffects
from ..source import AttrSource
from .base import VariableTracker, ConstantVariable
from .builder import wraps, wrap
from .containers import TupleVariable, DictVariable, ExistingListVariable
from .functions import FunctionVariable, BoundMethodVariable
from .objects import ClassVariable, UserObjectVariable
from .tensor import TensorVariable
from .tensor import wrap_result


def is_function_class(value):
    return isinstance(value, type) and issubclass(value, Function) and value is not Function


@wraps("autograd_function", object)
def _wrap_autograd_function(tx, value, source, guards):
    """The tracker for a Function class, a bound `F.apply` or an eager ctx."""
    if source is None:
        return NotImplemented
    if is_function_class(value):
        guards.identity(source, value)
        return AutogradFunctionClassVariable(value, source=source)
    if isinstance(value, types.MethodType) and value.__func__ is Function.apply.__func__ \
            and is_function_class(value.__self__):
        guards.type(source, value)
        guards.identity(AttrSource(source, "__self__"), value.__self__)
        guards.identity(AttrSource(source, "__func__"), value.__func__)
        return AutogradFunctionApplyVariable(value.__self__, source=source)
    if isinstance(value, BackwardCFunction):
        guards.type(source, value)
        var = ExistingCtxVariable(value, source=source)
        tx.output.side_effects.track_existing(value, var)
        return var
    return NotImplemented


class AutogradFunctionClassVariable(ClassVariable):
    """A subclass of dynjit.autograd.Function."""

    def getattr(self, tx, name):
        if name == "apply":
            return AutogradFunctionApplyVariable(self.cls)
        return super().getattr(tx, name)

    def call(self, tx, args, kwargs):
        return AutogradFunctionInstanceVariable(self.cls)


class AutogradFunctionInstanceVariable(VariableTracker):
    """`F()`: an instance is only ever used for its (class-level) methods."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def describe(self):
        return f"a {self.cls.__name__} object"

    def python_type(self):
        return self.cls

    def getattr(self, tx, name):
        if name == "apply":
            return AutogradFunctionApplyVariable(self.cls)
        return ClassVariable(self.cls).getattr(tx, name)

    def reconstruct(self, cg):
        return f"K['new']({cg.constant(self.cls)})"


class AutogradFunctionApplyVariable(VariableTracker):
    """`F.apply`: calling it traces F's forward and backward into one graph node."""

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def describe(self):
        return f"{self.cls.__name__}.apply"

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        from ..eval_frame import is_allowed_in_graph
        if is_allowed_in_graph(self.cls):
            return tx.output.record(opaque_apply(self.cls), args, kwargs)
        try:
            return trace_apply(tx, self.cls, args, kwargs)
        except Unsupported as e:
            # the break is at this call: at run time, forward goes through the JIT as its own frame
            e._in_inlined_call = True
            raise

    def reconstruct(self, cg):
        return f"{cg.constant(self.cls)}.apply"

    def hooked(self, hook):
        """What the call runs as at a graph break: apply, with forward compiled through `hook`."""
        return HookedApply(self.cls, hook)


class HookedApply:
    """`F.apply` whose forward runs through the JIT's frame hook (a compiled frame of its own)."""

    def __init__(self, cls, hook):
        self.cls = cls
        self.hook = hook

    def _hook_forward(self, fn):
        if isinstance(fn, (types.FunctionType, types.MethodType)):
            return self.hook(fn)
        return fn

    def __call__(self, *args, **kwargs):
        return _apply_eager(self.cls, args, kwargs, forward_hook=self._hook_forward)


_opaque = {}


def opaque_apply(cls):
    """The graph target for `F.apply` of a Function marked with allow_in_graph."""
    fn = _opaque.get(cls)
    if fn is None:
        def apply(*args, **kwargs):
            return cls.apply(*args, **kwargs)
        apply.__name__ = f"{cls.__name__}_apply"
        apply.__qualname__ = f"{cls.__qualname__}.apply"
        apply.__module__ = getattr(cls, "__module__", None)
        fn = _opaque[cls] = apply
    return fn


class _CtxMethod(VariableTracker):
    def __init__(self, ctx, name):
        super().__init__()
        self.ctx = ctx
        self.name = name

    def describe(self):
        return f"ctx.{self.name}"

    def call(self, tx, args, kwargs):
        return self.ctx.call_ctx_method(tx, self.name, args, kwargs)


CTX_METHODS = ("save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
               "set_materialize_grads")


def _tensors_only(what, args):
    for a in args:
        if not isinstance(a, TensorVariable) and not (a.is_python_constant() and a.as_python_constant() is None):
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{what} of {a.describe()} (only tensors or None)")
    return list(args)


class FunctionCtxVariable(VariableTracker):
    """The ctx of a Function whose forward and backward are being traced."""

    def __init__(self, fn_cls, needs_input_grad):
        super().__init__()
        self.fn_cls = fn_cls
        self.needs_input_grad = tuple(needs_input_grad)
        self.attrs = {}
        self.saved = []
        self.non_differentiable = []
        self.dirty = []
        self.materialize_grads = True

    def describe(self):
        return f"the ctx of {self.fn_cls.__name__}"

    def python_type(self):
        return self.fn_cls._backward_cls

    def getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if name in CTX_METHODS:
            return _CtxMethod(self, name)
        if name in ("saved_tensors", "saved_variables"):
            return TupleVariable(list(self.saved))
        if name == "needs_input_grad":
            return ConstantVariable(self.needs_input_grad)
        if name == "materialize_grads":
            return ConstantVariable(self.materialize_grads)
        raise AttributeError(f"'{self.fn_cls._backward_cls.__name__}' object has no attribute '{name}'")

    def setattr(self, tx, name, value):
        if name in ("saved_tensors", "needs_input_grad"):
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"assigning ctx.{name}")
        self.attrs[name] = value

    def truth(self, tx):
        return True

    def call_ctx_method(self, tx, name, args, kwargs):
        if kwargs:
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"ctx.{name}() with keyword arguments")
        if name == "save_for_backward":
            self.saved = _tensors_only("save_for_backward", args)
        elif name == "save_for_forward":
            pass                     # forward-mode AD is not supported: nothing reads it
        elif name == "mark_non_differentiable":
            self.non_differentiable = _tensors_only("mark_non_differentiable", args)
        elif name == "mark_dirty":
            self.dirty = _tensors_only("mark_dirty", args)
        elif name == "set_materialize_grads":
            self.materialize_grads = bool(args[0].as_python_constant())
        return ConstantVariable(None)

    def reconstruct(self, cg):
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{self.describe()} escaping its traced forward")


class ExistingCtxVariable(UserObjectVariable):
    """The real ctx handed to a compiled forward or backward (an eager Function call)."""

    def getattr(self, tx, name):
        if name in ("saved_tensors", "saved_variables"):
            return wrap(tx, self.value.saved_tensors, AttrSource(self.source, "saved_tensors"))
        if name in CTX_METHODS:
            return _CtxMethod(self, name)
        return super().getattr(tx, name)

    def call_ctx_method(self, tx, name, args, kwargs):
        # the bodies of FunctionCtx's methods, replayed on the real ctx after the graph
        if kwargs:
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"ctx.{name}() with keyword arguments")
        if name == "save_for_backward":
            self.setattr(tx, "to_save", TupleVariable(_tensors_only("save_for_backward", args)))
        elif name == "save_for_forward":
            self.setattr(tx, "saved_for_forward", TupleVariable(list(args)))
        elif name == "mark_non_differentiable":
            self.setattr(tx, "non_differentiable", TupleVariable(_tensors_only("mark_non_differentiable", args)))
        elif name == "mark_dirty":
            self.setattr(tx, "dirty_tensors", TupleVariable(_tensors_only("mark_dirty", args)))
        elif name == "set_materialize_grads":
            self.setattr(tx, "materialize_grads", ConstantVariable(bool(args[0].as_python_constant())))
        return ConstantVariable(None)


# -- tracing apply ------------------------------------------------------------------------------
def _method(cls, name):
    """A tracker calling cls.<name> (a staticmethod or classmethod) with explicit arguments."""
    from ..eval_frame import CompiledFunction
    attr = inspect.getattr_static(cls, name)
    if isinstance(attr, staticmethod):
        fn, bound = attr.__func__, False
    elif isinstance(attr, classmethod):
        fn, bound = attr.__func__, True
    else:
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.{name} is not a staticmethod or classmethod")
    fn = getattr(fn, "_dynjit_once_differentiable", fn)   # traced with grad mode off anyway
    if isinstance(fn, CompiledFunction):
        fn = fn._fn
    if not isinstance(fn, types.FunctionType):
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.{name} is a {type(fn).__name__}, not a Python function")
    var = FunctionVariable(fn)
    return BoundMethodVariable(var, ClassVariable(cls)) if bound else var


def _bind(tx, cls, args, kwargs):
    """Positional arguments as `apply` hands them to forward (as Function._bind_kwargs does)."""
    if not kwargs:
        return list(args)
    fwd = cls.forward
    sig = inspect.signature(fwd)
    params = list(sig.parameters.values())
    if not uses_setup_context(cls):
        params = params[1:]
        sig = sig.replace(parameters=params)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        unimplemented(BreakKind.USER_EXCEPTION, f"{cls.__name__}.apply() arguments do not match forward: {e}")
    out = []
    for p in params:
        if p.name in bound.arguments:
            out.append(bound.arguments[p.name])
        elif p.default is not inspect.Parameter.empty:
            out.append(wrap(tx, p.default))
    return out


def _escaped_tensor(v, graphs, seen):
    """Does tracker `v` hold (directly or in containers/attributes) a tensor of one of `graphs`?"""
    if id(v) in seen:
        return False
    seen.add(id(v))
    if isinstance(v, TensorVariable):
        return v.node.graph in graphs
    if isinstance(v, ExistingListVariable):       # reading .items would realize (and guard) it
        children = list(v._items or ()) + list(v.appended)
    elif isinstance(v, DictVariable):
        children = list(v.items.values())
    else:
        children = list(getattr(v, "items", ()) or ())
    attrs = getattr(v, "attrs", None)
    if isinstance(attrs, dict):
        children += list(attrs.values())
    return any(_escaped_tensor(c, graphs, seen) for c in children)


def _check_no_escape(output, bodies):
    """A body's tensors must not leak out through side effects (a list append, a global)."""
    effects = output.side_effects
    graphs = [b.graph for b in bodies]
    values = list(effects._mutated) + [v for d in effects._globals.values() for v, _ in d.values()]
    seen = set()
    if any(_escaped_tensor(v, graphs, seen) for v in values):
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, "a side effect inside an autograd.Function's forward or backward that stores a "
                      "tensor outside it")


def _in_output(tx, output, fn_var, args):
    """Inline fn_var(*args) with its ops recorded into `output` (a SubgraphOutput)."""
    prev = tx.output
    tx.output = output
    try:
        return fn_var.call(tx, list(args), {})
    finally:
        tx.output = prev


def _is_none(v):
    return v.is_python_constant() and v.as_python_constant() is None


def _index_of(var, candidates):
    for i, c in enumerate(candidates):
        if c is var or (isinstance(c, TensorVariable) and c.node is var.node):
            return i
    return None


def _next_body_index(output):
    i = 0
    while f"fwd_body_{i}" in output.submodules:
        i += 1
    return i


def trace_apply(tx, cls, args, kwargs):
    from ..subgraph import SubgraphOutput
    from ..output_graph import _meta, _Tx
    parent = tx.output
    setup_style = uses_setup_context(cls)
    forward = _method(cls, "forward")
    backward = _method(cls, "backward")
    args = _bind(tx, cls, args, kwargs)
    if isinstance(parent, SubgraphOutput):
        args = [parent.lift(a) if isinstance(a, TensorVariable) else a for a in args]
    mask = [isinstance(a, TensorVariable) for a in args]
    needs_input_grad = [m and a.example.requires_grad for a, m in zip(args, mask)]
    differentiable = parent.grad_enabled and any(needs_input_grad)
    ctx = FunctionCtxVariable(cls, needs_input_grad)

    # forward (and setup_context), with grad mode off as eager runs them
    fwd = SubgraphOutput(parent, grad_enabled=False)
    fwd.placeholder("function_ctx")
    fwd_args = [fwd.add_input(a) if m else a for a, m in zip(args, mask)]
    if setup_style:
        out = _in_output(tx, fwd, forward, fwd_args)
        _in_output(tx, fwd, _method(cls, "setup_context"), [ctx, TupleVariable(list(fwd_args)), out])
    else:
        out = _in_output(tx, fwd, forward, [ctx] + fwd_args)
    single = not isinstance(out, TupleVariable)
    outs = [out] if single else list(out.items)
    for o in outs:
        if not isinstance(o, TensorVariable):
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.forward returned {o.describe()} (only tensors are traced)")
    nondiff_idx = [i for i, o in enumerate(outs) if _index_of(o, ctx.non_differentiable) is not None]
    dirty_idx = [i for i, o in enumerate(outs) if _index_of(o, ctx.dirty) is not None]
    dirty_args = {}
    for i in dirty_idx:
        k = _index_of(outs[i], fwd_args)
        if k is None:
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, "mark_dirty on a tensor that is not an input of forward")
        dirty_args[i] = args[k]
    outs = [fwd.lift(o) for o in outs]

    # backward: one gradient input per output, saved values lifted from the forward
    bwd = SubgraphOutput(fwd, grad_enabled=parent.grad_enabled)
    bwd.side_effects = SideEffects()     # effects of backward would replay at forward time: refused
    bwd.placeholder("function_ctx")
    grads = []
    for o in outs:
        ex = Tensor._make(np.ones(o.example._data.shape, dtype=o.example._data.dtype))
        grads.append(TensorVariable(bwd.placeholder(o.node.name, ex), ex))
    bwd.set_grad_enabled(False)
    result = _in_output(tx, bwd, backward, [ctx] + grads)
    bwd.set_grad_enabled(parent.grad_enabled)
    res = list(result.items) if isinstance(result, TupleVariable) else [result]
    if len(res) > len(args) and all(_is_none(r) for r in res[len(args):]):
        res = res[:len(args)]
    if len(res) < len(args) and not any(mask[len(res):]):
        res = res + [ConstantVariable(None)] * (len(args) - len(res))   # only non-tensor inputs left out
    if len(res) != len(args):
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.backward returned {len(res)} gradients for {len(args)} inputs")
    grad_nodes = []
    for i, (g, m) in enumerate(zip(res, mask)):
        if _is_none(g):
            if m:
                grad_nodes.append(None)
            continue
        if not m:
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.backward returned a gradient for input {i}, which is not a tensor")
        if not isinstance(g, TensorVariable):
            unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.backward returned {g.describe()} as the gradient of input {i} "
                          "(gradients must be tensors or None)")
        grad_nodes.append(bwd.lift(g).node)
    if bwd.side_effects.has_effects():
        unimplemented(BreakKind.AUTOGRAD_FUNCTION, f"{cls.__name__}.backward has side effects (mutates a list, an object or a global)")
    bwd.graph.output(tuple(grad_nodes))
    _check_no_escape(parent, (fwd, bwd))
    saved = [v.node for v in bwd.lifted]
    fwd.graph.output((outs[0].node if single else tuple(o.node for o in outs), saved))

    # the node in the enclosing graph
    fwd_gm = GraphModule(fwd.submodules, fwd.graph)
    fwd_gm.meta["autograd_function"] = cls
    bwd_gm = GraphModule(bwd.submodules, bwd.graph)
    i = _next_body_index(parent)
    parent.submodules[f"fwd_body_{i}"] = fwd_gm
    parent.submodules[f"bwd_body_{i}"] = bwd_gm
    graph = parent.graph
    graph.call_function(FunctionCtx, (), name="function_ctx")
    fwd_attr = graph.get_attr(f"fwd_body_{i}")
    bwd_attr = graph.get_attr(f"bwd_body_{i}")
    options = {"args_tensor_mask": mask}
    if nondiff_idx:
        options["non_differentiable_idx"] = nondiff_idx
    if dirty_idx:
        options["dirty_idx"] = dirty_idx
    node = graph.call_function(autograd_function_apply,
                               (fwd_attr, bwd_attr) + tuple(v.node for v in fwd.lifted), options)
    values = []
    for k, o in enumerate(outs):
        ex = Tensor._make(o.example._data)
        ex._requires_grad = bool(differentiable and k not in nondiff_idx and ex.dtype.is_floating_point)
        values.append(ex)
    value = values[0] if single else tuple(values)
    node.meta["val"] = _meta(value)
    wrapped = wrap_result(_Tx(parent), node, value)
    if not dirty_idx:
        return wrapped
    # an input modified in place and returned: the caller's tracker now is the output
    items = [wrapped] if single else list(wrapped.items)
    for k, arg in dirty_args.items():
        arg.node = items[k].node
        arg.example._requires_grad = arg.example._requires_grad or bool(differentiable)
        items[k] = arg
    return items[0] if single else TupleVariable(items)
