"""Registry pointwise ops as compositions of kernel primitives (codegen.PRIMS).

`LOWERINGS[op name](kb, out_dtype, *args)` gets the op's arguments normalized
by the registry (defaults filled in), with tensors replaced by KNodes, and
returns the KNode of the result in `out_dtype` (the registry's dtype rule,
read from the node's meta). It raises `Unsupported` for argument kinds it
does not handle; the node then runs eagerly.

Arithmetic is done in the result dtype (PyTorch's rule); comparisons in the
operands' common dtype with Python scalars weak (numpy's, which is what the
eager kernels do). Where numpy's formula differs from the obvious one
(maximum's NaN rule, remainder's sign, sigmoid's stable form ...) the
primitive or the composition here follows numpy.
"""
import math
import struct

import numpy as np

from dynjit import _dtype as D

from .kernel import KNode


class Unsupported(Exception):
    """This node (or these arguments) cannot be compiled into a kernel."""


LOWERINGS = {}


def lowering(*names):
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


class KernelBuilder:
    """Makes KNodes, folding casts that do nothing and sharing identical nodes
    (the same op of the same operands is computed once per kernel)."""

    def __init__(self):
        self._memo = {}

    def _shared(self, key, make):
        node = self._memo.get(key)
        if node is None:
            node = self._memo[key] = make()
        return node

    def const(self, value, dtype):
        # keyed by the bits: -0.0 == 0.0 (and NaN != NaN) must not share or split nodes
        key = struct.pack("<d", value) if isinstance(value, float) else value
        return self._shared(("const", type(value), key, dtype), lambda: KNode("const", dtype, value=value))

    def cast(self, x, dtype):
        if isinstance(x, KNode):
            if x.dtype is dtype:
                return x
            if x.kind == "const":
                return self.const(_convert(x.value, dtype), dtype)
            return self._shared(("cast", id(x), dtype), lambda: KNode("prim", dtype, op="cast", args=(x,)))
        if isinstance(x, (bool, int, float)):
            return self.const(_convert(x, dtype), dtype)
        raise Unsupported(f"operand {type(x).__name__}")

    def prim(self, op, *args, dtype=None, **params):
        if dtype is None:
            dtype = args[0].dtype
        key = (op, tuple(id(a) for a in args), dtype, tuple(sorted(params.items())))
        return self._shared(key, lambda: KNode("prim", dtype, op=op, args=args, params=params))

    def math(self, name, *args):
        return self.prim("math", *args, fn=name)

    def weight(self, math_weight):
        """The size of what was built: one per node, `math_weight` per math function."""
        return sum(math_weight if n.kind == "prim" and n.op == "math" else 1
                   for n in self._memo.values() if n.kind != "const")


def _convert(value, dtype):
    if dtype is D.bool_:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unsupported("non-finite scalar cast to an integer")
        return int(value)
    return int(value)


def _is_scalar(x):
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.ndarray)


def _np_of(x):
    if isinstance(x, KNode):
        return x.dtype.np
    weak = getattr(x, "weak_value", None)       # a number input (lowering.RuntimeNumber)
    return x if weak is None else weak


def compare_dtype(*args):
    """numpy's common dtype of the operands (Python scalars are weak)."""
    operands = [_np_of(a) for a in args if a is not None]
    try:
        return D.from_numpy_dtype(np.result_type(*operands))
    except (TypeError, OverflowError):
        raise Unsupported("operand dtypes") from None


def _all(kb, dtype, *args):
    return [kb.cast(a, dtype) for a in args]


# -- arithmetic -------------------------------------------------------------------

def _check_factor(out, factor, name):
    """numpy computes `x * factor` in its own dtype (float64 for a float factor of an
    integer tensor, int64 for any factor of a bool one) before eager casts the result
    to `out`: only factors that keep the computation in `out` lower."""
    if out.is_floating_point or isinstance(factor, bool):
        return
    if out is D.bool_ or not isinstance(factor, int):
        raise Unsupported(f"{name}={factor!r} with a {out.name} result")


