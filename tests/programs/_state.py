"""Test plumbing shared by the programs (not part of what they demonstrate): set the
parameters and buffers of a program's modules from numpy arrays, and read them back, so the
same initial weights can be given to dynjit and to PyTorch and the results compared.

Works with either library: it only uses `state_dict`, `no_grad` and `copy_`."""
import numpy as np


def load_state(torch, modules, init):
    """Copy `init` (a dict "<module>.<state name>" -> numpy array) into `modules` (a dict
    name -> nn.Module). Names missing from `init` keep their values."""
    if init is None:
        return
    with torch.no_grad():
        for prefix, module in modules.items():
            for name, value in module.state_dict().items():
                key = f"{prefix}.{name}"
                if key in init:
                    value.copy_(torch.tensor(np.asarray(init[key])))


def dump_state(modules):
    """The state of `modules` as a dict "<module>.<state name>" -> numpy array (copies)."""
    out = {}
    for prefix, module in modules.items():
        for name, value in module.state_dict().items():
            out[f"{prefix}.{name}"] = np.array(value.detach().numpy(), copy=True)
    return out
