"""`nn.GaussianNLLLoss`, the module form of F.gaussian_nll_loss."""
from .. import _functional_likelihood as _L
from .loss import _Loss


class GaussianNLLLoss(_Loss):
    """torch.nn.GaussianNLLLoss(*, full=False, eps=1e-6, reduction='mean'); forward(input, target, var)."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return _L.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)
