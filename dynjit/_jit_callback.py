"""The active JIT callback: set while a compiled frame runs code natively at
a graph break, so that the library's entry points (Module.__call__) compile
the frames they start — the job CPython's frame-evaluation hook does for
Dynamo. Kept free of imports: nn reads it on every module call."""
import threading

_state = threading.local()


def active():
    """The hook of the compiled frame running natively right now, or None.

    A hook maps a Python function to its compiled wrapper."""
    return getattr(_state, "hook", None)


def run_with(hook, fn, *args, **kwargs):
    """fn(*args, **kwargs) with `hook` active (nested calls restore the previous one)."""
    prev = getattr(_state, "hook", None)
    _state.hook = hook
    try:
        return fn(*args, **kwargs)
    finally:
        _state.hook = prev


def run_without(fn, *args, **kwargs):
    """fn(*args, **kwargs) with no hook active (code dynjit runs for itself)."""
    prev = getattr(_state, "hook", None)
    _state.hook = None
    try:
        return fn(*args, **kwargs)
    finally:
        _state.hook = prev
