"""dynjit.utils: counters of what the JIT did (graph breaks by reason, frames, recompiles),
generated source shown in tracebacks for as long as its code lives, and which modules are
dynjit's own."""
import collections
import linecache
import weakref

counters = collections.defaultdict(collections.Counter)


def is_dynjit_module(name):
    """Whether the module named `name` is part of the dynjit package (not merely a name that
    starts with "dynjit", such as a user's dynjit_helpers)."""
    return name == "dynjit" or name.startswith("dynjit.")


def reset_counters():
    counters.clear()


def register_source(filename, src, owner):
    """Put generated source `src` in linecache under `filename` (so tracebacks and inspect show
    its lines) until `owner` (the function or object that runs that code) is freed."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    forget_source_with(owner, filename)


def forget_source_with(owner, filename):
    """Drop `filename` from linecache when `owner` is freed (source registered elsewhere)."""
    call_when_freed(owner, linecache.cache.pop, filename, None)


_pending = {}      # id -> weak reference whose callback is still to run (lighter than finalize)


def call_when_freed(obj, fn, *args):
    """Call fn(*args) when `obj` is freed (by reference counting or by the collector)."""
    def freed(ref):
        _pending.pop(id(ref), None)
        fn(*args)
    ref = weakref.ref(obj, freed)       # (weak references to one object are equal: keyed by id)
    _pending[id(ref)] = ref


_SUBMODULES = ("data", "checkpoint")


def __getattr__(name):
    # torch.utils.data and torch.utils.checkpoint are reachable as attributes; importing them
    # lazily keeps the frontend's early `from .. import utils` light
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
