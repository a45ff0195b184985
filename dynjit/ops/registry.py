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
"""
import inspect

POINTWISE = "pointwise"
REDUCTION = "reduction"
VIEW = "view"
INPLACE = "inplace"
EXTERN = "extern"
FACTORY = "factory"
OTHER = "other"
KINDS = (POINTWISE, REDUCTION, VIEW, INPLACE, EXTERN, FACTORY, OTHER)

# dtype rules for pointwise ops
PROMOTE = "promote"          # PyTorch promotion of all operands
FLOAT = "float"              # promote, then integers/bool become the default float
BOOL = "bool"                # comparisons and logical ops
KEEP = "keep"                # dtype of the first tensor argument

registry = {}


class OpDef:
    """One registered op. Callable: calling it dispatches (like torch.ops.aten.x)."""

    def __init__(self, name, kernel, kind, dtype_rule=PROMOTE, tensor_lists=(),
                 differentiable=True, meta=None, aliases=(), nondiff_outputs=(), operands=None):
        if kind not in KINDS:
            raise ValueError(f"unknown op kind {kind!r}")
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
        self.derivative_fn = None
        self.saved = ()
        self.shape_params = ()
        self.saves_result = False
        self.backward_cls = None
        self.functional = None      # for in-place ops: the out-of-place op
        self.inplace = None         # for functional ops: the in-place variant
        self.aliases = tuple(aliases)
        self.impl = None            # set by dispatch: the eager entry
        self.aliases_input = False  # output shares storage and version counter with input 0

    def __repr__(self):
        return f"dynjit.ops.{self.name}"

    def __call__(self, *args, **kwargs):
        return _dispatch(self, args, kwargs)

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
        from ..autograd.graph import make_backward_class
        self.backward_cls = make_backward_class(self)
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


def _dispatch(op, args, kwargs):
    from .dispatch import dispatch
    return dispatch(op, args, kwargs)


def register(name, kind, **options):
    """Decorator: declare an op from its numpy kernel."""
    def deco(kernel):
        if name in registry:
            raise ValueError(f"op {name!r} registered twice")
        op = OpDef(name, kernel, kind, **options)
        registry[name] = op
        return op
    return deco


def get(name):
    try:
        return registry[name]
    except KeyError:
        raise AttributeError(f"dynjit has no op named {name!r}") from None
