"""Pooling layers (torch.nn.MaxPool*d, AvgPool*d, Adaptive*Pool*d)."""
__all__ = []