@lowering("add")
def _add(kb, out, self, other, alpha=1):
    a, b = _all(kb, out, self, other)
    if alpha != 1:
        _check_factor(out, alpha, "alpha")
        b = kb.prim("mul", b, kb.cast(alpha, out))
    return kb.prim("add", a, b)


@lowering("sub")
def _sub(kb, out, self, other, alpha=1):
    a, b = _all(kb, out, self, other)
    if alpha != 1:
        _check_factor(out, alpha, "alpha")
        b = kb.prim("mul", b, kb.cast(alpha, out))
    return kb.prim("sub", a, b)


@lowering("rsub")
def _rsub(kb, out, self, other, alpha=1):
    return _sub(kb, out, other, self, alpha)


@lowering("mul")
def _mul(kb, out, self, other):
    return kb.prim("mul", *_all(kb, out, self, other))


@lowering("div")
def _div(kb, out, self, other):
    return kb.prim("div", *_all(kb, out, self, other))


def _no_integer_division(out):
    """Integer division and remainder raise PyTorch's ZeroDivisionError for a zero divisor; a
    kernel cannot raise, so these run as the eager op (which checks) instead of in a kernel."""
    if not out.is_floating_point:
        raise Unsupported(f"integer division ({out.name}): a zero divisor must raise")


@lowering("div_mode")
def _div_mode(kb, out, self, other, rounding_mode):
    if rounding_mode not in ("floor", "trunc"):
        raise Unsupported(f"rounding_mode {rounding_mode!r}")
    _no_integer_division(out)
    return kb.prim("floordiv" if rounding_mode == "floor" else "truncdiv", *_all(kb, out, self, other))


@lowering("floor_divide")
def _floor_divide(kb, out, self, other):
    _no_integer_division(out)
    return kb.prim("floordiv", *_all(kb, out, self, other))


def _binary(prim, check=None):
    def lower(kb, out, self, other):
        if check is not None:
            check(out)
        return kb.prim(prim, *_all(kb, out, self, other))
    return lower


LOWERINGS["remainder"] = _binary("remainder", _no_integer_division)
LOWERINGS["fmod"] = _binary("fmod", _no_integer_division)
LOWERINGS["maximum"] = _binary("maximum")
LOWERINGS["minimum"] = _binary("minimum")


@lowering("neg")
def _neg(kb, out, self):
    return kb.prim("neg", kb.cast(self, out))


@lowering("abs")
def _abs(kb, out, self):
    return kb.prim("abs", kb.cast(self, out))


@lowering("square")
def _square(kb, out, self):
    x = kb.cast(self, out)
    return kb.prim("mul", x, x)


@lowering("reciprocal")
def _reciprocal(kb, out, self):
    return kb.prim("div", kb.const(1.0, out), kb.cast(self, out))


@lowering("sqrt")
def _sqrt(kb, out, self):
    return kb.prim("sqrt", kb.cast(self, out))


@lowering("rsqrt")
def _rsqrt(kb, out, self):
    return kb.prim("div", kb.const(1.0, out), kb.prim("sqrt", kb.cast(self, out)))


def _math(name):
    def lower(kb, out, self):
        return kb.math(name, kb.cast(self, out))
    return lower


for _name in ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tanh", "sigmoid", "expm1", "log1p",
              "tan", "asin", "acos", "atan", "sinh", "cosh"):
    LOWERINGS[_name] = _math(_name)


@lowering("erf")
def _erf(kb, out, self):
    # eager computes erf in float64 (the C library's erf) and rounds: so does the kernel, with
    # a vectorized erf accurate far beyond float32 where the result is float32
    return kb.cast(kb.math(_erf_for(out), kb.cast(self, D.float64)), out)


def _erf_for(out):
    """The math function for erf in float64 whose result is rounded to `out`."""
    return "erf_narrow" if out.is_floating_point and out.itemsize <= 4 else "erf"


