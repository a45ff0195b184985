"""dynjit.library: torch.library's custom operators.

`custom_op("ns::name", mutates_args=...)` turns a Python function of tensors into an op of
the one registry (dynjit/ops/registry.py): it dispatches like every other op, so dispatch
modes (make_fx, AOT's tracer, the profiler, selective checkpointing) see it as one call,
dynjit.compile and make_fx record it as one graph node, and the llvm backend calls it
through the dispatcher. It is reachable as `dynjit.ops.<ns>.<name>` (and `.default`).

- `register_fake(fn)`: the op's shape function (its meta: output shapes and dtypes).
- `register_autograd(backward, setup_context=...)`: its derivative, run as an
  autograd.Function's backward (a node named `GeneratedBackwardFor_<ns>_<name>_defaultBackward`,
  as PyTorch names it). Without one, backpropagating through the op is an error.
- `register_kernel(device_types, fn)`: the implementation for a device ("cpu" replaces the
  function the op was defined with; dynjit runs on the CPU only, so others are kept unused).
- `register_vmap(fn)`: its batching rule under dynjit.func.vmap; without one, vmap calls the
  op once per example and stacks the results.

AOT's partitioner saves a custom op's outputs rather than recomputing them (tag
COMPUTE_BOUND); an op that writes its inputs (`mutates_args`) is kept by dead-code
elimination, bumps their version counters, and may not have an autograd formula (as in
PyTorch); without a formula, backpropagating through its outputs or the inputs it wrote is an
error rather than a gradient that ignores the op.

The kernel runs below autograd: its own ops record no history and are not seen by the
dispatch modes above it. `_scoped_library(ns)` removes the ops defined in `ns` on exit.
"""
import inspect
import types
import typing

from .ops.registry import OpDef, OTHER, COMPUTE_BOUND, registry as _registry, _add as _add_op
from .autograd.function import Function
from .autograd import graph as _graph
from .autograd.grad_mode import no_grad, state as _grad_state
from .tensor import Tensor, _data_reads
from .ops.dispatch import check_inplace_allowed

__all__ = ["custom_op", "register_fake", "register_autograd", "register_kernel", "register_vmap", "CustomOpDef",
           "infer_schema", "Library"]


# -- schema ------------------------------------------------------------------------------

def _type_name(ann):
    """The schema type of an annotation, or None if custom ops cannot take it."""
    if ann is Tensor:
        return "Tensor"
    simple = {int: "SymInt", float: "float", bool: "bool", str: "str", type(None): "()"}
    if ann in simple:
        return simple[ann]
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        inner = _type_name(args[0] if args[1] is type(None) else args[1])
        return None if inner is None else inner + "?"
    if origin in (list, typing.List) or (origin is not None and getattr(origin, "__name__", "") == "Sequence"):
        inner = _type_name(args[0]) if args else None
        return None if inner is None else inner + "[]"
    return None


def infer_schema(fn, *, mutates_args, op_name=None):
    """The schema string of `fn` (PyTorch's infer_schema): every parameter annotated with a
    type custom ops take, the names in `mutates_args` marked as written (`Tensor(a0!)`)."""
    sig = inspect.signature(fn)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if mutates_args == "unknown":
        mutated = set(n for n, p in sig.parameters.items() if p.annotation is Tensor)
    else:
        if isinstance(mutates_args, str) or not hasattr(mutates_args, "__iter__"):
            error("mutates_args must be an iterable of argument names, or the string 'unknown'.")
        mutated = set(mutates_args)
        missing = mutated - set(sig.parameters)
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. "
                  "mutates_args should contain the names of all args that the custom op mutates, "
                  "or just the string 'unknown' if you don't know.")
    params = []
    for k, (name, p) in enumerate(sig.parameters.items()):
        if p.kind == p.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error(f"We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is p.empty:
            error(f"Parameter {name} must have a type annotation.")
        t = _type_name(p.annotation)
        if t is None or t == "()":
            error(f"Parameter {name} has unsupported type {p.annotation}.")
        if name in mutated:
            if not t.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                      "Tensors can be mutated")
            t = t.replace("Tensor", f"Tensor(a{k}!)", 1)
        default = "" if p.default is p.empty else f"={p.default!r}"
        params.append(f"{t} {name}{default}")
    ret = sig.return_annotation
    if ret is None:
        ret = type(None)
    if ret is sig.empty:
        error("No return type annotation was provided. Please add one.")
    if typing.get_origin(ret) in (tuple, typing.Tuple):
        outs = [_type_name(a) for a in typing.get_args(ret)]
        if any(o is None or o == "()" for o in outs):
            error(f"Return has unsupported type {ret}.")
        returns = "(" + ", ".join(outs) + ")"
    else:
        out = _type_name(ret)
        if out is None:
            error(f"Return has unsupported type {ret}.")
        returns = out
    return f"({', '.join(params)}) -> {returns}"


