"""Edge values through every op the llvm backend lowers, compiled against eager, bit for bit.

The ops come from the backend's own tables: every pointwise lowering
(`op_lowerings.LOWERINGS`), every reduction (`lowering.REDUCTIONS`) and every op
the lowering decomposes (`lowering.DECOMPOSED`: softmax, log_softmax). A new
lowering is swept without touching this file; one whose arguments cannot be
guessed (its required parameters are not all tensors) needs an entry in
`NON_TENSOR` / `VARIANTS`, and the test says so.

Inputs: ±0, ±inf, NaN, the smallest and largest subnormals, the smallest normal,
the largest finite value, values around the integer casts' ranges (255.5, 2**31,
2**63 ...) and small ordinary ones, for every dtype the op accepts (float16/32/64,
int8-int64, uint8, bool), in every combination for ops of several operands. Each
input pattern is repeated 16 times plus a tail, with a pattern length prime to 16,
so every value lands in every lane of a vector and in the scalar remainder loop.
Every op also runs on empty tensors, size-1 dims, broadcast operands and Python
scalar operands (which become IR constants).

Comparison is bitwise: same dtype and shape, NaN where eager has NaN (any
payload), zeros with the same sign, everything else equal. The tolerances, each
for a stated reason:
- `ULP_TOLERANT` functions (exp, log, sin, tanh, pow ... and what is built on
  them): numpy itself is not correctly rounded there (its float32 and AVX-512
  float64 routines differ from the C library by a few units in the last place);
  results may differ by `ULPS` (4) units in the last place, but NaN, infinities
  and zeros (with their sign) must match exactly. Measured on this machine: at
  most 3 ulps (sigmoid, silu float32), 0-1 for most.
- `SCALED`: gelu(approximate="tanh") cancels (1 + tanh(u), u < 0): one ulp of
  tanh is eps * |x| in the result, eager's error as much as the backend's.
- `ULPS_OF`: softmax/log_softmax also sum their exponentials in another order;
  var/var_mean sum the mean and the squared deviations in float64 (numpy: float32).
- `ZERO_SIGN_FREE`: the sign of a zero max/min when +0.0 and -0.0 tie depends on
  numpy's element order and SIMD blocking.

Float sums and products are compared bitwise on rows of at most two non-zero
values (`_pairs_matrix`: exact whatever the accumulation order or width) and on
rows of small dyadic values, infinities and NaN (`_exact_matrix`: exact in any
order). General long float32 sums are not bitwise comparable: numpy sums float32
pairwise in float32 and the backend accumulates in float64 (more accurately);
their accuracy is checked in test_jit.py / test_kernels.py with a tolerance.

Eager, like the backend, computes in PyTorch's computation dtype (acos of int8 in
float32, int64 + float32 in float32), and softmax/log_softmax of an empty float32
input are float32 in both: results are compared with eager's as they are.
"""
import math
import warnings

import numpy as np
import pytest

import dynjit
from dynjit import _dtype as D
from dynjit.fx import make_fx
from dynjit.ops.registry import registry

from backends.llvm import compile_graph
from backends.llvm.lowering import DECOMPOSED, REDUCTIONS
from backends.llvm.op_lowerings import LOWERINGS

FLOATS = [D.float16, D.float32, D.float64]
INTS = [D.int8, D.int16, D.int32, D.int64, D.uint8]
ALL_DTYPES = FLOATS + INTS + [D.bool_]

