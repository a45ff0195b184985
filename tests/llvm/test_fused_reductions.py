"""Reductions fused with their consumers (softmax, log_softmax, layernorm, RMSnorm,
var_mean, log_softmax + nll_loss): results against independent numpy formulas in
float32 and float64, through the graph compiler and through dynjit.compile with
each backend, on empty and size-1 dims, non-contiguous inputs and reductions over a
middle dim; gradients through AOT; what the fusion is meant to save (one kernel per
layer_norm, no (N, C) log_softmax written for a loss of 2^15 elements or more, one nll_loss
of the log_softmax below that); the float32 division by a
row-invariant divisor, bitwise against numpy's division; the thread split.
"""
import re

import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit.fx import make_fx

from backends.llvm import compile_graph, lowering

from llvm_helpers import compiled

BACKENDS = ("eager", "aot_eager", "llvm")
DTYPES = [(dynjit.float32, np.float32, 2e-5), (dynjit.float64, np.float64, 1e-12)]


# -- numpy references (float64) ------------------------------------------------------------
def ref_softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def ref_log_softmax(x, dim):
    s = x - x.max(dim, keepdims=True)
    return s - np.log(np.exp(s).sum(dim, keepdims=True))


def ref_layernorm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


def ref_rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def ref_nll_of_log_softmax(x, t, reduction="mean", ignore_index=-100, weight=None):
    ls = ref_log_softmax(x, 1)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    w = (np.ones(x.shape[1]) if weight is None else weight)[safe] * valid
    picked = -ls[np.arange(len(t)), safe] * w
    if reduction == "none":
        return picked
    if reduction == "sum":
        return picked.sum()
    return picked.sum() / w.sum()


# -- the patterns as users write them --------------------------------------------------------
def softmax(x, dim=-1):
    return x.softmax(dim)


def log_softmax(x, dim=-1):
    return x.log_softmax(dim)


def layernorm_written_out(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    return d / ((d * d).mean(-1, keepdim=True) + 1e-5).sqrt() * w + b


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rmsnorm(x, w):
    return x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w


def _data(rng, shape, np_dtype):
    return (rng.standard_normal(shape) * 3).astype(np_dtype)


def _check(fn, args, want, tol, backends=("graph",) + BACKENDS):
    """fn(*args) through compile_graph and dynjit.compile(backend=b) equals `want` (numpy,
    float64) within `tol` relative, and the eager result."""
    eager = fn(*args)
    results = {}
    for b in backends:
        if b == "graph":
            results[b] = compile_graph(make_fx(fn)(*args), list(args))(*args)
        else:
            results[b] = dynjit.compile(fn, backend=b)(*args)
    for b, out in results.items():
        assert out.dtype == eager.dtype, (b, out.dtype, eager.dtype)
        assert tuple(out.shape) == tuple(eager.shape) == np.shape(want), (b, out.shape, np.shape(want))
        np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=tol, atol=tol, err_msg=b)
        np.testing.assert_allclose(out.numpy(), eager.numpy(), rtol=tol, atol=tol, err_msg=b)


# -- results against numpy ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype,np_dtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(37, 53), (1, 9), (9, 1), (3, 1, 17), (2, 300)])
def test_softmax_and_log_softmax_match_numpy(dtype, np_dtype, tol, shape):
    x = _data(np.random.default_rng(0), shape, np_dtype)
    for dim in range(len(shape)):                # the last dim, and outer and middle dims
        _check(lambda t: softmax(t, dim), (dynjit.tensor(x),), ref_softmax(x.astype(np.float64), dim), tol)
        _check(lambda t: log_softmax(t, dim), (dynjit.tensor(x),), ref_log_softmax(x.astype(np.float64), dim), tol)


