"""The grouped and depthwise convolution kernels (dynjit/ops/_conv_kernels.py: one
multiply-add or one matmul per kernel offset over the stride phases of the padded input)
against an independent numpy formula written from the definition, against the generic im2col
path they replace, and by finite differences through F.conv1d/2d/3d, for every stride,
padding, dilation and kernel combination below, forward and both adjoints."""
import itertools

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck, gradgradcheck
from dynjit.ops import _conv_kernels as K

rng = np.random.default_rng(11)


# -- the definition, one kernel offset at a time -----------------------------------------------

def _windows(xp, offset, stride, dilation, out_sizes):
    """xp at p * s + j * d for every output position p (kernel offset j)."""
    return xp[(Ellipsis,) + tuple(slice(j * d, j * d + (o - 1) * s + 1, s)
                                  for j, d, o, s in zip(offset, dilation, out_sizes, stride))]


def _out_sizes(in_sizes, kernel, stride, padding, dilation):
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                 for i, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation))


def _pad(x, padding):
    return np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])


def ref_forward(x, w, stride, padding, dilation, groups):
    """out[n, g*og + o, p] = sum_{c, j} x_pad[n, g*cg + c, p * s + j * d] w[g*og + o, c, j]."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    out_sizes = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    xp = _pad(x, padding)
    out = np.zeros((n, groups, o // groups) + out_sizes)
    for offset in itertools.product(*map(range, kernel)):
        win = _windows(xp, offset, stride, dilation, out_sizes).reshape((n, groups, cg) + out_sizes)
        wk = w[(slice(None), slice(None)) + offset].reshape(groups, o // groups, cg)
        out += np.einsum("ngc...,goc->ngo...", win, wk)
    return out.reshape((n, o) + out_sizes)


def ref_input_grad(gy, w, x_shape, stride, padding, dilation, groups):
    """The adjoint in x: each output's gradient times the weights, added at the positions read."""
    n = gy.shape[0]
    o, cg = w.shape[:2]
    kernel, out_sizes = w.shape[2:], gy.shape[2:]
    dxp = np.zeros((n, groups, cg) + tuple(s + 2 * p for s, p in zip(x_shape[2:], padding)))
    g = gy.reshape((n, groups, o // groups) + out_sizes)
    for offset in itertools.product(*map(range, kernel)):
        wk = w[(slice(None), slice(None)) + offset].reshape(groups, o // groups, cg)
        _windows(dxp, offset, stride, dilation, out_sizes)[...] += np.einsum("ngo...,goc->ngc...", g, wk)
    dxp = dxp.reshape((n, groups * cg) + dxp.shape[3:])
    return dxp[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, x_shape[2:]))]


def ref_weight_grad(x, gy, w_shape, stride, padding, dilation, groups):
    n = x.shape[0]
    o, cg = w_shape[:2]
    kernel, out_sizes = w_shape[2:], gy.shape[2:]
    xp = _pad(x, padding)
    g = gy.reshape((n, groups, o // groups) + out_sizes)
    dw = np.zeros(w_shape)
    for offset in itertools.product(*map(range, kernel)):
        win = _windows(xp, offset, stride, dilation, out_sizes).reshape(n, groups, cg, -1)
        dw[(slice(None), slice(None)) + offset] = np.einsum(
            "ngol,ngcl->goc", g.reshape(n, groups, o // groups, -1), win).reshape(o, cg)
    return dw


def generic_forward(x, w, stride, padding, dilation, groups):
    """The im2col path that groups > 1 took before: the columns of every group, one matmul each."""
    n, o = x.shape[0], w.shape[0]
    kernel = w.shape[2:]
    out_sizes = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    cols = K.columns_by_channel(x, kernel, stride, padding, dilation, out_sizes, groups)
    y = np.matmul(w.reshape(groups, o // groups, -1), cols)
    return np.ascontiguousarray(y.reshape(o, n, -1).swapaxes(0, 1)).reshape((n, o) + out_sizes)


# (input spatial sizes, channels in, channels out, groups): depthwise, depthwise with a channel
# multiplier, grouped, and one input channel per group with several outputs
CHANNELS = [(4, 4, 4), (3, 6, 3), (6, 4, 2), (8, 8, 4), (6, 12, 3)]
SPATIAL = {1: (11,), 2: (7, 8), 3: (5, 4, 6)}


def _cases():
    for nd in (1, 2, 3):
        for (c, o, g), stride, padding, dilation, k in itertools.product(
                CHANNELS, (1, 2, 3), (0, 1, 2), (1, 2), (1, 2, 3)):
            if nd == 3 and (stride == 3 or k == 3 or c == 8):      # (keep the 3-d sweep small)
                continue
            stride_t = (stride,) + (max(1, stride - 1),) * (nd - 1)
            kernel = (k,) + (min(k, 2),) * (nd - 1)
            out = _out_sizes(SPATIAL[nd], kernel, stride_t, (padding,) * nd, (dilation,) * nd)
            if min(out) >= 1:
                yield nd, c, o, g, stride_t, (padding,) * nd, (dilation,) * nd, kernel


CASES = list(_cases())


@pytest.mark.parametrize("nd,c,o,g,stride,padding,dilation,kernel", CASES)
def test_kernels_match_the_definition_and_the_im2col_path(nd, c, o, g, stride, padding, dilation, kernel):
    x = rng.standard_normal((3, c) + SPATIAL[nd])
    w = rng.standard_normal((o, c // g) + kernel)
    y = K.conv_forward(x, w, stride, padding, dilation, g,
                       _out_sizes(x.shape[2:], kernel, stride, padding, dilation))
    np.testing.assert_allclose(y, ref_forward(x, w, stride, padding, dilation, g), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y, generic_forward(x, w, stride, padding, dilation, g), rtol=1e-10, atol=1e-10)
    gy = rng.standard_normal(y.shape)
    dx = K.conv_input_grad(gy, w, x.shape, stride, padding, dilation, g)
    np.testing.assert_allclose(dx, ref_input_grad(gy, w, x.shape, stride, padding, dilation, g),
                               rtol=1e-10, atol=1e-10)
    dw = K.conv_weight_grad(x, gy, w.shape, stride, padding, dilation, g)
    np.testing.assert_allclose(dw, ref_weight_grad(x, gy, w.shape, stride, padding, dilation, g),
                               rtol=1e-10, atol=1e-10)


def test_input_grad_of_a_transposed_convolution_with_unreached_positions():
    """conv_transpose's output_padding: the last input positions no window reads get zeros."""
    x = rng.standard_normal((2, 6, 5, 4))
    w = rng.standard_normal((6, 2, 3, 3))
    for stride, out_pad in (((2, 3), (1, 2)), ((3, 2), (2, 1))):
        got = F.conv_transpose2d(dynjit.tensor(x), dynjit.tensor(w), stride=stride, padding=1,
                                 output_padding=out_pad, groups=3)
        size = tuple((i - 1) * s - 2 + 3 + op for i, s, op in zip(x.shape[2:], stride, out_pad))
        # the transposed convolution is the input gradient of the convolution it undoes
        expected = ref_input_grad(x, w, (2, 6) + size, stride, (1, 1), (1, 1), 3)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("groups,w_shape,stride", [(8, (8, 1, 3, 3), 1), (8, (16, 1, 3, 3), 2),
                                                   (2, (6, 4, 3, 3), 1), (4, (8, 2, 2, 3), 2)])
def test_batch_chunks_with_a_short_last_chunk(monkeypatch, groups, w_shape, stride):
    """The kernels work through the batch in chunks of about _CHUNK_BYTES, and the depthwise
    ones through the channels in blocks of about _TAPS_BLOCK_BYTES: several chunks and blocks,
    the last one shorter, give the same values as one."""
    x = rng.standard_normal((7, 8, 9, 10)).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    args = ((stride, stride), (1, 1), (1, 2))
    out_sizes = _out_sizes(x.shape[2:], w_shape[2:], *args)
    y = K.conv_forward(x, w, *args, groups, out_sizes)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    whole = (y, K.conv_input_grad(gy, w, x.shape, *args, groups), K.conv_weight_grad(x, gy, w.shape, *args, groups))
    monkeypatch.setattr(K, "_CHUNK_BYTES", 2 * x.nbytes // x.shape[0])      # 2-3 samples a chunk
    monkeypatch.setattr(K, "_TAPS_BLOCK_BYTES", 3 * 9 * 120 * 4)              # about 3 channels a block
    chunked = (K.conv_forward(x, w, *args, groups, out_sizes), K.conv_input_grad(gy, w, x.shape, *args, groups),
               K.conv_weight_grad(x, gy, w.shape, *args, groups))
    for a, b in zip(whole, chunked):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(whole[0], ref_forward(x.astype(np.float64), w.astype(np.float64), *args, groups),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nd,xs,ws,kw", [
    (2, (2, 4, 6, 7), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    (2, (2, 4, 6, 7), (8, 1, 3, 2), dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=4)),
    (2, (2, 6, 7, 6), (6, 2, 3, 3), dict(stride=3, padding=2, dilation=2, groups=3)),
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    (3, (1, 4, 4, 5, 4), (4, 2, 2, 2, 3), dict(stride=(2, 1, 2), padding=1, groups=2)),
    (3, (1, 3, 5, 4, 4), (3, 1, 3, 2, 2), dict(stride=2, padding=(1, 0, 1), dilation=(1, 2, 1), groups=3)),
])
def test_gradcheck_and_double_backward(nd, xs, ws, kw):
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    args = tuple(dynjit.tensor(rng.standard_normal(s), dtype=dynjit.float64, requires_grad=True)
                 for s in (xs, ws, ws[:1]))
    assert gradcheck(lambda x, w, b: conv(x, w, b, **kw), args)
    assert gradgradcheck(lambda x, w, b: conv(x, w, b, **kw), args)


def test_float32_and_integer_grouped_convolutions():
    x = rng.standard_normal((2, 8, 9, 9))
    w = rng.standard_normal((8, 2, 3, 3))
    got = F.conv2d(dynjit.tensor(x, dtype=dynjit.float32), dynjit.tensor(w, dtype=dynjit.float32),
                   stride=2, padding=1, groups=4)
    assert got.dtype == dynjit.float32
    np.testing.assert_allclose(got.numpy(), ref_forward(x, w, (2, 2), (1, 1), (1, 1), 4), rtol=1e-4, atol=1e-4)
    xi = rng.integers(-5, 5, (2, 4, 6, 6))
    wi = rng.integers(-3, 3, (4, 1, 3, 3))
    got = F.conv2d(dynjit.tensor(xi), dynjit.tensor(wi), padding=1, groups=4)
    assert got.dtype == dynjit.int64
    np.testing.assert_array_equal(got.numpy(), ref_forward(xi, wi, (1, 1), (1, 1), (1, 1), 4).astype(np.int64))


class _MobileBlock(nn.Module):
    """A depthwise-separable block with a grouped convolution after it."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4)
        self.pw = nn.Conv2d(4, 8, 1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)

    def forward(self, x):
        return self.grouped(F.relu(self.pw(self.dw(x)))).sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_matches_eager(backend):
    state = dynjit.get_rng_state()      # (the global generator is left as the test found it)
    try:
        dynjit.manual_seed(0)
        model = _MobileBlock()
    finally:
        dynjit.set_rng_state(state)
    x = dynjit.tensor(rng.standard_normal((2, 4, 9, 10)), dtype=dynjit.float32)

    def run(fn):
        model.zero_grad()
        loss = fn(x)
        loss.backward()
        return loss.item(), [p.grad.numpy().copy() for p in model.parameters()]
    loss, grads = run(model)
    dynjit.reset()
    c_loss, c_grads = run(dynjit.compile(model, backend=backend))
    np.testing.assert_allclose(c_loss, loss, rtol=1e-5)
    for a, b in zip(c_grads, grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_grouped_and_depthwise_never_build_columns(monkeypatch):
    """groups > 1 takes the per-offset kernels (no im2col copy of the input, nine times its size
    for a 3x3 kernel), forward and both adjoints, at stride 1 and 2."""
    def refuse(*args, **kwargs):
        raise AssertionError("im2col columns built for a grouped convolution")
    monkeypatch.setattr(K, "columns_by_channel", refuse)
    monkeypatch.setattr(K, "columns_by_sample", refuse)
    monkeypatch.setattr(K, "col2im", refuse)
    for w_shape, groups in (((6, 1, 3, 3), 6), ((6, 3, 3, 3), 2)):
        for stride in (1, 2):
            x = dynjit.tensor(rng.standard_normal((2, 6, 8, 7)), requires_grad=True)
            w = dynjit.tensor(rng.standard_normal(w_shape), requires_grad=True)
            F.conv2d(x, w, stride=stride, padding=1, groups=groups).sum().backward()
            expected = ref_forward(x.detach().numpy(), w.detach().numpy(), (stride, stride), (1, 1), (1, 1), groups)
            np.testing.assert_allclose(F.conv2d(x, w, stride=stride, padding=1, groups=groups).detach().numpy(),
                                       expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("nd,c,o,g,stride,padding,dilation,kernel", CASES[::7])
def test_wide_groups_take_the_columns(monkeypatch, nd, c, o, g, stride, padding, dilation, kernel):
    """Groups of _OFFSET_MATMUL_MAX_CHANNELS channels or more use im2col and matmul (one long
    contraction): forced here for small shapes, the same values and adjoints."""
    monkeypatch.setattr(K, "_OFFSET_MATMUL_MAX_CHANNELS", 1)
    w_shape = (o, c // g) + kernel
    assert K.is_depthwise(w_shape, g) or not K.uses_offset_matmuls(w_shape, g)
    x = rng.standard_normal((2, c) + SPATIAL[nd])
    w = rng.standard_normal(w_shape)
    y = K.conv_forward(x, w, stride, padding, dilation, g,
                       _out_sizes(x.shape[2:], kernel, stride, padding, dilation))
    np.testing.assert_allclose(y, ref_forward(x, w, stride, padding, dilation, g), rtol=1e-10, atol=1e-10)
    gy = rng.standard_normal(y.shape)
    np.testing.assert_allclose(K.conv_input_grad(gy, w, x.shape, stride, padding, dilation, g),
                               ref_input_grad(gy, w, x.shape, stride, padding, dilation, g), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(K.conv_weight_grad(x, gy, w.shape, stride, padding, dilation, g),
                               ref_weight_grad(x, gy, w.shape, stride, padding, dilation, g), rtol=1e-10, atol=1e-10)
