"""Convolution layers (torch.nn.Conv*d, ConvTranspose*d, Fold, Unfold)."""
__all__ = []
