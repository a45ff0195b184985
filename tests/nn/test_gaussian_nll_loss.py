"""F.gaussian_nll_loss / nn.GaussianNLLLoss against numpy, var's shapes (same as input, one
dimension short, one broadcast dimension, a float), the clamp that keeps var's gradient,
PyTorch's errors, gradcheck, and compiled == plain (the negative-variance check included);
and the check_values op the check is made with."""
import math

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck


def _np_loss(x, y, var, eps=1e-6, full=False):
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - y) ** 2 / var)
    return loss + (0.5 * math.log(2 * math.pi) if full else 0.0)


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    return rng.randn(5, 3), rng.randn(5, 3), rng.uniform(0.1, 2.0, (5, 3))


def test_matches_numpy_for_each_var_shape(data):
    x, y, var = data
    X, Y = dynjit.tensor(x), dynjit.tensor(y)
    np.testing.assert_allclose(F.gaussian_nll_loss(X, Y, dynjit.tensor(var)).item(), _np_loss(x, y, var).mean())
    np.testing.assert_allclose(F.gaussian_nll_loss(X, Y, dynjit.tensor(var[:, 0]), reduction="none").numpy(),
                               _np_loss(x, y, var[:, :1]))                               # one dimension short
    np.testing.assert_allclose(F.gaussian_nll_loss(X, Y, dynjit.tensor(var[:, :1]), reduction="sum").item(),
                               _np_loss(x, y, var[:, :1]).sum())                         # broadcast dimension
    np.testing.assert_allclose(F.gaussian_nll_loss(X, Y, 0.7, full=True).item(), _np_loss(x, y, 0.7, full=True).mean())
    tiny = np.full((5, 3), 1e-9)
    np.testing.assert_allclose(nn.GaussianNLLLoss(eps=1e-4)(X, Y, dynjit.tensor(tiny)).item(),
                               _np_loss(x, y, tiny, eps=1e-4).mean())


def test_gradients_and_clamp_passes_var_gradient(data):
    x, y, var = data
    args = [dynjit.tensor(a, requires_grad=True) for a in (x, y, var)]
    assert gradcheck(lambda a, b, v: F.gaussian_nll_loss(a, b, v, reduction="none"), args)
    v = dynjit.tensor([1e-9, 1.0], requires_grad=True)                 # clamped, yet var gets a gradient
    F.gaussian_nll_loss(dynjit.zeros(2), dynjit.ones(2), v, reduction="sum").backward()
    np.testing.assert_allclose(v.grad.numpy(), [0.5 / 1e-6 - 0.5 / 1e-12, 0.0], rtol=1e-6)


def test_errors_are_pytorchs():
    x = dynjit.zeros(4, 3)
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, -dynjit.ones(4, 3))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, dynjit.ones(2, 3))
    with pytest.raises(ValueError, match="bogus is not valid"):
        F.gaussian_nll_loss(x, x, dynjit.ones(4, 3), reduction="bogus")


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain_and_still_checks(data, backend):
    x, y, var = data

    def loss_fn(mean, target, log_var):
        return F.gaussian_nll_loss(mean, target, log_var.exp())

    results = []
    for fn in (loss_fn, dynjit.compile(loss_fn, backend=backend)):
        m, lv = dynjit.tensor(x, requires_grad=True), dynjit.tensor(np.log(var), requires_grad=True)
        out = fn(m, dynjit.tensor(y), lv)
        out.backward()
        results.append((out.item(), m.grad.numpy(), lv.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    compiled = dynjit.compile(lambda v: F.gaussian_nll_loss(dynjit.zeros(3), dynjit.ones(3), v), backend=backend)
    compiled(dynjit.ones(3))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        compiled(-dynjit.ones(3))                  # a later call with bad values still raises


def test_check_values_op():
    check = dynjit.ops.check_values
    x = dynjit.tensor([1.0, -2.0], requires_grad=True)
    y = check(x, dynjit.tensor([True, True]), "never")
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    with pytest.raises(ValueError, match=r"^bad values:\n\[ 1. -2.\]$"):
        check(x, x > 0, "bad values:", True)