@lowering("atan2")
def _atan2(kb, out, self, other):
    a, b = _all(kb, out, self, other)
    return kb.math("atan2", a, b)


@lowering("pow")
def _pow(kb, out, self, exponent):
    if not isinstance(self, KNode):
        # a number to a tensor's power (Adam's bias corrections, beta ** step): numpy's power in
        # the exponent's float dtype, the number rounded to it; other dtypes run eagerly
        if (isinstance(self, bool) or not isinstance(exponent, KNode) or exponent.dtype is not out
                or not out.is_floating_point):
            raise Unsupported("scalar base")
        return kb.math("pow", kb.cast(self, out), exponent)
    x = kb.cast(self, out)
    if _is_scalar(exponent) and not isinstance(exponent, bool):
        e = exponent
        if e == 0:
            return kb.const(1, out)
        if e == 1:
            return x
        if e == 2:
            return kb.prim("mul", x, x)
        if e == 3:
            return kb.prim("mul", kb.prim("mul", x, x), x)
        if out.is_floating_point:
            if e == 0.5:
                return kb.prim("sqrt", x)
            if e == -1:
                return kb.prim("div", kb.const(1.0, out), x)
            if e == -2:
                return kb.prim("div", kb.const(1.0, out), kb.prim("mul", x, x))
    if not out.is_floating_point:
        raise Unsupported("integer pow")
    y = kb.cast(exponent, out)
    return kb.math("pow", x, y)


@lowering("relu")
def _relu(kb, out, self):
    if out is D.bool_:
        raise Unsupported("relu of bool")
    x = kb.cast(self, out)
    return kb.prim("maximum", x, kb.const(0, out))


@lowering("silu")
def _silu(kb, out, self):
    x = kb.cast(self, out)
    return kb.prim("mul", x, kb.math("sigmoid", x))


@lowering("leaky_relu")
def _leaky_relu(kb, out, self, negative_slope=0.01):
    _check_factor(out, negative_slope, "negative_slope")
    x = kb.cast(self, out)
    pos = kb.prim("gt", x, kb.const(0, out), dtype=D.bool_)
    return kb.prim("where", pos, x, kb.prim("mul", x, kb.cast(negative_slope, out)), dtype=out)


@lowering("elu")
def _elu(kb, out, self, alpha=1.0):
    x = kb.cast(self, out)
    if not out.is_floating_point:
        raise Unsupported("elu of integers")
    pos = kb.prim("gt", x, kb.const(0, out), dtype=D.bool_)
    neg = kb.prim("mul", kb.cast(alpha, out), kb.math("expm1", kb.prim("minimum", x, kb.const(0, out))))
    return kb.prim("where", pos, x, neg, dtype=out)


def _log1p_exp_neg(kb, t):
    """log1p(exp(-t)) for t >= 0."""
    return kb.math("log1p", kb.math("exp", kb.prim("neg", t)))


@lowering("logaddexp")
def _logaddexp(kb, out, self, other):
    # numpy: x == y: x + ln2; else max + log1p(exp(-|x - y|)); NaN from x - y
    x, y = _all(kb, out, self, other)
    d = kb.prim("sub", x, y)
    big = kb.prim("maximum", x, y)
    r = kb.prim("add", big, _log1p_exp_neg(kb, kb.prim("abs", d)))
    r = kb.prim("where", kb.prim("isnan", d, dtype=D.bool_), d, r, dtype=out)
    same = kb.prim("eq", x, y, dtype=D.bool_)
    return kb.prim("where", same, kb.prim("add", x, kb.const(math.log(2.0), out)), r, dtype=out)


@lowering("softplus")
def _softplus(kb, out, self, beta=1, threshold=20):
    x = kb.cast(self, out)
    z = kb.prim("mul", x, kb.cast(beta, out))
    # logaddexp(0, z) = max(z, 0) + log1p(exp(-|z|))
    lae = kb.prim("add", kb.prim("maximum", z, kb.const(0, out)), _log1p_exp_neg(kb, kb.prim("abs", z)))
    soft = kb.prim("div", lae, kb.cast(beta, out))
    return kb.prim("where", kb.prim("gt", z, kb.cast(threshold, out), dtype=D.bool_), x, soft, dtype=out)


