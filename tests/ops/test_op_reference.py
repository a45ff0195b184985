"""Every op's eager result against a numpy reference written here, on every
sample of the op table (random ops are checked by their defining properties)."""
import itertools
import math
import warnings

import numpy as np
import pytest

import dynjit
from dynjit.ops.registry import registry, INPLACE

from opinfo_samples import SAMPLES, NC, C, call, materialize, inplace_samples
from test_scatter_reduce import reference_scatter_reduce, reference_index_reduce
from test_index_add_unfold import reference_index_add, reference_unfold, reference_unfold_backward
from test_bincount import reference_bincount


def _axis(dim):
    return None if dim is None or dim == () else dim


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _red(fn):
    """A reference for reductions with (self, dim=None, keepdim=False)."""
    return lambda a, dim=None, keepdim=False, dtype=None: fn(a, axis=_axis(dim), keepdims=keepdim)


def _max_dim(argfn):
    def ref(a, dim, keepdim=False):
        if a.ndim == 0:
            return a, np.array(0)
        idx = np.expand_dims(argfn(a, axis=dim), dim)
        vals = np.take_along_axis(a, idx, dim)
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        return vals, idx
    return ref


def _lower_median(values, skip_nan):
    v = np.sort(values[~np.isnan(values)] if skip_nan else values)
    if v.size == 0 or (not skip_nan and np.isnan(v).any()):
        return np.nan
    return v[(v.size - 1) // 2]


def _median(skip_nan):
    return lambda a: np.asarray(_lower_median(a.reshape(-1).astype(np.float64), skip_nan))


def _median_dim(skip_nan):
    def ref(a, dim, keepdim=False):
        if a.ndim == 0:
            return a, np.array(0)
        moved = np.moveaxis(a.astype(np.float64), dim, -1)
        vals = np.empty(moved.shape[:-1])
        for pos in itertools.product(*map(range, moved.shape[:-1])):
            vals[pos] = _lower_median(moved[pos], skip_nan)
        vals = np.expand_dims(vals, dim) if keepdim else vals
        return (vals,)    # indices are checked against the values below
    return ref


def _assert_indices_select(x, dim, keepdim, indices, values):
    """The returned indices point at the returned values."""
    if x.ndim == 0:
        np.testing.assert_array_equal(x, values)
        return
    idx = indices if keepdim else np.expand_dims(indices, dim)
    np.testing.assert_array_equal(np.take_along_axis(x, idx, dim).reshape(values.shape), values)


def _sort(a, dim=-1, descending=False, stable=False):
    """Sorted values and indices by Python's stable sort; NaN is the largest value."""
    if a.ndim == 0:
        return a, np.array(0)
    moved = np.moveaxis(a, dim, -1)
    idx = np.empty(moved.shape, dtype=np.int64)
    for pos in itertools.product(*map(range, moved.shape[:-1])):
        row = moved[pos]
        key = (lambda i: (True, 0.0) if np.isnan(row[i]) else (False, row[i])) if row.dtype.kind == "f" \
            else (lambda i: (False, row[i]))
        idx[pos] = sorted(range(row.shape[0]), key=key, reverse=descending)
    idx = np.moveaxis(idx, -1, dim)
    return np.take_along_axis(a, idx, dim), idx


def _topk(a, k, dim=-1, largest=True, sorted=True):
    values, idx = _sort(a, dim, descending=largest)
    if a.ndim == 0:
        return values, idx
    return np.take(values, range(k), axis=dim), np.take(idx, range(k), axis=dim)


def _nonzero(a):
    if a.ndim == 0:
        return np.zeros((1 if a else 0, 0), dtype=np.int64)
    return np.stack(np.nonzero(a), axis=1)


def _masked_select(a, mask):
    a, mask = np.broadcast_arrays(a, mask)
    return a[mask]


def _arg(fn):
    def ref(a, dim=None, keepdim=False):
        if dim is None:
            i = fn(a.reshape(-1))
            return np.full((1,) * a.ndim, i) if keepdim else np.array(i)
        if a.ndim == 0:
            return np.array(0)
        return fn(a, axis=dim, keepdims=keepdim)
    return ref


def _norm(a, p=2, dim=None, keepdim=False):
    axis = _axis(dim)
    if p == float("inf"):
        return np.max(np.abs(a), axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    return np.sum(np.abs(a) ** p, axis=axis, keepdims=keepdim) ** (1 / p)


def _cum(fn):
    def ref(a, dim, dtype=None):
        if a.ndim == 0:
            return a
        acc = a.astype(np.int64) if a.dtype.kind in "biu" else a
        return fn(acc, axis=dim)
    return ref


def _logsumexp(a, dim, keepdim=False):
    a = a.astype(np.float64)
    return np.log(np.sum(np.exp(a), axis=_axis(dim), keepdims=keepdim))


def _sum_to_size(a, size):
    lead = a.ndim - len(size)
    out = a.sum(axis=tuple(range(lead))) if lead else a
    for d, s in enumerate(size):
        if s == 1 and out.shape[d] != 1:
            out = out.sum(axis=d, keepdims=True)
    return out


def _value_selecting_backward(grad, indices, shape, dim, keepdim):
    out = np.zeros(shape)
    if not shape:
        return np.asarray(grad, dtype=np.float64)
    g = grad if keepdim else np.expand_dims(grad, dim)
    i = indices if keepdim else np.expand_dims(indices, dim)
    for pos in itertools.product(*map(range, g.shape)):
        target = list(pos)
        target[dim] = i[pos]
        out[tuple(target)] = g[pos]
    return out


def _igamma_reference(a, x, upper):
    """P(a, x) = sum_n x^(a+n) e^-x / Gamma(a+n+1), term by term in Python floats (Q = 1 - P)."""
    def p(a, x):
        if a < 0 or x < 0 or (a == 0 and x == 0) or math.isnan(a) or math.isnan(x):
            return math.nan
        if x == 0:
            return 0.0
        if a == 0 or math.isinf(x):
            return 1.0
        return sum(math.exp((a + n) * math.log(x) - x - math.lgamma(a + n + 1)) for n in range(400))
    a, x = np.broadcast_arrays(a, x)
    out = np.array([p(float(u), float(v)) for u, v in zip(a.ravel(), x.ravel())]).reshape(a.shape)
    return 1.0 - out if upper else out


def _as_strided_reference(a, size, stride, storage_offset=None):
    """Element by element: out[i] = storage[offset + sum(i_k * stride_k)] over a's own storage."""
    flat = a.ravel(order="K") if a.flags.c_contiguous or a.flags.f_contiguous else a.T.ravel()
    offset = 0 if storage_offset is None else storage_offset
    out = np.empty(size, a.dtype)
    for pos in itertools.product(*map(range, size)):
        out[pos] = flat[offset + sum(i * s for i, s in zip(pos, stride))]
    return out


def _gather(a, dim, index):
    if a.ndim == 0:
        return a.reshape(1)[index]
    out = np.empty(index.shape, dtype=a.dtype)
    for pos in itertools.product(*map(range, index.shape)):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = a[tuple(src)]
    return out


def _scatter(accumulate):
    def ref(a, dim, index, src):
        out = a.copy()
        for pos in itertools.product(*map(range, index.shape)):
            dst = list(pos)
            dst[dim] = index[pos]
            value = src[pos] if np.ndim(src) else src
            if accumulate:
                out[tuple(dst)] += value
            else:
                out[tuple(dst)] = value
        return out
    return ref


def _index_put(a, indices, values, accumulate=False):
    out = a.copy()
    idx = tuple(indices)
    if accumulate:
        np.add.at(out, idx, values)
    else:
        out[idx] = values
    return out


def _index_backward(grad, shape, index, accumulate):
    out = np.zeros(shape)
    idx = tuple(index)
    if accumulate:
        np.add.at(out, idx, grad)
    else:
        out[idx] = grad
    return out


def _upsample_taps(mode, in_sizes, output_size, align_corners, scales):
    """For each output position (row-major), its (source position, weight) pairs, from
    PyTorch's per-point formulas (nearest: floor(dst * scale) in float32; linear:
    multilinear mix of the two neighbours of the source coordinate in each dim)."""
    import itertools
    import math

    def per_dim(k, dst):
        n_in, n_out = in_sizes[k], output_size[k]
        sc = None if scales is None else scales[k]
        if mode == "nearest":
            if n_out == n_in:
                return [(dst, 1.0)]
            if n_out == 2 * n_in:
                return [(dst // 2, 1.0)]
            f = np.float32(1.0 / sc) if sc else np.float32(n_in) / np.float32(n_out)
            return [(min(int(math.floor(np.float32(dst) * f)), n_in - 1), 1.0)]
        if align_corners:
            src = dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max(((1.0 / sc) if sc else n_in / n_out) * (dst + 0.5) - 0.5, 0.0)
        i0 = min(int(src), n_in - 1)
        i1 = i0 + 1 if i0 < n_in - 1 else i0
        lam = src - i0
        return [(i0, 1.0 - lam), (i1, lam)]
    for dst in itertools.product(*(range(o) for o in output_size)):
        taps = [per_dim(k, d) for k, d in enumerate(dst)]
        yield dst, [(tuple(i for i, _ in combo), math.prod(w for _, w in combo))
                    for combo in itertools.product(*taps)]


def _upsample(mode):
    def forward(a, output_size, *rest):
        align, scales = (rest + (None,))[:2] if mode == "linear" else (False, (rest + (None,))[0])
        out = np.zeros(a.shape[:2] + tuple(output_size))
        for dst, taps in _upsample_taps(mode, a.shape[2:], output_size, align, scales):
            out[(Ellipsis,) + dst] = sum(w * a[(Ellipsis,) + src] for src, w in taps)
        return out

    def backward(grad, output_size, input_size, *rest):
        align, scales = (rest + (None,))[:2] if mode == "linear" else (False, (rest + (None,))[0])
        out = np.zeros(tuple(input_size))
        for dst, taps in _upsample_taps(mode, tuple(input_size)[2:], output_size, align, scales):
            for src, w in taps:
                out[(Ellipsis,) + src] += w * grad[(Ellipsis,) + dst]
        return out
    return forward, backward


_UPSAMPLE_REFERENCES = {}
for _nd, (_near, _lin) in enumerate((("upsample_nearest1d", "upsample_linear1d"),
                                     ("upsample_nearest2d", "upsample_bilinear2d"),
                                     ("upsample_nearest3d", "upsample_trilinear3d"))):
    for _name, _mode in ((_near, "nearest"), (_lin, "linear")):
        _UPSAMPLE_REFERENCES[_name], _UPSAMPLE_REFERENCES[_name + "_backward"] = _upsample(_mode)


# -- convolution and pooling: loops over output positions and kernel taps -------------------

def _taps(out_sizes, kernel, stride, padding, dilation, in_sizes):
    """(output position, kernel offset, input position) for every tap that lands in the input."""
    for pos in itertools.product(*map(range, out_sizes)):
        for k in itertools.product(*map(range, kernel)):
            src = tuple(q * s - p + j * d for q, s, p, j, d in zip(pos, stride, padding, k, dilation))
            if all(0 <= c < n for c, n in zip(src, in_sizes)):
                yield pos, k, src


def _conv_out(in_sizes, kernel, stride, padding, dilation):
    return [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation)]


def _convolution(x, w, b, stride, padding, dilation, groups):
    cg, og = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(_conv_out(x.shape[2:], w.shape[2:], stride, padding, dilation)))
    for pos, k, src in _taps(out.shape[2:], w.shape[2:], stride, padding, dilation, x.shape[2:]):
        for o in range(w.shape[0]):
            c0 = o // og * cg
            out[(slice(None), o) + pos] += x[(slice(None), slice(c0, c0 + cg)) + src] @ w[(o, slice(None)) + k]
    return out if b is None else out + b.reshape((-1,) + (1,) * (w.ndim - 2))


def _convolution_backward_input(g, w, input_size, stride, padding, dilation, groups):
    cg, og = w.shape[1], w.shape[0] // groups
    out = np.zeros(input_size)
    for pos, k, src in _taps(g.shape[2:], w.shape[2:], stride, padding, dilation, input_size[2:]):
        for o in range(w.shape[0]):
            c0 = o // og * cg
            out[(slice(None), slice(c0, c0 + cg)) + src] += np.outer(g[(slice(None), o) + pos], w[(o, slice(None)) + k])
    return out


def _convolution_backward_weight(x, g, weight_size, stride, padding, dilation, groups):
    cg, og = weight_size[1], weight_size[0] // groups
    out = np.zeros(weight_size)
    for pos, k, src in _taps(g.shape[2:], weight_size[2:], stride, padding, dilation, x.shape[2:]):
        for o in range(weight_size[0]):
            c0 = o // og * cg
            out[(o, slice(None)) + k] += g[(slice(None), o) + pos] @ x[(slice(None), slice(c0, c0 + cg)) + src]
    return out


def _pool_out(in_sizes, kernel, stride, padding, dilation, ceil_mode):
    sizes = []
    for i, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation):
        span = i + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        sizes.append(o - 1 if ceil_mode and (o - 1) * s >= i + p else o)
    return sizes


def _running_max(x, cells, shape):
    """PyTorch's scan: start at the first cell, move on to a larger value or a NaN."""
    best = np.full(shape, -np.inf)
    at = np.full(shape, np.ravel_multi_index(cells[0], x.shape[2:]), dtype=np.int64)
    for c in cells:
        v = x[(slice(None), slice(None)) + c]
        take = (v > best) | np.isnan(v)
        best = np.where(take, v, best)
        at = np.where(take, np.ravel_multi_index(c, x.shape[2:]), at)
    return best.astype(x.dtype), at


def _max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    out_sizes = _pool_out(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    values = np.zeros(x.shape[:2] + tuple(out_sizes), dtype=x.dtype)
    indices = np.zeros(values.shape, dtype=np.int64)
    cells = {}
    for pos, _, src in _taps(out_sizes, kernel, stride, padding, dilation, x.shape[2:]):
        cells.setdefault(pos, []).append(src)
    for pos, cs in cells.items():
        values[(Ellipsis,) + pos], indices[(Ellipsis,) + pos] = _running_max(x, cs, x.shape[:2])
    return values, indices


def _adaptive_cells(in_sizes, out_sizes):
    bounds = [[(o * n // m, -(-(o + 1) * n // m)) for o in range(m)] for n, m in zip(in_sizes, out_sizes)]
    for pos in itertools.product(*map(range, out_sizes)):
        yield pos, list(itertools.product(*(range(*bounds[i][q]) for i, q in enumerate(pos))))


def _adaptive_max_pool(x, output_size):
    values = np.zeros(x.shape[:2] + tuple(output_size), dtype=x.dtype)
    indices = np.zeros(values.shape, dtype=np.int64)
    for pos, cs in _adaptive_cells(x.shape[2:], output_size):
        values[(Ellipsis,) + pos], indices[(Ellipsis,) + pos] = _running_max(x, cs, x.shape[:2])
    return values, indices


def _max_pool_backward(g, indices, input_size):
    out = np.zeros((input_size[0] * input_size[1], math.prod(input_size[2:])))
    rows = np.arange(out.shape[0])[:, None].repeat(indices[0, 0].size, 1)
    np.add.at(out, (rows.ravel(), indices.reshape(out.shape[0], -1).ravel()), g.ravel())
    return out.reshape(input_size)


def _avg_cells(in_sizes, out_sizes, kernel, stride, padding, count_include_pad, divisor_override):
    """(output position, input cells, divisor) of each average-pooling window."""
    nd = len(kernel)
    cells = {pos: [] for pos in itertools.product(*map(range, out_sizes))}
    for pos, _, src in _taps(out_sizes, kernel, stride, padding, (1,) * nd, in_sizes):
        cells[pos].append(src)
    for pos, cs in cells.items():
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = math.prod(min(q * s - p + k, n + p) - (q * s - p)
                            for q, s, p, k, n in zip(pos, stride, padding, kernel, in_sizes))
        else:
            div = len(cs)
        yield pos, cs, div


def _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    out_sizes = _pool_out(x.shape[2:], kernel, stride, padding, (1,) * len(kernel), ceil_mode)
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for pos, cs, div in _avg_cells(x.shape[2:], out_sizes, kernel, stride, padding, count_include_pad,
                                   divisor_override):
        out[(Ellipsis,) + pos] = sum(x[(Ellipsis,) + c].astype(np.float64) for c in cs) / div
    return out if x.dtype.kind == "f" else np.trunc(out).astype(x.dtype)


def _avg_pool_backward(g, input_size, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    out = np.zeros(input_size)
    for pos, cs, div in _avg_cells(input_size[2:], g.shape[2:], kernel, stride, padding, count_include_pad,
                                   divisor_override):
        for c in cs:
            out[(Ellipsis,) + c] += g[(Ellipsis,) + pos] / div
    return out


def _adaptive_avg_pool(x, output_size):
    out = np.zeros(x.shape[:2] + tuple(output_size))
    for pos, cs in _adaptive_cells(x.shape[2:], output_size):
        out[(Ellipsis,) + pos] = sum(x[(Ellipsis,) + c] for c in cs) / len(cs)
    return out


def _adaptive_avg_pool_backward(g, input_size):
    out = np.zeros(input_size)
    for pos, cs in _adaptive_cells(input_size[2:], g.shape[2:]):
        for c in cs:
            out[(Ellipsis,) + c] += g[(Ellipsis,) + pos] / len(cs)
    return out


def _im2col(x, kernel, dilation, padding, stride):
    blocks = _conv_out(x.shape[2:], kernel, stride, padding, dilation)
    out = np.zeros((x.shape[0], x.shape[1], math.prod(kernel), math.prod(blocks)))
    for pos, k, src in _taps(blocks, kernel, stride, padding, dilation, x.shape[2:]):
        out[:, :, np.ravel_multi_index(k, kernel), np.ravel_multi_index(pos, blocks)] = x[(Ellipsis,) + src]
    return out.reshape(x.shape[0], -1, math.prod(blocks))


def _col2im(cols, output_size, kernel, dilation, padding, stride):
    blocks = _conv_out(output_size, kernel, stride, padding, dilation)
    c = cols.reshape(cols.shape[0], -1, math.prod(kernel), math.prod(blocks))
    out = np.zeros((cols.shape[0], c.shape[1]) + tuple(output_size))
    for pos, k, src in _taps(blocks, kernel, stride, padding, dilation, output_size):
        out[(Ellipsis,) + src] += c[:, :, np.ravel_multi_index(k, kernel), np.ravel_multi_index(pos, blocks)]
    return out


def _max_unpool(x, indices, output_size):
    """Value by value, in order: out[n, c, flat index] = x[n, c, position] (a later write wins)."""
    n, c = x.shape[:2]
    out = np.zeros((n, c, math.prod(output_size)), dtype=x.dtype)
    for a, b in itertools.product(range(n), range(c)):
        for v, i in zip(x[a, b].ravel(), indices[a, b].ravel()):
            out[a, b, i] = v
    return out.reshape((n, c) + tuple(output_size))


def _fractional_starts(u, in_size, out_size, k):
    """Graham's pseudo-random window starts for one sample u, in u's dtype, as PyTorch
    computes them: int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), the
    last window flush with the end of the input."""
    if out_size == 1:
        return [in_size - k]
    dtype = type(u)
    alpha = dtype(in_size - k) / dtype(out_size - 1)
    starts = [int((dtype(i) + u) * alpha) - int(u * alpha) for i in range(out_size)]
    starts[-1] = in_size - k
    return starts


def _fractional_max_pool(x, kernel_size, output_size, random_samples):
    nd = len(kernel_size)
    sample_of_dim = [1, 0] if nd == 2 else list(range(nd))      # PyTorch's samples are (w, h) in 2d
    n, c = x.shape[:2]
    values = np.zeros((n, c) + tuple(output_size), dtype=x.dtype)
    indices = np.zeros(values.shape, dtype=np.int64)
    for a, b in itertools.product(range(n), range(c)):
        starts = [_fractional_starts(random_samples[a, b, sample_of_dim[d]], x.shape[2 + d], output_size[d],
                                     kernel_size[d]) for d in range(nd)]
        for pos in itertools.product(*map(range, output_size)):
            cells = list(itertools.product(*(range(starts[d][pos[d]], starts[d][pos[d]] + kernel_size[d])
                                             for d in range(nd))))
            best, at = _running_max(x[a:a + 1, b:b + 1], cells, (1, 1))
            values[(a, b) + pos], indices[(a, b) + pos] = best[0, 0], at[0, 0]
    return values, indices


_CONV_REFERENCES = {
    "convolution": _convolution, "convolution_backward_input": _convolution_backward_input,
    "convolution_backward_weight": _convolution_backward_weight, "max_pool": _max_pool,
    "adaptive_max_pool": _adaptive_max_pool, "max_pool_backward": _max_pool_backward, "avg_pool": _avg_pool,
    "avg_pool_backward": _avg_pool_backward, "adaptive_avg_pool": _adaptive_avg_pool,
    "adaptive_avg_pool_backward": _adaptive_avg_pool_backward, "im2col": _im2col, "col2im": _col2im,
    "max_unpool": _max_unpool, "fractional_max_pool": _fractional_max_pool,
}


def _one_hot(a, num_classes=-1):
    n = int(a.max()) + 1 if num_classes == -1 else num_classes
    out = np.zeros(a.shape + (n,), dtype=np.int64)
    for pos in itertools.product(*map(range, a.shape)):
        out[pos + (a[pos],)] = 1
    return out


def _diagonal_backward(grad, shape, offset, dim1, dim2):
    out = np.zeros(shape)
    n = grad.shape[-1]
    for k in range(n):
        i, j = (k, k + offset) if offset >= 0 else (k - offset, k)
        idx = [slice(None)] * len(shape)
        idx[dim1], idx[dim2] = i, j
        out[tuple(idx)] = grad[..., k]
    return out


def _cat(tensors, dim=0):
    keep = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    return np.concatenate(keep, axis=dim)


def _linear(x, w, b=None):
    out = np.einsum("...i,oi->...o", x, w)
    return out if b is None else out + b


def _nll_loss(x, target, weight=None, reduction="mean", ignore_index=-100):
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t = target.reshape(-1)
    w = np.ones(x2.shape[1]) if weight is None else weight
    losses, weights = [], []
    for n in range(x2.shape[0]):
        if t[n] == ignore_index:
            losses.append(0.0)
            weights.append(0.0)
        else:
            losses.append(-x2[n, t[n]] * w[t[n]])
            weights.append(w[t[n]])
    losses = np.array(losses)
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / sum(weights)


def _softmax(a, dim):
    if a.ndim == 0:
        return np.ones_like(a, dtype=np.float64)
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _div_mode(a, b, rounding_mode):
    q = np.true_divide(a, b)
    return np.floor(q) if rounding_mode == "floor" else np.trunc(q)


def _roll(a, shifts, dims=None):
    return np.roll(a, shifts, axis=dims)


def _getitem(a, index):
    return a[index]


def _view_scatter(base, src, chain):
    out = base.copy()
    (op, rest, index), = chain
    if op.name == "narrow":
        dim, start, length = rest
        sl = [slice(None)] * out.ndim
        sl[dim] = slice(start, start + length)
        out[tuple(sl)] = src
    elif op.name == "select":
        dim, i = rest
        sl = [slice(None)] * out.ndim
        sl[dim] = i
        out[tuple(sl)] = src
    else:      # unbind along rest[0], output `index`
        sl = [slice(None)] * out.ndim
        sl[rest[0]] = index
        out[tuple(sl)] = src
    return out


def _squeeze(a, dim=None):
    if dim is None:
        return np.squeeze(a)
    dims = (dim,) if isinstance(dim, int) else dim
    if a.ndim == 0:
        return a
    return np.squeeze(a, axis=tuple(d for d in dims if a.shape[d] == 1))


def _expand(a, size):
    size = tuple(size)
    lead = len(size) - a.ndim
    target = tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return np.broadcast_to(a, target)


def _split(a, sizes, dim=0):
    bounds = np.cumsum([0] + list(sizes))
    return [np.take(a, range(bounds[i], bounds[i + 1]), axis=dim) for i in range(len(sizes))]


def _einsum(eq, operands):
    return np.einsum(eq, *operands)


def _narrow(a, dim, start, length):
    start = start % a.shape[dim]
    return np.take(a, range(start, start + length), axis=dim)


def _tril(fn):
    def ref(a, diagonal=0):
        return fn(a, diagonal)
    return ref


REFERENCE = {
    "abs": np.abs, "neg": np.negative, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda a: 1 / np.sqrt(a), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "sigmoid": _sigmoid, "relu": lambda a: np.where(a > 0, a, 0),
    "silu": lambda a: a * _sigmoid(a), "sign": np.sign, "reciprocal": lambda a: 1 / a,
    "square": lambda a: a * a, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda a, decimals=0: np.round(a, decimals), "frac": lambda a: a - np.trunc(a),
    "erf": _np_erf,
    "gelu": lambda a, approximate="none": (
        0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))) if approximate == "tanh"
        else a * 0.5 * (1 + _np_erf(a / math.sqrt(2)))),
    "softplus": lambda a, beta=1, threshold=20: np.where(a * beta > threshold, a, np.log1p(np.exp(a * beta)) / beta),
    "leaky_relu": lambda a, s=0.01: np.where(a > 0, a, a * s),
    "elu": lambda a, alpha=1.0: np.where(a > 0, a, alpha * (np.exp(a) - 1)),
    "add": lambda a, b, alpha=1: a + alpha * b if not (np.asarray(a).dtype == bool and alpha == 1) else a | b,
    "sub": lambda a, b, alpha=1: a - alpha * b, "rsub": lambda a, b, alpha=1: b - alpha * a,
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "div_mode": _div_mode,
    "floor_divide": lambda a, b: np.floor(a / b), "remainder": lambda a, b: a - np.floor(a / b) * b,
    "fmod": lambda a, b: a - np.trunc(a / b) * b, "pow": lambda a, b: np.power(np.asarray(a, dtype=np.float64), b),
    "addcmul": lambda s, a, b, value=1: s + value * a * b, "addcdiv": lambda s, a, b, value=1: s + value * a / b,
    "atan2": np.arctan2, "logaddexp": lambda a, b: np.log(np.exp(a) + np.exp(b)), "maximum": np.maximum, "minimum": np.minimum,
    "lerp": lambda a, b, w: a + w * (b - a),
    "clamp": lambda a, min=None, max=None: np.minimum(np.maximum(a, -np.inf if min is None else min),
                                                      np.inf if max is None else max),
    "where": lambda c, a, b: np.where(c, a, b),
    "masked_fill": lambda a, m, v: np.where(m, v, a),
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_not": np.logical_not, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "signbit": np.signbit, "isin": lambda a, b, invert=False: np.isin(a, b, invert=invert),
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_not": np.invert,
    # reductions
    "sum": _red(np.sum), "mean": _red(np.mean), "prod": _red(np.prod), "amax": _red(np.max),
    "amin": _red(np.min), "max": np.max, "min": np.min, "max_dim": _max_dim(np.argmax),
    "min_dim": _max_dim(np.argmin), "median": _median(False), "nanmedian": _median(True),
    "sort": _sort, "argsort": lambda a, dim=-1, descending=False, stable=False: _sort(a, dim, descending)[1],
    "topk": _topk, "nonzero": _nonzero, "masked_select": _masked_select,
    "median_dim": _median_dim(False), "nanmedian_dim": _median_dim(True), "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "var": lambda a, dim=None, correction=1, keepdim=False: np.var(a, axis=_axis(dim), ddof=correction, keepdims=keepdim),
    "std": lambda a, dim=None, correction=1, keepdim=False: np.std(a, axis=_axis(dim), ddof=correction, keepdims=keepdim),
    "var_mean": lambda a, dim=None, correction=1, keepdim=False: (
        np.var(a, axis=_axis(dim), ddof=correction, keepdims=keepdim), np.mean(a, axis=_axis(dim), keepdims=keepdim)),
    "logsumexp": _logsumexp, "norm": _norm, "all": _red(np.all), "any": _red(np.any),
    "cumsum": _cum(np.cumsum), "cumprod": _cum(np.cumprod), "sum_to_size": _sum_to_size,
    "value_selecting_backward": _value_selecting_backward,
    # shapes and views
    "view": lambda a, size: a.reshape(size), "reshape": lambda a, shape: a.reshape(shape),
    "t": lambda a: a.T, "transpose": lambda a, d0, d1: np.swapaxes(a, d0, d1) if a.ndim else a,
    "permute": lambda a, dims: np.transpose(a, dims), "unsqueeze": lambda a, d: np.expand_dims(a, d),
    "squeeze": _squeeze, "expand": _expand, "narrow": _narrow,
    "select": lambda a, dim, i: np.take(a, i, axis=dim), "getitem": _getitem,
    "index": lambda a, indices: a[tuple(indices)], "index_backward": _index_backward,
    "index_put": _index_put, "split_with_sizes": _split,
    "unbind": lambda a, dim=0: [np.take(a, i, axis=dim) for i in range(a.shape[dim])],
    "cat": _cat, "stack": lambda ts, dim=0: np.stack(ts, axis=dim), "clone": lambda a, memory_format=None: a,
    "to_dtype": lambda a, dtype: a.astype(dtype.np), "contiguous_copy": lambda a: a,
    "flip": lambda a, dims: np.flip(a, axis=dims) if dims else a, "roll": _roll,
    "repeat": lambda a, reps: np.tile(a, reps), "tril": _tril(np.tril), "triu": _tril(np.triu),
    "gather": _gather, "scatter_add": _scatter(True), "scatter": _scatter(False),
    "scatter_reduce": reference_scatter_reduce, "index_reduce": reference_index_reduce,
    "index_add": reference_index_add, "unfold": reference_unfold, "unfold_backward": reference_unfold_backward,
    "check_values": lambda a, ok, msg, show_values=False: a,
    "bincount": reference_bincount,
    "delayed_error_if": lambda a, condition, msg: a,
    "as_strided": _as_strided_reference,
    "igamma": lambda a, x: _igamma_reference(a, x, False), "igammac": lambda a, x: _igamma_reference(a, x, True),
    "igamma_density": lambda a, x: np.exp((a - 1) * np.log(x) - x - np.vectorize(math.lgamma)(a)),
    "to_memory_format": lambda a, memory_format: a,
    "empty_strided": lambda size, stride, dtype=None: np.zeros(size, np.float32),
    "nextafter": lambda a, b: np.nextafter(*np.broadcast_arrays(*(np.asarray(x, np.result_type(a, b, np.float32))
                                                                  for x in (a, b)))),
    "index_select": lambda a, dim, i: np.take(a, i.reshape(-1), axis=dim) if a.ndim else a,
    "one_hot": _one_hot, "copy": lambda a, src: np.broadcast_to(src, a.shape),
    "fill": lambda a, v: np.full(a.shape, v), "zero": np.zeros_like,
    "diagonal": lambda a, offset=0, d1=0, d2=1: np.diagonal(a, offset, d1, d2),
    "diagonal_backward": _diagonal_backward, "detach": lambda a: a, "view_scatter": _view_scatter,
    # matrix products
    "matmul": np.matmul, "mm": np.matmul, "mv": np.matmul, "bmm": np.matmul, "linear": _linear,
    "addmm": lambda s, m1, m2, beta=1, alpha=1: beta * s + alpha * (m1 @ m2),
    "dot": np.dot, "outer": np.outer, "einsum": _einsum,
    # neural-network ops
    "softmax": _softmax, "log_softmax": lambda a, dim: np.log(_softmax(a, dim)), "nll_loss": _nll_loss,
    **_UPSAMPLE_REFERENCES,
    **_CONV_REFERENCES,
    # factories
    "zeros": lambda size, dtype=None: np.zeros(size), "ones": lambda size, dtype=None: np.ones(size),
    "empty": lambda size, dtype=None: np.zeros(size),
    "full": lambda size, v, dtype=None: np.full(size, v),
    "arange": lambda start, end=None, step=1, dtype=None: np.arange(start, end, step) if end is not None
    else np.arange(start),
    "linspace": lambda a, b, n, dtype=None: np.linspace(a, b, n),
    "eye": lambda n, m=None, dtype=None: np.eye(n, m),
}

# Random ops: the reference is the property that defines them.


def _check_rand(out, size, dtype=None):
    assert out.shape == tuple(size)
    v = out.numpy()
    assert ((v >= 0) & (v < 1)).all()


def _check_randn(out, size, dtype=None):
    assert out.shape == tuple(size)
    assert np.isfinite(out.numpy()).all()


def _check_randint(out, low, high, size, dtype=None):
    v = out.numpy()
    assert out.shape == tuple(size) and ((v >= low) & (v < high)).all()


def _check_randperm(out, n, dtype=None):
    assert sorted(out.numpy().tolist()) == list(range(n))


def _check_bernoulli(out, probs, p=None):
    v = out.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    if p is not None and p in (0.0, 1.0):
        assert (v == p).all()


def _check_dropout(out, x, p, train):
    y, mask = out[0].numpy(), out[1].numpy()
    if not train or p == 0:
        np.testing.assert_array_equal(y, x)
        assert mask.all()
    elif p == 1:
        assert (y == 0).all() and not mask.any()
    else:
        np.testing.assert_allclose(y, np.where(mask, x / (1 - p), 0.0), rtol=1e-12)


def _check_multinomial(out, probs, num_samples, replacement=False):
    v, p = out.numpy(), np.asarray(probs).reshape(-1, np.shape(probs)[-1])
    assert out.dtype == dynjit.int64 and v.shape == np.shape(probs)[:-1] + (num_samples,)
    for row, w in zip(v.reshape(-1, num_samples), p):
        if replacement:
            assert (w[row] > 0).all()
        else:       # distinct; zero weights only after every positive one
            assert len(set(row.tolist())) == num_samples
            assert (w[row[:min(num_samples, int((w > 0).sum()))]] > 0).all()


REFERENCE.update({
    "real": np.real, "imag": np.imag, "conj": np.conj, "angle": np.angle,
    "view_as_real": lambda a: np.stack([a.real, a.imag], axis=-1),
    "view_as_complex": lambda a: a[..., 0] + 1j * a[..., 1],
    "sgn": lambda a: np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))),
    "complex": lambda re, im: re + 1j * im,
    "polar": lambda mag, ang: mag * np.cos(ang) + 1j * mag * np.sin(ang),
})


