"""All of dynjit's ops, declared once in the registry (see registry.py).

Importing this package registers every op, derives the in-place variants
(`add_` from `add`, ...) and installs the eager entry of each. Ops are
reachable as attributes: `dynjit.ops.add(x, y)` dispatches like `x + y`.
"""
from . import registry as _registry_mod
from .registry import registry, OpDef, register, INPLACE
from . import dispatch as _dispatch
from . import pointwise, reductions, shape, linalg, factories, nn, aliasing  # noqa: F401  (registers ops)

INPLACE_OF = (
    "add", "sub", "mul", "div", "div_mode", "pow", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "sign", "reciprocal", "square", "floor", "ceil", "trunc",
    "round", "frac", "clamp", "fmod", "remainder", "lerp", "masked_fill", "copy", "fill", "zero",
    "index_put", "scatter", "scatter_add", "exp2", "expm1", "log1p", "log2", "log10", "atan",
    "asin", "acos", "sinh", "cosh", "leaky_relu", "elu", "silu", "floor_divide", "tril", "triu",
    "logical_not", "bitwise_not", "erf", "gelu", "atan2", "addcmul", "addcdiv",
)


def _make_inplace(fop):
    op = OpDef(fop.name + "_", fop.kernel, INPLACE, tensor_lists=[fop.params[i] for i in fop.tensor_lists])
    op.functional = fop
    fop.inplace = op
    registry[op.name] = op
    return op


for _name in INPLACE_OF:
    _make_inplace(registry[_name])

for _op in registry.values():
    _dispatch.install(_op)


def __getattr__(name):
    try:
        return registry[name]
    except KeyError:
        raise AttributeError(f"dynjit.ops has no op named {name!r}") from None
