"""The entry points: `compile`, `optimize`, `optimize_assert`, `disable`, `reset`.

A compiled function keeps a cache of (guard, transformed function) entries;
a call runs the first entry whose guard accepts the arguments, otherwise it
converts the call (traces, compiles, generates a new entry). Past
`config.cache_size_limit` entries the function runs eagerly with one warning.
When the translator meets something it cannot trace, the call runs as plain
Python (so compiled always equals eager), the reason is counted in
`dynjit.utils.counters["graph_break"]`, and with `fullgraph=True` it is
raised as `dynjit.exc.Unsupported` naming the construct and the user's line.
"""
import functools
import inspect
import logging
import sys
import threading
import types
import warnings
import weakref

from .. import _jit_callback, config
from ..ops.dispatch import _modes as _dispatch_modes
from ..exc import Unsupported, InternalError, DynjitError
from ..utils import counters, call_when_freed
from . import resume, tracebacks
from .bytecode_info import check_python_version
from .convert_frame import convert, location
from .exc import GraphBreak
from .guards import module_hooks_present, failure_reason, GuardFailure
from .variables.symbolic import ALL_SOURCES

recompiles_log = logging.getLogger("dynjit.recompiles")
breaks_log = logging.getLogger("dynjit.graph_breaks")
guards_log = logging.getLogger("dynjit.guards")
internal_log = logging.getLogger("dynjit.internal_errors")
dynamic_log = logging.getLogger("dynjit.dynamic")

_all_compiled = weakref.WeakSet()
_recorders = []      # explain() sessions collecting the CompiledFunctions a call creates

_LIMIT_REASON = "cache_size_limit reached"
_hook_state = _jit_callback._state
_PLAIN = object()           # _lookup_or_compile: call the function plain (arguments do not bind)
_PLAIN_HOOKED = object()    # ... run it uncompiled, nested frames through the hook
_NESTED_ATTR = "__dynjit_nested__"   # on a function: {owner CompiledFunction (weak): its wrapper}


