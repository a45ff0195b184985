"""The one guard builder: every assumption a trace makes becomes a Python
expression over its source; all of a cache entry's guards are compiled into
one function with the compiled function's own signature."""
import enum
import re
from collections import defaultdict

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

    def dict_keys(self, source, value, object_keys=False):
        e = source.expr()
        kind = "dict" if type(value) is dict else self.k(type(value))
        if object_keys:     # identity: `==` on tensors is elementwise
            self.add(f"type({e}) is {kind} and len({e}) == {len(value)} and "
                     f"all(a is b for a, b in zip({e}, {self.k(list(value))}))")
        else:
            self.add(f"type({e}) is {kind} and list({e}) == {self.k(list(value))}")
        if isinstance(value, defaultdict):
            self.add(f"{e}.default_factory is {self.k(value.default_factory)}")

    def tensor(self, source, t):
        # placeholder, filled in at compile time: static or dynamic sizes
        self.add(("tensor", source, t))

    def _tensor_expr(self, source, t, dynamic):
        """The check as a call (readable, parsed for recompile reasons) and inlined (what runs:
        a guard checks many tensors, and a call each would cost more than the checks)."""
        cls, dtype = self.k(type(t)), self.k(t._data.dtype)
        e = source.expr()
        if dynamic:
            call = f"___check_tensor_dynamic({e}, {cls}, {dtype}, {t._data.ndim}, {t._requires_grad!r})"
            inline = (f"type(___t := {e}) is {cls} and (___a := ___t._data).dtype == {dtype} "
                      f"and ___a.ndim == {t._data.ndim} and ___t._requires_grad is {t._requires_grad!r}")
            return call, inline
        call = (f"___check_tensor({e}, {cls}, {dtype}, {t._data.shape!r}, {t._data.strides!r}, "
                f"{t._requires_grad!r})")
        inline = (f"type(___t := {e}) is {cls} and (___a := ___t._data).dtype == {dtype} "
                  f"and ___a.shape == {t._data.shape!r} and ___a.strides == {t._data.strides!r} "
                  f"and ___t._requires_grad is {t._requires_grad!r}")
        return call, inline

    def finalize(self):
        """Resolve tensor guards: dynamic sizes if asked for and the trace never read a size."""
        dynamic = self.output.dynamic and not self.output.shape_specialized
        resolved = [self._tensor_expr(e[1], e[2], dynamic) if isinstance(e, tuple) else (e, e)
                    for e in self.exprs]
        self.exprs = [call for call, _ in resolved]
        self._inlined = [inline for _, inline in resolved]
        return dynamic

    def grad_mode(self, enabled):
        self.add(f"___grad_state.enabled is {enabled!r}")

    def compile(self, signature, fn):
        self.finalize()
        body = " and ".join(f"({e})" for e in self._inlined) or "True"
        # constants become closure cells of the guard (a cell read is cheaper than K['c3'])
        names = sorted(set(re.findall(r"K\['(\w+)'\]", body)))
        body = re.sub(r"K\['(\w+)'\]", r"___k_\1", body)
        bind = "".join(f"    ___k_{n} = K[{n!r}]\n" for n in names)
        src = (f"def ___make_guard():\n{bind}"
               f"    def ___guard({signature}):\n"
               f"        try:\n            return {body}\n"
               f"        except Exception:\n            return False\n"
               f"    return ___guard\n")
        ns = self.namespace(fn)
        exec(compile(src, "<dynjit-guard>", "exec"), ns)
        guard = ns["___make_guard"]()
        guard.__defaults__ = fn.__defaults__
        guard.__kwdefaults__ = fn.__kwdefaults__
        guard.source = src
        guard.exprs = list(self.exprs)
        return guard

    def namespace(self, fn):
        return {"K": self.output.consts, "G": fn.__globals__, "___check_tensor": check_tensor,
                "___check_tensor_dynamic": check_tensor_dynamic, "___grad_state": _grad_state}

    def failure_reason(self, guard, args, kwargs):
        """The first guard that fails for these arguments, in the user's terms (recompile logs)."""
        import inspect
        ns = self.namespace(self.output.fn)
        try:
            bound = inspect.signature(self.output.fn, follow_wrapped=False).bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError as e:
            return GuardFailure(f"arguments do not bind: {e}")
        ns.update(bound.arguments)
        for e in self.exprs:
            try:
                if not eval(e, ns):
                    return self._explain_failure(e, ns)
            except Exception as err:
                return GuardFailure(f"{self._readable(e, ns)} (raised {type(err).__name__})")
        return None

    def _readable(self, expr, ns):
        """`expr` with the stashed constants K['c3'] written out."""
        def const(m):
            value = ns["K"][m.group(1)]
            text = value.__qualname__ if isinstance(value, type) else repr(value)
            return text if len(text) <= 60 else text[:57] + "..."
        return re.sub(r"K\['(\w+)'\]", const, expr)

    def _explain_failure(self, expr, ns):
        m = re.fullmatch(r"\(?___check_tensor(?:_dynamic)?\((.+?), K\['(\w+)'\], K\['(\w+)'\], (.*)\)\)?", expr)
        if not m:
            return GuardFailure(self._readable(expr, ns))
        source, rest = m.group(1), m.group(4)
        try:
            t = eval(source, ns)
        except Exception:
            return GuardFailure(self._readable(expr, ns), tensor=True)
        if not isinstance(t, Tensor):
            return GuardFailure(f"{source}: expected a tensor, got {type(t).__name__}", tensor=True)
        want_dtype = ns["K"][m.group(3)]
        parts = eval(f"({rest},)", {})
        got = []
        if t._data.dtype != want_dtype:
            got.append(f"dtype {t._data.dtype} (compiled for {want_dtype})")
        if len(parts) == 3:      # static: shape, byte strides, requires_grad
            shape, strides, requires_grad = parts
            if t._data.shape != shape:
                got.append(f"size {tuple(t._data.shape)} (compiled for {shape})")
            elif t._data.strides != strides:
                got.append(f"stride {t.stride()} (compiled for another layout)")
        else:
            ndim, requires_grad = parts
            if t._data.ndim != ndim:
                got.append(f"{t._data.ndim} dimensions (compiled for {ndim})")
        if t._requires_grad is not requires_grad:
            got.append(f"requires_grad={t._requires_grad} (compiled for {requires_grad})")
        return GuardFailure(f"{source}: " + ", ".join(got or ["tensor type changed"]), tensor=True)


class GuardFailure(str):
    """Why a cache entry's guard failed; `tensor` says a tensor's metadata changed."""

    def __new__(cls, text, tensor=False):
        self = super().__new__(cls, text)
        self.tensor = tensor
        return self


_ = Tensor
