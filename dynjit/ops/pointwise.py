"""Pointwise ops: arithmetic, unary math, comparisons, logical ops, where.

Each op broadcasts its tensor operands and follows PyTorch's dtype
promotion (the dispatcher applies the op's dtype rule to the kernel's output).
"""
import inspect
import math

import numpy as np

from .registry import register, POINTWISE, FLOAT, BOOL, KEEP

LN2 = math.log(2.0)
LN10 = math.log(10.0)


def _is_float_tensor(x):
    return hasattr(x, "_data") and x.dtype.is_floating_point


def quiet(kernel):
    """Silence numpy's floating-point warnings (log(0), 0/0, ...): like PyTorch,
    dynjit returns inf/nan without warning."""
    def run(*args):
        with np.errstate(all="ignore"):
            return kernel(*args)
    run.__signature__ = inspect.signature(kernel)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


# -- binary arithmetic -----------------------------------------------------

@register("add", POINTWISE)
def add(self, other, alpha=1):
    return np.add(self, other if alpha == 1 else np.multiply(other, alpha))


@add.derivative
def _(grad, alpha):
    return grad, (grad if alpha == 1 else grad * alpha)


@register("sub", POINTWISE)
def sub(self, other, alpha=1):
    if getattr(self, "dtype", None) == np.bool_ and getattr(other, "dtype", None) == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    return np.subtract(self, other if alpha == 1 else np.multiply(other, alpha))


@sub.derivative
def _(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * (-alpha))


@register("rsub", POINTWISE)
def rsub(self, other, alpha=1):
    return np.subtract(other, self if alpha == 1 else np.multiply(self, alpha))


@rsub.derivative
def _(grad, alpha):
    return (-grad if alpha == 1 else grad * (-alpha)), grad


@register("mul", POINTWISE)
def mul(self, other):
    return np.multiply(self, other)


@mul.derivative
def _(grad, self, other, needs):
    return (grad * other if needs[0] else None), (grad * self if needs[1] else None)


