"""The one guard builder: every assumption a trace makes becomes a Python
expression over its source; all of a cache entry's guards are compiled into
one function with the compiled function's own signature."""
import enum

from .. import _dtype
from ..autograd.grad_mode import state as _grad_state
from ..tensor import Tensor


def check_tensor(t, cls, np_dtype, shape, strides, requires_grad):
    return (type(t) is cls and t._data.dtype == np_dtype and t._data.shape == shape
            and t._data.strides == strides and t._requires_grad is requires_grad)


def check_tensor_dynamic(t, cls, np_dtype, ndim, requires_grad):
    """The guard of a tensor whose sizes are dynamic: only type, dtype, rank and requires_grad."""
    return (type(t) is cls and t._data.dtype == np_dtype and t._data.ndim == ndim
            and t._requires_grad is requires_grad)


class GuardBuilder:
    def __init__(self, output):
        self.output = output
        self.exprs = []
        self._seen = set()

    def add(self, expr):
        key = expr if isinstance(expr, str) else ("tensor", expr[1].expr())
        if key not in self._seen:
            self._seen.add(key)
            self.exprs.append(expr)

    def k(self, value):
        return f"K[{self.output.stash(value)!r}]"

    def type(self, source, value):
        self.add(f"type({source.expr()}) is {self.k(type(value))}")

    def identity(self, source, value):
        self.add(f"{source.expr()} is {self.k(value)}")

    def constant(self, source, value):
        e = source.expr()
        if value is None or isinstance(value, (bool, _dtype.dtype, enum.Enum)) or value is Ellipsis \
                or value is NotImplemented:
            self.add(f"{e} is {self.k(value)}")
        elif isinstance(value, float) and value != value:
            self.add(f"type({e}) is float and {e} != {e}")
        else:
            self.add(f"type({e}) is {self.k(type(value))} and {e} == {self.k(value)}")

    def type_and_len(self, source, value):
        e = source.expr()
        self.add(f"type({e}) is {self.k(type(value))} and len({e}) == {len(value)}")

    def dict_keys(self, source, value):
        e = source.expr()
        kind = "dict" if type(value) is dict else self.k(type(value))
        self.add(f"type({e}) is {kind} and list({e}) == {self.k(list(value))}")

    def tensor(self, source, t):
        # placeholder, filled in at compile time: static or dynamic sizes
        self.add(("tensor", source, t))

    def _tensor_expr(self, source, t, dynamic):
        if dynamic:
            return (f"___check_tensor_dynamic({source.expr()}, {self.k(type(t))}, {self.k(t._data.dtype)}, "
                    f"{t._data.ndim}, {t._requires_grad!r})")
        return (f"___check_tensor({source.expr()}, {self.k(type(t))}, {self.k(t._data.dtype)}, "
                f"{t._data.shape!r}, {t._data.strides!r}, {t._requires_grad!r})")

    def finalize(self):
        """Resolve tensor guards: dynamic sizes if asked for and the trace never read a size."""
        dynamic = self.output.dynamic and not self.output.shape_specialized
        self.exprs = [self._tensor_expr(e[1], e[2], dynamic) if isinstance(e, tuple) else e
                      for e in self.exprs]
        return dynamic

    def grad_mode(self, enabled):
        self.add(f"___grad_state.enabled is {enabled!r}")

    def compile(self, signature, fn):
        self.finalize()
        body = " and ".join(f"({e})" for e in self.exprs) or "True"
        src = (f"def ___guard({signature}):\n"
               f"    try:\n        return {body}\n"
               f"    except Exception:\n        return False\n")
        ns = self.namespace(fn)
        exec(compile(src, "<dynjit-guard>", "exec"), ns)
        guard = ns["___guard"]
        guard.__defaults__ = fn.__defaults__
        guard.__kwdefaults__ = fn.__kwdefaults__
        guard.source = src
        guard.exprs = list(self.exprs)
        return guard

    def namespace(self, fn):
        return {"K": self.output.consts, "G": fn.__globals__, "___check_tensor": check_tensor,
                "___check_tensor_dynamic": check_tensor_dynamic, "___grad_state": _grad_state}

    def failure_reason(self, guard, args, kwargs):
        """The first guard expression that is false for these arguments (for recompile logs)."""
        import inspect
        ns = self.namespace(self.output.fn)
        try:
            bound = inspect.signature(self.output.fn).bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError as e:
            return f"arguments do not bind: {e}"
        ns.update(bound.arguments)
        for e in self.exprs:
            try:
                if not eval(e, ns):
                    return e
            except Exception as err:
                return f"{e} (raised {type(err).__name__})"
        return None


_ = Tensor
