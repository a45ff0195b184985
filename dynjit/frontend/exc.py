"""Why tracing stopped: the reasons a construct cannot be traced."""
import warnings
from typing import NamedTuple

from ..exc import Unsupported, BreakKind


def unimplemented(kind, detail, hint=None):
    """Stop tracing here: a graph break of `kind` (a BreakKind), `detail` saying what was met."""
    raise Unsupported(kind, detail, hint)


def frame_runs_plain(kind, detail, hint=None):
    """Stop tracing with no graph break to take: the whole frame runs plain (what it does cannot
    be split into traced and native parts that agree)."""
    e = Unsupported(kind, detail, hint)
    e.frame_plain = True
    raise e


class DataDependent(Unsupported):
    """A Python decision or value depends on a tensor's values (a graph break point)."""


def fold(fn, *args, **kwargs):
    """Run a real Python operation on values known at trace time (constant folding).

    If it raises, that is the user's program raising, not a bug in dynjit: the trace
    stops there (a graph break), and the instruction runs natively and raises the very
    same exception, with the effects before it intact. If it warns, it is not folded either:
    a folded operation would warn once, at trace time, where plain Python warns on every call;
    natively it does."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    with warnings.catch_warnings(record=True) as caught:
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            raise Unsupported(BreakKind.USER_EXCEPTION, f"{name}() raises {type(e).__name__} at trace time "
                              "(it raises natively)") from e
    if caught:
        raise Unsupported(BreakKind.SIDE_EFFECT_CALL, f"{name}() warns ({caught[0].category.__name__}) at trace "
                          "time (it runs natively, warning on every call)")
    return result


class GraphBreak(NamedTuple):
    """One graph break as the user sees it (CompiledFunction.break_reasons, dynjit.explain)."""
    reason: str             # what was met, in the user's terms
    where: str              # file:line in the user's code
    kind: BreakKind
    hint: str               # what to do instead

    @classmethod
    def of(cls, exc, where):
        return cls(str(exc), where, exc.kind, exc.hint)