@pytest.mark.parametrize("dtype,np_dtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(37, 53), (1, 9), (9, 1), (4, 3, 33)])
def test_norms_match_numpy(dtype, np_dtype, tol, shape):
    rng = np.random.default_rng(1)
    x, w, b = _data(rng, shape, np_dtype), _data(rng, shape[-1:], np_dtype), _data(rng, shape[-1:], np_dtype)
    X, W, B = dynjit.tensor(x), dynjit.tensor(w), dynjit.tensor(b)
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    tol_norm = tol * 10            # dividing by a standard deviation near sqrt(eps) for width-1 rows
    _check(layernorm_written_out, (X, W, B), ref_layernorm(x64, w64, b64), tol_norm)
    _check(layer_norm, (X, W, B), ref_layernorm(x64, w64, b64), tol_norm)
    _check(rmsnorm, (X, W), ref_rmsnorm(x64, w64), tol_norm)


@pytest.mark.parametrize("dtype,np_dtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("dim,correction,keepdim", [(1, 1, False), (1, 0, True), ((0, 2), 1, True), (-1, 2, False)])
def test_var_mean_over_middle_and_several_dims(dtype, np_dtype, tol, dim, correction, keepdim):
    x = _data(np.random.default_rng(2), (5, 7, 6), np_dtype)
    axis = tuple(dim) if isinstance(dim, tuple) else dim

    def f(t):
        v, m = dynjit.var_mean(t, dim, correction=correction, keepdim=keepdim)
        return v * 2 + m               # both outputs used, by a consumer of their shape
    x64 = x.astype(np.float64)
    want = x64.var(axis, ddof=correction, keepdims=keepdim) * 2 + x64.mean(axis, keepdims=keepdim)
    _check(f, (dynjit.tensor(x),), want, tol)


@pytest.mark.parametrize("dtype,np_dtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_log_softmax_nll_loss_matches_numpy(dtype, np_dtype, tol, reduction, nll_form):
    rng = np.random.default_rng(3)
    x = _data(rng, (64, 10), np_dtype)
    t = rng.integers(0, 10, 64)
    t[::7] = -100                       # ignored targets
    w = rng.random(10).astype(np_dtype) + 0.5
    X, T, Wt = dynjit.tensor(x), dynjit.tensor(t), dynjit.tensor(w)
    x64 = x.astype(np.float64)
    _check(lambda a, b: F.nll_loss(a.log_softmax(1), b, reduction=reduction), (X, T),
           ref_nll_of_log_softmax(x64, t, reduction), tol)
    _check(lambda a, b, c: F.nll_loss(a.log_softmax(1), b, weight=c, reduction=reduction), (X, T, Wt),
           ref_nll_of_log_softmax(x64, t, reduction, weight=w.astype(np.float64)), tol)
    _check(lambda a, b: F.cross_entropy(a, b, reduction=reduction), (X, T),
           ref_nll_of_log_softmax(x64, t, reduction), tol)


def test_nll_loss_of_log_softmax_keeps_nll_loss_errors(nll_form):
    x = dynjit.tensor(np.zeros((4, 3), np.float32))
    t = dynjit.tensor(np.array([0, 1, 3, 2]))
    fn = compile_graph(make_fx(lambda a, b: F.nll_loss(a.log_softmax(1), b))(x, dynjit.tensor(np.array([0, 1, 2, 2]))),
                       [x, t])
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        fn(x, t)


# -- layouts and sizes ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda x: x.t(),                     # transposed: the row is strided
    lambda x: x[:, ::2],                 # every other column
    lambda x: x[1:-1, 3:],               # an offset window
    lambda x: x.unsqueeze(1).expand(x.shape[0], 3, x.shape[1])[:, 1],   # a broadcast view
], ids=["transposed", "strided", "window", "expanded"])
def test_non_contiguous_inputs(make):
    x = _data(np.random.default_rng(4), (40, 24), np.float32)
    X = dynjit.tensor(x)
    v = make(X)
    xv = v.numpy().astype(np.float64)
    w = dynjit.ones(v.shape[-1])
    b = dynjit.zeros(v.shape[-1])
    _check(lambda t: softmax(t), (v,), ref_softmax(xv, -1), 2e-5)
    _check(lambda t: log_softmax(t, 0), (v,), ref_log_softmax(xv, 0), 2e-5)
    _check(layer_norm, (v, w, b), ref_layernorm(xv, 1.0, 0.0), 2e-4)


@pytest.mark.parametrize("shape,dim", [((0, 5), 1), ((5, 0), 1), ((0, 5), 0), ((3, 0, 2), 2), ((2, 0, 4), 1)])
def test_empty_dims(shape, dim):
    x = dynjit.zeros(*shape)
    for fn in (lambda t: softmax(t, dim), lambda t: log_softmax(t, dim)):
        _check(fn, (x,), np.zeros(shape), 0)
    if shape[-1] and np.prod(shape):
        w, b = dynjit.ones(shape[-1]), dynjit.zeros(shape[-1])
        _check(layer_norm, (x, w, b), np.zeros(shape), 0)


def test_size_one_rows_and_nan_inf():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, -np.inf, -np.inf], [5.0, 5.0, 5.0]], np.float32)
    X = dynjit.tensor(x)
    gm, fn = compiled(lambda t: (t.softmax(1), t.log_softmax(1)), X)
    for o, r in zip(fn(X), gm(X)):
        np.testing.assert_array_equal(o.numpy(), r.numpy())       # NaN where eager has NaN, exactly
    one = dynjit.tensor(np.array([[3.5]], np.float32))
    _check(lambda t: softmax(t), (one,), np.ones((1, 1)), 0)
    _check(lambda t: log_softmax(t), (one,), np.zeros((1, 1)), 0)


