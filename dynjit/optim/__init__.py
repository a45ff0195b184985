"""dynjit.optim: optimizers (PyTorch's torch.optim) and learning-rate schedules
(dynjit.optim.lr_scheduler). Updates run under no_grad with in-place tensor ops on
the parameters."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .rmsprop import RMSprop
from .lbfgs import LBFGS
from . import lr_scheduler, swa_utils

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "RMSprop",
           "LBFGS", "lr_scheduler", "swa_utils"]

