"""Kernel -> LLVM IR function, with an explicitly vectorized innermost loop.

Signature of every kernel: `void k(PyObject *arg0, ..., PyObject *sizes, <scalars>, i64 start,
i64 end, i64 chunk)`. The arguments are numpy arrays; the data pointer is read from the array
object (`DATA_OFFSET`). Sizes are not compiled in: the loop bounds, the strides other than 0
and 1, the offsets and the element counts of means are read from `sizes` (an int64 array the
wrapper passes; `kernel.size_values` lists what it holds, in the order the code reads it), so
one compiled kernel serves every size of a layout pattern (which strides are 0 or 1 is part of
the code). `<scalars>` are the kernel's runtime numbers (`kernel.scalars`: a double or an i64
each), the values of a graph's number inputs used in its pointwise math.
`[start, end)` is the range of
`kernel.par_dim` this call computes (threads split it); `chunk` indexes the
partial-result slot of a split full reduction.

Loop structure: kept dims outermost, reduced dims inside. A pure elementwise
kernel runs one loop nest whose innermost loop goes `W` elements at a time
(vector types `<W x T>`, vector loads/stores where the stride is 1) and then
one at a time for the rest. A kernel with reductions runs, for each index of
the kept dims, one or more passes over the reduced dims: pass k computes the
reductions whose inputs need only results of passes < k (softmax: max, then
sum of exp(x - max), then the stores of exp(x - max) / sum), with vector
accumulators combined across lanes after the pass.

Every value is computed in the outermost loop in which all its inputs are
known (loop-invariant code is hoisted as it is generated), so a broadcast
operand costs one load per row, not one per element.
"""
import contextlib
import ctypes
import math
import platform
import sys

import llvmlite.ir as ir
import numpy as np

from dynjit import _dtype as D

from . import mathlib
from .irutil import (F32, F64, I1, I8, I8P, I16, I32, I64, VOID, Ops, const, declare, element_of, like,
                     type_suffix, vector_of)
from .kernel import ScalarArg, SizeNumber, postorder

VECTOR_BYTES = None    # bytes per vector step of the widest type: None = two of the target's registers


def vector_bytes():
    """Two vector registers of the target (from its features, not its name): 128 bytes with
    AVX-512, else 64 (two AVX2 registers). A kernel with float64 values (a float32 sum
    accumulates in float64) got 8 float32 lanes from 64 bytes: half a register on AVX-512
    hosts, where 256-bit instructions run on fewer ports (softmax was 2x slower there)."""
    if VECTOR_BYTES is not None:
        return VECTOR_BYTES
    from .jit import jit
    return 128 if "+avx512f" in jit().features.split(",") else 64
# vector steps per iteration of a loop over a row that reduces: one accumulator each, so that
# several independent add / max chains hide the instruction latency (a single chain made a
# row max or a float64-accumulated sum latency-bound)
REDUCTION_UNROLL = 4
# the last, partial vector of a row runs as one masked vector step where the target has masked
# loads and stores (KernelCodegen.masked_tail_ok); False: one element at a time (for comparisons)
MASKED_TAIL = True


