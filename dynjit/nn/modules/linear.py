"""Identity, Linear and Bilinear layers."""
import math

from ... import functional as _fn
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from ._factory import factory_kwargs as _factory_kwargs


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias, weight of shape (out_features, in_features).

    Initialized like PyTorch: weight from kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and bias from the same range.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ValueError(f"Linear: {name} must be a non-negative int, got {n!r}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_fn.empty((out_features, in_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(_fn.empty((out_features,), **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y[..., o] = x1[..., i] weight[o, i, j] x2[..., j] + bias[o]."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_fn.empty((out_features, in1_features, in2_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(_fn.empty((out_features,), **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear (MultiheadAttention's out_proj has this type in PyTorch)."""
