"""The `Distribution` base class: batch and event shapes, `sample` from `rsample`, argument
and support validation with PyTorch's messages."""

from .. import Size, no_grad, float16, float32, float64
from .._dtype import finfo as _finfo
from ..ops import registry as _ops

_check_values = _ops["check_values"]


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
        """`value`, checked: PyTorch's error when argument `name`'s values break
        `constraint` (`ok` is a bool tensor of where they hold). The check is an op, so
        compiled code checks every call without a graph break."""
        if not self._validate_args:
            return value
        return _check_values(value, ok, f"Expected parameter {name} ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) of distribution {self._describe()} to satisfy the constraint "
                             f"{constraint}, but found invalid values:", True)

    def _check_value(self, value, ok, support):
        if not self._validate_args:
            return value
        return _check_values(value, ok, f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support}) of the distribution "
                             f"{self._describe()}, but found invalid values:", True)

    def __repr__(self):
        params = ", ".join(f"{name}: {_describe(getattr(self, name))}" for name in self._repr_params)
        return f"{type(self).__name__}({params})"

    def _describe(self):
        """The repr with every parameter given by its shape (PyTorch prints a one-element
        parameter's value): what the validation messages say, which compiled code builds
        without reading tensor values."""
        params = ", ".join([f"{name}: dynjit.Size({list(getattr(self, name).shape)})" for name in self._repr_params])
        return f"{type(self).__name__}({params})"


def _describe(t):
    return f"{t}" if t.numel() == 1 else f"{t.size()}"


_FINFO = {}


def finfo(dtype):
    """(eps, min) of a dynjit floating dtype as Python floats (a dict look-up, so compiled
    code reads them as constants)."""
    if dtype not in _FINFO:
        info = _finfo(dtype)        # (bfloat16's own limits, not its float32 storage's)
        _FINFO[dtype] = (float(info.eps), float(info.min))
    return _FINFO[dtype]


for _d in (float16, float32, float64):
    finfo(_d)
