"""Pointwise ops: arithmetic, unary math, comparisons, logical ops, where.

Each op broadcasts its tensor operands and follows PyTorch's dtype
promotion: the dispatcher converts the tensor operands to the computation dtype
before the kernel runs and applies the op's dtype rule to the kernel's output.
Python scalars stay Python numbers (numpy treats them as weak, as PyTorch does);
scalar arguments that are not operands (alpha, value) are converted to the result
dtype as PyTorch converts them (`scalar_to`).
"""
import inspect
import math
import warnings

import numpy as np

from .. import _dtype
from .registry import register, POINTWISE, FLOAT, BOOL, KEEP, REAL, COMPUTE_BOUND
from .meta import broadcast_error, pointwise_meta
from .complex_ops import conj_if_complex as _c, is_complex_value

LN2 = math.log(2.0)
LN10 = math.log(10.0)


def _is_float_tensor(x):
    return hasattr(x, "_data") and x.dtype.is_floating_point


# the C++ names PyTorch's conversion errors use
_C_TYPE = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
           "int64": "int64_t", "float16": "c10::Half", "float32": "float", "float64": "double",
           "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def scalar_to(value, np_dtype):
    """A Python number (or a one-element array) as a numpy scalar of `np_dtype`, converted
    as PyTorch converts a Scalar argument (alpha, a fill value ...): a float is truncated
    towards zero for an integer dtype; a value outside the dtype's range (NaN or an
    infinity for an integer dtype) is an error, except that a negative int wraps into an
    unsigned dtype (-1 is 255 as uint8) and any value converts to bool."""
    limits = _LIMITS.get(np_dtype)
    if limits is None:
        limits = _LIMITS[np_dtype] = _limits(np.dtype(np_dtype))
    kind, lo, hi, make = limits
    if not isinstance(value, (bool, int, float, complex)):
        value = value.item()            # a numpy scalar or one-element array
    if kind == "c":
        return make(complex(value))
    if isinstance(value, complex):
        if value.imag != 0:
            raise _overflow(np_dtype)
        value = value.real
    if kind == "b":
        return make(bool(value))
    if kind == "f":
        f = float(value)
        if not lo <= f <= hi and math.isfinite(f):      # NaN and the infinities convert
            raise _overflow(np_dtype)
        return make(f)
    if isinstance(value, float):
        if not lo <= value <= hi:       # also NaN and the infinities
            raise _overflow(np_dtype)
        return make(int(value))
    v = int(value)
    if kind == "u" and v < 0 and -v <= hi:
        return make(v + hi + 1)
    if not lo <= v <= hi:
        raise _overflow(np_dtype)
    return make(v)


_LIMITS = {}    # numpy dtype -> (kind, lowest, highest, scalar type)


def _limits(np_dtype):
    kind = np_dtype.kind
    if kind in "bc":
        return kind, 0, 1, np_dtype.type
    info = np.finfo(np_dtype) if kind == "f" else np.iinfo(np_dtype)
    conv = float if kind == "f" else int
    return kind, conv(info.min), conv(info.max), np_dtype.type


def _overflow(np_dtype):
    return RuntimeError(f"value cannot be converted to type {_C_TYPE[np.dtype(np_dtype).name]} without overflow")


def check_float_only(name, dtype):
    """PyTorch implements some ops (leaky_relu, elu, lerp) for floating point tensors only."""
    if isinstance(dtype, np.dtype):
        if dtype.kind == "f":
            return
        dtype = _dtype.from_numpy_dtype(dtype)
    elif dtype.is_floating_point:
        return
    raise NotImplementedError(f'"{name}" not implemented for \'{dtype.name}\': {name} needs a floating '
                              "point tensor; convert it with .float() or .double()")


def _check_alpha(alpha, result, name="alpha"):
    """PyTorch's alpha_check: for a result of numpy dtype `result`, `alpha` may be a
    float only if the result is floating point, a bool only if the result is bool."""
    kind = result.kind
    if isinstance(alpha, (bool, np.bool_)):
        if kind != "b":
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    elif isinstance(alpha, (float, np.floating)) and kind != "f":
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def _scaled(x, other, alpha):
    """`x * alpha` for `add(other, x, alpha=alpha)` (`x` is the scaled operand): alpha
    checked and converted to the result dtype, so that the product stays in it."""
    result = np.result_type(x, other)
    _check_alpha(alpha, result)
    a = scalar_to(alpha, result)
    if isinstance(x, np.ndarray):
        return np.multiply(x, a)
    return x * a.item()         # a Python scalar stays weak


# Kernels not wrapped in `quiet` (add, mul, ... kept free of per-call cost) can still
# meet inf * 0 or overflow: numpy's warnings from dynjit's op modules are dropped.
warnings.filterwarnings("ignore", r"(invalid value|divide by zero|overflow|underflow) encountered",
                        RuntimeWarning, r"dynjit\.ops\.")


