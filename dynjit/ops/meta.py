"""Meta functions: an op's output shape(s) and dtype(s) from its inputs' shapes
and dtypes, without computing anything.

`OpDef.meta(args, kwargs)` returns `(shape, dtype)` for a single-output op and
a list of those for ops with several outputs. A tensor argument may be a
`TensorMeta`, a real Tensor, or anything else with `.shape` and a dynjit
`.dtype`; other arguments are the ordinary Python values.

Each op kind has a generic rule:
- pointwise: broadcast the tensor operands, then the op's dtype rule;
- reduction: drop (or keep as size 1, with `keepdim`) the reduced dims;
- view: run the kernel on zero-strided dummy arrays (one element of memory,
  whatever the shape), so the view's own shape logic is reused;
- in-place: `self`'s shape and dtype, once the functional op's result is
  checked to fit into it.
Ops whose result is not given by their kind's rule (matmul, cat, factories,
sum's integer accumulation ...) declare their own meta next to their kernel
with `@op.meta_fn`, using the helpers here.
"""
import math

import numpy as np

from .. import _dtype
from .registry import POINTWISE, REDUCTION, VIEW, INPLACE, FLOAT, BOOL, KEEP, REAL, REAL_FLOAT


class TensorMeta:
    """A tensor's shape and dtype, standing in for the tensor in a meta computation."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    @classmethod
    def of(cls, t):
        return cls(t.shape, t.dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        return math.prod(self.shape)

    def __eq__(self, other):
        return isinstance(other, TensorMeta) and self.shape == other.shape and self.dtype is other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"TensorMeta({self.dtype._short}{list(self.shape)})"


def is_tensor_like(x):
    return isinstance(getattr(x, "dtype", None), _dtype.dtype) and hasattr(x, "shape")


class DataDependentOutputError(RuntimeError):
    """The op's output shape depends on the values in its inputs, not only their shapes."""


# -- shared shape rules --------------------------------------------------------

def normalize_dims(dim, ndim):
    """A tuple of non-negative dims (all dims when dim is None or empty)."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    n = max(ndim, 1)
    out = []
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        out.append(d % n if ndim else 0)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
    return tuple(out)


def wrap_dim(dim, ndim):
    """One dim made non-negative (a 0-d tensor accepts 0 and -1)."""
    return normalize_dims(dim, ndim)[0] if ndim else normalize_dims(dim, 0) and 0


def broadcast_shapes(*shapes):
    """The broadcast of `shapes`, or PyTorch's error naming the sizes that clash."""
    result = ()
    for shape in shapes:
        shape = tuple(shape)
        if shape == result:
            continue
        n = max(len(result), len(shape))
        a = (1,) * (n - len(result)) + result
        b = (1,) * (n - len(shape)) + shape
        for i in range(n - 1, -1, -1):   # PyTorch reports the last clashing dim
            x, y = a[i], b[i]
            if x != y and x != 1 and y != 1:
                raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                                   f"at non-singleton dimension {i}")
        result = tuple(y if x == 1 else x for x, y in zip(a, b))
    return result


def broadcast_error(*operands):
    """The clear error for operands (arrays, tensors, scalars) whose shapes do not broadcast."""
    shapes = [np.shape(a) for a in operands if a is not None and not isinstance(a, (str, list, tuple))]
    try:
        broadcast_shapes(*shapes)
    except RuntimeError as e:
        return e
    return None


def reduced_shape(shape, dim, keepdim):
    dims = normalize_dims(dim, len(shape))
    if not shape:
        return ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def float_dtype(d):
    """`d` if floating point or complex, else the default float dtype (the FLOAT rule)."""
    return d if d._category >= 2 else _dtype.get_default_dtype()


def accumulate_dtype(d, dtype=None):
    """sum/prod/cumsum's output dtype: the requested one, else integers accumulate in int64."""
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return d if d._category >= 2 else _dtype.int64


