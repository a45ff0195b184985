"""The backend registry: names -> compiler functions `fn(gm, example_inputs) -> callable`.

Backends register with `@register_backend` or, from another package, through
the entry-point group `dynjit.backends`. Entry points are read when a name is
not (yet) known and by `list_backends()`, so a package installed while the
program runs is found; a plugin's module is imported only when its backend
is first used. See docs/backends.md.
"""
import importlib.metadata

from ..exc import BackendCompilerFailed, InvalidBackend

_BACKENDS = {}
_TAGS = {}
ENTRY_POINT_GROUP = "dynjit.backends"


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register a backend; usable as `@register_backend`, `@register_backend(name=...)` or a call."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"a backend must be callable as fn(gm, example_inputs), got {compiler_fn!r}")
    name = name or getattr(compiler_fn, "__name__", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend needs a name for {compiler_fn!r} (pass name=...)")
    existing = _BACKENDS.get(name)
    if existing is not None and existing is not compiler_fn and not isinstance(existing, _LazyEntryPoint):
        raise ValueError(f"a backend named {name!r} is already registered ({existing!r}); "
                         "choose another name")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def _entry_points():
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def _load_entry_points():
    """Register every entry point of the group not registered yet (their modules are
    imported on first use)."""
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
        return self.load()(gm, example_inputs, **kwargs)

    def load(self):
        if self.fn is None:
            try:
                fn = self.ep.load()
            except Exception as e:
                raise InvalidBackend(f"backend {self.ep.name!r} (entry point {self.ep.value!r}) "
                                     f"failed to load: {type(e).__name__}: {e}") from e
            if not callable(fn):
                raise InvalidBackend(f"backend {self.ep.name!r}: entry point {self.ep.value!r} is "
                                     f"a {type(fn).__name__}, not a function fn(gm, example_inputs)")
            self.fn = fn
        return self.fn

    def __getattr__(self, name):
        # a backend's declarations (dynjit_scalar_inputs) are attributes of its function
        if name.startswith("dynjit_"):
            return getattr(self.load(), name)
        raise AttributeError(name)

    def __repr__(self):
        return f"<backend {self.ep.name} from entry point {self.ep.value}>"


def lookup_backend(compiler_fn):
    """The backend for a name (registered, or an entry point), or a callable as is."""
    if callable(compiler_fn):
        return compiler_fn
    if not isinstance(compiler_fn, str):
        raise TypeError(f"backend must be a name or a callable fn(gm, example_inputs), "
                        f"got {type(compiler_fn).__name__}")
    if compiler_fn not in _BACKENDS:
        _load_entry_points()
    fn = _BACKENDS.get(compiler_fn)
    if fn is None:
        raise InvalidBackend(f"Invalid backend: {compiler_fn!r}, see `dynjit.compiler.list_backends()` "
                             f"for available backends (known: {', '.join(list_backends(exclude_tags=()))}).")
    return fn


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted names of the registered and installed backends, without those tagged
    with one of `exclude_tags`."""
    _load_entry_points()
    exclude = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not exclude.intersection(_TAGS.get(n, ())))


def backend_name(backend):
    return backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))


def call_backend(backend, gm, example_inputs):
    """Compile a graph with a backend, wrapping its failures in BackendCompilerFailed."""
    fn = lookup_backend(backend)
    try:
        compiled = fn(gm, example_inputs)
    except BackendCompilerFailed:
        raise
    except Exception as e:
        raise BackendCompilerFailed(backend_name(backend), e) from e
    if not callable(compiled):
        raise BackendCompilerFailed(backend_name(backend), TypeError(
            f"the backend returned {type(compiled).__name__}, which is not callable; a backend must "
            "return a callable that takes the graph's inputs"))
    return compiled



def contract_error(backend, out, n_outputs):
    """BackendCompilerFailed for a backend's callable that returned `out` for a graph with
    `n_outputs` outputs, or None when `out` keeps the contract (a tuple or list of them)."""
    if isinstance(out, (tuple, list)) and len(out) == n_outputs:
        return None
    if isinstance(out, (tuple, list)):
        got = f"a {type(out).__name__} of {len(out)} value{'s' if len(out) != 1 else ''}"
    else:
        got = f"a bare {type(out).__name__}"
    return BackendCompilerFailed(backend_name(backend), TypeError(
        f"the callable the backend returned gave {got} for a graph with {n_outputs} "
        f"output{'s' if n_outputs != 1 else ''}; it must return a tuple or list with one value "
        "per graph output"))