def _check_symmetric_eigh(result, a):
    """Eigenvalues ascending, orthonormal eigenvectors, and V diag(L) V^T = (A + A^T) / 2."""
    values, vectors = (r.numpy() for r in result)
    sym = (a + np.swapaxes(a, -1, -2)) / 2
    assert np.all(np.diff(values, axis=-1) >= 0)
    eye = np.eye(a.shape[-1])
    np.testing.assert_allclose(np.swapaxes(vectors, -1, -2) @ vectors, np.broadcast_to(eye, sym.shape), atol=1e-12)
    np.testing.assert_allclose((vectors * values[..., None, :]) @ np.swapaxes(vectors, -1, -2), sym, atol=1e-12)


# torch.linalg's decompositions: their factors are defined up to signs, so they are checked by
# what defines them (reconstruction, orthonormality, triangularity) with numpy

def _mh(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _check_linalg_svd(result, a, full_matrices=True):
    U, S, Vh = (t.numpy() for t in result)
    k = S.shape[-1]
    np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], a, atol=1e-12)
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False), atol=1e-12)


def _check_linalg_eigh(result, a, UPLO="L"):
    values, vectors = (t.numpy() for t in result)
    half = np.tril(a) if UPLO == "L" else np.triu(a)
    sym = half + _mh(half) - np.eye(a.shape[-1]) * half
    np.testing.assert_allclose(values, np.linalg.eigvalsh(sym), atol=1e-12)
    np.testing.assert_allclose(sym @ vectors, vectors * values[..., None, :], atol=1e-12)


