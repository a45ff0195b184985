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
- grouped convolution with narrow groups (fewer than 64 channels in and out per group)
  never builds columns: the padded input is split into its stride phases, each flattened, so
  that every kernel offset reads one contiguous slice of a phase plane; the forward is one
  matmul per offset (weights (G, O/G, C/G) times the slice), the input gradient the
  transposed weights times grad_output added into the slices, the weight gradient
  grad_output times each slice. The columns would copy the input prod(kernel) times for
  little matmul work per copied element (2.7x slower forward for 4 groups of 16 channels).
- depthwise convolution (one input and one output channel per group) never builds
  columns either: at stride 1 all kernel offsets of a block of channels are one strided
  view of the flat padded planes, multiplied by the weights in one broadcast and summed
  over the offsets (the input gradient likewise, over the spread grad_output with the
  offsets reversed); at larger strides each offset is one multiply-add of strided windows;
  the weight gradient is one dot product per offset over the phase planes.

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
# grouped convolutions with fewer input and output channels per group than this multiply per
# kernel offset (measured: 2.7x faster forward at 16 per group on 56x56 planes, 1.2x slower at
# 128 per group on 14x14, where the columns' one long contraction suits BLAS better)
_OFFSET_MATMUL_MAX_CHANNELS = 64


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