@lowering("gelu")
def _gelu(kb, out, self, approximate="none"):
    x = kb.cast(self, out)
    half_x = kb.prim("mul", kb.const(0.5, out), x)
    one = kb.const(1.0, out)
    if approximate == "tanh":
        cube = kb.prim("mul", kb.prim("mul", x, x), x)
        inner = kb.prim("mul", kb.const(math.sqrt(2 / math.pi), out),
                        kb.prim("add", x, kb.prim("mul", kb.const(0.044715, out), cube)))
        return kb.prim("mul", half_x, kb.prim("add", one, kb.math("tanh", inner)))
    if approximate != "none":
        raise Unsupported(f"gelu approximate={approximate!r}")
    # eager: 0.5 * x * (1 + erf(x / sqrt(2))) with erf and what follows it in float64
    f64 = D.float64
    e = kb.math(_erf_for(out), kb.cast(kb.prim("div", x, kb.const(math.sqrt(2), out)), f64))
    return kb.prim("mul", kb.cast(half_x, f64), kb.prim("add", kb.const(1.0, f64), e))


@lowering("sign")
def _sign(kb, out, self):
    return kb.prim("sign", kb.cast(self, out))


for _name in ("floor", "ceil", "trunc"):
    LOWERINGS[_name] = (lambda prim: lambda kb, out, self: kb.prim(prim, kb.cast(self, out)))(_name)


@lowering("round")
def _round(kb, out, self, decimals=0):
    if decimals != 0:
        raise Unsupported("round with decimals")
    return kb.prim("round", kb.cast(self, out))


@lowering("frac")
def _frac(kb, out, self):
    x = kb.cast(self, out)
    return kb.prim("sub", x, kb.prim("trunc", x))


@lowering("clamp")
def _clamp(kb, out, self, min=None, max=None):
    if min is None and max is None:
        raise Unsupported("clamp without bounds")
    x = kb.cast(self, out)
    if min is not None:
        x = kb.prim("maximum", x, kb.cast(min, out))
    if max is not None:
        x = kb.prim("minimum", x, kb.cast(max, out))
    return x


@lowering("lerp")
def _lerp(kb, out, self, end, weight):
    s, e, w = _all(kb, out, self, end, weight)
    return kb.prim("add", s, kb.prim("mul", w, kb.prim("sub", e, s)))


@lowering("addcmul")
def _addcmul(kb, out, self, tensor1, tensor2, value=1):
    _check_factor(out, value, "value")
    s, a, b = _all(kb, out, self, tensor1, tensor2)
    return kb.prim("add", s, kb.prim("mul", kb.prim("mul", a, b), kb.cast(value, out)))


@lowering("addcdiv")
def _addcdiv(kb, out, self, tensor1, tensor2, value=1):
    s, a, b = _all(kb, out, self, tensor1, tensor2)
    return kb.prim("add", s, kb.prim("mul", kb.prim("div", a, b), kb.cast(value, out)))


# -- selection, comparison, logic ---------------------------------------------------

@lowering("where")
def _where(kb, out, condition, self, other):
    c = kb.cast(condition, D.bool_)
    a, b = _all(kb, out, self, other)
    return kb.prim("where", c, a, b, dtype=out)


@lowering("masked_fill")
def _masked_fill(kb, out, self, mask, value):
    if isinstance(value, float) and not out.is_floating_point:
        # eager's np.where computes in float64 and casts back (int64 values lose bits)
        raise Unsupported("float fill value of an integer tensor")
    return kb.prim("where", kb.cast(mask, D.bool_), kb.cast(value, out), kb.cast(self, out), dtype=out)