def _check_linalg_eig(result, a):
    values, vectors = (t.numpy() for t in result)
    np.testing.assert_allclose(a @ vectors, vectors * values[..., None, :], atol=1e-10)


def _check_linalg_qr(result, a, mode="reduced"):
    Q, R = (t.numpy() for t in result)
    np.testing.assert_array_equal(np.tril(R, -1), 0)
    if mode == "r":
        np.testing.assert_allclose(np.abs(R), np.abs(np.linalg.qr(a, mode="r")), atol=1e-12)
        return
    np.testing.assert_allclose(Q @ R, a, atol=1e-12)


def _check_linalg_cholesky_ex(result, a, upper=False, check_errors=False):
    L, info = (t.numpy() for t in result)
    assert not info.any()
    np.testing.assert_allclose(L, _mh(np.linalg.cholesky(a)) if upper else np.linalg.cholesky(a), atol=1e-12)


def _expm_reference(a):
    values, vectors = np.linalg.eig(a)
    return ((vectors * np.exp(values)[..., None, :]) @ np.linalg.inv(vectors)).real


def _triangular_solve_reference(a, b, upper, left=True, unitriangular=False):
    tri = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        tri = tri - tri * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    return np.linalg.solve(tri, b) if left else b @ np.linalg.inv(tri)


