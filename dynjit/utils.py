"""dynjit.utils: counters of what the JIT did (graph breaks by reason, frames, recompiles), and
generated source shown in tracebacks for as long as its code lives."""
import collections
import linecache
import weakref

counters = collections.defaultdict(collections.Counter)


def reset_counters():
    counters.clear()


def register_source(filename, src, owner):
    """Put generated source `src` in linecache under `filename` (so tracebacks and inspect show
    its lines) until `owner` (the function or object that runs that code) is freed."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    forget_source_with(owner, filename)


def forget_source_with(owner, filename):
    """Drop `filename` from linecache when `owner` is freed (source registered elsewhere)."""
    weakref.finalize(owner, _forget_source, filename).atexit = False


def _forget_source(filename):
    linecache.cache.pop(filename, None)