def _ignore_fp_errors():
    """A cheap stand-in for `np.errstate(all="ignore")` (which costs ~1us per call):
    numpy 2 keeps the error state in a context variable that can be set directly."""
    try:
        from numpy._core import _ufunc_config as cfg
        var, ignore = cfg._extobj_contextvar, cfg._make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):
        return lambda: np.errstate(all="ignore")

    class Ignore:
        __slots__ = ("token",)

        def __enter__(self):
            self.token = var.set(ignore)

        def __exit__(self, *exc):
            var.reset(self.token)
    return Ignore


_ignore = _ignore_fp_errors()


def clear_broadcast_error(error, *operands):
    """numpy's broadcasting ValueError as PyTorch's RuntimeError naming the sizes."""
    return broadcast_error(*operands) or error


def _binary_kernel(np_fn):
    def kernel(self, other):
        try:
            return np_fn(self, other)
        except ValueError as e:
            raise clear_broadcast_error(e, self, other) from None
    return kernel


def quiet(kernel):
    """Silence numpy's floating-point warnings (log(0), 0/0, ...): like PyTorch,
    dynjit returns inf/nan without warning. Broadcasting errors get a clear message."""
    def run(*args):
        with _ignore():
            try:
                return kernel(*args)
            except ValueError as e:
                raise clear_broadcast_error(e, *args) from None
    run.__signature__ = inspect.signature(kernel)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


# -- binary arithmetic -----------------------------------------------------

@register("add", POINTWISE, complex_ok=True, variants="function, method", inplace=True, wraps_scalar="other")
def add(self, other, alpha=1):
    try:
        return np.add(self, other if type(alpha) is int and alpha == 1 else _scaled(other, self, alpha))
    except ValueError as e:
        raise clear_broadcast_error(e, self, other) from None


def _alpha_meta(op):
    def meta(self, other, alpha):
        if _is_bool(self) and _is_bool(other) and op is not add:
            raise RuntimeError(_SUB_BOOL)
        shape, dtype = pointwise_meta(op, (self, other, alpha))
        if not (type(alpha) is int and alpha == 1):
            _check_alpha(alpha, dtype.np)
            scalar_to(alpha, dtype.np)
        return shape, dtype
    return meta


@add.derivative
def _(grad, alpha):
    return grad, (grad if alpha == 1 else grad * alpha)


_SUB_BOOL = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
             "Use the `^` or `logical_xor()` operator instead.")


def _is_bool(x):
    return getattr(x, "dtype", None) in (np.bool_, _dtype.bool_) or isinstance(x, bool)


def _tensor_dtype(x):
    """The dynjit dtype of an array or TensorMeta operand; None for a Python number."""
    d = getattr(x, "dtype", None)
    if d is None or isinstance(x, np.generic):
        return None
    return d if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d)


_SUB_WITH_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_sub_operands(self, other, alpha=1):
    """PyTorch's sub_check, on the operands as given: a bool operand (tensor or Python
    bool) is an error, not a subtraction in the promoted integer or float dtype."""
    a, b = _is_bool(self), _is_bool(other)
    if a and b:
        raise RuntimeError(_SUB_BOOL)
    if a or b:
        raise RuntimeError(_SUB_WITH_BOOL)


@register("sub", POINTWISE, complex_ok=True, variants="function, method", inplace=True, wraps_scalar="other",
          operand_check=_check_sub_operands)
def sub(self, other, alpha=1):
    try:
        if type(alpha) is int and alpha == 1:
            return np.subtract(self, other)
        if _is_bool(self) and _is_bool(other):
            raise RuntimeError(_SUB_BOOL)       # before alpha's check, as PyTorch does
        return np.subtract(self, _scaled(other, self, alpha))
    except ValueError as e:
        raise clear_broadcast_error(e, self, other) from None
    except TypeError:
        if _is_bool(self) and _is_bool(other):
            raise RuntimeError(_SUB_BOOL) from None
        raise


add.meta_fn(_alpha_meta(add))
sub.meta_fn(_alpha_meta(sub))


@sub.derivative
def _(grad, alpha):
    return grad, (-grad if alpha == 1 else grad * (-alpha))


@register("rsub", POINTWISE, complex_ok=True, operand_check=_check_sub_operands)
@quiet
def rsub(self, other, alpha=1):
    if _is_bool(self) and _is_bool(other):
        raise RuntimeError(_SUB_BOOL)
    return np.subtract(other, self if type(alpha) is int and alpha == 1 else _scaled(self, other, alpha))


rsub.meta_fn(_alpha_meta(rsub))