# -- what the fusion saves ---------------------------------------------------------------------------
def test_layer_norm_is_one_kernel():
    rng = np.random.default_rng(5)
    X, W, B = (dynjit.tensor(_data(rng, s, np.float32)) for s in [(64, 32), (32,), (32,)])
    _, fn = compiled(layer_norm, X, W, B)
    assert fn.stats["kernels"] == 1 and fn.stats["fallback"] == 0, fn.stats


def test_cross_entropy_writes_no_log_softmax():
    rng = np.random.default_rng(6)
    X = dynjit.tensor(_data(rng, (512, 1000), np.float32))        # 2 MB: a cached buffer if written
    T = dynjit.tensor(rng.integers(0, 1000, 512))
    _, fn = compiled(lambda a, b: F.nll_loss(a.log_softmax(1), b), X, T)
    assert "_buffers" not in fn.source and "(512, 1000)" not in fn.source.split("return _respecialize")[1], fn.source
    _, plain = compiled(lambda a: a.log_softmax(1), X)          # the same log_softmax alone is written
    assert "_buffers" in plain.source


@pytest.mark.parametrize("shape,row_form", [((64, 100), False), ((127, 258), False), ((128, 256), True),
                                             ((1000, 64), True), ((512, 1000), True)])
def test_cross_entropy_form_follows_its_size(shape, row_form):
    """Below lowering.NLL_ROW_FORM_MIN_ELEMENTS (2^15) the log_softmax is written and read by
    one nll_loss (cheaper than the row form's two nll_loss calls, a broadcast and a 0-d
    kernel); from there on the row form. Both equal the numpy formula and eager."""
    rng = np.random.default_rng(8)
    x = _data(rng, shape, np.float32)
    t = rng.integers(0, shape[1], shape[0])
    X, T = dynjit.tensor(x), dynjit.tensor(t)
    gm, fn = compiled(lambda a, b: F.cross_entropy(a, b), X, T)
    assert fn.stats["extern"] == (2 if row_form else 1), (fn.stats, fn.source)
    written = f"{shape}" in fn.source.split("return _respecialize")[1]
    assert written is not row_form
    out = fn(X, T)
    np.testing.assert_allclose(out.item(), ref_nll_of_log_softmax(x.astype(np.float64), t), rtol=2e-6)
    np.testing.assert_allclose(out.item(), gm(X, T).item(), rtol=1e-6)


def test_log_softmax_used_elsewhere_is_still_computed():
    rng = np.random.default_rng(7)
    x = _data(rng, (16, 5), np.float32)
    t = rng.integers(0, 5, 16)
    X, T = dynjit.tensor(x), dynjit.tensor(t)

    def f(a, b):
        ls = a.log_softmax(1)
        return F.nll_loss(ls, b) + ls.sum()
    x64 = x.astype(np.float64)
    _check(f, (X, T), ref_nll_of_log_softmax(x64, t) + ref_log_softmax(x64, 1).sum(), 1e-5)


# -- gradients through AOT -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rmsnorm", "cross_entropy", "var_mean"])
def test_backward_through_aot_matches_eager(name):
    rng = np.random.default_rng(8)
    x = _data(rng, (12, 10), np.float64)
    t = dynjit.tensor(rng.integers(0, 10, 12))
    w0, b0 = _data(rng, (10,), np.float64), _data(rng, (10,), np.float64)
    probe = dynjit.tensor(_data(rng, (12, 10), np.float64))

    def loss(x, w, b):
        if name == "softmax":
            return (x.softmax(1) * probe).sum() + (w * b).sum()
        if name == "layer_norm":
            return (layer_norm(x, w, b) * probe).sum()
        if name == "rmsnorm":
            return (rmsnorm(x, w) * probe).sum() + b.sum()
        if name == "var_mean":
            v, m = dynjit.var_mean(x, 1)
            return (v * m).sum() + (w * b).sum()
        return F.cross_entropy(x * w + b, t)

    def grads(fn):
        leaves = [dynjit.tensor(a, requires_grad=True) for a in (x, w0, b0)]
        out = fn(*leaves)
        out.backward()
        return out.item(), [leaf.grad.numpy() for leaf in leaves]
    want_value, want = grads(loss)
    for backend in BACKENDS:
        value, got = grads(dynjit.compile(loss, backend=backend))
        assert value == pytest.approx(want_value, rel=1e-10, abs=1e-12), backend
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12, err_msg=backend)
    # and eager's gradients are the derivative (finite differences)
    assert dynjit.autograd.gradcheck(lambda a: loss(a, dynjit.tensor(w0), dynjit.tensor(b0)),
                                     (dynjit.tensor(x, requires_grad=True),))


