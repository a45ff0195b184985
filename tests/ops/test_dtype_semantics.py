"""Eager results have PyTorch's dtypes and are computed as PyTorch computes them.

- softmax and log_softmax keep their input's dtype on empty inputs and give the default
  dtype for integers (the dtype their meta function declares).
- sum_to_size is a sum, of sum's dtype (int64 for integers and bool), as meta says.
- A pointwise op converts its tensor operands to the computation dtype (PyTorch's
  promoted dtype) before its numpy kernel runs. numpy would compute in its own promoted
  dtype and the result be converted afterwards: acos of int8 in float16, int64 + float32
  in float64, each giving other values than PyTorch's.
- Scalar arguments that are not operands (masked_fill's value, addcmul's value) are
  converted to the tensor's dtype as PyTorch converts them, not mixed in through float64.
- A fractional factor on integer tensors (add's alpha, leaky_relu's slope) is PyTorch's
  error, never a float64 computation truncated back to integers; addmm's beta and alpha
  are converted to the operands' dtype.
- Every op's result has the dtype its meta function declares, for float32, float16,
  integer and bool inputs and for empty and size-1 ones (not only the float64 samples
  that test_op_meta.py runs).
"""
import math

import numpy as np
import pytest

import dynjit
from dynjit.ops.meta import TensorMeta, DataDependentOutputError
from dynjit.ops.registry import registry, POINTWISE, FLOAT, PROMOTE, BOOL

from opinfo_samples import SAMPLES, NC, C, S, materialize

f16, f32, f64 = dynjit.float16, dynjit.float32, dynjit.float64
i8, i16, i32, i64, u8, b8 = dynjit.int8, dynjit.int16, dynjit.int32, dynjit.int64, dynjit.uint8, dynjit.bool


def same_values(a, b):
    """Same dtype, shape and values (NaN equal to NaN, zeros of the same sign)."""
    x, y = a.numpy(), b.numpy()
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype.kind != "f":
        return bool(np.array_equal(x, y))
    return bool(np.all((x == y) & (np.signbit(x) == np.signbit(y)) | (np.isnan(x) & np.isnan(y))))


# -- 1. eager's dtype is meta's, whatever the dtype and size of the inputs ---------------------

VARIANT_DTYPES = (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_)


def _transform(v, fn):
    if isinstance(v, NC):
        return NC(fn(v.arr))
    if isinstance(v, C):
        return C(fn(v.arr))
    if isinstance(v, np.ndarray):
        return fn(v)
    if isinstance(v, list):
        return [_transform(x, fn) for x in v]
    if isinstance(v, tuple) and any(isinstance(x, (np.ndarray, NC, C)) for x in v):
        return tuple(_transform(x, fn) for x in v)
    return v


def _variants(sample):
    """The sample with its float arrays as each dtype: as they are, empty (every dim 0)
    and of size 1 (every dim 1)."""
    for dt in VARIANT_DTYPES:
        forms = {
            "as": lambda a, dt=dt: a.astype(dt),
            "empty": lambda a, dt=dt: np.zeros((0,) * a.ndim, dtype=dt) if a.ndim else a.astype(dt),
            "size1": lambda a, dt=dt: np.ones((1,) * a.ndim, dtype=dt),
        }
        for form, f in forms.items():
            def g(a, f=f):
                with np.errstate(all="ignore"):
                    return f(a) if a.dtype.kind == "f" else a
            yield f"{form} {np.dtype(dt).name}", S(*_transform(list(sample.args), g),
                                                 **{k: _transform(v, g) for k, v in sample.kwargs.items()})


def _metas(v):
    if isinstance(v, dynjit.Tensor):
        return TensorMeta.of(v)
    if isinstance(v, list):
        return [_metas(x) for x in v]
    return v


