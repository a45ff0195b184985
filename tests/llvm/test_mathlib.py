"""Accuracy of the vectorized float32 math (exp, exp2, log, log2, log10, sin, cos,
tanh, sigmoid, pow): maximum error in ulps over wide ranges, against numpy's
float32 results and against the float64 result rounded to float32, and numpy's
results for NaN, infinities, zeros, overflow and underflow."""
import numpy as np
import pytest

import dynjit

from llvm_helpers import compiled

MAX_ULP_VS_NUMPY = 4
MAX_ULP_VS_ROUNDED = 2


def ulp_distance(a, b):
    """Distance in representable float32 steps (NaN vs NaN is 0, NaN vs a number is huge)."""
    def ordered(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(a) - ordered(b))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    d[nan_a & nan_b] = 0
    d[nan_a != nan_b] = 1 << 40
    return d


rng = np.random.default_rng(1234)
N = 200_000


def uniform(lo, hi):
    return rng.uniform(lo, hi, N).astype(np.float32)


def log_uniform(lo, hi, signed=False):
    x = np.exp(rng.uniform(np.log(lo), np.log(hi), N))
    if signed:
        x *= rng.choice([-1.0, 1.0], N)
    return x.astype(np.float32)


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.2e-38, 3.4e38, -3.4e38, 1.0, -1.0,
                     0.5, 88.7, 89.0, -103.9, -105.0, 128.0, -150.0], np.float32)


def sigmoid64(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


CASES = {
    "exp": (np.exp, uniform(-104, 89)),
    "exp2": (np.exp2, uniform(-151, 129)),
    "log": (np.log, log_uniform(1e-45, 3e38)),
    "log2": (np.log2, log_uniform(1e-45, 3e38)),
    "log10": (np.log10, log_uniform(1e-45, 3e38)),
    "sin": (np.sin, np.concatenate([uniform(-1e4, 1e4), log_uniform(1e-30, 3e38, signed=True)])),
    "cos": (np.cos, np.concatenate([uniform(-1e4, 1e4), log_uniform(1e-30, 3e38, signed=True)])),
    "tanh": (np.tanh, np.concatenate([uniform(-12, 12), log_uniform(1e-30, 100, signed=True)])),
    "sigmoid": (None, np.concatenate([uniform(-120, 120), log_uniform(1e-30, 100, signed=True)])),
}


def run(name, x):
    t = dynjit.tensor(x)
    _, fn = compiled(lambda t: getattr(t, name)(), t)
    return fn(t).numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_max_ulp_error(name):
    ref_fn, x = CASES[name]
    x = np.concatenate([x, SPECIALS])
    out = run(name, x)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            # numpy has no sigmoid (and eager's float32 formula is itself ~10 ulps off):
            # the reference is the float64 result
            rounded = numpy32 = sigmoid64(x.astype(np.float64)).astype(np.float32)
        else:
            rounded = ref_fn(x.astype(np.float64)).astype(np.float32)
            numpy32 = ref_fn(x)
    assert ulp_distance(out, rounded).max() <= MAX_ULP_VS_ROUNDED
    assert ulp_distance(out, numpy32).max() <= MAX_ULP_VS_NUMPY


def _every_float32(lo, hi):
    """All float32 numbers in [lo, hi] (same sign)."""
    a, b = sorted((np.float32(lo).view(np.int32), np.float32(hi).view(np.int32)))
    return np.arange(a, b + 1, dtype=np.int32).view(np.float32)


@pytest.mark.parametrize("lo,hi", [(88.5, 89.5), (-104.5, -103.5), (-87.5, -86.5)],
                         ids=["overflow", "underflow-to-zero", "subnormal-results"])
def test_exp_near_overflow_and_underflow_every_float(lo, hi):
    # exp has no explicit overflow/underflow selects: the clamped argument's scaled
    # polynomial must itself round to inf, 0 and the right subnormals
    x = _every_float32(lo, hi)
    out = run("exp", x)
    with np.errstate(all="ignore"):
        assert ulp_distance(out, np.exp(x.astype(np.float64)).astype(np.float32)).max() <= MAX_ULP_VS_ROUNDED
        assert ulp_distance(out, np.exp(x)).max() <= MAX_ULP_VS_NUMPY


def test_pow_max_ulp_error():
    n = N
    x = (np.exp(rng.uniform(-20, 20, n)) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    y = rng.uniform(-10, 10, n).astype(np.float32)
    y[::3] = np.round(y[::3])                          # integer exponents of negative bases
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5, -0.5, 3.0, -3.0, 1e-45, 3e38],
                  np.float32)
    gx, gy = np.meshgrid(sp, sp)
    x = np.concatenate([x, gx.ravel(), rng.uniform(0, 2, 5000).astype(np.float32)])
    y = np.concatenate([y, gy.ravel(), rng.uniform(-300, 300, 5000).astype(np.float32)])
    tx, ty = dynjit.tensor(x), dynjit.tensor(y)
    _, fn = compiled(lambda a, b: a.pow(b), tx, ty)
    out = fn(tx, ty).numpy()
    with np.errstate(all="ignore"):
        rounded = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
        numpy32 = np.power(x, y)
    assert ulp_distance(out, rounded).max() <= MAX_ULP_VS_ROUNDED
    assert ulp_distance(out, numpy32).max() <= MAX_ULP_VS_NUMPY


def test_special_values_are_numpys():
    """NaN, infinities and zeros (inputs or results, e.g. overflow and underflow) exactly as numpy."""
    x = SPECIALS
    with np.errstate(all="ignore"):
        for name in ("exp", "log", "sin", "cos", "tanh", "exp2", "log2", "log10"):
            ref = getattr(np, name)(x)
            special = ~np.isfinite(ref) | (ref == 0) | ~np.isfinite(x)
            np.testing.assert_array_equal(run(name, x)[special], ref[special], err_msg=name)