# required parameters that are not tensors, and the values the sweep gives them
NON_TENSOR = {
    "div_mode": {"rounding_mode": ["floor", "trunc"]},
    "to_dtype": {"dtype": ALL_DTYPES},
    "masked_fill": {"value": [0, -0.0, math.nan, -math.inf, 2.5, 300, True]},
}
# tensor parameters that take a bool tensor whatever the other operands' dtypes
BOOL_PARAMS = ("condition", "mask")
# optional parameters worth sweeping (each dict is one call; {} = the defaults)
VARIANTS = {
    "add": [{}, {"alpha": 2}, {"alpha": -0.5}],
    "sub": [{}, {"alpha": 2}, {"alpha": -0.5}],
    "rsub": [{}, {"alpha": 3}],
    "addcmul": [{}, {"value": -0.5}],
    "addcdiv": [{}, {"value": 2}],
    "clamp": [{"min": -1.5, "max": 2.0}, {"min": 0}, {"max": -0.0}, {"min": 0.0, "max": 0.0},
              {"min": -math.inf}, {"max": math.nan}, {"min": 3, "max": 1}],
    "elu": [{}, {"alpha": 0.5}],
    "leaky_relu": [{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}, {"negative_slope": 2}],
    "softplus": [{}, {"beta": 2, "threshold": 5}, {"beta": 0.5}],
    "gelu": [{}, {"approximate": "tanh"}],
    "round": [{}],
}
# Python scalars given to binary ops in place of their second operand
SCALARS = [0, 1, -1, 2, 3, 7, -0.0, 0.0, 0.5, -2.5, 1e30, math.inf, -math.inf, math.nan, True, False]

# functions numpy itself computes to within a few ulps, not correctly rounded
ULP_TOLERANT = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "erf", "sigmoid", "silu", "gelu", "softplus", "logaddexp", "atan2", "pow", "elu",
    "softmax", "log_softmax", "var", "var_mean",
}
ULPS = 4
# softmax and log_softmax also sum up to 41 exponentials, in another order than numpy's
# pairwise summation (float32: in float64, more accurately): their sums may differ by a few
# ulps more
ULPS_OF = {"softmax": 16, "log_softmax": 16, "var": 16, "var_mean": 16}
# var / var_mean are decomposed into mean and the sum of squared deviations, both summed in
# float64 where numpy sums float32 pairwise in float32: a mean one ulp apart moves every
# deviation, so the variance may differ by a few ulps (measured: at most 2)
# ... and those whose formula cancels (gelu's 1 + tanh(u) for u < 0 in float32): there an
# error of one ulp in tanh is an error of about eps * |x| in the result, eager's as much as
# the backend's, so results may also differ by ULPS * eps * |x|
# (and log_softmax's x - max - log(sum), off by about eps * (|result| + log(n)))
SCALED = {
    "gelu": lambda xs, ref: np.abs(xs[0].numpy().astype(np.float64)),
    "log_softmax": lambda xs, ref: np.abs(ref.numpy().astype(np.float64)) + 8.0,
}
# max/min reductions: numpy's sign of a zero result when +0.0 and -0.0 tie depends on the
# element order and its SIMD blocking (np.max([0., -0.]) is -0.0, np.max([-0., 0.]) is 0.0);
# the backend's is IEEE's (maximum: +0.0 if there is one). Zero results may differ in sign.
ZERO_SIGN_FREE = {"amax", "amin", "max", "min"}

LANES = 16            # the widest vector the backend uses (16 x 32-bit)


# -- inputs ------------------------------------------------------------------------------------

def edge_values(dtype):
    """The edge values of a dtype, an odd number of them."""
    if dtype is D.bool_:
        return np.array([False, True, True])
    npd = dtype.np
    if dtype.is_floating_point:
        fi = np.finfo(npd)
        sub = float(fi.smallest_subnormal)
        norm = float(fi.smallest_normal)
        big = float(fi.max)
        vals = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, norm - sub, -(norm - sub), norm, -norm,
                big, -big, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 3.0, -7.25, 0.1, 20.5, 88.75, -104.5,
                300.0, -300.0, 255.5, -128.5, 65504.0, 1e10, -1e10, 2.0 ** 31, -2.0 ** 31, 2.0 ** 63, 1e-7]
        with np.errstate(over="ignore"):
            arr = np.array(vals, dtype=npd)
    else:
        info = np.iinfo(npd)
        cand = [0, 1, -1, 2, -2, 3, 7, -7, 100, 127, -128, 128, 255, 256, -129, 1000, -32768, 32767,
                int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1]
        vals = sorted({v for v in cand if info.min <= v <= info.max})
        arr = np.array(vals, dtype=npd)
    if len(arr) % 2 == 0:
        arr = arr[:-1]
    return arr