class CompiledFunction:
    """What `dynjit.compile(fn)` returns: call it like fn."""

    def __init__(self, fn, backend, fullgraph, dynamic):
        if isinstance(fn, types.MethodType):
            self._bound_self = fn.__self__
            fn = fn.__func__
        else:
            self._bound_self = None
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"dynjit.compile expects a Python function, method or nn.Module, "
                            f"got {type(fn).__name__}")
        self._fn = fn
        self._backend = backend
        self._fullgraph = fullgraph
        self._dynamic = dynamic
        # a tuple, replaced (never mutated) when an entry is added or dropped: a call iterates
        # the one it read, so it never sees a half-built entry
        self.entries = ()
        self.eager_reason = None
        self._warned_limit = False
        self._auto_dynamic = False
        self._dynamic_scalars = set()   # numbers whose value changed (source expressions): symbolic
        self._lock = threading.RLock()      # one compile at a time per compiled function
        self._died_unused = 0               # entries freed before any call reused them
        self._deaths = []                   # why entries were dropped since the last compile
        self._last_hit = 0                  # index of the entry the last cached call ran
        functools.update_wrapper(self, fn)
        self.__dict__.pop(_NESTED_ATTR, None)
        _all_compiled.add(self)
        if _recorders:
            _recorders[-1].append(self)
        _watch_code(fn)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args, **kwargs):
        if self._bound_self is not None:
            args = (self._bound_self,) + args
        if _dispatch_modes.items and _transforming_mode_active():
            # under vmap, a forward-AD level or make_fx every op must reach the mode; a compiled
            # graph's kernels (llvm) would bypass it: the function runs as written
            return self._fn(*args, **kwargs)
        try:
            entries = self.entries
            # the entry the last call ran is tried first (a training step's second entry, made
            # once every .grad exists, would otherwise fail the first entry's guard every step)
            last = self._last_hit
            if last < len(entries):
                entry = entries[last]
                try:
                    hit = entry.guard(*args, **kwargs)
                except Exception as e:
                    guard_error, hit = e, None
                if hit is None:         # outside the handler: Python's own error has no context
                    return self._guard_raised(guard_error, args, kwargs)
                if hit:
                    return entry.transformed(*args, **kwargs)
            for k, entry in enumerate(entries):
                if k == last:
                    continue
                try:
                    hit = entry.guard(*args, **kwargs)
                except Exception as e:
                    guard_error = e
                    break
                if hit:
                    self._last_hit = k
                    return entry.transformed(*args, **kwargs)
            else:
                reason = self.eager_reason
                if reason is None or reason == _LIMIT_REASON and (
                        len(self.entries) + self._died_unused < config.cache_size_limit):
                    return self._miss(args, kwargs)
                # runs uncompiled, nested frames through the hook; inline (not run_with): a
                # frame less per level of a recursive function
                state = _hook_state
                prev = getattr(state, "hook", None)
                state.hook = self._hook
                try:
                    return self._fn(*args, **kwargs)
                finally:
                    state.hook = prev
            return self._guard_raised(guard_error, args, kwargs)
        except BaseException as e:
            raise tracebacks.strip(e)

    def _guard_raised(self, err, args, kwargs):
        """A guard that raises: arguments the function does not accept (then the plain call
        raises Python's own TypeError) or a bug in dynjit's guard (an internal error)."""
        if not _accepts(self._fn, args, kwargs):
            return self._fn(*args, **kwargs)
        with self._lock:
            self._internal_error(err, stacklevel=4)
        return _jit_callback.run_with(self._hook, self._fn, *args, **kwargs)

    def _miss(self, args, kwargs):
        # compiling holds this function's lock; what the call then runs runs outside it
        with self._lock:
            entry = self._lookup_or_compile(args, kwargs)
        if entry is _PLAIN_HOOKED:
            return _jit_callback.run_with(self._hook, self._fn, *args, **kwargs)
        if entry is _PLAIN:
            return self._fn(*args, **kwargs)      # raises Python's own TypeError
        if isinstance(entry, _New):
            return entry.entry.first_transformed(*args, **kwargs)
        return entry.transformed(*args, **kwargs)

    def _lookup_or_compile(self, args, kwargs):
        """(Holding the lock) the entry for these arguments, compiled if none accepts them, or
        _PLAIN / _PLAIN_HOOKED."""
        fn = self._fn
        # another thread may have compiled an entry for these arguments while this one waited
        entries = [e for e in self.entries if not e.guard.life.dead]
        # entries freed unused (compiled for an object made anew each call) count as cached:
        # a function that needs a compile per call runs uncompiled past the limit, as before
        cached = len(entries) + self._died_unused
        for entry in entries:
            try:
                if entry.guard(*args, **kwargs):
                    return entry
            except Exception:
                pass
        if self.eager_reason is not None:
            if self.eager_reason == _LIMIT_REASON and cached < config.cache_size_limit:
                self.eager_reason = None          # the limit was raised (or entries died)
                self._warned_limit = False
            else:
                return _PLAIN_HOOKED
        deaths, self._deaths = self._deaths, []
        if entries or deaths:
            if entries:
                reason = failure_reason(entries[-1].guard, fn, args, kwargs) or "unknown"
            else:
                reason = GuardFailure(deaths[-1])
            if self._dynamic is None and getattr(reason, "tensor", False):
                self._auto_dynamic = True     # a size changed: compile for dynamic sizes next
            new = [s for s in getattr(reason, "scalars", ()) if s not in self._dynamic_scalars]
            if self._dynamic is None and new:
                self._dynamic_scalars.update(new)     # numbers that changed: symbolic from now on
                where = "" if _takes_scalars(self._backend) else (
                    " (Python arithmetic only: this backend takes tensor inputs, so a number a tensor "
                    "op uses stays a constant)")
                reason = GuardFailure(f"{reason}; now dynamic: {', '.join(new)}{where}", scalar=reason.scalar)
                dynamic_log.debug("%s: dynamic numbers %s", fn.__qualname__, ", ".join(new))
            counters["recompiles"][fn.__qualname__] += 1
            recompiles_log.debug("Recompiling function %s: guard failed: %s", fn.__qualname__, reason)
            self.recompile_reasons.append(reason)
            if cached >= config.cache_size_limit:
                if not self._warned_limit:
                    warnings.warn(f"dynjit: {fn.__qualname__} hit config.cache_size_limit "
                                  f"({config.cache_size_limit}) recompiles; last reason: {reason}. It "
                                  "now runs without compiling.", stacklevel=4)
                    self._warned_limit = True
                self.eager_reason = _LIMIT_REASON
                return _PLAIN_HOOKED
        if not _accepts(fn, args, kwargs):
            return _PLAIN
        _sweep_code_cache()
        try:
            dynamic = self._dynamic is True or (self._dynamic is None and self._auto_dynamic)
            scalars = ALL_SOURCES if self._dynamic is True else self._dynamic_scalars if self._dynamic is None else ()
            entry = convert(fn, args, kwargs, self._backend, self._fullgraph, self._hook, dynamic, scalars)
        except Unsupported as e:
            brk = self._record_break(e)
            if self._fullgraph:
                raise Unsupported(e.kind, f"{brk.reason}\n  in {fn.__qualname__} at {brk.where}\n"
                                  f"  hint: {brk.hint}\n"
                                  "(fullgraph=True: the whole function must compile to one graph)",
                                  e.hint) from None
            self.eager_reason = brk.reason
            return _PLAIN_HOOKED
        except DynjitError:         # dynjit's own errors for the user (a backend that failed, ...)
            raise
        except Exception as e:      # a bug in dynjit, not something the user wrote
            self._internal_error(e, stacklevel=5)
            return _PLAIN_HOOKED
        guards_log.debug("Guards for %s:\n%s", fn.__qualname__, entry.guard.source)
        if entry.break_reason is not None:
            self._record_break(entry.break_reason)
        if not self._add(entry):
            return _PLAIN_HOOKED        # an object it was compiled for died meanwhile
        return _New(entry)

    def _add(self, entry):
        """Append a complete entry (dropping dead ones); it drops itself when an object it
        holds weakly dies. False if it is dead already."""
        life = entry.guard.life
        life.on_death = functools.partial(_drop_entry, weakref.ref(self), weakref.ref(entry))
        # the call that compiled it runs `first_transformed`; the first hit after it marks the
        # entry reused and puts the transformed function itself in place
        entry.first_transformed = real = entry.transformed
        entry.reused = False

        entry_ref = weakref.ref(entry)       # no cycle: dropping the entry frees it at once

        def first_hit(*args, **kwargs):
            e = entry_ref()
            if e is not None:
                e.reused = True
                e.transformed = real
            return real(*args, **kwargs)
        first_hit.source = real.source
        entry.transformed = first_hit
        self.entries = tuple(e for e in self.entries if not e.guard.life.dead) + (entry,)
        if life.dead:
            self.entries = tuple(e for e in self.entries if e is not entry)
            return False
        return True

    def _record_break(self, exc):
        """Count, log and keep (for explain) the graph break `exc` (an Unsupported)."""
        filename, line = location(exc)
        brk = GraphBreak.of(exc, f"{filename}:{line}")
        counters["graph_break"][brk.reason] += 1
        counters["graph_break_kind"][brk.kind.name] += 1
        self.break_reasons.append(brk)
        breaks_log.debug("Graph break in %s: %s at %s (%s)\n  hint: %s", self._fn.__qualname__,
                         brk.reason, brk.where, brk.kind.title, brk.hint)
        return brk

    def _internal_error(self, err, stacklevel=4):
        """Count and report an exception raised inside dynjit while compiling this function;
        raise it in strict mode, else the function runs uncompiled from now on."""
        fn = self._fn
        what = f"{type(err).__name__}: {err}"
        counters["internal_error"][what] += 1
        internal_log.debug("Internal error compiling %s", fn.__qualname__, exc_info=err)
        if config.strict_internal_errors:
            raise InternalError(f"dynjit failed while compiling {fn.__qualname__} "
                                f"({fn.__code__.co_filename}:{fn.__code__.co_firstlineno}): {what}\n"
                                "This is a bug in dynjit, not in your program; without "
                                "dynjit.config.strict_internal_errors (DYNJIT_STRICT) the function "
                                "runs uncompiled.") from err
        warnings.warn(f"dynjit: internal error while compiling {fn.__qualname__} ({what}); it runs "
                      "uncompiled. Please report this bug.", stacklevel=stacklevel)
        self.eager_reason = f"internal error: {what}"

    def _hook(self, inner_fn):
        """The compiled wrapper a nested frame runs through (same backend, no fullgraph)."""
        if getattr(inner_fn, "_dynjit_disable", False) or _is_generator(inner_fn):
            return inner_fn
        return _nested(self, inner_fn, lambda: CompiledFunction(inner_fn, self._backend, False,
                                                                self._dynamic))

    @property
    def recompile_reasons(self):
        return self.__dict__.setdefault("_recompile_reasons", [])

    @property
    def break_reasons(self):
        return self.__dict__.setdefault("_break_reasons", [])

    def reset(self):
        with self._lock:
            for e in self.entries:
                e.guard.life.on_death = None
            self.entries = ()
            self._died_unused = 0
            self._deaths = []
            self.eager_reason = None
            self._warned_limit = False
            self._auto_dynamic = False
            self._dynamic_scalars = set()
            self.__dict__.pop("_resume_cache", None)

    # -- debug view ------------------------------------------------------------------------
    def debug_view(self, _indent=""):
        """Guards, transformed code, graphs of every cache entry, and at graph breaks the
        generated break function's bytecode and each resume function's own view, as text."""
        parts = []
        for i, e in enumerate(self.entries):
            parts.append(f"=== {self._fn.__qualname__}: cache entry {i} ===\n--- guard ---\n{e.guard.source}")
            parts.append(f"--- transformed function ---\n{e.transformed.source}")
            if e.gm is not None:
                parts.append(f"--- graph ({e.op_count} ops) ---\n{e.gm.print_readable(print_output=False)}")
            if e.break_fn is not None:
                parts.append(f"--- graph break: {e.break_reason} ---\n"
                             f"--- {resume.label(e.break_fn.__code__)} (bytecode) ---\n"
                             f"{_disassemble(e.break_fn.__code__)}")
        if self.eager_reason:
            parts.append(f"runs eagerly: {self.eager_reason}")
        for resume_fn in self.__dict__.get("_resume_cache", {}).values():
            if isinstance(resume_fn, CompiledFunction):
                parts.append(f"--- {resume.label(resume_fn._fn.__code__)} (bytecode) ---\n"
                             f"{_disassemble(resume_fn._fn.__code__)}")
                parts.append(resume_fn.debug_view())
        return "\n".join(parts)


