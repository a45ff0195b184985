"""max_unpool, LP pooling and fractional max pooling (F.* and their nn modules), and
static_k / static_v in F.multi_head_attention_forward: values against numpy references
written with loops from the definitions, finite-difference gradients, PyTorch's errors, and
the same code compiled on every backend against eager.

    max_unpool:  out[n, c, idx[n, c, p]] = x[n, c, p], zeros elsewhere
    lp_pool:     out = (sum over the window of x ** p) ** (1 / p)
    fractional:  window starts int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1),
                 the last flush with the end; u is the (n, c, dim) sample (dims ordered w, h in 2d)
"""
import itertools

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck, gradgradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]
rng = np.random.default_rng(11)


def _t(a, grad=False, dtype=dynjit.float64):
    return dynjit.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _distinct(*shape):
    """Values with no ties (a permutation), so maxima and their gradients are well defined."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 + rng.random(shape) * 0.1)


# -- max_unpool --------------------------------------------------------------------------------

def ref_unpool(x, idx, out_sizes):
    n, c = x.shape[:2]
    out = np.zeros((n, c, int(np.prod(out_sizes))))
    for a, b in itertools.product(range(n), range(c)):
        for v, i in zip(x[a, b].ravel(), idx[a, b].ravel()):
            out[a, b, i] = v
    return out.reshape((n, c) + tuple(out_sizes))


UNPOOL_CASES = [
    # (nd, input shape, kernel, stride, padding, output_size given to unpool)
    (1, (2, 3, 9), 3, 2, 1, None),
    (1, (2, 3, 8), 2, None, 0, [9]),
    (2, (2, 3, 6, 7), 2, None, 0, [6, 7]),
    (2, (1, 2, 7, 7), 3, 2, 1, None),
    (2, (1, 2, 5, 6), (2, 3), (2, 2), 0, (1, 2, 5, 6)),
    (3, (1, 2, 4, 5, 4), 2, None, 0, [4, 5, 4]),
]
POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
UNPOOL = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}


@pytest.mark.parametrize("nd,shape,k,s,p,size", UNPOOL_CASES)
def test_max_unpool_values_and_gradients(nd, shape, k, s, p, size):
    x = _t(_distinct(*shape))
    out, idx = POOL[nd](x, k, s, p, return_indices=True)
    un = UNPOOL[nd](out, idx, k, s, p, output_size=size)
    kt = (k,) * nd if isinstance(k, int) else k
    st = kt if s is None else ((s,) * nd if isinstance(s, int) else s)
    sizes = list(size)[-nd:] if size is not None else \
        [(out.shape[2 + d] - 1) * st[d] + kt[d] - 2 * p for d in range(nd)]
    expected = ref_unpool(out.numpy(), idx.numpy(), sizes)
    np.testing.assert_array_equal(un.numpy(), expected)
    # unbatched
    np.testing.assert_array_equal(UNPOOL[nd](out[0], idx[0], k, s, p, output_size=size).numpy(), expected[0])
    v = _t(out.numpy(), grad=True)
    flat = idx.numpy().reshape(shape[0] * shape[1], -1)
    if all(len(set(row)) == len(row) for row in flat):
        assert gradcheck(lambda v: UNPOOL[nd](v, idx, k, s, p, output_size=size), (v,))
        assert gradgradcheck(lambda v: UNPOOL[nd](v, idx, k, s, p, output_size=size), (v,))
    else:
        # overlapping windows can pick one max twice: the last write wins, and (as in PyTorch)
        # the gradient of each input is the output gradient at its index
        up = rng.standard_normal(tuple(un.shape))
        UNPOOL[nd](v, idx, k, s, p, output_size=size).backward(_t(up))
        planes = up.reshape(shape[0], shape[1], -1)
        expected = np.take_along_axis(planes, idx.numpy().reshape(shape[0], shape[1], -1), 2)
        np.testing.assert_array_equal(v.grad.numpy(), expected.reshape(v.shape))


def test_max_unpool_inverts_max_pool_where_the_maxima_were():
    x = _t(_distinct(2, 2, 4, 4))
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    back = nn.MaxUnpool2d(2)(out, idx)
    kept = back.numpy() != 0
    np.testing.assert_array_equal(back.numpy()[kept], x.numpy()[kept])
    assert kept.sum() == out.numel()


def test_max_unpool_errors():
    out, idx = F.max_pool2d(_t(_distinct(1, 2, 4, 4)), 2, return_indices=True)
    with pytest.raises(ValueError, match=r'invalid output_size "\(9, 9\)" \(dim 0 must be between 2 and 6\)'):
        F.max_unpool2d(out, idx, 2, output_size=(9, 9))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements, but it has "
                                         "a length of '3'"):
        F.max_unpool2d(out, idx, 2, output_size=(1, 2, 3))
    bad = dynjit.tensor([[[[0, 15], [10, 1]], [[0, 12], [11, 1]]]])
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 11 \(output volumes are of size 3x3"):
        F.max_unpool2d(out, bad, 2, output_size=(3, 3))      # the last invalid one, as PyTorch
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: -2 \(output volumes are of size 4x4"):
        F.max_unpool2d(out, bad - 3, 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: Float"):
        F.max_unpool2d(out, idx.float(), 2)
    with pytest.raises(RuntimeError, match=r"Expected shape of indices to be same as that of the input tensor "
                                           r"\(\[1, 2, 2, 2\]\) but got indices tensor with shape: \[1, 1, 2, 2\]"):
        F.max_unpool2d(out, idx[:, :1], 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
                                           "with 2 dimensions."):
        F.max_unpool2d(out[0, 0], idx[0, 0], 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling3d should be a 4d or 5d Tensor"):
        F.max_unpool3d(out[0], idx[0], 2)
    with pytest.raises(NotImplementedError, match="\"max_unpool2d\" not implemented for 'Int'"):
        F.max_unpool2d(out.int(), idx, 2)
    with pytest.raises(RuntimeError, match=r"invalid max index: 11 \(output volumes are of size 4x1"):
        F.max_unpool1d(out[0], bad[0], 2)       # 1d goes through 2d, as in PyTorch
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        F.max_unpool2d(_t(np.zeros((1, 2, 0, 2))), dynjit.zeros(1, 2, 0, 2, dtype=dynjit.int64), 2)


def test_max_unpool_modules_print_as_pytorch():
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.MaxUnpool1d(3, 2, 1)) == "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))"
    assert repr(nn.MaxUnpool3d(2)) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"


# -- LP pooling ------------------------------------------------------------------------------

def ref_lp_pool(x, p, kernel, stride, ceil_mode):
    nd = len(kernel)
    out_sizes = []
    for i, k, s in zip(x.shape[2:], kernel, stride):
        o = -(-(i - k) // s) + 1 if ceil_mode else (i - k) // s + 1
        if ceil_mode and (o - 1) * s >= i:
            o -= 1
        out_sizes.append(o)
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for pos in itertools.product(*map(range, out_sizes)):
        window = x[(Ellipsis,) + tuple(slice(q * s, q * s + k) for q, s, k in zip(pos, stride, kernel))]
        total = (window ** p).sum(axis=tuple(range(2, 2 + nd)))
        # avg_pool's divisor is the window clipped to the input; PyTorch multiplies back by the
        # full kernel size
        clipped = np.prod(window.shape[2:])
        out[(Ellipsis,) + pos] = (total / clipped * np.prod(kernel)) ** (1 / p)
    return out


LP_CASES = [
    (1, (2, 3, 9), 2.0, 3, 2, False),
    (1, (1, 2, 8), 3.0, 2, None, True),
    (2, (2, 2, 6, 7), 2.0, (2, 3), None, False),
    (2, (1, 2, 7, 7), 1.5, 3, 2, True),
    (3, (1, 2, 4, 5, 4), 2.0, 2, (1, 2, 2), False),
]
LP = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}
LP_MODULES = {1: nn.LPPool1d, 2: nn.LPPool2d, 3: nn.LPPool3d}


@pytest.mark.parametrize("nd,shape,p,k,s,ceil", LP_CASES)
def test_lp_pool_values_gradients_and_modules(nd, shape, p, k, s, ceil):
    x = rng.random(shape) + 0.5                      # positive: every p-th power and root is real
    kernel = (k,) * nd if isinstance(k, int) else k
    stride = kernel if s is None else ((s,) * nd if isinstance(s, int) else s)
    expected = ref_lp_pool(x, p, kernel, stride, ceil)
    np.testing.assert_allclose(LP[nd](_t(x), p, k, s, ceil).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(LP_MODULES[nd](p, k, s, ceil)(_t(x)).numpy(), expected, rtol=1e-12)
    xt = _t(x, grad=True)
    assert gradcheck(lambda a: LP[nd](a, p, k, s, ceil), (xt,))


def test_lp_pool_infinite_norms_are_max_pools_of_the_magnitude():
    x = _distinct(2, 3, 6, 6) - 10
    np.testing.assert_array_equal(F.lp_pool2d(_t(x), float("inf"), 2).numpy(),
                                  F.max_pool2d(_t(np.abs(x)), 2).numpy())
    np.testing.assert_array_equal(F.lp_pool2d(_t(x), -float("inf"), 2).numpy(),
                                  -F.max_pool2d(_t(-np.abs(x)), 2).numpy())


def test_lp_pool_of_float32_and_repr():
    x = rng.random((2, 3, 8, 8)) + 0.1
    out = F.lp_pool2d(_t(x, dtype=dynjit.float32), 2, 2)
    assert out.dtype == dynjit.float32
    np.testing.assert_allclose(out.numpy(), ref_lp_pool(x, 2, (2, 2), (2, 2), False), rtol=1e-5)
    assert repr(nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    assert repr(nn.LPPool1d(2, 3, 1)) == "LPPool1d(norm_type=2, kernel_size=3, stride=1, ceil_mode=False)"


# -- fractional max pooling --------------------------------------------------------------------

def ref_starts(u, in_size, out_size, k, dtype):
    """The window starts for one sample, in plain Python on numpy scalars of the input's dtype."""
    if out_size == 1:
        return [in_size - k]
    alpha = dtype(in_size - k) / dtype(out_size - 1)
    u = dtype(u)
    seq = [int((dtype(i) + u) * alpha) - int(u * alpha) for i in range(out_size)]
    seq[-1] = in_size - k
    return seq


