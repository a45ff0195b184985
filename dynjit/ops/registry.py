"""The one op registry: every tensor operation is declared here exactly once.

An `OpDef` carries the op's eager numpy kernel, its meta function (output
shape and dtype without computing), its derivative (written with registered
ops, so backward can itself be traced and differentiated), and its kind.
Eager execution, autograd, graph tracing, AOT and the llvm backend all read
this table.

Declaring an op::

    @register("mul", kind=POINTWISE)
    def mul(self, other):               # the kernel, on numpy values
        return np.multiply(self, other)

    @mul.derivative
    def _(grad, self, other):           # parameters name what is saved
        return grad * other, grad * self

The derivative's parameters after the first name what backward needs: op
parameters by name, `result` for the output, or `<param>_shape` for just a tensor's shape (nothing saved), or `needs` for a tuple saying,
per op parameter, whether a gradient is wanted for it. Only those are saved (and
version-checked), exactly like PyTorch's derivatives.yaml.

Everything else that is true of an op is declared here too, once, as
PyTorch's native_functions.yaml does, and every layer derives what it needs
from it (no layer keeps its own list of op names)::

    @register("add", POINTWISE, variants="function, method", inplace=True,
              wraps_scalar="other")

- `variants`: which public entries are generated from the op: "function"
  (`dynjit.add`, see dynjit/functional.py), "method" (`Tensor.add`, see
  dynjit/_methods.py). A generated entry may be refined there by hand (an
  overload choice, extra keyword arguments); an op with no variant is
  internal (reachable as `dynjit.ops.<name>`).
- `inplace=True`: the op has an in-place variant `<name>_` (kind INPLACE, a
  Tensor method) that runs the op and writes the result into `self`;
  `op.inplace` and `op.inplace.functional` link the pair.
- `tags`: facts that passes read (TAGS below): RANDOM, NONE_DIM_REDUCES_ALL, COMPUTE_BOUND,
  BATCHED_MATRICES (vmap batches the op by aligning its arguments' leading dims).
- `varargs`: the list parameter that the method also takes spread out
  (`x.view(2, 3)` for `x.view((2, 3))`).
- `wraps_scalar`: the parameter that PyTorch's schema types `Tensor` and that
  wraps a Python number passed there (`add.Tensor`): its autograd node lists
  a None edge for the number.
- `dim_overload`: the op that takes the `dim` this full reduction lacks
  (`max` -> `max_dim`).
- `inplace_views`: names of the Tensor methods that apply this view op in
  place, as a metadata change (`transpose` -> `transpose_`, `swapdims_`, ...;
  see metadata.py).
- `aliases_input=True`: the output shares storage and version counter with
  input 0 without being a view (`detach`).
- `complex_ok`: the op takes complex tensors (views, factories, matmul-like and
  in-place ops do by default: an in-place op follows its functional op); an op
  that does not raises PyTorch's error for them, `complex_error` (a message, or a
  function of the dtype returning the exception) when it is not the default
  '"<op>_cpu" not implemented for 'ComplexFloat''.
- `operand_check`: for a pointwise op, a function of the kernel's arguments
  that raises the errors depending on the operands' own dtypes; the dispatcher
  calls it before it converts the operands to the computation dtype (addcdiv:
  integer tensor1 and tensor2 are an error even with a float self).
- `scalar_args`: for a pointwise op, the operands that PyTorch's schema types
  `Scalar` (clamp's bounds, pow's exponent): a Python int there that the integer
  computation dtype cannot hold is an error; at the other operands it wraps into the
  dtype, as PyTorch's wrapped numbers do (see int_scalars.py).
"""
import inspect

from .dispatch import dispatch, install, _modes
from .vocab import (POINTWISE, REDUCTION, VIEW, INPLACE, EXTERN, FACTORY, OTHER, KINDS,  # noqa: F401
                    PROMOTE, FLOAT, BOOL, KEEP, REAL, REAL_FLOAT, FUNCTION, METHOD, VARIANTS, RANDOM,
                    NONE_DIM_REDUCES_ALL, COMPUTE_BOUND, AUTOCAST_LOWER_PRECISION, AUTOCAST_FP32,
                    BATCHED_MATRICES, TAGS)

registry = {}


