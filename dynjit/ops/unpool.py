"""Max unpooling and fractional max pooling ops: kernels, meta functions and derivatives.

- `max_unpool(input, indices, output_size)`: the partial inverse of max pooling; each value
  of an (N, C, *in) input goes to the position its index names in the flattened spatial
  dims of an (N, C, *output_size) plane of zeros (as PyTorch, the last write wins where
  indices repeat). Its derivative gathers the gradient at the indices.
- `fractional_max_pool(input, kernel_size, output_size, random_samples)`: max over
  windows of `kernel_size` whose starts are PyTorch's pseudo-random sequence drawn from one
  sample in [0, 1) per (batch, channel, spatial dim) (Graham, "Fractional Max-Pooling");
  it returns (values, indices) like max_pool and is differentiated by max_pool_backward.

The functional layer (dynjit/nn/_functional_pool.py) turns PyTorch's arguments into these
and draws the samples."""
import itertools

import numpy as np

from .. import _dtype
from .registry import register, OTHER, COMPUTE_BOUND
from .conv import max_pool_backward, _prod, _fmt, _lowest


def _dt(a):
    return _dtype.from_numpy_dtype(a.dtype)


# -- max_unpool ------------------------------------------------------------------------------

def unpool_shape(shape, idx_shape, idx_dtype, dtype, output_size):
    shape, nd = tuple(shape), len(output_size)
    name = f"max_unpooling{nd}d"
    if len(shape) != nd + 2:
        raise RuntimeError(f"Input to {name} should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor with "
                           f"{len(shape)} dimensions.")
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"max_unpool{nd}d\" not implemented for '{_dtype.scalar_type_name(dtype)}'")
    if idx_dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_dtype.scalar_type_name(idx_dtype)}")
    if tuple(idx_shape) != shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(shape)}) "
                           f"but got indices tensor with shape: {list(idx_shape)}")
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {list(shape)} with dimension {d} being empty.")
    if any(int(o) < 0 for o in output_size):
        raise RuntimeError(f"{name}: output_size must be non-negative, got {list(output_size)}")
    return shape[:2] + tuple(int(o) for o in output_size)


@register("max_unpool", OTHER, tags=(COMPUTE_BOUND,))
def max_unpool(input, indices, output_size):
    x, idx = np.asarray(input), np.asarray(indices)
    shape = unpool_shape(x.shape, idx.shape, _dt(idx), _dt(x), output_size)
    n, c = shape[:2]
    plane = _prod(output_size)
    flat = idx.reshape(n, c, _prod(idx.shape[2:]))
    bad = (flat < 0) | (flat >= plane)
    if bad.any():
        last = flat.reshape(-1)[np.flatnonzero(bad.reshape(-1))[-1]]
        raise RuntimeError(f"Found an invalid max index: {int(last)} (output volumes are of size "
                           f"{_fmt(output_size, 'x')}")
    out = np.zeros((n, c, plane), dtype=x.dtype)
    np.put_along_axis(out, flat, x.reshape(flat.shape), axis=2)
    return out.reshape(shape)


@max_unpool.meta_fn
def _(input, indices, output_size):
    return unpool_shape(input.shape, indices.shape, indices.dtype, input.dtype, output_size), input.dtype


@max_unpool.derivative
def _(grad, indices):
    n, c = indices.shape[:2]
    picked = grad.reshape([n, c, _prod(grad.shape[2:])]).gather(2, indices.reshape([n, c, _prod(indices.shape[2:])]))
    return picked.reshape(list(indices.shape)), None


# -- fractional max pooling ------------------------------------------------------------------

