"""Convolutions (F.conv1d/2d/3d, conv_transpose1d/2d/3d, unfold, fold and their nn modules)
against direct-loop numpy references written from the definitions:

    conv:       out[n, o, p] = b[o] + sum_{c in o's group, k} x_pad[n, c, p * s + k * d] w[o, c, k]
    transposed: out[n, o, i * s - pad + k * d] += x[n, c, i] w[c, o in c's group, k]
    unfold:     col[n, (c, k), l] = x_pad[n, c, l * s + k * d];  fold sums the columns back.

Gradients by finite differences (gradcheck, gradgradcheck for double backward), PyTorch's
error messages, and the same small CNN run eagerly and under dynjit.compile on each backend
and through dynjit.aot."""
import itertools
import math

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck, gradgradcheck
from dynjit.aot import aot_function

BACKENDS = ["eager", "aot_eager", "llvm"]
rng = np.random.default_rng(7)


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


# -- references ---------------------------------------------------------------------------

def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct loops over every output position and kernel offset (batched input)."""
    nd = w.ndim - 2
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    if padding == "valid":
        padding = 0
    if padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, w.shape[2:])]
        pads = [(t // 2, t - t // 2) for t in total]
    else:
        pads = [(p, p) for p in _tuple(padding, nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    out_sizes = [(xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    n, c_in = x.shape[:2]
    c_out = w.shape[0]
    cg, og = c_in // groups, c_out // groups
    out = np.zeros((n, c_out) + tuple(out_sizes))
    for o in range(c_out):
        g = o // og
        for pos in itertools.product(*map(range, out_sizes)):
            acc = np.zeros(n) if b is None else np.full(n, b[o])
            for c in range(cg):
                for k in itertools.product(*map(range, w.shape[2:])):
                    src = tuple(p * s + kk * d for p, s, kk, d in zip(pos, stride, k, dilation))
                    acc = acc + xp[(slice(None), g * cg + c) + src] * w[(o, c) + k]
            out[(slice(None), o) + pos] = acc
    return out


def ref_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = w.ndim - 2
    stride, padding, dilation = _tuple(stride, nd), _tuple(padding, nd), _tuple(dilation, nd)
    output_padding = _tuple(output_padding, nd)
    n, c_in = x.shape[:2]
    cg, og = c_in // groups, w.shape[1]
    sizes = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w.shape[2 + i] - 1)
             + output_padding[i] + 1 for i in range(nd)]
    out = np.zeros((n, og * groups) + tuple(sizes))
    for c in range(c_in):
        g = c // cg
        for o in range(og):
            for pos in itertools.product(*map(range, x.shape[2:])):
                for k in itertools.product(*map(range, w.shape[2:])):
                    dst = tuple(p * s - pd + kk * d for p, s, pd, kk, d in zip(pos, stride, padding, k, dilation))
                    if all(0 <= t < sz for t, sz in zip(dst, sizes)):
                        out[(slice(None), g * og + o) + dst] += x[(slice(None), c) + pos] * w[(c, o) + k]
    if b is not None:
        out += b.reshape((-1,) + (1,) * nd)
    return out


def ref_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    blocks = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    n, c = x.shape[:2]
    out = np.zeros((n, c * k[0] * k[1], blocks[0] * blocks[1]))
    for ch in range(c):
        for ki, kj in itertools.product(range(k[0]), range(k[1])):
            row = (ch * k[0] + ki) * k[1] + kj
            for bi, bj in itertools.product(range(blocks[0]), range(blocks[1])):
                out[:, row, bi * blocks[1] + bj] = xp[:, ch, bi * s[0] + ki * d[0], bj * s[1] + kj * d[1]]
    return out


def ref_fold(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s, size = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride, output_size))
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    xp = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for ch in range(c):
        for ki, kj in itertools.product(range(k[0]), range(k[1])):
            row = (ch * k[0] + ki) * k[1] + kj
            for bi, bj in itertools.product(range(blocks[0]), range(blocks[1])):
                xp[:, ch, bi * s[0] + ki * d[0], bj * s[1] + kj * d[1]] += cols[:, row, bi * blocks[1] + bj]
    return xp[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def _r(*shape):
    return rng.standard_normal(shape)


def _t(a, grad=False):
    return dynjit.tensor(a, dtype=dynjit.float64, requires_grad=grad)


def _close(t, expected, tol=1e-10):
    got = t.detach().numpy()
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# -- values --------------------------------------------------------------------------------

CONV_CASES = [
    # (nd, input shape, weight shape, bias, kwargs)
    (1, (2, 3, 9), (4, 3, 3), True, {}),
    (1, (2, 4, 10), (6, 2, 3), False, dict(stride=2, padding=2, dilation=2, groups=2)),
    (1, (1, 2, 7), (2, 2, 4), True, dict(padding="same")),
    (1, (1, 2, 7), (2, 2, 4), True, dict(padding="same", dilation=3)),
    (2, (2, 3, 6, 7), (4, 3, 3, 3), True, dict(padding=1)),
    (2, (2, 4, 7, 6), (6, 2, 2, 3), True, dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    (2, (1, 4, 6, 6), (4, 1, 3, 3), False, dict(padding=1, groups=4)),          # depthwise
    (2, (2, 3, 5, 6), (2, 3, 2, 4), True, dict(padding="same")),                  # asymmetric 'same'
    (2, (2, 3, 5, 6), (2, 3, 3, 2), True, dict(padding="valid", stride=[2, 3])),
    (2, (2, 3, 5, 5), (5, 3, 1, 1), True, {}),                                    # 1x1
    (2, (2, 3, 4, 4), (2, 3, 4, 4), True, {}),                                    # kernel == input
    (3, (1, 2, 4, 5, 3), (3, 2, 2, 3, 2), True, dict(stride=(1, 2, 1), padding=1)),
    (3, (1, 4, 3, 4, 4), (4, 2, 2, 2, 2), False, dict(groups=2, dilation=(1, 2, 1), padding="same")),
    # depthwise (the direct multiply-add kernels): strided, dilated, 1d, 3d
    (2, (2, 6, 7, 8), (6, 1, 3, 3), True, dict(stride=2, padding=1, groups=6)),
    (2, (2, 4, 7, 8), (4, 1, 3, 2), False, dict(padding=(2, 1), dilation=(2, 3), groups=4)),
    (1, (2, 3, 9), (3, 1, 4), True, dict(padding=2, dilation=2, groups=3)),
    (1, (2, 3, 11), (3, 1, 3), False, dict(stride=3, groups=3)),
    (3, (1, 3, 4, 5, 4), (3, 1, 2, 3, 2), True, dict(padding=1, stride=(1, 2, 1), groups=3)),
    (3, (1, 2, 4, 5, 4), (2, 1, 2, 3, 2), False, dict(padding=(0, 1, 1), dilation=(2, 1, 1), groups=2)),
    (2, (2, 3, 6, 6), (6, 1, 3, 3), True, dict(padding=1, groups=3)),              # channel multiplier 2
    # more output positions per sample
    (2, (2, 3, 17, 16), (4, 3, 3, 3), True, dict(padding=1)),
    (2, (1, 4, 17, 16), (4, 2, 3, 3), False, dict(padding=(1, 2), stride=(1, 1), dilation=(1, 2), groups=2)),
]
CONV_FNS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@pytest.mark.parametrize("nd,xs,ws,bias,kw", CONV_CASES)
def test_conv_matches_direct_loops(nd, xs, ws, bias, kw):
    x, w = _r(*xs), _r(*ws)
    b = _r(ws[0]) if bias else None
    out = CONV_FNS[nd](_t(x), _t(w), None if b is None else _t(b), **kw)
    _close(out, ref_conv(x, w, b, **kw))


def test_conv_unbatched_input_and_float32():
    x, w, b = _r(3, 6, 5), _r(4, 3, 3, 2), _r(4)
    out = F.conv2d(dynjit.tensor(x, dtype=dynjit.float32), dynjit.tensor(w, dtype=dynjit.float32),
                   dynjit.tensor(b, dtype=dynjit.float32), padding=(1, 0))
    assert out.dtype == dynjit.float32 and out.shape == (4, 6, 4)
    _close(out, ref_conv(x[None], w, b, padding=(1, 0))[0], tol=1e-5)


@pytest.mark.parametrize("xs,ws,kw", [
    ((3, 5, 9, 10), (5, 1, 3, 3), dict(padding=1, groups=5)),                      # depthwise
    ((3, 5, 9, 10), (5, 1, 3, 3), dict(stride=2, dilation=2, padding=2, groups=5)),
    ((2, 3, 18, 17), (4, 3, 3, 3), dict(padding=1)),
    ((2, 4, 18, 17), (2, 4, 3, 3), dict(padding=2, dilation=2)),                   # input grad as a conv
])
def test_conv_float32_values_and_gradients_match_float64(xs, ws, kw):
    x, w, b = _r(*xs), _r(*ws), _r(ws[0])
    grads = {}
    for dtype in (dynjit.float32, dynjit.float64):
        xt, wt, bt = (dynjit.tensor(a, dtype=dtype, requires_grad=True) for a in (x, w, b))
        out = F.conv2d(xt, wt, bt, **kw)
        assert out.dtype == dtype
        if dtype == dynjit.float32:
            _close(out, ref_conv(x, w, b, **kw), tol=1e-4)
        out.backward(dynjit.tensor(np.cos(np.arange(out.numel())).reshape(out.shape), dtype=dtype))
        grads[dtype] = [t.grad for t in (xt, wt, bt)]
    for g32, g64 in zip(grads[dynjit.float32], grads[dynjit.float64]):
        assert g32.dtype == dynjit.float32
        _close(g32, g64.numpy(), tol=1e-3)


@pytest.mark.parametrize("layout", ["per_sample", "per_group"])
@pytest.mark.parametrize("nd,xs,ws,kw", [
    (2, (2, 4, 5, 6), (6, 2, 3, 2), dict(padding=1, stride=(2, 1), groups=2)),
    (1, (2, 3, 7), (4, 3, 3), dict(padding=2, dilation=2)),
    (3, (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), dict(padding=1)),
])
def test_both_matmul_layouts_of_the_forward(monkeypatch, layout, nd, xs, ws, kw):
    """The forward (and the weight gradient) multiply per sample or per group over the whole
    batch depending on the shapes: both layouts, forced, with their gradients."""
    from dynjit.ops import _conv_kernels
    big = 1 << 62
    monkeypatch.setattr(_conv_kernels, "_PER_SAMPLE_MIN_POSITIONS", 0 if layout == "per_sample" else big)
    monkeypatch.setattr(_conv_kernels, "_PER_SAMPLE_MAX_MACS", big if layout == "per_sample" else 0)
    monkeypatch.setattr(_conv_kernels, "_PER_SAMPLE_MAX_WEIGHT_GRAD", big if layout == "per_sample" else 0)
    x, w, b = _r(*xs), _r(*ws), _r(ws[0])
    _close(CONV_FNS[nd](_t(x), _t(w), _t(b), **kw), ref_conv(x, w, b, **kw))
    xt, wt, bt = _t(x, True), _t(w, True), _t(b, True)
    assert gradcheck(lambda x, w, b: CONV_FNS[nd](x, w, b, **kw), (xt, wt, bt))
    assert gradgradcheck(lambda x, w, b: CONV_FNS[nd](x, w, b, **kw), (xt, wt, bt))


def test_conv_of_a_non_contiguous_input():
    x = _r(2, 5, 6, 3)
    xt = _t(x).permute(0, 3, 1, 2)          # (2, 3, 5, 6), not contiguous
    w = _r(2, 3, 2, 2)
    _close(F.conv2d(xt, _t(w), stride=2), ref_conv(x.transpose(0, 3, 1, 2), w, stride=2))


TRANSPOSE_CASES = [
    (1, (2, 4, 5), (4, 3, 3), True, dict(stride=2, padding=1, output_padding=1, groups=2)),
    (1, (1, 2, 4), (2, 3, 2), False, dict(dilation=3, padding=1)),
    (2, (2, 4, 5, 4), (4, 3, 3, 2), True, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                               dilation=(1, 2))),
    (2, (2, 4, 5, 4), (4, 3, 3, 3), False, dict(output_padding=1, dilation=2)),   # output_padding < dilation
    (2, (1, 3, 3, 3), (3, 2, 2, 2), True, {}),
    (3, (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), True, dict(stride=2, padding=(0, 1, 1))),
    (2, (2, 3, 4, 5), (3, 1, 3, 3), True, dict(stride=2, padding=1, output_padding=1, groups=3)),   # depthwise
    (1, (2, 4, 6), (4, 1, 3), False, dict(padding=1, dilation=2, groups=4)),
]
TRANSPOSE_FNS = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


@pytest.mark.parametrize("nd,xs,ws,bias,kw", TRANSPOSE_CASES)
def test_conv_transpose_matches_direct_loops(nd, xs, ws, bias, kw):
    x, w = _r(*xs), _r(*ws)
    b = _r(ws[1] * kw.get("groups", 1)) if bias else None
    out = TRANSPOSE_FNS[nd](_t(x), _t(w), None if b is None else _t(b), **kw)
    _close(out, ref_conv_transpose(x, w, b, **kw))


UNFOLD_CASES = [
    ((2, 3, 5, 6), dict(kernel_size=2)),
    ((1, 2, 6, 7), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ((2, 1, 4, 4), dict(kernel_size=3, padding=1, stride=2)),
]


@pytest.mark.parametrize("shape,kw", UNFOLD_CASES)
def test_unfold_and_fold_match_direct_loops(shape, kw):
    x = _r(*shape)
    cols = F.unfold(_t(x), **kw)
    _close(cols, ref_unfold(x, **kw))
    c = _r(*cols.shape)
    _close(F.fold(_t(c), shape[2:], **kw), ref_fold(c, shape[2:], **kw))
    # unbatched
    _close(F.unfold(_t(x[0]), **kw), ref_unfold(x[:1], **kw)[0])
    _close(F.fold(_t(c[0]), shape[2:], **kw), ref_fold(c[:1], shape[2:], **kw)[0])


def test_unfold_then_fold_counts_the_blocks_covering_each_pixel():
    x = dynjit.ones(1, 1, 3, 3, dtype=dynjit.float64)
    out = F.fold(F.unfold(x, 2), (3, 3), 2)
    _close(out, np.array([[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]], dtype=np.float64))


# -- gradients -------------------------------------------------------------------------------

GRAD_CASES = [
    (1, (2, 4, 6), (4, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    (2, (1, 2, 5, 6), (3, 2, 2, 3), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    (2, (2, 4, 4, 4), (2, 2, 3, 3), dict(padding="same", groups=2)),
    (3, (1, 2, 3, 4, 3), (2, 1, 2, 2, 2), dict(padding=1, groups=2)),
    # depthwise, stride 1 (flat shifted planes) and strided
    (2, (2, 3, 5, 6), (3, 1, 3, 2), dict(padding=(1, 2), dilation=(1, 2), groups=3)),
    (2, (1, 3, 6, 5), (3, 1, 3, 3), dict(stride=2, padding=1, groups=3)),
    (1, (2, 2, 7), (2, 1, 3), dict(stride=2, dilation=2, padding=1, groups=2)),
    (3, (1, 2, 3, 4, 3), (2, 1, 2, 2, 2), dict(padding=(1, 0, 1), groups=2)),
    # stride 1 with no more output than input channels: the input gradient is a convolution of
    # the padded (or, with padding > dilation * (kernel - 1), cropped) gradient
    (2, (1, 4, 5, 5), (2, 4, 3, 3), dict(padding=1)),
    (1, (1, 3, 6), (2, 3, 2), dict(padding=3)),
    (2, (1, 4, 5, 6), (4, 2, 2, 3), dict(padding=(2, 0), dilation=(1, 2), groups=2)),
]


@pytest.mark.parametrize("nd,xs,ws,kw", GRAD_CASES)
def test_conv_gradcheck_and_double_backward(nd, xs, ws, kw):
    x, w, b = _t(_r(*xs), True), _t(_r(*ws), True), _t(_r(ws[0]), True)

    def f(x, w, b):
        return CONV_FNS[nd](x, w, b, **kw)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("nd,xs,ws,bias,kw", [c for c in TRANSPOSE_CASES if c[0] < 3])
def test_conv_transpose_gradcheck_and_double_backward(nd, xs, ws, bias, kw):
    x, w = _t(_r(*xs), True), _t(_r(*ws), True)
    b = _t(_r(ws[1] * kw.get("groups", 1)), True)

    def f(x, w, b):
        return TRANSPOSE_FNS[nd](x, w, b, **kw)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("shape,kw", UNFOLD_CASES[1:])
def test_unfold_fold_gradcheck(shape, kw):
    x = _t(_r(*shape), True)
    assert gradcheck(lambda a: F.unfold(a, **kw), (x,))
    assert gradgradcheck(lambda a: F.unfold(a, **kw), (x,))
    cols = _t(_r(*F.unfold(x, **kw).shape), True)
    assert gradcheck(lambda c: F.fold(c, shape[2:], **kw), (cols,))
    assert gradgradcheck(lambda c: F.fold(c, shape[2:], **kw), (cols,))


def test_conv_gradient_by_hand():
    # y = conv1d(x, w) with x = [1, 2, 3, 4], w = [1, -1]: dL/dw[k] = sum_p x[p + k] for L = y.sum()
    x = dynjit.tensor([[[1.0, 2.0, 3.0, 4.0]]], requires_grad=True)
    w = dynjit.tensor([[[1.0, -1.0]]], requires_grad=True)
    F.conv1d(x, w).sum().backward()
    _close(w.grad, np.array([[[6.0, 9.0]]]), tol=1e-6)
    _close(x.grad, np.array([[[1.0, 0.0, 0.0, -1.0]]]), tol=1e-6)


# -- modules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_module_padding_modes(mode, np_mode, nd):
    cls = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[nd - 1]
    m = cls(2, 3, 3, padding=(2, 1, 1)[:nd] if nd > 1 else 2, padding_mode=mode).double()
    x = _r(*((2, 2) + (5, 4, 3)[:nd]))
    pads = [(0, 0), (0, 0)] + [(p, p) for p in _tuple(m.padding, nd)]
    expected = ref_conv(np.pad(x, pads, mode=np_mode), m.weight.detach().numpy(), m.bias.detach().numpy())
    _close(m(_t(x)), expected)
    xg = _t(x, True)
    assert gradcheck(lambda a: m(a), (xg,))


def test_conv_module_same_padding_with_a_mode_and_an_even_kernel():
    m = nn.Conv2d(1, 1, (2, 4), padding="same", padding_mode="reflect", bias=False).double()
    x = _r(1, 1, 5, 6)
    expected = ref_conv(np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], mode="reflect"), m.weight.detach().numpy())
    _close(m(_t(x)), expected)


def test_conv_module_parameters_init_and_repr():
    m = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert m.weight.shape == (6, 2, 3, 3) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 9)        # kaiming_uniform(a=sqrt(5)) and the bias: 1 / sqrt(fan_in)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.abs().max()) > bound / 2
    assert repr(m) == "Conv2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2)"
    assert repr(nn.Conv1d(2, 3, 5, bias=False, dilation=2, padding_mode="circular")) == \
        "Conv1d(2, 3, kernel_size=(5,), stride=(1,), dilation=(2,), bias=False, padding_mode=circular)"
    assert repr(nn.Conv2d(1, 1, 3, padding="same")) == \
        "Conv2d(1, 1, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    t = nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2)
    assert t.weight.shape == (4, 3, 3, 3)
    assert repr(t) == "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1), groups=2)"
    assert nn.Conv3d(2, 4, (1, 2, 3)).weight.shape == (4, 2, 1, 2, 3)


def test_conv_modules_compute_the_functions():
    x = dynjit.randn(2, 4, 7, 6)
    m = nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=1, dilation=(2, 1), groups=2)
    assert dynjit.equal(m(x), F.conv2d(x, m.weight, m.bias, (1, 2), 1, (2, 1), 2))
    t = nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1, bias=False)
    x1 = dynjit.randn(2, 4, 5)
    assert dynjit.equal(t(x1), F.conv_transpose1d(x1, t.weight, None, 2, 1, 1))
    assert nn.Unfold(2, padding=1)(x).shape == (2, 16, 56)
    assert dynjit.equal(nn.Fold((7, 6), 2, padding=1)(nn.Unfold(2, padding=1)(x)),
                        F.fold(F.unfold(x, 2, padding=1), (7, 6), 2, padding=1))


def test_conv_transpose_output_size_picks_the_output_padding():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = dynjit.randn(1, 2, 4, 5)
    assert m(x).shape == (1, 3, 7, 9)
    out = m(x, output_size=(8, 10))
    assert out.shape == (1, 3, 8, 10)
    assert dynjit.equal(out, F.conv_transpose2d(x, m.weight, m.bias, 2, 1, (1, 1)))
    assert m(x, output_size=[1, 3, 8, 9]).shape == (1, 3, 8, 9)
    with pytest.raises(ValueError, match="requested an output size of \\[9, 9\\], but valid sizes range from 7 to 8"):
        m(x, output_size=(9, 9))


# -- errors (PyTorch's messages) ---------------------------------------------------------------

def test_conv_errors():
    x, w = dynjit.randn(2, 4, 5, 5), dynjit.randn(6, 4, 3, 3)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, "
                                           r"but got input of size: \[4, 5\]"):
        F.conv2d(dynjit.randn(4, 5), w)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[6, 3, 3, 3\], expected "
                                           r"input\[2, 4, 5, 5\] to have 3 channels, but got 4 channels instead"):
        F.conv2d(x, dynjit.randn(6, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Given groups=2, expected weight to be divisible by 2 at dimension 0"):
        F.conv2d(x, dynjit.randn(5, 2, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(5 x 5\). Kernel size: "
                                           r"\(7 x 7\). Kernel size can't be greater than actual input size"):
        F.conv2d(x, dynjit.randn(6, 4, 7, 7))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(x, w, padding=-1)
    with pytest.raises(RuntimeError, match="non-positive dilation is not supported"):
        F.conv2d(x, w, dilation=0)
    with pytest.raises(RuntimeError, match="non-positive groups is not supported"):
        F.conv2d(x, w, groups=0)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 6 elements, but got bias of "
                                           r"size \[5\] instead"):
        F.conv2d(x, w, dynjit.randn(5))
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and weight type \(float64\) should be the same"):
        F.conv2d(x, w.double())
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(x, w, padding="foo")
    with pytest.raises(RuntimeError, match=r"expected stride to be a single integer value or a list of 2 values "
                                           r"to match the convolution dimensions, but got stride=\[1, 1, 1\]"):
        F.conv2d(x, w, stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match="conv2d: expected a 4D weight"):
        F.conv2d(x, dynjit.randn(6, 4, 3))
    with pytest.raises(RuntimeError, match=r"output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, dynjit.randn(4, 3, 3, 3), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[3, 3, 3, 3\], expected "
                                           r"input\[2, 4, 5, 5\] to have 3 channels, but got 4 channels instead"):
        F.conv_transpose2d(x, dynjit.randn(3, 3, 3, 3))


def test_module_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 6, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 6, 3, padding_mode="foo")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(4, 6, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 6, 3, padding="full")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")
    m = nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        m(dynjit.randn(1, 1, 3, 3))


def test_unfold_fold_errors():
    with pytest.raises(RuntimeError, match=r"Given input with spatial size \(5, 5\), kernel_size=\(7, 7\)"):
        F.unfold(dynjit.randn(2, 4, 5, 5), 7)
    with pytest.raises(RuntimeError, match="expected size of input's dimension 2 to match the calculated number "
                                           r"of sliding blocks 3 \* 3 = 9, but got input.size\(2\)=5"):
        F.fold(dynjit.randn(2, 12, 5), (4, 4), 2)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1 to be divisible by the product "
                                           "of kernel_size"):
        F.fold(dynjit.randn(2, 13, 9), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"Only 3D or 4D input Tensors are supported \(got 2D\)"):
        F.unfold(dynjit.randn(4, 5), 2)


# -- meta, tracing and compiled == eager ----------------------------------------------------------

def test_meta_agrees_with_the_kernels():
    from dynjit.ops import registry as R
    from dynjit.ops.meta import TensorMeta
    x, w, b = dynjit.randn(2, 4, 7, 6), dynjit.randn(6, 2, 3, 2), dynjit.randn(6)
    args = ((2, 1), (1, 0), (1, 2), 2)
    y = R["convolution"](x, w, b, *args)
    assert R["convolution"].meta((TensorMeta.of(x), TensorMeta.of(w), TensorMeta.of(b)) + args) == \
        (tuple(y.shape), y.dtype)
    gi = R["convolution_backward_input"](y, w, tuple(x.shape), *args)
    assert tuple(gi.shape) == tuple(x.shape)
    assert R["convolution_backward_input"].meta((TensorMeta.of(y), TensorMeta.of(w), tuple(x.shape)) + args) == \
        (tuple(x.shape), x.dtype)
    gw = R["convolution_backward_weight"](x, y, tuple(w.shape), *args)
    assert R["convolution_backward_weight"].meta((TensorMeta.of(x), TensorMeta.of(y), tuple(w.shape)) + args) == \
        (tuple(gw.shape), gw.dtype)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        R["convolution"].meta((TensorMeta((1, 4, 2, 2), dynjit.float32), TensorMeta.of(w), None) + args)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, groups=2, padding_mode="circular")
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x)))
        x = F.relu(self.conv2(x))
        return self.fc(F.avg_pool2d(x, 2, ceil_mode=True).flatten(1))


def _run(model, fn, x):
    model.zero_grad()
    out = fn(x)
    (out * out).sum().backward()
    return out.detach().numpy(), [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_small_cnn_compiled_matches_eager(backend):
    model = SmallCNN()
    x = dynjit.randn(3, 1, 6, 6)
    out, grads = _run(model, model, x)
    c_out, c_grads = _run(model, dynjit.compile(model, backend=backend), x)
    np.testing.assert_allclose(c_out, out, rtol=1e-5, atol=1e-6)
    for a, b in zip(c_grads, grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_transpose_and_unfold_compiled_match_eager(backend):
    def f(x, w):
        y = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)
        return F.fold(F.unfold(y, 2, stride=2), y.shape[2:], 2, stride=2).tanh().sum()
    x = dynjit.randn(2, 3, 4, 4, requires_grad=True)
    w = dynjit.randn(3, 2, 3, 3, requires_grad=True)
    expected = f(x, w)
    gx, gw = dynjit.autograd.grad(expected, (x, w))
    got = dynjit.compile(f, backend=backend)(x, w)
    cgx, cgw = dynjit.autograd.grad(got, (x, w))
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-5)
    np.testing.assert_allclose(cgx.numpy(), gx.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cgw.numpy(), gw.numpy(), rtol=1e-5, atol=1e-6)


def test_aot_traces_conv_forward_and_backward_ops():
    graphs = {}

    def recorder(name):
        def compiler(gm, example_inputs):
            graphs[name] = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
            return gm
        return compiler

    def f(x, w, b):
        return F.conv2d(x, w, b, stride=2, padding=1, groups=2).relu().sum()
    x = dynjit.randn(2, 4, 5, 5, requires_grad=True)
    w = dynjit.randn(6, 2, 3, 3, requires_grad=True)
    b = dynjit.randn(6, requires_grad=True)
    compiled = aot_function(f, recorder("fw"), recorder("bw"))
    out = compiled(x, w, b)
    grads = dynjit.autograd.grad(out, (x, w, b))
    expected = f(x, w, b)
    eg = dynjit.autograd.grad(expected, (x, w, b))
    assert "dynjit.ops.convolution" in graphs["fw"]
    assert "dynjit.ops.convolution_backward_input" in graphs["bw"]
    assert "dynjit.ops.convolution_backward_weight" in graphs["bw"]
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-6)
    for a, e in zip(grads, eg):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_empty_batches_and_dtype_errors():
    out = F.conv2d(dynjit.randn(0, 3, 5, 5, requires_grad=True), dynjit.randn(4, 3, 3, 3))
    assert out.shape == (0, 4, 3, 3)
    assert F.conv_transpose2d(dynjit.randn(0, 3, 4, 4), dynjit.randn(3, 2, 3, 3)).shape == (0, 2, 6, 6)
    assert F.unfold(dynjit.randn(0, 3, 4, 4), 2).shape == (0, 12, 9)
    assert F.fold(dynjit.randn(0, 12, 9), (4, 4), 2).shape == (0, 3, 4, 4)
    x = dynjit.randn(0, 3, 5, 5, requires_grad=True)
    w = dynjit.randn(4, 3, 3, 3, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert x.grad.shape == x.shape and float(w.grad.abs().sum()) == 0.0
    # every kernel path: depthwise (stride 1 and 2), per-sample and per-group matmuls, the
    # input gradient as a convolution and as col2im
    for stride, groups, w_shape in ((1, 3, (3, 1, 3, 3)), (2, 3, (3, 1, 3, 3)), (1, 1, (4, 3, 3, 3)),
                                    (1, 1, (9, 3, 3, 3)), (2, 1, (4, 3, 3, 3)), (1, 1, (2, 3, 1, 1))):
        x = dynjit.randn(0, 3, 12, 12, requires_grad=True)
        w = dynjit.randn(*w_shape, requires_grad=True)
        out = F.conv2d(x, w, padding=1, stride=stride, groups=groups)
        assert out.shape[:2] == (0, w_shape[0])
        out.sum().backward()
        assert x.grad.shape == x.shape and float(w.grad.abs().sum()) == 0.0
        assert F.conv_transpose2d(dynjit.randn(0, 3, 4, 4), dynjit.randn(3, 1, 3, 3), groups=3,
                                  stride=stride).shape[:2] == (0, 3)
    with pytest.raises(RuntimeError, match=r"expected weight to be at least 1 at dimension 0, but got weight of "
                                           r"size \[0, 3, 3, 3\]"):
        F.conv2d(dynjit.randn(2, 3, 5, 5), dynjit.randn(0, 3, 3, 3))
    with pytest.raises(NotImplementedError, match="\"convolution\" not implemented for 'bool'"):
        F.conv2d(dynjit.ones(1, 1, 3, 3, dtype=dynjit.bool), dynjit.ones(1, 1, 2, 2, dtype=dynjit.bool))
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and bias type \(float64\) should be the same"):
        F.conv2d(dynjit.randn(1, 1, 3, 3), dynjit.randn(1, 1, 2, 2), dynjit.randn(1, dtype=dynjit.float64))
    with pytest.raises(TypeError, match="conv2d\\(\\): argument 'stride' must be tuple of ints, but found "
                                        "element of type float"):
        F.conv2d(dynjit.randn(1, 1, 3, 3), dynjit.randn(1, 1, 2, 2), stride=1.5)
    with pytest.raises(TypeError, match="conv2d\\(\\): argument 'weight' must be Tensor, not ndarray"):
        F.conv2d(dynjit.randn(1, 1, 3, 3), np.ones((1, 1, 2, 2)))
    ints = F.conv1d(dynjit.tensor([[[1, 2, 3]]]), dynjit.tensor([[[1, -1]]]))
    assert ints.dtype == dynjit.int64 and ints.tolist() == [[[-1, -1]]]


def test_small_cnn_compiles_to_one_graph():
    from dynjit.testing import CompileCounter
    counter = CompileCounter()
    model = SmallCNN()        # circular padding, grouped conv, max and avg pooling
    x = dynjit.randn(2, 1, 6, 6)
    out = dynjit.compile(model, backend=counter, fullgraph=True)(x)
    assert counter.frame_count == 1
    assert dynjit.allclose(out, model(x))
