"""The last, partial vector of a row as one masked vector step (codegen.emit_masked_step).

A row whose length is not a multiple of the vector width (softmax over 100 columns:
6 steps of 16 lanes and 4 left) ends with one step whose lanes past the row are off:
masked loads and stores (`llvm.masked.load` / `llvm.masked.store`), and the identity
in reductions' masked-off lanes. These tests compare the fused row patterns with numpy
formulas at row widths around the vector width and at the benchmark's widths, elementwise
kernels at every length up to three vectors with several dtypes, NaN and infinities in the
masked step's lanes, and the same kernels with the masked step turned off (one element at a
time, the path of targets without masked memory instructions); and they check that the
masked step is the code path taken.
"""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F

from backends.llvm import codegen
from backends.llvm.jit import jit

from llvm_helpers import check, compiled

AVX = "+avx" in jit().features.split(",") or "+avx512f" in jit().features.split(",")
needs_masked = pytest.mark.skipif(not AVX, reason="the target has no masked vector loads and stores")

WIDTHS = [1, 3, 15, 16, 17, 31, 33, 100, 1000, 1024, 4097]


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _log_softmax(x):
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def _layernorm(x, w, b):
    m = x.mean(1, keepdims=True)
    return (x - m) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b


def _rmsnorm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def _cross_entropy(x, t):
    m = x.max(1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(1)) + m[:, 0]
    return np.mean(lse - x[np.arange(len(t)), t])


CASES = {
    "softmax": (lambda x: x.softmax(1), _softmax, 1),
    "log_softmax": (lambda x: x.log_softmax(1), _log_softmax, 1),
    "layernorm": (lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b), _layernorm, 3),
    "rmsnorm": (lambda x, w: x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w, _rmsnorm, 2),
    "cross_entropy": (lambda x, t: F.nll_loss(x.log_softmax(1), t), _cross_entropy, 2),
}


def _inputs(case, rows, cols, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    if case == "cross_entropy":
        return [x, rng.integers(0, cols, rows)]
    return [x] + [rng.standard_normal(cols).astype(dtype) for _ in range(CASES[case][2] - 1)]


def _masked_tails(fn):
    """How many masked vector steps the graph's kernels have (emit_masked_step's blocks)."""
    ir = fn.ir if isinstance(fn.ir, str) else "\n".join(fn.ir)
    return sum(1 for line in ir.splitlines() if line.startswith("tail") and line.rstrip().endswith(":"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_row_patterns_match_numpy_at_every_width(case, cols, dtype, nll_row_form):
    f, ref, _ = CASES[case]
    for rows in (1, 7, 64):
        arrays = _inputs(case, rows, cols, dtype, seed=cols)
        tensors = [dynjit.tensor(a) for a in arrays]
        _, fn = compiled(f, *tensors)
        out = fn(*tensors).numpy()
        want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
        tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(out, want, **tol)
        assert out.dtype == dtype


@needs_masked
@pytest.mark.parametrize("case", sorted(CASES))
def test_row_patterns_take_the_masked_step(case, nll_row_form):
    f, _, _ = CASES[case]
    tensors = [dynjit.tensor(a) for a in _inputs(case, 8, 100, np.float32)]
    _, fn = compiled(f, *tensors)
    assert _masked_tails(fn) > 0
    assert "llvm.masked.load" in fn.ir
    if case != "cross_entropy":         # its row kernel writes one value per row
        assert "llvm.masked.store" in fn.ir


@pytest.mark.parametrize("n", list(range(0, 50)))
def test_elementwise_every_length(n):
    rng = np.random.default_rng(n)
    a = dynjit.tensor(rng.standard_normal(n).astype(np.float32))
    b = dynjit.tensor(rng.standard_normal(n))
    i = dynjit.tensor(rng.integers(-50, 50, n).astype(np.int32))
    check(lambda a, b, i: ((a * 2 + 1).sin().exp() - b * i, (i // 3) > 2, a.sum() + i.sum()), a, b, i)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.bool_, np.int64, np.float64])
@pytest.mark.parametrize("n", [5, 13, 37])
def test_small_and_wide_dtypes_in_the_tail(dtype, n):
    rng = np.random.default_rng(3)
    a = dynjit.tensor(rng.integers(0, 3, (4, n)).astype(dtype))
    b = dynjit.tensor(rng.integers(1, 4, (4, n)).astype(dtype))
    check(lambda a, b: (a * b, a.sum(1), a.amax(1), (a == b)), a, b)


def test_nan_and_infinities_in_the_masked_lanes():
    """NaN and infinities in the last elements of a row (the masked step's lanes) reach the
    row's max and sum: the masked-off lanes add the identity, not garbage or zeros."""
    for cols in (17, 100):
        x = np.random.default_rng(5).standard_normal((6, cols)).astype(np.float32)
        x[0, -1] = np.nan
        x[1, -1] = np.inf
        x[2, -2] = -np.inf
        x[3, :] = -np.inf
        x[4, -1] = 80.0           # the max sits in the tail
        x[5, :] = -5.0            # all negative: a masked-off 0 would be the max
        t = dynjit.tensor(x)
        gm, fn = compiled(lambda x: (x.softmax(1), x.amax(1), x.amin(1), x.sum(1)), t)
        sm, mx, mn, sm1 = (o.numpy() for o in fn(t))
        want = gm(t)[0].numpy()
        np.testing.assert_array_equal(np.isnan(sm), np.isnan(want))
        np.testing.assert_allclose(sm, want, rtol=2e-6, atol=1e-7, equal_nan=True)
        with np.errstate(invalid="ignore"):
            finite_rows = np.isfinite(x).all(1)
            np.testing.assert_allclose(sm[finite_rows], _softmax(x[finite_rows].astype(np.float64)), rtol=2e-5,
                                       atol=1e-7)
        np.testing.assert_array_equal(mx, x.max(1))
        np.testing.assert_array_equal(mn, x.min(1))
        np.testing.assert_allclose(sm1, x.astype(np.float64).sum(1), rtol=1e-5, equal_nan=True)


def test_strided_rows_keep_the_scalar_tail():
    """A row read with a stride (a transposed input) has no masked load: its tail runs one
    element at a time, with the same results."""
    x = np.random.default_rng(6).standard_normal((100, 9)).astype(np.float32)
    t = dynjit.tensor(x)
    _, fn = compiled(lambda t: t.t().softmax(1), t)
    np.testing.assert_allclose(fn(t).numpy(), _softmax(x.T.astype(np.float64)), rtol=2e-5, atol=1e-7)
    assert "llvm.masked.load" not in fn.ir


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_results_without_the_masked_step(case, monkeypatch):
    """The one-element-at-a-time tail (what targets without masked memory instructions run)
    gives the same results as the masked step."""
    f, _, _ = CASES[case]
    tensors = [dynjit.tensor(a) for a in _inputs(case, 5, 100, np.float32, seed=9)]
    _, masked = compiled(f, *tensors)
    monkeypatch.setattr(codegen, "MASKED_TAIL", False)
    _, scalar = compiled(f, *tensors)
    assert _masked_tails(scalar) == 0
    np.testing.assert_allclose(scalar(*tensors).numpy(), masked(*tensors).numpy(), rtol=1e-6, atol=1e-7)