class _New:
    """_lookup_or_compile's answer for an entry it has just compiled."""
    __slots__ = ("entry",)

    def __init__(self, entry):
        self.entry = entry


def _drop_entry(owner_ref, entry_ref):
    """An object entry holds weakly died: drop the entry (its guard can never pass again).
    Runs from a weak reference's callback, on any thread: if another thread holds the lock,
    it drops dead entries itself when it next adds one."""
    owner, entry = owner_ref(), entry_ref()
    if owner is None or entry is None:
        return
    if not entry.reused:
        owner._died_unused += 1
    # the next compile is a recompile, and says why
    owner._deaths.append(f"{entry.guard.life.cause} died, and the code compiled for it with it")
    if owner._lock.acquire(blocking=False):
        try:
            owner.entries = tuple(e for e in owner.entries if e is not entry)
        finally:
            owner._lock.release()


def _nested(owner, fn, make):
    """`owner`'s compiled wrapper of `fn` (made by `make` once). Kept on the function itself,
    per owner (held weakly): the wrapper lives as long as both, and keeps neither alive."""
    if not isinstance(fn, types.FunctionType):
        cache = owner.__dict__.setdefault("_nested", {})
        wrapped = cache.get(fn)
        if wrapped is None:
            wrapped = cache.setdefault(fn, make())
        return wrapped
    per_owner = fn.__dict__.get(_NESTED_ATTR)
    if per_owner is None:
        per_owner = fn.__dict__.setdefault(_NESTED_ATTR, weakref.WeakKeyDictionary())
    wrapped = per_owner.get(owner)
    if wrapped is None:
        wrapped = per_owner.setdefault(owner, make())
    return wrapped


