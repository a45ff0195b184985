"""Numpy kernels of the convolution ops that dynjit/ops/conv.py registers: the forward
convolution, its adjoint in the input (which is also the transposed convolution) and its
adjoint in the weight, on (N, C, *spatial) arrays with per-dim stride, padding and
dilation tuples and `groups`. Shapes are checked by the ops before these run.

Which way each is computed was chosen by timing the alternatives on CPU
(benchmarks/bench_conv.py has the numbers):

- dense and grouped convolution: im2col, a copy of the strided window view of the padded
  input into columns (N, C, *kernel, *out), then one batched BLAS matmul with the weight
  over (sample, group); the result is already (N, O, *out), with no transpose after it.
  When each sample has few output positions, or a lot of work for one matmul, the columns
  are laid out (C, *kernel, N, *out) instead for one matmul per group (see the thresholds).
- the adjoint in the input at stride 1 is itself a convolution, of the padded grad_output
  with the flipped, transposed weight, so it takes the forward path (a long contraction
  for BLAS) where the layer has at most twice as many output as input channels; otherwise
  it is a matmul into columns followed by col2im (one strided add per kernel offset).
- the adjoint in the weight is one matmul per group of the columns with grad_output (per
  sample, then summed, when the weight is small).
- depthwise convolution (one input and one output channel per group) never builds
  columns: each kernel offset is one multiply-add of a shifted view of the input, done on
  batch chunks that stay in cache; at stride 1 the shifted views are slices of the
  flattened padded input, so the inner loops run over whole planes, not single rows.

All arithmetic stays in the input's dtype (float32 accumulates in float32, as PyTorch)."""
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

# The forward multiplies per sample (and group) when a sample has at least
# _PER_SAMPLE_MIN_POSITIONS output positions and each of those matmuls has fewer than
# _PER_SAMPLE_MAX_MACS multiply-adds: such small matmuls run on one BLAS thread, and the
# per-sample columns are a cheaper copy (whole output rows at a time), 1.2-7x faster than one
# matmul per group over the whole batch. Larger per-sample matmuls are threaded by BLAS, and
# a thread fork and join per sample costs more than it gains (1.2x faster per sample on an
# idle machine, 2-3x slower on a busy one): they go per group, one threaded matmul.
# The weight gradient multiplies per sample only for small weights (at most
# _PER_SAMPLE_MAX_WEIGHT_GRAD entries per group), where the per-group matmul's long
# contraction over N * L is the slower one.
_PER_SAMPLE_MIN_POSITIONS = 64
_PER_SAMPLE_MAX_MACS = 1 << 22
_PER_SAMPLE_MAX_WEIGHT_GRAD = 4096
# the depthwise kernels work on batch chunks of about this many bytes (an L2 cache's worth)
_CHUNK_BYTES = 1 << 18


def prod(xs):
    return math.prod(int(x) for x in xs)


def pad(x, padding, value=0, extra=None):
    """x with `padding` on both sides of each trailing dim (and `extra` more on the right)."""
    nd = len(padding)
    extra = extra or (0,) * nd
    if not any(padding) and not any(extra):
        return x
    out = np.full(x.shape[:-nd] + tuple(s + 2 * p + e for s, p, e in zip(x.shape[-nd:], padding, extra)),
                  value, dtype=x.dtype)
    out[(Ellipsis,) + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[-nd:]))] = x
    return out


def _pad_or_crop(x, before, after):
    """x with zeros added (a positive amount) or positions cut (a negative one) at both ends of
    each spatial dim."""
    cut = tuple(slice(max(0, -b), x.shape[2 + i] - max(0, -a)) for i, (b, a) in enumerate(zip(before, after)))
    x = x[(slice(None), slice(None)) + cut]
    grow_before = tuple(max(0, b) for b in before)
    grow_after = tuple(max(0, a) for a in after)
    if not any(grow_before) and not any(grow_after):
        return x
    out = np.zeros(x.shape[:2] + tuple(s + b + a for s, b, a in zip(x.shape[2:], grow_before, grow_after)),
                   dtype=x.dtype)
    out[(Ellipsis,) + tuple(slice(b, b + s) for b, s in zip(grow_before, x.shape[2:]))] = x
    return out


def windows(xp, kernel, stride, dilation, out_sizes):
    """View (..., *out_sizes, *kernel) of the windows of the padded `xp` (no copy)."""
    nd = len(kernel)
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    v = sliding_window_view(xp, extent, axis=tuple(range(xp.ndim - nd, xp.ndim)))
    return v[(Ellipsis,) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out_sizes, stride))
             + tuple(slice(None, None, d) for d in dilation)]


