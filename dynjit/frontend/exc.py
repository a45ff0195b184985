"""Why tracing stopped: the reasons a construct cannot be traced."""
import contextlib
import threading
import warnings
from typing import NamedTuple

import numpy as np

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
    user_errstate = getattr(_floating_point, "user", None)
    # the program's own numpy arithmetic (np.float64(1) / 0) under the program's error state,
    # not the trace's quiet one: its warning (or FloatingPointError) makes it run natively
    fp = np.errstate(**user_errstate) if user_errstate is not None else contextlib.nullcontext()
    with trace_time_warnings() as caught, fp:
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            raise Unsupported(BreakKind.USER_EXCEPTION, f"{name}() raises {type(e).__name__} at trace time "
                              "(it raises natively)") from e
    refuse_warned(name, caught)
    return result


_floating_point = threading.local()     # .user: numpy's error state outside the trace


@contextlib.contextmanager
def quiet_floating_point():
    """numpy's floating-point error state for computing at compile time (the trace's example
    values, a backend tracing the graph): what would warn, print or log is silent, since the
    compiled code warns when it runs, as plain Python does; "raise" stays, so the trace
    stops where plain Python raises. `fold` computes the program's own operations under the
    state this replaced."""
    outer = getattr(_floating_point, "user", None)
    user = np.geterr()
    _floating_point.user = user if outer is None else outer
    try:
        with np.errstate(**{k: ("raise" if v == "raise" else "ignore") for k, v in user.items()}):
            yield
    finally:
        _floating_point.user = outer


@contextlib.contextmanager
def trace_time_warnings():
    """Catch the warnings a real operation gives while tracing. They are kept from the user
    and from the warnings registry ("always"), so the native run that replaces the operation
    gives them as plain Python would (also under a "default" or "once" filter, or "error")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def refuse_warned(name, caught):
    """An operation that warned at trace time runs natively: traced, it would warn once (or,
    compiled ahead of time, never), where plain Python warns on every call."""
    if caught:
        raise Unsupported(BreakKind.SIDE_EFFECT_CALL, f"{name}() warns ({caught[0].category.__name__}: "
                          f"{caught[0].message}) at trace time (it runs natively, warning on every call)")


class GraphBreak(NamedTuple):
    """One graph break as the user sees it (CompiledFunction.break_reasons, dynjit.explain)."""
    reason: str             # what was met, in the user's terms
    where: str              # file:line in the user's code
    kind: BreakKind
    hint: str               # what to do instead

    @classmethod
    def of(cls, exc, where):
        return cls(str(exc), where, exc.kind, exc.hint)