# -- the op ------------------------------------------------------------------------------

class CustomOpOverload(OpDef):
    """The registry op of a custom op: its eager entry is the CustomOpDef's."""

    def __init__(self, custom, kernel):
        # COMPUTE_BOUND: an opaque kernel of unknown cost (and maybe side effects) is saved, never
        # recomputed by AOT's partitioner, as PyTorch's partitioner bans recomputing it
        super().__init__(custom._qualname, kernel, OTHER, complex_ok=True, tags=(COMPUTE_BOUND,))
        self.custom = custom
        self._is_impure = bool(custom._mutated)     # the frontend keeps an op that writes memory

    def __repr__(self):
        return f"{self.custom._namespace}.{self.custom._name}.default"

    @property
    def default(self):
        return self

    def overloads(self):
        return ["default"]

    def record_replayed(self, args, kwargs, out):
        """Selective checkpointing replays this op's saved output in a recomputation: give it
        the autograd node this call would have recorded."""
        self.custom._record_replayed(self.normalize(tuple(args), kwargs or {}), out)


class CustomOpDef:
    """What `custom_op` returns: calling it calls the op; register_* complete it."""

    def __init__(self, namespace, name, fn, mutates_args, schema=None):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema if schema is not None else infer_schema(fn, mutates_args=mutates_args)
        self._init_fn = fn
        self._cpu_kernel = fn
        self._other_kernels = {}
        self._fake_fn = None
        self._backward_fn = None
        self._setup_context_fn = None
        self._autograd_cls = None
        self._vmap_fn = None
        sig_params = inspect.signature(fn).parameters
        params = list(sig_params)
        self._kwonly = frozenset(n for n, p in sig_params.items() if p.kind == p.KEYWORD_ONLY)
        if mutates_args == "unknown":
            self._mutated = tuple(params)
        else:
            self._mutated = tuple(p for p in params if p in set(mutates_args))
        self._opdef = CustomOpOverload(self, fn)
        self._opdef.impl = self._eager
        self._opdef._meta = self._meta
        __doc__ = fn.__doc__        # noqa: F841
        self.__name__ = name
        self.__wrapped__ = fn

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opdef(*args, **kwargs)

    # -- registration ------------------------------------------------------------------
    def register_fake(self, fn=None, /):
        """The op's shape function: called on tensors of the inputs' shapes and dtypes, it
        returns tensors of the outputs' shapes and dtypes (`dynjit.empty_like(x)`)."""
        def register(fn):
            self._fake_fn = fn
            return fn
        return register if fn is None else register(fn)

    def register_autograd(self, backward, /, *, setup_context=None):
        """The op's derivative: `backward(ctx, *grads)` returns one gradient per input (None for
        non-tensor inputs); `setup_context(ctx, inputs, output)` saves what it needs."""
        if self._mutated:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self!r} with schema {self._qualname}{self._schema}. Please create "
                               "a functional operator and register an autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context
        self._autograd_cls = self._make_autograd_function()

    def register_kernel(self, device_types, fn=None, /):
        """The op's implementation for `device_types` ("cpu", a list of them, or None for all)."""
        def register(fn):
            types = [device_types] if isinstance(device_types, str) or device_types is None else device_types
            for d in types:
                if d is None or d == "cpu":
                    self._cpu_kernel = fn
                else:
                    self._other_kernels[d] = fn
            return fn
        return register if fn is None else register(fn)

    def register_vmap(self, func=None, /):
        """The op's batching rule: `func(info, in_dims, *args)` gets the arguments with their
        batch dimension (`in_dims`: per argument its batch dim, or None; a list for a tensor
        list) and `info.batch_size`, and returns `(output, out_dims)`. Without one, vmap calls
        the op once per example and stacks the results."""
        def register(func):
            self._vmap_fn = func
            return func
        return register if func is None else register(func)

    def _batching_rule(self, mode, op, args):
        """vmap's rule for this op (dynjit.func._batching): the registered one, or a loop."""
        if self._vmap_fn is not None:
            return self._registered_vmap(mode, args)
        if self._mutated:
            raise NotImplementedError(f"vmap: {self._qualname} writes its inputs; vmap calls a custom op "
                                      "once per example only when it writes nothing. Register a batching "
                                      "rule with register_vmap.")
        from .func._batching import wrap
        n = mode.level.batch_size
        if n == 0:
            raise NotImplementedError(f"vmap: {self._qualname} has no batching rule and the batch is "
                                      "empty (the fallback calls the op once per example); register "
                                      "one with register_vmap")
        select, stack = _registry["select"], _registry["stack"]

        def example(a, i):
            if mode.is_batched(a):
                return select(a._bt_value, 0, i)
            if isinstance(a, (list, tuple)) and any(mode.is_batched(t) for t in a):
                return type(a)(example(t, i) for t in a)
            return a

        results = [op(*(example(a, i) for a in args)) for i in range(n)]

        def combine(items):
            if isinstance(items[0], Tensor):
                return wrap(stack(list(items), 0), mode.level)
            if any(x != items[0] for x in items[1:]):
                raise RuntimeError(f"vmap: {self._qualname} returned different non-tensor values for "
                                   f"different examples ({items[0]!r} and others); vmap can only "
                                   "return one. Register a batching rule with register_vmap.")
            return items[0]

        if isinstance(results[0], tuple):
            return tuple(combine([r[k] for r in results]) for k in range(len(results[0])))
        return combine(results)

    def _registered_vmap(self, mode, args):
        from .func._batching import wrap
        values, in_dims = [], []
        for a in args:
            if mode.is_batched(a):
                values.append(a._bt_value)
                in_dims.append(0)
            elif isinstance(a, (list, tuple)) and any(mode.is_batched(t) for t in a):
                values.append(type(a)(t._bt_value if mode.is_batched(t) else t for t in a))
                in_dims.append([0 if mode.is_batched(t) else None for t in a])
            else:
                values.append(a)
                in_dims.append(None)
        info = _VmapInfo(mode.level.batch_size, getattr(mode, "randomness", "error"))
        result = self._vmap_fn(info, tuple(in_dims), *values)
        if not isinstance(result, tuple) or len(result) != 2:
            raise RuntimeError(f"{self._qualname}: the function registered with register_vmap must return "
                               f"(output, out_dims), got {type(result).__name__}")
        out, out_dims = result

        def place(o, d):
            if not isinstance(o, Tensor) or d is None:
                return o
            if not isinstance(d, int):
                raise RuntimeError(f"{self._qualname}: register_vmap's out_dims must be ints or None, got {d!r}")
            d %= max(o.dim(), 1)
            if d != 0:      # the batch dim moved to the front
                o = _registry["permute"](o, (d,) + tuple(k for k in range(o.dim()) if k != d))
            return wrap(o, mode.level)

        if isinstance(out, tuple):
            dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(out)
            return tuple(place(o, d) for o, d in zip(out, dims))
        return place(out, out_dims)

    # -- running -------------------------------------------------------------------------
    def _run_kernel(self, args):
        """The kernel on `args`, below autograd, with PyTorch's checks of what it returns."""
        versions = [a._version_counter[0] if isinstance(a, Tensor) else None for a in args]
        # the kernel is opaque to tracers (its call is the graph's node, rerun on each call), so
        # its reads of tensor values are not the traced program's
        _data_reads.append(_kernel_data_read)
        try:
            with no_grad():
                out = self._call(self._cpu_kernel, args)
        finally:
            _data_reads.pop()
        self._check_returns(out)
        inputs = [a for a in args if isinstance(a, Tensor)]
        outs = out if isinstance(out, (tuple, list)) else (out,)
        tensors = [o for o in outs if isinstance(o, Tensor)]
        for k, o in enumerate(tensors):
            shares = any(o is a or _shares_memory(o, a) for a in inputs) or any(
                _shares_memory(o, p) for p in tensors[:k])
            if shares:
                raise RuntimeError(
                    f"{self._name} (with implementation in {self._cpu_kernel.__module__}): The output of "
                    "this custom operator (1) must not also be an input to this custom operator and "
                    "(2) may not alias any inputs to this custom operator or other returns. The most "
                    "common way to trigger this error is if we have y = custom_op(x) and y and x are "
                    "the same Tensor. Please instead return a clone of the offending output tensor(s) "
                    "(e.g. return x.clone()) or refactor the custom operator to not return y.")
        # a mutated argument's version counter moves, whether the kernel wrote it through
        # dynjit's in-place ops (which count) or through its numpy array (which do not)
        for name, a, v in zip(self._opdef.params, args, versions):
            if name in self._mutated and isinstance(a, Tensor) and a._version_counter[0] == v:
                a._version_counter[0] += 1
        return out

    def _call(self, fn, args):
        """fn on the op's full argument tuple, its keyword-only parameters passed by name."""
        if not self._kwonly:
            return fn(*args)
        params = self._opdef.params
        return fn(*(a for n, a in zip(params, args) if n not in self._kwonly),
                  **{n: a for n, a in zip(params, args) if n in self._kwonly})

    def _check_returns(self, out):
        """What the kernel returned against the schema's return types (PyTorch's errors)."""
        returns = self._schema.rsplit(" -> ", 1)[1]
        if returns == "()":
            if out is not None:
                raise RuntimeError(f"{self._qualname}: the schema returns nothing, but the kernel "
                                   f"returned a {type(out).__name__}")
            return
        if returns.startswith("("):
            types = [t.strip() for t in returns[1:-1].split(",")]
            if not isinstance(out, tuple) or len(out) != len(types):
                raise RuntimeError(f"{self._qualname}: the schema returns a tuple of {len(types)} "
                                   f"({returns}), but the kernel returned {type(out).__name__} {out!r}")
            pairs = zip(types, out)
        else:
            pairs = ((returns, out),)
        for t, o in pairs:
            if t == "Tensor" and not isinstance(o, Tensor):
                raise RuntimeError(f"Unable to cast {o!r} to Tensor")

    def _eager(self, op, args, kwargs):
        args = op.normalize(tuple(args), kwargs)
        if not _grad_state.enabled:
            return self._run_kernel(args)
        if self._mutated:
            self._check_mutable_inputs(args)
        wants_grad = any(_requires_grad(a) for a in args)
        if wants_grad and self._autograd_cls is not None:
            spec, flat = _flatten(args)
            return self._autograd_cls.apply(_Spec(spec), *flat)
        out = self._run_kernel(args)
        if wants_grad:
            self._attach_missing_autograd(args, out)
        return out

    def _missing_autograd_message(self):
        return (f"Trying to backward through {self._namespace}.{self._name}.default but no autograd "
                "formula was registered. Please use register_autograd to add one.")

    def _check_mutable_inputs(self, args):
        """An input the op writes that requires grad: PyTorch's in-place errors (a leaf, a view
        that may not be written), before the kernel runs."""
        for name, a in zip(self._opdef.params, args):
            if name in self._mutated:
                for t in (a if isinstance(a, (list, tuple)) else (a,)):
                    if isinstance(t, Tensor) and (t._requires_grad or
                                                  (t._base is not None and t._base._requires_grad)):
                        check_inplace_allowed(t, True, self._qualname)

    def _attach_missing_autograd(self, args, out):
        """No formula registered: the outputs, and the inputs the op wrote, require grad, and
        backpropagating through them raises PyTorch's error (a written input's old history
        would give a silently wrong gradient)."""
        _, flat = _flatten(args)
        edges = tuple(_graph.edge_of(a) if isinstance(a, Tensor) and a._requires_grad else None
                      for a in flat)
        node = _graph_error_node(self._missing_autograd_message(), edges)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and o._data.dtype.kind in "fc":
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
        for name, a in zip(self._opdef.params, args):
            if name not in self._mutated:
                continue
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if not isinstance(t, Tensor):
                    continue
                if t._base is not None and (t._requires_grad or t._base._requires_grad):
                    _graph.rebase_view(t, _graph_error_node(self._missing_autograd_message(),
                                                            (_graph.edge_of(t),)))
                elif t._requires_grad:
                    t._grad_fn = _graph_error_node(self._missing_autograd_message(), (_graph.edge_of(t),))
                    t._output_nr = 0
        return out

    def _make_autograd_function(self):
        """The autograd.Function the op runs as when an input requires grad. Its inputs are the
        op's arguments with tensor lists spread out (each tensor gets its own edge), after a
        first argument that says how to put them back together."""
        custom = self

        def forward(spec, *flat):
            return custom._run_kernel(_unflatten(spec.spec, flat))

        def setup_context(ctx, inputs, output):
            spec = inputs[0].spec
            ctx.needs_input_grad = tuple(_unflatten_any(spec, ctx.needs_input_grad[1:]))
            ctx._dynjit_spec = spec
            if custom._setup_context_fn is not None:
                custom._setup_context_fn(ctx, tuple(_unflatten(spec, inputs[1:])), output)

        def backward(ctx, *grads):
            result = custom._backward_fn(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            n = custom._opdef.nparams
            if len(result) != n:
                raise RuntimeError(f"{custom._qualname}: the backward registered with register_autograd "
                                   f"returned {len(result)} gradients; expected one per input, {n} "
                                   "(None for inputs without one)")
            return (None,) + _flatten_grads(ctx._dynjit_spec, result, custom._qualname)

        name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_default"
        cls = type(name, (Function,), {"forward": staticmethod(forward),
                                       "setup_context": staticmethod(setup_context),
                                       "backward": staticmethod(backward),
                                       "__module__": __name__})
        return cls

    def _record_replayed(self, args, out):
        """Attach to `out` (this op's saved output, replayed) the node a call on `args` makes."""
        if not _grad_state.enabled or not any(_requires_grad(a) for a in args):
            return
        if self._autograd_cls is None:
            self._attach_missing_autograd(args, out)
            return
        from .autograd.function import _wrap_outputs
        cls = self._autograd_cls
        spec, flat = _flatten(args)
        inputs = (_Spec(spec),) + tuple(flat)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in inputs)
        cls.setup_context(ctx, inputs, out)
        outs = out if isinstance(out, tuple) else (out,)
        wrapped = _wrap_outputs(ctx, inputs, out, True)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        for o, w in zip(outs, wrapped):      # the node goes onto the replayed tensors themselves
            if isinstance(o, Tensor) and w is not o:
                o._grad_fn, o._output_nr, o._requires_grad = w._grad_fn, w._output_nr, w._requires_grad

    def _meta(self, *args):
        if self._fake_fn is None:
            raise RuntimeError(
                f"There was no fake impl registered for {self._qualname}. This is necessary for "
                "dynjit to know the op's output shapes without running it. Please use "
                f"@{self._name}.register_fake to add a fake impl.")
        from . import empty
        from .ops.dispatch import _modes

        def fake(a):
            if _is_tensor_like(a):
                return empty(tuple(a.shape), dtype=a.dtype)
            if isinstance(a, (list, tuple)) and any(_is_tensor_like(t) for t in a):
                return type(a)(fake(t) for t in a)
            return a

        # a shape computation: no dispatch mode around it (a tracer) sees its ops
        modes = list(_modes.items)
        _modes.items.clear()
        try:
            with no_grad():
                out = self._call(self._fake_fn, [fake(a) for a in args])
        finally:
            _modes.items[:] = modes
        if isinstance(out, (tuple, list)):
            return [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None for o in out]
        return (tuple(out.shape), out.dtype)


