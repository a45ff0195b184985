"""mark_dynamic / maybe_mark_dynamic / mark_static (torch._dynamo's): say, on a tensor, which
of its dimensions a compiled function should treat as dynamic (one compile for every size)
or static (guarded exactly), instead of leaving it to automatic dynamic.

The marks live on the tensor (`_dynjit_dims`: dim -> "dynamic", "maybe" or "static") and are
read when a trace wraps it as an input. A "dynamic" dimension that the code specializes (a
comparison, a size used where a number is needed) is an error naming the dimension, the
reason and the line, as torch's ConstraintViolationError: the promise cannot be kept."""
from ..exc import DynjitError


class ConstraintViolationError(DynjitError):
    """A dimension marked with mark_dynamic was specialized by the compiled code."""


def _dims(t, index):
    from ..tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_dynamic / mark_static expect a dynjit.Tensor, got {type(t).__name__}")
    dims = [index] if isinstance(index, int) else list(index)
    for d in dims:
        if not isinstance(d, int) or not -t.ndim <= d < t.ndim:
            raise IndexError(f"dimension {d!r} out of range for a tensor with {t.ndim} dimensions")
    return [d % t.ndim for d in dims]


def _mark(t, index, how):
    marks = dict(getattr(t, "_dynjit_dims", None) or {})
    for d in _dims(t, index):
        marks[d] = how
    t._dynjit_dims = marks


def mark_dynamic(t, index):
    """Compile for every size of dimension(s) `index` of `t`; specializing one is an error."""
    _mark(t, index, "dynamic")


def maybe_mark_dynamic(t, index):
    """Like mark_dynamic, but the code may specialize the dimension (then it is guarded)."""
    _mark(t, index, "maybe")


def mark_static(t, index):
    """Guard dimension(s) `index` of `t` exactly, even where automatic dynamic would not."""
    _mark(t, index, "static")


def marks_of(t):
    return getattr(t, "_dynjit_dims", None) or {}