def small_edge_values(dtype):
    """A subset of edge_values (for ops of three operands), an odd number of them."""
    if dtype is D.bool_:
        return edge_values(dtype)
    npd = dtype.np
    if dtype.is_floating_point:
        fi = np.finfo(npd)
        vals = [0.0, -0.0, math.inf, -math.inf, math.nan, float(fi.smallest_subnormal), float(fi.max),
                -float(fi.max), 1.0, -1.0, 0.5, 2.5, -7.25]
        return np.array(vals, dtype=npd)
    info = np.iinfo(npd)
    vals = sorted({v for v in (0, 1, -1, 2, 7, int(info.min), int(info.max), int(info.min) + 1, 3)
                   if info.min <= v <= info.max})
    return np.array(vals[:len(vals) - 1 + len(vals) % 2], dtype=npd)


def _combinations(arrays):
    """Every combination of the arrays' values, as equal-length arrays, an odd number of them."""
    grids = np.meshgrid(*arrays, indexing="ij")
    flat = [g.reshape(-1) for g in grids]
    if len(flat[0]) % 2 == 0:
        flat = [np.concatenate([f, f[:1]]) for f in flat]
    return flat


def _lanes(pattern):
    """The pattern (odd length) 16 times and a tail: each value at every lane position."""
    n = len(pattern)
    tail = 7
    return np.concatenate([np.tile(pattern, LANES), pattern[:tail]])


def _tensor(arr, dtype):
    return dynjit.tensor(np.asarray(arr).astype(dtype.np))


# -- comparison -------------------------------------------------------------------------------

def _ulp_distance(a, b):
    """Units in the last place between same-dtype floats (finite, same sign)."""
    ity = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(ity).astype(np.int64), b.view(ity).astype(np.int64)
    return np.abs(ia - ib)


def mismatches(out, ref, ulps=0, scale=None, zero_sign_free=False):
    """Indices where `out` differs from `ref` (see the module doc), or a string for a
    dtype/shape difference. With `scale` (an array), finite results may also differ by
    `ulps` units of roundoff of `scale` (for formulas that cancel, see SCALED)."""
    o, r = out.numpy(), ref.numpy()
    if o.dtype != r.dtype:
        return f"dtype {o.dtype} != eager's {r.dtype}"
    if o.shape != r.shape:
        return f"shape {o.shape} != eager's {r.shape}"
    o, r = o.reshape(-1), r.reshape(-1)
    if o.dtype.kind != "f":
        return np.nonzero(o != r)[0]
    on, rn = np.isnan(o), np.isnan(r)
    same = (on & rn) | ((o == r) & ((np.signbit(o) == np.signbit(r)) | zero_sign_free))
    if ulps:
        close = (~on & ~rn & np.isfinite(o) & np.isfinite(r) & (o != 0) & (r != 0)
                 & (np.signbit(o) == np.signbit(r)))
        with np.errstate(invalid="ignore"):
            close &= _ulp_distance(o, r) <= ulps
        same |= close
        if scale is not None:
            x = np.broadcast_to(scale, out.shape).reshape(-1)
            eps = float(np.finfo(o.dtype).eps)
            with np.errstate(invalid="ignore", over="ignore"):
                same |= (np.isfinite(o) & np.isfinite(r)
                         & (np.abs(o.astype(np.float64) - r.astype(np.float64)) <= ulps * eps * x))
    return np.nonzero(~same)[0]


def _describe(bad, out, ref, inputs, limit=6):
    if isinstance(bad, str):
        return bad
    o, r = out.numpy().reshape(-1), ref.numpy().reshape(-1)
    lines = [f"{len(bad)} of {o.size} elements differ; first ones:"]
    for i in bad[:limit]:
        ins = []
        for x in inputs:
            xa = x.numpy().reshape(-1) if isinstance(x, dynjit.Tensor) else None
            if xa is not None and xa.size == o.size:
                ins.append(repr(xa[i]))
            elif xa is not None and xa.size == 1:
                ins.append(repr(xa[0]))
        lines.append(f"  [{i}] (lane {i % LANES}) inputs {', '.join(ins)}: llvm {o[i]!r}, eager {r[i]!r}")
    return "\n".join(lines)


# -- building the calls ------------------------------------------------------------------------

