"""Vectorizable float32 math: exp, exp2, log, log2, log10, sin, cos, tanh,
sigmoid and pow written with plain arithmetic, bit casts and selects (no libm
calls on the fast path), so one call works on a whole `<W x float>` vector.

Each function is emitted once per module and type as an internal, always-inlined
IR function (`dj.exp.v8f32`). Algorithms are Cephes-style: range reduction with
split constants (exact products through FMA), a minimax polynomial on the
reduced range, and selects for NaN, infinities, zero and overflow, so that the
special values are numpy's. sin/cos reduce the argument in float32 for
|x| <= 2**17 and call the C library's `sinf`/`cosf` lane by lane for a vector
holding a larger (or infinite) argument. pow works in float64 (log2 and exp2 by
series) so that large exponents keep float32 accuracy. The measured error
against numpy is in tests/llvm/test_mathlib.py.

`erf_narrow` is erf in float64 arithmetic for results rounded to float32 (eager computes
float32 erf and GELU in float64 and rounds): two polynomial pieces, half a float64 ulp below 1
and about 1e-14 relative above, vectorized like the rest (the C library's erf is a scalar call
per lane); its float32 results are the C library's for every float32.

float64 transcendentals and the other float32 functions (expm1, atan, erf of float64
...) call the C library element by element, which is what numpy does for them.
"""
import math

import llvmlite.ir as ir

from .irutil import F32, F64, I1, I32, I64, Ops, const, declare, element_of, like, type_suffix, vector_of

FAST_F32 = ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tanh", "sigmoid", "pow")
# in-IR functions of any float type (erf_narrow: float64 values whose result is rounded to float32)
FAST_ANY = ("erf_narrow",)
SIN_COS_FAST_LIMIT = float(2 ** 17)

# C library names of the functions called element by element, per element type
LIBM_UNARY = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "tanh", "erf")
LIBM_BINARY = ("pow", "atan2", "fmod")


def libm_name(name, element):
    return name + ("f" if element == F32 else "")


def call(ops, name, *args):
    """`name`(*args) elementwise on float scalars or vectors."""
    ty = args[0].type
    el = element_of(ty)
    if (el == F32 and name in FAST_F32) or name in FAST_ANY:
        fn = _function(ops.module, name, ty)
        return ops.b.call(fn, list(args))
    if name == "sigmoid":
        one = ops.c(args[0], 1.0)
        return ops.div(one, ops.add(one, call(ops, "exp", ops.b.fneg(args[0]))))
    return libm_call(ops, libm_name(name, el), args)


def libm_call(ops, cname, args):
    """A C library function applied lane by lane."""
    ty = args[0].type
    el = element_of(ty)
    fn = declare(ops.module, cname, el, [el] * len(args))
    per_lane = zip(*(ops.lanes(a) for a in args))
    return ops.gather_lanes(ty, [ops.b.call(fn, list(lane)) for lane in per_lane])


def _libm_lanes(module, cname, ty):
    """An out-of-line function applying a C library function lane by lane (a rarely taken path:
    kept out of the inlined bodies, so that a kernel with many calls stays small)."""
    fname = f"dj.lanes.{cname}.{type_suffix(ty)}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name=fname)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    fn.attributes.add("cold")
    ops = Ops(ir.IRBuilder(fn.append_basic_block("entry")), module)
    ops.b.ret(libm_call(ops, cname, [fn.args[0]]))
    return fn


def _function(module, name, ty):
    fname = f"dj.{name}.{type_suffix(ty)}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    nargs = 2 if name == "pow" else 1
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name=fname)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    ops = Ops(builder, module)
    result = _BODIES[name](ops, *fn.args)
    if result is not None:
        ops.b.ret(result)
    return fn


# -- exp ---------------------------------------------------------------------
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)


def _scale_by_pow2(ops, p, k):
    """p * 2**k for float k in [-150, 128], as two exact power-of-two factors."""
    ki = ops.b.fptosi(k, like(k.type, I32))
    k1 = ops.b.ashr(ki, ops.c(ki, 1))
    k2 = ops.b.sub(ki, k1)
    bias = ops.c(ki, 127)

    def pow2(e):
        bits = ops.b.shl(ops.b.add(e, bias), ops.c(e, 23))
        return ops.b.bitcast(bits, p.type)
    return ops.mul(ops.mul(p, pow2(k1)), pow2(k2))


