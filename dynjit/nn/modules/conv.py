"""Convolution layers (torch.nn.Conv*d, ConvTranspose*d, Fold, Unfold), with PyTorch's
arguments, initialization, checks and repr, over the functions of nn.functional."""
import math

from ... import functional as _fn
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from ._factory import factory_kwargs as _factory_kwargs

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "Fold", "Unfold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n):
    if isinstance(value, (list, tuple)):
        return tuple(value) if len(value) != 1 else tuple(value) * n
    return (value,) * n


class _ConvNd(Module):
    """What Conv1d/2d/3d and ConvTranspose1d/2d/3d share: arguments, parameters, repr."""

    _nd = 0
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", output_padding=0, device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        nd = self._nd
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode="
                             f"{padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, nd)
        self.dilation = _ntuple(dilation, nd)
        self.output_padding = _ntuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        if padding == "same":
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            self._reversed_padding_repeated_twice = pads
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * nd
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in (0, 1)]
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_fn.empty(shape, **factory_kwargs))
        if bias:
            self.bias = Parameter(_fn.empty((out_channels,), **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        nd = self._nd
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, 0, device, dtype)

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._nd - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1D convolution layer: weight (out_channels, in_channels / groups, kernel_size)."""
    _nd = 1


class Conv2d(_Conv):
    """2D convolution layer: weight (out_channels, in_channels / groups, kH, kW)."""
    _nd = 2


class Conv3d(_Conv):
    """3D convolution layer: weight (out_channels, in_channels / groups, kD, kH, kW)."""
    _nd = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        """output_padding, or the one that gives `output_size` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = list(output_size)
        if len(output_size) == nd + 2 or len(output_size) == nd + 1 and input.ndim == nd + 1:
            output_size = output_size[-nd:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                             f"{nd + 2} elements (got {len(output_size) + (input.ndim - nd)})")
        result = []
        for d in range(nd):
            size = input.shape[input.ndim - nd + d]
            smallest = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{smallest} to {largest} (for an input of {list(input.shape[2:])})")
            result.append(output_size[d] - smallest)
        return tuple(result)

    def forward(self, input, output_size=None):
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1D convolution: weight (in_channels, out_channels / groups, kernel_size)."""
    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2D convolution: weight (in_channels, out_channels / groups, kH, kW)."""
    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3D convolution: weight (in_channels, out_channels / groups, kD, kH, kW)."""
    _nd = 3


class Unfold(Module):
    """Extracts sliding local blocks as columns (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Sums columns of sliding blocks back into an image (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
