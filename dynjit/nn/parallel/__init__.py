"""dynjit.nn.parallel: DataParallel on a machine without accelerators.

PyTorch's DataParallel replicates a module over the visible GPUs; with none (dynjit's only
device is the CPU) it keeps the module and forward calls it directly, in the caller's
thread. dynjit's DataParallel is that: `device_ids` other than the CPU's are an error, since
they name devices dynjit does not have.
"""
from ..modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """DataParallel(module, device_ids=None, output_device=None, dim=0): `module` run as is
    (see the module docstring); its state dict keys carry the "module." prefix, as PyTorch's."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids:
            raise RuntimeError(f"DataParallel: device_ids {list(device_ids)} name accelerators, which "
                               "dynjit does not have (it runs on the CPU only)")
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