def vector_width(kernel):
    """Lanes per step of the innermost loop: two registers' worth (vector_bytes()) of the
    widest type the kernel computes with, at most 16 (AVX2: 16 float32 lanes, 8 float64), so
    each step has two independent vector chains."""
    widest = 1
    seen = set()
    stack = [v for v, _ in kernel.stores] + [v for v, _ in kernel.partials]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        widest = max(widest, n.dtype.itemsize, n.params.get("acc", n.dtype).itemsize if n.kind == "reduce" else 1)
        stack.extend(n.args)
    return max(4, min(16, vector_bytes() // widest))


def _data_offset():
    """Byte offset of the data pointer in a numpy array object (checked, not assumed)."""
    a = np.zeros(3)
    off = object.__basicsize__
    if ctypes.c_void_p.from_address(id(a) + off).value != a.ctypes.data:
        raise RuntimeError("llvm backend: cannot locate the data pointer of numpy arrays on this build")
    return off


DATA_OFFSET = _data_offset()

_INT_TYPES = {1: I8, 2: I16, 4: I32, 8: I64}


def value_type(dtype):
    """The LLVM type a dtype's values have in registers (bool: i1)."""
    if dtype is D.bool_:
        return I1
    if dtype is D.float32:
        return F32
    if dtype is D.float64:
        return F64
    return _INT_TYPES[dtype.itemsize]


def memory_type(dtype):
    return I8 if dtype is D.bool_ else value_type(dtype)


SUPPORTED_DTYPES = (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float32, D.float64)


def is_float(dtype):
    return dtype.is_floating_point


def is_unsigned(dtype):
    return dtype is D.bool_ or dtype is D.uint8


# -- primitives ------------------------------------------------------------------

def cast(ops, x, src, dst):
    if src is dst:
        return x
    b = ops.b
    to = like(x.type, value_type(dst))
    if dst is D.bool_:
        if is_float(src):
            return b.fcmp_unordered("!=", x, ops.c(x, 0.0))
        return b.icmp_unsigned("!=", x, ops.c(x, 0))
    if is_float(dst):
        if is_float(src):
            return b.fpext(x, to) if dst.itemsize > src.itemsize else b.fptrunc(x, to)
        return b.uitofp(x, to) if is_unsigned(src) else b.sitofp(x, to)
    if is_float(src):
        return float_to_int(ops, x, to)
    sw, dw = element_of(x.type).width, element_of(to).width
    if sw == dw:
        return x
    if dw < sw:
        return b.trunc(x, to)
    return b.zext(x, to) if is_unsigned(src) else b.sext(x, to)


# numpy's float -> integer casts are C casts, so NaN and out-of-range values give what the
# hardware's conversion instruction gives. LLVM's fptosi makes those poison (the vectorizer
# then picks saturating packs in some lanes and wrapping in others), so the conversion is
# spelled out: to a 32-bit integer (64-bit for int64) with the hardware's result for values
# it cannot hold, then truncated to 8 or 16 bits (what C compilers emit, and numpy gives).
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def float_to_int(ops, x, to):
    b = ops.b
    el = element_of(to)
    wide_el = I64 if el.width == 64 else I32
    wide = like(x.type, wide_el)
    lim = float(2 ** (wide_el.width - 1))
    if _X86:
        # cvttss2si / cvttsd2si: the "integer indefinite" INT_MIN for NaN and out of range
        ok = b.and_(b.fcmp_ordered(">=", x, ops.c(x, -lim)), b.fcmp_ordered("<", x, ops.c(x, lim)))
        v = b.select(ok, b.fptosi(x, wide), const(wide, -int(lim)))
    else:
        # aarch64 (fcvtzs) and the rest: saturating, NaN -> 0
        v = ops.intrinsic(f"fptosi.sat.{type_suffix(wide)}", x, ret=wide, suffix_of=x)
    return b.trunc(v, to) if el.width < wide_el.width else v


def _cmp(ops, pred, a, b, dtype):
    if is_float(dtype):
        if pred == "!=":
            return ops.b.fcmp_unordered("!=", a, b)
        return ops.b.fcmp_ordered(pred, a, b)
    if is_unsigned(dtype):
        return ops.b.icmp_unsigned(pred, a, b)
    return ops.b.icmp_signed(pred, a, b)


def _isnan(ops, x, dtype):
    return ops.isnan(x) if is_float(dtype) else ops.c(x, 0, I1)


def _prim_add(ops, n, a, b):
    if n.dtype is D.bool_:
        return ops.b.or_(a, b)
    return ops.b.fadd(a, b) if is_float(n.dtype) else ops.b.add(a, b)


def _prim_mul(ops, n, a, b):
    if n.dtype is D.bool_:
        return ops.b.and_(a, b)
    return ops.b.fmul(a, b) if is_float(n.dtype) else ops.b.mul(a, b)


def _prim_sub(ops, n, a, b):
    return ops.b.fsub(a, b) if is_float(n.dtype) else ops.b.sub(a, b)


def _prim_neg(ops, n, a):
    return ops.b.fneg(a) if is_float(n.dtype) else ops.b.sub(ops.c(a, 0), a)


def _prim_abs(ops, n, a):
    if is_float(n.dtype):
        return ops.fabs(a)
    if is_unsigned(n.dtype):
        return a
    return ops.b.select(ops.b.icmp_signed("<", a, ops.c(a, 0)), ops.b.sub(ops.c(a, 0), a), a)


def _prim_max(ops, n, a, b):
    # numpy's SIMD loops (what it runs on x86-64 for every layout): (a > b || isnan(a)) ? a : b,
    # so NaN propagates from either side and a tie (+0.0 vs -0.0) gives b
    t = n.dtype
    if t is D.bool_:
        return ops.b.or_(a, b)
    take_a = _cmp(ops, ">", a, b, t)
    if is_float(t):
        take_a = ops.b.or_(take_a, ops.isnan(a))
    return ops.b.select(take_a, a, b)


def _prim_min(ops, n, a, b):
    t = n.dtype
    if t is D.bool_:
        return ops.b.and_(a, b)
    take_a = _cmp(ops, "<", a, b, t)
    if is_float(t):
        take_a = ops.b.or_(take_a, ops.isnan(a))
    return ops.b.select(take_a, a, b)


def _compare(pred):
    def emit(ops, n, a, b):
        return _cmp(ops, pred, a, b, n.args[0].dtype)
    return emit


def _prim_sign(ops, n, a):
    t = n.dtype
    if is_float(t):
        one = ops.c(a, 1.0)
        r = ops.b.select(ops.gt(a, ops.c(a, 0.0)), one, ops.c(a, 0.0))
        r = ops.b.select(ops.lt(a, ops.c(a, 0.0)), ops.c(a, -1.0), r)
        return ops.b.select(ops.isnan(a), a, r)
    if t is D.bool_:
        return a
    pos = ops.b.zext(_cmp(ops, ">", a, ops.c(a, 0), t), a.type)
    neg = ops.b.zext(_cmp(ops, "<", a, ops.c(a, 0), t), a.type)
    return ops.b.sub(pos, neg)


def _float_or_same(name):
    def emit(ops, n, a):
        return ops.intrinsic(name, a) if is_float(n.dtype) else a
    return emit


def _prim_isinf(ops, n, a):
    if not is_float(n.args[0].dtype):
        return ops.c(a, 0, I1)
    return ops.eq(ops.fabs(a), ops.c(a, math.inf))


def _prim_isfinite(ops, n, a):
    if not is_float(n.args[0].dtype):
        return ops.c(a, 1, I1)
    return ops.lt(ops.fabs(a), ops.c(a, math.inf))


def _prim_signbit(ops, n, a):
    t = n.args[0].dtype
    if is_float(t):
        ity = like(a.type, _INT_TYPES[t.itemsize])
        return ops.b.icmp_signed("<", ops.b.bitcast(a, ity), ops.c(a, 0, element_of(ity)))
    if is_unsigned(t):
        return ops.c(a, 0, I1)
    return ops.b.icmp_signed("<", a, ops.c(a, 0))


def _int_guard(ops, b):
    """(safe divisor, b == 0, b == -1): x86 traps on division by 0 and MIN / -1."""
    zero = ops.b.icmp_signed("==", b, ops.c(b, 0))
    minus1 = ops.b.icmp_signed("==", b, ops.c(b, -1))
    safe = ops.b.select(ops.b.or_(zero, minus1), ops.c(b, 1), b)
    return safe, zero, minus1


def _prim_fmod(ops, n, a, b):
    if is_float(n.dtype):
        return ops.b.frem(a, b)
    if is_unsigned(n.dtype):
        zero = ops.b.icmp_unsigned("==", b, ops.c(b, 0))
        r = ops.b.urem(a, ops.b.select(zero, ops.c(b, 1), b))
        return ops.b.select(zero, ops.c(a, 0), r)
    safe, zero, minus1 = _int_guard(ops, b)
    r = ops.b.srem(a, safe)
    return ops.b.select(ops.b.or_(zero, minus1), ops.c(a, 0), r)


def _prim_remainder(ops, n, a, b):
    """numpy's remainder: the result has the divisor's sign."""
    bl = ops.b
    if is_float(n.dtype):
        mod = bl.frem(a, b)
        nz = bl.fcmp_unordered("!=", mod, ops.c(mod, 0.0))
        adj = bl.and_(nz, bl.xor(ops.lt(b, ops.c(b, 0.0)), ops.lt(mod, ops.c(mod, 0.0))))
        mod2 = bl.select(adj, bl.fadd(mod, b), mod)
        return bl.select(nz, mod2, ops.copysign(ops.c(mod, 0.0), b))
    if is_unsigned(n.dtype):
        return _prim_fmod(ops, n, a, b)
    r = _prim_fmod(ops, n, a, b)
    adj = bl.and_(bl.icmp_signed("!=", r, ops.c(r, 0)),
                  bl.xor(bl.icmp_signed("<", r, ops.c(r, 0)), bl.icmp_signed("<", b, ops.c(b, 0))))
    return bl.select(adj, bl.add(r, b), r)


def _prim_floordiv(ops, n, a, b):
    """numpy's floor_divide (npy_floor_divide / Python's // for integers)."""
    bl = ops.b
    if is_float(n.dtype):
        mod = bl.frem(a, b)
        div = bl.fdiv(bl.fsub(a, mod), b)
        nz = bl.fcmp_unordered("!=", mod, ops.c(mod, 0.0))
        adj = bl.and_(nz, bl.xor(ops.lt(b, ops.c(b, 0.0)), ops.lt(mod, ops.c(mod, 0.0))))
        div = bl.select(adj, bl.fsub(div, ops.c(div, 1.0)), div)
        fl = ops.floor(div)
        fl = bl.select(ops.gt(bl.fsub(div, fl), ops.c(div, 0.5)), bl.fadd(fl, ops.c(fl, 1.0)), fl)
        q = bl.fdiv(a, b)
        res = bl.select(bl.fcmp_unordered("!=", div, ops.c(div, 0.0)), fl, ops.copysign(ops.c(div, 0.0), q))
        return bl.select(bl.fcmp_unordered("==", b, ops.c(b, 0.0)), q, res)
    if is_unsigned(n.dtype):
        zero = bl.icmp_unsigned("==", b, ops.c(b, 0))
        return bl.select(zero, ops.c(a, 0), bl.udiv(a, bl.select(zero, ops.c(b, 1), b)))
    safe, zero, minus1 = _int_guard(ops, b)
    q = bl.sdiv(a, safe)
    r = bl.srem(a, safe)
    adj = bl.and_(bl.icmp_signed("!=", r, ops.c(r, 0)),
                  bl.xor(bl.icmp_signed("<", r, ops.c(r, 0)), bl.icmp_signed("<", b, ops.c(b, 0))))
    q = bl.select(adj, bl.sub(q, ops.c(q, 1)), q)
    q = bl.select(minus1, bl.sub(ops.c(a, 0), a), q)
    return bl.select(zero, ops.c(a, 0), q)


def _prim_truncdiv(ops, n, a, b):
    bl = ops.b
    if is_float(n.dtype):
        return ops.intrinsic("trunc", bl.fdiv(a, b))
    if is_unsigned(n.dtype):
        zero = bl.icmp_unsigned("==", b, ops.c(b, 0))
        return bl.select(zero, ops.c(a, 0), bl.udiv(a, bl.select(zero, ops.c(b, 1), b)))
    safe, zero, minus1 = _int_guard(ops, b)
    q = bl.select(minus1, bl.sub(ops.c(a, 0), a), bl.sdiv(a, safe))
    return bl.select(zero, ops.c(a, 0), q)


def _bitwise(name):
    def emit(ops, n, *args):
        return getattr(ops.b, name)(*args)
    return emit


PRIMS = {
    "add": _prim_add,
    "sub": _prim_sub,
    "mul": _prim_mul,
    "div": lambda ops, n, a, b: ops.b.fdiv(a, b),
    "neg": _prim_neg,
    "abs": _prim_abs,
    "maximum": _prim_max,
    "minimum": _prim_min,
    "eq": _compare("=="), "ne": _compare("!="), "lt": _compare("<"),
    "le": _compare("<="), "gt": _compare(">"), "ge": _compare(">="),
    "and": _bitwise("and_"), "or": _bitwise("or_"), "xor": _bitwise("xor"),
    "not": lambda ops, n, a: ops.b.not_(a),
    "isnan": lambda ops, n, a: _isnan(ops, a, n.args[0].dtype),
    "isinf": _prim_isinf,
    "isfinite": _prim_isfinite,
    "signbit": _prim_signbit,
    "where": lambda ops, n, c, a, b: ops.b.select(c, a, b),
    "sqrt": lambda ops, n, a: ops.sqrt(a),
    "floor": _float_or_same("floor"),
    "ceil": _float_or_same("ceil"),
    "trunc": _float_or_same("trunc"),
    "round": _float_or_same("rint"),
    "sign": _prim_sign,
    "copysign": lambda ops, n, a, b: ops.copysign(a, b),
    "fmod": _prim_fmod,
    "remainder": _prim_remainder,
    "floordiv": _prim_floordiv,
    "truncdiv": _prim_truncdiv,
    "math": None,      # params["fn"]: a mathlib function
    "cast": None,
}


# -- reductions ------------------------------------------------------------------

def _identity(kind, dtype, ty):
    if kind == "sum":
        return const(ty, 0.0 if is_float(dtype) else 0)
    if kind == "prod":
        return const(ty, 1.0 if is_float(dtype) else 1)
    big = kind == "min"
    if is_float(dtype):
        return const(ty, math.inf if big else -math.inf)
    if dtype is D.bool_:
        return const(ty, 1 if big else 0)
    info = np.iinfo(dtype.np)
    return const(ty, int(info.max if big else info.min))


def _combine(ops, kind, dtype, acc, x):
    if kind == "sum":
        return ops.b.fadd(acc, x) if is_float(dtype) else ops.b.add(acc, x)
    if kind == "prod":
        return ops.b.fmul(acc, x) if is_float(dtype) else ops.b.mul(acc, x)
    if is_float(dtype):
        # NaN-propagating (IEEE maximum/minimum); a select of the loaded accumulator
        # would let LLVM turn a reduction into a masked store (slow on AMD)
        return ops.intrinsic("maximum" if kind == "max" else "minimum", acc, x)
    take = _cmp(ops, ">" if kind == "max" else "<", x, acc, dtype)
    return ops.b.select(take, x, acc)


# -- the kernel ------------------------------------------------------------------

class Scope:
    """One loop level: where its values are emitted (`block`), its memo, its indices.
    Values in a scope of `width` W > 1 are vectors whose lanes run along dim `vdim`
    (the innermost vectorized loop at or above this scope)."""
    __slots__ = ("parent", "level", "width", "vdim", "block", "memo", "index", "part", "unrolled", "mask")

    def __init__(self, parent, level, width, block, dim=None, index=None, vdim=None, part=0, unrolled=False,
                 mask=None):
        self.parent = parent
        self.mask = mask          # <W x i1>: the lanes of a row's last, partial vector step (else None)
        self.level = level
        self.width = width
        self.part = part          # which of an unrolled loop's independent accumulators this step uses
        self.unrolled = unrolled  # a step of the unrolled loop (parts 0 .. unroll-1 in one iteration)
        self.vdim = vdim
        self.block = block
        self.memo = {}
        self.index = dict(parent.index) if parent is not None else {}
        if dim is not None:
            self.index[dim] = index


# float constants compiled into the code; any other float constant is read from the sizes array
# like a size, since it may have been computed from sizes by whoever made the graph (AOT's
# backward of a mean divides by N): so the code stays the same for every size. LLVM folds
# x * 1, x * -1 and x / 2 with these; with any other value a register operand costs the same.
COMPILED_FLOATS = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, math.inf, -math.inf)


def is_runtime_const(n):
    """A const KNode whose value the kernel reads when it runs (see COMPILED_FLOATS)."""
    if n.kind != "const":
        return False
    v = n.value
    if isinstance(v, (SizeNumber, ScalarArg)):
        return True
    return is_float(n.dtype) and isinstance(v, float) and not (math.isnan(v) or v in COMPILED_FLOATS)


def runtime_numbers(kernel):
    """The kernel's constants known only when it runs, and its means, in a fixed order."""
    roots = [v for v, _ in kernel.stores] + [v for v, _ in kernel.partials]
    return [n for n in postorder(roots)
            if is_runtime_const(n) or (n.kind == "reduce" and n.params.get("divide_by") is not None)]


def size_slots(kernel):
    """What the kernel's sizes array holds, in order: (key, value, node) for the loop bounds,
    the offsets, the strides other than 0 and 1, then the counts of means and the numbers
    computed from sizes (float64 bits for floats). The order depends only on the kernel's
    structure (structure_key), so the code is the same for every size of a layout pattern,
    and the values for another size come from this function alone, without code generation."""
    slots = [(("dim", d), n, None) for d, n in enumerate(kernel.shape)]
    for i, op in enumerate(kernel.operands):
        if op.offset:
            slots.append((("offset", i), op.offset, None))
        for d, st in enumerate(op.strides):
            if st not in (0, 1):
                slots.append((("stride", i, d), st, None))
    for n in runtime_numbers(kernel):
        if n.kind == "reduce":
            slots.append((("count", id(n)), _float_bits(n.params["divide_by"]), n))
        elif not isinstance(n.value, ScalarArg):
            value = _float_bits(n.value) if is_float(n.dtype) else int(n.value)
            slots.append((("number", id(n)), value, n))
    return slots


def _float_bits(x):
    return int(np.array(float(x), np.float64).view(np.int64))


def structure_key(kernel):
    """Everything code generation reads from a kernel except what size_slots passes at run
    time: two kernels with equal keys compile to the same code."""
    index = {}
    nodes = []
    roots = [v for v, _ in kernel.stores] + [v for v, _ in kernel.partials]
    ops = {id(op): i for i, op in enumerate(kernel.operands)}
    for n in postorder(roots):
        index[id(n)] = len(nodes)
        if n.kind == "const":
            v = n.value
            if isinstance(v, ScalarArg):
                value = ("scalar", v.index, v.kind)
            elif is_runtime_const(n):
                value = ("runtime",)
            else:
                value = (type(v).__name__, repr(v))
        else:
            value = None
        params = tuple(sorted((k, (p is not None) if k == "divide_by" else repr(p)) for k, p in n.params.items()))
        nodes.append((n.kind, n.op, n.dtype.name, tuple(index[id(a)] for a in n.args), value,
                      ops.get(id(n.operand)) if n.operand is not None else None, params))
    operands = tuple((op.arg, op.dtype.name, bool(op.offset), tuple(min(abs(st), 2) * (1 if st >= 0 else -1)
                                                                   for st in op.strides), op.is_output)
                     for op in kernel.operands)
    return (len(kernel.shape), tuple(sorted(kernel.reduced)), operands, tuple(nodes),
            tuple((index[id(v)], ops[id(op)]) for v, op in kernel.stores),
            tuple((index[id(v)], ops[id(op)]) for v, op in kernel.partials),
            kernel.par_dim, kernel.packed, kernel.nargs, tuple(kind for _, kind in kernel.scalars), MASKED_TAIL)


class KernelCodegen:
    def __init__(self, module, kernel, name, width=None):
        self.k = kernel
        self.module = module
        nargs = kernel.nargs
        scalar_types = [F64 if kind == "f64" else I64 for _, kind in kernel.scalars]
        arrays = [I8P.as_pointer()] if kernel.packed else [I8P] * nargs
        # void k(arrays, PyObject *sizes, scalars..., i64 start, i64 end, i64 chunk)
        fnty = ir.FunctionType(VOID, arrays + [I8P] + scalar_types + [I64, I64, I64])
        self.fn = ir.Function(module, fnty, name=name)
        self.fn.attributes.add("nounwind")
        entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        first = 1 if kernel.packed else nargs
        if kernel.packed:
            argv = self.fn.args[0]
            self.args = [self.b.load(self.b.gep(argv, [const(I64, i)])) for i in range(nargs)]
        else:
            self.args = self.fn.args[:nargs]
        self.scalar_args = self.fn.args[first + 1:first + 1 + len(scalar_types)]
        self.start, self.end, self.chunk = self.fn.args[first + 1 + len(scalar_types):]
        kernel.size_values = []
        self._sizes = {}
        self._sizes_ptr = self.b.bitcast(self._data_pointer(self.fn.args[first]), I64.as_pointer())
        self._operand_index = {id(op): i for i, op in enumerate(kernel.operands)}
        self.ops = Ops(self.b, module)
        self.width = width or vector_width(kernel)
        kept, red = kernel.kept_dims(), kernel.reduced_dims()
        self.kept, self.red = kept, red
        self.level_of_dim = {d: i + 1 for i, d in enumerate(kept + red)}
        self.npl = len(kept)
        self._levels = {}
        self._ready = {}
        self._ptrs = {}
        self.root = Scope(None, 0, 1, entry)

    # -- sizes: runtime values --------------------------------------------------------
    def _read_sizes(self):
        """Read every size the kernel uses from the sizes array (see size_slots), and convert
        its runtime numbers, at the end of the entry block, before any loop (so they are loop
        invariants)."""
        slots = size_slots(self.k)
        self.k.size_values = [value for _, value, _ in slots]
        b = self.b
        for i, (key, value, node) in enumerate(slots):
            v = b.load(b.gep(self._sizes_ptr, [const(I64, i)]), align=8)
            if key[0] == "count" or (key[0] == "number" and is_float(node.dtype)):
                v = b.bitcast(v, F64)       # float64 bits, rounded to the node's type
                el = value_type(node.dtype)
                if el != F64:
                    v = b.fptrunc(v, el)
            elif key[0] == "number":
                v = cast(self.ops, v, D.int64, node.dtype)
            self._sizes[key] = v
        for n in runtime_numbers(self.k):
            if isinstance(n.value, ScalarArg):
                raw = self.scalar_args[n.value.index]
                src = D.float64 if n.value.kind == "f64" else D.int64
                self._sizes[("number", id(n))] = cast(self.ops, raw, src, n.dtype)

    def _splat(self, v, ty):
        return self.ops.splat(v, ty.count) if isinstance(ty, ir.VectorType) else v

    def runtime_number(self, n, ty):
        """A constant known when the kernel runs (see _read_sizes), splat to `ty`'s width."""
        return self._splat(self._sizes[("number", id(n))], ty)

    def count(self, r, ty):
        """The element count a mean divides by, as `ty` (the reduction's dtype)."""
        v = self._sizes[("count", id(r))]
        assert v.type == element_of(ty)
        return self._splat(v, ty)

    def dim_size(self, d):
        return self._sizes[("dim", d)]

    def stride(self, op, d):
        return self._sizes[("stride", self._operand_index[id(op)], d)]

    # -- structure ----------------------------------------------------------------
    def emit(self):
        k = self.k
        self._read_sizes()
        for op in k.operands:
            self._base_pointer(op)
        reductions = k.reductions()
        if not reductions:
            self.loop_nest(self.kept, self.root, lambda s: self.store_all(k.stores, s), vector=True)
        elif self.outer and self._accumulate_in_outputs_ok(reductions):
            self.emit_accumulate_in_outputs(reductions)
        else:
            self.loop_nest(self.kept, self.root, lambda s: self.p_body(s, reductions), vector=self.outer)
        self.b.ret_void()
        return self.fn

    def _accumulate_in_outputs_ok(self, reductions):
        stored = {id(v) for v, _ in self.k.stores}
        return (all(id(r) in stored for r in reductions)
                and all(self.ready(r.args[0]) == 0 for r in reductions)
                and all(v.kind == "reduce" or self.ready(v) == 0 for v, _ in self.k.stores)
                and all(v.kind == "reduce" or any(op.strides[d] for d in self.red) for v, op in self.k.stores))

    def emit_accumulate_in_outputs(self, reductions):
        """Reductions over outer dims (sum(0) of a matrix): walk the input in memory order,
        rows outside and the kept innermost dim vectorized inside, adding each row into the
        output (numpy's order for such reductions; it accumulates in the output dtype)."""
        vd = self.kept[-1]
        order = self.kept[:-1] + self.red + [vd]
        self.level_of_dim = {d: i + 1 for i, d in enumerate(order)}
        red_stores = [(v, op) for v, op in self.k.stores if v.kind == "reduce"]
        s_stores = [(v, op) for v, op in self.k.stores if v.kind != "reduce"]

        def init(scope):
            for r, op in red_stores:
                ty = vector_of(value_type(op.dtype), scope.width)
                self.store(_identity(r.op, op.dtype, ty), op, scope)

        def body(scope):
            for r, op in red_stores:
                x = cast(self.ops, self.value(r.args[0], scope), r.args[0].dtype, op.dtype)
                self.store(_combine(self.ops, r.op, op.dtype, self.load(op, scope), x), op, scope)
            self.store_all(s_stores, scope)

        def finish(scope):
            for r, op in red_stores:
                count = r.params.get("divide_by")
                if count is not None:
                    v = self.load(op, scope)
                    self.store(self.b.fdiv(v, self.count(r, v.type)), op, scope)
        self.loop_nest(self.kept, self.root, init, vector=True)
        self.loop_nest(order, self.root, body, vector=True)
        if any(r.params.get("divide_by") is not None for r, _ in red_stores):
            self.loop_nest(self.kept, self.root, finish, vector=True)

    @property
    def outer(self):
        """Whether the reductions run 'outer': the innermost dim is kept, so the lanes of a
        vector are neighbouring outputs and each lane accumulates its own result while
        the loops over the reduced dims (inside) walk rows. Otherwise the innermost
        reduced loop is vectorized and lanes are combined after each pass."""
        return bool(self.kept) and (not self.red or self.kept[-1] > self.red[-1])

    def loop_nest(self, dims, parent, body, vector, unroll=1):
        """Loops over `dims` around `body(scope)`; the last dim vectorized when `vector`. With
        `unroll` > 1 the vector loop makes `unroll` steps per iteration, scope.part 0, 1, ...:
        reductions keep one accumulator per part, so that `unroll` independent chains hide
        the latency of each add / max (one chain waits 3-4 cycles per vector)."""
        if not dims:
            body(parent)
            return
        d = dims[0]
        level = self.level_of_dim[d]
        if d == self.k.par_dim:
            lo, hi = self.start, self.end
        else:
            lo, hi = const(I64, 0), self.dim_size(d)
        if len(dims) == 1 and vector and self._vector_width(d) > 1:
            w = self._vector_width(d)
            rest = lo
            if unroll > 1:
                def unrolled(i):
                    for u in range(unroll):
                        iu = i if u == 0 else self.b.add(i, const(I64, u * w), flags=["nsw"])
                        body(self._scope(parent, level, d, iu, w, d, u, unrolled=True))
                rest = self.emit_loop(lo, hi, unroll * w, unrolled)
            rest = self.emit_loop(rest, hi, w, lambda i: body(self._scope(parent, level, d, i, w, d)))
            if self.masked_tail_ok(d):
                self.emit_masked_step(rest, hi, w, lambda i, mask: body(
                    self._scope(parent, level, d, i, w, d, mask=mask)))
            else:
                self.emit_loop(rest, hi, 1, lambda i: body(self._scope(parent, level, d, i, 1, None)))
        else:
            self.emit_loop(lo, hi, 1, lambda i: self.loop_nest(
                dims[1:], self._scope(parent, level, d, i, parent.width, parent.vdim, mask=parent.mask),
                body, vector, unroll))

    def _vector_width(self, d):
        # whatever the dim's size: the vector loop runs no step when it is shorter
        return self.width

    def _scope(self, parent, level, dim, index, width, vdim, part=0, unrolled=False, mask=None):
        return Scope(parent, level, width, self.b.block, dim, index, vdim, part, unrolled, mask)

    def masked_tail_ok(self, d):
        """Whether the elements left after the vector loop over dim `d` (fewer than a vector)
        run as one masked vector step instead of one at a time: every operand is contiguous or
        broadcast along `d` (a strided one would need a masked gather), and masked loads and
        stores of its element size are instructions on the target (AVX: 32 and 64 bits;
        AVX-512BW: 8 and 16 too; elsewhere LLVM would split them into branches per lane)."""
        if not MASKED_TAIL:
            return False
        if any(op.strides[d] not in (0, 1) for op in self.k.operands):
            return False
        small = any(op.dtype.itemsize < 4 for op in self.k.operands if op.strides[d] == 1)
        return _has_masked_memory(small)

    def emit_masked_step(self, lo, hi, w, body):
        """if (lo < hi) body(lo, mask) with mask's lanes [0, hi - lo) on: the last, partial
        vector of a row (hi - lo < w). A row of 100 float32 is then 6 full steps and one
        masked one, not 6 and 4 scalar ones (with softmax's exp, 3 passes each)."""
        b = self.b
        tail = self.fn.append_basic_block("tail")
        after = self.fn.append_basic_block("after_tail")
        b.cbranch(b.icmp_signed("<", lo, hi), tail, after)
        b.position_at_end(tail)
        left = b.trunc(b.sub(hi, lo, flags=["nsw"]), I32)
        lanes = ir.Constant(ir.VectorType(I32, w), [ir.Constant(I32, i) for i in range(w)])
        mask = b.icmp_signed("<", lanes, self.ops.splat(left, w))
        body(lo, mask)
        b.branch(after)
        b.position_at_end(after)

    def emit_loop(self, lo, hi, step, body):
        """for (i = lo; i + step <= hi; i += step) body(i); returns i after the loop."""
        b = self.b
        pre = b.block
        header = self.fn.append_basic_block("loop")
        body_block = self.fn.append_basic_block("body")
        exit_block = self.fn.append_basic_block("after")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64)
        i.add_incoming(lo, pre)
        if step == 1:
            cond = b.icmp_signed("<", i, hi)
        else:
            cond = b.icmp_signed("<=", b.add(i, const(I64, step), flags=["nsw"]), hi)
        b.cbranch(cond, body_block, exit_block)
        b.position_at_end(body_block)
        body(i)
        # nsw: indices stay far from overflow, which lets LLVM reason about trip counts that
        # are no longer constants
        i.add_incoming(b.add(i, const(I64, step), flags=["nsw"]), b.block)
        b.branch(header)
        b.position_at_end(exit_block)
        return i

    # -- reductions -----------------------------------------------------------------
    def ready(self, n):
        """The pass over the reduced dims from which `n` can be computed."""
        memo = self._ready
        r = memo.get(id(n))
        if r is None:
            for m in postorder([n], lambda m: [a for a in m.args if id(a) not in memo]):
                if m.kind == "reduce":
                    memo[id(m)] = memo[id(m.args[0])] + 1
                else:
                    memo[id(m)] = max((memo[id(a)] for a in m.args), default=0)
            r = memo[id(n)]
        return r

    def p_body(self, pscope, reductions):
        k = self.k
        s_stores, p_stores = [], []
        for value, op in k.stores:
            varies_in_r = any(op.strides[d] != 0 for d in self.red)
            (s_stores if varies_in_r else p_stores).append((value, op))
        passes = max([self.ready(r.args[0]) for r in reductions] + [self.ready(v) for v, _ in s_stores]) + 1
        if self.outer:
            r_width = pscope.width
        else:
            r_width = self._vector_width(self.red[-1]) if self.red else 1
        unroll = REDUCTION_UNROLL if r_width > 1 and not self.outer else 1
        partial_of = {id(r): op for r, op in k.partials}
        stash_stores, stash_loads = self._stash_plan(reductions, s_stores)
        for p in range(passes):
            reds = [r for r in reductions if self.ready(r.args[0]) == p]
            stores = stash_stores.get(p, []) + [(v, op) for v, op in s_stores if self.ready(v) == p]
            reloads = stash_loads.get(p, [])
            accs = {}
            for r in reds:
                acc_t = value_type(r.params["acc"])
                slots = []
                for w, part in ([(r_width, u) for u in range(unroll)] + [(1, 0)] if r_width > 1 and not self.outer
                                else [(r_width, 0)]):
                    ty = vector_of(acc_t, w)
                    slot = self._alloca(ty)
                    self.b.store(_identity(r.op, r.params["acc"], ty), slot)
                    slots.append(((w, part), slot))
                accs[id(r)] = dict(slots)

            pending = {}

            def body(scope, reds=reds, stores=stores, accs=accs, reloads=reloads, pending=pending):
                for v, op in reloads:
                    scope.memo[id(v)] = self.load(op, scope)
                for r in reds:
                    acc_dt = r.params["acc"]
                    x = self.value(r.args[0], scope)
                    if scope.unrolled and _block_summed(r):
                        # a float32 sum accumulated in float64: the unrolled iteration's vectors
                        # are added pairwise in float32 (two roundings, as numpy's pairwise sum
                        # makes more), then converted and added once: a quarter of the
                        # conversions and float64 adds, which cost a third of softmax's sum pass
                        block = pending.setdefault(id(r), [])
                        block.append(x)
                        if len(block) < unroll:
                            continue
                        while len(block) > 1:
                            block[:] = [self.b.fadd(block[i], block[i + 1]) if i + 1 < len(block) else block[i]
                                        for i in range(0, len(block), 2)]
                        x = block.pop()
                        slot = accs[id(r)][scope.width, 0]
                    else:
                        slot = accs[id(r)][scope.width, scope.part]
                    x = cast(self.ops, x, r.args[0].dtype, acc_dt)
                    if scope.mask is not None:
                        x = self.b.select(scope.mask, x, _identity(r.op, acc_dt, x.type))
                    self.b.store(_combine(self.ops, r.op, acc_dt, self.b.load(slot), x), slot)
                self.store_all(stores, scope)
            self.loop_nest(self.red, pscope, body, vector=not self.outer, unroll=unroll)
            pscope.block = self.b.block
            for r in reds:
                acc_dt = r.params["acc"]
                slots = accs[id(r)]
                if self.outer:
                    acc = self.b.load(slots[r_width, 0])
                else:
                    acc = self.b.load(slots[1, 0])
                if r_width > 1 and not self.outer:
                    vec = self.b.load(slots[r_width, 0])
                    for u in range(1, unroll):
                        vec = _combine(self.ops, r.op, acc_dt, vec, self.b.load(slots[r_width, u]))
                    acc = _combine(self.ops, r.op, acc_dt, acc, _combine_lanes(self.ops, r.op, acc_dt, vec))
                if id(r) in partial_of:
                    self._store_partial(acc, partial_of[id(r)])
                    continue
                acc = cast(self.ops, acc, acc_dt, r.dtype)
                count = r.params.get("divide_by")
                if count is not None:       # mean: the sum rounded to its dtype, then divided (numpy's)
                    acc = self.b.fdiv(acc, self.count(r, acc.type))
                pscope.memo[id(r)] = acc
        self.store_all(p_stores, pscope)

    def _stash_plan(self, reductions, s_stores):
        """Values computed with transcendental math in one pass over a row and needed again
        by a later pass (softmax's exp(x - max), summed in pass 1 and divided in pass 2)
        are stored in pass 1 into the output the later pass writes at the same index, and
        loaded back there instead of computed twice. Returns {pass: [(value, operand)]}
        for the stores and for the loads."""
        deepest = self.npl + len(self.red)
        used_by_pass = {}
        for r in reductions:
            used_by_pass.setdefault(self.ready(r.args[0]), set()).update(_pass_local_ids(r.args[0]))
        stash_stores, stash_loads = {}, {}
        for value, op in s_stores:
            p = self.ready(value)
            if p == 0 or any(st == 0 for st in op.strides):
                continue
            v = self._stash_candidate(value, p, op.dtype, deepest, used_by_pass)
            if v is not None:
                stash_stores.setdefault(self.ready(v), []).append((v, op))
                stash_loads.setdefault(p, []).append((v, op))
        return stash_stores, stash_loads

    def _stash_candidate(self, value, p, dtype, deepest, used_by_pass):
        """The first node below `value` (outermost first) worth stashing, or None."""
        seen, queue = set(), [value]
        while queue:
            n = queue.pop(0)
            if id(n) in seen or n.kind in ("load", "const", "reduce"):
                continue
            seen.add(id(n))
            q = self.ready(n)
            if (n is not value and q < p and n.dtype is dtype and self.level(n) == deepest
                    and id(n) in used_by_pass.get(q, ()) and _has_math(n)):
                return n
            queue.extend(n.args)
        return None

    def _alloca(self, ty):
        b = self.b
        saved = b.block
        b.position_at_start(self.fn.entry_basic_block)
        slot = b.alloca(ty)
        b.position_at_end(saved)
        return slot

    def _store_partial(self, acc, op):
        ptr = self.b.gep(self._ptrs[id(op)], [self.chunk])
        self.b.store(acc, ptr)

    # -- values -----------------------------------------------------------------------
    def level(self, n):
        memo = self._levels
        lv = memo.get(id(n))
        if lv is None:
            def children(m):
                return () if m.kind == "reduce" else [a for a in m.args if id(a) not in memo]
            for m in postorder([n], children):
                if m.kind == "const":
                    lv = 0
                elif m.kind == "load":
                    st = m.operand.strides
                    lv = max((self.level_of_dim[d] for d in range(len(st)) if st[d] != 0), default=0)
                elif m.kind == "reduce":
                    lv = self.npl
                else:
                    lv = max((memo[id(a)] for a in m.args), default=0)
                memo[id(m)] = lv
            lv = memo[id(n)]
        return lv

    def _home(self, n, scope):
        """The outermost scope around `scope` in which `n` can be computed."""
        lv = self.level(n)
        while scope.level > lv:
            scope = scope.parent
        return scope

    def value(self, n, scope):
        """`n` as used in `scope`. Whatever this emits (a splat, a computed value) goes into
        `scope.block` (or a block of an enclosing scope), never at the builder's current
        position: callers ask for values of an outer scope while the builder is inside a
        nested loop or a sibling one, and a value memoized in a scope must dominate every
        later use in that scope."""
        if n.kind == "const":
            ty = vector_of(value_type(n.dtype), scope.width)
            if is_runtime_const(n):
                if scope.width == 1:
                    return self.runtime_number(n, ty)
                return self._splat_in(scope, ("number_splat", id(n)), lambda: self.runtime_number(n, ty))
            return const(ty, _const_value(n.value, n.dtype))
        home = self._home(n, scope)
        key = id(n)
        v = self._lookup(home, key)
        if v is None:
            self._compute(n, home)
            v = home.memo[key]
        if home is not scope and scope.width > 1 and not isinstance(v.type, ir.VectorType):
            return self._splat_in(scope, ("splat", key), lambda: self.ops.splat(v, scope.width))
        return v

    def _splat_in(self, scope, key, make):
        """The vector `make()` emitted once in `scope`'s block and memoized there."""
        s = scope.memo.get(key)
        if s is None:
            with self._at(scope):
                s = scope.memo[key] = make()
        return s

    def _compute(self, root, home):
        """Emit `root` in `home` and every value below it not yet computed, arguments first
        (left to right, as a recursive walk would), with an explicit stack."""
        stack = [(root, home, False)]
        while stack:
            n, h, expanded = stack.pop()
            if self._lookup(h, id(n)) is not None:
                continue
            if n.kind == "reduce":
                raise AssertionError(f"reduction {n} used before its pass")
            if not expanded:
                stack.append((n, h, True))
                for a in reversed(n.args):
                    if a.kind != "const":
                        ah = self._home(a, h)
                        if self._lookup(ah, id(a)) is None:
                            stack.append((a, ah, False))
                continue
            args = [self.value(a, h) for a in n.args]      # known now: lookups (and splats)
            with self._at(h):
                v = self.emit_node(n, args, h)
            h.memo[id(n)] = v

    @staticmethod
    def _lookup(scope, key):
        while scope is not None:
            v = scope.memo.get(key)
            if v is not None:
                return v
            scope = scope.parent
        return None

    @contextlib.contextmanager
    def _at(self, scope):
        b = self.b
        saved = b.block
        blk = scope.block
        if blk.is_terminated:
            b.position_before(blk.terminator)
        else:
            b.position_at_end(blk)
        try:
            yield
        finally:
            b.position_at_end(saved)

    def emit_node(self, n, args, scope):
        if n.kind == "load":
            return self.load(n.operand, scope)
        if n.op == "cast":
            return cast(self.ops, args[0], n.args[0].dtype, n.dtype)
        if n.op == "math":
            return mathlib.call(self.ops, n.params["fn"], *args)
        if (n.op == "div" and n.dtype is D.float32 and scope.width > 1 and _has_fma()
                and n.args[1].kind != "const" and self.level(n.args[1]) < scope.level
                and not isinstance(self.value(n.args[1], self._home(n.args[1], scope)).type, ir.VectorType)):
            return self._div_by_invariant(n, args, scope)
        return PRIMS[n.op](self.ops, n, *args)

    def _div_by_invariant(self, n, args, scope):
        """float32 x / s with s fixed along the vector loop (softmax's row sum): one float64
        reciprocal per row and multiplies per element, correctly rounded like the division
        (a vector divide takes 10-16 cycles per 16 lanes; the divider is the bottleneck).

        q = RN64(x * r) with r = RN64(1/s) is within 2^-52 of x/s (relatively); a float32
        quotient whose magnitude is a normal float32 is never within 2^-49 of a float32
        rounding tie (x/s - M = (X 2^a - S (2K+1) 2^c) / (S 2^b) with S and 2K+1 odd and
        2K+1 < 2^25: the numerator's last bit bounds it from below; and it is never exactly a
        tie, since S (2K+1) would need 25 bits for X's 24), so RN32(q) = RN32(x/s) there.
        Infinities, NaN, zeros and overflow come out of the product as the division's.
        Quotients among float32 subnormals can be ties (3 * 2^-149 / 6 = 2^-150): a vector
        holding an |x| below 2^-124 |s| (a quotient below about 2^-124) takes the exact
        path: one Markstein step q' = RN(q + fma(-q, s, x) * r), the correctly rounded
        float64 quotient (Markstein's theorem: r correctly rounded, q faithful, all values
        normal in float64 as every float32 is), whose rounding to float32 is RN32(x/s) (a
        float32 quotient is a tie, exact in float64, or 2^-174 away from one among
        subnormals, far above float64's rounding). Where the remainder is 0 (q exact, signed
        zeros kept) or NaN (x infinite, s zero, infinite or NaN), q is the result."""
        ops, b = self.ops, self.b
        home = self._home(n.args[1], scope)
        key = ("recip", id(n.args[1]))
        pre = self._lookup(home, key)
        if pre is None:
            with self._at(home):
                s64 = b.fpext(self.value(n.args[1], home), F64)
                r = b.fdiv(const(F64, 1.0), s64)
                tiny = b.fptrunc(b.fmul(ops.fabs(s64), const(F64, 2.0 ** -124)), F32)
            pre = home.memo[key] = (s64, r, tiny)
        s64, r, tiny = pre
        w = scope.width
        fn = _row_division_function(self.module, w)
        return b.call(fn, [args[0], s64, r, tiny])

    # -- memory -----------------------------------------------------------------------
    def _data_pointer(self, obj):
        b = self.b
        field = b.bitcast(b.gep(obj, [const(I64, DATA_OFFSET)]), I8P.as_pointer())
        return b.load(field)

    def _base_pointer(self, op):
        b = self.b
        ptr = b.bitcast(self._data_pointer(self.args[op.arg]), memory_type(op.dtype).as_pointer())
        if op.offset:
            ptr = b.gep(ptr, [self._sizes[("offset", self._operand_index[id(op)])]])
        self._ptrs[id(op)] = ptr
        return ptr

    def _address(self, op, scope, lane_dim_zero=False):
        b = self.b
        off = None
        for d, st in enumerate(op.strides):
            if st == 0:
                continue
            term = scope.index[d] if st == 1 else b.mul(scope.index[d], self.stride(op, d), flags=["nsw"])
            off = term if off is None else b.add(off, term, flags=["nsw"])
        return off if off is not None else const(I64, 0)

    def load(self, op, scope):
        b = self.b
        base = self._ptrs[id(op)]
        off = self._address(op, scope)
        mty = memory_type(op.dtype)
        align = op.dtype.itemsize
        w = scope.width
        if w == 1:
            v = b.load(b.gep(base, [off]), align=align)
        else:
            st = op.strides[scope.vdim]
            if st == 1 and scope.mask is not None:
                vty = vector_of(mty, w)
                ptr = b.bitcast(b.gep(base, [off]), vty.as_pointer())
                fn = declare(self.module, f"llvm.masked.load.{type_suffix(vty)}.p0", vty,
                             [ptr.type, I32, scope.mask.type, vty])
                v = b.call(fn, [ptr, const(I32, align), scope.mask, const(vty, 0)])
            elif st == 1:
                v = b.load(b.bitcast(b.gep(base, [off]), vector_of(mty, w).as_pointer()), align=align)
            elif st == 0:
                v = self.ops.splat(b.load(b.gep(base, [off]), align=align), w)
            else:
                step = self.stride(op, scope.vdim)
                lanes = [b.load(b.gep(base, [off if i == 0 else b.add(off, b.mul(const(I64, i), step))]),
                                align=align) for i in range(w)]
                v = self.ops.gather_lanes(vector_of(mty, w), lanes)
        if op.dtype is D.bool_:
            v = b.icmp_unsigned("!=", v, self.ops.c(v, 0))
        return v

    def store(self, v, op, scope):
        b = self.b
        base = self._ptrs[id(op)]
        off = self._address(op, scope)
        if op.dtype is D.bool_:
            v = b.zext(v, like(v.type, I8))
        align = op.dtype.itemsize
        if isinstance(v.type, ir.VectorType):
            st = op.strides[scope.vdim]
            if st == 1 and scope.mask is not None:
                ptr = b.bitcast(b.gep(base, [off]), v.type.as_pointer())
                fn = declare(self.module, f"llvm.masked.store.{type_suffix(v.type)}.p0", VOID,
                             [v.type, ptr.type, I32, scope.mask.type])
                b.call(fn, [v, ptr, const(I32, align), scope.mask])
            elif st == 1:
                b.store(v, b.bitcast(b.gep(base, [off]), v.type.as_pointer()), align=align)
            else:
                step = self.stride(op, scope.vdim)
                for i, lane in enumerate(self.ops.lanes(v)):
                    b.store(lane, b.gep(base, [off if i == 0 else b.add(off, b.mul(const(I64, i), step))]),
                            align=align)
        else:
            b.store(v, b.gep(base, [off]), align=align)

    def store_all(self, stores, scope):
        for value, op in stores:
            if value.dtype is not op.dtype:
                raise AssertionError(f"store of {value.dtype} into a {op.dtype} buffer")
            self.store(self.value(value, scope), op, scope)