def _check_linalg_lu(result, a, pivot=True):
    P, L, U, pivots, info = (t.numpy() for t in result)
    np.testing.assert_allclose(P @ L @ U, a, atol=1e-12)
    np.testing.assert_array_equal(np.triu(L, 1), 0)
    np.testing.assert_allclose(np.diagonal(L, 0, -2, -1), 1)
    np.testing.assert_array_equal(np.tril(U, -1), 0)
    assert np.all(np.abs(L) <= 1 + 1e-12)          # partial pivoting: multipliers at most 1
    assert not info.any()


def _permutation_reference(pivots, m, dtype):
    out = np.zeros(pivots.shape[:-1] + (m, m))
    for index in np.ndindex(pivots.shape[:-1]):
        perm = list(range(m))
        for j, p in enumerate(pivots[index]):
            perm[j], perm[p - 1] = perm[p - 1], perm[j]
        for i, row in enumerate(perm):
            out[index + (row, i)] = 1
    return out


REFERENCE.update({
    "lu_pivots_to_permutation": _permutation_reference,
    "linalg_inv_ex": lambda a, check_errors=False: (np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)),
    "linalg_solve": np.linalg.solve, "linalg_solve_triangular": _triangular_solve_reference,
    "linalg_det": np.linalg.det, "linalg_slogdet": lambda a: tuple(np.linalg.slogdet(a)),
    "linalg_pinv": lambda a, atol=None, rtol=None, hermitian=False: np.linalg.pinv(a),
    "linalg_matrix_exp": _expm_reference})

