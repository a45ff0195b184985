"""Convolution, pooling, unfold and fold ops: kernels, meta functions and derivatives.

Every op here works on an (N, C, *spatial) input with any number of spatial dims
(1, 2 or 3 in practice); the functional layer (dynjit/nn/_functional_conv.py) adds
the batch dim of unbatched inputs and turns PyTorch's arguments into the per-dim
tuples these ops take.

Convolution is three ops, closed under differentiation, so double backward is exact:

- `convolution(input, weight, bias, ...)`: y = conv(x, w) + b;
- `convolution_backward_input(grad_output, weight, input_size, ...)`: the adjoint of
  conv in x (also the transposed convolution, which is nothing else);
- `convolution_backward_weight(input, grad_output, weight_size, ...)`: the adjoint
  of conv in w.

conv is bilinear, so each op's derivative is one of the three again.

The numpy kernels of the three are in _conv_kernels.py, which says how each is computed
(im2col and one batched BLAS matmul; a direct multiply-add per kernel offset for depthwise
convolution) and why.

Pooling: `max_pool` and `adaptive_max_pool` return (values, indices) with PyTorch's
indices (flat over the spatial dims of each (n, c) plane), differentiated by
`max_pool_backward` (a scatter-add; its own derivative is a gather); `avg_pool` and
`adaptive_avg_pool` are linear, each with a `_backward` op that is its adjoint and
whose derivative is the forward op. `im2col` / `col2im` (F.unfold / F.fold) are
adjoint to each other.
"""
import itertools
import math

import numpy as np

from .. import _dtype
from .registry import register, OTHER, COMPUTE_BOUND, AUTOCAST_LOWER_PRECISION
from . import _conv_kernels as _kernels


# -- shape rules shared by kernels and meta functions ---------------------------------

def _prod(xs):
    return math.prod(int(x) for x in xs)


def _fmt(sizes, sep=" x "):
    return sep.join(str(int(s)) for s in sizes)


def _check_conv_args(nd, stride, padding, dilation, groups):
    if len(stride) != nd or len(padding) != nd or len(dilation) != nd:
        raise RuntimeError(f"convolution: stride, padding and dilation need {nd} entries each, got "
                           f"stride={list(stride)}, padding={list(padding)}, dilation={list(dilation)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_same_dtype(x_dtype, w_dtype, b_dtype=None):
    if x_dtype is _dtype.bool_:
        raise NotImplementedError("\"convolution\" not implemented for 'bool'")
    if x_dtype is not w_dtype:
        raise RuntimeError(f"Input type ({x_dtype.name}) and weight type ({w_dtype.name}) should be the same")
    if b_dtype is not None and b_dtype is not x_dtype:
        raise RuntimeError(f"Input type ({x_dtype.name}) and bias type ({b_dtype.name}) should be the same")


def _check_not_bool(name, dtype):
    if dtype is _dtype.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for 'bool'")


def conv_output_size(in_sizes, kernel, stride, padding, dilation):
    return tuple((int(i) + 2 * p - d * (k - 1) - 1) // s + 1
                 for i, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation))


def conv_shape(x, w, b, stride, padding, dilation, groups):
    """The output shape of convolution(x, w, b) from the shapes, with PyTorch's errors."""
    x, w = tuple(x), tuple(w)
    nd = len(w) - 2
    if nd < 1:
        raise RuntimeError(f"convolution: weight must have at least 3 dims (out_channels, in_channels / groups, "
                           f"*kernel_size), got weight of size {list(w)}")
    _check_conv_args(nd, stride, padding, dilation, groups)
    if len(x) != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional input for {nd + 2}-dimensional weight {list(w)}, "
                           f"but got {len(x)}-dimensional input of size {list(x)} instead")
    if w[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                           f"but got weight of size {list(w)} instead")
    if w[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(w)}] instead")
    if x[1] != w[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w)}, expected input{list(x)} to have "
                           f"{w[1] * groups} channels, but got {x[1]} channels instead")
    if b is not None and tuple(b) != (w[0],):
        raise RuntimeError(f"Given weight of size {list(w)}, expected bias to be 1-dimensional with {w[0]} "
                           f"elements, but got bias of size {list(b)} instead")
    padded = [i + 2 * p for i, p in zip(x[2:], padding)]
    extent = [d * (k - 1) + 1 for k, d in zip(w[2:], dilation)]
    if any(e > p for e, p in zip(extent, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_fmt(padded)}). Kernel size: "
                           f"({_fmt(extent)}). Kernel size can't be greater than actual input size")
    return (x[0], w[0]) + conv_output_size(x[2:], w[2:], stride, padding, dilation)


