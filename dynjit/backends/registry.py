"""The backend registry: names -> compiler functions `fn(gm, example_inputs) -> callable`.

Backends register with `@register_backend` or, from another package, through
the entry-point group `dynjit.backends` (loaded lazily, on first lookup of an
unknown name or on `list_backends()`).
"""
import importlib.metadata

from ..exc import BackendCompilerFailed, InvalidBackend

_BACKENDS = {}
_TAGS = {}
_entry_points_loaded = False
ENTRY_POINT_GROUP = "dynjit.backends"


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register a backend; usable as `@register_backend`, `@register_backend(name=...)` or a call."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"a backend must be callable as fn(gm, example_inputs), got {compiler_fn!r}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise ValueError(f"backend {name!r} is already registered (by {_BACKENDS[name]!r})")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def _entry_points():
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def _load_entry_points():
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in _entry_points():
        if ep.name not in _BACKENDS:
            _BACKENDS[ep.name] = _LazyEntryPoint(ep)
            _TAGS.setdefault(ep.name, ())


class _LazyEntryPoint:
    """An entry-point backend, imported on first use (so `import dynjit` stays light)."""

    def __init__(self, ep):
        self.ep = ep
        self.fn = None

    def __call__(self, gm, example_inputs, **kwargs):
        if self.fn is None:
            try:
                self.fn = self.ep.load()
            except Exception as e:
                raise InvalidBackend(f"backend {self.ep.name!r} (entry point {self.ep.value!r}) "
                                     f"failed to load: {type(e).__name__}: {e}") from e
        return self.fn(gm, example_inputs, **kwargs)

    def __repr__(self):
        return f"<backend {self.ep.name} from entry point {self.ep.value}>"


def lookup_backend(compiler_fn):
    """A backend callable from a name or a callable."""
    if callable(compiler_fn):
        return compiler_fn
    if not isinstance(compiler_fn, str):
        raise TypeError(f"backend must be a name or a callable, got {type(compiler_fn).__name__}")
    if compiler_fn not in _BACKENDS:
        _load_entry_points()
    fn = _BACKENDS.get(compiler_fn)
    if fn is None:
        raise InvalidBackend(f"Invalid backend: {compiler_fn!r}, see `dynjit.backends.list_backends()` "
                             f"for available backends (known: {', '.join(list_backends())}).")
    return fn


def list_backends(exclude_tags=("debug", "experimental")):
    _load_entry_points()
    exclude = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not exclude.intersection(_TAGS.get(n, ())))


def call_backend(backend, gm, example_inputs):
    """Run a backend, wrapping its failures in BackendCompilerFailed."""
    fn = lookup_backend(backend)
    try:
        compiled = fn(gm, example_inputs)
    except BackendCompilerFailed:
        raise
    except Exception as e:
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
        raise BackendCompilerFailed(name, e) from e
    if not callable(compiled):
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
        raise BackendCompilerFailed(name, TypeError(
            f"the backend returned {type(compiled).__name__}, which is not callable; a backend must "
            "return a callable that takes the graph's inputs"))
    return compiled
