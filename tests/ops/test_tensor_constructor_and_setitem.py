"""dynjit.Tensor(...), PyTorch's legacy constructor (torch.FloatTensor's): data of any kind
becomes the default float dtype (CleanRL's `torch.Tensor(next_done)` turns a bool array into
0./1.), sizes as ints or a Size make a tensor of that size; compiled code constructs the same.
And indexing assignment drops the value's leading size-1 dims as PyTorch's does (CleanRL's GAE
writes a [1, n] value into a row of n)."""
import numpy as np
import pytest

import dynjit


@pytest.mark.parametrize("data", [np.array([True, False, True]), np.array([1, 2, 3]), [1, 2, 3],
                                  np.array([0.5, 1.5], np.float64), [[True], [False]]])
def test_data_becomes_default_float(data):
    t = dynjit.Tensor(data)
    assert t.dtype == dynjit.float32
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, np.float32))
    dynjit.set_default_dtype(dynjit.float64)
    try:
        assert dynjit.Tensor(data).dtype == dynjit.float64
    finally:
        dynjit.set_default_dtype(dynjit.float32)


def test_bool_array_arithmetic_as_pytorch_programs_use_it():
    done = dynjit.Tensor(np.array([True, False]))
    np.testing.assert_array_equal((1.0 - done).numpy(), [0.0, 1.0])


def test_sizes():
    assert dynjit.Tensor(2, 3).shape == (2, 3) and dynjit.Tensor(2, 3).dtype == dynjit.float32
    assert dynjit.Tensor(5).shape == (5,)
    assert dynjit.Tensor(dynjit.Size([4, 1])).shape == (4, 1)
    assert dynjit.Tensor().shape == (0,)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        dynjit.Tensor(2, -1)
    with pytest.raises(TypeError, match="one sequence of data or sizes"):
        dynjit.Tensor([1], [2])


def test_tensor_argument_keeps_dtype():
    t = dynjit.Tensor(dynjit.tensor([1, 2]))
    assert t.dtype == dynjit.int64


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_constructs_the_same(backend):
    def f(x, mask):
        return x * (1.0 - dynjit.Tensor(mask)) + dynjit.Tensor(2, 1).sum()

    x, mask = dynjit.randn(3), np.array([True, False, True])
    np.testing.assert_array_equal(dynjit.compile(f, backend=backend)(x, mask).numpy(), f(x, mask).numpy())


# -- indexing assignment drops the value's leading size-1 dims, as PyTorch's -----------------

def test_setitem_drops_leading_unit_dims():
    a = dynjit.zeros(3, 4)
    a[0] = dynjit.ones(1, 1, 4)
    a[[1, 2]] = dynjit.full((1, 2, 4), 2.0)
    np.testing.assert_array_equal(a.numpy(), np.array([[1.0] * 4, [2.0] * 4, [2.0] * 4], np.float32))
    with pytest.raises(RuntimeError):
        a[0] = dynjit.ones(2, 4)


def test_setitem_with_unit_dims_backpropagates():
    v = dynjit.randn(1, 4, requires_grad=True)
    a = dynjit.zeros(3, 4)
    a[1] = v * 2
    a.sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), np.full((1, 4), 2.0, np.float32))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_setitem_with_unit_dims_compiled(backend):
    def gae_like(rewards, next_value):
        advantages = dynjit.zeros_like(rewards)
        for t in reversed(range(rewards.shape[0])):
            advantages[t] = rewards[t] + 0.9 * next_value
            next_value = advantages[t]
        return advantages

    rewards, next_value = dynjit.randn(3, 4), dynjit.randn(1, 4)
    np.testing.assert_allclose(dynjit.compile(gae_like, backend=backend)(rewards, next_value).numpy(),
                               gae_like(rewards, next_value).numpy(), rtol=1e-6)
