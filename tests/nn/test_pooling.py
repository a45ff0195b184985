"""Pooling (F.max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d,
adaptive_max_pool1d/2d and their nn modules) against direct-loop numpy references from
PyTorch's definitions:

- output size floor((L + 2p - d(k - 1) - 1) / s) + 1 (ceil with ceil_mode, dropping a last
  window that would start in the right padding);
- max: the largest value among the window's positions inside the input (the first one on
  ties), index flat over the input plane;
- avg: the window's sum over the input, divided by the window size clipped to the padded
  input (count_include_pad), or by the number of input positions it covers, or by
  divisor_override;
- adaptive: windows [floor(o * L / out), ceil((o + 1) * L / out)).

Gradients by gradcheck (gradgradcheck for the linear ones and max pooling's backward),
PyTorch's error messages, and compiled == eager on each backend."""
import itertools

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck, gradgradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]
rng = np.random.default_rng(11)


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _out_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (int(np.ceil(span / s)) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(in_sizes, kernel, stride, padding, dilation, ceil_mode):
    """For each output position, the list of in-bounds input positions of its window."""
    nd = len(in_sizes)
    outs = [_out_size(in_sizes[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nd)]
    for pos in itertools.product(*map(range, outs)):
        cells = []
        for k in itertools.product(*map(range, kernel)):
            src = tuple(p * s - pd + kk * d for p, s, pd, kk, d in zip(pos, stride, padding, k, dilation))
            if all(0 <= c < n for c, n in zip(src, in_sizes)):
                cells.append(src)
        yield outs, pos, cells


def ref_max_pool(x, nd, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = _tuple(kernel_size, nd)
    s = k if stride is None else _tuple(stride, nd)
    p, d = _tuple(padding, nd), _tuple(dilation, nd)
    in_sizes = x.shape[-nd:]
    results = list(_windows(in_sizes, k, s, p, d, ceil_mode))
    outs = results[0][0]
    values = np.zeros(x.shape[:-nd] + tuple(outs))
    indices = np.zeros(values.shape, dtype=np.int64)
    for lead in itertools.product(*map(range, x.shape[:-nd])):
        for _, pos, cells in results:
            best, at = -np.inf, None
            for c in cells:
                v = x[lead + c]
                if at is None or v > best:
                    best, at = v, c
            values[lead + pos] = best
            indices[lead + pos] = np.ravel_multi_index(at, in_sizes)
    return values, indices


def ref_avg_pool(x, nd, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
    k = _tuple(kernel_size, nd)
    s = k if stride is None else _tuple(stride, nd)
    p = _tuple(padding, nd)
    in_sizes = x.shape[-nd:]
    results = list(_windows(in_sizes, k, s, p, (1,) * nd, ceil_mode))
    out = np.zeros(x.shape[:-nd] + tuple(results[0][0]))
    for _, pos, cells in results:
        total = sum(x[(Ellipsis,) + c] for c in cells)
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = 1
            for i in range(nd):     # the window clipped to the padded input
                start = pos[i] * s[i] - p[i]
                div *= min(start + k[i], in_sizes[i] + p[i]) - start
        else:
            div = len(cells)
        out[(Ellipsis,) + pos] = total / div
    return out


def _adaptive_bounds(n, out):
    return [(o * n // out, -(-(o + 1) * n // out)) for o in range(out)]


def ref_adaptive(x, output_size, reduce):
    nd = len(output_size)
    in_sizes = x.shape[-nd:]
    out_sizes = [n if o is None else o for n, o in zip(in_sizes, output_size)]
    bounds = [_adaptive_bounds(n, o) for n, o in zip(in_sizes, out_sizes)]
    values = np.zeros(x.shape[:-nd] + tuple(out_sizes))
    indices = np.zeros(values.shape, dtype=np.int64)
    for lead in itertools.product(*map(range, x.shape[:-nd])):
        for pos in itertools.product(*map(range, out_sizes)):
            cells = list(itertools.product(*(range(*bounds[i][pos[i]]) for i in range(nd))))
            vals = [x[lead + c] for c in cells]
            if reduce == "avg":
                values[lead + pos] = np.mean(vals)
            else:
                j = int(np.argmax(vals))
                values[lead + pos] = vals[j]
                indices[lead + pos] = np.ravel_multi_index(cells[j], in_sizes)
    return values, indices


def _t(a, grad=False):
    return dynjit.tensor(a, dtype=dynjit.float64, requires_grad=grad)


def _close(t, expected, tol=1e-12):
    got = t.detach().numpy()
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# -- max pooling ---------------------------------------------------------------------------

MAX_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3)),
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (1, (3, 10), dict(kernel_size=2, stride=3, dilation=2)),                       # unbatched
    (2, (2, 3, 6, 7), dict(kernel_size=2)),
    (2, (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=(2, 1), ceil_mode=True)),
    (2, (1, 2, 5, 5), dict(kernel_size=3, stride=(1, 2), padding=(1, 0))),
    (2, (3, 5, 6), dict(kernel_size=2, stride=1, ceil_mode=True)),                 # unbatched
    (3, (1, 2, 4, 5, 4), dict(kernel_size=2, stride=(2, 1, 2), padding=(1, 0, 0))),
]
MAX_FNS = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


@pytest.mark.parametrize("nd,shape,kw", MAX_CASES)
def test_max_pool_values_and_indices(nd, shape, kw):
    x = rng.standard_normal(shape)
    values, indices = MAX_FNS[nd](_t(x), return_indices=True, **kw)
    ev, ei = ref_max_pool(x, nd, **kw)
    _close(values, ev)
    assert indices.dtype == dynjit.int64
    np.testing.assert_array_equal(indices.numpy(), ei)
    _close(MAX_FNS[nd](_t(x), **kw), ev)


def test_max_pool_ties_take_the_first_and_padding_never_wins():
    x = dynjit.tensor([[[-5.0, -5.0, -7.0, -7.0]]])
    v, i = F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True)
    _close(v, [[[-5.0, -5.0]]])
    np.testing.assert_array_equal(i.numpy(), [[[0, 1]]])       # windows [pad, 0, 1] and [1, 2, 3]
    v, i = F.max_pool1d(dynjit.tensor([[[-np.inf, 1.0]]]), 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), [[[0, 1]]])       # a -inf inside the input is a position


def test_max_pool_ties_without_padding_take_the_first():
    # no padding: the argmax path (the scan with padding is the test above)
    v, i = F.max_pool1d(dynjit.tensor([[[-5.0, -5.0, 3.0, 3.0, -np.inf, -np.inf]]]), 2, return_indices=True)
    _close(v, [[[-5.0, 3.0, -np.inf]]])
    np.testing.assert_array_equal(i.numpy(), [[[0, 2, 4]]])
    v, i = F.max_pool2d(dynjit.ones(1, 1, 4, 4), 2, stride=1, dilation=2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), [[[[0, 1], [4, 5]]]])