class Piece:
    """One call of the op: a name, a function of the graph's inputs, which inputs it reads."""

    def __init__(self, label, fn, reads):
        self.label, self.fn, self.reads = label, fn, reads


def _tensor_params(op):
    non_tensor = NON_TENSOR.get(op.name, {})
    return [p for p in op.params[:op.required] if p not in non_tensor]


def _non_tensor_choices(op):
    choices = NON_TENSOR.get(op.name, {})
    keys = list(choices)
    if not keys:
        return [{}]
    out = [{}]
    for k in keys:
        out = [dict(c, **{k: v}) for c in out for v in choices[k]]
    return out


def _call(op, tensors, kwargs):
    """op(...) with `tensors` ({param: value}) and `kwargs`, required parameters positionally."""
    merged = dict(kwargs, **tensors)
    args = [merged.pop(p) for p in op.params[:op.required]]
    return op(*args, **merged)


def _eager_ok(fn, inputs):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*inputs)
            if isinstance(out, dynjit.Tensor):
                out.dtype           # eager may return an array of a dtype dynjit lacks (uint64)
        return True
    except Exception:
        return False


def pointwise_case(name, dtypes):
    """(inputs, pieces) for op `name` with tensor operands of `dtypes`."""
    op = registry[name]
    tparams = _tensor_params(op)
    assert len(tparams) == len(dtypes)
    values = [edge_values(dt) for dt in dtypes]
    if len(values) >= 3:            # keep ternary products small: a subset of each
        values = [small_edge_values(dt) for dt in dtypes]
    combos = _combinations(values)
    long = [_tensor(_lanes(c), dt) for c, dt in zip(combos, dtypes)]
    empty = [_tensor(np.zeros((2, 0)), dt) for dt in dtypes]
    empty1 = [_tensor(np.zeros((0,)), dt) for dt in dtypes]
    one = [_tensor(c[:1].reshape(1, 1), dt) for c, dt in zip(combos, dtypes)]
    # broadcast: the first operand long, the others one element (loaded once, splat to lanes)
    bcast = [_tensor(c[1:2], dt) for c, dt in zip(combos, dtypes)][1:]
    inputs = long + empty + empty1 + one + bcast
    n = len(dtypes)
    groups = {"lanes": list(range(n)), "empty": list(range(n, 2 * n)), "empty1": list(range(2 * n, 3 * n)),
              "size1": list(range(3 * n, 4 * n))}
    if n > 1:
        groups["broadcast"] = [0] + list(range(4 * n, 5 * n - 1))
    pieces = []
    for nt in _non_tensor_choices(op):
        for var in VARIANTS.get(name, [{}]):
            kwargs = dict(nt, **var)
            for gname, idx in groups.items():
                def fn(*xs, idx=idx, kwargs=kwargs):
                    return _call(op, dict(zip(tparams, [xs[i] for i in idx])), kwargs)
                label = f"{name}({gname}{', ' if kwargs else ''}{', '.join(f'{k}={v}' for k, v in kwargs.items())})"
                pieces.append(Piece(label, fn, idx))
            if n == 2:
                for s in SCALARS:
                    def fn(*xs, s=s, kwargs=kwargs):
                        return _call(op, {tparams[0]: xs[0], tparams[1]: s}, kwargs)
                    pieces.append(Piece(f"{name}(lanes, {s!r}{', ' if kwargs else ''}{kwargs or ''})", fn, [0]))
    pieces = [p for p in pieces if _eager_ok(p.fn, inputs)]
    return inputs, pieces


def run_case(op, inputs, pieces):
    if not pieces:
        pytest.skip("eager rejects every call with these dtypes")
    name = op.name
    ulps = ULPS_OF.get(name, ULPS) if name in ULP_TOLERANT else 0
    scale_of = SCALED.get(name)
    zero_sign_free = name in ZERO_SIGN_FREE

    def graph(*xs):
        return tuple(p.fn(*xs) for p in pieces)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        gm = make_fx(graph)(*inputs)
        ref = gm(*inputs)
        out = compile_graph(gm, list(inputs))(*inputs)
    problems = []
    flat = []
    for p, o, r in zip(pieces, out, ref):
        if isinstance(r, tuple):        # var_mean: each result compared on its own
            flat += [(p, oi, ri) for oi, ri in zip(o, r)]
        else:
            flat.append((p, o, r))
    for p, o, r in flat:
        if not isinstance(r, dynjit.Tensor):
            if o != r:
                problems.append(f"{p.label}: {o!r} != eager's {r!r}")
            continue
        scale = scale_of([inputs[i] for i in p.reads], r) if scale_of else None
        bad = mismatches(o, r, ulps, scale, zero_sign_free)
        if isinstance(bad, str) or len(bad):
            problems.append(f"{p.label}: " + _describe(bad, o, r, [inputs[i] for i in p.reads]))
    assert not problems, "\n".join(problems)


