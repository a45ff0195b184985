"""erf and exact GELU in float32 kernels: the vectorized erf (mathlib `erf_narrow`).

Eager computes float32 erf and GELU in float64 with the C library's erf (math.erf) and
rounds to float32. The kernels compute erf in float64 with piecewise polynomials (about
1e-14 relative, vectorized) instead of a scalar libm call per lane: the float32 results
must be eager's bit for bit, signed zeros, infinities, NaN and subnormals included;
float64 erf keeps the C library's erf. Checked against eager and against math.erf per
element (an independent reference), and that the vector code is what the kernel runs.
"""
import math

import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F

from llvm_helpers import compiled


# math.erf of this float32 is a double exactly halfway between two float32s (the true erf lies
# 1e-17 relative above it): an erf off by one float64 ulp below rounds to the wrong float32
TIE_NEAR_ZERO = 0.00018398030078969896


def _float32_sweep():
    """Every 4099th float32 of [-8, 8] (both signs, subnormals to 8), random values, and the
    edge values: +-0, +-inf, NaN, the smallest subnormal, the interval ends of the
    approximation (1 and 6 for erf, times sqrt(2) for GELU) and the largest float."""
    pos = np.arange(0, np.float32(8.0).view(np.int32), 4099, dtype=np.int32).view(np.float32)
    rng = np.random.default_rng(0)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38, 1.0, -1.0,
                      np.nextafter(np.float32(1), np.float32(0)), np.nextafter(np.float32(1), np.float32(2)),
                      6.0, -6.0, 5.9999995, 1.4142135, 8.485281, -8.485281, 3.4028235e38, -3.4028235e38,
                      3.9, 3.92, 3.93, -3.92, 0.5, 2.5, 4.0, TIE_NEAR_ZERO, -TIE_NEAR_ZERO], np.float32)
    return np.concatenate([pos, -pos, rng.standard_normal(100_000).astype(np.float32) * 3, edges])


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.int32), want[~nan].view(np.int32))


@pytest.mark.parametrize("name", ["erf", "gelu"])
def test_float32_erf_and_gelu_are_eagers_bits(name):
    fn_ = (lambda x: dynjit.ops.erf(x)) if name == "erf" else (lambda x: F.gelu(x))
    x = dynjit.tensor(_float32_sweep())
    gm, fn = compiled(fn_, x)
    _same_bits(fn(x).numpy(), gm(x).numpy())


def test_float32_erf_against_math_erf():
    """Independent of eager: each result is math.erf of the float32 input rounded to float32."""
    x = _float32_sweep()
    want = np.array([math.erf(float(v)) if not math.isnan(v) else math.nan for v in x]).astype(np.float32)
    t = dynjit.tensor(x)
    _, fn = compiled(lambda x: dynjit.ops.erf(x), t)
    _same_bits(fn(t).numpy(), want)


def test_float32_erf_at_a_rounding_tie_of_the_c_library():
    x = np.array([TIE_NEAR_ZERO, -TIE_NEAR_ZERO], np.float32)
    near = (x.view(np.int32)[:1] + np.arange(-64, 65, dtype=np.int32)).view(np.float32)
    x = np.concatenate([x, near, -near])
    want = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    assert float(want[0]) == float.fromhex("0x1.b35e28p-13")    # the tie rounded to even, upward
    t = dynjit.tensor(x)
    gm, fn = compiled(lambda x: dynjit.ops.erf(x), t)
    _same_bits(fn(t).numpy(), want)
    _same_bits(fn(t).numpy(), gm(t).numpy())


@pytest.mark.slow
def test_float32_erf_is_the_c_librarys_for_every_float32():
    """Every positive float32 below 6 (erf is odd in both; above 6 both are 1), against the
    C library's erf in float64 (the float64 kernel calls it per element) rounded to float32.
    About 1.1e9 values, a minute or two."""
    chunk = 1 << 24
    x32 = dynjit.tensor(np.zeros(chunk, np.float32))
    _, f32 = compiled(lambda x: dynjit.ops.erf(x), x32)
    x64 = dynjit.tensor(np.zeros(chunk, np.float64))
    _, f64 = compiled(lambda x: dynjit.ops.erf(x), x64)
    end = int(np.float32(6.0).view(np.int32))
    for start in range(0, end, chunk):
        x = np.arange(start, min(start + chunk, end), dtype=np.int32).view(np.float32)
        got = f32(dynjit.tensor(x)).numpy()
        want = f64(dynjit.tensor(x.astype(np.float64))).numpy().astype(np.float32)
        bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
        assert bad.size == 0, (x[bad[:5]], got[bad[:5]], want[bad[:5]])


@pytest.mark.slow
def test_float32_gelu_is_eagers_for_every_float32():
    """Every finite float32 of both signs: the compiled exact GELU against eager's formula
    (0.5 * x in float32, x / sqrt(2) in float32, the C library's erf and the rest in float64,
    rounded), itself checked against eager on a sample first. About 4.3e9 values, a few minutes."""
    chunk = 1 << 24
    _, g32 = compiled(lambda x: F.gelu(x), dynjit.tensor(np.zeros(chunk, np.float32)))
    _, erf64 = compiled(lambda x: dynjit.ops.erf(x), dynjit.tensor(np.zeros(chunk, np.float64)))

    def eager_formula(x):
        half = (np.float32(0.5) * x).astype(np.float64)
        u = np.zeros(chunk, np.float64)
        u[:len(x)] = x / np.float32(math.sqrt(2))
        return (half * (1.0 + erf64(dynjit.tensor(u)).numpy()[:len(x)])).astype(np.float32)

    sample = np.random.default_rng(4).standard_normal(20_000).astype(np.float32) * 5
    _same_bits(eager_formula(sample), F.gelu(dynjit.tensor(sample)).numpy())
    end = int(np.float32(np.inf).view(np.int32))
    for start in range(0, end, chunk):
        pos = np.arange(start, min(start + chunk, end), dtype=np.int32).view(np.float32)
        for x in (pos, -pos):
            got = g32(dynjit.tensor(x)).numpy()
            want = eager_formula(x)
            bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
            assert bad.size == 0, (x[bad[:5]], got[bad[:5]], want[bad[:5]])


def test_float32_kernels_run_the_vector_erf():
    x = dynjit.tensor(np.linspace(-4, 4, 77, dtype=np.float32))
    for f in (lambda x: dynjit.ops.erf(x), lambda x: F.gelu(x) * 2):
        _, fn = compiled(f, x)
        assert "dj.erf_narrow.v" in fn.ir              # the vectorized function, inlined in the loop
        assert '@"erf"' not in fn.ir and "@erf(" not in fn.ir    # no C library erf


def test_float64_erf_keeps_the_c_library():
    x64 = np.concatenate([np.linspace(-7, 7, 1001), [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324]])
    t = dynjit.tensor(x64)
    gm, fn = compiled(lambda x: dynjit.ops.erf(x), t)
    got, want = fn(t).numpy(), gm(t).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert "dj.erf_narrow" not in fn.ir and '@"erf"' in fn.ir


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_gelu_gradient_compiled_equals_eager(backend):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((7, 33)).astype(np.float32)

    def f(x):
        return (F.gelu(x) * x).sum()

    xe = dynjit.tensor(w.copy(), requires_grad=True)
    xc = dynjit.tensor(w.copy(), requires_grad=True)
    le = f(xe)
    le.backward()
    lc = dynjit.compile(f, backend=backend)(xc)
    lc.backward()
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-6)
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6, atol=1e-7)
