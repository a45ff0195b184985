"""Convolution, pooling, fold and unfold as functions (part of dynjit.nn.functional)."""
__all__ = []