@rsub.derivative
def _(grad, alpha):
    return (-grad if alpha == 1 else grad * (-alpha)), grad


@register("mul", POINTWISE, complex_ok=True, variants="function, method", inplace=True, wraps_scalar="other")
def mul(self, other):
    try:
        return np.multiply(self, other)
    except ValueError as e:
        raise clear_broadcast_error(e, self, other) from None


@mul.derivative
def _(grad, self, other, needs):
    return (grad * _c(other) if needs[0] else None), (grad * _c(self) if needs[1] else None)


def check_integer_divisor(kernel_name, self, other):
    """PyTorch's integer division (floor/trunc division, remainder, fmod) in the
    computation dtype the dispatcher converted the operands to: a zero divisor is
    PyTorch's "ZeroDivisionError" RuntimeError (numpy would silently give 0), and bool
    operands are not implemented. True when the division is an integer one."""
    kind = np.result_type(self, other).kind
    if kind == "b":
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Bool'")
    if kind in "iu":
        if np.any(np.equal(other, 0)):
            raise RuntimeError("ZeroDivisionError: integer division or remainder by zero")
        return True
    return False


@register("div", POINTWISE, complex_ok=True, dtype_rule=FLOAT, variants="function, method", inplace=True,
          wraps_scalar="other")
@quiet
def div(self, other):
    return np.true_divide(self, other)


@div.derivative
def _(grad, self, other, needs):
    g_other = -grad * _c(self / (other * other)) if needs[1] else None
    return (grad / _c(other) if needs[0] else None), g_other


@register("div_mode", POINTWISE, inplace=True)
@quiet
def div_mode(self, other, rounding_mode):
    """Division rounded to an integer value (`div(..., rounding_mode=)`): keeps integer dtypes."""
    if rounding_mode == "floor":
        check_integer_divisor("div_floor_cpu", self, other)
        return np.floor_divide(self, other)
    if rounding_mode == "trunc":
        if check_integer_divisor("div_trunc_cpu", self, other):
            q = np.floor_divide(self, other)
            inexact = (np.remainder(self, other) != 0) & ((np.less(self, 0)) != (np.less(other, 0)))
            return q + inexact
        return np.trunc(np.true_divide(self, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"{rounding_mode!r}")


div_mode.derivative(lambda grad: (grad * 0, grad * 0))


def _integer_division_meta(op, kernel_name):
    """The meta of an integer-capable division: the promoted dtype, and, as the kernel,
    "not implemented" for bool (a zero divisor is a value, which only the kernel sees)."""
    def meta(self, other, *rounding_mode):
        shape, dtype = pointwise_meta(op, (self, other) + rounding_mode)
        name = kernel_name
        if rounding_mode:
            mode, = rounding_mode
            if mode not in ("floor", "trunc"):
                raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                                 f"but found {mode!r}")
            name = f"div_{mode}_cpu"
        if dtype is _dtype.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return shape, dtype
    op.meta_fn(meta)


_integer_division_meta(div_mode, None)


@register("floor_divide", POINTWISE, differentiable=False, variants="function, method", inplace=True)
@quiet
def floor_divide(self, other):
    check_integer_divisor("div_floor_cpu", self, other)
    return np.floor_divide(self, other)


@register("remainder", POINTWISE, variants="function, method", inplace=True)
@quiet
def remainder(self, other):
    check_integer_divisor("remainder_cpu", self, other)
    return np.remainder(self, other)


@remainder.derivative
def _(grad, self, other):
    return grad, -grad * (self / other).floor()


@register("fmod", POINTWISE, variants="function, method", inplace=True)
@quiet
def fmod(self, other):
    check_integer_divisor("fmod_cpu", self, other)
    return np.fmod(self, other)


_integer_division_meta(floor_divide, "div_floor_cpu")
_integer_division_meta(remainder, "remainder_cpu")
_integer_division_meta(fmod, "fmod_cpu")


@fmod.derivative
def _(grad, self, other):
    return grad, -grad * (self / other).trunc()


def _check_pow_operands(self, exponent):
    # PyTorch's pow with a tensor exponent has no bool kernel (a Python bool exponent is fine)
    e, b = _tensor_dtype(exponent), _tensor_dtype(self)
    if e is _dtype.bool_ and (b is _dtype.bool_ or _is_bool(self)):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


@register("pow", POINTWISE, complex_ok=True, variants="function, method", inplace=True, operand_check=_check_pow_operands,
          scalar_args=("exponent",))
@quiet
def pow_op(self, exponent):
    _check_pow_operands(self, exponent)
    if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool) and exponent < 0 \
            and isinstance(self, np.ndarray) and self.dtype.kind in "iu":
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if isinstance(exponent, np.ndarray) and exponent.dtype.kind in "iu" and \
            np.result_type(self, exponent).kind in "iu" and (exponent < 0).any():
        return _int_pow_negative_exponents(self, exponent)
    return np.power(self, exponent)


