"""`nn.init`: in-place initializers for parameters (run under no_grad, draw from
dynjit's seeded generator so `dynjit.manual_seed` makes them reproducible)."""
import math

import numpy as np

from .. import functional as _F
from ..random import default_generator
from ..ops.factories import check_floating_random
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, tensor as _tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "dirac_", "orthogonal_", "sparse_"]


def _check(tensor, name):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name} expects a dynjit.Tensor, got {type(tensor).__name__}")


_fill = _F._fill_no_grad_
_rand = _F._uniform_values
_randn = _F._normal_values


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for an initializer followed by `nonlinearity`."""
    linear_fns = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d")
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with values drawn from U(a, b)."""
    _check(tensor, "uniform_")
    return _F._uniform_fill_(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with values drawn from N(mean, std^2)."""
    _check(tensor, "normal_")
    return _F._normal_fill_(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) values, redrawn until they fall in [a, b]."""
    _check(tensor, "trunc_normal_")
    if a >= b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a} and b={b}")
    values = _randn(tensor, generator) * std + mean
    outside = (values < a) | (values > b)
    while bool(outside.any()):
        values = _F.where(outside, _randn(tensor, generator) * std + mean, values)
        outside = (values < a) | (values > b)
    return _fill(tensor, values)


def constant_(tensor, val):
    _check(tensor, "constant_")
    with no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    _check(tensor, "zeros_")
    with no_grad():
        tensor.zero_()
    return tensor


def eye_(tensor):
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, _F.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """Fill a 3, 4 or 5-D convolution weight with the Dirac delta: each of the first
    min(out/groups, in) output channels of each group copies its input channel."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, _tensor(values, dtype=tensor.dtype))


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (the Q of a normal matrix's QR, signs fixed by
    R's diagonal), dims after the first flattened; scaled by gain (Saxe et al., 2013)."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    check_floating_random("normal_kernel_cpu", tensor.dtype)
    flat = _randn(_F.empty((rows, cols)), generator).numpy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, _tensor(q.reshape(tuple(tensor.shape)) * gain, dtype=tensor.dtype))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor from N(0, std^2), then zero ceil(sparsity * rows) random entries of
    each column (Martens, 2010)."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    values = (_randn(tensor, generator) * std).numpy().copy()
    gen = (generator or default_generator).np
    for col in range(cols):
        values[gen.permutation(rows)[:num_zeros], col] = 0
    return _fill(tensor, _tensor(values, dtype=tensor.dtype))


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    if 0 in tensor.shape:
        _warn_zero_element()
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        _warn_zero_element()
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def _warn_zero_element():
    import warnings
    warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