def test_max_pool_propagates_nan():
    x = dynjit.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    v, i = F.max_pool1d(x, 2, return_indices=True)
    assert np.isnan(v.numpy()[0, 0, 0]) and v.numpy()[0, 0, 1] == 3.0
    np.testing.assert_array_equal(i.numpy(), [[[1, 2]]])
    v, i = F.adaptive_max_pool1d(x, 2, return_indices=True)
    assert np.isnan(v.numpy()[0, 0, 0]) and v.numpy()[0, 0, 1] == 3.0
    np.testing.assert_array_equal(i.numpy(), [[[1, 2]]])


def test_max_pool_of_integers():
    x = dynjit.tensor([[[3, 1, 4, 1, 5, 9]]])
    v = F.max_pool1d(x, 2)
    assert v.dtype == dynjit.int64
    np.testing.assert_array_equal(v.numpy(), [[[3, 4, 9]]])


def test_max_pool_gradient_goes_to_the_max_and_adds_up_on_overlaps():
    x = dynjit.tensor([[[0.0, 5.0, 1.0, 2.0]]], requires_grad=True)
    F.max_pool1d(x, 2, stride=1).sum().backward()     # windows pick 5, 5, 2
    _close(x.grad, [[[0.0, 2.0, 0.0, 1.0]]])


@pytest.mark.parametrize("nd,shape,kw", MAX_CASES)
def test_max_pool_gradcheck(nd, shape, kw):
    # distinct values far apart so finite differences never change the argmax
    n = int(np.prod(shape))
    x = _t((rng.permutation(n) * 0.1).reshape(shape), True)
    assert gradcheck(lambda a: MAX_FNS[nd](a, **kw), (x,))
    assert gradgradcheck(lambda a: MAX_FNS[nd](a, **kw), (x,))


# -- average pooling ------------------------------------------------------------------------