def _comparison(prim):
    def lower(kb, out, self, other):
        common = compare_dtype(self, other)
        if not common.is_floating_point and common is not D.bool_:
            # as eager (dynjit/ops/int_scalars.py): a Python int the integer dtype cannot
            # hold wraps into it (uint8 < -1 compares with 255), as PyTorch casts it
            operands = []
            for s in (self, other):
                if _is_scalar(s) and not isinstance(s, bool):
                    info = np.iinfo(common.np)
                    if not info.min <= s <= info.max:
                        if not -2 ** 63 <= s < 2 ** 64:
                            raise Unsupported(f"comparison with {s}")    # eager raises OverflowError
                        as_int64 = s - 2 ** 64 if s >= 2 ** 63 else s
                        s = int(np.array(as_int64, dtype=np.int64).astype(common.np))
                operands.append(s)
            self, other = operands
        a, b = _all(kb, common, self, other)
        return kb.prim(prim, a, b, dtype=D.bool_)
    return lower


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    LOWERINGS[_name] = _comparison(_name)


@lowering("logical_not")
def _logical_not(kb, out, self):
    return kb.prim("not", kb.cast(self, D.bool_))


for _name, _prim in (("logical_and", "and"), ("logical_or", "or"), ("logical_xor", "xor")):
    LOWERINGS[_name] = (lambda prim: lambda kb, out, self, other: kb.prim(
        prim, *_all(kb, D.bool_, self, other)))(_prim)


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    LOWERINGS[_name] = (lambda prim: lambda kb, out, self: kb.prim(prim, self, dtype=D.bool_))(_name)


for _name, _prim in (("bitwise_and", "and"), ("bitwise_or", "or"), ("bitwise_xor", "xor")):
    LOWERINGS[_name] = (lambda prim: lambda kb, out, self, other: kb.prim(
        prim, *_all(kb, out, self, other)))(_prim)


@lowering("bitwise_not")
def _bitwise_not(kb, out, self):
    return kb.prim("not", kb.cast(self, out))


# -- copies and conversions -----------------------------------------------------------

@lowering("to_dtype")
def _to_dtype(kb, out, self, dtype):
    return kb.cast(self, out)


@lowering("clone")
def _clone(kb, out, self, memory_format=None):
    return kb.cast(self, out)


@lowering("contiguous_copy")
def _contiguous_copy(kb, out, self):
    return kb.cast(self, out)


@lowering("copy")
def _copy(kb, out, self, src):
    # the functional copy_ (what AOT makes of a copy_ that later ops read): src broadcast to
    # self's shape in self's dtype; self's values are not read. A number into an integer
    # tensor runs eagerly (numpy converts it as a C cast of a double: 1e30 -> INT_MIN)
    if not isinstance(src, KNode) and not out.is_floating_point:
        raise Unsupported("copy of a number into an integer tensor")
    return kb.cast(src, out)


def lower_pointwise(kb, op_name, out_dtype, args):
    fn = LOWERINGS.get(op_name)
    if fn is None:
        raise Unsupported(f"no lowering for {op_name}")
    for a in args:
        if isinstance(a, (list, tuple, dict, np.ndarray)) or hasattr(a, "_data"):
            raise Unsupported(f"argument of type {type(a).__name__}")
    return fn(kb, out_dtype, *args)


# -- ops the wrapper calls on numpy arrays ------------------------------------------------------
# A node the kernels do not compute is called through the dispatcher (Tensors in and out,
# dtype rules, autograd checks: 10-20 us for a small op). The ops named here are called as
# numpy functions on the arrays instead, as matmul is: their registry kernel, or a faster
# function giving the same result on the common path and calling the registry kernel (its
# result, its error) on every other.

def _registry_kernel(name):
    from dynjit.ops.registry import registry
    return registry[name].kernel


def _view(self, size):
    """view: numpy's reshape when it is a view of `self` (numpy infers the -1 itself)."""
    try:
        out = self.reshape(size)
    except (ValueError, TypeError):
        out = None
    if out is None or (out.size and not np.may_share_memory(out, self)):
        return _registry_kernel("view")(self, size)
    return out


