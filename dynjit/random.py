"""dynjit's random number generator: one global numpy Generator, seeded by `manual_seed`."""
import numpy as np

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "Generator"]


class Generator:
    """A seedable source of random numbers (wraps numpy's PCG64)."""

    def __init__(self, seed=67280421310721):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        self._seed = int(seed)
        self.np = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self.np.bit_generator.state

    def set_state(self, state):
        self.np.bit_generator.state = state


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