class _VmapInfo:
    """What a register_vmap function is told about the vmap call (PyTorch's VmapInfo)."""

    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness


class _Spec:
    """How the flat inputs of a custom op's autograd.Function regroup into the op's arguments."""
    __slots__ = ("spec",)

    def __init__(self, spec):
        self.spec = spec


def _flatten(args):
    """(spec, flat): tensor lists spread out, each other argument as is."""
    spec, flat = [], []
    for a in args:
        if isinstance(a, (list, tuple)) and any(isinstance(t, Tensor) for t in a):
            spec.append((type(a), len(a)))
            flat.extend(a)
        else:
            spec.append(None)
            flat.append(a)
    return tuple(spec), flat


def _unflatten(spec, flat):
    out, k = [], 0
    for entry in spec:
        if entry is None:
            out.append(flat[k])
            k += 1
        else:
            kind, n = entry
            out.append(kind(flat[k:k + n]))
            k += n
    return out


def _unflatten_any(spec, flags):
    """Per argument: a flag, or for a tensor list whether any of its tensors has it."""
    return [any(v) if isinstance(v, (list, tuple)) else v for v in _unflatten(spec, list(flags))]


def _flatten_grads(spec, grads, qualname):
    flat = []
    for entry, g in zip(spec, grads):
        if entry is None:
            flat.append(g)
        elif g is None:
            flat.extend([None] * entry[1])
        else:
            if not isinstance(g, (list, tuple)) or len(g) != entry[1]:
                raise RuntimeError(f"{qualname}: the backward must return, for a list of {entry[1]} "
                                   "tensors, a list of as many gradients (or None)")
            flat.extend(g)
    return tuple(flat)


