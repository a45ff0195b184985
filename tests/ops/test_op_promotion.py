"""PyTorch's type promotion through the operators and ops: categories
bool < integer < float; dimensioned tensors over 0-d tensors over Python
scalars, unless the weaker operand is of a higher category."""
import numpy as np
import pytest

import dynjit

f16, f32, f64 = dynjit.float16, dynjit.float32, dynjit.float64
i8, i16, i32, i64, u8, b8 = dynjit.int8, dynjit.int16, dynjit.int32, dynjit.int64, dynjit.uint8, dynjit.bool


def t(dtype, ndim=1):
    """A small tensor of `dtype` (1-D, or 0-d with ndim=0)."""
    return dynjit.ones((2,) * ndim, dtype=dtype)


@pytest.mark.parametrize("a,b,expected", [
    (t(f32), t(f64), f64),
    (t(f16), t(f32), f32),
    (t(i32), t(i64), i64),
    (t(u8), t(i8), i16),
    (t(b8), t(i32), i32),
    (t(b8), t(b8), b8),
    (t(i64), t(f16), f16),
    (t(f64, 0), t(f32), f32),      # a 0-d tensor does not upcast within its category
    (t(i64, 0), t(i32), i32),
    (t(f64, 0), t(i32), f64),      # ... but a higher category wins with its own dtype
    (t(f32, 0), t(b8), f32),
    (t(f64, 0), t(f32, 0), f64),   # only 0-d tensors: ordinary promotion
    (t(f32), 2.5, f32),            # a Python scalar never upcasts a tensor of its category
    (t(f16), 1e3, f16),
    (t(i32), 7, i32),
    (t(u8), 300 - 299, u8),
    (t(i64), 2.5, f32),            # a Python float with an integer tensor: the default float
    (t(i32, 0), 0.5, f32),
    (t(b8), 3, i64),               # a Python int with a bool tensor: int64
    (t(b8), True, b8),
    (t(i32), True, i32),
])
def test_add_promotes_like_pytorch(a, b, expected):
    assert (a + b).dtype is expected
    assert (b + a).dtype is expected
    assert dynjit.result_type(a, b) is expected


def test_python_float_with_int_tensor_follows_the_default_dtype():
    old = dynjit.get_default_dtype()
    dynjit.set_default_dtype(f64)
    try:
        assert (t(i64) * 0.5).dtype is f64
        assert (t(f32) * 0.5).dtype is f32
    finally:
        dynjit.set_default_dtype(old)


def test_a_python_scalar_never_upcasts_a_float32_tensor():
    x = dynjit.tensor([1.0, 2.0])
    for y in (x + 1e-30, x * 10 ** 18, x - 2 ** 40, x / 3.0, x ** 2.5, 1.5 - x, 2.0 ** x, x.clamp(0.5, 1e10)):
        assert y.dtype is f32


@pytest.mark.parametrize("expr,expected", [
    (lambda: t(i64) / 2, f32),                 # true division of integers gives the default float
    (lambda: t(i64) / t(i64), f32),
    (lambda: 2 / t(i64), f32),
    (lambda: t(i64) // 2, i64),
    (lambda: t(i64).div(2, rounding_mode="floor"), i64),
    (lambda: t(i32).div(t(i32), rounding_mode="trunc"), i32),
    (lambda: t(f64).div(2, rounding_mode="trunc"), f64),
    (lambda: t(i64) % 2, i64),
    (lambda: t(i64) ** 2, i64),
    (lambda: t(i64) ** 2.5, f32),
    (lambda: 2 ** t(i64), i64),
    (lambda: 2.0 ** t(i64), f32),
    (lambda: t(i64).sqrt(), f32),               # unary float math on integers
    (lambda: t(b8).exp(), f32),
    (lambda: t(f64).sin(), f64),
    (lambda: t(f16).sigmoid(), f16),
    (lambda: t(i32).abs(), i32),
    (lambda: -t(i64), i64),
    (lambda: t(i64) < 2.5, b8),
    (lambda: t(f32) == t(f64), b8),
    (lambda: t(i64) & t(i32), i64),
    (lambda: t(b8) | t(b8), b8),
    (lambda: dynjit.where(t(b8), t(i64), 0.5), f32),
    (lambda: dynjit.where(t(b8), t(f32), t(f64)), f64),
    (lambda: dynjit.where(t(b8), t(i32), 5), i32),
    (lambda: t(i64).clamp(min=0.5), f32),
    (lambda: t(i32).clamp(0, 1), i32),
    (lambda: t(i64).masked_fill(t(b8), 2.5), i64),   # masked_fill keeps self's dtype
    (lambda: dynjit.maximum(t(i32), t(f16)), f16),
    (lambda: t(i32).sum(), i64),                     # integer sums accumulate in int64
    (lambda: t(b8).sum(), i64),
    (lambda: t(i32).cumsum(0), i64),
    (lambda: t(i32).prod(), i64),
    (lambda: t(f32).sum(dtype=f64), f64),
    (lambda: t(i64).mean(dtype=f64), f64),
    (lambda: t(f16).mean(), f16),
    (lambda: t(i64).softmax(0), f32),
    (lambda: t(i32).amax(), i32),
    (lambda: t(f64).argmax(), i64),
    (lambda: t(f32).logsumexp(0), f32),
    (lambda: t(i64).logsumexp(0), f32),
    (lambda: dynjit.cat([t(i32), t(f16)]), f16),
    (lambda: dynjit.stack([t(i64), t(b8)]), i64),
    (lambda: dynjit.outer(t(i64), t(f64)), f64),
])
def test_op_result_dtypes(expr, expected):
    assert expr().dtype is expected


def test_integer_division_rounding_modes_match_pytorch():
    a = dynjit.tensor([7, -7, 7, -7])
    b = dynjit.tensor([2, 2, -2, -2])
    assert a.div(b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert a.div(b, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    assert dynjit.div(a, b).tolist() == [3.5, -3.5, -3.5, 3.5]
    big = dynjit.tensor([2 ** 62 + 1])
    assert big.div(1, rounding_mode="trunc").item() == 2 ** 62 + 1     # exact, not through float64
    with pytest.raises(ValueError, match="rounding_mode"):
        a.div(b, rounding_mode="round")


def test_mean_of_an_integer_tensor_asks_for_a_dtype():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype.*Got: int64"):
        t(i64).mean()


def test_promote_types_and_result_type_functions():
    assert dynjit.promote_types(i32, f16) is f16
    assert dynjit.promote_types(u8, i8) is i16
    assert dynjit.result_type(t(i32), 2.5) is f32
    assert dynjit.result_type(t(f64, 0), t(f32)) is f32


def test_eager_result_values_are_computed_in_the_promoted_dtype():
    a = dynjit.tensor([1, 2], dtype=i32)
    b = dynjit.tensor([0.5, 0.25], dtype=f64)
    out = a * b
    assert out.dtype is f64
    np.testing.assert_array_equal(out.numpy(), [0.5, 0.5])