def _reshape(self, shape):
    try:
        return self.reshape(shape)
    except (ValueError, TypeError):
        return _registry_kernel("reshape")(self, shape)


def _expand(self, size):
    size = tuple(size)
    if len(size) == self.ndim and self.size and self.flags.c_contiguous:
        # numpy's broadcast_to costs about 4 us; a strided view of the same memory, read-only
        # as broadcast_to's, about 1 us (cross-entropy's row logsumexp over the classes)
        strides = []
        for s, n, st in zip(size, self.shape, self.strides):
            if type(s) is not int or (s != n and (n != 1 or s < 0)):
                break
            strides.append(st if s == n else 0)
        else:
            out = np.ndarray(size, self.dtype, self, 0, tuple(strides))
            out.setflags(write=False)
            return out
    if len(size) >= self.ndim and -1 not in size:
        try:
            return np.broadcast_to(self, size)
        except ValueError:
            pass
    return _registry_kernel("expand")(self, size)


def _nll_loss(self, target, weight=None, reduction="mean", ignore_index=-100):
    """nll_loss without weights, averaged, every target a class index (no ignored one):
    the registry kernel's arithmetic (the picked values negated, summed, divided by the
    count in the input's dtype), without its masks and weight arrays. Negating the sum
    is summing the negated values: rounding is symmetric in sign."""
    x, t = self, target
    if (weight is None and reduction == "mean" and x.ndim == 2 and t.ndim == 1 and t.dtype == _INT64
            and x.dtype.kind == "f" and 0 < t.shape[0] == x.shape[0]):
        n, c = x.shape
        # one comparison for 0 <= t < c: a negative target is a huge unsigned one
        if t.view(_UINT64).max() < c and not (0 <= ignore_index < c and (t == ignore_index).any()):
            # an input broadcast along the classes (cross-entropy's row logsumexp) needs no gather
            picked = x[:, 0] if x.strides[1] == 0 else x[_arange(n), t]
            return np.asarray(-picked.sum() / x.dtype.type(n), dtype=x.dtype)
    return _registry_kernel("nll_loss")(self, target, weight, reduction, ignore_index)


_INT64, _UINT64 = np.dtype(np.int64), np.dtype(np.uint64)
_aranges = {}


def _arange(n):
    a = _aranges.get(n)
    if a is None:
        a = np.arange(n)
        a.flags.writeable = False
        if len(_aranges) < 64:
            _aranges[n] = a
    return a


def _one_hot(self, num_classes=-1):
    """one_hot of int64 class indices with the number of classes given: the registry
    kernel's result (int64) when every index is in range, else its error."""
    if self.dtype == _INT64 and type(num_classes) is int and num_classes > 0 and self.size \
            and (self.view(_UINT64) < num_classes).all():
        return (self[..., None] == _arange(num_classes)).astype(_INT64)
    return _registry_kernel("one_hot")(self, num_classes)


def _matmul(self, other):
    """matmul / mm: numpy's matmul when the registry kernel's checks pass (one dtype, and
    shapes numpy multiplies, which are the ones the checks accept)."""
    if self.dtype == other.dtype and self.ndim and other.ndim:
        try:
            return np.matmul(self, other)
        except ValueError:
            pass
    return _registry_kernel("matmul")(self, other)


def _mm(self, mat2):
    if self.ndim == 2 and mat2.ndim == 2 and self.dtype == mat2.dtype and self.shape[1] == mat2.shape[0]:
        return np.matmul(self, mat2)
    return _registry_kernel("mm")(self, mat2)


DIRECT_KERNELS = {"view": _view, "reshape": _reshape, "expand": _expand, "nll_loss": _nll_loss,
                  "one_hot": _one_hot, "matmul": _matmul, "mm": _mm}


def direct_kernel(op):
    """The numpy function the wrapper calls for `op` on arrays."""
    return DIRECT_KERNELS.get(op.name) or op.kernel