def uses_offset_matmuls(weight_shape, groups):
    """A grouped convolution with narrow groups (fewer than _OFFSET_MATMUL_MAX_CHANNELS input
    and output channels each) multiplies per kernel offset instead of building columns: the
    columns copy the input prod(kernel) times for little matmul work per copied element."""
    return (groups > 1 and weight_shape[1] < _OFFSET_MATMUL_MAX_CHANNELS
            and weight_shape[0] // groups < _OFFSET_MATMUL_MAX_CHANNELS)


# -- the three convolution kernels ------------------------------------------------------------

def conv_forward(x, w, stride, padding, dilation, groups, out_sizes):
    """conv(x, w) without bias: (N, O, *out_sizes)."""
    if x.size == 0 or w.size == 0:          # an empty batch (or no channels): nothing to sum
        return np.zeros((x.shape[0], w.shape[0]) + tuple(out_sizes), dtype=np.result_type(x, w))
    if is_depthwise(w.shape, groups):
        return _depthwise_forward(x, w, stride, padding, dilation, out_sizes)
    if uses_offset_matmuls(w.shape, groups):
        return _grouped_forward(x, w, stride, padding, dilation, groups, out_sizes)
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
    if is_depthwise(w.shape, groups):
        return _depthwise_input_grad(g, w, in_sizes, stride, padding, dilation)
    if uses_offset_matmuls(w.shape, groups):
        return _grouped_input_grad(g, w, in_sizes, stride, padding, dilation, groups)
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
    if uses_offset_matmuls(weight_size, groups):
        return _grouped_weight_grad(x, g, weight_size, stride, padding, dilation, groups)
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


# -- grouped and depthwise: one multiply-add (or small matmul) per kernel offset ---------------
#
# The padded input is split into its stride phases (for stride s, the positions i with
# i % s == r, for each r), each phase a plane flattened to one axis. A kernel offset j (at
# dilation d) then reads, for every output position, phase (j * d) % s at the output's own
# position shifted by (j * d) // s: one contiguous slice of the flat phase plane, `span` long,
# the same for every offset. Output rows lie `q` apart in it (the phase plane's width); the
# positions between the rows are computed and dropped (their gradients are zero). So every
# offset is one whole-plane multiply-add (depthwise) or one matmul over the group's channels
# (grouped), at any stride and dilation, with no columns built.

def _offsets(kernel):
    return list(itertools.product(*(range(k) for k in kernel)))


def _chunk(n, per_sample_bytes):
    return max(1, min(n, _CHUNK_BYTES // max(1, per_sample_bytes)))


def _phase_sizes(padded_sizes, stride):
    """The size of each stride phase of a padded dim (the last phases may hold one less
    real position: they get one more zero)."""
    return tuple(-(-p // s) for p, s in zip(padded_sizes, stride))


def _phases(x, padding, stride):
    """x padded and split into its stride phases: (N, C, prod(stride), prod(phase sizes)),
    phases in row-major order of their per-dim residues."""
    n, c = x.shape[:2]
    padded = tuple(i + 2 * p for i, p in zip(x.shape[2:], padding))
    q = _phase_sizes(padded, stride)
    xp = pad(x, padding, extra=tuple(qi * s - p for qi, s, p in zip(q, stride, padded)))
    if all(s == 1 for s in stride):
        return xp.reshape(n, c, 1, prod(q))
    nd = len(stride)
    split = xp.reshape((n, c) + tuple(itertools.chain.from_iterable(zip(q, stride))))   # (N, C, q0, s0, q1, s1, ...)
    perm = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
    return np.ascontiguousarray(split.transpose(perm)).reshape(n, c, prod(stride), prod(q))


def _unphase(acc, stride, q, padding, in_sizes):
    """The inverse of _phases on an (M, C, prod(stride), prod(q)) array: the (M, C, *in_sizes)
    positions inside the padding (a view)."""
    m, c = acc.shape[:2]
    nd = len(stride)
    if all(s == 1 for s in stride):
        planes = acc.reshape((m, c) + tuple(q))
    else:
        split = acc.reshape((m, c) + tuple(stride) + tuple(q))            # (M, C, s0, s1, ..., q0, q1, ...)
        perm = (0, 1) + tuple(itertools.chain.from_iterable((2 + nd + i, 2 + i) for i in range(nd)))
        planes = split.transpose(perm).reshape((m, c) + tuple(qi * s for qi, s in zip(q, stride)))
    return planes[(slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(padding, in_sizes))]


def _tap_layout(kernel, stride, dilation, q, out_sizes):
    """Per kernel offset (in the weight's order): (its phase, its flat shift in the phase
    plane); the `span` of flat positions holding every output; the element strides of the
    output positions in the flat plane."""
    flat_strides = tuple(prod(q[i + 1:]) for i in range(len(q)))
    span = sum((o - 1) * f for o, f in zip(out_sizes, flat_strides)) + 1
    taps = []
    for offset in _offsets(kernel):
        reach = [j * d for j, d in zip(offset, dilation)]
        phase = 0
        for r, s in zip(reach, stride):
            phase = phase * s + r % s
        taps.append((phase, sum(r // s * f for r, s, f in zip(reach, stride, flat_strides))))
    return taps, span, flat_strides


def _on_grid(flat, out_sizes, flat_strides):
    """The output positions of flat results (M, C, span): an (M, C, *out_sizes) view."""
    item = flat.itemsize
    return as_strided(flat, flat.shape[:2] + tuple(out_sizes),
                      flat.strides[:2] + tuple(f * item for f in flat_strides), writeable=False)


def _spread(buf, g, flat_strides):
    """g (M, C, *out) written at its positions in the flat buffer `buf` (M, C, span), whose
    other positions stay zero."""
    item = buf.itemsize
    as_strided(buf, g.shape, buf.strides[:2] + tuple(f * item for f in flat_strides))[...] = g


def _padded_sizes(in_sizes, padding):
    return tuple(i + 2 * p for i, p in zip(in_sizes, padding))


def _phase_groups(kernel, stride, dilation, flat_strides):
    """The kernel offsets grouped by the stride phase they read. In each dim, the offsets
    j0, j0 + t, j0 + 2t, ... (t = s / gcd(s, d)) read one phase, at flat shifts d / gcd(s, d)
    flat strides apart: a regular grid, so a phase's offsets are one strided view of its plane.
    Per phase that has offsets: (phase, the first offset's flat shift, the weight's kernel
    slices, the grid's shape, the grid's element strides)."""
    per_dim = []
    for k, s, d, f in zip(kernel, stride, dilation, flat_strides):
        g = math.gcd(s, d)
        step = s // g
        per_dim.append([((j0 * d) % s, (j0 * d) // s * f, slice(j0, k, step), len(range(j0, k, step)), d // g * f)
                        for j0 in range(min(k, step))])
    groups = []
    for combo in itertools.product(*per_dim):
        phase = 0
        for (r, *_), s in zip(combo, stride):
            phase = phase * s + r
        groups.append((phase, sum(c[1] for c in combo), tuple(c[2] for c in combo),
                       tuple(c[3] for c in combo), tuple(c[4] for c in combo)))
    return groups


# the depthwise kernels multiply a block of channels by all of a phase's kernel offsets at once
# (one broadcast multiply into a temporary, one sum over the offsets): a temporary of about
# this many bytes stays in cache
_TAPS_BLOCK_BYTES = 1 << 20


def _channel_block(c, taps, span, itemsize):
    return max(1, min(c, _TAPS_BLOCK_BYTES // max(1, taps * span * itemsize)))


def _tap_grid(planes, i, c0, c1, phase, shift, grid, grid_strides, span):
    """The view (c1 - c0, *grid, span) of sample i's channels c0:c1 at every kernel offset of
    one phase group: [c, *offset, l] = planes[i, c, phase, shift + offset . grid_strides + l]."""
    src = planes[i, c0:c1, phase, shift:]
    item = planes.itemsize
    return as_strided(src, (c1 - c0,) + tuple(grid) + (span,),
                      (src.strides[0],) + tuple(g * item for g in grid_strides) + (item,), writeable=False)


def _depthwise_forward(x, w, stride, padding, dilation, out_sizes):
    if any(s != 1 for s in stride):
        return _depthwise_forward_strided(x, w, stride, padding, dilation, out_sizes)
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    nd = len(kernel)
    dtype = np.result_type(x, w)
    planes = _phases(x.astype(dtype, copy=False), padding, stride)
    q = _phase_sizes(_padded_sizes(x.shape[2:], padding), stride)
    _, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    groups = _phase_groups(kernel, stride, dilation, flat_strides)
    weights = w.reshape((c,) + tuple(kernel)).astype(dtype, copy=False)
    group_weights = [np.ascontiguousarray(weights[(slice(None),) + slices])[..., None]
                     for _, _, slices, _, _ in groups]
    tap_axes = tuple(range(1, 1 + nd))
    cb = _channel_block(c, max(prod(grid) for *_, grid, _ in groups), span, dtype.itemsize)
    out = np.empty((n, c) + tuple(out_sizes), dtype=dtype)
    acc = np.empty((c, span), dtype=dtype)
    part = np.empty((cb, span), dtype=dtype)
    scratch = np.empty(cb * max(prod(grid) for *_, grid, _ in groups) * span, dtype=dtype)
    for i in range(n):
        for c0 in range(0, c, cb):
            c1 = min(c, c0 + cb)
            o = acc[c0:c1]
            for k, (phase, shift, _, grid, grid_strides) in enumerate(groups):
                view = _tap_grid(planes, i, c0, c1, phase, shift, grid, grid_strides, span)
                products = np.multiply(group_weights[k][c0:c1], view, out=scratch[:view.size].reshape(view.shape))
                if k == 0:
                    np.add.reduce(products, axis=tap_axes, out=o)
                else:
                    np.add.reduce(products, axis=tap_axes, out=part[:c1 - c0])
                    o += part[:c1 - c0]
        out[i] = _on_grid(acc[None], out_sizes, flat_strides)[0]
    return out


def _depthwise_input_grad(g, w, in_sizes, stride, padding, dilation):
    """dx at each position of a phase plane sums w[offset] * g[position - offset's shift] over
    the phase's offsets: with g spread on the flat grid after `lead` zeros (the largest shift),
    that is again a regular grid view, read with the offsets reversed."""
    if any(s != 1 for s in stride):
        return _depthwise_input_grad_strided(g, w, in_sizes, stride, padding, dilation)
    n, c = g.shape[:2]
    kernel, out_sizes = w.shape[2:], g.shape[2:]
    nd = len(kernel)
    dtype = np.result_type(g, w)
    q = _phase_sizes(_padded_sizes(in_sizes, padding), stride)
    plane = prod(q)
    _, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    groups = _phase_groups(kernel, stride, dilation, flat_strides)
    lead = max(shift + sum((m - 1) * t for m, t in zip(grid, grid_strides))
               for _, shift, _, grid, grid_strides in groups)
    weights = w.reshape((c,) + tuple(kernel)).astype(dtype, copy=False)
    reverse = (slice(None),) + (slice(None, None, -1),) * nd
    group_weights = [np.ascontiguousarray(weights[(slice(None),) + slices][reverse])[..., None]
                     for _, _, slices, _, _ in groups]
    tap_axes = tuple(range(1, 1 + nd))
    cb = _channel_block(c, max(prod(grid) for *_, grid, _ in groups), plane, dtype.itemsize)
    out = np.empty((n, c) + tuple(in_sizes), dtype=dtype)
    spread = np.zeros((1, c, lead + plane), dtype=dtype)
    acc = np.zeros((1, c, prod(stride), plane), dtype=dtype)     # (phases no offset reads stay 0)
    scratch = np.empty(cb * max(prod(grid) for *_, grid, _ in groups) * plane, dtype=dtype)
    for i in range(n):
        _spread(spread[:, :, lead:], g[i:i + 1], flat_strides)
        for c0 in range(0, c, cb):
            c1 = min(c, c0 + cb)
            for k, (phase, shift, _, grid, grid_strides) in enumerate(groups):
                start = lead - shift - sum((m - 1) * t for m, t in zip(grid, grid_strides))
                src = spread[0, c0:c1, start:]
                item = spread.itemsize
                view = as_strided(src, (c1 - c0,) + tuple(grid) + (plane,),
                                  (src.strides[0],) + tuple(t * item for t in grid_strides) + (item,),
                                  writeable=False)
                products = np.multiply(group_weights[k][c0:c1], view, out=scratch[:view.size].reshape(view.shape))
                np.add.reduce(products, axis=tap_axes, out=acc[0, c0:c1, phase])
        out[i] = _unphase(acc, stride, q, padding, in_sizes)[0]
    return out


# Strided depthwise convolutions: one multiply-add per kernel offset of strided windows (of the
# input, forward; of the padded input gradient, backward), on batch chunks that stay in cache.
# (Measured faster than the phase planes at stride 2, where each phase holds few offsets.)

def _strided_window(offset, dilation, sizes, stride):
    return tuple(slice(j * d, j * d + (q - 1) * s + 1, s) for j, d, q, s in zip(offset, dilation, sizes, stride))


def _depthwise_forward_strided(x, w, stride, padding, dilation, out_sizes):
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    dtype = np.result_type(x, w)
    xp = pad(x, padding).astype(dtype, copy=False)
    taps = w.reshape(c, prod(kernel)).astype(dtype, copy=False)
    out = np.empty((n, c) + tuple(out_sizes), dtype=dtype)
    step = _chunk(n, c * prod(out_sizes) * dtype.itemsize)
    tmp = np.empty((step, c) + tuple(out_sizes), dtype=dtype)
    for a in range(0, n, step):
        b = min(n, a + step)
        o, t = out[a:b], tmp[:b - a]
        for k, offset in enumerate(_offsets(kernel)):
            src = xp[(slice(a, b), slice(None)) + _strided_window(offset, dilation, out_sizes, stride)]
            tap = taps[(slice(None), k) + (None,) * len(kernel)]
            if k == 0:
                np.multiply(tap, src, out=o)
            else:
                np.multiply(tap, src, out=t)
                o += t
    return out


def _depthwise_input_grad_strided(g, w, in_sizes, stride, padding, dilation):
    n, c = g.shape[:2]
    kernel, out_sizes = w.shape[2:], g.shape[2:]
    dtype = np.result_type(g, w)
    taps = w.reshape(c, prod(kernel)).astype(dtype, copy=False)
    padded = _padded_sizes(in_sizes, padding)
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
            np.multiply(taps[(slice(None), k) + (None,) * len(kernel)], g[a:b], out=t)
            xp[(Ellipsis,) + _strided_window(offset, dilation, out_sizes, stride)] += t
        out[a:b] = xp[(Ellipsis,) + inside]
    return out


def _depthwise_weight_grad(x, g, weight_size, stride, padding, dilation):
    n, c = x.shape[:2]
    kernel, out_sizes = tuple(weight_size[2:]), g.shape[2:]
    dtype = np.result_type(x, g)
    planes = _phases(x.astype(dtype, copy=False), padding, stride)
    q = _phase_sizes(_padded_sizes(x.shape[2:], padding), stride)
    layout, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    spread = np.zeros((n, c, span), dtype=dtype)
    _spread(spread, g, flat_strides)
    taps = np.empty((c, prod(kernel)), dtype=dtype)
    for k, (phase, shift) in enumerate(layout):
        taps[:, k] = np.einsum("ncl,ncl->c", spread, planes[:, :, phase, shift:shift + span])
    return taps.reshape(tuple(weight_size))


def _grouped_forward(x, w, stride, padding, dilation, groups, out_sizes):
    """A grouped convolution: per kernel offset, one matmul of the offset's weights
    (groups, O/G, C/G) with the shifted phase planes of a batch chunk."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    dtype = np.result_type(x, w)
    q = _phase_sizes(_padded_sizes(x.shape[2:], padding), stride)
    planes = _phases(x.astype(dtype, copy=False), padding, stride).reshape(n, groups, cg, prod(stride), prod(q))
    layout, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    weights = np.ascontiguousarray(
        w.astype(dtype, copy=False).reshape(groups, o // groups, cg, prod(kernel)).transpose(3, 0, 1, 2))
    out = np.empty((n, o) + tuple(out_sizes), dtype=dtype)
    step = _chunk(n, o * span * dtype.itemsize)
    acc = np.empty((step, groups, o // groups, span), dtype=dtype)
    tmp = np.empty_like(acc)
    for a in range(0, n, step):
        b = min(n, a + step)
        y, t = acc[:b - a], tmp[:b - a]
        for k, (phase, shift) in enumerate(layout):
            src = planes[a:b, :, :, phase, shift:shift + span]
            if k == 0:
                np.matmul(weights[k], src, out=y)
            else:
                np.matmul(weights[k], src, out=t)
                y += t
        out[a:b] = _on_grid(y.reshape(b - a, o, span), out_sizes, flat_strides)
    return out


def _grouped_input_grad(g, w, in_sizes, stride, padding, dilation, groups):
    """The adjoint of _grouped_forward in x: per kernel offset, the transposed weights times
    grad_output, added into the shifted phase planes."""
    n, o = g.shape[:2]
    cg = w.shape[1]
    kernel, out_sizes = w.shape[2:], g.shape[2:]
    dtype = np.result_type(g, w)
    q = _phase_sizes(_padded_sizes(in_sizes, padding), stride)
    layout, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    weights_t = np.ascontiguousarray(
        w.astype(dtype, copy=False).reshape(groups, o // groups, cg, prod(kernel)).transpose(3, 0, 2, 1))
    out = np.empty((n, groups * cg) + tuple(in_sizes), dtype=dtype)
    step = _chunk(n, groups * cg * prod(stride) * prod(q) * dtype.itemsize)
    acc = np.empty((step, groups, cg, prod(stride), prod(q)), dtype=dtype)
    spread = np.zeros((step, o, span), dtype=dtype)
    tmp = np.empty((step, groups, cg, span), dtype=dtype)
    for a in range(0, n, step):
        b = min(n, a + step)
        xp, sp, t = acc[:b - a], spread[:b - a], tmp[:b - a]
        xp.fill(0)
        _spread(sp, g[a:b], flat_strides)
        src = sp.reshape(b - a, groups, o // groups, span)
        for k, (phase, shift) in enumerate(layout):
            np.matmul(weights_t[k], src, out=t)
            xp[..., phase, shift:shift + span] += t
        out[a:b] = _unphase(xp.reshape(b - a, groups * cg, prod(stride), prod(q)), stride, q, padding, in_sizes)
    return out


def _grouped_weight_grad(x, g, weight_size, stride, padding, dilation, groups):
    """The adjoint of _grouped_forward in w: per kernel offset, grad_output times the
    shifted phase planes (transposed), a contraction over the flat positions."""
    n, c = x.shape[:2]
    o, cg = weight_size[:2]
    kernel, out_sizes = tuple(weight_size[2:]), g.shape[2:]
    dtype = np.result_type(x, g)
    q = _phase_sizes(_padded_sizes(x.shape[2:], padding), stride)
    planes = _phases(x.astype(dtype, copy=False), padding, stride).reshape(n, groups, cg, prod(stride), prod(q))
    layout, span, flat_strides = _tap_layout(kernel, stride, dilation, q, out_sizes)
    grad = np.zeros((prod(kernel), groups, o // groups, cg), dtype=dtype)
    step = _chunk(n, o * span * dtype.itemsize)
    spread = np.zeros((step, o, span), dtype=dtype)
    for a in range(0, n, step):
        b = min(n, a + step)
        sp = spread[:b - a]
        _spread(sp, g[a:b], flat_strides)
        src = sp.reshape(b - a, groups, o // groups, span)
        for k, (phase, shift) in enumerate(layout):
            per_sample = np.matmul(src, planes[a:b, :, :, phase, shift:shift + span].swapaxes(-1, -2))
            grad[k] += per_sample.sum(0) if b - a > 1 else per_sample[0]
    return np.ascontiguousarray(grad.transpose(1, 2, 3, 0)).reshape(tuple(weight_size))
