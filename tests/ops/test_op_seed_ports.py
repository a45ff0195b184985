"""Op behaviours asserted by PyTorch's autograd tests (seed 002), ported to dynjit."""
import math
import sys

import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck


def mask_not_all_zeros(shape):
    while True:
        mask = dynjit.randn(*shape) > 0
        if bool(mask.any()):
            return mask


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_min_max_median_backprops_to_all_values
@pytest.mark.parametrize("reduce", [dynjit.min, dynjit.max, dynjit.median, dynjit.nanmedian],
                         ids=["min", "max", "median", "nanmedian"])
def test_min_max_median_backprops_to_all_values(reduce):
    x1 = dynjit.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
    x2 = dynjit.tensor([float("nan"), float("nan"), float("nan")], requires_grad=True)
    for x in (x1, x2):
        reduce(x).backward()
        assert x.grad.sum().item() == pytest.approx(1.0)
        assert (x.grad == 1 / 3).sum().item() == 3


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_where_functional
def test_where_functional():
    def where(cond, x, y):
        return dynjit.where(cond, x, y)

    cond = mask_not_all_zeros((5, 5))
    x = dynjit.randn(5, 5, dtype=dynjit.float64, requires_grad=True)
    y = dynjit.randn(5, 5, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(where, [cond, x, y], raise_exception=True)
    assert gradgradcheck(where, [cond, x, y], [dynjit.randn(5, 5, dtype=dynjit.float64)])

    x = dynjit.randn(5, 1, 5, dtype=dynjit.float64, requires_grad=True)
    y = dynjit.randn(5, 5, 1, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(where, [cond, x, y], raise_exception=True)
    assert gradgradcheck(where, [cond, x, y], [dynjit.randn(5, 5, 5, dtype=dynjit.float64)])


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_where_scalar
def test_where_scalar():
    x = dynjit.randn(5, 5, dtype=dynjit.float64, requires_grad=True)
    cond = mask_not_all_zeros((5, 5))

    def where_scalar_first(cond, x):
        return dynjit.where(cond, 4.0, x)

    def where_scalar_second(cond, x):
        return dynjit.where(cond, x, 4.0)

    for fn in (where_scalar_first, where_scalar_second):
        assert gradcheck(fn, (cond, x))
        assert gradgradcheck(fn, (cond, x))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_power_function
def test_power_function():
    a = dynjit.tensor([0.0, 0.0, 0.0])
    b = dynjit.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    dynjit.sum(a ** b).backward()
    assert b.grad.tolist() == [-math.inf, 0.0, 0.0]

    b = dynjit.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    dynjit.sum(0 ** b).backward()
    assert b.grad.tolist() == [-math.inf, 0.0, 0.0]


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_non_differentiable_ops
def test_non_differentiable_ops():
    x = dynjit.tensor([[1, 2], [3, 4.0]], requires_grad=True)
    out = dynjit.isin(x, dynjit.tensor([2, 3]))
    assert not out.requires_grad
    assert out.tolist() == [[False, True], [True, False]]

    x = dynjit.randn(3, 3, requires_grad=True)
    out = dynjit.signbit(x)
    assert not out.requires_grad
    assert out.tolist() == (x.detach() < 0).tolist()


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_mv_grad_stride_0
def test_matrix_vector_grad_through_a_zero_stride_vector():
    mat = dynjit.randn(2, 2, dtype=dynjit.float64)
    vec = dynjit.randn(1, dtype=dynjit.float64).requires_grad_(True)

    def fn(vec):
        vec = vec.expand(2)          # expanded inside, so gradcheck's input has no overlapping memory
        return (mat @ vec).sum()

    assert gradcheck(fn, (vec,))
    assert gradgradcheck(fn, (vec,))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_var_mean_differentiable
def test_var_mean_differentiable():
    dim, keepdim = [2, 4], False
    input1 = dynjit.randn(3, 4, 5, 6, 2, 3, requires_grad=True)
    input2 = input1.detach().clone().requires_grad_(True)
    var1, mean1 = dynjit.var_mean(input1, dim=dim, keepdim=keepdim)
    var2 = input2.var(dim=dim, keepdim=keepdim)
    mean2 = input2.mean(dim=dim, keepdim=keepdim)
    grad = dynjit.randn(3, 4, 6, 3, requires_grad=True)

    r1 = var1 * var1 * mean1 * mean1
    r2 = var2 * var2 * mean2 * mean2
    np.testing.assert_allclose(r1.detach().numpy(), r2.detach().numpy(), rtol=0.01, atol=0.0)

    dynjit.autograd.backward(r1, grad)
    dynjit.autograd.backward(r2, grad)
    np.testing.assert_allclose(input1.grad.numpy(), input2.grad.numpy(), rtol=0.01, atol=0.0)


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_pyscalar_conversions
def test_pyscalar_conversions():
    # integral -> integral
    l = dynjit.zeros(1, 1, 1, dtype=dynjit.long)
    l[0] = -12345
    assert int(l) == -12345

    # floating point -> floating point
    f = dynjit.randn(1, 1, dtype=dynjit.double)
    f[0] = -12345.1
    assert float(f) == -12345.1
    f[0] = math.nan
    assert math.isnan(float(f))
    f[0] = math.inf
    assert float(f) == math.inf
    f[0] = -math.inf
    assert float(f) == -math.inf

    # integral -> floating point: a value that a float cannot hold exactly
    big = 1234567890123456789
    assert big != int(float(big))
    l[0] = big
    assert float(l) == float(big)

    # floating point -> integral
    f[0] = math.nan
    with pytest.raises(ValueError):
        int(f[0])
    f[0] = math.inf
    with pytest.raises(OverflowError):
        int(f[0])
    f[0] = -math.inf
    with pytest.raises(OverflowError):
        int(f[0])
    f[0] = sys.float_info.max
    assert int(f) == sys.float_info.max

    # bool
    for tensor, value, expected in [(l, 0, False), (l, -2, True), (f, 0.0, False),
                                    (f, sys.float_info.min, True), (f, math.nan, True),
                                    (f, math.inf, True), (f, -math.inf, True)]:
        tensor[0] = value
        assert bool(tensor) is expected
        assert (True if tensor else False) is expected