@register("div", POINTWISE, dtype_rule=FLOAT)
@quiet
def div(self, other, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(self, other)
    if rounding_mode == "floor":
        return np.floor_divide(self, other)
    if rounding_mode == "trunc":
        return np.trunc(np.true_divide(self, other)).astype(np.result_type(self, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


@div.derivative
def _(grad, self, other, rounding_mode):
    if rounding_mode is not None:
        return grad * 0, grad * 0
    return grad / other, -grad * self / (other * other)


@register("floor_divide", POINTWISE, differentiable=False)
@quiet
def floor_divide(self, other):
    return np.floor_divide(self, other)


@register("remainder", POINTWISE)
@quiet
def remainder(self, other):
    return np.remainder(self, other)


@remainder.derivative
def _(grad, self, other):
    return grad, -grad * (self / other).floor()


@register("fmod", POINTWISE)
@quiet
def fmod(self, other):
    return np.fmod(self, other)


@fmod.derivative
def _(grad, self, other):
    return grad, -grad * (self / other).trunc()


@register("pow", POINTWISE)
@quiet
def pow_op(self, exponent):
    if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool) and exponent < 0 \
            and isinstance(self, np.ndarray) and self.dtype.kind in "iu":
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(self, exponent)


@pow_op.derivative
def _(grad, self, exponent, result, needs):
    g_self = g_exp = None
    if needs[0]:
        if isinstance(exponent, (int, float)) and exponent == 0:
            g_self = grad * 0
        else:
            g_self = grad * exponent * self.pow(exponent - 1)
    if needs[1]:
        g_exp = grad * result * _safe_log(self)
    return g_self, g_exp


def _safe_log(x):
    # d/dy x**y = x**y log x; where x == 0 the contribution is 0 (PyTorch masks it too)
    if hasattr(x, "masked_fill"):
        return x.log().masked_fill(x == 0, 0.0)
    return math.log(x) if x > 0 else 0.0


@register("atan2", POINTWISE, dtype_rule=FLOAT)
@quiet
def atan2(self, other):
    return np.arctan2(self, other)


@atan2.derivative
def _(grad, self, other):
    denom = self * self + other * other
    return grad * other / denom, -grad * self / denom


@register("maximum", POINTWISE)
def maximum(self, other):
    return np.maximum(self, other)


@maximum.derivative
def _(grad, self, other):
    # ties split the gradient evenly, as PyTorch does
    mask = (self > other) + (self == other) * 0.5
    return grad * mask, grad * (1 - mask)


@register("minimum", POINTWISE)
def minimum(self, other):
    return np.minimum(self, other)


@minimum.derivative
def _(grad, self, other):
    mask = (self < other) + (self == other) * 0.5
    return grad * mask, grad * (1 - mask)


@register("lerp", POINTWISE)
@quiet
def lerp(self, end, weight):
    return self + np.multiply(weight, np.subtract(end, self))


@lerp.derivative
def _(grad, self, end, weight):
    return grad * (1 - weight), grad * weight, grad * (end - self)


# -- unary math --------------------------------------------------------------

def _unary(name, kernel, dtype_rule=FLOAT):
    return register(name, POINTWISE, dtype_rule=dtype_rule)(quiet(kernel))


neg = register("neg", POINTWISE)(lambda self: np.negative(self))
neg.derivative(lambda grad: -grad)

abs_op = register("abs", POINTWISE)(lambda self: np.abs(self))
abs_op.derivative(lambda grad, self: grad * self.sign())

exp = _unary("exp", lambda self: np.exp(self))
exp.derivative(lambda grad, result: grad * result)

exp2 = _unary("exp2", lambda self: np.exp2(self))
exp2.derivative(lambda grad, result: grad * result * LN2)

expm1 = _unary("expm1", lambda self: np.expm1(self))
expm1.derivative(lambda grad, result: grad * (result + 1))

log = _unary("log", lambda self: np.log(self))
log.derivative(lambda grad, self: grad / self)

log2 = _unary("log2", lambda self: np.log2(self))
log2.derivative(lambda grad, self: grad / (self * LN2))

log10 = _unary("log10", lambda self: np.log10(self))
log10.derivative(lambda grad, self: grad / (self * LN10))

log1p = _unary("log1p", lambda self: np.log1p(self))
log1p.derivative(lambda grad, self: grad / (self + 1))

sqrt = _unary("sqrt", lambda self: np.sqrt(self))
sqrt.derivative(lambda grad, result: grad / (result * 2))

rsqrt = _unary("rsqrt", lambda self: 1.0 / np.sqrt(self))
rsqrt.derivative(lambda grad, result: grad * result.pow(3) * -0.5)

sin = _unary("sin", lambda self: np.sin(self))
sin.derivative(lambda grad, self: grad * self.cos())

cos = _unary("cos", lambda self: np.cos(self))
cos.derivative(lambda grad, self: -grad * self.sin())

tan = _unary("tan", lambda self: np.tan(self))
tan.derivative(lambda grad, result: grad * (result * result + 1))

asin = _unary("asin", lambda self: np.arcsin(self))
asin.derivative(lambda grad, self: grad * (1 - self * self).rsqrt())

acos = _unary("acos", lambda self: np.arccos(self))
acos.derivative(lambda grad, self: -grad * (1 - self * self).rsqrt())

atan = _unary("atan", lambda self: np.arctan(self))
atan.derivative(lambda grad, self: grad / (self * self + 1))

sinh = _unary("sinh", lambda self: np.sinh(self))
sinh.derivative(lambda grad, self: grad * self.cosh())

cosh = _unary("cosh", lambda self: np.cosh(self))
cosh.derivative(lambda grad, self: grad * self.sinh())

tanh = _unary("tanh", lambda self: np.tanh(self))
tanh.derivative(lambda grad, result: grad * (1 - result * result))


def _sigmoid_kernel(self):
    # numerically stable for large |x|
    return np.exp(-np.logaddexp(0, -self)) if self.dtype.kind == "f" else 1 / (1 + np.exp(-self))


sigmoid = _unary("sigmoid", lambda self: _sigmoid_kernel(np.asarray(self)))
sigmoid.derivative(lambda grad, result: grad * result * (1 - result))

relu = register("relu", POINTWISE)(lambda self: np.maximum(self, np.zeros((), dtype=np.asarray(self).dtype)))
relu.derivative(lambda grad, result: grad * (result > 0))

silu = _unary("silu", lambda self: self * _sigmoid_kernel(np.asarray(self)))


@silu.derivative
def _(grad, self):
    s = self.sigmoid()
    return grad * s * (1 + self * (1 - s))


@register("softplus", POINTWISE, dtype_rule=FLOAT)
@quiet
def softplus(self, beta=1, threshold=20):
    z = np.multiply(self, beta)
    return np.where(z > threshold, self, np.logaddexp(0, z) / beta)


@softplus.derivative
def _(grad, self, beta, threshold):
    z = self * beta
    return grad * (z.sigmoid()).masked_fill(z > threshold, 1.0)


@register("leaky_relu", POINTWISE)
def leaky_relu(self, negative_slope=0.01):
    return np.where(self > 0, self, np.multiply(self, negative_slope))


@leaky_relu.derivative
def _(grad, self, negative_slope):
    return grad * ((self > 0) + (self <= 0) * negative_slope)


@register("elu", POINTWISE)
@quiet
def elu(self, alpha=1.0):
    return np.where(self > 0, self, alpha * np.expm1(np.minimum(self, 0)))


@elu.derivative
def _(grad, self, alpha):
    return grad * ((self > 0) + (self <= 0) * (self.clamp(max=0).exp() * alpha))


@register("erf", POINTWISE, dtype_rule=FLOAT)
def erf(self):
    return _erf(np.asarray(self))


def _erf(x):
    # W. J. Cody's rational approximations are overkill here; this is the
    # Abramowitz-Stegun 7.1.26 form refined to ~1e-7 absolute error by
    # computing in float64.
    x64 = x.astype(np.float64)
    vec = np.frompyfunc(math.erf, 1, 1)
    return vec(x64).astype(np.float64)


@erf.derivative
def _(grad, self):
    return grad * (-(self * self)).exp() * (2.0 / math.sqrt(math.pi))


@register("gelu", POINTWISE, dtype_rule=FLOAT)
@quiet
def gelu(self, approximate="none"):
    x = np.asarray(self)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


@gelu.derivative
def _(grad, self, approximate):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = (self + self.pow(3) * 0.044715) * k
        t = inner.tanh()
        d_inner = (self * self * (3 * 0.044715) + 1) * k
        return grad * (0.5 * (1 + t) + 0.5 * self * (1 - t * t) * d_inner)
    cdf = 0.5 * (1 + (self * (1 / math.sqrt(2))).erf())
    pdf = (-(self * self) * 0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return grad * (cdf + self * pdf)


sign = register("sign", POINTWISE)(lambda self: np.sign(self))
sign.derivative(lambda grad: grad * 0)

reciprocal = _unary("reciprocal", lambda self: np.reciprocal(np.asarray(self, dtype=np.float64) if np.asarray(self).dtype.kind in "biu" else self))
reciprocal.derivative(lambda grad, result: -grad * result * result)

square = register("square", POINTWISE)(lambda self: np.square(self))
square.derivative(lambda grad, self: grad * self * 2)

floor = register("floor", POINTWISE)(lambda self: np.floor(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
floor.derivative(lambda grad: grad * 0)

ceil = register("ceil", POINTWISE)(lambda self: np.ceil(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
ceil.derivative(lambda grad: grad * 0)

trunc = register("trunc", POINTWISE)(lambda self: np.trunc(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
trunc.derivative(lambda grad: grad * 0)


@register("round", POINTWISE)
def round_op(self, decimals=0):
    return np.round(self, decimals)


round_op.derivative(lambda grad: grad * 0)

frac = register("frac", POINTWISE)(lambda self: np.subtract(self, np.trunc(self)))
frac.derivative(lambda grad: grad)


@register("clamp", POINTWISE, operands=("self", "min", "max"))
def clamp(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    out = self
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)
    return out


@clamp.derivative
def _(grad, self, min, max):
    mask = None
    if min is not None:
        mask = self >= min
    if max is not None:
        upper = self <= max
        mask = upper if mask is None else mask.logical_and(upper)
    g_self = grad * mask
    g_min = grad * (self < min) if hasattr(min, "_data") else None
    g_max = grad * (self > max) if hasattr(max, "_data") else None
    return g_self, g_min, g_max


@register("where", POINTWISE, operands=("self", "other"))
def where(condition, self, other):
    return np.where(condition, self, other)


@where.derivative
def _(grad, condition):
    zero = grad * 0
    return None, where(condition, grad, zero), where(condition, zero, grad)


@register("masked_fill", POINTWISE, dtype_rule=KEEP)
def masked_fill(self, mask, value):
    if np.asarray(mask).dtype != np.bool_:
        raise RuntimeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                           f"{np.asarray(mask).dtype}")
    return np.where(mask, value, self)


@masked_fill.derivative
def _(grad, mask, value):
    g_value = None
    if hasattr(value, "_data"):
        g_value = (grad * mask).sum()
    return grad.masked_fill(mask, 0), None, g_value


# -- comparisons and logic (not differentiable) -----------------------------

def _cmp(name, kernel):
    return register(name, POINTWISE, dtype_rule=BOOL, differentiable=False)(kernel)


eq = _cmp("eq", lambda self, other: np.equal(self, other))
ne = _cmp("ne", lambda self, other: np.not_equal(self, other))
lt = _cmp("lt", lambda self, other: np.less(self, other))
le = _cmp("le", lambda self, other: np.less_equal(self, other))
gt = _cmp("gt", lambda self, other: np.greater(self, other))
ge = _cmp("ge", lambda self, other: np.greater_equal(self, other))
logical_not = _cmp("logical_not", lambda self: np.logical_not(self))
logical_and = _cmp("logical_and", lambda self, other: np.logical_and(self, other))
logical_or = _cmp("logical_or", lambda self, other: np.logical_or(self, other))
logical_xor = _cmp("logical_xor", lambda self, other: np.logical_xor(self, other))
isnan = _cmp("isnan", lambda self: np.isnan(self))
isinf = _cmp("isinf", lambda self: np.isinf(self))
isfinite = _cmp("isfinite", lambda self: np.isfinite(self))


def _bitwise(name, kernel):
    def checked(self, other=None):
        for a in (self, other):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                raise RuntimeError(f"\"{name}\" is only defined for integer and bool tensors, got {a.dtype}")
        return kernel(self, other)
    checked.__name__ = name
    return register(name, POINTWISE, differentiable=False)(checked)


bitwise_and = _bitwise("bitwise_and", lambda a, b: np.bitwise_and(a, b))
bitwise_or = _bitwise("bitwise_or", lambda a, b: np.bitwise_or(a, b))
bitwise_xor = _bitwise("bitwise_xor", lambda a, b: np.bitwise_xor(a, b))


@register("bitwise_not", POINTWISE, differentiable=False)
def bitwise_not(self):
    if np.asarray(self).dtype.kind == "f":
        raise RuntimeError("bitwise_not is only defined for integer and bool tensors")
    return np.invert(self)