def _describe(out):
    if isinstance(out, (tuple, list)):
        return [_describe(o) for o in out]
    return tuple(out.shape), out.dtype


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_eager_dtype_is_the_declared_dtype_for_every_input_dtype_and_size(name):
    """Where both run, eager's result has meta's shape and dtype (softmax of an empty float32
    tensor was float64, sum_to_size of int8 int64 while meta said int8, addmm of int8 with
    a float beta float64). Whether the two raise alike is test_op_errors.py's concern."""
    op = registry[name]
    bad = []
    for i, sample in enumerate(SAMPLES[name]):
        for label, variant in _variants(sample):
            try:
                leaves, build = materialize(variant)
                args, kwargs = build(leaves)
            except Exception:
                continue
            try:
                meta = op.meta([_metas(a) for a in args], {k: _metas(v) for k, v in kwargs.items()})
            except DataDependentOutputError:
                continue
            except Exception:
                continue
            try:
                with np.errstate(all="ignore"):
                    dynjit.manual_seed(0)
                    eager = _describe(op(*args, **kwargs))
            except Exception:
                continue
            if meta != eager:
                bad.append(f"sample {i} {sample} {label}: meta {meta}, eager {eager}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [f16, f32, f64])
@pytest.mark.parametrize("shape,dim", [((0, 5), 0), ((0, 5), 1), ((5, 0), 1), ((0,), 0)])
def test_softmax_of_an_empty_tensor_keeps_its_dtype(fn, dtype, shape, dim):
    out = getattr(dynjit.zeros(*shape, dtype=dtype), fn)(dim)
    assert out.dtype is dtype and tuple(out.shape) == shape


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_integers_is_in_the_default_dtype(fn):
    x = dynjit.tensor([1, 2, 3])
    assert getattr(x, fn)(0).dtype is f32
    old = dynjit.get_default_dtype()
    dynjit.set_default_dtype(f64)
    try:
        out = getattr(x, fn)(0)
        assert out.dtype is f64 and out.dtype is registry[fn].meta([TensorMeta.of(x), 0])[1]
    finally:
        dynjit.set_default_dtype(old)


# -- 2. pointwise ops compute in PyTorch's computation dtype ------------------------------------

def _unary_float_ops():
    return sorted(n for n, op in registry.items()
                  if op.kind == POINTWISE and op.dtype_rule == FLOAT and op.required == 1)


@pytest.mark.parametrize("name", _unary_float_ops())
@pytest.mark.parametrize("dtype", [i8, u8, b8, i16, i32, i64], ids=lambda d: d.name)
def test_unary_float_op_of_integers_computes_in_the_default_dtype(name, dtype):
    """acos of an int8 tensor is acos of its values as float32 (numpy computed int8, uint8
    and bool in float16 and int32/int64 in float64, then converted the result)."""
    op = registry[name]
    vals = [0, 1, 2, 3, 5, 7, 100, 127] if dtype is not b8 else [0, 1]
    if dtype.is_signed:
        vals += [-1, -3, -100, -128]
    x = dynjit.tensor(vals, dtype=dtype)
    with np.errstate(all="ignore"):
        out, want = op(x), op(x.to(f32))
    assert out.dtype is f32
    assert same_values(out, want), f"{name}({dtype.name}): {out.tolist()} != {want.tolist()}"


def test_acos_of_int8_is_computed_in_float32():
    out = dynjit.tensor([0], dtype=i8).acos()
    assert out.dtype is f32 and out.item() == float(np.arccos(np.float32(0)))   # not 1.5703125


def test_int64_plus_float32_is_computed_in_float32():
    out = dynjit.tensor([2 ** 24 + 1]) + dynjit.tensor([0.5])
    assert out.dtype is f32 and out.item() == 16777216.0      # not 16777218.0 (float64, rounded)


BIG = 2 ** 24 + 1           # not a float32: becomes 16777216.0 as one


def _binary_ops():
    """Pointwise ops of two tensor operands that promote (comparisons compare in the
    promoted dtype)."""
    out = []
    for n, op in sorted(registry.items()):
        if op.kind != POINTWISE or op.dtype_rule not in (PROMOTE, FLOAT, BOOL) or op.required != 2:
            continue
        if n.startswith("bitwise") or n == "where":
            continue
        out.append(n)
    return out


@pytest.mark.parametrize("name", _binary_ops())
@pytest.mark.parametrize("swap", [False, True])
def test_binary_op_of_int64_and_float32_computes_in_float32(name, swap):
    """int64 with float32 is float32 under PyTorch's promotion: the int64 operand is
    converted to float32 first (numpy computed in float64 and converted the result)."""
    op = registry[name]
    a = dynjit.tensor([BIG, BIG, -BIG, 3, 2 ** 40 + 1])
    b = dynjit.tensor([0.5, 16777216.0, -16777216.0, 1.5, 1099511627776.0])
    args = (b, a) if swap else (a, b)
    try:
        with np.errstate(all="ignore"):
            out = op(*args)
    except RuntimeError:
        pytest.skip(f"{name} rejects int64 with float32")
    conv = tuple(x.to(f32) for x in args)
    with np.errstate(all="ignore"):
        want = op(*conv)
    assert same_values(out, want), f"{name}{' swapped' if swap else ''}: {out.tolist()} != {want.tolist()}"


MIXED_CALLS = {
    "div_mode-floor": lambda a, b: dynjit.div(a, b, rounding_mode="floor"),
    "div_mode-trunc": lambda a, b: dynjit.div(a, b, rounding_mode="trunc"),
    "clamp-min-tensor": lambda a, b: a.clamp(min=b),
    "clamp-max-tensor": lambda a, b: a.clamp(max=b),
    "clamp-python-float": lambda a, b: a.clamp(min=0.5),
    "addcmul": lambda a, b: dynjit.addcmul(b, a, b, value=2),
    "addcdiv": lambda a, b: dynjit.addcdiv(a, b, b),
    "where": lambda a, b: dynjit.where(a > 4, a, b),
    "add-alpha": lambda a, b: a.add(b, alpha=3),
    "python-float": lambda a, b: a * 1.5,
}


@pytest.mark.parametrize("name", sorted(MIXED_CALLS))
def test_ops_with_more_operands_compute_in_the_promoted_dtype(name):
    """The same for ops with other arguments: the result is what it is on operands
    converted to the result dtype first."""
    a = dynjit.tensor([BIG, BIG, -BIG, 3, 2 ** 40 + 1])
    b = dynjit.tensor([0.5, 16777216.0, -16777216.0, 1.5, 1099511627776.0])
    fn = MIXED_CALLS[name]
    with np.errstate(all="ignore"):
        out = fn(a, b)
        want = fn(a.to(out.dtype) if out.dtype.is_floating_point else a, b)
    assert out.dtype is f32
    assert same_values(out, want), f"{name}: {out.tolist()} != {want.tolist()}"


def test_comparison_of_int64_and_float32_compares_in_float32():
    a, b = dynjit.tensor([BIG]), dynjit.tensor([16777216.0])
    assert (a == b).item() and not (a != b).item() and (a <= b).item() and not (a > b).item()
    assert (a == 16777216.0).item()         # a Python float makes the computation float32 too


def test_equal_compares_in_the_promoted_dtype():
    assert dynjit.equal(dynjit.tensor([BIG]), dynjit.tensor([16777216.0]))
    assert not dynjit.equal(dynjit.tensor([BIG]), dynjit.tensor([BIG - 1]))
    assert not dynjit.equal(dynjit.tensor([1, 2]), dynjit.tensor([1.0]))


def test_isin_compares_in_the_promoted_dtype():
    assert dynjit.ops.isin(dynjit.tensor([BIG]), dynjit.tensor([16777216.0])).tolist() == [True]
    assert dynjit.ops.isin(dynjit.tensor([BIG]), dynjit.tensor([BIG - 1])).tolist() == [False]
    half = dynjit.tensor([2 ** 24 + 0.5], dtype=f64)
    assert dynjit.ops.isin(half, dynjit.tensor([16777216.0])).tolist() == [False]      # in float64


def test_where_converts_each_branch_directly_to_the_result_dtype():
    # 2**60 + 2**36 + 1 rounds up to 2**60 + 2**37 as float32; through float64 (exactly
    # halfway then) it rounded to even: 2**60
    big = 2 ** 60 + 2 ** 36 + 1
    out = dynjit.where(dynjit.tensor([True]), dynjit.tensor([big]), dynjit.tensor([1.0]))
    assert out.dtype is f32 and out.item() == 2.0 ** 60 + 2.0 ** 37


@pytest.mark.parametrize("fn", [lambda a, b: dynjit.cat([a, b]), lambda a, b: dynjit.stack([a, b[:1]])])
def test_cat_and_stack_convert_each_input_directly_to_the_result_dtype(fn):
    big = 2 ** 60 + 2 ** 36 + 1
    out = fn(dynjit.tensor([big]), dynjit.tensor([1.0]))
    assert out.dtype is f32 and out.reshape(-1)[0].item() == 2.0 ** 60 + 2.0 ** 37


@pytest.mark.parametrize("fn", [lambda a, b: dynjit.outer(a, b), lambda a, b: dynjit.einsum("i,j->ij", a, b)])
def test_outer_and_einsum_convert_their_operands_to_the_result_dtype_first(fn):
    # int64 2049 is 2048 as float16: PyTorch computes 2048 * 1.5 = 3072 (numpy 3073.5 -> 3074)
    out = fn(dynjit.tensor([2049]), dynjit.tensor([1.5], dtype=f16))
    assert out.dtype is f16 and out.item() == 3072.0


def test_in_place_ops_compute_in_the_promoted_dtype():
    x = dynjit.tensor([0.5])
    x.add_(dynjit.tensor([BIG]))
    assert x.item() == 16777216.0
    y = dynjit.tensor([16777216.0])
    y.mul_(dynjit.tensor([BIG]) * 0 + 1)
    assert y.item() == 16777216.0


def test_addcdiv_still_rejects_integer_tensors_with_a_float_self():
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        dynjit.zeros(2).addcdiv(dynjit.tensor([1, 2]), dynjit.tensor([1, 1]))


# -- 3. sum_to_size and the other integer reductions: PyTorch's dtype, as meta declares ---------

@pytest.mark.parametrize("dtype", [u8, i8, i16, i32, i64, b8], ids=lambda d: d.name)
@pytest.mark.parametrize("shape,size", [((3, 4), (1, 4)), ((3, 4), (4,)), ((2, 1, 4), (1, 4)),
                                        ((3,), ()), ((), ())])
def test_sum_to_size_of_integers_accumulates_in_int64(dtype, shape, size):
    """sum_to_size is a sum, as in PyTorch: integers and bool give int64 (numpy gave int64
    for int8 while meta said int8, and uint64, which dynjit has no dtype for, for uint8)."""
    x = dynjit.ones(*shape, dtype=dtype)
    out = x.sum_to_size(size)
    assert out.dtype is i64 and tuple(out.shape) == size
    assert registry["sum_to_size"].meta([TensorMeta.of(x), size]) == (size, i64)
    assert out.tolist() == x.to(i64).sum_to_size(size).tolist()


@pytest.mark.parametrize("dtype", [u8, i8, f16, f32, b8], ids=lambda d: d.name)
def test_sum_to_size_without_a_reduction_returns_the_input_dtype(dtype):
    x = dynjit.ones(3, 4, dtype=dtype)
    for size in ((3, 4), (1, 3, 4)[1:]):
        out = x.sum_to_size(size)
        assert out.dtype is dtype
        assert registry["sum_to_size"].meta([TensorMeta.of(x), size]) == ((3, 4), dtype)


def test_sum_to_size_of_float16_accumulates_in_float32():
    x = dynjit.full((4096, 2), 0.1, dtype=f16)
    out, want = x.sum_to_size(1, 2), x.sum(0, keepdim=True)
    assert out.dtype is f16 and out.tolist() == want.tolist()


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [u8, i8, i16, i32, b8], ids=lambda d: d.name)
def test_integer_sums_and_products_accumulate_in_int64(name, dtype):
    x = dynjit.ones(3, 4, dtype=dtype)
    out = getattr(x, name)(0) if name.startswith("cum") else getattr(x, name)()
    assert out.dtype is i64


