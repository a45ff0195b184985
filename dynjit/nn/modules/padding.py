"""Padding layers (torch.nn.ZeroPad*, ConstantPad*, ReflectionPad*, ReplicationPad*,
CircularPad*): F.pad with the padding and mode fixed at construction."""
from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _padding(padding, nd):
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    padding = tuple(padding)
    if len(padding) != 2 * nd:
        raise ValueError(f"expected padding of {2 * nd} values (left, right for each of the last {nd} "
                         f"dims), got {len(padding)}")
    return padding


class _PadNd(Module):
    _nd = 1
    mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _padding(padding, self._nd)
        self.value = value

    def forward(self, input):
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        if self.mode == "constant" and not isinstance(self, _ZeroPad):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class _ZeroPad(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


def _make(name, nd, mode, base=_PadNd):
    return type(name, (base,), {"_nd": nd, "mode": mode, "__module__": __name__,
                                "__doc__": f"Pads the last {nd} dim(s) ({mode}), as torch.nn.{name}."})


ZeroPad1d, ZeroPad2d, ZeroPad3d = (_make(f"ZeroPad{n}d", n, "constant", _ZeroPad) for n in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (_make(f"ConstantPad{n}d", n, "constant") for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_make(f"ReflectionPad{n}d", n, "reflect") for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_make(f"ReplicationPad{n}d", n, "replicate")
                                                        for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_make(f"CircularPad{n}d", n, "circular") for n in (1, 2, 3))