def _exp_core(ops, r, k):
    """e**r * 2**k for |r| <= ln(2)/2."""
    z = ops.mul(r, r)
    p = ops.poly(r, _EXP_POLY)
    p = ops.add(ops.muladd(p, z, r), ops.c(r, 1.0))
    return _scale_by_pow2(ops, p, k)


def _limits(ops, x, y, over, under):
    """numpy's results past overflow (inf), underflow (0) and for NaN."""
    y = ops.select(ops.gt(x, ops.c(x, over)), ops.c(x, math.inf), y)
    y = ops.select(ops.lt(x, ops.c(x, under)), ops.c(x, 0.0), y)
    return ops.select(ops.isnan(x), x, y)


def _exp(ops, x):
    xc = ops.minf(ops.maxf(x, ops.c(x, -104.0)), ops.c(x, 89.0))
    k = ops.rint(ops.mul(xc, ops.c(x, 1.4426950408889634)))
    r = ops.fma(k, ops.c(x, -_LN2_HI), xc)
    r = ops.fma(k, ops.c(x, -_LN2_LO), r)
    # past the clamp bounds the scaled result already overflows to inf / rounds to 0
    return ops.select(ops.isnan(x), x, _exp_core(ops, r, k))


def _exp2(ops, x):
    xc = ops.minf(ops.maxf(x, ops.c(x, -151.0)), ops.c(x, 129.0))
    k = ops.rint(xc)
    f = ops.sub(xc, k)                        # exact
    # r = f * ln2 in extra precision: hi part exact, lo part carries the rest
    r = ops.fma(f, ops.c(x, _LN2_HI), ops.mul(f, ops.c(x, _LN2_LO)))
    return _limits(ops, x, _exp_core(ops, r, k), 128.0, -150.0)


# -- log -----------------------------------------------------------------------
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)


def _log_parts(ops, x):
    """(e, f, tail) with log(x) = e*ln2 + f + tail for finite x > 0; f in [sqrt(1/2)-1, sqrt(2)-1]."""
    tiny = ops.lt(x, ops.c(x, 1.1754943508222875e-38))
    xs = ops.select(tiny, ops.mul(x, ops.c(x, 8388608.0)), x)
    ity = like(x.type, I32)
    bits = ops.b.bitcast(xs, ity)
    e = ops.b.sub(ops.b.lshr(bits, ops.c(bits, 23)), ops.c(bits, 127))
    e = ops.b.sub(e, ops.b.select(tiny, ops.c(bits, 23), ops.c(bits, 0)))
    m = ops.b.bitcast(ops.b.or_(ops.b.and_(bits, ops.c(bits, 0x007FFFFF)), ops.c(bits, 0x3F800000)), x.type)
    big = ops.gt(m, ops.c(x, 1.4142135623730951))
    m = ops.select(big, ops.mul(m, ops.c(x, 0.5)), m)
    e = ops.b.add(e, ops.b.zext(big, ity))
    ef = ops.b.sitofp(e, x.type)
    f = ops.sub(m, ops.c(x, 1.0))
    z = ops.mul(f, f)
    tail = ops.mul(ops.mul(f, z), ops.poly(f, _LOG_POLY))
    tail = ops.muladd(z, ops.c(x, -0.5), tail)
    return ef, f, tail


def _log_specials(ops, x, y):
    y = ops.select(ops.eq(x, ops.c(x, 0.0)), ops.c(x, -math.inf), y)
    y = ops.select(ops.lt(x, ops.c(x, 0.0)), ops.c(x, math.nan), y)
    y = ops.select(ops.eq(x, ops.c(x, math.inf)), x, y)
    return ops.select(ops.isnan(x), x, y)


def _log(ops, x):
    e, f, tail = _log_parts(ops, x)
    y = ops.muladd(e, ops.c(x, _LN2_LO), tail)
    y = ops.add(f, y)
    y = ops.muladd(e, ops.c(x, _LN2_HI), y)
    return _log_specials(ops, x, y)


def _log_scaled(ops, x, scale):
    """log(x) * scale (log2, log10): the mantissa part scaled in two pieces."""
    e, f, tail = _log_parts(ops, x)
    s_hi = _f32(scale)
    s_lo = scale - s_hi
    m = ops.add(f, tail)
    y = ops.muladd(m, ops.c(x, s_lo), ops.mul(ops.sub(tail, ops.sub(m, f)), ops.c(x, s_hi)))
    y = ops.muladd(m, ops.c(x, s_hi), y)
    return e, y