# -- 4. a Python scalar meets an integer tensor in the tensor's dtype -------------------------

def test_masked_fill_of_int64_keeps_the_low_bits():
    x = dynjit.tensor([2 ** 62 + 1, 2 ** 62 + 3])
    out = x.masked_fill(dynjit.tensor([False, True]), 2.5)
    assert out.dtype is i64 and out.tolist() == [2 ** 62 + 1, 2]        # the fill value truncated
    x.masked_fill_(dynjit.tensor([True, False]), -7.9)
    assert x.tolist() == [-7, 2 ** 62 + 3]


@pytest.mark.parametrize("dtype,value,want", [
    (i8, 2.5, 2), (i8, -2.5, -2), (i8, True, 1), (i8, -0.0, 0), (u8, -1, 255), (u8, -255, 1),
    (b8, 2.5, True), (b8, math.nan, True), (b8, 0.0, False), (b8, 300, True),
    (f16, math.inf, math.inf), (f32, 2 ** 62 + 1, float(np.float32(2 ** 62))),
])
def test_masked_fill_converts_the_value_as_pytorch_does(dtype, value, want):
    out = dynjit.zeros(1, dtype=dtype).masked_fill(dynjit.tensor([True]), value)
    assert out.dtype is dtype and out.tolist() == [want]


