"""dynjit.utils: counters of what the JIT did (graph breaks by reason, frames, recompiles)."""
import collections

counters = collections.defaultdict(collections.Counter)


def reset_counters():
    counters.clear()
