"""Dropout: random zeroing in training mode, identity in eval mode."""
from .. import functional as F
from .module import Module


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _ChannelDropout(Dropout):
    _function = None

    def forward(self, input):
        return type(self)._function(input, self.p, self.training, self.inplace)


class Dropout1d(_ChannelDropout):
    """Zeroes whole channels of (N, C, L) or (C, L) inputs."""
    _function = staticmethod(F.dropout1d)


class Dropout2d(_ChannelDropout):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) inputs."""
    _function = staticmethod(F.dropout2d)


class Dropout3d(_ChannelDropout):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _function = staticmethod(F.dropout3d)


class AlphaDropout(Dropout):
    """Dropout for SELU networks: keeps zero mean and unit variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)
