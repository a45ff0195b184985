"""`Normal`: the Gaussian distribution with mean `loc` and standard deviation `scale`."""
import math
import numbers

import dynjit as torch

from .distribution import Distribution


class Normal(Distribution):
    """torch.distributions.Normal(loc, scale, validate_args=None)."""

    has_rsample = True
    _repr_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            loc, scale = torch.tensor(float(loc)), torch.tensor(float(scale))
        else:
            like = loc if isinstance(loc, torch.Tensor) else scale
            if isinstance(loc, numbers.Number):
                loc = torch.full_like(like, float(loc))
            if isinstance(scale, numbers.Number):
                scale = torch.full_like(like, float(scale))
        self.loc, self.scale = torch.broadcast_tensors(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)
        self.loc = self._check_parameter("loc", self.loc, ~self.loc.isnan(), "Real()")
        self.scale = self._check_parameter("scale", self.scale, self.scale > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = torch.randn(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._check_value(value, ~value.isnan(), "Real()")
        var = self.scale ** 2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + torch.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(self.scale)