_watched = weakref.WeakSet()      # compiled functions' functions: their death may free code
_sweep_pending = [False]


def _watch_code(fn):
    """bytecode_info caches the parsed bytecode of every code object the frontend reads (the
    compiled functions', resume functions', inlined functions'): when a compiled function's
    function dies, its code may be left held by that cache alone; sweep it then."""
    if fn not in _watched:
        _watched.add(fn)
        call_when_freed(fn, _sweep_pending.__setitem__, 0, True)


def _sweep_code_cache(*_):
    """Drop the cached bytecode of code objects nothing but that cache holds any more. Runs
    when a watched function has died, outside its death (whose other references may not be
    gone yet): before the next compile, and at reset. (Not from a collector callback: one
    called at the recursion limit could only fail.)"""
    if not _sweep_pending[0]:
        return
    _sweep_pending[0] = False
    from . import bytecode_info
    cache = bytecode_info._cache
    items = list(cache.items())
    while items:
        code, info = items.pop()
        # the references left when only the cache holds it: its key, CodeInfo.code, `code`,
        # getrefcount's argument
        if info.code is code and sys.getrefcount(code) <= 4:
            cache.pop(code, None)
        del code, info


def _takes_scalars(backend):
    from ..compiler.registry import lookup_backend
    return bool(getattr(lookup_backend(backend), "dynjit_scalar_inputs", False))


