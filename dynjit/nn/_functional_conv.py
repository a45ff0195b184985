"""Convolution, pooling, fold and unfold as functions (part of dynjit.nn.functional).

Each function turns PyTorch's arguments (ints or tuples, 'same' / 'valid' padding,
unbatched inputs, stride=None meaning the kernel size) into the per-dim tuples of the
registered ops in dynjit/ops/conv.py, which work on batched (N, C, *spatial) inputs."""
import numpy as np

from ..ops.dispatch import dispatch
from ..ops.registry import registry as _R
from ..tensor import Tensor

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "unfold", "fold",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
]


def _op(name, *args):
    return dispatch(_R[name], args, {})


def _int(value, name, fn):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                        f"{type(value).__name__}")
    return int(value)


def _ntuple(value, n, name, what="convolution", fn=None):
    """`value` as a tuple of n ints: an int repeats, a list or tuple must have n entries (`fn`,
    the user's function, names a non-int in the error)."""
    fn = fn or what
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                               f"the {what} dimensions, but got {name}={list(value)}")
        return tuple(_int(v, name, fn) for v in value)
    return (_int(value, name, fn),) * n


def _check_tensors(name, **tensors):
    for arg, t in tensors.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(t).__name__}")


def _batched(input, nd, name):
    """(input with a batch dim, whether one was added); PyTorch's error for other ranks."""
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                       f"of size: {list(input.shape)}")


def _unbatch(out, added):
    if not added:
        return out
    if isinstance(out, tuple):
        return tuple(o.squeeze(0) for o in out)
    return out.squeeze(0)


# -- convolution --------------------------------------------------------------------