def _kernel_data_read(tensor, how):
    pass


def _requires_grad(a):
    if isinstance(a, Tensor):
        return a._requires_grad
    if isinstance(a, (list, tuple)):
        return any(isinstance(t, Tensor) and t._requires_grad for t in a)
    return False


def _is_tensor_like(a):
    from .ops.meta import is_tensor_like
    return is_tensor_like(a)


def _shares_memory(a, b):
    import numpy as np
    return a._data.size > 0 and b._data.size > 0 and np.may_share_memory(a._data, b._data)


def _graph_error_node(msg, edges):
    from .autograd.function import _DelayedErrorNode
    return _DelayedErrorNode(msg, edges)


# -- namespaces: dynjit.ops.<ns>.<name> --------------------------------------------------

def _new_namespace(ns):
    """dynjit.ops.<ns>: a module holding the custom ops defined in namespace `ns` (a plain
    module, so that compiled code reads its attributes as it reads dynjit.ops')."""
    module = types.ModuleType(f"dynjit.ops.{ns}", f"The custom ops of namespace {ns!r} (dynjit.library).")
    module._dynjit_custom_namespace = True
    return module


def _namespace(ns):
    from . import ops
    existing = ops.__dict__.get(ns)
    if existing is None:
        if ns in _registry or ns == "aten" or hasattr(ops, ns):
            raise RuntimeError(f"custom_op: the namespace {ns!r} would hide dynjit.ops.{ns}; choose another")
        existing = _new_namespace(ns)
        setattr(ops, ns, existing)
    elif not getattr(existing, "_dynjit_custom_namespace", False):
        raise RuntimeError(f"custom_op: {ns!r} names one of dynjit's own op namespaces; choose another")
    return existing


