"""The `device=` / `dtype=` keywords of every layer constructor (PyTorch's factory kwargs)."""
from ...tensor import check_device


def factory_kwargs(device=None, dtype=None):
    """The keywords a layer passes to the tensor factories that make its parameters and buffers
    (and to the layers it is made of), as PyTorch's layers build them. The device is checked
    here, before anything is made: the CPU (None, "cpu", "cpu:0", dynjit.device("cpu")) is
    accepted, any other device raises the error a tensor factory raises for it."""
    return {"device": check_device(device), "dtype": dtype}
