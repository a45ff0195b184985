"""Differential harness for hand-written adversarial programs.

A program is Python source defining ``main(*args)`` and ``make_args(call)``
(fresh arguments for the call-th call; calls 0 and 1 get equal arguments, the
later ones other values or shapes, so guards and recompiles are exercised).
Each run execs the source into a fresh module, so globals, classes and
closures start the same for the plain run and for every compiled run. The
harness records, per call: the return value or the exception (type, message,
args, __cause__/__context__ types), printed output, warnings, the arguments
afterwards (mutation), the module's globals afterwards, the grad mode, and one
random draw afterwards (RNG state); and compares plain against
``dynjit.compile(main, backend=b)``.
"""
import contextlib
import io
import itertools
import linecache
import re
import sys
import types
import warnings
import weakref

import numpy as np

import dynjit

BACKENDS = ("eager", "aot_eager", "llvm")
_counter = itertools.count()


class Opaque:
    """A stand-in for a value compared by type only (functions, generators...)."""

    def __init__(self, what):
        self.what = what

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.what == self.what

    def __repr__(self):
        return f"<{self.what}>"


def normalize(v, memo=None, depth=0):
    """A comparable, plain-data picture of v (aliasing shown as back-references)."""
    if memo is None:
        memo = {}
    if depth > 12:
        return "<deep>"
    if isinstance(v, (bool, int, str, bytes, type(None))):
        return v
    if isinstance(v, float):
        return ("float", round(v, 5)) if v == v else ("float", "nan")
    if isinstance(v, complex):
        return ("complex", round(v.real, 5), round(v.imag, 5))
    if id(v) in memo:
        return ("ref", memo[id(v)][0])
    if isinstance(v, dynjit.Tensor):
        memo[id(v)] = (len(memo), v)   # v kept alive: its id stays unique
        arr = v.detach().numpy() if hasattr(v, "numpy") else np.asarray(v.tolist())
        vals = np.round(np.asarray(arr, dtype=np.float64), 4).tolist() if arr.dtype.kind in "fc" \
            else np.asarray(arr).tolist()
        readable = v.requires_grad and (v.is_leaf or getattr(v, "retains_grad", False))
        grad = normalize(v.grad, memo, depth + 1) if readable and v.grad is not None else None
        return ("T", str(v.dtype), tuple(v.shape), vals, bool(v.requires_grad), grad)
    if isinstance(v, np.ndarray):
        return ("nd", v.tolist())
    if isinstance(v, np.generic):
        return ("np", v.item())
    if isinstance(v, tuple):   # immutable: which tuple object it is is not observable behaviour
        return (type(v).__name__, [normalize(x, memo, depth + 1) for x in v])
    memo[id(v)] = (len(memo), v)   # v kept alive: its id stays unique
    if isinstance(v, list):
        return (type(v).__name__, [normalize(x, memo, depth + 1) for x in v])
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, sorted(repr(normalize(x, memo, depth + 1)) for x in v))
    if isinstance(v, dict):
        return (type(v).__name__, [(normalize(k, memo, depth + 1), normalize(x, memo, depth + 1))
                                   for k, x in v.items()])
    if isinstance(v, BaseException):
        return ("exc", type(v).__name__, str(v))
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        if isinstance(v, types.FunctionType) and not getattr(v, "__closure__", None) is None:
            return ("closure", v.__name__, normalize([c.cell_contents if _filled(c) else "<empty>"
                                                      for c in v.__closure__], memo, depth + 1))
        return Opaque("function " + getattr(v, "__name__", "?"))
    if isinstance(v, (types.GeneratorType, types.CoroutineType)):
        return Opaque("generator " + v.__name__ + " " + str(v.gi_frame is None))
    if isinstance(v, weakref.ref):
        return ("weakref", normalize(v(), memo, depth + 1))
    if type(v).__name__.endswith("iterator") and hasattr(v, "__reduce__"):
        try:   # a builtin iterator: where it stands (its __reduce__), not its address
            red = v.__reduce__()
        except Exception:  # noqa: BLE001
            red = None
        if red is not None:
            return ("iter", type(v).__name__, normalize(red[1:], memo, depth + 1))
    if isinstance(v, (types.ModuleType, type)):
        return Opaque(repr(v)) if isinstance(v, types.ModuleType) else Opaque("type " + v.__name__)
    if isinstance(v, dynjit.nn.Module):
        state = {k: x for k, x in vars(v).items() if not k.startswith("_") or k in ("_buffers", "_parameters")}
        return ("module", type(v).__name__, normalize(state, memo, depth + 1), v.training)
    d = getattr(v, "__dict__", None)
    slots = [s for c in type(v).__mro__ for s in getattr(c, "__slots__", ()) if isinstance(s, str)]
    if d is not None or slots:
        state = {k: x for k, x in (d or {}).items() if not k.startswith("__")}
        for s in slots:
            if hasattr(v, s) and s != "__dict__":
                state[s] = getattr(v, s)
        return ("obj", type(v).__name__, normalize(state, memo, depth + 1))
    return ("repr", type(v).__name__, re.sub(r" at 0x[0-9a-f]+", "", repr(v)))


