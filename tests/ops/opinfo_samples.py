"""Sample inputs for every op in dynjit's registry (an OpInfo-style table).

`SAMPLES[op_name]` is a list of `S(...)`: the op's positional and keyword
arguments, with numpy arrays standing for tensors (float arrays are float64,
so the same samples serve gradcheck). Markers:

- `NC(arr)`: pass a non-contiguous tensor holding `arr`'s values (a
  transposed or strided view of a contiguous leaf);
- `C(arr)`: a float tensor that never requires grad (e.g. nll_loss's weight).

`materialize(sample)` turns a sample into leaf tensors plus a function that
rebuilds the op's arguments from the leaves, which is what gradcheck needs.
"""
import numpy as np

import dynjit
from dynjit.ops.registry import registry, RANDOM
from dynjit.ops.memory_format import channels_last as _cl, channels_last_3d as _cl3, contiguous_format as _cf, preserve_format as _pf

R = registry
_rng = np.random.default_rng(20240601)


def r(*shape):
    return _rng.standard_normal(shape)


def pos(*shape):
    return _rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    return _rng.uniform(-0.9, 0.9, shape)


def away(*shape):
    """Nonzero values of either sign, |x| in [0.5, 2]."""
    return pos(*shape) * np.where(_rng.random(shape) < 0.5, -1.0, 1.0)


def ints(*shape, low=-5, high=6):
    return _rng.integers(low, high, shape, dtype=np.int64)


def bools(*shape):
    return _rng.random(shape) < 0.5


def distinct(*shape):
    """Floats without ties (for max/min/argmax along a dim)."""
    n = int(np.prod(shape)) if shape else 1
    return (_rng.permutation(n).astype(np.float64) * 0.37 + r(n) * 0.01).reshape(shape)


class NC:
    """A tensor argument passed as a non-contiguous view with these values."""

    def __init__(self, arr):
        self.arr = np.asarray(arr)


class C:
    """A float tensor argument that does not take part in gradient checks."""

    def __init__(self, arr):
        self.arr = np.asarray(arr)