def _int_pow_negative_exponents(base, exponent):
    """Integer pow where some exponents are negative, as PyTorch computes it (numpy refuses):
    1 for a base of 1, +-1 for -1 (by the exponent's parity), else 0."""
    out_dtype = np.result_type(base, exponent)
    negative = exponent < 0
    powers = np.power(base, np.where(negative, 0, exponent))
    ones = np.where(exponent % 2 == 0, 1, -1)
    small = np.where(base == 1, 1, np.where(base == -1, ones, 0))
    return np.where(negative, small, powers).astype(out_dtype)


@pow_op.derivative
def _(grad, self, exponent, result, needs):
    g_self = g_exp = None
    if needs[0]:
        if isinstance(exponent, (int, float)) and exponent == 0:
            g_self = grad * 0
        else:
            g_self = grad * _c(exponent * self.pow(exponent - 1))
            if hasattr(exponent, "masked_fill"):   # where the exponent is 0: 0, not 0 * inf
                g_self = g_self.masked_fill(exponent == 0, 0.0)
    if needs[1]:
        g_exp = grad * _c(_pow_exponent_grad(self, exponent, result))
    return g_self, g_exp


def _pow_exponent_grad(base, exponent, result):
    """d/dy x**y = x**y log x, except where x == 0 and y >= 0: there x**y is constant
    (0 or 1) in y, so the derivative is 0, not 0 * -inf (as PyTorch defines it). A complex
    exponent takes the complex log of a real base (log(-1) is i pi) and compares its real
    part with 0."""
    complex_exp = is_complex_value(exponent)
    if complex_exp:
        exponent = exponent.real
    if hasattr(base, "masked_fill"):
        zero_base = (base == 0).logical_and(exponent >= 0)
        if complex_exp and not is_complex_value(base):
            base = base.to(result.dtype)
        return result * where(zero_base, 0.0, base.log())
    if base == 0:       # 0**y is 0, 1 or inf: the derivative is 0 for y >= 0, else -inf
        return where(exponent >= 0, 0.0, -math.inf)
    if complex_exp or isinstance(base, complex):
        import cmath
        return result * cmath.log(base)
    return result * (math.log(base) if base > 0 else math.nan)


@register("atan2", POINTWISE, dtype_rule=FLOAT, variants="function, method", inplace=True)
@quiet
def atan2(self, other):
    return np.arctan2(self, other)


@atan2.derivative
def _(grad, self, other):
    denom = self * self + other * other
    return grad * other / denom, -grad * self / denom


maximum = register("maximum", POINTWISE, variants="function, method",
                   complex_error=lambda d: RuntimeError("maximum not implemented for complex tensors."))(_binary_kernel(np.maximum))


@maximum.derivative
def _(grad, self, other):
    # ties split the gradient evenly, as PyTorch does
    mask = (self > other) + (self == other) * 0.5
    return grad * mask, grad * (1 - mask)


minimum = register("minimum", POINTWISE, variants="function, method",
                   complex_error=lambda d: RuntimeError("minimum not implemented for complex tensors."))(_binary_kernel(np.minimum))


@minimum.derivative
def _(grad, self, other):
    mask = (self < other) + (self == other) * 0.5
    return grad * mask, grad * (1 - mask)


# As in PyTorch the weight takes no part in promotion: the result has the dtype of self
# and end, and integer self and end are an error (not a float result).
_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                   "uint8": "unsigned char", "bool": "bool"}


def _check_lerp_operands(self, end, weight):
    # PyTorch's lerp does not promote: `end`, and a `weight` tensor that has dimensions, must
    # have self's dtype (a 0-d weight tensor may differ)
    expected = _tensor_dtype(self)
    if expected is not None and expected._category < 2:
        kernel = "lerp_kernel_tensor" if _tensor_dtype(weight) is not None else "lerp_kernel_scalar"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(expected)}'")
    for name, operand, zero_dim_ok in (("end", end, False), ("weight", weight, True)):
        got = _tensor_dtype(operand)
        if got is None or expected is None or got is expected:
            continue
        if zero_dim_ok and len(getattr(operand, "shape", ())) == 0:
            continue
        raise RuntimeError(f"expected dtype {_CPP_TYPE_NAMES[expected.name]} for `{name}` but got dtype "
                           f"{_CPP_TYPE_NAMES[got.name]}")


@register("lerp", POINTWISE, operands=("self", "end", "weight"), variants="function, method", inplace=True,
          complex_ok=True, scalar_args=("weight",),
          operand_check=_check_lerp_operands)
