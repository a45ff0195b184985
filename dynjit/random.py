"""dynjit's random number generator: one global numpy Generator, seeded by `manual_seed`.

A trace (the JIT running a function on example values) draws from private
copies of the generators' states, seen only by the thread that traces
(`private_state`): the numbers it draws are never handed out again, and other
threads drawing meanwhile see the generator as if no trace had run."""
import contextlib
import threading

import numpy as np

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "Generator"]

_local = threading.local()      # .private: {id(generator): (generator, private numpy Generator)}


class Generator:
    """A seedable source of random numbers (wraps numpy's PCG64)."""

    def __init__(self, seed=67280421310721):
        self.manual_seed(seed)

    @property
    def np(self):
        """The numpy Generator to draw from (inside a trace: this thread's private copy)."""
        private = getattr(_local, "private", None)
        if private is None:
            return self._np
        entry = private.get(id(self))
        if entry is None:
            copy = np.random.Generator(np.random.PCG64())
            copy.bit_generator.state = self._np.bit_generator.state
            entry = private[id(self)] = (self, copy)
        return entry[1]

    def manual_seed(self, seed):
        fresh = np.random.Generator(np.random.PCG64(int(seed)))
        private = getattr(_local, "private", None)
        if private is not None and hasattr(self, "_np"):
            private[id(self)] = (self, fresh)       # inside a trace: the private copy only
        else:
            self._seed = int(seed)
            self._np = fresh
        return self

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self.np.bit_generator.state

    def set_state(self, state):
        self.np.bit_generator.state = state


@contextlib.contextmanager
def private_state():
    """Within the block, this thread draws from copies of the generators' states (made when
    first drawn from) and the generators themselves are left untouched: a trace's draws."""
    if getattr(_local, "private", None) is not None:      # nested: the outer copies serve
        yield
        return
    _local.private = {}
    try:
        yield
    finally:
        _local.private = None


default_generator = Generator()


def manual_seed(seed):
    return default_generator.manual_seed(seed)


def seed():
    import time
    return default_generator.manual_seed(time.time_ns() % (2 ** 63))


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)