@pytest.mark.parametrize("dtype,value,ctype", [
    (i8, 300, "int8_t"), (i8, 127.5, "int8_t"), (i8, math.nan, "int8_t"), (i8, -math.inf, "int8_t"),
    (u8, -256, "uint8_t"), (u8, -1.5, "uint8_t"), (f16, 65505.0, "c10::Half"), (f32, 1e300, "float"),
    (i64, 1e19, "int64_t"),
])
def test_masked_fill_rejects_a_value_the_dtype_cannot_hold(dtype, value, ctype):
    x = dynjit.zeros(1, dtype=dtype)
    msg = f"value cannot be converted to type {ctype} without overflow"
    with pytest.raises(RuntimeError, match=msg):
        x.masked_fill(dynjit.tensor([True]), value)
    with pytest.raises(RuntimeError, match=msg):
        registry["masked_fill"].meta([TensorMeta.of(x), TensorMeta((1,), b8), value])


def test_masked_fill_with_a_tensor_value_converts_it_to_self_dtype():
    x = dynjit.tensor([2 ** 62 + 1, 5])
    out = x.masked_fill(dynjit.tensor([False, True]), dynjit.tensor(2.5))
    assert out.tolist() == [2 ** 62 + 1, 2]
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        dynjit.zeros(1, dtype=i8).masked_fill(dynjit.tensor([True]), dynjit.tensor(300))