class S:
    """One sample: positional and keyword arguments of an op call."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.no_gradcheck = None

    def not_differentiable_here(self, reason):
        """Leave this sample out of gradient checks (finite differences do not apply)."""
        self.no_gradcheck = reason
        return self

    def __repr__(self):
        def show(a):
            if isinstance(a, (NC, C)):
                return f"{type(a).__name__}({show(a.arr)})"
            if isinstance(a, np.ndarray):
                return f"{a.dtype.name}{list(a.shape)}"
            if isinstance(a, (list, tuple)):
                inner = ", ".join(show(x) for x in a)
                return f"[{inner}]" if isinstance(a, list) else f"({inner})"
            return repr(a)
        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def materialize(sample, requires_grad=False):
    """(leaves, build): leaf tensors for every tensor in the sample (float ones
    requiring grad if asked, except C(...)), and build(leaves) -> (args, kwargs)."""
    leaves, makers = [], []

    def leaf_for(value):
        if isinstance(value, NC):
            arr = value.arr
            if arr.ndim >= 2:
                data, view = arr.swapaxes(-1, -2).copy(), (lambda t: t.transpose(-1, -2))
            elif arr.ndim == 1:
                data, view = np.repeat(arr, 2), (lambda t: t[::2])
            else:
                data, view = arr.copy(), (lambda t: t)
            grad = True
        else:
            arr = value.arr if isinstance(value, C) else value
            data, view, grad = np.array(arr, copy=True), (lambda t: t), not isinstance(value, C)
        t = dynjit.from_numpy(data)
        if requires_grad and grad and (t.dtype.is_floating_point or t.dtype.is_complex):
            t.requires_grad_(True)
        leaves.append(t)
        index = len(leaves) - 1
        return lambda ls: view(ls[index])

    def plan(value):
        if isinstance(value, (np.ndarray, NC, C)):
            return leaf_for(value)
        if isinstance(value, list):
            parts = [plan(v) for v in value]
            return lambda ls: [p(ls) for p in parts]
        if isinstance(value, tuple) and any(isinstance(v, (np.ndarray, NC, C)) for v in value):
            parts = [plan(v) for v in value]
            return lambda ls: tuple(p(ls) for p in parts)
        return lambda ls: value

    arg_plans = [plan(a) for a in sample.args]
    kw_plans = {k: plan(v) for k, v in sample.kwargs.items()}

    def build(ls):
        return [p(ls) for p in arg_plans], {k: p(ls) for k, p in kw_plans.items()}
    return leaves, build


def all_float64(out):
    """Every floating output is float64, every complex one complex128 (finite differences
    need them)."""
    if isinstance(out, (tuple, list)):
        return all(all_float64(o) for o in out)
    if out.dtype.is_complex:
        return out.dtype is dynjit.complex128
    return not out.dtype.is_floating_point or out.dtype is dynjit.float64


def checkable(op, sample):
    """(fn, leaves) to check `op`'s derivatives on `sample` by finite differences, or None
    when the sample has nothing to differentiate or gives non-float64 outputs. Random ops
    are reseeded before every call, so every call draws the same numbers."""
    if sample.no_gradcheck:
        return None
    leaves, build = materialize(sample, requires_grad=True)
    if not any(t.requires_grad for t in leaves):
        return None
    random = RANDOM in op.tags

    def fn(*ls):
        if random:
            dynjit.manual_seed(0)
        a, kw = build(ls)
        return op(*a, **kw)
    with dynjit.no_grad():
        if not all_float64(fn(*leaves)):
            return None
    return fn, leaves


def call(op, sample, requires_grad=False):
    leaves, build = materialize(sample, requires_grad)
    args, kwargs = build(leaves)
    return op(*args, **kwargs)


def inplace_samples(inplace_op):
    """The functional op's samples whose result fits into `self` (same shape, a dtype
    it can be cast to): the samples its in-place variant runs on."""
    fop = inplace_op.functional
    out = []
    for sample in SAMPLES.get(fop.name, []):
        first = sample.args[0] if sample.args else None
        arr = getattr(first, "arr", first)
        if not isinstance(arr, np.ndarray):
            continue
        try:
            with dynjit.no_grad():
                result = call(fop, sample)
        except (RuntimeError, IndexError, ValueError):
            continue
        self_dtype = dynjit.from_numpy(arr.copy()).dtype
        if tuple(result.shape) == arr.shape and result.dtype._category <= self_dtype._category:
            out.append(sample)
    return out


# -- the table ---------------------------------------------------------------

SAMPLES = {}


def add(name, *samples):
    SAMPLES.setdefault(name, []).extend(samples)


def unary(name, dom=r, int_input=True):
    samples = [S(dom(2, 3)), S(dom()), S(NC(dom(3, 4))), S(dom(0, 2))]
    if int_input:
        samples.append(S(ints(4, low=1, high=4)))
    add(name, *samples)


for _n in ("exp", "exp2", "expm1", "sin", "cos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf"):
    unary(_n)
for _n in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt"):
    unary(_n, pos)
for _n in ("tan", "asin", "acos"):
    unary(_n, unit)
for _n in ("neg", "abs", "sign", "square", "floor", "ceil", "trunc", "frac", "relu"):
    unary(_n, away)
unary("reciprocal", away)
unary("silu", int_input=False)
add("round", S(r(2, 3) * 3), S(r(3) * 3, decimals=2), S(NC(r(2, 2))), S(ints(3)))
add("gelu", S(r(2, 3)), S(r(3), approximate="tanh"), S(NC(r(3, 2))), S(r()))
add("softplus", S(r(2, 3)), S(r(4) * 5, beta=2, threshold=4), S(r()))
add("leaky_relu", S(away(2, 3)), S(away(4), 0.2), S(NC(away(2, 2))), S(away()))
add("elu", S(away(2, 3)), S(away(4), alpha=0.5), S(NC(away(2, 2))))


def binary(name, lhs=r, rhs=r, scalar=2.5, int_ok=True):
    samples = [
        S(lhs(2, 3), rhs(2, 3)),
        S(lhs(2, 3), rhs(3)),                   # broadcasting
        S(lhs(2, 1), rhs(1, 3)),                # both sides broadcast
        S(lhs(), rhs(2, 3)),                    # 0-d with a dimensioned tensor
        S(lhs(2, 3), scalar),                   # Python scalar operand
        S(NC(lhs(3, 2)), rhs(3, 2)),            # non-contiguous
    ]
    if int_ok:
        samples.append(S(ints(3, low=1), ints(3, low=1)))
    add(name, *samples)


binary("add")
add("add", S(r(2, 3), r(3), alpha=2), S(np.array([True, False]), np.array([True, True])))
binary("sub")
add("sub", S(r(2, 3), r(2, 3), alpha=-0.5))
binary("rsub")
add("rsub", S(r(3), 2.0, alpha=3))
binary("mul")
binary("div", rhs=away)
add("div_mode", S(r(2, 3) * 4, away(2, 3), "trunc"), S(r(2, 3) * 4, away(3), "floor"),
    S(ints(4), ints(4, low=1), "trunc"), S(-ints(4, low=1), ints(4, low=1), rounding_mode="floor"),
    S(ints(3), 2, "floor"))
add("floor_divide", S(r(2, 3) * 4, away(2, 3)), S(ints(4), ints(4, low=1)), S(r(3) * 4, 1.5),
    S(NC(r(2, 2)), away(2)))
binary("remainder", rhs=pos, scalar=1.5)
binary("fmod", rhs=pos, scalar=1.5)
add("pow", S(pos(2, 3), r(2, 3)), S(pos(2, 3), 3), S(pos(3), 0.5), S(pos(2, 3), r(3)), S(2.0, r(3)),
    S(pos(), r(2, 2)), S(NC(pos(2, 2)), 2), S(ints(3, low=0), 2), S(r(3), 0))
binary("atan2", rhs=away)
binary("logaddexp", int_ok=False)
add("addcmul", S(r(2, 3), r(2, 3), r(2, 3)), S(r(2, 3), r(3), r(2, 1), value=0.5), S(r(), r(3), r(3), value=-2),
    S(NC(r(3, 2)), r(3, 2), r(3, 2)), S(ints(3), ints(3), ints(3), value=2))
add("addcdiv", S(r(2, 3), r(2, 3), away(2, 3)), S(r(2, 3), r(3), away(2, 1), value=0.5),
    S(NC(r(3, 2)), r(3, 2), away(3, 2), value=-1))
binary("maximum")
binary("minimum")
add("lerp", S(r(2, 3), r(2, 3), 0.3), S(r(2, 3), r(3), r(2, 3)), S(r(3), r(2, 3), r()),
    S(NC(r(2, 2)), r(2, 2), 0.75))
add("clamp", S(r(2, 3), -0.5, 0.5), S(r(2, 3), min=-0.2), S(r(2, 3), max=0.1), S(r(2, 3), r(3) - 0.5, r(3) + 0.5),
    S(r(2, 3), np.array([1.0, -1.0, 0.2]), np.array([0.5, 1.0, -0.3])),       # min > max in places
    S(ints(4), 0, 2), S(NC(r(3, 2)), -1.0), S(r(), 0.0, 1.0))
add("where", S(bools(2, 3), r(2, 3), r(2, 3)), S(bools(3), r(2, 3), 0.0), S(bools(2, 1), r(1, 3), r(2, 3)),
    S(bools(3), ints(3), ints(3)), S(np.array(True), r(2), r()))
add("masked_fill", S(r(2, 3), bools(2, 3), 1.5), S(r(2, 3), bools(3), -2.0), S(r(2, 3), bools(2, 3), r()),
    S(ints(3), bools(3), 7), S(NC(r(2, 2)), bools(2, 2), 0.0))

for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    binary(_n, lhs=lambda *s: np.round(r(*s)), rhs=lambda *s: np.round(r(*s)), scalar=0.0)
for _n in ("logical_and", "logical_or", "logical_xor"):
    add(_n, S(bools(2, 3), bools(2, 3)), S(bools(2, 3), bools(3)), S(r(3), bools(3)), S(ints(3), 0))
add("logical_not", S(bools(2, 3)), S(r(3)), S(ints(3)))
_special = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
for _n in ("isnan", "isinf", "isfinite", "signbit"):
    add(_n, S(_special), S(ints(3)), S(r(2, 2)))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    add(_n, S(ints(2, 3), ints(2, 3)), S(ints(2, 3), ints(3)), S(bools(3), bools(3)), S(ints(3), 6))
add("bitwise_not", S(ints(2, 3)), S(bools(3)))

# -- reductions
add("sum", S(r(2, 3)), S(r(2, 3), 1), S(r(2, 3, 4), (0, 2)), S(r(2, 3), -1, True), S(r()),
    S(ints(2, 3)), S(bools(4)), S(NC(r(3, 2)), 0), S(r(2, 3), dtype=dynjit.float32), S(r(0, 3), 0))
add("sum_to_size", S(r(2, 3), (1, 3)), S(r(2, 3), (3,)), S(r(4, 2, 3), (2, 1)), S(r(2, 3), (2, 3)))
add("mean", S(r(2, 3)), S(r(2, 3), 0), S(r(2, 3, 4), (-1, 0), True), S(r()), S(NC(r(3, 2)), 1),
    S(ints(3), dtype=dynjit.float64), S(r(0, 3), 0), S(r(4).astype(np.float16)), S(r(3), dtype=dynjit.float32))
add("prod", S(r(2, 3)), S(r(2, 3), 1), S(r(2, 3), -1, True), S(np.array([[2.0, 0.0, 3.0], [1.5, 0.5, -1.0]]), 1),
    S(np.array([0.0, 0.0, 2.0])), S(r()), S(ints(4, low=1, high=3)))
for _n in ("amax", "amin"):
    add(_n, S(distinct(2, 3)), S(distinct(2, 3), 1), S(distinct(2, 3, 2), (0, 2), True),
        S(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.5]]), 1), S(r()), S(ints(4)))
for _n in ("max", "min"):
    add(_n, S(distinct(2, 3)), S(r()), S(np.array([1.0, 4.0, 4.0, -4.0, -4.0])), S(ints(5)))
for _n in ("max_dim", "min_dim"):
    add(_n, S(distinct(2, 3), 1), S(distinct(2, 3), 0, True), S(distinct(3, 2), -1), S(r(), 0), S(ints(2, 3), 1),
        S(NC(distinct(3, 2)), 1))
_TIES = "the gradient is shared among tied values, which finite differences do not see"
_NAN = "a NaN result has no finite-difference derivative"
for _n in ("median", "nanmedian"):
    _with_nan = S(np.array([np.nan, 1.0, 2.0]))
    add(_n, S(distinct(2, 3)), S(np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])).not_differentiable_here(_TIES),
        _with_nan if _n == "nanmedian" else _with_nan.not_differentiable_here(_NAN),
        S(np.array([np.nan, np.nan])).not_differentiable_here(_NAN), S(r()), S(ints(4)))
for _n in ("median_dim", "nanmedian_dim"):
    _with_nan = S(np.array([[np.nan, 1.0, 3.0], [2.0, 0.5, 1.0]]), 1)
    add(_n, S(distinct(2, 4), 1), S(distinct(3, 2), 0, True),
        _with_nan if _n == "nanmedian_dim" else _with_nan.not_differentiable_here(_NAN),
        S(r(), 0), S(ints(2, 3), -1), S(NC(distinct(3, 2)), 1))
_nan_row = np.array([[np.nan, 1.0, -1.0, 1.0]])
for _n in ("sort", "argsort"):
    add(_n, S(distinct(2, 4)), S(distinct(3, 2), 0), S(distinct(2, 3), -1, True), S(r(), 0),
        S(ints(2, 5, low=0, high=3), 1), S(ints(6, low=0, high=3), 0, True),
        S(_nan_row, 1).not_differentiable_here(_TIES), S(_nan_row, 1, descending=True).not_differentiable_here(_TIES),
        S(NC(distinct(3, 2)), 0))
add("topk", S(distinct(2, 5), 2), S(distinct(4, 3), 3, 0), S(distinct(5), 2, largest=False), S(r(), 1),
    S(ints(6, low=0, high=3), 3), S(distinct(3, 3), 0, 1), S(NC(distinct(2, 4)), 2, 0))
for _n in ("argmax", "argmin"):
    add(_n, S(distinct(2, 3)), S(distinct(2, 3), 1), S(distinct(2, 3), 0, True), S(distinct(2, 3), keepdim=True),
        S(r(), 0), S(ints(2, 3), -1))
for _n in ("var", "std", "var_mean"):
    add(_n, S(r(2, 3)), S(r(2, 3), 1), S(r(2, 3, 2), (0, 2), 0, True), S(r(4), correction=0),
        S(NC(r(3, 4)), 0))
add("logsumexp", S(r(2, 3), 1), S(r(2, 3), (0, 1)), S(r(2, 3), -1, True), S(r(), 0), S(ints(3), 0))
add("norm", S(r(2, 3)), S(r(2, 3), 1), S(r(2, 3), 2, 1, True), S(distinct(2, 3), float("inf"), 1),
    S(r(2, 3), 3, -1), S(away(2, 3), 1, 0), S(r(3), 0))
for _n in ("all", "any"):
    add(_n, S(bools(2, 3)), S(bools(2, 3), 1), S(bools(2, 3), 0, True), S(r(3)), S(ints(2, 2), 1),
        S(np.array(True)))
add("cumsum", S(r(2, 3), 1), S(r(2, 3), 0), S(r(2, 3), -1), S(r(), 0), S(ints(4), 0),
    S(r(3), 0, dtype=dynjit.float32), S(NC(r(3, 2)), 1))
add("cumprod", S(r(2, 3), 1), S(away(2, 3), 0), S(away(4), -1), S(r(), 0), S(ints(4, low=1, high=3), 0),
    S(np.array([[2.0, 0.0, 3.0, 0.0], [1.5, 0.5, -1.0, 2.0]]), 1), S(np.array([0.0, 2.0, 0.0]), 0))
add("value_selecting_backward", S(r(2), np.array([1, 0]), (2, 3), 1, False),
    S(r(1, 3), np.array([[0, 1, 1]]), (2, 3), 0, True), S(r(), np.array(0), (), 0, False))

# -- views and shape ops
add("view", S(r(2, 3), (3, 2)), S(r(2, 3), (-1,)), S(r(6), (2, 1, 3)), S(r(), (1,)), S(r(1), ()))
add("reshape", S(r(2, 3), (3, 2)), S(NC(r(3, 2)), (-1,)), S(r(2, 3, 2), (6, -1)), S(r(), (1, 1)))
add("t", S(r(2, 3)), S(r(3)), S(r()))
add("transpose", S(r(2, 3), 0, 1), S(r(2, 3, 4), -1, 0), S(r(2, 3), 1, 1), S(r(), 0, -1))
add("permute", S(r(2, 3, 4), (2, 0, 1)), S(r(2, 3), (-1, 0)), S(r(), ()))
add("unsqueeze", S(r(2, 3), 0), S(r(2, 3), -1), S(r(2, 3), 1), S(r(), 0))
add("squeeze", S(r(2, 1, 3, 1)), S(r(2, 1, 3), 1), S(r(2, 1, 3), 0), S(r(1, 1), (0, 1)), S(r(), 0))
add("expand", S(r(3, 1), (3, 4)), S(r(3), (2, 3)), S(r(1, 3), (-1, 3)), S(r(), (2, 2)), S(r(2, 1), (2, 2, 3)))
add("narrow", S(r(4, 3), 0, 1, 2), S(r(4, 3), -1, 0, 2), S(r(4, 3), 0, -3, 2), S(NC(r(3, 4)), 1, 1, 2))
add("select", S(r(3, 4), 0, 1), S(r(3, 4), 1, -1), S(r(2, 3, 4), -2, 2), S(r(3), 0, 2))
add("getitem", S(r(4, 3), (slice(1, 3),)), S(r(4, 3), (1,)), S(r(4, 3), (slice(None, None, 2), -1)),
    S(r(2, 3, 4), (Ellipsis, 1)), S(r(2, 3), (None, slice(None), 0)), S(r(3), (slice(5, 8),)),
    S(r(), (None,)))
add("index", S(r(4, 3), [np.array([0, 2, 2])]), S(r(4, 3), [np.array([3, 0]), np.array([1, 2])]),
    S(r(4, 3), [slice(None), np.array([2, 0])]), S(r(3, 2), [np.array([True, False, True])]),
    S(r(4, 3), [np.array([[0, 1], [3, 3]])]))
add("index_backward", S(r(3, 3), (4, 3), [np.array([0, 2, 2])], True), S(r(3), (4, 3), (1,), False),
    S(r(2, 2), (3, 2), [np.array([True, False, True])], False))
add("index_put", S(r(4, 3), [np.array([0, 2])], r(2, 3)), S(r(4, 3), [np.array([0, 2, 0])], r(3, 3), True),
    S(r(4, 3), [np.array([1, 3]), np.array([0, 2])], r(2)), S(r(4, 3), [np.array([0, 1])], 0.5),
    S(r(3, 2), [np.array([True, False, True])], r(2)))
add("split_with_sizes", S(r(5, 2), [2, 3]), S(r(2, 5), [1, 1, 3], 1), S(r(2, 4), [4, 0], -1))
add("unbind", S(r(3, 2)), S(r(3, 2), 1), S(r(2, 3, 2), -1), S(NC(r(2, 3)), 0))
add("cat", S([r(2, 3), r(1, 3)]), S([r(2, 3), r(2, 1)], 1), S([r(2), r(3), r(1)]), S([r(2, 2), r(0), r(1, 2)]),
    S([r(2, 2), ints(1, 2)], -2), S([NC(r(2, 2)), r(2, 2)], 1))
add("stack", S([r(2, 3), r(2, 3)]), S([r(2), r(2), r(2)], 1), S([r(2, 3), r(2, 3)], -1), S([r(), r()]),
    S([ints(2), r(2)]))
add("clone", S(r(2, 3)), S(NC(r(3, 2))), S(r()), S(ints(3)))
add("to_dtype", S(r(2, 3), dynjit.float32), S(ints(3), dynjit.float64), S(r(3) * 3, dynjit.int64),
    S(r(2), dynjit.float64), S(bools(3), dynjit.float64))
add("contiguous_copy", S(NC(r(3, 2))), S(r(2, 3)), S(r()))
add("flip", S(r(2, 3), (0,)), S(r(2, 3), (0, 1)), S(r(2, 3, 2), (-1,)), S(r(), ()))
add("roll", S(r(5), 2), S(r(2, 3), 1, 1), S(r(2, 3), (1, -1), (0, 1)), S(r(2, 3), -4))
add("repeat", S(r(2, 3), (2, 1)), S(r(3), (2, 2)), S(r(), (3,)), S(r(2, 1), (1, 1, 2)))
for _n in ("tril", "triu"):
    add(_n, S(r(3, 3)), S(r(3, 4), 1), S(r(2, 3, 3), -1), S(NC(r(4, 3))))
add("gather", S(r(3, 4), 1, np.array([[0, 3], [1, 1], [2, 0]])), S(r(3, 4), 0, np.array([[2, 0, 1, 1]])),
    S(r(4), 0, np.array([3, 0, 0])), S(r(3, 4), -1, np.array([[1], [2]])))
add("scatter_add", S(r(3, 4), 1, np.array([[0, 3], [1, 1], [2, 0]]), r(3, 2)),
    S(r(3, 4), 0, np.array([[2, 0, 1, 1]]), r(2, 4)), S(r(4), 0, np.array([3, 0, 0]), r(3)))
add("scatter", S(r(3, 4), 1, np.array([[0, 3], [1, 2], [2, 0]]), r(3, 2)),
    S(r(3, 4), 0, np.array([[2, 0, 1, 1]]), r(1, 4)), S(r(4), 0, np.array([3, 0]), 1.5))
for _red in ("sum", "prod", "mean", "amax", "amin"):
    add("scatter_reduce", S(distinct(3, 4), 0, np.array([[0, 1, 0, 2], [2, 2, 0, 1]]), distinct(2, 4), _red),
        S(distinct(3, 4), 1, np.array([[3, 3], [0, 1], [1, 1]]), distinct(3, 4), _red, include_self=False),
        S(distinct(4), 0, np.array([3, 0, 0]), distinct(3), _red))
for _red in ("prod", "mean", "amax", "amin"):
    add("index_reduce", S(distinct(4, 3), 0, np.array([0, 2, 0, 3]), distinct(4, 3), _red),
        S(distinct(3, 4), 1, np.array([3, 3, 1]), distinct(3, 3), _red, include_self=False))
add("scatter_reduce", S(ints(3, 4), 0, np.array([[0, 1, 0, 2]]), ints(1, 4), "mean"))
add("index_add", S(r(4, 3), 0, np.array([0, 3, 0, 1, 3]), r(5, 3)), S(r(3, 4), 1, np.array([2, 2]), r(3, 2), alpha=-1.5),
    S(r(4), 0, np.array([1]), r(1)), S(ints(3, 2), 0, np.array([2, 0]), ints(2, 2)))
add("unfold", S(r(3, 7), 1, 3, 1), S(r(3, 7), 1, 2, 3), S(r(4, 2), 0, 2, 1), S(NC(r(3, 5)), -1, 5, 2), S(r(), 0, 1, 1),
    S(ints(6), 0, 3, 2))
add("unfold_backward", S(r(3, 5, 3), (3, 7), 1, 3, 1), S(r(3, 2, 2), (3, 7), 1, 2, 3), S(r(3, 2, 2), (4, 2), 0, 2, 1))
add("check_values", S(r(2, 3), bools(2, 3) | True, "unused"), S(r(), np.array(True), "unused", True))
add("bincount", S(np.array([0, 2, 2, 5])), S(np.array([1, 1]), minlength=4), S(np.array([0, 3, 3]), weights=r(3)),
    S(np.array([], dtype=np.int64)))
add("nextafter", S(r(2, 3), r(2, 3) + 3.0), S(r(3), r(2, 3)), S(np.array([0.0, 1.0, -1.0]), np.array([1.0, 1.0, -2.0])),
    S(r(2, 2).astype(np.float32), r(2, 2)).not_differentiable_here("a float32 operand"), S(r(2, 3), ints(2, 3)))
add("to_memory_format", S(r(2, 3, 4, 5), _cl), S(NC(r(2, 3)), _cf), S(r(1, 2, 3, 2, 2), _cl3), S(NC(r(3, 4)), _pf),
    S(ints(2, 2, 2, 2), _cl))
add("empty_strided", S((2, 2), (4, 2)), S((2, 3), (1, 2)), S((0, 3), (3, 1)), S((3,), (0,)))
for _n in ("igamma", "igammac"):
    # (a float32 `input`: PyTorch has no forward derivative in it, so it carries no tangent in the sweeps)
    add(_n, S(C(pos(2, 3).astype(np.float32)), pos(2, 3)), S(C((pos(3) * 3).astype(np.float32)), pos(2, 3) * 2),
        S(C(np.array([0.0, -1.0, 1.0, 2.0])), np.array([1.0, 1.0, 0.0, np.inf])).not_differentiable_here(
            "the domain's edges"))
add("igamma_density", S(C(pos(2, 3)), pos(2, 3)), S(C(pos(3) + 1), pos(2, 3)))
add("symmetric_eigh", S(distinct(4, 4)), S(distinct(2, 3, 3)), S(NC(distinct(3, 3))))


# torch.linalg's decompositions and solvers (dynjit/ops/linalg_decomp.py, linalg_solve.py). eigh and
# cholesky read one triangle and give PyTorch's symmetric gradient, so finite differences of single
# entries apply only to 1x1 inputs; tests/linalg gradchecks them on symmetric inputs.
def _sym(*shape):
    x = r(*shape)
    return x + np.swapaxes(x, -1, -2)


def _spd(*shape):
    x = r(*shape)
    return x @ np.swapaxes(x, -1, -2) + 3 * np.eye(shape[-1])


def _well_conditioned(*shape):
    return r(*shape) + 3 * np.eye(shape[-1])


_ONE_TRIANGLE = "reads one triangle; gradchecked on symmetric inputs in tests/linalg"
add("linalg_svd", S(r(4, 3), False), S(r(3, 4), False), S(r(2, 3, 3)), S(NC(r(3, 3)), False))
add("linalg_eigh", S(pos(1, 1)), S(_sym(4, 4)).not_differentiable_here(_ONE_TRIANGLE),
    S(_sym(2, 3, 3), "U").not_differentiable_here(_ONE_TRIANGLE))
# Differentiable ops that no sample here can gradcheck by finite differences, and where they are
# gradchecked instead (the gradcheck and forward-AD sweeps leave them out).
GRADCHECKED_ELSEWHERE = {
    "linalg_eig": "the raw eigenvectors carry an arbitrary complex phase (PyTorch refuses a loss that depends on "
                  "it): tests/linalg/test_decompositions.py gradchecks eigenvalues and |eigenvectors|"}
add("linalg_eig", S(C(r(3, 3))), S(C(r(2, 3, 3))))
add("linalg_qr", S(r(4, 3)), S(r(3, 4)), S(r(2, 3, 3), "complete"),
    S(C(r(4, 3)), "r"))      # (mode='r' is not differentiable: no Q, as in PyTorch)
add("linalg_cholesky_ex", S(pos(1, 1)), S(_spd(3, 3)).not_differentiable_here(_ONE_TRIANGLE),
    S(_spd(2, 3, 3), True).not_differentiable_here(_ONE_TRIANGLE))
add("linalg_inv_ex", S(_well_conditioned(3, 3)), S(_well_conditioned(2, 3, 3)), S(NC(_well_conditioned(3, 3))))
add("linalg_solve", S(_well_conditioned(3, 3), r(3, 2)), S(_well_conditioned(2, 3, 3), r(3, 1)))
add("linalg_solve_triangular", S(_well_conditioned(3, 3), r(3, 2), True),
    S(_well_conditioned(2, 3, 3), r(2, 3, 3), False, False, True))
add("linalg_det", S(r(3, 3)), S(r(2, 4, 4)), S(NC(r(3, 3))))
add("linalg_slogdet", S(r(3, 3)), S(r(2, 3, 3)))
add("linalg_pinv", S(r(4, 3)), S(r(3, 4)), S(r(2, 3, 3)))
add("linalg_matrix_exp", S(r(3, 3)), S(r(2, 3, 3) * 0.5))
add("linalg_lu", S(r(3, 3)), S(r(2, 4, 4)), S(r(3, 5)), S(r(5, 3)), S(NC(r(3, 3))))
add("lu_pivots_to_permutation", S(np.array([2, 3, 3], dtype=np.int32), 3, dynjit.float64),
    S(np.array([[1, 2], [2, 2]], dtype=np.int32), 3, dynjit.float32))
add("as_strided", S(r(6), (2, 2), (1, 2), 1), S(r(3, 4), (3, 3), (4, 1)), S(r(3, 4), (2, 3), (1, 2), 0),
    S(r(5), (0, 2), (1, 1), 7))
add("delayed_error_if", S(r(2, 3), bools(2, 3) & False, "unused"))
add("index_select", S(r(4, 3), 0, np.array([0, 2, 2])), S(r(4, 3), 1, np.array([2])), S(r(4, 3), -1, np.array([1, 0])),
    S(r(3), 0, np.array(1)))
add("nonzero", S(np.array([[0.0, 1.5], [2.0, 0.0]])), S(ints(4, low=0, high=2)), S(bools(2, 3)), S(np.array(0.0)),
    S(np.array(3)))
add("masked_select", S(r(2, 3), bools(2, 3)), S(r(2, 3), bools(3)), S(r(3), bools(2, 3)), S(NC(r(2, 2)), bools(2, 2)),
    S(ints(3), bools(3)))
add("isin", S(ints(2, 3), ints(4)), S(r(3), np.array([0.5])), S(ints(4), ints(2), True), S(ints(), ints(3)))
add("one_hot", S(np.array([0, 2, 1])), S(np.array([[1, 0], [3, 2]]), 5), S(np.array(2), 3))
add("copy", S(r(2, 3), r(2, 3)), S(r(2, 3), r(3)), S(r(2, 3), ints(2, 3)), S(r(2, 2), r()), S(NC(r(2, 2)), r(2, 2)))
add("fill", S(r(2, 3), 1.5), S(r(2, 3), r()), S(ints(3), 4), S(r(), -1.0))
add("zero", S(r(2, 3)), S(ints(3)), S(r()))
add("diagonal", S(r(3, 3)), S(r(3, 4), 1), S(r(4, 3), -1), S(r(2, 3, 3), 0, 1, 2), S(r(3, 2, 3), 0, -1, 0))
add("diagonal_backward", S(r(3), (3, 3), 0, 0, 1), S(r(2), (3, 3), 1, 0, 1), S(r(2, 3), (2, 3, 3), 0, 1, 2))

# -- matrix products
add("matmul", S(r(2, 3), r(3, 4)), S(r(3), r(3)), S(r(3), r(3, 2)), S(r(2, 3), r(3)), S(r(2, 2, 3), r(3, 4)),
    S(r(2, 1, 2, 3), r(3, 3, 2)), S(NC(r(3, 2)), r(2, 3)), S(ints(2, 2), ints(2, 2)))
add("mm", S(r(2, 3), r(3, 4)), S(NC(r(3, 2)), NC(r(2, 4))), S(ints(2, 2), ints(2, 3)))
add("mv", S(r(2, 3), r(3)), S(NC(r(3, 2)), r(2)), S(r(2, 3), NC(r(3))), S(ints(2, 2), ints(2)))
add("bmm", S(r(2, 2, 3), r(2, 3, 1)), S(NC(r(2, 2, 3)), r(2, 3, 2)))
add("linear", S(r(2, 3), r(4, 3)), S(r(2, 3), r(4, 3), r(4)), S(r(3), r(2, 3), r(2)), S(r(2, 2, 3), r(4, 3), r()))
add("addmm", S(r(2, 4), r(2, 3), r(3, 4)), S(r(4), r(2, 3), r(3, 4), beta=0.5, alpha=2), S(r(), r(2, 3), r(3, 2)))
add("dot", S(r(3), r(3)), S(ints(3), ints(3)), S(NC(r(3)), r(3)))
add("outer", S(r(3), r(2)), S(ints(2), r(3)), S(NC(r(2)), r(2)), S(ints(2), r(3).astype(np.float16)))
add("einsum", S("ij,jk->ik", [r(2, 3), r(3, 4)]), S("bij,bjk->bik", [r(2, 2, 3), r(2, 3, 2)]),
    S("i,i->", [r(3), r(3)]), S("ij,jk", [r(2, 3), r(3, 2)]), S("ij->j", [r(2, 3)]), S("i,j->ij", [r(2), r(3)]),
    S("i,j->ij", [ints(2), r(3).astype(np.float16)]), S("...ij,jk->...ik", [r(2, 2, 3), r(3, 2)]),
    S("ii->i", [r(3, 3)]), S("ii", [r(3, 3)]), S("bii,bj->bij", [r(2, 2, 2), r(2, 3)]), S("i...->...", [r(2, 3)]),
    S("ij,j", [r(2, 3), r(3)]), S("ijk->", [r(2, 1, 2)]))

# -- neural-network ops
for _n in ("softmax", "log_softmax"):
    add(_n, S(r(2, 3), 1), S(r(2, 3), 0), S(r(2, 3, 2), -1), S(r(), 0), S(NC(r(3, 2)), 1), S(ints(3), 0))
add("nll_loss", S(r(3, 4), np.array([0, 3, 1])), S(r(3, 4), np.array([0, 3, 1]), reduction="sum"),
    S(r(3, 4), np.array([0, 3, 1]), reduction="none"), S(r(4), np.array(2)),
    S(r(3, 4), np.array([2, -100, 1]), C(pos(4))), S(r(3, 4), np.array([2, 1, 1]), C(pos(4)), "none", 1))
add("native_dropout", S(r(4, 5), 0.3, True), S(r(3), 0.5, False), S(r(2, 2), 0.0, True), S(r(3), 1.0, True))
for _nd, _n in ((1, "upsample_nearest1d"), (2, "upsample_nearest2d"), (3, "upsample_nearest3d")):
    _sp = (3, 2, 2)[:_nd]
    add(_n, S(r(2, 2, *_sp), tuple(2 * d for d in _sp)), S(r(1, 2, *_sp), (5, 3, 1)[:_nd]),
        S(NC(r(2, 1, *_sp)), (3, 1, 4)[:_nd], (1.7, 0.6, 2.0)[:_nd]), S(r(1, 1, *_sp), (1, 1, 1)[:_nd], None))
    add(_n + "_backward", S(r(2, 2, *(2 * d for d in _sp)), tuple(2 * d for d in _sp), (2, 2) + _sp),
        S(r(1, 2, *(5, 3, 1)[:_nd]), (5, 3, 1)[:_nd], (1, 2) + _sp),
        S(r(2, 1, *(3, 1, 4)[:_nd]), (3, 1, 4)[:_nd], (2, 1) + _sp, (1.7, 0.6, 2.0)[:_nd]))
for _nd, _n in ((1, "upsample_linear1d"), (2, "upsample_bilinear2d"), (3, "upsample_trilinear3d")):
    _sp = (3, 2, 2)[:_nd]
    add(_n, S(r(2, 2, *_sp), tuple(2 * d for d in _sp), True), S(r(1, 2, *_sp), (5, 3, 1)[:_nd], False),
        S(NC(r(2, 1, *_sp)), (4, 1, 3)[:_nd], False, (1.7, 0.6, 1.5)[:_nd]),
        S(r(1, 1, *_sp), (1, 3, 1)[:_nd], True, (0.5, 1.5, 0.5)[:_nd]))
    add(_n + "_backward", S(r(2, 2, *(2 * d for d in _sp)), tuple(2 * d for d in _sp), (2, 2) + _sp, True),
        S(r(1, 2, *(5, 3, 1)[:_nd]), (5, 3, 1)[:_nd], (1, 2) + _sp, False),
        S(r(2, 1, *(4, 1, 3)[:_nd]), (4, 1, 3)[:_nd], (2, 1) + _sp, False, (1.7, 0.6, 1.5)[:_nd]))
# convolution and pooling (dynjit/ops/conv.py): (input, weight, bias, stride, padding, dilation, groups)
add("convolution", S(r(2, 3, 5), r(4, 3, 2), r(4), (1,), (0,), (1,), 1),
    S(r(1, 4, 5, 4), r(4, 2, 2, 3), None, (2, 1), (1, 1), (1, 2), 2),
    S(NC(r(2, 2, 4, 3)), r(3, 2, 3, 1), r(3), (1, 2), (1, 0), (1, 1), 1),
    S(r(1, 2, 3, 3, 2), r(2, 1, 2, 2, 1), r(2), (1, 1, 1), (0, 1, 0), (1, 1, 1), 2))
add("convolution_backward_input", S(r(2, 4, 4), r(4, 3, 2), (2, 3, 5), (1,), (0,), (1,), 1),
    S(r(1, 4, 3, 2), r(4, 2, 2, 3), (1, 4, 5, 4), (2, 1), (1, 1), (1, 2), 2),
    S(r(2, 2, 3, 3), r(2, 1, 3, 2), (2, 1, 6, 4), (2, 1), (1, 0), (1, 1), 1))          # output_padding 1
add("convolution_backward_weight", S(r(2, 3, 5), r(2, 4, 4), (4, 3, 2), (1,), (0,), (1,), 1),
    S(r(1, 4, 5, 4), r(1, 4, 3, 2), (4, 2, 2, 3), (2, 1), (1, 1), (1, 2), 2),
    S(r(2, 1, 6, 4), r(2, 2, 3, 3), (2, 1, 3, 2), (2, 1), (1, 0), (1, 1), 1))
# (input, kernel_size, stride, padding, dilation, ceil_mode); distinct values keep the argmax put
add("max_pool", S(distinct(2, 2, 6), (2,), (2,), (0,), (1,), False),
    S(distinct(1, 2, 5, 6), (3, 2), (2, 2), (1, 0), (1, 2), True),
    S(NC(distinct(2, 1, 4, 4)), (2, 2), (1, 1), (1, 1), (1, 1), False), S(ints(1, 2, 4), (2,), (1,), (0,), (1,), False))
add("max_pool_backward", S(r(2, 2, 3), np.array([[[1, 2, 5], [0, 3, 4]], [[1, 1, 5], [0, 2, 2]]]), (2, 2, 6)),
    S(r(1, 1, 2, 2), np.array([[[[0, 3], [5, 5]]]]), (1, 1, 3, 3)))
add("adaptive_max_pool", S(distinct(2, 2, 7), (3,)), S(distinct(1, 2, 5, 4), (2, 3)), S(NC(distinct(1, 1, 3, 3)), (4, 1)))
# (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
add("avg_pool", S(r(2, 2, 6), (3,), (2,), (1,), True, True), S(r(1, 2, 5, 6), (3, 2), (2, 3), (1, 1), False, False),
    S(NC(r(1, 1, 4, 5)), (2, 2), (1, 2), (0, 1), True, False, 3), S(ints(1, 2, 6), (2,), (2,), (0,), False, True))
add("avg_pool_backward", S(r(2, 2, 4), (2, 2, 6), (3,), (2,), (1,), True, True),
    S(r(1, 2, 3, 3), (1, 2, 5, 6), (3, 2), (2, 3), (1, 1), False, False),
    S(r(1, 1, 3, 3), (1, 1, 4, 5), (2, 2), (1, 2), (0, 1), True, False, 3))
add("adaptive_avg_pool", S(r(2, 2, 7), (3,)), S(r(1, 2, 5, 4), (2, 3)), S(NC(r(1, 1, 3, 3)), (4, 1)))
add("adaptive_avg_pool_backward", S(r(2, 2, 3), (2, 2, 7)), S(r(1, 2, 2, 3), (1, 2, 5, 4)), S(r(1, 1, 4, 1), (1, 1, 3, 3)))
# max_unpool(input, indices, output_size): distinct indices per (N, C) plane, so every input
# value lands somewhere; with a repeated index the last write wins and the overwritten
# values have no effect (finite differences see 0 where the gather derivative passes grad).
def _unpool_indices(n, c, count, plane):
    return np.stack([_rng.permutation(plane)[:count] for _ in range(n * c)]).reshape(n, c, count)


add("max_unpool", S(r(2, 2, 3), _unpool_indices(2, 2, 3, 7), (7,)),
    S(r(1, 2, 2, 3), _unpool_indices(1, 2, 6, 12).reshape(1, 2, 2, 3), (3, 4)),
    S(NC(r(2, 1, 3, 2)), _unpool_indices(2, 1, 6, 6).reshape(2, 1, 2, 3).swapaxes(-1, -2).copy(), (2, 3)),
    S(r(1, 1, 2, 1, 2), _unpool_indices(1, 1, 4, 18).reshape(1, 1, 2, 1, 2), (2, 3, 3)),
    S(r(1, 1, 3), np.array([[[4, 1, 4]]]), (5,)).not_differentiable_here(
        "a repeated index keeps the last value: the overwritten one has no effect, yet gets the gathered gradient"))
# fractional_max_pool(input, kernel_size, output_size, random_samples): fixed samples (one per
# batch, channel and spatial dim, in [0, 1), the input's dtype) make it deterministic; C(...)
# keeps them out of the gradient checks (they only choose the windows)
add("fractional_max_pool", S(distinct(2, 2, 7, 9), (2, 2), (4, 5), C(_rng.uniform(0, 1, (2, 2, 2)))),
    S(distinct(1, 2, 10, 6), (3, 2), (3, 4), C(_rng.uniform(0, 1, (3, 2, 2)))),           # more samples than batch
    S(NC(distinct(1, 1, 5, 5)), (2, 2), (1, 4), C(_rng.uniform(0, 1, (1, 1, 2)))),
    S(distinct(1, 2, 5, 6, 4), (2, 2, 2), (3, 4, 2), C(_rng.uniform(0, 1, (1, 2, 3)))),
    S(distinct(1, 2, 7, 9).astype(np.float32), (2, 2), (4, 5), C(_rng.uniform(0, 1, (1, 2, 2)).astype(np.float32))))
# im2col(input, kernel_size, dilation, padding, stride); col2im(input, output_size, kernel_size, ...)
add("im2col", S(r(2, 2, 4, 5), (2, 2), (1, 1), (0, 0), (1, 1)), S(NC(r(1, 2, 5, 4)), (2, 3), (1, 2), (1, 1), (2, 1)))
add("col2im", S(r(2, 8, 12), (4, 5), (2, 2), (1, 1), (0, 0), (1, 1)),
    S(r(1, 12, 6), (5, 4), (2, 3), (1, 2), (1, 1), (2, 1)))

# -- factories
for _n in ("zeros", "ones", "empty"):
    add(_n, S((2, 3)), S((3,), dynjit.int64), S((), dynjit.float64), S((0, 2)))
add("full", S((2, 3), 1.5), S((2,), 7), S((3,), True), S((2, 2), 2, dynjit.float64))
add("arange", S(5), S(1, 4), S(0, 1, 0.25), S(10, 0, -3), S(0, 5, 2, dynjit.float64), S(2.5))
add("linspace", S(0, 1, 5), S(-1.0, 1.0, 3, dynjit.float64), S(2, 2, 1), S(0, 1, 0))
add("eye", S(3), S(2, 4), S(3, None, dynjit.int64))
add("rand", S((2, 3)), S((4,), dynjit.float64))
add("randn", S((2, 3)), S((4,), dynjit.float64))
add("randint", S(0, 5, (3, 2)), S(-3, 3, (4,), dynjit.int32))
add("randperm", S(5), S(3, dynjit.float32))
add("bernoulli", S(_rng.uniform(0, 1, (3, 4))), S(r(2, 3), 0.0), S(r(2, 3), 1.0))
add("multinomial", S(_rng.uniform(0.1, 1, (3, 4)), 2), S(np.array([0.0, 2.0, 1.0]), 5, True),
    S(np.array([0.0, 2.0, 1.0]), 3))

# -- aliasing ops
add("detach", S(r(2, 3)), S(NC(r(3, 2))), S(ints(2)))
add("view_scatter", S(r(4, 3), r(2, 3), ((R["narrow"], (0, 1, 2), None),)),
    S(r(3, 4), r(3), ((R["select"], (1, 2), None),)),
    S(r(2, 3), r(2), ((R["unbind"], (1,), 1),)))

# -- complex numbers (complex128 leaves require grad; gradcheck checks them as PyTorch does)


def cplx(*shape):
    return np.asarray(r(*shape) + 1j * r(*shape))


add("real", S(cplx(2, 3)), S(r(3, 2)), S(NC(cplx(3, 2))))
add("imag", S(cplx(2, 3)), S(NC(cplx(3, 2))), S(cplx()))
add("view_as_real", S(cplx(2, 3)), S(cplx()))
add("view_as_complex", S(r(3, 2)), S(r(2, 4, 2)))
add("conj", S(cplx(2, 3)), S(r(3)), S(NC(cplx(3, 2))))
add("sgn", S(cplx(2, 3)), S(away(3)), S(NC(cplx(2, 2))))
add("angle", S(cplx(2, 3)), S(away(4)), S(NC(cplx(2, 2))))
add("complex", S(r(2, 3), r(2, 3)), S(r(3, 1), r(4)))
add("polar", S(pos(2, 3), r(2, 3)), S(pos(3), r(2, 3)))
# ops that take complex tensors besides the complex ops above (a real result for var/std/norm)
for _n, _s in (("mul", S(cplx(2, 3), cplx(2, 3))), ("exp", S(cplx(2, 3))), ("matmul", S(cplx(2, 3), cplx(3, 2))),
               ("sum", S(cplx(2, 3), 1)), ("prod", S(cplx(2, 3), 0)), ("var", S(cplx(3, 4), 1)),
               ("std", S(cplx(3, 4))), ("norm", S(cplx(3, 4))), ("abs", S(cplx(2, 3))),
               ("cat", S([cplx(2, 3), r(1, 3)]))):
    add(_n, _s)