def _transforming_mode_active():
    """A dispatch mode that changes what ops compute is active (not one that only observes,
    such as the profiler)."""
    return any(not getattr(mode, "observes_only", False) for mode in _dispatch_modes)


def _accepts(fn, args, kwargs):
    try:
        inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _disassemble(code):
    import dis
    import io
    out = io.StringIO()
    dis.dis(code, file=out)
    return out.getvalue().rstrip()


def _is_generator(fn):
    code = getattr(fn, "__code__", None)
    return code is not None and bool(code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                      | inspect.CO_ASYNC_GENERATOR))


class OptimizedModule:
    """What `dynjit.compile(module)` returns: calls run the compiled forward."""

    def __init__(self, mod, backend, fullgraph, dynamic):
        self.__dict__["_orig_mod"] = mod
        self.__dict__["_compiled_forward"] = CompiledFunction(type(mod).forward, backend, fullgraph, dynamic)

    def __call__(self, *args, **kwargs):
        mod = self._orig_mod
        compiled = self._compiled_forward
        # what mod(...) would run: hooks (its own or global), a forward set on the instance
        if module_hooks_present(mod) or "forward" in mod.__dict__:
            return mod(*args, **kwargs)
        if type(mod).forward is not compiled._fn:       # forward replaced on the class
            compiled = self.__dict__["_compiled_forward"] = CompiledFunction(
                type(mod).forward, compiled._backend, compiled._fullgraph, compiled._dynamic)
        return compiled(mod, *args, **kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


def compile(fn=None, *, backend="eager", fullgraph=False, dynamic=None, mode=None, options=None,
            disable=False):
    """JIT-compile a function, method or nn.Module (also usable as a decorator)."""
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return fn
    check_python_version()      # a Python whose bytecode the frontend does not know fails here
    from ..compiler.registry import lookup_backend
    lookup_backend(backend)   # fail early on an unknown name
    if isinstance(fn, OptimizedModule):         # compiling it again: compile its module
        fn = fn._orig_mod
    if isinstance(fn, CompiledFunction):
        # compiled already: the function it compiles is compiled once, by one wrapper
        if (fn._backend, fn._fullgraph, fn._dynamic) == (backend, fullgraph, dynamic):
            return fn
        inner = fn._fn if fn._bound_self is None else types.MethodType(fn._fn, fn._bound_self)
        return CompiledFunction(inner, backend, fullgraph, dynamic)
    if is_nn_module(fn):
        return OptimizedModule(fn, backend, fullgraph, dynamic)
    from ..fx.graph_module import GraphModule
    if isinstance(fn, GraphModule):       # its generated forward, bound to it
        return CompiledFunction(types.MethodType(fn._forward_fn, fn), backend, fullgraph, dynamic)
    return CompiledFunction(fn, backend, fullgraph, dynamic)


class _OptimizeContext:
    def __init__(self, backend, nopython, dynamic=None):
        self.backend = backend
        self.nopython = nopython
        self.dynamic = dynamic

    def __call__(self, fn):
        return compile(fn, backend=self.backend, fullgraph=self.nopython, dynamic=self.dynamic)

    def __enter__(self):
        """Inside the block, frames started by the library's entry points (nn.Module calls)
        are compiled with this backend; plain Python calls are not intercepted (no PEP 523)."""
        from ..compiler.registry import lookup_backend
        lookup_backend(self.backend)
        compiled = {}

        def hook(fn):
            wrapped = compiled.get(fn)
            if wrapped is None:
                if getattr(fn, "_dynjit_disable", False) or _is_generator(fn):
                    return fn
                wrapped = compiled[fn] = CompiledFunction(fn, self.backend, self.nopython, self.dynamic)
            return wrapped
        self._saved = getattr(_jit_callback._state, "hook", None)
        _jit_callback._state.hook = hook
        return self

    def __exit__(self, *exc):
        _jit_callback._state.hook = self._saved
        return False


def optimize(backend="eager", nopython=False, dynamic=None, disable=False):
    """`@dynjit.optimize(backend)` compiles the decorated function (nopython=True: fullgraph)."""
    if disable:
        return lambda fn: fn
    return _OptimizeContext(backend, nopython, dynamic)


def optimize_assert(backend="eager", dynamic=None):
    return optimize(backend, nopython=True, dynamic=dynamic)


def disable(fn=None, recursive=True):
    """Mark `fn` so that dynjit never compiles it (returns fn)."""
    if fn is None:
        return lambda f: disable(f, recursive)
    fn._dynjit_disable = True
    return fn


_allowed_in_graph = weakref.WeakSet()


def allow_in_graph(fn):
    """Record calls to `fn` as one opaque graph node instead of tracing into it (returns fn).

    `fn` is a function, or a subclass of dynjit.autograd.Function (then its
    `apply` is the opaque call). It runs on the example values while tracing
    and must return tensors."""
    if isinstance(fn, (list, tuple)):
        for f in fn:
            allow_in_graph(f)
        return fn
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a function or an autograd.Function class, got "
                        f"{type(fn).__name__}")
    try:
        _allowed_in_graph.add(fn)
    except TypeError:
        raise TypeError(f"allow_in_graph cannot mark {fn!r} (it does not support weak references); "
                        "wrap it in a Python function") from None
    return fn


def is_allowed_in_graph(obj):
    try:
        return obj in _allowed_in_graph
    except TypeError:
        return False


def reset():
    """Forget every compiled entry of every compiled function."""
    for c in list(_all_compiled):
        c.reset()
    _sweep_pending[0] = True
    _sweep_code_cache()
    from .. import compiled_autograd
    compiled_autograd.reset()
    counters.clear()


def graph_break():
    """Calling this inside a compiled function ends the graph there."""
    return None


graph_break._dynjit_graph_break = True


def is_nn_module(obj):
    try:
        from ..nn import Module
    except ImportError:
        return False
    return isinstance(obj, Module)