def test_addcmul_value_is_converted_to_the_integer_dtype():
    one = dynjit.tensor([1], dtype=i8)
    # PyTorch: value 1.5 is 1 for int8: 1 + 3 * 1 * 1 = 4 (numpy: 1 + 4.5 in float64 -> 5)
    assert dynjit.addcmul(one, one * 3, one, value=1.5).tolist() == [4]
    big = dynjit.tensor([2 ** 62 + 1])
    out = dynjit.addcmul(big, dynjit.tensor([1]), dynjit.tensor([1]), value=1.5)
    assert out.dtype is i64 and out.tolist() == [2 ** 62 + 2]
    u = dynjit.tensor([1], dtype=u8)
    assert dynjit.addcmul(u, u, u, value=-2).tolist() == [255]             # -2 wraps to 254
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        dynjit.addcmul(one, one, one, value=300)


# -- 5. fractional factors on integer tensors ----------------------------------------------------

ALPHA_INT = "For integral input tensors, argument alpha must not be a floating point number."
ALPHA_BOOL = "Boolean alpha only supported for Boolean results."


def _ints(dtype=i8, vals=(-128,)):
    return dynjit.tensor(list(vals), dtype=dtype)


@pytest.mark.parametrize("call", [
    lambda: _ints().add(_ints(), alpha=-0.5),
    lambda: _ints().sub(_ints(), alpha=-0.5),
    lambda: _ints().add(_ints(), alpha=2.0),
    lambda: dynjit.ops.rsub(_ints(), _ints(), alpha=0.5),
    lambda: _ints().add(2, alpha=0.5),
    lambda: dynjit.tensor([True]).add(dynjit.tensor([True]), alpha=0.5),
    lambda: _ints().add_(_ints(), alpha=0.5),
    lambda: _ints(i64).sub_(_ints(i64), alpha=1.0),
], ids=["add", "sub", "add-2.0", "rsub", "scalar-other", "bool", "add_", "sub_"])
def test_float_alpha_on_integers_is_an_error(call):
    """add(int8(-128), int8(-128), alpha=-0.5) gave -64 (computed in float64, truncated)."""
    with pytest.raises(RuntimeError, match=ALPHA_INT):
        call()


def test_float_alpha_error_in_meta_too():
    m = TensorMeta((2,), i8)
    for name in ("add", "sub", "rsub"):
        with pytest.raises(RuntimeError, match=ALPHA_INT):
            registry[name].meta([m, m], {"alpha": 0.5})
        with pytest.raises(RuntimeError, match=ALPHA_BOOL):
            registry[name].meta([m, m], {"alpha": True})
        assert registry[name].meta([m, m], {"alpha": 2}) == ((2,), i8)
        assert registry[name].meta([m, TensorMeta((2,), f32)], {"alpha": 0.5}) == ((2,), f32)


def test_alpha_rules_like_pytorch():
    with pytest.raises(RuntimeError, match=ALPHA_BOOL):
        _ints().add(_ints(), alpha=True)
    t = dynjit.tensor([True])
    assert t.add(t, alpha=2).tolist() == [True] and t.add(t, alpha=True).dtype is b8
    assert _ints(i8, [3]).add(_ints(i8, [2]), alpha=-2).tolist() == [-1]
    # a float operand makes the result float: a float alpha is fine
    assert _ints(i8, [1]).add(dynjit.tensor([1.0]), alpha=-0.5).tolist() == [0.5]
    assert _ints(i8, [1]).add(2.5, alpha=2).tolist() == [6.0]
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        _ints().add(_ints(), alpha=300)