# -- the pointwise sweep ------------------------------------------------------------------------

MIXED = [(D.float32, D.float64), (D.float64, D.float32), (D.float16, D.float32), (D.float32, D.int64),
         (D.int64, D.float32), (D.int32, D.float64), (D.uint8, D.int8), (D.int8, D.uint8), (D.bool_, D.float32),
         (D.float32, D.bool_), (D.int16, D.int32), (D.uint8, D.float32), (D.int64, D.int8), (D.bool_, D.int32)]


def _dtype_combos(op):
    """The operand dtypes to sweep an op with: every dtype for all operands alike, plus
    mixed pairs (bool for BOOL_PARAMS)."""
    tparams = _tensor_params(op)
    free = [p for p in tparams if p not in BOOL_PARAMS]

    def fill(dts):
        it = iter(dts)
        return tuple(D.bool_ if p in BOOL_PARAMS else next(it) for p in tparams)
    combos = [fill((dt,) * len(free)) for dt in ALL_DTYPES]
    if len(free) == 2:
        combos += [fill(c) for c in MIXED]
    elif len(free) == 3:
        combos += [fill(c) for c in ((D.bool_, D.float32, D.float64), (D.float32, D.int64, D.float32),
                                     (D.uint8, D.int8, D.int16))]
    return combos


def _pointwise_params():
    return [pytest.param(name, c, id=f"{name}-{'-'.join(d._short for d in c)}")
            for name in sorted(LOWERINGS) for c in _dtype_combos(registry[name])]


def test_every_lowering_is_swept():
    """Every lowered op gets at least one call that eager accepts (else it needs a recipe here)."""
    unswept = []
    for name in sorted(LOWERINGS):
        op = registry[name]
        ok = False
        for dts in _dtype_combos(op):
            _, pieces = pointwise_case(name, dts)
            ok = ok or bool(pieces)
        if not ok:
            unswept.append(name)
    assert not unswept, f"no call of {unswept} runs eagerly: give them NON_TENSOR / VARIANTS entries"


@pytest.mark.parametrize("name,dtypes", _pointwise_params())
def test_pointwise_edge_values(name, dtypes):
    inputs, pieces = pointwise_case(name, dtypes)
    run_case(registry[name], inputs, pieces)


# -- the reduction sweep -----------------------------------------------------------------------

REDUCTION_NAMES = sorted(set(REDUCTIONS) | set(DECOMPOSED))
SUM_LIKE = {"sum", "mean", "sum_to_size"}
WIDTH = 37            # row length: more than two vectors of 16 lanes and a remainder


def _pairs_matrix(dtype, background):
    """Rows of `background` (alternating-sign zeros, or ones) holding two edge values each,
    every pair of edge values once: float sums and products of such rows are exact whatever
    the order or width of the accumulation."""
    v = edge_values(dtype)
    a, b = [x.reshape(-1) for x in np.meshgrid(v, v, indexing="ij")]
    rows = len(a)
    m = np.empty((rows, WIDTH), dtype=dtype.np)
    if background == 0:
        m[:] = np.where(np.arange(WIDTH) % 2, -0.0, 0.0)
    else:
        m[:] = 1
    i = np.arange(rows)
    m[i, i % WIDTH] = a
    m[i, (i * 7 + 3) % WIDTH + (i % WIDTH == (i * 7 + 3) % WIDTH)] = b
    return m


