"""`Categorical`: a distribution over {0, ..., K-1} given by probabilities or logits over the
last dimension."""
import math

import dynjit as torch

from .distribution import Distribution, finfo


def probs_to_logits(probs, is_binary=False):
    eps = finfo(probs.dtype)[0]
    ps_clamped = probs.clamp(min=eps, max=1 - eps)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class Categorical(Distribution):
    """torch.distributions.Categorical(probs=None, logits=None, validate_args=None)."""

    _repr_params = ()

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        if param.dim() < 1:
            raise ValueError("`probs` parameter must be at least one-dimensional.")
        self._num_events = param.size(-1)
        super().__init__(param.size()[:-1], validate_args=validate_args)
        if probs is not None:
            self._repr_params = ("probs",)
            self.probs = probs / probs.sum(-1, keepdim=True)
            # PyTorch checks the normalized probabilities (so any positive weights pass)
            sums_to_one = (self.probs.sum(-1) - 1).abs() < 1e-6
            self.probs = self._check_parameter("probs", self.probs, (self.probs >= 0).all(-1) & sums_to_one,
                                               "Simplex()")
            self.logits = probs_to_logits(self.probs)
        else:
            self._repr_params = ("logits",)
            self.logits = logits
            logits = self._check_parameter("logits", logits, ~logits.isnan(), "IndependentConstraint(Real(), 1)")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self.probs = torch.softmax(self.logits, dim=-1)

    @property
    def param_shape(self):
        return self.probs.size()

    @property
    def mean(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def variance(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    def sample(self, sample_shape=()):
        probs_2d = self.probs.reshape(-1, self._num_events)
        with torch.no_grad():
            samples_2d = torch.multinomial(probs_2d, math.prod(sample_shape), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        value = self._check_value(value, (value >= 0) & (value < self._num_events) & (value == value.floor()),
                                  f"IntegerInterval(lower_bound=0, upper_bound={self._num_events - 1})")
        value = value.long().unsqueeze(-1)
        value, log_pmf = torch.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = torch.clamp(self.logits, min=finfo(self.logits.dtype)[1])
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = torch.arange(self._num_events, dtype=torch.long)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