@quiet
def lerp(self, end, weight):
    _check_lerp_operands(self, end, weight)     # also when the operands' dtypes agree (no conversion)
    dt = np.result_type(self, end)
    if isinstance(weight, np.ndarray) and weight.dtype != dt:
        weight = weight.astype(dt)
    return self + np.multiply(weight, np.subtract(end, self))


@lerp.meta_fn
def _(self, end, weight):
    _check_lerp_operands(self, end, weight)
    return pointwise_meta(lerp, (self, end, weight))


@lerp.derivative
def _(grad, self, end, weight):
    return grad * _c(1 - weight), grad * _c(weight), grad * _c(end - self)


def _check_logaddexp_operands(self, other):
    # PyTorch computes logaddexp for floating point operands only: integers are not
    # converted to float, they are an error
    a, b = _tensor_dtype(self), _tensor_dtype(other)
    if a is not None and b is not None:
        d = _dtype.promote_types(a, b)
        if not d.is_floating_point:
            raise NotImplementedError(f"\"logaddexp_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")


@register("logaddexp", POINTWISE, dtype_rule=FLOAT, variants="function, method",
          operand_check=_check_logaddexp_operands)
@quiet
def logaddexp(self, other):
    return np.logaddexp(self, other)


@logaddexp.derivative
def _(grad, self, other, needs):
    return ((grad * (self - other).sigmoid()) if needs[0] else None,
            (grad * (other - self).sigmoid()) if needs[1] else None)


def _check_addcmul_operands(self, tensor1, tensor2, value=1):
    if all(_tensor_dtype(x) is _dtype.bool_ for x in (self, tensor1, tensor2)):
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")


@register("addcmul", POINTWISE, complex_ok=True, operands=("self", "tensor1", "tensor2"),
          variants="function, method", inplace=True, operand_check=_check_addcmul_operands)
@quiet
def addcmul(self, tensor1, tensor2, value=1):
    _check_addcmul_operands(self, tensor1, tensor2)
    # `value` in the result dtype, as PyTorch converts it (0.5 is 0 for integers)
    value = scalar_to(value, np.result_type(self, tensor1, tensor2))
    return np.add(self, np.multiply(np.multiply(tensor1, tensor2), value))


@addcmul.meta_fn
def _(self, tensor1, tensor2, value):
    shape, dtype = pointwise_meta(addcmul, (self, tensor1, tensor2, value))
    scalar_to(value, dtype.np)
    return shape, dtype


@addcmul.derivative
def _(grad, tensor1, tensor2, value, needs):
    return (grad, (grad * _c(tensor2 * value)) if needs[1] else None,
            (grad * _c(tensor1 * value)) if needs[2] else None)


def _check_addcdiv(t1, t2):
    for t in (t1, t2):
        dt = getattr(t, "dtype", None)
        if dt is not None and (dt.kind in "biu" if isinstance(dt, np.dtype) else not dt.is_floating_point):
            raise RuntimeError("Integer division with addcdiv is not supported; convert tensor1 and tensor2 "
                               "to a floating point dtype first")


def _check_addcdiv_operands(self, tensor1, tensor2, value=1):
    _check_addcdiv(tensor1, tensor2)


# (operand_check: integer tensor1 and tensor2 are an error even where self makes the result
# floating point and the dispatcher converts them)
@register("addcdiv", POINTWISE, complex_ok=True, operands=("self", "tensor1", "tensor2"),
          variants="function, method", inplace=True, operand_check=_check_addcdiv_operands)
@quiet
def addcdiv(self, tensor1, tensor2, value=1):
    _check_addcdiv(tensor1, tensor2)
    value = scalar_to(value, np.result_type(self, tensor1, tensor2))
    return np.add(self, np.multiply(np.true_divide(tensor1, tensor2), value))


@addcdiv.meta_fn
def _(self, tensor1, tensor2, value):
    _check_addcdiv(tensor1, tensor2)
    shape, dtype = pointwise_meta(addcdiv, (self, tensor1, tensor2, value))
    scalar_to(value, dtype.np)
    return shape, dtype


@addcdiv.derivative
def _(grad, tensor1, tensor2, value, needs):
    return (grad, (grad * _c(value / tensor2)) if needs[1] else None,
            (-grad * _c(value * tensor1 / (tensor2 * tensor2))) if needs[2] else None)


# -- unary math --------------------------------------------------------------

def _unary(name, kernel, dtype_rule=FLOAT, **declaration):
    return register(name, POINTWISE, dtype_rule=dtype_rule, **declaration)(quiet(kernel))


@register("neg", POINTWISE, complex_ok=True, variants="function, method", inplace=True)
def neg(self):
    try:
        return np.negative(self)
    except TypeError:
        if _is_bool(self):
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.") from None
        raise