def _combine_lanes(ops, kind, dtype, vec):
    """The lanes of `vec` combined by halves (w/2 lanes, then w/4, ...): log2(w) dependent
    steps at the end of each row pass instead of w (a lane-by-lane chain of 16 float64 adds
    or maxima cost a short row more than its vector loop)."""
    b = ops.b
    w = vec.type.count
    while w > 1:
        h = w // 2
        lo = b.shuffle_vector(vec, ir.Constant(vec.type, ir.Undefined),
                              ir.Constant(ir.VectorType(I32, h), [ir.Constant(I32, i) for i in range(h)]))
        hi = b.shuffle_vector(vec, ir.Constant(vec.type, ir.Undefined),
                              ir.Constant(ir.VectorType(I32, h), [ir.Constant(I32, h + i) for i in range(h)]))
        vec = _combine(ops, kind, dtype, lo, hi) if h > 1 else _combine(ops, kind, dtype, ops.lanes(lo)[0],
                                                                        ops.lanes(hi)[0])
        w = h
    return vec


def _block_summed(r):
    """A float sum whose accumulator is wider than its input (float32 summed in float64)."""
    return (r.op == "sum" and is_float(r.args[0].dtype) and is_float(r.params["acc"])
            and r.args[0].dtype.itemsize < r.params["acc"].itemsize)


