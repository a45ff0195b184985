"""float32 division by a divisor fixed along the row (softmax's e / sum, RMSnorm's x / rms):
codegen's `dj.rowdiv` multiplies by a float64 reciprocal and rounds the product to float32,
except for a vector holding an |x| below 2^-124 |s| (quotients among float32 subnormals,
where exact ties exist), which takes the Markstein correction step. Both must give numpy's
float32 division bit for bit. These tests aim at the cases that separate the two paths:
exact ties among subnormal quotients (3 * 2^-149 / 6 = 2^-150), inputs on either side of
the threshold, divisors of every magnitude and sign, and the special values.
"""
import numpy as np
import pytest

import dynjit

from llvm_helpers import compiled


def _divide(x, s):
    X, S = dynjit.tensor(x), dynjit.tensor(s)
    _, fn = compiled(lambda a, b: a / b, X, S)
    return fn, fn(X, S).numpy()


def _assert_numpys_bits(x, s):
    fn, out = _divide(x, s)
    with np.errstate(all="ignore"):
        want = x / s
    same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(out) & np.isnan(want))
    bad = np.argwhere(~same)
    assert not len(bad), [(x[i, j], s[i, 0], out[i, j], want[i, j]) for i, j in bad[:5]]
    return fn


def test_the_row_division_is_the_code_taken():
    x = np.ones((3, 40), np.float32)
    s = np.full((3, 1), 3.0, np.float32)
    fn = _assert_numpys_bits(x, s)
    assert "dj.rowdiv.v" in fn.ir and "fdiv <" not in fn.ir


def test_subnormal_quotients_and_exact_ties():
    """k * 2^-149 / s for small k and divisors whose odd part divides k: many quotients are
    exact ties between two subnormals (numpy rounds them to even)."""
    k = np.arange(1, 400, dtype=np.float32)
    row = np.concatenate([k, -k]) * np.float32(2.0 ** -149)
    divisors = np.array([2, 3, 6, 10, 12, 1.5, 0.75, 7, 14, 5, 2.5, 96, 1e-3, 3 * 2.0 ** -20, -6, -2],
                        np.float32)
    x = np.tile(row.astype(np.float32), (len(divisors), 1))
    _assert_numpys_bits(x, divisors[:, None])


@pytest.mark.parametrize("seed", range(4))
def test_inputs_around_the_threshold(seed):
    """|x| just below and just above 2^-124 |s|, and rows mixing them with ordinary values,
    for divisors across the float32 range."""
    rng = np.random.default_rng(seed)
    s = (rng.standard_normal(24) * 2.0 ** rng.integers(-140, 120, 24)).astype(np.float32)
    s = s[np.isfinite(s) & (s != 0)]
    rows = []
    for d in s:
        t = np.float32(abs(np.float64(d)) * 2.0 ** -124)
        near = np.array([t, np.nextafter(t, np.float32(0)), np.nextafter(t, np.float32(1)), t * 2, t / 2,
                         t * 0.75, t * 1.5], np.float32)
        ordinary = (rng.standard_normal(33) * 2.0 ** rng.integers(-149, 100, 33)).astype(np.float32)
        rows.append(np.concatenate([near, -near, ordinary]))
    x = np.stack(rows).astype(np.float32)
    _assert_numpys_bits(x, s[:, None])


def test_special_divisors_and_values():
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
                         3.4028235e38, -3.4028235e38, 1.0, -1.0, 2.0 ** -126, 2.0 ** -124, 3.0], np.float32)
    rng = np.random.default_rng(5)
    row = np.concatenate([np.tile(specials, 2),
                          (rng.standard_normal(200) * 2.0 ** rng.integers(-149, 127, 200)).astype(np.float32)])
    x = np.tile(row.astype(np.float32), (len(specials), 1))
    _assert_numpys_bits(x, specials[:, None])


def test_ties_the_plain_product_rounds_the_wrong_way():
    """Exact ties between float32 subnormals where RN32(RN64(x * RN64(1/s))) is not numpy's
    quotient (found by search): the vector holding them must take the exact path."""
    pairs = [(2.059908742557481e-43, 98.0), (4.8064537326341226e-43, 98.0), (4.119817485114962e-43, 196.0),
             (9.612907465268245e-43, 196.0), (8.239634970229924e-43, 392.0), (1.922581493053649e-42, 392.0),
             (1.647926994045985e-42, 784.0), (3.845162986107298e-42, 784.0), (3.29585398809197e-42, 1568.0),
             (7.690325972214596e-42, 1568.0)]
    xs = np.array([p[0] for p in pairs], np.float32)
    ss = np.array([p[1] for p in pairs], np.float32)
    plain = (xs.astype(np.float64) * (1.0 / ss.astype(np.float64))).astype(np.float32)
    assert (plain != xs / ss).all()          # what the test guards against
    # each pair in a row of its own, among ordinary values (the tie in one lane of a vector)
    x = np.tile(np.linspace(1, 2, 40, dtype=np.float32), (len(pairs), 1))
    x[:, 17] = xs
    _assert_numpys_bits(x, ss[:, None])