def ref_fractional(x, kernel, out_sizes, samples):
    nd = len(kernel)
    dtype = x.dtype.type
    order = [1, 0] if nd == 2 else [0, 1, 2]             # which sample each spatial dim uses
    n, c = x.shape[:2]
    values = np.zeros((n, c) + tuple(out_sizes), dtype=x.dtype)
    index = np.zeros((n, c) + tuple(out_sizes), dtype=np.int64)
    for a, b in itertools.product(range(n), range(c)):
        starts = [ref_starts(samples[a, b, order[d]], x.shape[2 + d], out_sizes[d], kernel[d], dtype)
                  for d in range(nd)]
        for pos in itertools.product(*map(range, out_sizes)):
            corner = [starts[d][pos[d]] for d in range(nd)]
            best, where = -np.inf, None
            for off in itertools.product(*map(range, kernel)):
                q = tuple(cn + o for cn, o in zip(corner, off))
                if x[(a, b) + q] > best:
                    best, where = x[(a, b) + q], q
            values[(a, b) + pos] = best
            index[(a, b) + pos] = np.ravel_multi_index(where, x.shape[2:])
    return values, index


FRACTIONAL_CASES = [
    (2, (2, 3, 7, 9), 2, (4, 5)),
    (2, (1, 2, 10, 11), (3, 2), (3, 7)),
    (2, (1, 2, 25, 31), 3, (11, 14)),
    (2, (2, 1, 5, 5), 2, (1, 4)),
    (3, (1, 2, 7, 9, 8), 2, (4, 5, 3)),
    (3, (1, 1, 6, 7, 5), (3, 2, 2), (2, 6, 1)),
]
FRACTIONAL = {2: F.fractional_max_pool2d, 3: F.fractional_max_pool3d}