def conv_transpose_shape(g, w, input_size, stride, padding, dilation, groups):
    """Checks convolution_backward_input(g, w, input_size): `g` must be what a convolution of an
    input of `input_size` gives, up to the transposed convolution's output_padding (the last
    positions of the input that no window reaches); returns `input_size`."""
    g, w, input_size = tuple(g), tuple(w), tuple(int(s) for s in input_size)
    nd = len(w) - 2
    _check_conv_args(nd, stride, padding, dilation, groups)
    if len(g) != nd + 2 or len(input_size) != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional input for {nd + 2}-dimensional weight {list(w)}, "
                           f"but got {len(g)}-dimensional input of size {list(g)} instead")
    if w[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(w)}] instead")
    if g[1] != w[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w)}, expected input{list(g)} to have "
                           f"{w[0]} channels, but got {g[1]} channels instead")
    if input_size[0] != g[0] or input_size[1] != w[1] * groups:
        raise RuntimeError(f"convolution_backward_input: input_size {list(input_size)} does not fit "
                           f"grad_output {list(g)} and weight {list(w)} with groups={groups}")
    for i, o, k, s, p, d in zip(input_size[2:], g[2:], w[2:], stride, padding, dilation):
        reach = (o - 1) * s + d * (k - 1) + 1       # the padded positions the windows cover
        if o < 1 or i < 0 or not 0 <= i + 2 * p - reach < max(s, d):
            raise RuntimeError(f"convolution_backward_input: an output of size {list(input_size)} does not fit "
                               f"an input of size {list(g)} with kernel {list(w[2:])}, stride {list(stride)}, "
                               f"padding {list(padding)} and dilation {list(dilation)}")
    return input_size


def conv_weight_shape(x, g, weight_size, stride, padding, dilation, groups):
    x, g, weight_size = tuple(x), tuple(g), tuple(int(s) for s in weight_size)
    conv_shape(x, weight_size, None, stride, padding, dilation, groups)
    conv_transpose_shape(g, weight_size, x, stride, padding, dilation, groups)
    return weight_size


# -- numpy helpers (the kernels themselves are in _conv_kernels) ------------------------

_pad = _kernels.pad
_windows = _kernels.windows


def _im2col(x, kernel, stride, padding, dilation, out_sizes, groups):
    return _kernels.columns_by_channel(x, kernel, stride, padding, dilation, out_sizes, groups)


_col2im = _kernels.col2im


def _dt(a):
    return _dtype.from_numpy_dtype(a.dtype)


# -- convolution --------------------------------------------------------------------

@register("convolution", OTHER, tags=(COMPUTE_BOUND, AUTOCAST_LOWER_PRECISION))
def convolution(input, weight, bias, stride, padding, dilation, groups):
    x, w = np.asarray(input), np.asarray(weight)
    b = None if bias is None else np.asarray(bias)
    _check_same_dtype(_dt(x), _dt(w), None if b is None else _dt(b))
    shape = conv_shape(x.shape, w.shape, None if b is None else b.shape, stride, padding, dilation, groups)
    nd = w.ndim - 2
    out = _kernels.conv_forward(x, w, stride, padding, dilation, groups, shape[2:])
    if b is not None:
        out += b.astype(out.dtype).reshape((-1,) + (1,) * nd)
    return out


@convolution.meta_fn
def _(input, weight, bias, stride, padding, dilation, groups):
    _check_same_dtype(input.dtype, weight.dtype, None if bias is None else bias.dtype)
    return conv_shape(input.shape, weight.shape, None if bias is None else bias.shape,
                      stride, padding, dilation, groups), input.dtype


def _first(t, sizes):
    """t cut to its first `sizes` positions in each spatial dim (a convolution can reach more
    positions than the transposed convolution's output_padding kept)."""
    sizes = tuple(sizes)
    if tuple(t.shape[2:]) == sizes:
        return t
    return t[(slice(None), slice(None)) + tuple(slice(0, s) for s in sizes)]