def promoted_dtype(op, args):
    """A pointwise op's output dtype under PyTorch promotion and the op's dtype rule
    (the same rule the dispatcher applies to real tensors)."""
    dims, zero, scalars = [], [], []
    for i in op.operands:
        a = args[i]
        if is_tensor_like(a):
            (dims if len(a.shape) else zero).append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
    d = _dtype.result_type(dims, zero, scalars)
    if d is not None and d._category == 3 and not op.complex_ok:
        from .dispatch import complex_refused
        raise complex_refused(op, d)
    rule = op.dtype_rule
    if rule == FLOAT:
        return float_dtype(d)
    if rule == REAL:
        return d.to_real()
    if rule == REAL_FLOAT:
        return float_dtype(d).to_real()
    if rule == BOOL:
        return _dtype.bool_
    if rule == KEEP:
        return next(a.dtype for a in args if is_tensor_like(a))
    return d


# -- generic rules per kind -----------------------------------------------------

def pointwise_meta(op, args):
    shape = broadcast_shapes(*(a.shape for a in args if is_tensor_like(a)))
    return shape, promoted_dtype(op, args)


def reduction_meta(op, args):
    self = args[0]
    dim = args[op.index["dim"]] if "dim" in op.index else None
    keepdim = args[op.index["keepdim"]] if "keepdim" in op.index else False
    return reduced_shape(self.shape, dim, keepdim), self.dtype


def dummy(m):
    """A read-only array of `m`'s shape and dtype backed by one element."""
    return np.broadcast_to(np.zeros((), dtype=m.dtype.np), m.shape)


def _to_dummies(value):
    if is_tensor_like(value):
        return dummy(value)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_dummies(v) for v in value)
    return value


def describe(out):
    """(shape, dtype) of an array result, a list of those for a tuple/list of arrays."""
    if isinstance(out, (tuple, list)):
        return [describe(o) for o in out]
    out = np.asarray(out)
    return tuple(out.shape), _dtype.from_numpy_dtype(out.dtype)


def dummy_meta(op, args):
    """Run the kernel on zero-strided dummies: right for views (and any op whose
    result does not depend on values); costs no memory for views."""
    return describe(op.kernel(*_to_dummies(args)))


def same_as(t, dtype=None):
    return tuple(t.shape), (t.dtype if dtype is None else dtype)


def inplace_meta(op, args):
    self = args[0]
    result = run_meta(op.functional, args, {})
    shape, dtype = result
    if dtype._category > self.dtype._category:
        raise RuntimeError(f"result type {dtype.name} can't be cast to the desired output "
                           f"type {self.dtype.name} (in-place {op.name} on a {self.dtype.name} tensor)")
    if tuple(shape) != tuple(self.shape) and broadcast_shapes(shape, self.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(broadcast_shapes(shape, self.shape))}")
    return same_as(self)


_GENERIC = {POINTWISE: pointwise_meta, REDUCTION: reduction_meta, VIEW: dummy_meta, INPLACE: inplace_meta}


def _check_complex_meta(op, args):
    """The error the dispatcher raises for an op that refuses complex tensors."""
    for a in args:
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if is_tensor_like(x) and x.dtype._category == 3:
                from .dispatch import complex_refused
                raise complex_refused(op, x.dtype)


def run_meta(op, args, kwargs):
    """The body of `OpDef.meta`."""
    args = op.normalize(tuple(args), kwargs or {})
    if op.operand_check is not None:        # the errors the dispatcher raises before the kernel
        op.operand_check(*args)
    if op.kind is POINTWISE:                # Python ints the computation dtype cannot hold
        from .int_scalars import check_int_scalars_meta
        check_int_scalars_meta(op, args)
    if not op.complex_ok and op.kind is not POINTWISE:
        _check_complex_meta(op, args)
    if op._meta is not None:
        return op._meta(*args)
    return _GENERIC.get(op.kind, dummy_meta)(op, args)
