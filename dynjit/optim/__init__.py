"""dynjit.optim: optimizers (PyTorch's torch.optim). Updates run under no_grad
with in-place tensor ops on the parameters."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
