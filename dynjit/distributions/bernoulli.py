"""`Bernoulli`: a distribution over {0, 1} given by the probability (or logit) of 1."""
import dynjit as torch
import dynjit.nn.functional as F

from .categorical import probs_to_logits
from .distribution import Distribution


class Bernoulli(Distribution):
    """torch.distributions.Bernoulli(probs=None, logits=None, validate_args=None)."""

    _repr_params = ()

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if not isinstance(probs, torch.Tensor):
                probs = torch.tensor(float(probs))
            super().__init__(probs.size(), validate_args=validate_args)
            self._repr_params = ("probs",)
            self.probs = probs
            self.probs = self._check_parameter("probs", probs, (probs >= 0) & (probs <= 1),
                                               "Interval(lower_bound=0.0, upper_bound=1.0)")
            self.logits = probs_to_logits(self.probs, is_binary=True)
        else:
            if not isinstance(logits, torch.Tensor):
                logits = torch.tensor(float(logits))
            super().__init__(logits.size(), validate_args=validate_args)
            self._repr_params = ("logits",)
            self.logits = logits
            self.logits = self._check_parameter("logits", logits, ~logits.isnan(), "Real()")
            self.probs = torch.sigmoid(self.logits)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with torch.no_grad():
            return torch.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        value = self._check_value(value, (value == 0) | (value == 1), "Boolean()")
        logits, value = torch.broadcast_tensors(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
