"""All of dynjit's ops, declared once in the registry (see registry.py).

Importing this package registers every op (with its in-place variant, where
it declares one). Ops are reachable as attributes: `dynjit.ops.add(x, y)`
dispatches like `x + y`.
"""
from .registry import registry, OpDef, register, INPLACE  # noqa: F401
from . import dispatch  # noqa: F401
from . import pointwise, reductions, shape, linalg, factories, nn, aliasing, conv  # noqa: F401  (registers ops)
from . import scatter_reduce, nextafter  # noqa: F401,E402  (registers ops)
from . import index_add, unfold  # noqa: F401,E402  (registers ops: index_add, Tensor.unfold)


def __getattr__(name):
    try:
        return registry[name]
    except KeyError:
        raise AttributeError(f"dynjit.ops has no op named {name!r}") from None