PROPERTY = {"rand": _check_rand, "randn": _check_randn, "randint": _check_randint,
            "randperm": _check_randperm, "bernoulli": _check_bernoulli, "native_dropout": _check_dropout,
            "multinomial": _check_multinomial, "symmetric_eigh": _check_symmetric_eigh}
PROPERTY.update({"linalg_svd": _check_linalg_svd, "linalg_eigh": _check_linalg_eigh, "linalg_eig": _check_linalg_eig,
                 "linalg_qr": _check_linalg_qr, "linalg_cholesky_ex": _check_linalg_cholesky_ex,
                 "linalg_lu": _check_linalg_lu})


def _values(v):
    if isinstance(v, (NC, C)):
        return v.arr.copy()
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, list):
        return [_values(x) for x in v]
    return v


def _assert_close(result, expected, where):
    if isinstance(result, (tuple, list)):
        assert len(result) == len(expected), where
        for r, e in zip(result, expected):
            _assert_close(r, e, where)
        return
    got = result.numpy()
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{where}: shape {got.shape}, expected {expected.shape}"
    if got.dtype == np.bool_ or expected.dtype == np.bool_:
        np.testing.assert_array_equal(got, expected, err_msg=where)
        return
    tol = 1e-12 if got.dtype in (np.float64, np.complex128) else 1e-5
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(expected) else np.float64
    np.testing.assert_allclose(got.astype(wide), expected.astype(wide),
                               rtol=tol * 100, atol=tol, equal_nan=True, err_msg=where)