@pytest.mark.parametrize("nd,shape,k,size", FRACTIONAL_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fractional_max_pool_values_and_indices(nd, shape, k, size, dtype):
    x = _distinct(*shape).astype(dtype)
    samples = rng.random((shape[0], shape[1], nd)).astype(dtype)
    kernel = (k,) * nd if isinstance(k, int) else k
    dj = dynjit.float32 if dtype == np.float32 else dynjit.float64
    out, idx = FRACTIONAL[nd](_t(x, dtype=dj), k, output_size=size, return_indices=True,
                              _random_samples=_t(samples, dtype=dj))
    values, index = ref_fractional(x, kernel, size, samples)
    np.testing.assert_array_equal(out.numpy(), values)
    np.testing.assert_array_equal(idx.numpy(), index)
    # unbatched: the samples of batch 0
    out0 = FRACTIONAL[nd](_t(x[0], dtype=dj), k, output_size=size, _random_samples=_t(samples[:1], dtype=dj))
    np.testing.assert_array_equal(out0.numpy(), values[0])


def test_fractional_max_pool_gradients_go_to_the_maxima():
    x = _t(_distinct(2, 2, 7, 8), grad=True)
    samples = _t(rng.random((2, 2, 2)))
    assert gradcheck(lambda a: F.fractional_max_pool2d(a, 2, output_size=(4, 5), _random_samples=samples), (x,))
    x3 = _t(_distinct(1, 2, 5, 6, 5), grad=True)
    s3 = _t(rng.random((1, 2, 3)))
    assert gradcheck(lambda a: F.fractional_max_pool3d(a, 2, output_size=(3, 4, 2), _random_samples=s3), (x3,))
    out, idx = F.fractional_max_pool2d(x, 3, output_size=(3, 3), return_indices=True, _random_samples=samples)
    out.sum().backward()
    counts = np.zeros((2, 2, 56))
    for a, b in itertools.product(range(2), range(2)):
        np.add.at(counts[a, b], idx.numpy()[a, b].ravel(), 1)
    np.testing.assert_array_equal(x.grad.numpy(), counts.reshape(2, 2, 7, 8))


def test_fractional_max_pool_draws_samples_and_output_ratio():
    x = _t(_distinct(2, 3, 10, 12))
    dynjit.manual_seed(3)
    a = F.fractional_max_pool2d(x, 2, output_ratio=0.5)
    assert a.shape == (2, 3, 5, 6)
    dynjit.manual_seed(3)
    b = nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.5))(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the drawn samples are some samples in [0, 1): the result is one the reference gives for them
    dynjit.manual_seed(3)
    drawn = dynjit.rand(2, 3, 2, dtype=dynjit.float64)
    np.testing.assert_array_equal(a.numpy(), ref_fractional(x.numpy(), (2, 2), (5, 6), drawn.numpy())[0])
    fixed = _t(rng.random((2, 3, 2)))
    m = nn.FractionalMaxPool2d(3, output_size=4, return_indices=True, _random_samples=fixed)
    out, idx = m(x)
    np.testing.assert_array_equal(out.numpy(), ref_fractional(x.numpy(), (3, 3), (4, 4), fixed.numpy())[0])


def test_fractional_max_pool_errors():
    x = _t(_distinct(2, 3, 7, 9))
    s = _t(rng.random((2, 3, 2)))
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either an output_size or an "
                                         "output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 2 too large relative to input "
                                           "height 7"):
        F.fractional_max_pool2d(x, 2, output_size=(7, 5), _random_samples=s)
    with pytest.raises(RuntimeError, match="pool width 3 too large relative to input width 9"):
        F.fractional_max_pool2d(x, (2, 3), output_size=(4, 9), _random_samples=s)
    with pytest.raises(RuntimeError, match="Expect _random_samples to have 3 dimensions, got 2"):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=_t(rng.random((2, 3))))
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(0\\) no less then input batch size."):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=_t(rng.random((1, 3, 2))))
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(1\\) equals to input channel size."):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=_t(rng.random((2, 2, 2))))
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(2\\) equals to 2; got 3."):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=_t(rng.random((2, 3, 3))))
    with pytest.raises(RuntimeError, match="Expect _random_samples to have the same dtype as input"):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5), _random_samples=s.float())
    with pytest.raises(RuntimeError, match="kernel_size must either be a single Int or tuple of Ints"):
        F.fractional_max_pool2d(x, (2, 2, 2), output_size=(4, 5))
    with pytest.raises(RuntimeError, match="output_size must either be a single Int or tuple of Ints"):
        F.fractional_max_pool2d(x, 2, output_size=(4, 5, 5))
    with pytest.raises(RuntimeError, match="kernel_size must be greater than zero"):
        F.fractional_max_pool2d(x, 0, output_size=3, _random_samples=s)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        F.fractional_max_pool2d(_t(np.zeros((2, 3, 0, 4))), 2, output_size=1)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.fractional_max_pool2d(x[0, 0], 2, output_size=1)
    with pytest.raises(NotImplementedError, match="\"fractional_max_pool2d\" not implemented for 'Int'"):
        F.fractional_max_pool2d(x.int(), 2, output_size=3)
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an output size, or a "
                                         "pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)
    assert F.fractional_max_pool2d(_t(np.zeros((0, 3, 4, 4))), 2, output_size=1).shape == (0, 3, 1, 1)


