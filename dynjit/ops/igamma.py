"""torch.igamma / torch.igammac: the regularized lower and upper incomplete gamma
functions P(a, x) and Q(a, x) = 1 - P(a, x), elementwise, for floating operands.

Computed in float64 by the power series for x < a + 1 and by the continued fraction
(modified Lentz) otherwise, as Numerical Recipes' gammp/gammq do; a < 0, x < 0 or
a = x = 0 give NaN, a = 0 (x > 0) gives P = 1, as PyTorch's.

Like PyTorch, only `other` (x) is differentiable: dP/dx = x^(a-1) e^-x / Gamma(a)
(`igamma_density`, with its own derivative in x); asking for the derivative in `input`
(a) is PyTorch's NotImplementedError, backward or forward.
"""
import math

import numpy as np

from .. import _dtype
from .registry import register, POINTWISE, FLOAT
from .pointwise import _tensor_dtype

_EPS = 1e-16
_TINY = 1e-300
_MAX_ITERATIONS = 2000
def _lgamma_or_inf(v):
    return math.inf if v <= 0 and v == math.floor(v) else math.lgamma(v)    # the poles: inf


_lgamma = np.frompyfunc(_lgamma_or_inf, 1, 1)


def _reject_integers(name):
    def check(self, other):
        a, b = _tensor_dtype(self), _tensor_dtype(other)
        if a is not None and b is not None:
            d = _dtype.promote_types(a, b)
            if not d.is_floating_point:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")
    return check


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a)), for a > 0, x > 0."""
    return a * np.log(x) - x - _lgamma(a).astype(np.float64)


def _series(a, x):
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = 1.0 / a
    total = term.copy()
    n = a.copy()
    for _ in range(_MAX_ITERATIONS):
        n = n + 1.0
        term = term * x / n
        total = total + term
        if np.all(np.abs(term) < np.abs(total) * _EPS):
            break
    return total * np.exp(_log_prefactor(a, x))


def _continued_fraction(a, x):
    """Q(a, x) by its continued fraction (converges fast for x >= a + 1)."""
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, _MAX_ITERATIONS):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1.0) < _EPS):
            break
    return np.exp(_log_prefactor(a, x)) * h


def regularized_gamma(a, x, upper):
    """P(a, x) (upper=False) or Q(a, x) (upper=True), elementwise, in float64."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    p = np.full(a.shape, np.nan)
    q = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        regular = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        series = regular & (x < a + 1)
        fraction = regular & ~series
        if series.any():
            ps = _series(a[series], x[series])
            p[series], q[series] = ps, 1.0 - ps
        if fraction.any():
            qs = _continued_fraction(a[fraction], x[fraction])
            p[fraction], q[fraction] = 1.0 - qs, qs
        for mask, pv in (((a > 0) & (x == 0), 0.0), ((a == 0) & (x > 0), 1.0),
                         ((a > 0) & np.isposinf(x), 1.0), (np.isposinf(a) & (x >= 0) & np.isfinite(x), 0.0)):
            p[mask], q[mask] = pv, 1.0 - pv
    return q if upper else p


def _no_forward_ad(name):
    def rule(tangents, result, self, other):
        if tangents[0] is not None:
            raise NotImplementedError(f"Trying to use forward AD with {name} that does not support it because "
                                      "it has not been implemented yet.")
        t = tangents[1]
        if t is None:
            return None
        density = igamma_density(self, other)
        return t * density if name == "igamma" else -(t * density)
    return rule


def _input_not_differentiable(name):
    return NotImplementedError(f"the derivative for '{name}: input' is not implemented.")


@register("igamma", POINTWISE, dtype_rule=FLOAT, variants="function, method",
          operand_check=_reject_integers("igamma"))
def igamma(self, other):
    return regularized_gamma(self, other, upper=False)


@register("igammac", POINTWISE, dtype_rule=FLOAT, variants="function, method",
          operand_check=_reject_integers("igammac"))
def igammac(self, other):
    return regularized_gamma(self, other, upper=True)


@register("igamma_density", POINTWISE, dtype_rule=FLOAT)
def igamma_density(self, other):
    """x^(a-1) e^-x / Gamma(a): dP(a, x)/dx."""
    a, x = np.broadcast_arrays(np.asarray(self, np.float64), np.asarray(other, np.float64))
    with np.errstate(all="ignore"):
        out = np.exp((a - 1) * np.log(x) - x - _lgamma(a).astype(np.float64))
    return np.where((x < 0) | (a < 0), np.nan, out)


@igamma.derivative
def _(grad, self, other, needs):
    if needs[0]:
        raise _input_not_differentiable("igamma")
    return None, grad * igamma_density(self, other)


@igammac.derivative
def _(grad, self, other, needs):
    if needs[0]:
        raise _input_not_differentiable("igammac")
    return None, -(grad * igamma_density(self, other))


@igamma_density.derivative
def _(grad, self, other, needs):
    if needs[0]:
        raise _input_not_differentiable("igamma_density")
    return None, grad * igamma_density(self, other) * ((self - 1) / other - 1)


igamma.jvp(_no_forward_ad("igamma"))
igammac.jvp(_no_forward_ad("igammac"))