# (ops whose kernel takes sparse tensors have their own references in tests/sparse)
NON_INPLACE = sorted(n for n, op in registry.items() if op.kind != INPLACE and op.sparse is not op)
CASES = [(n, i) for n in NON_INPLACE for i in range(len(SAMPLES.get(n, ())))]


def test_every_op_has_samples_and_a_reference():
    no_samples = [n for n in NON_INPLACE if not SAMPLES.get(n)]
    assert not no_samples, f"ops without samples: {no_samples}"
    no_reference = [n for n in NON_INPLACE if n not in REFERENCE and n not in PROPERTY]
    assert not no_reference, f"ops without a numpy reference: {no_reference}"
    no_inplace_sample = [n for n, op in registry.items() if op.kind == INPLACE and not inplace_samples(op)]
    assert not no_inplace_sample, f"in-place ops with no sample that fits in place: {no_inplace_sample}"
    stale = sorted(set(SAMPLES) - set(registry))
    assert not stale, f"samples for ops that are not registered: {stale}"


@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_eager_matches_reference(name, i):
    sample = SAMPLES[name][i]
    op = registry[name]
    dynjit.manual_seed(0)
    result = call(op, sample)
    args = [_values(a) for a in sample.args]
    kwargs = {k: _values(v) for k, v in sample.kwargs.items()}
    if name in PROPERTY:
        PROPERTY[name](result, *args, **kwargs)
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy's "Mean of empty slice"
        expected = REFERENCE[name](*args, **kwargs)
    if name in ("median_dim", "nanmedian_dim"):
        values, indices = result
        _assert_close(values, expected[0], f"{name}{sample}")
        _assert_indices_select(args[0], args[1], args[2] if len(args) > 2 else kwargs.get("keepdim", False),
                               indices.numpy(), values.numpy())
        return
    _assert_close(result, expected, f"{name}{sample}")


INPLACE_CASES = sorted(n for n, op in registry.items() if op.kind == INPLACE)


@pytest.mark.parametrize("name", INPLACE_CASES)
def test_inplace_equals_out_of_place_and_bumps_version(name):
    op = registry[name]
    for sample in inplace_samples(op):
        expected = call(op.functional, sample)
        leaves, build = materialize(sample)
        args, kwargs = build(leaves)
        self = args[0]
        before = self._version
        out = op(*args, **kwargs)
        assert out is self, f"{name} must return its input"
        assert self._version == before + 1, f"{name} must bump the version counter"
        wide = np.complex128 if self.dtype.is_complex else np.float64
        np.testing.assert_allclose(self.numpy().astype(wide),
                                   expected.numpy().astype(self.dtype.np).astype(wide),
                                   rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=f"{name}{sample}")
