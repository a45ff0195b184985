"""Python ints that do not fit a pointwise op's integer computation dtype, handled as
PyTorch handles them (`int8_tensor + 300`).

PyTorch turns a Python number operand into a 0-d int64 tensor (a "wrapped number") and
casts it to the computation dtype unchecked, so an int out of the dtype's range wraps
around: `int8 + 300` adds 44, `uint8 > -1` compares with 255. That holds for arithmetic,
comparisons, bitwise and logical ops and the base of `pow`. A number at an operand the
op's schema types `Scalar` instead (the op's `scalar_args`: a clamp bound, `where`'s
values, pow's exponent) is converted checked: out of range it is PyTorch's "value cannot be converted
to type int8_t without overflow". Either way an int that does not fit 64 bits at all is
Python's OverflowError, as PyTorch's argument parser raises it.

numpy (NEP 50) would instead raise OverflowError for every out-of-range int, and compare
one mathematically; the dispatcher calls `fit_int_scalars` before a pointwise kernel.
"""
import numpy as np

from .. import _dtype
from .meta import is_tensor_like
from .pointwise import scalar_to
from .vocab import KEEP

_INT64_MIN, _UINT64_END = -2 ** 63, 2 ** 64


def _wraps(op, param):
    return param not in op.scalar_args


def fit_int_scalars(op, vals):
    """Replace, in `vals` (the kernel's arguments, tensors already in the computation dtype),
    each Python int operand that does not fit the integer computation dtype by its wrapped
    value, or raise PyTorch's error (see the module docstring)."""
    np_dtype = None
    for i in op.operands:
        v = vals[i]
        if type(v) is np.ndarray:
            np_dtype = v.dtype
            break
    for i in op.operands:
        v = vals[i]
        if type(v) is not int:
            continue
        if v >= _UINT64_END:
            raise OverflowError("int too big to convert")
        if v < _INT64_MIN:
            raise OverflowError("can't convert negative int to unsigned")
        if np_dtype is None or np_dtype.kind not in "iu":
            continue
        info = np.iinfo(np_dtype)
        if info.min <= v <= info.max:
            continue
        if _wraps(op, op.params[i]):
            as_int64 = v - _UINT64_END if v > 2 ** 63 - 1 else v     # the 64 bits, read as int64
            vals[i] = np.array(as_int64, dtype=np.int64).astype(np_dtype)[()]
        else:
            vals[i] = scalar_to(v, np_dtype)


def check_int_scalars_meta(op, args):
    """The errors `fit_int_scalars` raises, from tensor metas (shapes and dtypes), so that an
    op's meta function and its eager run agree."""
    if op.dtype_rule == KEEP or not any(type(args[i]) is int for i in op.operands):
        return
    dims, zero, scalars = [], [], []
    for i in op.operands:
        a = args[i]
        if is_tensor_like(a):
            (dims if len(a.shape) else zero).append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
    compute = _dtype.result_type(dims, zero, scalars)
    vals = [np.empty(0, compute.np) if is_tensor_like(a) else a for a in args]
    fit_int_scalars(op, vals)