AVG_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3)),
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    (1, (3, 8), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    (2, (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    (2, (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=(2, 3), padding=1, divisor_override=5)),
    (2, (3, 6, 6), dict(kernel_size=2)),
    (3, (1, 2, 4, 5, 4), dict(kernel_size=(2, 3, 2), stride=2, padding=1, count_include_pad=False)),
]
AVG_FNS = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


@pytest.mark.parametrize("nd,shape,kw", AVG_CASES)
def test_avg_pool_values(nd, shape, kw):
    x = rng.standard_normal(shape)
    _close(AVG_FNS[nd](_t(x), **kw), ref_avg_pool(x, nd, **kw))


@pytest.mark.parametrize("nd,shape,kw", AVG_CASES)
def test_avg_pool_gradcheck_and_double_backward(nd, shape, kw):
    x = _t(rng.standard_normal(shape), True)
    assert gradcheck(lambda a: AVG_FNS[nd](a, **kw), (x,))
    assert gradgradcheck(lambda a: AVG_FNS[nd](a, **kw), (x,))


def test_avg_pool_float32_and_integers():
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    out = F.avg_pool2d(dynjit.tensor(x), 2)
    assert out.dtype == dynjit.float32
    _close(out, ref_avg_pool(x.astype(np.float64), 2, 2), tol=1e-6)
    ints = F.avg_pool1d(dynjit.tensor([[[1, 2, -3, -4, 7, 7]]]), 2)
    assert ints.dtype == dynjit.int64
    np.testing.assert_array_equal(ints.numpy(), [[[1, -3, 7]]])     # truncated, as PyTorch


# -- adaptive pooling -----------------------------------------------------------------------

ADAPTIVE_CASES = [
    (1, (2, 3, 10), 4),
    (1, (3, 7), 7),
    (1, (2, 2, 5), 8),              # more outputs than inputs: windows overlap
    (2, (2, 3, 7, 9), (3, 4)),
    (2, (3, 7, 9), (None, 5)),
    (2, (1, 2, 6, 6), 1),
    (2, (1, 2, 5, 4), (7, 3)),
]


@pytest.mark.parametrize("nd,shape,size", ADAPTIVE_CASES)
def test_adaptive_avg_pool(nd, shape, size):
    x = rng.standard_normal(shape)
    fn = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d}[nd]
    _close(fn(_t(x), size), ref_adaptive(x, _tuple(size, nd), "avg")[0])
    xg = _t(x, True)
    assert gradcheck(lambda a: fn(a, size), (xg,))
    assert gradgradcheck(lambda a: fn(a, size), (xg,))


@pytest.mark.parametrize("nd,shape,size", ADAPTIVE_CASES)
def test_adaptive_max_pool(nd, shape, size):
    n = int(np.prod(shape))
    x = (rng.permutation(n) * 0.1).reshape(shape)
    fn = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d}[nd]
    values, indices = fn(_t(x), size, return_indices=True)
    ev, ei = ref_adaptive(x, _tuple(size, nd), "max")
    _close(values, ev)
    np.testing.assert_array_equal(indices.numpy(), ei)
    xg = _t(x, True)
    assert gradcheck(lambda a: fn(a, size), (xg,))
    assert gradgradcheck(lambda a: fn(a, size), (xg,))


def test_adaptive_avg_pool_3d():
    x = rng.standard_normal((1, 2, 4, 5, 3))
    out = F.adaptive_avg_pool3d(_t(x), (2, 3, 1))
    _close(out, ref_adaptive(x, (2, 3, 1), "avg")[0])


# -- modules ----------------------------------------------------------------------------------