@neg.meta_fn
def _(self):
    if self.dtype is _dtype.bool_:
        neg.kernel(np.zeros(1, dtype=np.bool_))     # raises the same error as eager
    return pointwise_meta(neg, (self,))


neg.derivative(lambda grad: -grad)

abs_op = register("abs", POINTWISE, dtype_rule=REAL, variants="function, method", inplace=True,
                  complex_ok=True)(lambda self: np.abs(self))
abs_op.derivative(lambda grad, self: grad * self.sgn())

exp = _unary("exp", lambda self: np.exp(self), variants="function, method", inplace=True, complex_ok=True)
exp.derivative(lambda grad, result: grad * _c(result))

exp2 = _unary("exp2", lambda self: np.exp2(self), variants="function, method", inplace=True)
exp2.derivative(lambda grad, result: grad * result * LN2)

expm1 = _unary("expm1", lambda self: np.expm1(self), variants="function, method", inplace=True, complex_ok=True)
expm1.derivative(lambda grad, result: grad * _c(result + 1))

log = _unary("log", lambda self: np.log(self), variants="function, method", inplace=True, complex_ok=True)
log.derivative(lambda grad, self: grad / _c(self))

log2 = _unary("log2", lambda self: np.log2(self), variants="function, method", inplace=True, complex_ok=True)
log2.derivative(lambda grad, self: grad / _c(self * LN2))

log10 = _unary("log10", lambda self: np.log10(self), variants="function, method", inplace=True, complex_ok=True)
log10.derivative(lambda grad, self: grad / _c(self * LN10))

log1p = _unary("log1p", lambda self: np.log1p(self), variants="function, method", inplace=True, complex_ok=True)
log1p.derivative(lambda grad, self: grad / _c(self + 1))

sqrt = _unary("sqrt", lambda self: np.sqrt(self), variants="function, method", inplace=True, complex_ok=True)
sqrt.derivative(lambda grad, result: grad / _c(result * 2))

rsqrt = _unary("rsqrt", lambda self: 1.0 / np.sqrt(self), variants="function, method", inplace=True, complex_ok=True)
rsqrt.derivative(lambda grad, result: grad * _c(result.pow(3) * -0.5))

sin = _unary("sin", lambda self: np.sin(self), variants="function, method", inplace=True, complex_ok=True)
sin.derivative(lambda grad, self: grad * _c(self.cos()))

cos = _unary("cos", lambda self: np.cos(self), variants="function, method", inplace=True, complex_ok=True)
cos.derivative(lambda grad, self: -grad * _c(self.sin()))

tan = _unary("tan", lambda self: np.tan(self), variants="function, method", inplace=True, complex_ok=True)
tan.derivative(lambda grad, result: grad * _c(result * result + 1))

asin = _unary("asin", lambda self: np.arcsin(self), variants="function, method", inplace=True, complex_ok=True)
asin.derivative(lambda grad, self: grad * _c((1 - self * self).rsqrt()))

acos = _unary("acos", lambda self: np.arccos(self), variants="function, method", inplace=True, complex_ok=True)
acos.derivative(lambda grad, self: -grad * _c((1 - self * self).rsqrt()))

atan = _unary("atan", lambda self: np.arctan(self), variants="function, method", inplace=True, complex_ok=True)
atan.derivative(lambda grad, self: grad / _c(self * self + 1))

sinh = _unary("sinh", lambda self: np.sinh(self), variants="function, method", inplace=True, complex_ok=True)
sinh.derivative(lambda grad, self: grad * _c(self.cosh()))

cosh = _unary("cosh", lambda self: np.cosh(self), variants="function, method", inplace=True, complex_ok=True)
cosh.derivative(lambda grad, self: grad * _c(self.sinh()))

tanh = _unary("tanh", lambda self: np.tanh(self), variants="function, method", inplace=True, complex_ok=True)
tanh.derivative(lambda grad, result: grad * _c(1 - result * result))


def _sigmoid_kernel(self):
    # numerically stable for large |x| (the dispatcher hands in a floating point array)
    if self.dtype.kind == "c":
        return 1 / (1 + np.exp(-self))
    return np.exp(-np.logaddexp(0, -self))


sigmoid = _unary("sigmoid", lambda self: _sigmoid_kernel(np.asarray(self)),
                 variants="function, method", inplace=True, complex_ok=True)
sigmoid.derivative(lambda grad, result: grad * _c(result * (1 - result)))

relu = register("relu", POINTWISE, variants="function, method", inplace=True,
                complex_error="clamp is not supported for complex types")(
    lambda self: np.maximum(self, np.zeros((), dtype=np.asarray(self).dtype)))
relu.derivative(lambda grad, result: grad * (result > 0))

silu = _unary("silu", lambda self: self * _sigmoid_kernel(np.asarray(self)), inplace=True)


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