class OpDef:
    """One registered op. Callable: calling it dispatches (like torch.ops.aten.x)."""
    # What the op does with sparse operands (ops/sparse.py): None refuses them with PyTorch's
    # error, the op itself takes them, another op (same parameters) runs in its place.
    sparse = None
    takes_compressed = False    # ... and whether that kernel also takes the compressed layouts (CSR, ...)

    def __init__(self, name, kernel, kind, dtype_rule=PROMOTE, tensor_lists=(),
                 differentiable=True, meta=None, nondiff_outputs=(), operands=None, variants="",
                 tags=(), varargs=None, wraps_scalar=None, dim_overload=None, inplace_views=(),
                 aliases_input=False, operand_check=None, complex_ok=None, complex_error=None,
                 scalar_args=()):
        if kind not in KINDS:
            raise ValueError(f"unknown op kind {kind!r}")
        if isinstance(variants, str):
            variants = [v.strip() for v in variants.split(",") if v.strip()]
        for v in variants:
            if v not in VARIANTS:
                raise ValueError(f"op {name!r}: unknown variant {v!r} (variants are {', '.join(VARIANTS)})")
        for t in tags:
            if t not in TAGS:
                raise ValueError(f"op {name!r}: unknown tag {t!r} (tags are {', '.join(TAGS)})")
        self.variants = frozenset(variants)
        self.tags = frozenset(tags)
        self.dim_overload = dim_overload
        self.inplace_views = tuple(inplace_views)
        self.name = name
        self.kernel = kernel
        self.kind = kind
        self.dtype_rule = dtype_rule
        self.differentiable = differentiable
        self._meta = meta
        self.nondiff_outputs = tuple(nondiff_outputs)
        sig = inspect.signature(kernel)
        self.params = tuple(sig.parameters)
        self.nparams = len(self.params)
        self.defaults = tuple(p.default for p in sig.parameters.values())
        self.required = sum(1 for d in self.defaults if d is inspect.Parameter.empty)
        self.index = {n: i for i, n in enumerate(self.params)}
        self.tensor_lists = tuple(self.index[n] for n in tensor_lists)
        # the parameters that take part in dtype promotion (default: the required ones)
        if operands is None:
            operands = [n for n, d in zip(self.params, self.defaults) if d is inspect.Parameter.empty]
        self.operands = tuple(self.index[n] for n in operands)
        for p in (varargs, wraps_scalar):
            if p is not None and p not in self.index:
                raise ValueError(f"op {name!r}: {p!r} is not a parameter")
        self.varargs = varargs
        self.wraps_scalar = wraps_scalar
        self.derivative_fn = None
        self.jvp_fn = None          # forward-mode rule (see `jvp`); None: derived from `derivative`
        self.saved = ()
        self.shape_params = ()
        self.saves_result = False
        self.backward_cls = None
        self.functional = None      # for in-place ops: the out-of-place op
        self.inplace = None         # for functional ops: the in-place variant
        self.impl = None            # the eager entry (dispatch.install, when registered)
        self.aliases_input = aliases_input  # output shares storage and version counter with input 0
        # pointwise ops: a check of the operands as given (before the dispatcher converts them
        # to the computation dtype), for errors that depend on the operands' own dtypes
        self.operand_check = operand_check
        for p in scalar_args:
            if p not in self.index:
                raise ValueError(f"op {name!r}: scalar_args names {p!r}, which is not a parameter")
        self.scalar_args = frozenset(scalar_args)   # operands typed Scalar: ints are checked, not wrapped
        # complex tensors: views, factories and matmul-like ops take them; other ops declare
        # complex_ok=True, or refuse them with PyTorch's error (complex_error: a message or a
        # function of the dtype giving the exception; default '"<op>_cpu" not implemented')
        self.complex_ok = complex_ok if complex_ok is not None else kind in (VIEW, FACTORY, EXTERN, INPLACE)
        self.complex_error = complex_error

    def __repr__(self):
        return f"dynjit.ops.{self.name}"

    def __call__(self, *args, **kwargs):
        if _modes.items:            # (dispatch's own test, saving a call when no mode is active)
            return dispatch(self, args, kwargs)
        return self.impl(self, args, kwargs)

    # -- declaration helpers -------------------------------------------------
    def derivative(self, fn):
        params = list(inspect.signature(fn).parameters)[1:]
        for p in params:
            if p.endswith("_shape") and p[:-6] in self.index:
                continue
            if p not in ("result", "needs") and p not in self.index:
                raise TypeError(f"derivative of {self.name} names {p!r}, which is not a parameter")
        self.saved = tuple(self.index[p] for p in params if p in self.index)
        self.shape_params = tuple((p, self.index[p[:-6]]) for p in params
                                  if p.endswith("_shape") and p[:-6] in self.index)
        self.saves_result = "result" in params
        self.derivative_params = tuple(params)
        self.derivative_fn = fn
        if _backward_class_factory is not None:
            self.backward_cls = _backward_class_factory(self)
        return fn

    def jvp(self, fn):
        """Declare the op's forward-mode rule: `fn(tangents, result, *args)` gets, per op
        parameter, the input's tangent (None where it has none, a list for tensor-list
        parameters), the op's output and its arguments, and returns the output's tangent
        (one per output for several; None for a zero or non-differentiable one), written with
        registered ops. Ops without one get the linearization of their `derivative`
        (dynjit.autograd.forward_ad), views the same view of the tangent."""
        self.jvp_fn = fn
        return fn

    def meta_fn(self, fn):
        self._meta = fn
        return fn

    def meta(self, args, kwargs=None):
        """Output (shape, dtype), or a list of them, from input shapes and dtypes (see meta.py)."""
        from .meta import run_meta
        return run_meta(self, args, kwargs)

    def normalize(self, args, kwargs):
        """Full positional argument tuple, defaults filled in."""
        n = len(args)
        if not kwargs:
            if n == self.nparams:
                return args
            if self.required <= n < self.nparams:
                return args + self.defaults[n:]
        if n > self.nparams:
            raise TypeError(f"{self.name}() takes at most {self.nparams} arguments ({n} given)")
        out = list(args) + list(self.defaults[n:])
        for k, v in kwargs.items():
            i = self.index.get(k)
            if i is None:
                raise TypeError(f"{self.name}() got an unexpected keyword argument {k!r}; "
                                f"it takes {', '.join(self.params)}")
            if i < n:
                raise TypeError(f"{self.name}() got multiple values for argument {k!r}")
            out[i] = v
        for i, v in enumerate(out):
            if v is inspect.Parameter.empty:
                raise TypeError(f"{self.name}() missing required argument {self.params[i]!r}")
        return tuple(out)