def fractional_shape(shape, kernel_size, output_size, samples_shape, samples_dtype, dtype):
    shape, nd = tuple(shape), len(kernel_size)
    name = f"fractional_max_pool{nd}d"
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of Ints")
    if len(shape) != nd + 2:
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(shape)}")
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype.scalar_type_name(dtype)}'")
    for d in range(1, len(shape)):
        if shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"got{list(shape)} with dimension {d} being empty.")
    if any(k <= 0 for k in kernel_size):
        raise RuntimeError(f"{name}(): kernel_size must be greater than zero, but got {list(kernel_size)}")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}(): output_size must be non-negative, but got {list(output_size)}")
    what = ("time", "height", "width")[3 - nd:] if nd > 1 else ("width",)
    for w, i, o, k in zip(what, shape[2:], output_size, kernel_size):
        if o + k - 1 > i:
            raise RuntimeError(f"{name}(): pool {w} {k} too large relative to input {w} {i}")
    if len(samples_shape) != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {len(samples_shape)}")
    if samples_shape[0] < shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples_shape[1] != shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples_shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples_shape[2]}.")
    if samples_dtype is not dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    return shape[:2] + tuple(int(o) for o in output_size)


def fractional_starts(samples, in_size, out_size, pool):
    """PyTorch's window starts for each sample u (any shape): int((i + u) * alpha) - int(u * alpha)
    with alpha = (in - pool) / (out - 1), in the samples' dtype, and the last window flush with
    the end of the input."""
    dtype = samples.dtype.type
    if out_size > 1:
        alpha = dtype(in_size - pool) / dtype(out_size - 1)
        i = np.arange(out_size).astype(samples.dtype)
        starts = (((i + samples[..., None]) * alpha).astype(np.int64)
                  - (samples * alpha).astype(np.int64)[..., None])
    else:
        starts = np.zeros(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 0:
        starts[..., -1] = in_size - pool
    return starts


@register("fractional_max_pool", OTHER, nondiff_outputs=(1,), tags=(COMPUTE_BOUND,))
def fractional_max_pool(input, kernel_size, output_size, random_samples):
    x, u = np.asarray(input), np.asarray(random_samples)
    shape = fractional_shape(x.shape, kernel_size, output_size, u.shape, _dt(u), _dt(x))
    nd = len(kernel_size)
    n, c = shape[:2]
    in_sizes, out_sizes = x.shape[2:], shape[2:]
    # PyTorch's sample order: (w, h) for 2d, (t, h, w) for 3d
    sample_of_dim = [1, 0] if nd == 2 else list(range(nd))
    starts = []
    for d in range(nd):
        s = fractional_starts(u[:n, :, sample_of_dim[d]], in_sizes[d], out_sizes[d], kernel_size[d])  # (N, C, O_d)
        starts.append(s.reshape((n, c) + tuple(out_sizes[d] if e == d else 1 for e in range(nd))))
    strides = [_prod(in_sizes[d + 1:]) for d in range(nd)]
    base = sum(s * st for s, st in zip(starts, strides))                    # (N, C, *out) flat window starts
    base = np.broadcast_to(base, shape)
    planes = x.reshape(n, c, _prod(in_sizes))
    best = np.full(shape, _lowest(x.dtype), dtype=x.dtype)
    index = base.copy()
    if _prod(shape) == 0:
        return best, index
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        pos = base + sum(j * st for j, st in zip(offset, strides))
        v = np.take_along_axis(planes, pos.reshape(n, c, _prod(out_sizes)), axis=2).reshape(shape)
        take = (v > best) | np.isnan(v)         # as PyTorch: a later value when larger or NaN
        np.copyto(best, v, where=take)
        np.copyto(index, pos, where=take)
    return best, index


@fractional_max_pool.meta_fn
def _(input, kernel_size, output_size, random_samples):
    shape = fractional_shape(input.shape, kernel_size, output_size, random_samples.shape, random_samples.dtype,
                             input.dtype)
    return [(shape, input.dtype), (shape, _dtype.int64)]


@fractional_max_pool.derivative
def _(grads, input_shape, result):
    return max_pool_backward(grads[0], result[1], tuple(input_shape)), None