def _log2(ops, x):
    e, y = _log_scaled(ops, x, 1.4426950408889634)
    return _log_specials(ops, x, ops.add(e, y))


def _log10(ops, x):
    e, y = _log_scaled(ops, x, 0.4342944819032518)
    c = 0.30102999566398120      # log10(2) = hi + lo
    hi = _f32(c)
    y = ops.muladd(e, ops.c(x, c - hi), y)
    y = ops.muladd(e, ops.c(x, hi), y)
    return _log_specials(ops, x, y)


def _f32(v):
    import struct
    return struct.unpack("f", struct.pack("f", v))[0]


# -- sin / cos -----------------------------------------------------------------
def _f32_parts(value, n):
    """`value` (a Fraction) as a sum of n float32 numbers, each the float32 nearest to what is left."""
    from fractions import Fraction
    parts = []
    for _ in range(n):
        p = _f32(float(value))
        parts.append(p)
        value -= Fraction(p)
    return parts


# pi/2 to 120 bits (float64's math.pi is not precise enough for the third part)
_PIO2 = __import__("fractions").Fraction(0x1921FB54442D18469898CC51701B839A2, 1 << 128)
_PIO2_1, _PIO2_2, _PIO2_3 = _f32_parts(_PIO2, 3)
_SIN_POLY = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS_POLY = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)


def _sincos(ops, fn, x, want_cos):
    b = ops.b
    big = ops.any(b.fcmp_unordered(">", ops.fabs(x), ops.c(x, SIN_COS_FAST_LIMIT)))
    slow = fn.append_basic_block("slow")
    fast = fn.append_basic_block("fast")
    b.cbranch(big, slow, fast)
    b.position_at_end(slow)
    b.ret(b.call(_libm_lanes(ops.module, "cosf" if want_cos else "sinf", x.type), [x]))
    b.position_at_end(fast)
    k = ops.rint(ops.mul(x, ops.c(x, 2 / math.pi)))
    r = ops.fma(k, ops.c(x, -_PIO2_1), x)
    r = ops.fma(k, ops.c(x, -_PIO2_2), r)
    r = ops.fma(k, ops.c(x, -_PIO2_3), r)
    z = ops.mul(r, r)
    s = ops.muladd(ops.mul(ops.poly(z, _SIN_POLY), z), r, r)
    c = ops.muladd(ops.mul(ops.poly(z, _COS_POLY), z), z, ops.muladd(z, ops.c(x, -0.5), ops.c(x, 1.0)))
    q = b.fptosi(k, like(x.type, I32))
    if want_cos:
        q = b.add(q, ops.c(q, 1))
    odd = b.icmp_unsigned("!=", b.and_(q, ops.c(q, 1)), ops.c(q, 0))
    neg = b.icmp_unsigned("!=", b.and_(q, ops.c(q, 2)), ops.c(q, 0))
    y = ops.select(odd, c, s)
    y = ops.select(neg, b.fneg(y), y)
    if not want_cos:        # sin(-0.0) is -0.0 (the reduction gives +0.0)
        y = ops.select(ops.eq(x, ops.c(x, 0.0)), x, y)
    b.ret(y)


# -- tanh, sigmoid ---------------------------------------------------------------
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)


def _tanh(ops, x):
    ax = ops.fabs(x)
    z = ops.mul(x, x)
    small = ops.muladd(ops.mul(ops.poly(z, _TANH_POLY), z), x, x)
    e = call(ops, "exp", ops.add(ax, ax))
    one = ops.c(x, 1.0)
    large = ops.sub(one, ops.div(ops.c(x, 2.0), ops.add(e, one)))
    large = ops.copysign(large, x)
    # the polynomial gives +0.0 for -0.0: tanh keeps the sign of zero
    small = ops.copysign(small, x)
    return ops.select(ops.lt(ax, ops.c(x, 0.625)), small, large)


def _sigmoid(ops, x):
    # 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below, so tiny results keep their precision
    one = ops.c(x, 1.0)
    e = call(ops, "exp", ops.b.fneg(ops.fabs(x)))
    num = ops.select(ops.lt(x, ops.c(x, 0.0)), e, one)
    return ops.div(num, ops.add(one, e))


