"""The `Distribution` base class: batch and event shapes, `sample` from `rsample`, argument
and support validation with PyTorch's messages."""
import numpy as np

from .. import Size, no_grad, float16, float32, float64


class Distribution:
    """Base of dynjit's distributions, as `torch.distributions.Distribution`."""

    has_rsample = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample)")

    def log_prob(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def perplexity(self):
        return self.entropy().exp()

    def _check_parameter(self, name, value, ok, constraint):
        """Raise PyTorch's error when argument `name`'s values break `constraint` (`ok`
        is a bool tensor of where they hold)."""
        if self._validate_args and not bool(ok.all()):
            raise ValueError(
                f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                f"distribution {self!r} to satisfy the constraint {constraint}, but found invalid "
                f"values:\n{value}")

    def _check_value(self, value, ok, support):
        if self._validate_args and not bool(ok.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                f"within the support ({support}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}")

    def __repr__(self):
        params = ", ".join(f"{name}: {_describe(getattr(self, name))}" for name in self._repr_params)
        return f"{type(self).__name__}({params})"


def _describe(t):
    return f"{t}" if t.numel() == 1 else f"{t.size()}"


_FINFO = {}


def finfo(dtype):
    """(eps, min) of a dynjit floating dtype as Python floats (a dict look-up, so compiled
    code reads them as constants)."""
    if dtype not in _FINFO:
        info = np.finfo(dtype.np)
        _FINFO[dtype] = (float(info.eps), float(info.min))
    return _FINFO[dtype]


for _d in (float16, float32, float64):
    finfo(_d)
