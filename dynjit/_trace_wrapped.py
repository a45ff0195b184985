"""trace_wrapped(*args, fn=...): call `fn` opaquely. Run eagerly it is fn(*args); under
make_fx it records one `trace_wrapped` node that calls fn when the graph runs, instead of
tracing fn's ops (what a backward hook in a traced backward needs: the hook is the user's
code, kept whole)."""
import functools

from .ops import dispatch as _dispatch
from .tensor import Tensor


def trace_wrapped(*args, fn):
    tracer = _innermost_tracer()
    if tracer is None:
        return fn(*args)
    saved = list(_dispatch._modes)
    _dispatch._modes.clear()          # fn runs for real, untraced, to give the node its value
    try:
        result = fn(*args)
    finally:
        _dispatch._modes[:] = saved
    node = tracer.graph.call_function(_invoker(fn), tuple(tracer.to_arg(a) for a in args))
    tracer.record_result(node, result)
    return result


def _call_fn(*args, fn):
    return fn(*args)


# dynjit.compile traces fn itself (the whole point of a trace_wrapped hook is that a
# compiler of the traced backward sees the user's code)
trace_wrapped._dynjit_traced_as = _call_fn


def _innermost_tracer():
    from .fx.proxy_tensor import GraphTracer
    modes = _dispatch.current_modes()
    return modes[-1] if modes and isinstance(modes[-1], GraphTracer) else None


@functools.lru_cache(maxsize=None)
def _invoker(fn):
    def self_invoke(*args):
        return fn(*args)
    self_invoke.__name__ = "trace_wrapped"       # the node's name
    self_invoke.__qualname__ = "self_invoke"     # the call's name in the graph's code
    self_invoke._dynjit_trace_into = True        # dynjit.compile of the graph traces fn
    return self_invoke


_ = Tensor