def test_pooling_modules_compute_the_functions_and_print_as_pytorch():
    x = dynjit.randn(2, 3, 7, 8)
    m = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    v, i = m(x)
    ev, ei = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    assert dynjit.equal(v, ev) and dynjit.equal(i, ei)
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AvgPool2d(3)) == "AvgPool2d(kernel_size=3, stride=3, padding=0)"
    assert repr(nn.AdaptiveMaxPool2d((2, None))) == "AdaptiveMaxPool2d(output_size=(2, None))"
    assert dynjit.equal(nn.AvgPool2d(2, count_include_pad=False, padding=1, divisor_override=3)(x),
                        F.avg_pool2d(x, 2, padding=1, count_include_pad=False, divisor_override=3))
    x1 = dynjit.randn(2, 3, 9)
    assert dynjit.equal(nn.MaxPool1d(2, dilation=2)(x1), F.max_pool1d(x1, 2, dilation=2))
    assert dynjit.equal(nn.AvgPool1d(3, 2, 1, True, False)(x1), F.avg_pool1d(x1, 3, 2, 1, True, False))
    assert dynjit.equal(nn.AdaptiveAvgPool1d(4)(x1), F.adaptive_avg_pool1d(x1, 4))
    assert dynjit.equal(nn.AdaptiveAvgPool2d((3, None))(x), F.adaptive_avg_pool2d(x, (3, None)))
    av, ai = nn.AdaptiveMaxPool2d(3, return_indices=True)(x)
    assert dynjit.equal(ai, F.adaptive_max_pool2d(x, 3, return_indices=True)[1])
    assert dynjit.equal(nn.AdaptiveMaxPool1d(2)(x1), F.adaptive_max_pool1d(x1, 2))
    assert list(nn.MaxPool2d(2).parameters()) == []


# -- errors ------------------------------------------------------------------------------------

def test_pooling_errors():
    x = dynjit.randn(2, 4, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(4x5x5\). Calculated output size: \(4x0x0\). "
                                           "Output size is too small"):
        F.max_pool2d(x, 7)
    with pytest.raises(RuntimeError, match="non-empty 3D or 4D"):
        F.max_pool2d(dynjit.randn(5, 5), 2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.avg_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool1d(dynjit.randn(1, 2, 3), 4)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5\]"):
        F.adaptive_avg_pool2d(dynjit.randn(5), 2)
    with pytest.raises(RuntimeError, match="output_size.size\\(\\) must be 2"):
        F.adaptive_max_pool2d(x, (1, 2, 3))
    with pytest.raises(NotImplementedError, match="adaptive_avg_pool"):
        F.adaptive_avg_pool1d(dynjit.tensor([[[1, 2, 3]]]), 2)


# -- compiled == eager ---------------------------------------------------------------------------

def _pooling_program(x):
    a, idx = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    b = F.avg_pool2d(x, 2, count_include_pad=False, padding=1)
    c = F.adaptive_avg_pool2d(x, (2, 3))
    d = F.adaptive_max_pool2d(x, 2)
    e = F.max_pool1d(x.flatten(2), 4)
    return (a.sum() + (b * b).sum() + c.exp().sum() + d.tanh().sum() + e.sum(), idx)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pooling_compiled_matches_eager(backend):
    x = dynjit.randn(2, 3, 7, 6, requires_grad=True)
    loss, idx = _pooling_program(x)
    (grad,) = dynjit.autograd.grad(loss, (x,))
    c_loss, c_idx = dynjit.compile(_pooling_program, backend=backend)(x)
    (c_grad,) = dynjit.autograd.grad(c_loss, (x,))
    np.testing.assert_allclose(c_loss.item(), loss.item(), rtol=1e-5)
    assert dynjit.equal(c_idx, idx)
    np.testing.assert_allclose(c_grad.numpy(), grad.numpy(), rtol=1e-5, atol=1e-6)


def test_empty_batches_bool_and_argument_types():
    assert F.max_pool2d(dynjit.randn(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)
    assert F.avg_pool2d(dynjit.randn(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)
    assert F.adaptive_avg_pool2d(dynjit.randn(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)
    assert F.adaptive_max_pool2d(dynjit.randn(1, 3, 4, 4), 0).shape == (1, 3, 0, 0)
    x = dynjit.randn(0, 2, 4, requires_grad=True)
    F.max_pool1d(x, 2).sum().backward()
    assert x.grad.shape == (0, 2, 4)
    flags = dynjit.ones(1, 1, 4, 4, dtype=dynjit.bool)
    with pytest.raises(NotImplementedError, match="\"max_pool\" not implemented for 'bool'"):
        F.max_pool2d(flags, 2)
    with pytest.raises(NotImplementedError, match="\"avg_pool\" not implemented for 'bool'"):
        F.avg_pool2d(flags, 2)
    with pytest.raises(TypeError, match="avg_pool2d\\(\\): argument 'divisor_override' must be int, not float"):
        F.avg_pool2d(dynjit.randn(1, 1, 4, 4), 2, divisor_override=1.5)
    with pytest.raises(TypeError, match="argument 'kernel_size' must be tuple of ints"):
        F.max_pool2d(dynjit.randn(1, 1, 4, 4), 2.0)