@register("leaky_relu", POINTWISE, inplace=True)
def leaky_relu(self, negative_slope=0.01):
    check_float_only("leaky_relu", self.dtype)
    return np.where(self > 0, self, np.multiply(self, negative_slope))


def _float_only_meta(op):
    def meta(self, *rest):
        check_float_only(op.name, self.dtype)
        return pointwise_meta(op, (self,) + rest)
    return meta


leaky_relu.meta_fn(_float_only_meta(leaky_relu))


@leaky_relu.derivative
def _(grad, self, negative_slope):
    return grad * ((self > 0) + (self <= 0) * negative_slope)


@register("elu", POINTWISE, inplace=True)
@quiet
def elu(self, alpha=1.0):
    check_float_only("elu", self.dtype)
    return np.where(self > 0, self, alpha * np.expm1(np.minimum(self, 0)))


elu.meta_fn(_float_only_meta(elu))


@elu.derivative
def _(grad, self, alpha):
    return grad * ((self > 0) + (self <= 0) * (self.clamp(max=0).exp() * alpha))


# erf (and gelu through it) runs math.erf element by element: far costlier than reading a
# saved result, so AOT's partitioner must not recompute them in backward
@register("erf", POINTWISE, dtype_rule=FLOAT, variants="function, method", inplace=True,
          tags=(COMPUTE_BOUND,))
def erf(self):
    return _erf(np.asarray(self))


_erf_elementwise = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    """erf in float64, element by element with the C library's math.erf (exact to 1 ulp)."""
    return np.asarray(_erf_elementwise(np.asarray(x, dtype=np.float64)), dtype=np.float64)


@erf.derivative
def _(grad, self):
    return grad * (-(self * self)).exp() * (2.0 / math.sqrt(math.pi))


@register("gelu", POINTWISE, dtype_rule=FLOAT, inplace=True, tags=(COMPUTE_BOUND,))
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


sign = register("sign", POINTWISE, variants="function, method", inplace=True,
                complex_error="Unlike NumPy, torch.sign is not intended to support complex numbers. "
                              "Please use torch.sgn instead.")(lambda self: np.sign(self))
sign.derivative(lambda grad: grad * 0)

reciprocal = _unary("reciprocal", lambda self: np.reciprocal(self), variants="function, method", inplace=True, complex_ok=True)
reciprocal.derivative(lambda grad, result: -grad * _c(result * result))

square = register("square", POINTWISE, variants="function, method", inplace=True, complex_ok=True)(
    lambda self: np.square(self))
square.derivative(lambda grad, self: grad * _c(self * 2))