@convolution.derivative
def _(grad, input, weight, stride, padding, dilation, groups, needs):
    g_in = (convolution_backward_input(grad, weight, tuple(input.shape), stride, padding, dilation, groups)
            if needs[0] else None)
    g_w = (convolution_backward_weight(input, grad, tuple(weight.shape), stride, padding, dilation, groups)
           if needs[1] else None)
    g_b = grad.sum([0] + list(range(2, grad.ndim))) if needs[2] else None
    return g_in, g_w, g_b


@register("convolution_backward_input", OTHER, tags=(COMPUTE_BOUND,))
def convolution_backward_input(grad_output, weight, input_size, stride, padding, dilation, groups):
    g, w = np.asarray(grad_output), np.asarray(weight)
    _check_same_dtype(_dt(g), _dt(w))
    input_size = conv_transpose_shape(g.shape, w.shape, input_size, stride, padding, dilation, groups)
    return _kernels.conv_input_grad(g, w, input_size, stride, padding, dilation, groups)


@convolution_backward_input.meta_fn
def _(grad_output, weight, input_size, stride, padding, dilation, groups):
    _check_same_dtype(grad_output.dtype, weight.dtype)
    return conv_transpose_shape(grad_output.shape, weight.shape, input_size, stride, padding, dilation,
                                groups), grad_output.dtype


@convolution_backward_input.derivative
def _(grad, grad_output, weight, stride, padding, dilation, groups, needs):
    g_out = (_first(convolution(grad, weight, None, stride, padding, dilation, groups), grad_output.shape[2:])
             if needs[0] else None)
    g_w = (convolution_backward_weight(grad, grad_output, tuple(weight.shape), stride, padding, dilation, groups)
           if needs[1] else None)
    return g_out, g_w


@register("convolution_backward_weight", OTHER, tags=(COMPUTE_BOUND,))
def convolution_backward_weight(input, grad_output, weight_size, stride, padding, dilation, groups):
    x, g = np.asarray(input), np.asarray(grad_output)
    _check_same_dtype(_dt(x), _dt(g))
    weight_size = conv_weight_shape(x.shape, g.shape, weight_size, stride, padding, dilation, groups)
    return _kernels.conv_weight_grad(x, g, weight_size, stride, padding, dilation, groups)


@convolution_backward_weight.meta_fn
def _(input, grad_output, weight_size, stride, padding, dilation, groups):
    _check_same_dtype(input.dtype, grad_output.dtype)
    return conv_weight_shape(input.shape, grad_output.shape, weight_size, stride, padding, dilation,
                             groups), input.dtype


@convolution_backward_weight.derivative
def _(grad, input, grad_output, stride, padding, dilation, groups, needs):
    g_in = (convolution_backward_input(grad_output, grad, tuple(input.shape), stride, padding, dilation, groups)
            if needs[0] else None)
    g_out = (_first(convolution(input, grad, None, stride, padding, dilation, groups), grad_output.shape[2:])
             if needs[1] else None)
    return g_in, g_out


# -- pooling shapes ------------------------------------------------------------------------

def pool_output_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:     # the last window must start inside input or left padding
        out -= 1
    return out


def pool_shape(name, shape, kernel_size, stride, padding, dilation, ceil_mode):
    shape = tuple(shape)
    nd = len(kernel_size)
    if not (len(stride) == len(padding) == len(dilation) == nd):
        raise RuntimeError(f"{name}: kernel_size, stride, padding and dilation need {nd} entries each")
    if len(shape) != nd + 2 or _prod(shape[1:]) == 0:
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if any(k <= 0 for k in kernel_size):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got {list(kernel_size)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{name}: dilation must be greater than zero, but got {list(dilation)}")
    for k, p, d in zip(kernel_size, padding, dilation):
        if p < 0 or 2 * p > d * (k - 1) + 1:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    out = tuple(pool_output_size(i, k, s, p, d, ceil_mode)
                for i, k, s, p, d in zip(shape[-nd:], kernel_size, stride, padding, dilation))
    if any(o < 1 for o in out):
        lead = shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({_fmt((lead,) + shape[-nd:], 'x')}). Calculated output size: "
                           f"({_fmt((lead,) + out, 'x')}). Output size is too small")
    return shape[:-nd] + out