def _conv(nd, name, input, weight, bias, stride, padding, dilation, groups):
    _check_tensors(name, input=input, weight=weight, bias=bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{name}: expected a {nd + 2}D weight (out_channels, in_channels / groups, "
                           f"*kernel_size), but got weight of size {list(weight.shape)}")
    x, added = _batched(input, nd, name)
    stride = _ntuple(stride, nd, "stride", fn=name)
    dilation = _ntuple(dilation, nd, "dilation", fn=name)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            padding = tuple(t // 2 for t in total)
            extra = [t % 2 for t in total]
            if any(extra):      # an even kernel: the odd one out of padding goes to the right, as in PyTorch
                pads = []
                for e in reversed(extra):
                    pads += [0, e]
                from .functional import pad
                x = pad(x, pads)
        else:
            raise RuntimeError(f"Invalid padding string: {padding!r}")
    else:
        padding = _ntuple(padding, nd, "padding", fn=name)
    out = _op("convolution", x, weight, bias, stride, padding, dilation, _int(groups, "groups", name))
    return _unbatch(out, added)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1D convolution over an (N, C, L) or (C, L) input, as torch.nn.functional.conv1d."""
    return _conv(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2D convolution over an (N, C, H, W) or (C, H, W) input, as torch.nn.functional.conv2d."""
    return _conv(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3D convolution over an (N, C, D, H, W) or (C, D, H, W) input, as torch.nn.functional.conv3d."""
    return _conv(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(nd, name, input, weight, bias, stride, padding, output_padding, groups, dilation,
                    output_size=None):
    _check_tensors(name, input=input, weight=weight, bias=bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{name}: expected a {nd + 2}D weight (in_channels, out_channels / groups, "
                           f"*kernel_size), but got weight of size {list(weight.shape)}")
    if isinstance(padding, str):
        raise RuntimeError(f"{name}: padding must be an int or a tuple of ints, got {padding!r}")
    x, added = _batched(input, nd, name)
    stride = _ntuple(stride, nd, "stride", fn=name)
    padding = _ntuple(padding, nd, "padding", fn=name)
    dilation = _ntuple(dilation, nd, "dilation", fn=name)
    output_padding = _ntuple(output_padding, nd, "output_padding", fn=name)
    groups = _int(groups, "groups", name)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if any(p < 0 for p in padding) or any(p < 0 for p in output_padding):
        raise RuntimeError("negative padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(output_padding)}, stride={list(stride)}, "
                           f"dilation={list(dilation)}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels "
                           f"instead")
    sizes = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                  zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding))
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(str(s) for s in x.shape[2:])}). "
                           f"Calculated output size per channel: ({' x '.join(str(s) for s in sizes)}). "
                           f"Output size is too small")
    input_size = (x.shape[0], weight.shape[1] * groups) + sizes
    out = _op("convolution_backward_input", x, weight, input_size, stride, padding, dilation, groups)
    if bias is not None:
        if tuple(bias.shape) != (weight.shape[1] * groups,):
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                               f"1-dimensional with {weight.shape[1] * groups} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
        out = out + bias.reshape([-1] + [1] * nd)
    return _unbatch(out, added)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1D convolution (the gradient of conv1d in its input), as PyTorch's."""
    return _conv_transpose(1, "conv_transpose1d", input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2D convolution (the gradient of conv2d in its input), as PyTorch's."""
    return _conv_transpose(2, "conv_transpose2d", input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3D convolution (the gradient of conv3d in its input), as PyTorch's."""
    return _conv_transpose(3, "conv_transpose3d", input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


# -- unfold / fold ------------------------------------------------------------------------

def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of an (N, C, H, W) or (C, H, W) input as columns (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x, added = (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)
    out = _op("im2col", x, _ntuple(kernel_size, 2, "kernel_size", "unfold"),
              _ntuple(dilation, 2, "dilation", "unfold"), _ntuple(padding, 2, "padding", "unfold"),
              _ntuple(stride, 2, "stride", "unfold"))
    return _unbatch(out, added)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C * kh * kw, L) back into an (N, C, *output_size) image (unfold's adjoint)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    x, added = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    out = _op("col2im", x, _ntuple(output_size, 2, "output_size", "fold"),
              _ntuple(kernel_size, 2, "kernel_size", "fold"), _ntuple(dilation, 2, "dilation", "fold"),
              _ntuple(padding, 2, "padding", "fold"), _ntuple(stride, 2, "stride", "fold"))
    return _unbatch(out, added)


# -- pooling ----------------------------------------------------------------------------------

def _pool_batched(input, nd, name):
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"{name}: non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input, "
                       f"but got input of size: {list(input.shape)}")


def _pool_stride(stride, kernel_size, nd, name):
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return kernel_size
    return _ntuple(stride, nd, "stride", name)


def _max_pool(nd, name, input, kernel_size, stride, padding, dilation, ceil_mode):
    x, added = _pool_batched(input, nd, name)
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    out = _op("max_pool", x, k, _pool_stride(stride, k, nd, name), _ntuple(padding, nd, "padding", name),
              _ntuple(dilation, nd, "dilation", name), bool(ceil_mode))
    return _unbatch(tuple(out), added)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of the last dim; with return_indices also where each max came from."""
    out = _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of the last two dims; with return_indices also the flat (h * W + w)
    index of each max in its input plane."""
    out = _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out = _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def _avg_pool(nd, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if divisor_override is not None and (isinstance(divisor_override, bool)
                                         or not isinstance(divisor_override, (int, np.integer))):
        raise TypeError(f"{name}(): argument 'divisor_override' must be int, not {type(divisor_override).__name__}")
    x, added = _pool_batched(input, nd, name)
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    out = _op("avg_pool", x, k, _pool_stride(stride, k, nd, name), _ntuple(padding, nd, "padding", name),
              bool(ceil_mode), bool(count_include_pad), divisor_override)
    return _unbatch(out, added)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of the last dim (padding counted unless count_include_pad=False)."""
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of the last two dims; divisor_override replaces the window size."""
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_size(output_size, x, nd, name):
    """output_size as nd ints; None keeps the input's size in that dim."""
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nd:
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
        sizes = output_size
    else:
        sizes = (output_size,) * nd
    return tuple(x.shape[x.ndim - nd + i] if s is None else int(s) for i, s in enumerate(sizes))


def _adaptive_batched(input, nd, name):
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")


def _adaptive(nd, name, op, input, output_size):
    x, added = _adaptive_batched(input, nd, name)
    out = _op(op, x, _adaptive_size(output_size, x, nd, name))
    return _unbatch(tuple(out) if isinstance(out, (tuple, list)) else out, added)


def adaptive_avg_pool1d(input, output_size):
    """Mean over PyTorch's adaptive windows [floor(o * L / out), ceil((o + 1) * L / out))."""
    return _adaptive(1, "adaptive_avg_pool1d", "adaptive_avg_pool", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive(2, "adaptive_avg_pool2d", "adaptive_avg_pool", input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive(3, "adaptive_avg_pool3d", "adaptive_avg_pool", input, output_size)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive(1, "adaptive_max_pool1d", "adaptive_max_pool", input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive(2, "adaptive_max_pool2d", "adaptive_max_pool", input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive windows; with return_indices also where each max came from."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


from ._functional_pool import *  # noqa: E402,F401,F403  (max_unpool, lp_pool, fractional_max_pool)
from . import _functional_pool  # noqa: E402
__all__ += _functional_pool.__all__
