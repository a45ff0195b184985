"""Eager results have PyTorch's dtypes and are computed as PyTorch computes them.

- softmax and log_softmax keep their input's dtype on empty inputs and give the default
  dtype for integers (the dtype their meta function declares).
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