# -- pow (float32, computed in float64) -----------------------------------------
def _log2_f64(ops, x):
    """log2 of finite positive float64 x (normal), to about 2**-45 relative."""
    b = ops.b
    ity = like(x.type, I64)
    bits = b.bitcast(x, ity)
    e = b.sub(b.lshr(bits, ops.c(bits, 52)), ops.c(bits, 1023))
    m = b.bitcast(b.or_(b.and_(bits, ops.c(bits, 0x000FFFFFFFFFFFFF)), ops.c(bits, 0x3FF0000000000000)), x.type)
    big = ops.gt(m, ops.c(x, 1.4142135623730951))
    m = ops.select(big, ops.mul(m, ops.c(x, 0.5)), m)
    e = b.add(e, b.zext(big, ity))
    one = ops.c(x, 1.0)
    f = ops.div(ops.sub(m, one), ops.add(m, one))       # log(m) = 2 atanh(f)
    f2 = ops.mul(f, f)
    series = ops.poly(f2, [1 / 17, 1 / 15, 1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1.0])
    ln_m = ops.mul(ops.mul(f, series), ops.c(x, 2.0))
    return ops.muladd(ln_m, ops.c(x, 1 / math.log(2.0)), b.sitofp(e, x.type))


def _exp2_f64(ops, t):
    """2**t in float64 for float64 t, clamped to [-200, 200] (the float32 result range)."""
    b = ops.b
    tc = ops.minf(ops.maxf(t, ops.c(t, -200.0)), ops.c(t, 200.0))
    k = ops.rint(tc)
    r = ops.mul(ops.sub(tc, k), ops.c(t, math.log(2.0)))
    p = ops.poly(r, [1 / math.factorial(n) for n in range(12, -1, -1)])
    ki = b.fptosi(k, like(t.type, I64))
    scale = b.bitcast(b.shl(b.add(ki, ops.c(ki, 1023)), ops.c(ki, 52)), t.type)
    y = ops.mul(p, scale)
    y = ops.select(ops.gt(t, ops.c(t, 200.0)), ops.c(t, math.inf), y)
    y = ops.select(ops.lt(t, ops.c(t, -200.0)), ops.c(t, 0.0), y)
    return y


def _pow(ops, x, y):
    """C99/numpy powf, evaluated as 2**(y*log2|x|) in float64, with the sign and
    special cases selected afterwards."""
    b = ops.b
    dty = like(x.type, F64)
    xd, yd = b.fpext(x, dty), b.fpext(y, dty)
    ax = ops.fabs(xd)
    lg = _log2_f64(ops, ops.select(ops.eq(ax, ops.c(ax, 0.0)), ops.c(ax, 1.0), ax))
    lg = ops.select(ops.eq(ax, ops.c(ax, 0.0)), ops.c(ax, -math.inf), lg)
    lg = ops.select(ops.eq(ax, ops.c(ax, math.inf)), ops.c(ax, math.inf), lg)
    mag = _exp2_f64(ops, ops.mul(yd, lg))
    y_int = ops.eq(ops.floor(yd), yd)
    half = ops.mul(yd, ops.c(yd, 0.5))
    y_odd = b.and_(y_int, b.fcmp_unordered("!=", ops.floor(half), half))
    x_neg = b.icmp_signed("<", b.bitcast(xd, like(x.type, I64)), ops.c(ax, 0, I64))   # includes -0.0
    res = ops.select(b.and_(x_neg, y_odd), b.fneg(mag), mag)
    finite_neg = b.and_(ops.lt(xd, ops.c(xd, 0.0)), ops.gt(xd, ops.c(xd, -math.inf)))
    res = ops.select(b.and_(finite_neg, b.not_(y_int)), ops.c(xd, math.nan), res)
    res = ops.select(ops.isnan(xd), xd, res)
    res = ops.select(ops.isnan(yd), yd, res)
    res = ops.select(ops.eq(ax, ops.c(ax, 1.0)), ops.select(ops.eq(xd, ops.c(xd, 1.0)), ops.c(xd, 1.0),
                     ops.select(ops.eq(ops.fabs(yd), ops.c(yd, math.inf)), ops.c(xd, 1.0), res)), res)
    res = ops.select(ops.eq(yd, ops.c(yd, 0.0)), ops.c(xd, 1.0), res)
    return b.fptrunc(res, x.type)