# -- static_k / static_v -------------------------------------------------------------------------

def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_mha_static(q, in_w, in_b, out_w, out_b, heads, static_k, static_v):
    L, N, E = q.shape
    d = E // heads
    Q = q @ in_w[:E].T + in_b[:E]                                       # (L, N, E)
    Qh = Q.reshape(L, N * heads, d).transpose(1, 0, 2)                  # (N * H, L, d)
    w = _softmax(Qh @ static_k.transpose(0, 2, 1) / np.sqrt(d))
    out = (w @ static_v).transpose(1, 0, 2).reshape(L, N, E)
    return out @ out_w.T + out_b, w.reshape(N, heads, L, -1).mean(1)


def _mha_args(E=8, heads=2):
    return dict(embed_dim_to_check=E, num_heads=heads, in_proj_weight=_t(rng.standard_normal((3 * E, E))),
                in_proj_bias=_t(rng.standard_normal(3 * E)), bias_k=None, bias_v=None, add_zero_attn=False,
                dropout_p=0.0, out_proj_weight=_t(rng.standard_normal((E, E))),
                out_proj_bias=_t(rng.standard_normal(E)))


def test_mha_static_k_and_v_replace_the_projected_key_and_value():
    args = _mha_args()
    q = rng.standard_normal((4, 3, 8))
    key = value = _t(rng.standard_normal((5, 3, 8)))
    sk, sv = rng.standard_normal((6, 7, 4)), rng.standard_normal((6, 7, 4))      # (N * heads, S, head_dim)
    out, w = F.multi_head_attention_forward(_t(q), key, value, static_k=_t(sk), static_v=_t(sv), **args)
    ref_out, ref_w = ref_mha_static(q, *(args[k].numpy() for k in ("in_proj_weight", "in_proj_bias",
                                                                   "out_proj_weight", "out_proj_bias")), 2, sk, sv)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-10, atol=1e-12)
    out2, none = F.multi_head_attention_forward(_t(q), key, value, static_k=_t(sk), static_v=_t(sv),
                                                need_weights=False, **args)
    assert none is None
    np.testing.assert_allclose(out2.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    qt, skt, svt = _t(q, True), _t(sk, True), _t(sv, True)
    assert gradcheck(lambda a, b, c: F.multi_head_attention_forward(a, key, value, static_k=b, static_v=c,
                                                                    **args)[0], (qt, skt, svt))


def test_mha_static_errors():
    args = _mha_args()
    q = key = _t(rng.standard_normal((4, 3, 8)))
    with pytest.raises(AssertionError, match="expecting static_k.size\\(0\\) of 6, but got 5"):
        F.multi_head_attention_forward(q, key, key, static_k=_t(np.zeros((5, 4, 4))), **args)
    with pytest.raises(AssertionError, match="expecting static_v.size\\(2\\) of 4, but got 3"):
        F.multi_head_attention_forward(q, key, key, static_v=_t(np.zeros((6, 4, 3))), **args)
    args.update(bias_k=_t(np.zeros((1, 1, 8))), bias_v=_t(np.zeros((1, 1, 8))))
    with pytest.raises(AssertionError, match="bias cannot be added to static key."):
        F.multi_head_attention_forward(q, key, key, static_k=_t(np.zeros((6, 4, 4))), **args)
    with pytest.raises(AssertionError, match="bias cannot be added to static value."):
        F.multi_head_attention_forward(q, key, key, static_v=_t(np.zeros((6, 4, 4))), **args)


# -- compiled == eager -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_unpool_lp_fractional_and_static_kv_compiled_match_eager(backend):
    x0 = _distinct(2, 3, 8, 8)
    samples = _t(rng.random((2, 3, 2)))
    mha = _mha_args()
    sk, sv = _t(rng.standard_normal((6, 5, 4))), _t(rng.standard_normal((6, 5, 4)))
    q0 = rng.standard_normal((4, 3, 8))

    def f(x, q):
        out, idx = F.max_pool2d(x, 2, return_indices=True)
        a = F.max_unpool2d(out * 2, idx, 2)
        b = F.lp_pool2d(x.abs() + 0.5, 2.0, 3, 2)
        c, ci = F.fractional_max_pool2d(x, 2, output_size=(5, 6), return_indices=True, _random_samples=samples)
        d = F.max_unpool1d(*F.max_pool1d(x[0], 2, return_indices=True), 2)
        e, _ = F.multi_head_attention_forward(q, q, q, static_k=sk, static_v=sv, **mha)
        loss = a.sum() + (b * b).sum() + c.pow(2).sum() + d.sum() + e.pow(2).sum()
        loss.backward()
        return loss, a, b, c, ci, d, e

    def run(fn):
        x, q = _t(x0, True), _t(q0, True)
        outs = fn(x, q)
        return [o.detach().numpy() for o in outs] + [x.grad.numpy(), q.grad.numpy()]

    for got, want in zip(run(dynjit.compile(f, backend=backend)), run(f)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fractional_max_pool_draws_the_same_samples_compiled(backend):
    x0 = _distinct(2, 3, 9, 9)

    def f(x):
        return F.fractional_max_pool2d(x, 2, output_size=(4, 5)) * 2

    compiled = dynjit.compile(f, backend=backend)
    results = []
    for seed in (1, 2):
        dynjit.manual_seed(seed)
        eager = f(_t(x0)).numpy()
        dynjit.manual_seed(seed)
        np.testing.assert_array_equal(compiled(_t(x0)).numpy(), eager)
        results.append(eager)
    assert not np.array_equal(*results)        # the seed reaches the samples
