"""IR-building helpers shared by the code generator and the math library.

Values are scalars or vectors (`<W x T>`); `Ops` wraps an `ir.IRBuilder` so
that the same code emits either: constants splat to the operand's width and
intrinsics get the type suffix of their operands (`llvm.fma.v8f32`).
"""
import llvmlite.ir as ir

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()
I8P = I8.as_pointer()


def vector_of(ty, width):
    return ty if width == 1 else ir.VectorType(ty, width)


def element_of(ty):
    return ty.element if isinstance(ty, ir.VectorType) else ty


def width_of(ty):
    return ty.count if isinstance(ty, ir.VectorType) else 1


def like(ty, element):
    """`element` with the width of `ty`."""
    return vector_of(element, width_of(ty))


def const(ty, value):
    """A constant of type `ty` (a vector type gets `value` in every lane)."""
    el = element_of(ty)
    c = ir.Constant(el, value)
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [c] * ty.count)
    return c


def type_suffix(ty):
    el = element_of(ty)
    name = {F32: "f32", F64: "f64"}.get(el) or f"i{el.width}"
    return f"v{ty.count}{name}" if isinstance(ty, ir.VectorType) else name


def declare(module, name, ret, args, attrs=()):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
        for a in attrs:
            fn.attributes.add(a)
    return fn


class Ops:
    """Arithmetic on scalar-or-vector IR values through one builder."""

    def __init__(self, builder, module):
        self.b = builder
        self.module = module

    # -- constants and intrinsics ----------------------------------------------
    def c(self, like_value, value, element=None):
        ty = like_value.type if element is None else like(like_value.type, element)
        return const(ty, value)

    def intrinsic(self, name, *args, ret=None, suffix_of=None):
        ty = (suffix_of or args[0]).type
        fn = declare(self.module, f"llvm.{name}.{type_suffix(ty)}", ret or ty, [a.type for a in args])
        return self.b.call(fn, list(args))

    def fma(self, a, b, c):
        return self.intrinsic("fma", a, b, c)

    def muladd(self, a, b, c):
        """a*b + c, fused when the target has FMA (used in polynomials only)."""
        return self.intrinsic("fmuladd", a, b, c)

    def rint(self, x):
        return self.intrinsic("rint", x)

    def floor(self, x):
        return self.intrinsic("floor", x)

    def fabs(self, x):
        return self.intrinsic("fabs", x)

    def sqrt(self, x):
        return self.intrinsic("sqrt", x)

    def copysign(self, mag, sign):
        return self.intrinsic("copysign", mag, sign)

    def poly(self, x, coeffs):
        """Horner: coeffs[0]*x^(n-1) + ... + coeffs[-1]."""
        acc = self.c(x, coeffs[0])
        for k in coeffs[1:]:
            acc = self.muladd(acc, x, self.c(x, k))
        return acc

    # -- float helpers ----------------------------------------------------------
    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def minf(self, a, b):
        return self.b.select(self.lt(a, b), a, b)

    def maxf(self, a, b):
        return self.b.select(self.gt(a, b), a, b)

    def any(self, cond):
        """i1: whether any lane of `cond` is true."""
        if isinstance(cond.type, ir.VectorType):
            return self.intrinsic("vector.reduce.or", cond, ret=I1)
        return cond

    def lanes(self, x):
        """Scalar values of each lane."""
        if not isinstance(x.type, ir.VectorType):
            return [x]
        return [self.b.extract_element(x, const(I32, i)) for i in range(x.type.count)]

    def gather_lanes(self, ty, values):
        """A vector (or scalar) of type `ty` from per-lane scalars."""
        if not isinstance(ty, ir.VectorType):
            return values[0]
        v = ir.Constant(ty, ir.Undefined)
        for i, s in enumerate(values):
            v = self.b.insert_element(v, s, const(I32, i))
        return v

    def splat(self, scalar, width):
        if width == 1:
            return scalar
        ty = ir.VectorType(scalar.type, width)
        v = self.b.insert_element(ir.Constant(ty, ir.Undefined), scalar, const(I32, 0))
        return self.b.shuffle_vector(v, ir.Constant(ty, ir.Undefined), ir.Constant(ir.VectorType(I32, width), [0] * width))
