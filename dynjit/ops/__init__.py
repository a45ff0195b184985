"""All of dynjit's ops, declared once in the registry (see registry.py).

Importing this package registers every op (with its in-place variant, where
it declares one). Ops are reachable as attributes: `dynjit.ops.add(x, y)`
dispatches like `x + y`.
"""
from .registry import registry, OpDef, register, INPLACE  # noqa: F401
from . import dispatch  # noqa: F401
from . import pointwise, reductions, shape, linalg, factories, nn, aliasing, conv  # noqa: F401  (registers ops)
from . import scatter_reduce, nextafter, memory_format, igamma, eigh, as_strided  # noqa: F401,E402  (registers ops)
from . import index_add, unfold  # noqa: F401,E402  (registers ops: index_add, Tensor.unfold)
from . import checks  # noqa: F401,E402  (registers ops: check_values)
from . import bincount  # noqa: F401,E402  (registers ops: bincount)
from . import sparse  # noqa: F401,E402  (registers the sparse COO ops)
from . import linalg_decomp, linalg_solve, linalg_lu  # noqa: F401,E402  (registers ops: torch.linalg's decompositions, solvers)



class OpNamespace:
    """A torch.ops namespace of functions that are not registry ops (`dynjit.ops.profiler`:
    the record-function entry points, put here by dynjit.autograd.profiler)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise AttributeError(f"dynjit.ops.{self._name} has no attribute {attr!r}")


profiler = OpNamespace("profiler")


def __getattr__(name):
    try:
        return registry[name]
    except KeyError:
        raise AttributeError(f"dynjit.ops has no op named {name!r}") from None
