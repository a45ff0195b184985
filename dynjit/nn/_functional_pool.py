"""Max unpooling, power-average (LP) pooling and fractional max pooling as functions (part of
dynjit.nn.functional, through _functional_conv).

max_unpool and fractional_max_pool call the registered ops in dynjit/ops/unpool.py; LP
pooling is PyTorch's composite of avg_pool (or max_pool for an infinite norm)."""
import numpy as np

from .. import functional as _fn, _dtype
from ._functional_conv import (_op, _ntuple, _batched, _unbatch, _check_tensors, avg_pool1d, avg_pool2d,
                               avg_pool3d, max_pool1d, max_pool2d, max_pool3d)

__all__ = [
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]


# -- max_unpool --------------------------------------------------------------------------------

def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's output size of max_unpool: the default (in - 1) * stride + kernel - 2 * padding,
    or `output_size` (nd or nd + 2 entries) when it is within a stride of the default."""
    nd = len(kernel_size)
    default = [(input.shape[input.ndim - nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        sizes = default
    else:
        sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
        if len(sizes) == nd + 2:
            sizes = sizes[2:]
        if len(sizes) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has "
                             f"a length of '{len(sizes)}'")
        for d in range(nd):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < sizes[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    for d, s in enumerate(sizes):
        if s < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={s}")
    return [int(s) for s in sizes]


def _max_unpool(nd, name, input, indices, kernel_size, stride, padding, output_size):
    _check_tensors(name, input=input, indices=indices)
    kernel_size = _ntuple(kernel_size, nd, "kernel_size", name, name)
    stride = kernel_size if stride is None else _ntuple(stride, nd, "stride", name, name)
    padding = _ntuple(padding, nd, "padding", name, name)
    sizes = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    if nd == 1:        # as PyTorch: a 2d unpooling of (..., L, 1)
        return _max_unpool(2, "max_unpool2d", input.unsqueeze(-1), indices.unsqueeze(-1), (kernel_size[0], 1),
                           (stride[0], 1), (padding[0], 0), sizes + [1]).squeeze(-1)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    x, added = _batched(input, nd, name)
    idx = indices.unsqueeze(0) if added and indices.ndim == input.ndim else indices
    return _unbatch(_op("max_unpool", x, idx, tuple(sizes)), added)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value goes to the position its index names
    (from max_pool1d(..., return_indices=True)), zeros elsewhere."""
    return _max_unpool(1, "max_unpool1d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value goes to the flat (h * W + w) position its
    index names, zeros elsewhere."""
    return _max_unpool(2, "max_unpool2d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d."""
    return _max_unpool(3, "max_unpool3d", input, indices, kernel_size, stride, padding, output_size)


# -- LP pooling ------------------------------------------------------------------------------

def _lp_pool(nd, avg, mx, input, norm_type, kernel_size, stride, ceil_mode):
    if isinstance(norm_type, (int, float)) and not isinstance(norm_type, bool):
        if norm_type == float("inf"):
            return mx(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -mx(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    count = int(np.prod(_ntuple(kernel_size, nd, "kernel_size", "lp_pool", f"lp_pool{nd}d")))
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # as PyTorch: a negative mean (odd powers) keeps its sign and is 0 under relu, so pow sees 0
    return (_fn.sign(out) * _fn.relu(_fn.abs(out))).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: (sum over each window of x ** p) ** (1 / p)."""
    return _lp_pool(1, avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over the last two dims: (sum over each window of x ** p) ** (1 / p)."""
    return _lp_pool(2, avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over the last three dims."""
    return _lp_pool(3, avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride, ceil_mode)


# -- fractional max pooling ------------------------------------------------------------------

def _fractional(nd, name, input, kernel_size, output_size, output_ratio, _random_samples):
    _check_tensors(name, input=input, _random_samples=_random_samples)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if isinstance(kernel_size, (list, tuple)) and len(kernel_size) not in (1, nd):
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of Ints")
    if isinstance(output_size, (list, tuple)) and len(output_size) not in (1, nd):
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of Ints")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    kernel_size = _ntuple(kernel_size, nd, "kernel_size", name, name)
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * nd
        if len(ratio) != nd:
            raise RuntimeError(f"{name}: output_ratio must either be a single float or a tuple of {nd} floats")
        output_size = tuple(int(input.shape[input.ndim - nd + d] * ratio[d]) for d in range(nd))
    output_size = _ntuple(output_size, nd, "output_size", name, name)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype.scalar_type_name(input.dtype)}'")
    x, added = _batched(input, nd, name)
    if _random_samples is None:
        _random_samples = _fn.rand((x.shape[0], x.shape[1], nd), dtype=input.dtype)
    out = _op("fractional_max_pool", x, kernel_size, output_size, _random_samples)
    return _unbatch(tuple(out), added)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(2, "fractional_max_pool2d", input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(3, "fractional_max_pool3d", input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max over windows of kernel_size at pseudo-random starts that shrink the last two dims to
    output_size (or output_ratio of their size); `_random_samples` (N, C, 2) in [0, 1) fixes the
    starts, as in PyTorch; with return_indices also where each max came from."""
    out = _fractional(2, "fractional_max_pool2d", input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """fractional_max_pool2d over the last three dims; `_random_samples` is (N, C, 3)."""
    out = _fractional(3, "fractional_max_pool3d", input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]
