"""Probability distributions under PyTorch's names (`torch.distributions`): `Categorical`,
`Normal`, `Bernoulli` and `kl_divergence` between two of a kind, for policy gradients,
variational models and likelihood losses.

They are composites of dynjit's ops (no kernels of their own), so their `log_prob`,
`entropy` and `rsample` are differentiable and trace under dynjit.compile; `sample` draws
without gradient. Arguments are validated as PyTorch validates them
(`Distribution.set_default_validate_args`, `validate_args=`)."""
from .distribution import Distribution
from .categorical import Categorical
from .normal import Normal
from .bernoulli import Bernoulli
from .kl import kl_divergence

__all__ = ["Distribution", "Categorical", "Normal", "Bernoulli", "kl_divergence"]