floor = register("floor", POINTWISE, variants="function, method", inplace=True,
               complex_error="floor is not supported for complex inputs")(
    lambda self: np.floor(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
floor.derivative(lambda grad: grad * 0)

ceil = register("ceil", POINTWISE, variants="function, method", inplace=True,
               complex_error="ceil is not supported for complex inputs")(
    lambda self: np.ceil(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
ceil.derivative(lambda grad: grad * 0)

trunc = register("trunc", POINTWISE, variants="function, method", inplace=True,
               complex_error="trunc is not supported for complex inputs")(
    lambda self: np.trunc(self) if np.asarray(self).dtype.kind == "f" else np.asarray(self))
trunc.derivative(lambda grad: grad * 0)


@register("round", POINTWISE, variants="function, method", inplace=True)
def round_op(self, decimals=0):
    return np.round(self, decimals)


round_op.derivative(lambda grad: grad * 0)

frac = register("frac", POINTWISE, variants="function, method", inplace=True)(
    lambda self: np.subtract(self, np.trunc(self)))
frac.derivative(lambda grad: grad)


@register("clamp", POINTWISE, operands=("self", "min", "max"), variants="function, method", inplace=True,
          scalar_args=("min", "max"), complex_error="clamp is not supported for complex types")
@quiet
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
def _(grad, self, min, max, needs):
    # clamp is min(max(self, min), max): where min > max the result is max everywhere
    g_self = g_min = g_max = None
    if needs[0]:
        mask = None
        if min is not None:
            mask = self >= min
        if max is not None:
            upper = self <= max
            mask = upper if mask is None else mask.logical_and(upper)
        g_self = grad * mask
    if needs[1]:
        below = self < min
        g_min = grad * (below if max is None else below.logical_and(min < max))
    if needs[2]:
        above = self > max
        g_max = grad * (above if min is None else above.logical_or(max < min))
    return g_self, g_min, g_max


def _check_bool_mask(dtype, what):
    if dtype not in (np.bool_, _dtype.bool_):
        name = dtype.name if isinstance(dtype, _dtype.dtype) else _dtype.from_numpy_dtype(dtype).name
        raise RuntimeError(f"{what} must be a bool tensor, but got {name}; compare to get one "
                           "(e.g. `x > 0`) or convert it with .bool()")


@register("where", POINTWISE, complex_ok=True, operands=("self", "other"), variants="function",
          scalar_args=("self", "other"))
@quiet
def where(condition, self, other):
    _check_bool_mask(np.asarray(condition).dtype, "where(): the condition")
    return np.where(condition, self, other)


@where.meta_fn
def _(condition, self, other):
    _check_bool_mask(condition.dtype, "where(): the condition")
    return pointwise_meta(where, (condition, self, other))


@where.derivative
def _(grad, condition):
    zero = grad * 0
    return None, where(condition, grad, zero), where(condition, zero, grad)


def _check_fill_value(value):
    if np.ndim(value) or (hasattr(value, "shape") and len(value.shape)):
        raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got tensor "
                           f"with {len(np.shape(value))} dimension(s).")


@register("masked_fill", POINTWISE, complex_ok=True, dtype_rule=KEEP, variants="function, method", inplace=True,
          scalar_args=("value",))
@quiet
def masked_fill(self, mask, value):
    _check_bool_mask(np.asarray(mask).dtype, "masked_fill(): the mask")
    _check_fill_value(value)
    self = np.asarray(self)
    # the value in self's dtype first (as PyTorch converts it): np.where(mask, 2.5, int64)
    # would compute in float64 and lose the low bits of large integers
    return np.where(mask, scalar_to(value, self.dtype), self)


@masked_fill.meta_fn
def _(self, mask, value):
    _check_bool_mask(mask.dtype, "masked_fill(): the mask")
    if hasattr(value, "shape") and len(value.shape):
        _check_fill_value(np.empty(value.shape))
    if isinstance(value, (bool, int, float)):
        scalar_to(value, self.dtype.np)
    return pointwise_meta(masked_fill, (self, mask, value))


@masked_fill.derivative
def _(grad, mask, value):
    g_value = None
    if hasattr(value, "_data"):
        g_value = (grad * mask).sum()
    return grad.masked_fill(mask, 0), None, g_value


# -- comparisons and logic (not differentiable) -----------------------------

def _cmp(name, kernel, **declaration):
    return register(name, POINTWISE, dtype_rule=BOOL, differentiable=False, variants="function, method",
                    **declaration)(kernel)


eq = _cmp("eq", _binary_kernel(np.equal), complex_ok=True)
ne = _cmp("ne", _binary_kernel(np.not_equal), complex_ok=True)
lt = _cmp("lt", _binary_kernel(np.less))
le = _cmp("le", _binary_kernel(np.less_equal))
gt = _cmp("gt", _binary_kernel(np.greater))
ge = _cmp("ge", _binary_kernel(np.greater_equal))
logical_not = _cmp("logical_not", lambda self: np.logical_not(self), inplace=True, complex_ok=True)
logical_and = _cmp("logical_and", _binary_kernel(np.logical_and), complex_ok=True)
logical_or = _cmp("logical_or", _binary_kernel(np.logical_or), complex_ok=True)
logical_xor = _cmp("logical_xor", _binary_kernel(np.logical_xor), complex_ok=True)
isnan = _cmp("isnan", lambda self: np.isnan(self), complex_ok=True)
isinf = _cmp("isinf", lambda self: np.isinf(self), complex_ok=True)
isfinite = _cmp("isfinite", lambda self: np.isfinite(self), complex_ok=True)
signbit = _cmp("signbit", lambda self: np.signbit(self))


def _check_integral(name, operands):
    for a in operands:
        dt = getattr(a, "dtype", None)
        if isinstance(a, float) or (dt is not None and (dt.is_floating_point if isinstance(dt, _dtype.dtype)
                                                         else np.dtype(dt).kind == "f")):
            raise RuntimeError(f"{name} is only defined for integer and bool tensors and scalars, "
                               f"got a floating point operand")


def _bitwise(name, np_fn):
    def kernel(self, other):
        _check_integral(name, (self, other))
        try:
            return np_fn(self, other)
        except ValueError as e:
            raise clear_broadcast_error(e, self, other) from None
    op = register(name, POINTWISE, differentiable=False, variants="function, method")(kernel)

    @op.meta_fn
    def meta(self, other):
        _check_integral(name, (self, other))
        return pointwise_meta(op, (self, other))
    return op


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


@register("bitwise_not", POINTWISE, differentiable=False, variants="function, method", inplace=True)
def bitwise_not(self):
    _check_integral("bitwise_not", (self,))
    return np.invert(self)


@bitwise_not.meta_fn
def _(self):
    _check_integral("bitwise_not", (self,))
    return pointwise_meta(bitwise_not, (self,))