# -- erf for float32 results, in float64 ----------------------------------------
# For |x| < 1: erf(x) = x * (2/sqrt(pi) + z * P(z)), z = x^2, with 2/sqrt(pi) split in two
# doubles and the last step one FMA, about half an ulp of float64 (P fitted by least squares to
# mpmath's erf: 4e-17 relative before rounding). For 1 <= |x| <= 6, erfc(|x|) = exp(-x^2) *
# erfcx(|x|), with erfcx (erfc(x) * exp(x^2), smooth) a polynomial in t = (|x| - 3) / (|x| + 3),
# mapped to [-1, 1], fitted to math.erfc (about 1e-14 relative, far below float32's 6e-8);
# erf(6) is 1 in float64. One interval for each part: no per-lane choice of coefficients.
# Checked against the C library's erf (eager's) over every float32: the float32 results are its
# bits. Near 0 that needs the half ulp: the C library's value can be a float32 rounding tie
# (erf(0.00018398030078969896) is one), and x * P(x^2) of the whole ratio, 2.4e-16 off from its
# rounded leading coefficient, came out one float32 ulp below there.
_ERF_C_HI, _ERF_C_LO = 1.1283791670955126, 1.533545961316588e-17
_ERF_SMALL = (-7.811731924424338e-10, 1.372910354882887e-08, -1.6210725642429644e-07, 1.644774134004539e-06, -1.4924764956644223e-05, 0.00012055296522657555, -0.0008548326036454629, 0.005223977608593663, -0.02686617064345555, 0.11283791670946784, -0.3761263890318361)
_ERFCX_K, _ERFCX_MID, _ERFCX_HALF = 3.0, -0.08333333333333334, 0.41666666666666663
_ERFCX = (6.048688245724396e-12, 6.043405029569624e-12, -2.5701793846356204e-10, -2.6380418906248467e-10, 1.1339350805126458e-08, -4.52671141813674e-09, -5.541273179721646e-07, 2.425557476357154e-06, 1.9563583200182356e-05, -0.0003316029605771271, 0.0024793146970859114, -0.012713147695692179, 0.04969844540339414, -0.15436117429436916, 0.20798329133342888)
_LN2_HI_F64, _LN2_LO_F64 = 6.93147180369123816490e-01, 1.90821492927058770002e-10


def _exp_f64(ops, x):
    """e**x in float64 for x in [-40, 0] (no overflow, normal results), about 1e-14 relative."""
    b = ops.b
    k = ops.rint(ops.mul(x, ops.c(x, 1 / math.log(2.0))))
    r = ops.fma(b.fneg(k), ops.c(x, _LN2_HI_F64), x)
    r = ops.fma(b.fneg(k), ops.c(x, _LN2_LO_F64), r)
    p = ops.poly(r, [1 / math.factorial(n) for n in range(11, -1, -1)])
    ki = b.fptosi(k, like(x.type, I64))
    return ops.mul(p, b.bitcast(b.shl(b.add(ki, ops.c(ki, 1023)), ops.c(ki, 52)), x.type))


def _erf_narrow(ops, x):
    b = ops.b
    ax = ops.fabs(x)
    z = ops.mul(x, x)
    tail = ops.mul(x, ops.muladd(z, ops.poly(z, _ERF_SMALL), ops.c(x, _ERF_C_LO)))
    small = ops.fma(x, ops.c(x, _ERF_C_HI), tail)                   # keeps the sign of zero
    a = ops.minf(ops.maxf(ax, ops.c(x, 1.0)), ops.c(x, 6.0))         # NaN -> 1 (selected away below)
    k = ops.c(x, _ERFCX_K)
    t = ops.div(ops.sub(a, k), ops.add(a, k))
    u = ops.mul(ops.sub(t, ops.c(x, _ERFCX_MID)), ops.c(x, 1 / _ERFCX_HALF))
    erfc = ops.mul(_exp_f64(ops, b.fneg(ops.mul(a, a))), ops.poly(u, _ERFCX))
    large = ops.copysign(ops.sub(ops.c(x, 1.0), erfc), x)
    y = ops.select(ops.lt(ax, ops.c(x, 1.0)), small, large)
    return ops.select(ops.isnan(x), x, y)


def _in_fn(body):
    """A body that needs its own basic blocks: given the function, emits `ret` itself."""
    def run(ops, *args):
        body(ops, ops.b.function, *args)
        return None
    return run


_BODIES = {
    "exp": _exp,
    "exp2": _exp2,
    "log": _log,
    "log2": _log2,
    "log10": _log10,
    "sin": _in_fn(lambda ops, fn, x: _sincos(ops, fn, x, False)),
    "cos": _in_fn(lambda ops, fn, x: _sincos(ops, fn, x, True)),
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "pow": _pow,
    "erf_narrow": _erf_narrow,
}