def columns_by_sample(x, kernel, stride, padding, dilation, out_sizes):
    """The columns of x as a contiguous (N, C, *kernel, *out) array."""
    nd = len(kernel)
    win = windows(pad(x, padding), kernel, stride, dilation, out_sizes)      # (N, C, *O, *K)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return np.ascontiguousarray(win.transpose(perm))


def columns_by_channel(x, kernel, stride, padding, dilation, out_sizes, groups):
    """The columns of x as (groups, C/groups * prod(kernel), N * prod(out)), rows ordered
    (channel, *kernel offset), columns (n, *out position)."""
    nd = len(kernel)
    win = windows(pad(x, padding), kernel, stride, dilation, out_sizes)      # (N, C, *O, *K)
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    n, c = x.shape[:2]
    return np.ascontiguousarray(win.transpose(perm)).reshape(groups, c // groups * prod(kernel),
                                                             n * prod(out_sizes))


def col2im(cols, in_sizes, kernel, stride, padding, dilation):
    """The adjoint of the im2col: cols (C, *kernel, N, *out) summed into an (N, C, *in_sizes) array."""
    nd = len(kernel)
    out_sizes = cols.shape[2 + nd:]
    c, n = cols.shape[0], cols.shape[1 + nd]
    xp = np.zeros((c, n) + tuple(i + 2 * p for i, p in zip(in_sizes, padding)), dtype=cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(slice(j * d, j * d + (o - 1) * s + 1, s)
                      for j, d, o, s in zip(offset, dilation, out_sizes, stride))
        xp[(Ellipsis,) + where] += cols[(slice(None),) + offset]
    xp = xp[(Ellipsis,) + tuple(slice(p, p + i) for p, i in zip(padding, in_sizes))]
    return np.ascontiguousarray(xp.swapaxes(0, 1))


def _by_group(g, groups):
    """grad_output (N, O, *out) as (groups, O/groups, N * prod(out))."""
    n, o = g.shape[:2]
    size = prod(g.shape[2:])
    return np.ascontiguousarray(g.reshape(n, o, size).swapaxes(0, 1)).reshape(groups, o // groups, n * size)


def is_depthwise(weight_shape, groups):
    """One input and one output channel per group (and more than one group)."""
    return groups > 1 and weight_shape[0] == groups and weight_shape[1] == 1


# -- the three convolution kernels ------------------------------------------------------------

def conv_forward(x, w, stride, padding, dilation, groups, out_sizes):
    """conv(x, w) without bias: (N, O, *out_sizes)."""
    if x.size == 0 or w.size == 0:          # an empty batch (or no channels): nothing to sum
        return np.zeros((x.shape[0], w.shape[0]) + tuple(out_sizes), dtype=np.result_type(x, w))
    if is_depthwise(w.shape, groups):
        return _depthwise_forward(x, w, stride, padding, dilation, out_sizes)
    n, o = x.shape[0], w.shape[0]
    kernel = w.shape[2:]
    rows = w.shape[1] * prod(kernel)                      # C/groups * prod(kernel)
    positions = prod(out_sizes)
    wm = w.reshape(groups, o // groups, rows)
    if positions >= _PER_SAMPLE_MIN_POSITIONS and (o // groups) * rows * positions < _PER_SAMPLE_MAX_MACS:
        cols = columns_by_sample(x, kernel, stride, padding, dilation, out_sizes)
        out = np.matmul(wm, cols.reshape(n, groups, rows, positions))      # (N, G, O/G, L)
        return out.reshape((n, o) + tuple(out_sizes))
    cols = columns_by_channel(x, kernel, stride, padding, dilation, out_sizes, groups)
    out = np.matmul(wm, cols)                                                # (G, O/G, N * L)
    return np.ascontiguousarray(out.reshape(o, n, positions).swapaxes(0, 1)).reshape((n, o) + tuple(out_sizes))


def conv_input_grad(g, w, input_size, stride, padding, dilation, groups):
    """The adjoint of conv in x: grad_output (N, O, *out) to (N, C, *input_size[2:])."""
    if g.size == 0 or w.size == 0:
        return np.zeros(tuple(input_size), dtype=np.result_type(g, w))
    in_sizes = tuple(input_size[2:])
    kernel = w.shape[2:]
    if all(s == 1 for s in stride) and w.shape[0] <= 2 * input_size[1]:
        # (only when its columns, O * K per input position, are at most twice the C * K per
        # output position of the col2im way: measured faster up to there, far slower for O >> C)
        # dx[y] = sum_j g[y + p - j * d] w[j]: a convolution of g, padded by d * (k - 1) - p on the
        # left, with the flipped weight whose in and out channels swap within each group
        before = tuple(d * (k - 1) - p for k, d, p in zip(kernel, dilation, padding))
        after = tuple(i - o + p for i, o, p in zip(in_sizes, g.shape[2:], padding))
        gp = _pad_or_crop(g, before, after)
        o, cg = w.shape[:2]
        flip = (slice(None), slice(None)) + (slice(None, None, -1),) * len(kernel)
        wt = w.reshape((groups, o // groups, cg) + tuple(kernel)).swapaxes(1, 2)
        wt = np.ascontiguousarray(wt.reshape((groups * cg, o // groups) + tuple(kernel))[flip])
        return conv_forward(gp, wt, stride, (0,) * len(kernel), dilation, groups, in_sizes)
    if is_depthwise(w.shape, groups):
        return _depthwise_input_grad(g, w, in_sizes, stride, padding, dilation)
    n, o = g.shape[:2]
    wm = w.reshape(groups, o // groups, prod(w.shape[1:]))
    cols = np.matmul(wm.transpose(0, 2, 1), _by_group(g, groups))      # (G, C/G * K, N * L)
    cols = cols.reshape((input_size[1],) + tuple(kernel) + (n,) + tuple(g.shape[2:]))
    return col2im(cols, in_sizes, kernel, stride, padding, dilation)


def conv_weight_grad(x, g, weight_size, stride, padding, dilation, groups):
    """The adjoint of conv in w: (x, grad_output) to a weight of `weight_size`."""
    if x.size == 0 or g.size == 0:
        return np.zeros(tuple(weight_size), dtype=np.result_type(x, g))
    if is_depthwise(weight_size, groups):
        return _depthwise_weight_grad(x, g, weight_size, stride, padding, dilation)
    n, o = g.shape[:2]
    rows = prod(weight_size[1:])
    positions = prod(g.shape[2:])
    if positions >= _PER_SAMPLE_MIN_POSITIONS and (o // groups) * rows <= _PER_SAMPLE_MAX_WEIGHT_GRAD:
        cols = columns_by_sample(x, weight_size[2:], stride, padding, dilation, g.shape[2:])
        cols = cols.reshape(n, groups, rows, positions)
        per_sample = np.matmul(g.reshape(n, groups, o // groups, positions), cols.transpose(0, 1, 3, 2))
        return per_sample.sum(0).reshape(weight_size)                       # (G, O/G, C/G * K)
    cols = columns_by_channel(x, weight_size[2:], stride, padding, dilation, g.shape[2:], groups)
    # cols @ g.T, not g @ cols.T: BLAS is faster with the long N * L axis contracted this way round
    gw_t = np.matmul(cols, _by_group(g, groups).transpose(0, 2, 1))        # (G, C/G * K, O/G)
    return np.ascontiguousarray(gw_t.transpose(0, 2, 1)).reshape(weight_size)


# -- depthwise: one multiply-add per kernel offset --------------------------------------------

def _offsets(kernel):
    return list(itertools.product(*(range(k) for k in kernel)))


def _chunk(n, per_sample_bytes):
    return max(1, min(n, _CHUNK_BYTES // max(1, per_sample_bytes)))


def _flat_layout(padded_sizes, out_sizes, kernel, dilation):
    """For a stride-1 convolution over a padded input flattened to its planes: the element
    strides of the spatial dims, the number of flat positions whose results hold every output
    (the rest fall in the padding and are dropped) and each kernel offset's flat shift."""
    strides = [prod(padded_sizes[i + 1:]) for i in range(len(padded_sizes))]
    span = sum((o - 1) * s for o, s in zip(out_sizes, strides)) + 1
    shifts = [sum(j * d * s for j, d, s in zip(offset, dilation, strides)) for offset in _offsets(kernel)]
    return strides, span, shifts


def _depthwise_forward(x, w, stride, padding, dilation, out_sizes):
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    dtype = np.result_type(x, w)
    xp = pad(x, padding).astype(dtype, copy=False)
    taps = w.reshape(c, prod(kernel)).astype(dtype, copy=False)
    out = np.empty((n, c) + tuple(out_sizes), dtype=dtype)
    if all(s == 1 for s in stride):
        strides, span, shifts = _flat_layout(xp.shape[2:], out_sizes, kernel, dilation)
        flat = xp.reshape(n, c, -1)
        step = _chunk(n, c * span * dtype.itemsize)
        acc = np.empty((step, c, span), dtype=dtype)
        tmp = np.empty_like(acc)
        for a in range(0, n, step):
            b = min(n, a + step)
            o, t = acc[:b - a], tmp[:b - a]
            for k, shift in enumerate(shifts):
                src = flat[a:b, :, shift:shift + span]
                if k == 0:
                    np.multiply(taps[:, k, None], src, out=o)
                else:
                    np.multiply(taps[:, k, None], src, out=t)
                    o += t
            out[a:b] = as_strided(o, (b - a, c) + tuple(out_sizes),
                                  o.strides[:2] + tuple(s * dtype.itemsize for s in strides))
        return out
    step = _chunk(n, c * prod(out_sizes) * dtype.itemsize)
    tmp = np.empty((step, c) + tuple(out_sizes), dtype=dtype)
    for a in range(0, n, step):
        b = min(n, a + step)
        o, t = out[a:b], tmp[:b - a]
        for k, offset in enumerate(_offsets(kernel)):
            src = xp[(slice(a, b), slice(None)) + tuple(
                slice(j * d, j * d + (q - 1) * s + 1, s) for j, d, q, s in zip(offset, dilation, out_sizes, stride))]
            tap = taps[(slice(None), k) + (None,) * len(kernel)]
            if k == 0:
                np.multiply(tap, src, out=o)
            else:
                np.multiply(tap, src, out=t)
                o += t
    return out


def _depthwise_input_grad(g, w, in_sizes, stride, padding, dilation):
    n, c = g.shape[:2]
    kernel, out_sizes = w.shape[2:], g.shape[2:]
    dtype = np.result_type(g, w)
    taps = w.reshape(c, prod(kernel)).astype(dtype, copy=False)
    padded = tuple(i + 2 * p for i, p in zip(in_sizes, padding))
    out = np.empty((n, c) + tuple(in_sizes), dtype=dtype)
    step = _chunk(n, c * prod(padded) * dtype.itemsize)
    buf = np.empty((step, c) + padded, dtype=dtype)
    tmp = np.empty((step, c) + tuple(out_sizes), dtype=dtype)
    inside = tuple(slice(p, p + i) for p, i in zip(padding, in_sizes))
    for a in range(0, n, step):
        b = min(n, a + step)
        xp, t = buf[:b - a], tmp[:b - a]
        xp.fill(0)
        for k, offset in enumerate(_offsets(kernel)):
            where = tuple(slice(j * d, j * d + (q - 1) * s + 1, s)
                          for j, d, q, s in zip(offset, dilation, out_sizes, stride))
            np.multiply(taps[(slice(None), k) + (None,) * len(kernel)], g[a:b], out=t)
            xp[(Ellipsis,) + where] += t
        out[a:b] = xp[(Ellipsis,) + inside]
    return out


def _depthwise_weight_grad(x, g, weight_size, stride, padding, dilation):
    n, c = x.shape[:2]
    kernel, out_sizes = tuple(weight_size[2:]), g.shape[2:]
    dtype = np.result_type(x, g)
    xp = pad(x, padding).astype(dtype, copy=False)
    taps = np.empty((c, prod(kernel)), dtype=dtype)
    if all(s == 1 for s in stride):
        strides, span, shifts = _flat_layout(xp.shape[2:], out_sizes, kernel, dilation)
        flat = xp.reshape(n, c, -1)
        spread = np.zeros((n, c, span), dtype=dtype)      # g at its outputs' flat positions, 0 between
        as_strided(spread, g.shape, spread.strides[:2] + tuple(s * dtype.itemsize for s in strides))[...] = g
        for k, shift in enumerate(shifts):
            taps[:, k] = np.einsum("ncl,ncl->c", spread, flat[:, :, shift:shift + span])
    else:
        for k, offset in enumerate(_offsets(kernel)):
            src = xp[(slice(None), slice(None)) + tuple(
                slice(j * d, j * d + (q - 1) * s + 1, s) for j, d, q, s in zip(offset, dilation, out_sizes, stride))]
            spatial = "ijklmopqrstuvwxyz"[:len(kernel)]
            taps[:, k] = np.einsum(f"nc{spatial},nc{spatial}->c", g, src)
    return taps.reshape(tuple(weight_size))
