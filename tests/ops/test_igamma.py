"""igamma / igammac (regularized incomplete gamma functions): values against high-precision
ones (mpmath, 30 digits), the domain's edges as PyTorch gives them, PyTorch's errors, the
derivative in `other` (gradcheck, gradgradcheck) and the missing one in `input` (PyTorch's
NotImplementedError, backward and forward), compiled on every backend; ports of the seed
tests about ops without a derivative formula."""
import numpy as np
import pytest

import dynjit
import dynjit.autograd.forward_ad as fwAD
from dynjit.autograd import gradcheck, gradgradcheck

BACKENDS = ("eager", "aot_eager", "llvm")

# (a, x, P(a, x)) from mpmath.gammainc(a, 0, x, regularized=True)
VALUES = [(0.5, 0.3, 0.561421973919000136477739599533), (30.0, 28.0, 0.377389694314397636295481667255),
          (1e-3, 1e-3, 0.993687646708860290096219637037), (1.0, 1.0, 1 - np.exp(-1.0)),
          (2.0, 3.0, 1 - 4 * np.exp(-3.0)), (5.0, 2.0, 0.052653017343711125)]


def test_values_match_high_precision_ones():
    a = dynjit.tensor([v[0] for v in VALUES], dtype=dynjit.float64)
    x = dynjit.tensor([v[1] for v in VALUES], dtype=dynjit.float64)
    p = np.array([v[2] for v in VALUES])
    np.testing.assert_allclose(dynjit.igamma(a, x).numpy(), p, rtol=1e-13)
    np.testing.assert_allclose(a.igammac(x).numpy(), 1 - p, rtol=1e-12)


def test_domain_edges_are_pytorchs():
    a = dynjit.tensor([0.0, 0.0, -1.0, 1.0, float("inf"), 2.0, 2.0])
    x = dynjit.tensor([1.0, 0.0, 1.0, -1.0, 1.0, float("inf"), 0.0])
    p = dynjit.igamma(a, x).tolist()
    assert p[0] == 1.0 and p[4] == 0.0 and p[5] == 1.0 and p[6] == 0.0
    assert all(np.isnan(p[i]) for i in (1, 2, 3))
    q = dynjit.igammac(a, x).tolist()
    assert q[0] == 0.0 and q[5] == 0.0 and q[6] == 1.0


def test_dtypes_and_errors():
    assert dynjit.igamma(dynjit.tensor([1.0, 2.0]), dynjit.tensor([1, 2])).dtype is dynjit.float32
    assert dynjit.igamma(dynjit.tensor([2.0], dtype=dynjit.float16),
                         dynjit.tensor([3.0], dtype=dynjit.float16)).dtype is dynjit.float16
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        dynjit.igamma(dynjit.tensor([1, 2]), dynjit.tensor([1, 2]))


def test_derivative_in_other():
    a = dynjit.tensor([0.5, 1.0, 2.0, 4.0], dtype=dynjit.float64)
    x = dynjit.tensor([0.3, 0.7, 2.5, 3.0], dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(lambda t: dynjit.igamma(a, t), (x,))
    assert gradgradcheck(lambda t: dynjit.igammac(a, t), (x,))
    dynjit.igammac(a, x).sum().backward()
    # dQ/dx = -x^(a-1) e^-x / Gamma(a); for a = 1 that is -e^-x
    assert x.grad[1].item() == pytest.approx(-np.exp(-0.7))


def test_no_derivative_in_input():
    a = dynjit.rand(2, requires_grad=True)
    for fn, name in ((dynjit.igamma, "igamma"), (dynjit.igammac, "igammac")):
        with pytest.raises(NotImplementedError, match=f"the derivative for '{name}: input' is not implemented."):
            fn(a, dynjit.rand(2)).sum().backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_not_implemented_grad
def test_not_implemented_grad():
    """(The seed uses nextafter, which PyTorch 2.13, and dynjit, now differentiate; igamma's
    input is an argument PyTorch still has no derivative formula for.)"""
    a = dynjit.rand(2, requires_grad=True)
    y = dynjit.igamma(a, a).sum()
    with pytest.raises(NotImplementedError, match="the derivative for .* is not implemented"):
        y.backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_not_implemented_fwad
def test_not_implemented_fwad():
    x = dynjit.randn(3)
    v = dynjit.rand(3)
    with fwAD.dual_level():
        dual_x = fwAD.make_dual(x, v)
        with pytest.raises(NotImplementedError, match=r"Trying to use forward AD with .* that does not support it"):
            dynjit.igamma(dual_x, dual_x)


def _step(a, x):
    return (dynjit.igamma(a, x) * 2 + dynjit.igammac(a, x)).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_matches_eager(backend):
    a = dynjit.tensor([0.5, 1.0, 2.0, 30.0], dtype=dynjit.float64)
    x = dynjit.tensor([0.3, 0.7, 2.5, 28.0], dtype=dynjit.float64, requires_grad=True)
    expected = _step(a, x)
    expected.backward()
    g, x.grad = x.grad.clone(), None
    got = dynjit.compile(_step, backend=backend)(a, x)
    got.backward()
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), g.numpy(), rtol=1e-12)
