"""`kl_divergence(p, q)`: KL(p || q) in closed form for two distributions of one kind."""
import dynjit as torch

from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal


def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = torch.where(q.probs == 0, torch.full_like(t, float("inf")), t)
    t = torch.where(p.probs == 0, torch.zeros_like(t), t)
    return t.sum(-1)


def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (torch.nn.functional.softplus(-q.logits) - torch.nn.functional.softplus(-p.logits))
    t2 = (1 - p.probs) * (torch.nn.functional.softplus(q.logits) - torch.nn.functional.softplus(p.logits))
    return t1 + t2


_KL = {(Normal, Normal): _kl_normal_normal,
       (Categorical, Categorical): _kl_categorical_categorical,
       (Bernoulli, Bernoulli): _kl_bernoulli_bernoulli}


def kl_divergence(p, q):
    fn = _KL.get((type(p), type(q)))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p = {type(p).__name__}, "
                                  f"q = {type(q).__name__} (dynjit has Normal, Categorical and Bernoulli pairs)")
    return fn(p, q)
