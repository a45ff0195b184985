"""Why tracing stopped: the reasons a construct cannot be traced."""
from ..exc import Unsupported


def unimplemented(msg):
    raise Unsupported(msg)


class DataDependent(Unsupported):
    """A Python decision depends on a tensor's values (a graph break point)."""


def fold(fn, *args, **kwargs):
    """Run a real Python operation on values known at trace time (constant folding).

    If it raises, that is the user's program raising, not a bug in dynjit: the trace
    stops there (a graph break), and the instruction runs natively and raises the very
    same exception, with the effects before it intact."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        raise Unsupported(f"{name}() raises {type(e).__name__} at trace time (it raises natively)") from e