def _filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _exc_picture(e):
    return ("raised", type(e).__name__, str(e), normalize(getattr(e, "args", ())),
            type(e.__cause__).__name__ if e.__cause__ is not None else None,
            type(e.__context__).__name__ if e.__context__ is not None else None,
            e.__suppress_context__)


def _globals_picture(ns, before):
    out = {}
    for k, v in ns.items():
        if k.startswith("_") or k in ("main", "make_args", "dynjit", "np"):
            continue
        if isinstance(v, (types.ModuleType, type, types.FunctionType)) and k in before:
            continue
        out[k] = v
    return normalize(out)


def load(src, tag):
    name = f"adv_prog_{tag}_{next(_counter)}"
    filename = f"<{name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    exec(compile(src, filename, "exec"), mod.__dict__)
    return mod


def run_program(src, backend=None, calls=3, tag="p"):
    """Runs main(*make_args(i)) for i < calls; returns the list of per-call records."""
    mod = load(src, tag)
    ns = mod.__dict__
    before = set(ns)
    fn = ns["main"] if backend is None else dynjit.compile(ns["main"], backend=backend)
    records = []
    try:
        for i in range(calls):
            dynjit.manual_seed(1234 + i)
            dynjit.set_grad_enabled(True)
            args = ns["make_args"](i)
            out = io.StringIO()
            with warnings.catch_warnings(record=True) as wlist, contextlib.redirect_stdout(out):
                warnings.simplefilter("always")
                returned = None
                try:
                    returned = fn(*args)
                    res = ("returned",)
                except Exception as e:  # noqa: BLE001 - the exception is the observable
                    res = _exc_picture(e)
            # one picture of the arguments and the result, so a result that is (or views into) an
            # argument, or two results that are one object, show as back-references
            args_pic, ret_pic = normalize((list(args), returned))[1]
            if res[0] == "returned":
                res = ("returned", ret_pic)
            records.append({
                "call": i,
                "result": res,
                "stdout": out.getvalue(),
                # dynjit's own notices (a frame hit the recompile limit and now runs plain) are
                # not the program's behaviour
                "warnings": [(w.category.__name__, str(w.message)) for w in wlist
                             if not str(w.message).startswith("dynjit:")],
                "args": args_pic,
                "globals": _globals_picture(ns, before),
                "grad_mode": dynjit.is_grad_enabled(),
                "rng_after": normalize(dynjit.rand(2)),
            })
            dynjit.set_grad_enabled(True)
    finally:
        sys.modules.pop(mod.__name__, None)
    return records


def first_difference(want, got):
    for w, g in zip(want, got):
        for k in w:
            if w[k] != g[k]:
                return f"call {w['call']} {k}:\n  plain:    {w[k]!r}\n  compiled: {g[k]!r}"
    return None


def cases(programs, xfail, slow=()):
    """pytest params, one per program; those named in xfail are strict xfails with that reason
    (a value (reason, condition) makes it an xfail only where condition is true, e.g. one Python);
    those named in slow (over two seconds for the three backends) run only with -m slow."""
    import pytest
    out = []
    for name in sorted(programs):
        marks = [pytest.mark.slow] if name in slow else []
        reason, condition = xfail[name] if isinstance(xfail.get(name), tuple) else (xfail.get(name), True)
        if reason is not None and condition:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        out.append(pytest.param(name, marks=marks) if marks else name)
    return out


def check_program(src, backends=BACKENDS, calls=3):
    """Asserts every backend's compiled run records the same as the plain run."""
    want = run_program(src, None, calls)
    for b in backends:
        dynjit.reset()
        try:
            got = run_program(src, b, calls)
        finally:
            dynjit.reset()
        diff = first_difference(want, got)
        assert diff is None, f"backend {b}: {diff}"
