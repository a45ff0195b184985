"""dynjit.nn: modules, parameters, layers, losses and their functional forms
(PyTorch's torch.nn). Layers are built from registered ops, so they run eagerly,
differentiate, and trace under dynjit.compile like any other tensor code."""
from .parameter import Parameter
from .modules import *  # noqa: F401,F403
from .modules import Module
from . import modules, functional, init, utils, parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