def _exact_matrix(dtype, rng, prod):
    """Small dyadic values (exact sums and products in any order) and a few ±inf, NaN, ±0."""
    pool = [1.0, -1.0, 2.0, -2.0, 0.5, -0.5] if prod else [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.25, 3.0, 8.0]
    m = rng.choice(pool, size=(41, WIDTH))
    for r, val in ((3, math.inf), (5, -math.inf), (7, math.nan), (9, math.inf), (9, -math.inf), (11, 0.0),
                   (13, -0.0), (13, 0.0)):
        m[r, rng.integers(0, WIDTH)] = val
    m[15, :] = -0.0
    m[17, :] = 0.0
    return m.astype(dtype.np)


def _dense_matrix(dtype, rng):
    """Rows that are permutations of the edge values (every value in every lane)."""
    v = edge_values(dtype)
    reps = -(-WIDTH // len(v))
    rows = [rng.permutation(np.tile(v, reps))[:WIDTH] for _ in range(23)]
    return np.stack(rows).astype(dtype.np)


def _reduce_calls(op, x_shape, dtype):
    """(label, kwargs) calls of a reduction op on a tensor of `x_shape`."""
    nd = len(x_shape)
    if "size" in op.params:
        sizes = {tuple(x_shape), tuple(1 for _ in x_shape)}
        if nd:
            sizes |= {tuple(x_shape[:-1]) + (1,), (1,) + tuple(x_shape[1:]), tuple(x_shape[1:])}
        return [(f"size={sz}", {"size": sz}) for sz in sorted(sizes)]
    if "dim" not in op.params:
        return [("", {})]
    dims = [d for d in ([None, 0, 1, -1, (0, 1)] if nd >= 2 else [None, 0, -1] if nd == 1 else [None])]
    if "keepdim" not in op.params:        # softmax, log_softmax: one dim
        return [(f"dim={d}", {"dim": d}) for d in dims if isinstance(d, int)] or [("dim=0", {"dim": 0})]
    out = []
    for d in dims:
        for keep in (False, True):
            base = {"dim": d, "keepdim": keep}
            out.append((f"dim={d}, keepdim={keep}", base))
    if "dtype" in op.params:
        # an accumulation dtype: int64 (exact, wrapping); float64 of floats (the exact and
        # pairs matrices: exact in any order). Integer edge values summed in a float dtype
        # round differently in each order, as do products that reach both 0 and inf.
        for dt in ((D.int64, D.float64) if dtype.is_floating_point else (D.int64,)):
            out.append((f"dim={dims[-1]}, dtype={dt.name}", {"dim": dims[-1], "keepdim": False, "dtype": dt}))
            out.append((f"dim=None, dtype={dt.name}", {"dim": None, "keepdim": False, "dtype": dt}))
    return out


def reduction_case(name, dtype):
    op = registry[name]
    rng = np.random.default_rng(7)
    mats = []                           # (label, array, restrict: only row-wise calls)
    if dtype.is_floating_point and name not in ZERO_SIGN_FREE:
        prod = name == "prod"
        mats.append(("pairs", _pairs_matrix(dtype, 1 if prod else 0), True))
        mats.append(("exact", _exact_matrix(dtype, rng, prod), False))
        mats.append(("exact.T", np.ascontiguousarray(_exact_matrix(dtype, rng, prod).T), False))
    else:
        mats.append(("dense", _dense_matrix(dtype, rng), False))
        mats.append(("dense.T", np.ascontiguousarray(_dense_matrix(dtype, rng).T), False))
    one = edge_values(dtype)[:5]
    for shape in ((0, 5), (5, 0), (2, 0, 3), (1, 5), (5, 1), (), (1,)):
        n = math.prod(shape)
        mats.append((f"shape{shape}", np.resize(one, n).reshape(shape).astype(dtype.np), False))
    inputs = [_tensor(m, dtype) for _, m, _ in mats]
    pieces = []
    for i, (label, m, rowwise) in enumerate(mats):
        for clabel, kwargs in _reduce_calls(op, m.shape, dtype):
            d = kwargs.get("dim", "x")
            if rowwise and d not in (1, -1) and kwargs.get("size") != (m.shape[0], 1):
                continue

            def fn(*xs, i=i, kwargs=kwargs):
                return _call(op, {"self": xs[i]}, kwargs)
            pieces.append(Piece(f"{name}({label}, {clabel})", fn, [i]))
    pieces = [p for p in pieces if _eager_ok(p.fn, inputs)]
    return inputs, pieces


@pytest.mark.parametrize("name", REDUCTION_NAMES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d._short)
def test_reduction_edge_values(name, dtype):
    inputs, pieces = reduction_case(name, dtype)
    run_case(registry[name], inputs, pieces)


# -- float -> integer casts -------------------------------------------------------------------

@pytest.mark.parametrize("src", [D.float32, D.float64])
@pytest.mark.parametrize("dst", [D.uint8, D.int8, D.int16, D.int32, D.int64, D.bool_])
def test_float_to_int_casts_agree_with_numpy_in_every_lane(src, dst):
    """numpy's float -> integer casts for NaN and out-of-range values are the hardware's
    (on x86-64: INT_MIN of 32 or 64 bits, then the low bits); LLVM's fptosi/fptoui make
    them poison, and the vectorized loop gave saturated values in some lanes and wrapped
    ones in others, or folded a cast and its way back into nothing. Every lane, alone and
    fused with other ops, must give numpy's astype."""
    rng = np.random.default_rng(1)
    mags = 10.0 ** rng.uniform(-2, 21, 3000) * np.where(rng.random(3000) < 0.5, -1, 1)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 255.5, 256.0, -0.5, -1.0, 2.0 ** 31, -2.0 ** 31,
                2.0 ** 31 - 1, -2.0 ** 31 - 1, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 65535.9, 32768.0,
                -32769.0, 127.9, 128.0, -128.9, -129.0]
    vals = np.concatenate([mags, np.repeat(specials, 17)])
    rng.shuffle(vals)
    with np.errstate(all="ignore"):
        arr = vals.astype(src.np)
    x = dynjit.tensor(arr)
    back = D.float32 if src is D.float32 else D.float64

    def f(x):
        return x.to(dst), (x * 1.0).to(dst).to(back), (x * 2.0).to(dst), dynjit.where(x > 0, x, -x).to(dst)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        gm = make_fx(f)(x)
        outs = compile_graph(gm, [x])(x)
        a = arr
        want = [a.astype(dst.np), (a * 1.0).astype(dst.np).astype(back.np), (a * 2.0).astype(dst.np),
                np.where(a > 0, a, -a).astype(dst.np)]
    for i, (o, w) in enumerate(zip(outs, want)):
        o = o.numpy()
        bad = np.nonzero(~((o == w) | (np.isnan(o) & np.isnan(w)) if o.dtype.kind == "f" else o == w))[0]
        assert not len(bad), (f"output {i}: {len(bad)} elements differ, e.g. " + ", ".join(
            f"[{j}] lane {j % LANES}: {arr[j]!r} -> {o[j]!r}, numpy {w[j]!r}" for j in bad[:5]))