# -- the division by a row-invariant divisor ------------------------------------------------------------
def test_float32_division_by_row_divisor_is_numpys_division_bitwise():
    """softmax's e / sum runs as multiplies by a float64 reciprocal with one correction
    step; it must round exactly as the division does, subnormals, zeros, infinities and
    NaN included."""
    rng = np.random.default_rng(9)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 4.2e-45, 1e-38, 3e38, -3e38,
                         1.0, 6.0, 3.0, 0.1, 7.0], np.float32)
    row = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * np.float32(10) ** rng.integers(-45, 38, 2000).astype(np.float32),
        np.tile(specials, 3), np.arange(1, 100, dtype=np.float32) * np.float32(1.4e-45)]).astype(np.float32)
    divisors = np.concatenate([specials, rng.standard_normal(16).astype(np.float32) * 1e3]).astype(np.float32)
    x = np.tile(row, (len(divisors), 1))
    s = divisors[:, None]
    X, S = dynjit.tensor(x), dynjit.tensor(s)
    _, fn = compiled(lambda a, b: a / b, X, S)
    assert "fdiv <" not in fn.ir            # the vector loop does not divide
    out = fn(X, S).numpy()
    with np.errstate(all="ignore"):
        want = x / s
    same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(out) & np.isnan(want))
    bad = np.argwhere(~same)
    assert not len(bad), [(x[i, j], s[i, 0], out[i, j], want[i, j]) for i, j in bad[:5]]


# -- threads ----------------------------------------------------------------------------------------------
def test_threads_only_for_work_that_pays(monkeypatch):
    monkeypatch.setenv("DYNJIT_NUM_THREADS", "16")
    small = dynjit.tensor(np.ones((64, 64), np.float32))            # 4096 elements: one thread
    _, fn = compiled(lambda a: a.softmax(1), small)
    assert "_par(" not in fn.source
    rows = lowering.PARALLEL_WORK * 3 // 256                     # three threads' worth of work
    mid = dynjit.tensor(np.ones((rows, 256), np.float32))
    _, fn = compiled(lambda a: a * 2 + 1, mid)
    chunks = [int(c) for c in re.findall(r"\(\d+, \d+, (\d+)\)", fn.source)]
    assert chunks == [0, 1, 2], fn.source                        # 3 ranges, not 16
    np.testing.assert_array_equal(fn(mid).numpy(), np.full((rows, 256), 3, np.float32))


@pytest.mark.parametrize("n", [1, 15, 16, 63, 64, 65, 1000, 4099])
def test_float32_row_sums_stay_accurate(n):
    """Row sums of float32 add each unrolled iteration's vectors in float32 before the float64
    accumulator: the error stays within a few float32 roundings of the sum of magnitudes,
    whatever the row length (unrolled, vector and scalar remainders)."""
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((7, n)) * 10.0 ** rng.integers(-3, 4, (7, n))).astype(np.float32)
    X = dynjit.tensor(x)
    _, fn = compiled(lambda t: (t.sum(1), t.mean(1), (t - t.amax(1, keepdim=True)).exp().sum(1)), X)
    s, m, e = fn(X)
    exact = x.astype(np.float64).sum(1)
    bound = 4 * np.finfo(np.float32).eps * np.abs(x.astype(np.float64)).sum(1) + 1e-45
    assert np.all(np.abs(s.numpy() - exact) <= bound), (s.numpy(), exact)
    assert np.all(np.abs(m.numpy() - exact / n) <= bound / n * 2)
    ex = np.exp(x.astype(np.float64) - x.max(1, keepdims=True)).sum(1)
    np.testing.assert_allclose(e.numpy(), ex, rtol=8 * np.finfo(np.float32).eps)


def test_tensor_of_a_numpy_global_inside_a_compiled_softmax():
    probe = np.arange(6.0).reshape(3, 2)

    def f(x):
        return (x.softmax(1) * dynjit.tensor(probe)).sum()
    x = dynjit.tensor(np.ones((3, 2)))
    for backend in BACKENDS:
        assert dynjit.compile(f, backend=backend)(x).item() == pytest.approx(f(x).item())
