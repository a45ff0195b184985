"""Eager results have PyTorch's dtypes and are computed as PyTorch computes them.

- softmax and log_softmax keep their input's dtype on empty inputs and give the default
  dtype for integers (the dtype their meta function declares).
- sum_to_size is a sum, of sum's dtype (int64 for integers and bool), as meta says.
"""
import pytest

import dynjit
from dynjit.ops.meta import TensorMeta
from dynjit.ops.registry import registry

f16, f32, f64 = dynjit.float16, dynjit.float32, dynjit.float64
i8, i16, i32, i64, u8, b8 = dynjit.int8, dynjit.int16, dynjit.int32, dynjit.int64, dynjit.uint8, dynjit.bool


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