# -- empty dims ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REDUCTION_NAMES)
@pytest.mark.parametrize("shape,dim", [((0, 5), 0), ((5, 0), 1), ((0,), 0), ((2, 0, 3), 1), ((0, 5), 1)])
def test_reduction_over_an_empty_dim_gives_eagers_empty_result(name, shape, dim):
    """softmax/log_softmax over an empty dim used to raise (their decomposition took amax of
    the empty dim); every reduction gives eager's result, in eager's dtype: float32 for
    float32 input."""
    op = registry[name]
    x = dynjit.zeros(*shape)
    kwargs = {"size": (1,) * len(shape)} if "size" in op.params else {"dim": dim} if "dim" in op.params else {}
    if not _eager_ok(lambda x: _call(op, {"self": x}, kwargs), [x]):
        pytest.skip("eager raises too (amax of an empty dim)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = make_fx(lambda x: _call(op, {"self": x}, kwargs))(x)
        ref = gm(x)
        out = compile_graph(gm, [x])(x)
    for o, r in zip(out, ref) if isinstance(ref, tuple) else [(out, ref)]:      # var_mean: a tuple
        assert o.dtype == r.dtype == D.float32
        assert tuple(o.shape) == tuple(r.shape)
        np.testing.assert_array_equal(o.numpy(), r.numpy())