def _row_division_function(module, w):
    """`dj.rowdiv.v<w>f32(x, s, r, tiny)`: x / s for float32 x (w lanes) with the float64
    divisor s, r = RN64(1/s) and tiny = RN32(2^-124 |s|) (see _div_by_invariant): the
    product x * r rounded to float32 unless a lane's |x| is nonzero and below tiny, then the Markstein
    step for the whole vector. Internal and always inlined: its branch sits in the loop."""
    name = f"dj.rowdiv.v{w}f32"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    vty = vector_of(F32, w)
    fn = ir.Function(module, ir.FunctionType(vty, [vty, F64, F64, F32]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    x, s64, r, tiny = fn.args
    entry, fast, exact = (fn.append_basic_block(n) for n in ("entry", "fast", "exact"))
    b = ir.IRBuilder(entry)
    ops = Ops(b, module)
    ax = ops.fabs(x)
    # zeros (and a masked step's off lanes) are exact in the product: only nonzero |x| < tiny
    small = b.and_(b.fcmp_ordered("<", ax, ops.splat(tiny, w)), b.fcmp_ordered(">", ax, ops.c(ax, 0.0)))
    d = vector_of(F64, w)
    rv = ops.splat(r, w)
    b.cbranch(ops.any(small), exact, fast)
    b.position_at_end(fast)
    x64 = b.fpext(x, d)
    b.ret(b.fptrunc(b.fmul(x64, rv), vty))
    b.position_at_end(exact)
    x64 = b.fpext(x, d)
    sv = ops.splat(s64, w)
    q = b.fmul(x64, rv)
    rem = ops.fma(b.fneg(q), sv, x64)
    exact_or_special = b.fcmp_unordered("==", rem, ops.c(rem, 0.0))
    q = b.select(exact_or_special, q, ops.fma(rem, rv, q))
    b.ret(b.fptrunc(q, vty))
    return fn


def _has_masked_memory(small_elements):
    """Whether the target has masked vector loads and stores (of 8/16-bit elements when
    `small_elements`): x86 AVX (vmaskmov, 32/64-bit lanes), AVX-512F, AVX-512BW (8/16-bit)."""
    from .jit import jit
    features = jit().features.split(",")
    if small_elements:
        return "+avx512bw" in features
    return "+avx" in features or "+avx512f" in features


def _has_fma():
    """Whether the target has fused multiply-add instructions (else llvm.fma is a libm call)."""
    from .jit import jit
    features = jit().features.split(",")
    return "+fma" in features or "+neon" in features or platform.machine().lower() in ("arm64", "aarch64")


def _pass_local_ids(n):
    """ids of the nodes computed along with `n` in its pass (not crossing reductions)."""
    seen, stack = set(), [n]
    while stack:
        m = stack.pop()
        if id(m) in seen or m.kind == "reduce":
            continue
        seen.add(id(m))
        stack.extend(m.args)
    return seen


def _has_math(n):
    stack, seen = [n], set()
    while stack:
        m = stack.pop()
        if id(m) in seen or m.kind == "reduce":
            continue
        seen.add(id(m))
        if m.kind == "prim" and m.op == "math":
            return True
        stack.extend(m.args)
    return False


def _const_value(value, dtype):
    if dtype is D.bool_:
        return int(bool(value))
    if is_float(dtype):
        return float(value)
    v = int(value)
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1            # two's complement bit pattern
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def build_module(kernels, names):
    """An IR module with one function per kernel."""
    from .jit import triple_and_layout
    module = ir.Module(name="dynjit_kernels")
    module.triple, module.data_layout = triple_and_layout()
    for k, name in zip(kernels, names):
        KernelCodegen(module, k, name).emit()
    return module