# How an op with a derivative gets its backward-node class: autograd's
# make_backward_class, handed in from above (dispatch.install_autograd).
_backward_class_factory = None


def set_backward_class_factory(factory):
    """Give every op with a derivative its backward-node class `factory(op)`, now and at
    each later `derivative` declaration."""
    global _backward_class_factory
    _backward_class_factory = factory
    for op in registry.values():
        if op.derivative_fn is not None:
            op.backward_cls = factory(op)


def register(name, kind, *, inplace=False, **options):
    """Decorator: declare an op from its numpy kernel (and, with inplace=True, its
    in-place variant `<name>_`)."""
    def deco(kernel):
        op = _add(OpDef(name, kernel, kind, **options))
        if inplace:
            ip = _add(OpDef(name + "_", kernel, INPLACE, variants=(METHOD,),
                            tensor_lists=[op.params[i] for i in op.tensor_lists]))
            ip.functional = op
            op.inplace = ip
        return op
    return deco


def _add(op):
    if op.name in registry:
        raise ValueError(f"op {op.name!r} registered twice")
    registry[op.name] = op
    install(op)
    return op


def linear_jvp(op):
    """The JVP rule of an op linear in its first argument: the op applied to the tangent
    (sum, cat's list, clone, gather, ...)."""
    def rule(tangents, result, first, *rest):
        t = tangents[0]
        if t is None:
            return None
        if isinstance(t, list):      # a tensor list: zeros stand for the tensors without one
            t = [x if x is not None else registry["zeros"](tuple(a._data.shape), a.dtype)
                 for x, a in zip(t, first)]
        return op(t, *rest)
    return rule


def bilinear_jvp(op):
    """The JVP rule of an op bilinear in its first two arguments (matmul, mm, dot, ...):
    op(t_a, b) + op(a, t_b)."""
    def rule(tangents, result, a, b, *rest):
        ta, tb = tangents[0], tangents[1]
        left = op(ta, b, *rest) if ta is not None else None
        right = op(a, tb, *rest) if tb is not None else None
        if left is None or right is None:
            return left if right is None else right
        return registry["add"](left, right)
    return rule


def with_variant(variant):
    """The names of the ops that declare `variant` (FUNCTION or METHOD), in registry order."""
    return tuple(n for n, op in registry.items() if variant in op.variants)


def with_tag(tag):
    """The names of the ops that carry `tag`."""
    return frozenset(n for n, op in registry.items() if tag in op.tags)


def get(name):
    try:
        return registry[name]
    except KeyError:
        raise AttributeError(f"dynjit has no op named {name!r}") from None