def _parse_qualname(qualname):
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator name "
                         "should look something like ns::foo")
    ns, name = qualname.split("::")
    if not ns.isidentifier() or not name.isidentifier() or "." in name:
        raise ValueError(f"custom_op: {qualname!r} is not a valid 'namespace::name' (both must be "
                         "Python identifiers)")
    return ns, name


_custom_ops = {}        # qualname -> CustomOpDef


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Wrap `fn` as the custom op `name` ("ns::op"); a decorator when `fn` is not given."""
    ns, opname = _parse_qualname(name)

    def inner(fn):
        custom = CustomOpDef(ns, opname, fn, mutates_args, schema)
        if device_types is not None:
            custom._cpu_kernel = fn if device_types == "cpu" or "cpu" in device_types else _no_kernel(custom)
        namespace = _namespace(ns)
        old = _custom_ops.get(custom._qualname)
        if old is not None:
            _remove(old)
        if custom._qualname in _registry:
            raise RuntimeError(f"custom_op: an op named {custom._qualname!r} is already registered")
        _add_op(custom._opdef)
        custom._opdef.impl = custom._eager      # (_add installed the generic eager entry)
        setattr(namespace, opname, custom._opdef)
        _custom_ops[custom._qualname] = custom
        from .func import _batching
        _batching._RULES[custom._qualname] = custom._batching_rule
        for lib in _active_scopes:
            if lib.ns == ns:
                lib._defined.append(custom)
        return custom
    return inner if fn is None else inner(fn)


def _no_kernel(custom):
    def kernel(*args):
        raise NotImplementedError(f"{custom._qualname}: no kernel registered for the CPU (dynjit "
                                  "runs on the CPU); register one with register_kernel('cpu')")
    return kernel


def _remove(custom):
    if _registry.get(custom._qualname) is custom._opdef:
        del _registry[custom._qualname]
    from .func import _batching
    if getattr(_batching._RULES.get(custom._qualname), "__self__", None) is custom:
        del _batching._RULES[custom._qualname]
    from . import ops
    namespace = ops.__dict__.get(custom._namespace)
    if getattr(namespace, "_dynjit_custom_namespace", False):
        if getattr(namespace, custom._name, None) is custom._opdef:
            delattr(namespace, custom._name)
        if not any(isinstance(v, CustomOpOverload) for v in vars(namespace).values()):
            delattr(ops, custom._namespace)
    if _custom_ops.get(custom._qualname) is custom:
        del _custom_ops[custom._qualname]


def _lookup(op):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, CustomOpOverload):
        return op.custom
    if isinstance(op, str):
        custom = _custom_ops.get(op)
        if custom is not None:
            return custom
        raise ValueError(f"{op!r}: no custom op of that name (define it with dynjit.library.custom_op)")
    raise TypeError(f"expected a custom op or its 'ns::name', got {type(op).__name__}")


def register_fake(op, fn=None, /, *, lib=None):
    """torch.library.register_fake: the shape function of the custom op `op` (a name or the op)."""
    return _lookup(op).register_fake(fn)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """torch.library.register_autograd."""
    return _lookup(op).register_autograd(backward, setup_context=setup_context)


def register_vmap(op, func=None, /, *, lib=None):
    """torch.library.register_vmap."""
    return _lookup(op).register_vmap(func)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """torch.library.register_kernel."""
    return _lookup(op).register_kernel(device_types, fn)


# -- libraries: scoping ------------------------------------------------------------------

_active_scopes = []


class Library:
    """torch.library.Library, for scoping: the custom ops defined in `ns` while it is alive
    are removed by `_destroy()` (what `_scoped_library` does on exit)."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        self.ns = ns
        self.kind = kind
        self._defined = []
        _active_scopes.append(self)

    def _destroy(self):
        for custom in self._defined:
            _remove(custom)
        self._defined = []
        if self in _active_scopes:
            _active_scopes.remove(self)


class _scoped_library:
    """`with _scoped_library(ns, kind) as lib:` the ops defined in `ns` inside are removed on exit."""

    def __init__(self, ns, kind, dispatch_key=""):
        self.lib = Library(ns, kind, dispatch_key)

    def __enter__(self):
        return self.lib

    def __exit__(self, *exc):
        self.lib._destroy()
        return False