def _right_extra(in_sizes, out_sizes, kernel, stride, padding, dilation):
    """How much more than `padding` the right side needs so the last (ceil_mode) window fits."""
    return tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - i - 2 * p)
                 for i, o, k, s, p, d in zip(in_sizes, out_sizes, kernel, stride, padding, dilation))


def _lowest(np_dtype):
    return -np.inf if np_dtype.kind == "f" else (False if np_dtype.kind == "b" else np.iinfo(np_dtype).min)


def _grid(out_sizes, nd):
    """Per spatial dim, arange(out) shaped to broadcast against (..., *out_sizes)."""
    return [np.arange(o).reshape((o,) + (1,) * (nd - 1 - i)) for i, o in enumerate(out_sizes)]


# -- max pooling ---------------------------------------------------------------------------

@register("max_pool", OTHER, nondiff_outputs=(1,), tags=(COMPUTE_BOUND,))
def max_pool(input, kernel_size, stride, padding, dilation, ceil_mode):
    x = np.asarray(input)
    _check_not_bool("max_pool", _dt(x))
    shape = pool_shape("max_pool", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    nd = len(kernel_size)
    in_sizes, out_sizes = x.shape[-nd:], shape[-nd:]
    extra = _right_extra(in_sizes, out_sizes, kernel_size, stride, padding, dilation)
    if not any(padding) and not any(extra) and not (x.dtype.kind == "f" and np.isnan(x).any()):
        return _max_pool_unpadded(x, shape, kernel_size, stride, dilation)
    xp = _pad(x, padding, _lowest(x.dtype), extra)
    grid = _grid(out_sizes, nd)
    # as PyTorch: start at the window's first position inside the input, take a later value
    # when it is larger or NaN
    coords = []
    for g, s, p, d in zip(grid, stride, padding, dilation):
        start = g * s - p
        coords.append(np.where(start < 0, start + (-start + d - 1) // d * d, start))
    flat_of = _flat_index(in_sizes)
    best = np.full(shape, _lowest(x.dtype), dtype=x.dtype)
    index = np.broadcast_to(flat_of(coords), shape).copy()
    floating = x.dtype.kind == "f"
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        where = tuple(slice(j * d, j * d + (o - 1) * s + 1, s)
                      for j, d, o, s in zip(offset, dilation, out_sizes, stride))
        v = xp[(Ellipsis,) + where]
        take = v > best
        if floating:
            take |= np.isnan(v)
        np.copyto(best, v, where=take)
        pos = flat_of([g * s - p + j * d for g, s, p, j, d in zip(grid, stride, padding, offset, dilation)])
        np.copyto(index, np.broadcast_to(pos, shape), where=take)
    return best, index


def _max_pool_unpadded(x, shape, kernel_size, stride, dilation):
    """max_pool without padding or NaNs, where every window position is in the input: the max
    as a chain of np.maximum over the kernel offsets, then the first offset that holds it (the
    first maximum, as PyTorch's scan takes), found by going through the offsets backwards.
    Twice as fast as the scan, which selects values and indices at every offset."""
    nd = len(kernel_size)
    in_sizes, out_sizes = x.shape[2:], shape[2:]
    offsets = list(itertools.product(*(range(k) for k in kernel_size)))
    views = [x[(Ellipsis,) + tuple(slice(j * d, j * d + (o - 1) * s + 1, s)
                                   for j, d, o, s in zip(offset, dilation, out_sizes, stride))]
             for offset in offsets]
    values = views[0].copy()
    for v in views[1:]:
        np.maximum(values, v, out=values)
    local = np.zeros(shape, dtype=np.int32)
    for k in range(len(views) - 1, -1, -1):
        np.copyto(local, k, where=views[k] == values)
    flat_of = _flat_index(in_sizes)
    table = np.array([flat_of([j * d for j, d in zip(offset, dilation)]) for offset in offsets], dtype=np.int64)
    base = flat_of([g * s for g, s in zip(_grid(out_sizes, nd), stride)])
    return values, base + table[local]


def _flat_index(in_sizes):
    strides = [_prod(in_sizes[i + 1:]) for i in range(len(in_sizes))]
    return lambda coords: sum(c * st for c, st in zip(coords, strides))


@max_pool.meta_fn
def _(input, kernel_size, stride, padding, dilation, ceil_mode):
    _check_not_bool("max_pool", input.dtype)
    shape = pool_shape("max_pool", input.shape, kernel_size, stride, padding, dilation, ceil_mode)
    return [(shape, input.dtype), (shape, _dtype.int64)]


@max_pool.derivative
def _(grads, input_shape, result):
    return max_pool_backward(grads[0], result[1], tuple(input_shape))


@register("max_pool_backward", OTHER, tags=(COMPUTE_BOUND,))
def max_pool_backward(grad_output, indices, input_size):
    g, idx = np.asarray(grad_output), np.asarray(indices)
    _max_pool_backward_check(g.shape, idx.shape, _dt(idx), input_size)
    planes, plane = _prod(input_size[:2]), _prod(input_size[2:])
    flat = idx.reshape(planes, _prod(idx.shape[2:])) + (np.arange(planes) * plane)[:, None]
    out = np.bincount(flat.ravel(), weights=g.reshape(-1), minlength=planes * plane)
    return out.astype(g.dtype).reshape(tuple(input_size))


def _max_pool_backward_check(g, idx, idx_dtype, input_size):
    if tuple(g) != tuple(idx):
        raise RuntimeError(f"max_pool_backward: grad_output of shape {list(g)} and indices of shape "
                           f"{list(idx)} differ")
    if idx_dtype is not _dtype.int64:
        raise RuntimeError(f"max_pool_backward: expected int64 indices, got {idx_dtype.name}")
    if len(input_size) != len(g) or len(g) < 3 or tuple(input_size[:2]) != tuple(g[:2]):
        raise RuntimeError(f"max_pool_backward: input_size {list(input_size)} does not fit grad_output "
                           f"{list(g)} (both (N, C, *spatial))")


@max_pool_backward.meta_fn
def _(grad_output, indices, input_size):
    if not grad_output.dtype.is_floating_point:
        raise RuntimeError(f"max_pool_backward: expected a floating point grad_output, got {grad_output.dtype.name}")
    _max_pool_backward_check(grad_output.shape, indices.shape, indices.dtype, input_size)
    return tuple(int(s) for s in input_size), grad_output.dtype


@max_pool_backward.derivative
def _(grad, indices):
    n, c = indices.shape[:2]
    planes_in, planes_out = _prod(grad.shape[2:]), _prod(indices.shape[2:])
    picked = grad.reshape([n, c, planes_in]).gather(2, indices.reshape([n, c, planes_out]))
    return picked.reshape(list(indices.shape)), None


# -- adaptive max pooling ---------------------------------------------------------------------

def adaptive_windows(in_size, out_size):
    """PyTorch's adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)) for each o."""
    return [(o * in_size // out_size, -(-(o + 1) * in_size // out_size)) for o in range(out_size)]


def adaptive_shape(name, shape, output_size):
    shape, nd = tuple(shape), len(output_size)
    if len(shape) != nd + 2:
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(shape)}")
    if any(s == 0 for s in shape[1:]):
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(shape)} with dimension {shape.index(0)} being empty")
    if any(int(o) < 0 for o in output_size):
        raise RuntimeError(f"{name}(): output_size must be non-negative, got {list(output_size)}")
    return shape[:2] + tuple(int(o) for o in output_size)


@register("adaptive_max_pool", OTHER, nondiff_outputs=(1,), tags=(COMPUTE_BOUND,))
def adaptive_max_pool(input, output_size):
    x = np.asarray(input)
    _check_not_bool("adaptive_max_pool", _dt(x))
    shape = adaptive_shape("adaptive_max_pool", x.shape, output_size)
    nd = len(output_size)
    in_sizes = x.shape[2:]
    if all(o and i % o == 0 for i, o in zip(in_sizes, shape[2:])) and not (
            x.dtype.kind == "f" and np.isnan(x).any()):
        kernel = tuple(i // o for i, o in zip(in_sizes, shape[2:]))   # equal windows: a plain max pool
        return _max_pool_unpadded(x, shape, kernel, kernel, (1,) * nd)
    values = np.empty(shape, dtype=x.dtype)
    index = np.empty(shape, dtype=np.int64)
    lead = x.shape[:2]
    flat_of = _flat_index(in_sizes)
    windows = [adaptive_windows(i, o) for i, o in zip(in_sizes, shape[2:])]
    for pos in itertools.product(*(range(o) for o in shape[2:])):
        bounds = [windows[d][pos[d]] for d in range(nd)]
        block = x[(Ellipsis,) + tuple(slice(a, b) for a, b in bounds)]
        sizes = block.shape[2:]
        flat = block.reshape(lead + (_prod(block.shape[2:]),))
        arg = _first_max(flat)
        values[(Ellipsis,) + pos] = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
        local = np.unravel_index(arg, sizes)
        index[(Ellipsis,) + pos] = flat_of([a + l for (a, _), l in zip(bounds, local)])
    return values, index


def _first_max(flat):
    """Index of the max along the last axis; of the last NaN where there are NaNs (as PyTorch)."""
    arg = np.argmax(flat, axis=-1)
    if flat.dtype.kind == "f":
        nan = np.isnan(flat)
        if nan.any():
            last_nan = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            arg = np.where(nan.any(-1), last_nan, arg)
    return arg


@adaptive_max_pool.meta_fn
def _(input, output_size):
    _check_not_bool("adaptive_max_pool", input.dtype)
    shape = adaptive_shape("adaptive_max_pool", input.shape, output_size)
    return [(shape, input.dtype), (shape, _dtype.int64)]


@adaptive_max_pool.derivative
def _(grads, input_shape, result):
    return max_pool_backward(grads[0], result[1], tuple(input_shape))


# -- average pooling -------------------------------------------------------------------------

def _avg_divisor(in_sizes, out_sizes, kernel, stride, padding, count_include_pad, divisor_override):
    """The divisor of each output position (PyTorch's rule), shaped to broadcast over (*out)."""
    if divisor_override is not None:
        return divisor_override
    nd = len(kernel)
    div = 1
    for g, i, k, s, p in zip(_grid(out_sizes, nd), in_sizes, kernel, stride, padding):
        start = g * s - p
        end = np.minimum(start + k, i + p)
        div = div * ((end - start) if count_include_pad else (np.minimum(end, i) - np.maximum(start, 0)))
    return div


def _avg_check(divisor_override):
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")


@register("avg_pool", OTHER, tags=(COMPUTE_BOUND,))
def avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    x = np.asarray(input)
    _check_not_bool("avg_pool", _dt(x))
    _avg_check(divisor_override)
    nd = len(kernel_size)
    shape = pool_shape("avg_pool", x.shape, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    in_sizes, out_sizes = x.shape[2:], shape[2:]
    acc = x.dtype if x.dtype.kind == "f" else np.float64
    xp = _pad(x.astype(acc, copy=False), padding, 0,
              _right_extra(in_sizes, out_sizes, kernel_size, stride, padding, (1,) * nd))
    total = np.zeros(shape, dtype=acc)
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        total += xp[(Ellipsis,) + tuple(slice(j, j + (o - 1) * s + 1, s)
                                        for j, o, s in zip(offset, out_sizes, stride))]
    div = _avg_divisor(in_sizes, out_sizes, kernel_size, stride, padding, count_include_pad, divisor_override)
    if x.dtype.kind != "f":
        return np.trunc(total / div).astype(x.dtype)        # integer division as PyTorch's
    return (total / np.asarray(div, dtype=acc)).astype(x.dtype, copy=False)


@avg_pool.meta_fn
def _(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    _check_not_bool("avg_pool", input.dtype)
    _avg_check(divisor_override)
    nd = len(kernel_size)
    return pool_shape("avg_pool", input.shape, kernel_size, stride, padding, (1,) * nd, ceil_mode), input.dtype


@avg_pool.derivative
def _(grad, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return avg_pool_backward(grad, tuple(input_shape), kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override)


@register("avg_pool_backward", OTHER, tags=(COMPUTE_BOUND,))
def avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override=None):
    g = np.asarray(grad_output)
    _avg_pool_backward_check(g.shape, input_size, kernel_size, stride, padding, ceil_mode, divisor_override)
    in_sizes, out_sizes = tuple(input_size[2:]), g.shape[2:]
    div = _avg_divisor(in_sizes, out_sizes, kernel_size, stride, padding, count_include_pad, divisor_override)
    gs = g / np.asarray(div, dtype=g.dtype)
    extra = _right_extra(in_sizes, out_sizes, kernel_size, stride, padding, (1,) * len(kernel_size))
    xp = np.zeros(g.shape[:2] + tuple(i + 2 * p + e for i, p, e in zip(in_sizes, padding, extra)), dtype=g.dtype)
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        xp[(Ellipsis,) + tuple(slice(j, j + (o - 1) * s + 1, s) for j, o, s in zip(offset, out_sizes, stride))] += gs
    return np.ascontiguousarray(xp[(Ellipsis,) + tuple(slice(p, p + i) for p, i in zip(padding, in_sizes))])


def _avg_pool_backward_check(g, input_size, kernel_size, stride, padding, ceil_mode, divisor_override):
    _avg_check(divisor_override)
    expected = pool_shape("avg_pool_backward", input_size, kernel_size, stride, padding,
                          (1,) * len(kernel_size), ceil_mode)
    if tuple(g) != tuple(expected):
        raise RuntimeError(f"avg_pool_backward: expected grad_output of shape {list(expected)}, got {list(g)}")


@avg_pool_backward.meta_fn
def _(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    _avg_pool_backward_check(grad_output.shape, input_size, kernel_size, stride, padding, ceil_mode,
                             divisor_override)
    return tuple(int(s) for s in input_size), grad_output.dtype


@avg_pool_backward.derivative
def _(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return avg_pool(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


# -- adaptive average pooling: one averaging matrix per spatial dim ------------------------------

def _adaptive_matrix(in_size, out_size, dtype):
    m = np.zeros((out_size, in_size), dtype=dtype)
    for o, (a, b) in enumerate(adaptive_windows(in_size, out_size)):
        m[o, a:b] = 1.0 / (b - a)
    return m


def _apply_per_dim(x, matrices):
    """x with matrices[k] (new, old) applied along spatial dim k (the trailing dims)."""
    nd = len(matrices)
    for k, m in enumerate(matrices):
        axis = x.ndim - nd + k
        moved = np.moveaxis(x, axis, -1)
        x = np.moveaxis(moved @ m.T, -1, axis)
    return np.ascontiguousarray(x)


@register("adaptive_avg_pool", OTHER, tags=(COMPUTE_BOUND,))
def adaptive_avg_pool(input, output_size):
    x = np.asarray(input)
    shape = adaptive_shape("adaptive_avg_pool", x.shape, output_size)
    _check_float("adaptive_avg_pool", _dt(x))
    return _apply_per_dim(x, [_adaptive_matrix(i, o, x.dtype) for i, o in zip(x.shape[2:], shape[2:])])


def _check_float(name, dtype):
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for \'{dtype.name}\': it needs a floating point '
                                  "tensor; convert it with .float() or .double()")


@adaptive_avg_pool.meta_fn
def _(input, output_size):
    _check_float("adaptive_avg_pool", input.dtype)
    return adaptive_shape("adaptive_avg_pool", input.shape, output_size), input.dtype


@adaptive_avg_pool.derivative
def _(grad, input_shape):
    return adaptive_avg_pool_backward(grad, tuple(input_shape))


@register("adaptive_avg_pool_backward", OTHER, tags=(COMPUTE_BOUND,))
def adaptive_avg_pool_backward(grad_output, input_size):
    g = np.asarray(grad_output)
    _adaptive_backward_check(g.shape, input_size)
    return _apply_per_dim(g, [_adaptive_matrix(i, o, g.dtype).T for i, o in zip(input_size[2:], g.shape[2:])])


def _adaptive_backward_check(g, input_size):
    if len(g) != len(input_size) or len(g) < 3 or tuple(g[:2]) != tuple(input_size[:2]):
        raise RuntimeError(f"adaptive_avg_pool_backward: grad_output of shape {list(g)} does not fit an "
                           f"input of size {list(input_size)}")


@adaptive_avg_pool_backward.meta_fn
def _(grad_output, input_size):
    _adaptive_backward_check(grad_output.shape, input_size)
    return tuple(int(s) for s in input_size), grad_output.dtype


@adaptive_avg_pool_backward.derivative
def _(grad, grad_output_shape):
    return adaptive_avg_pool(grad, tuple(grad_output_shape[2:]))


# -- unfold (im2col) and fold (col2im) ---------------------------------------------------------

def _sliding_args(kernel_size, dilation, padding, stride):
    for name, v, least in (("kernel_size", kernel_size, 1), ("dilation", dilation, 1),
                           ("padding", padding, 0), ("stride", stride, 1)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
        if any(e < least for e in v):
            what = "greater than zero" if least else "non-negative"
            raise RuntimeError(f"expected {name} to be {what}, but got {name}={tuple(v)}")


def _blocks(in_sizes, kernel_size, dilation, padding, stride):
    blocks = conv_output_size(in_sizes, kernel_size, stride, padding, dilation)
    return blocks


def im2col_shape(shape, kernel_size, dilation, padding, stride):
    shape = tuple(shape)
    _sliding_args(kernel_size, dilation, padding, stride)
    if len(shape) != 4 or _prod(shape[1:]) == 0:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor input with possible 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    blocks = _blocks(shape[2:], kernel_size, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({shape[2]}, {shape[3]}), kernel_size={tuple(kernel_size)}, "
                           f"dilation={tuple(dilation)}, padding={tuple(padding)}, calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    return (shape[0], shape[1] * _prod(kernel_size), _prod(blocks))


@register("im2col", OTHER, tags=(COMPUTE_BOUND,))
def im2col(input, kernel_size, dilation, padding, stride):
    x = np.asarray(input)
    shape = im2col_shape(x.shape, kernel_size, dilation, padding, stride)
    blocks = _blocks(x.shape[2:], kernel_size, dilation, padding, stride)
    cols = _im2col(x, kernel_size, stride, padding, dilation, blocks, 1)        # (1, C * K, N * L)
    return np.ascontiguousarray(cols.reshape(shape[1], shape[0], shape[2]).swapaxes(0, 1))


@im2col.meta_fn
def _(input, kernel_size, dilation, padding, stride):
    return im2col_shape(input.shape, kernel_size, dilation, padding, stride), input.dtype


@im2col.derivative
def _(grad, input_shape, kernel_size, dilation, padding, stride):
    return col2im(grad, tuple(input_shape[2:]), kernel_size, dilation, padding, stride)


def col2im_shape(shape, output_size, kernel_size, dilation, padding, stride):
    shape = tuple(shape)
    _sliding_args(kernel_size, dilation, padding, stride)
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    if len(shape) != 3 or _prod(shape[1:]) == 0:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    k = _prod(kernel_size)
    if shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={shape[1]} and kernel_size={tuple(kernel_size)}.")
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given output_size={tuple(output_size)}, kernel_size={tuple(kernel_size)}, "
                           f"dilation={tuple(dilation)}, padding={tuple(padding)}, stride={tuple(stride)}, "
                           f"calculated shape of the array of sliding blocks as ({blocks[0]}, {blocks[1]}), "
                           f"but its components must be at least one.")
    if shape[2] != _prod(blocks):
        raise RuntimeError(f"Given output_size={tuple(output_size)}, kernel_size={tuple(kernel_size)}, "
                           f"dilation={tuple(dilation)}, padding={tuple(padding)}, stride={tuple(stride)}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {_prod(blocks)}, but got input.size(2)={shape[2]}.")
    return (shape[0], shape[1] // k) + tuple(int(o) for o in output_size)


@register("col2im", OTHER, tags=(COMPUTE_BOUND,))
def col2im(input, output_size, kernel_size, dilation, padding, stride):
    c = np.asarray(input)
    shape = col2im_shape(c.shape, output_size, kernel_size, dilation, padding, stride)
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    cols = np.moveaxis(c.reshape((shape[0], shape[1]) + tuple(kernel_size) + blocks), 0, 3)   # (C, *K, N, *L)
    return _col2im(cols, tuple(output_size), kernel_size, stride, padding, dilation)


@col2im.meta_fn
def _(input, output_size, kernel_size, dilation, padding, stride):
    return col2im_shape(input.shape, output_size, kernel_size, dilation, padding, stride), input.dtype


@col2im.derivative
def _(grad, kernel_size, dilation, padding, stride):
    return im2col(grad, kernel_size, dilation, padding, stride)


from . import unpool  # noqa: E402,F401  (registers max_unpool and fractional_max_pool)