@pytest.mark.parametrize("name,call", [
    ("leaky_relu", lambda x: dynjit.nn.functional.leaky_relu(x, 0.2)),
    ("leaky_relu", lambda x: dynjit.nn.functional.leaky_relu(x, 2)),
    ("elu", lambda x: dynjit.nn.functional.elu(x)),
])
@pytest.mark.parametrize("dtype", [i8, u8, i64, b8], ids=lambda d: d.name)
def test_float_only_activations_reject_integer_tensors(name, call, dtype):
    """PyTorch implements leaky_relu, elu and lerp for floating point tensors only
    ('"leaky_relu_cpu" not implemented for ...'); eager computed x * 0.2 in float64 and
    truncated it back to the integer dtype."""
    x = dynjit.tensor([-3 if dtype.is_signed else 3, 0, 5], dtype=dtype)
    with pytest.raises(NotImplementedError, match=f'"{name}" not implemented for \'{dtype.name}\''):
        call(x)
    with pytest.raises(RuntimeError):       # NotImplementedError is a RuntimeError, as in PyTorch
        call(x)


@pytest.mark.parametrize("name,args", [
    ("leaky_relu", [TensorMeta((3,), i8), 0.2]), ("elu", [TensorMeta((3,), i64)]),
    ("lerp_kernel_scalar", [TensorMeta((3,), i8), TensorMeta((3,), i8), 0.5]),
])
def test_float_only_activations_meta_rejects_integers(name, args):
    with pytest.raises(NotImplementedError, match=f'"{name}" not implemented'):
        registry[name.replace("_kernel_scalar", "")].meta(args)


@pytest.mark.parametrize("dtype,torch_name", [(i8, "Char"), (u8, "Byte"), (i64, "Long"), (b8, "Bool")])
def test_lerp_rejects_integer_tensors_with_pytorchs_message(dtype, torch_name):
    x = dynjit.tensor([1, 0, 1], dtype=dtype)
    with pytest.raises(NotImplementedError, match=f'"lerp_kernel_scalar" not implemented for \'{torch_name}\''):
        dynjit.lerp(x, x, 0.5)
    with pytest.raises(NotImplementedError, match=f'"lerp_kernel_tensor" not implemented for \'{torch_name}\''):
        dynjit.lerp(x, x, x)


def test_lerp_does_not_promote():
    """PyTorch's lerp takes end, and a weight tensor with dimensions, in self's dtype only; a
    0-d weight tensor and a Python number may differ (they do not promote)."""
    a, b = dynjit.tensor([1.0, 2.0]), dynjit.tensor([3.0, 6.0])
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        dynjit.lerp(a, b.double(), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype double"):
        dynjit.lerp(a, b, dynjit.tensor([0.25, 0.5], dtype=f64))
    with pytest.raises(RuntimeError, match="expected dtype double for `end` but got dtype float"):
        dynjit.lerp(a.double(), b, 0.5)
    out = dynjit.lerp(a, b, dynjit.tensor(0.5, dtype=f64))
    assert out.dtype is f32 and out.tolist() == [2.0, 4.0]
    assert dynjit.lerp(a, b, 0.25).dtype is f32


def test_addmm_converts_beta_and_alpha_to_the_integer_dtype():
    one = dynjit.ones(2, 2, dtype=i8)
    # PyTorch: beta 0.5 -> 0 and alpha 2: 0 * 1 + 2 * (1 @ 1) = 4 (eager gave float64 5.0)
    out = dynjit.addmm(one, one, one, beta=0.5, alpha=2)
    assert out.dtype is i8 and out.tolist() == [[4, 4], [4, 4]]
    assert dynjit.addmm(one, one, one, alpha=0.5).tolist() == [[1, 1], [1, 1]]
    with pytest.raises(RuntimeError, match="int8_t without overflow"):
        dynjit.addmm(one, one, one, beta=300)


def test_addmm_with_beta_zero_ignores_self():
    nan = dynjit.tensor([[math.nan, math.inf]])
    out = dynjit.addmm(nan, dynjit.ones(1, 1), dynjit.ones(1, 2), beta=0)
    assert out.tolist() == [[1.0, 1.0]]
