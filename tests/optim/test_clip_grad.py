"""nn.utils.clip_grad_norm_ / clip_grad_value_ / get_total_norm / clip_grads_with_norm_
against numpy: the total norm is the norm of the vector of per-tensor norms (PyTorch's
definition), the gradients are scaled by min(1, max_norm / (total + 1e-6)); every
norm_type, generators, non-finite norms, and compiled == eager."""
import math
import warnings

import numpy as np
import pytest

import dynjit
from dynjit import nn

RNG = np.random.default_rng(11)
GRADS = [RNG.standard_normal((3, 4)), RNG.standard_normal(5), np.zeros(2)]


def _params(grads=GRADS, dtype=dynjit.float64):
    params = []
    for g in grads:
        p = nn.Parameter(dynjit.zeros(*g.shape, dtype=dtype))
        p.grad = dynjit.tensor(g.copy(), dtype=dtype)
        params.append(p)
    params.append(nn.Parameter(dynjit.zeros(3, dtype=dtype)))         # no gradient: ignored
    return params


def _np_norm(x, p):
    x = np.abs(np.ravel(x))
    if p == math.inf:
        return x.max()
    if p == -math.inf:
        return x.min()
    if p == 0:
        return float(np.count_nonzero(x))
    return (x ** p).sum() ** (1 / p)


def _np_total(grads, p):
    return _np_norm(np.array([_np_norm(g, p) for g in grads]), p)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3, 0.5, 0, math.inf, "inf", -math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_numpy(norm_type, max_norm):
    params = _params()
    total = nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type, foreach=True)
    p = float(norm_type)
    expected_total = _np_total(GRADS, p)
    assert total.item() == pytest.approx(expected_total, rel=1e-12)
    coef = min(1.0, max_norm / (expected_total + 1e-6))
    for param, g in zip(params, GRADS):
        np.testing.assert_allclose(param.grad.numpy(), g * coef, rtol=1e-12)
    assert params[-1].grad is None


def test_norm_zero_counts_tensors_with_a_nonzero_element():
    # PyTorch's definition (the 0-"norm" of the per-tensor counts), not the count of elements
    params = _params()
    assert nn.utils.get_total_norm([p.grad for p in params[:3]], norm_type=0).item() == 2.0


def test_a_generator_of_parameters_is_clipped():
    model = nn.Linear(3, 2)
    model(dynjit.ones(4, 3)).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    expected = _np_total(grads, 2.0)
    assert total.item() == pytest.approx(expected, rel=1e-6)
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g * 0.1 / (expected + 1e-6), rtol=1e-5)


def test_single_tensor_and_float32_keep_their_dtype():
    p = nn.Parameter(dynjit.zeros(3))
    p.grad = dynjit.tensor([3.0, 4.0, 0.0])
    total = nn.utils.clip_grad_norm_(p, 1.0)
    assert total.dtype is dynjit.float32 and p.grad.dtype is dynjit.float32
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8, 0.0], rtol=1e-6)


def test_mixed_dtypes_are_each_scaled_in_their_own_dtype():
    a = nn.Parameter(dynjit.zeros(2, dtype=dynjit.float64))
    b = nn.Parameter(dynjit.zeros(2))
    a.grad, b.grad = dynjit.ones(2, dtype=dynjit.float64), dynjit.ones(2)
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert total.item() == pytest.approx(2.0)
    assert a.grad.dtype is dynjit.float64 and b.grad.dtype is dynjit.float32
    np.testing.assert_allclose(b.grad.numpy(), [0.5, 0.5], rtol=1e-6)


def test_no_gradients_give_a_zero_norm():
    total = nn.utils.clip_grad_norm_([nn.Parameter(dynjit.zeros(2))], 1.0)
    assert total.item() == 0.0 and total.dtype is dynjit.float32


def test_non_finite_norm_raises_on_request_and_otherwise_scales_by_it():
    grads = [np.array([1.0, math.nan]), np.array([2.0])]
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(_params(grads), 1.0, error_if_nonfinite=True)
    params = _params(grads)
    assert math.isnan(nn.utils.clip_grad_norm_(params, 1.0).item())
    assert np.isnan(params[1].grad.numpy()).all()
    params = _params([np.array([math.inf, 1.0])])
    with pytest.raises(RuntimeError, match="order inf .* non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, norm_type="inf", error_if_nonfinite=True)


def test_get_total_norm_then_clip_grads_with_norm_equals_clip_grad_norm_():
    a, b = _params(), _params()
    total = nn.utils.get_total_norm([p.grad for p in a if p.grad is not None], norm_type=3)
    nn.utils.clip_grads_with_norm_(a, 0.7, total)
    nn.utils.clip_grad_norm_(b, 0.7, norm_type=3)
    for p, q in zip(a, b):
        if p.grad is not None:
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_deprecated_clip_grad_norm_warns_and_clips():
    params = _params()
    with pytest.warns(FutureWarning, match="deprecated in favor of `torch.nn.utils.clip_grad_norm_`"):
        total = nn.utils.clip_grad_norm(params, 1.0)
    assert total.item() == pytest.approx(_np_total(GRADS, 2.0))


def test_clip_grad_value_clamps_every_element():
    params = _params()
    nn.utils.clip_grad_value_(params, 0.5, foreach=False)
    for p, g in zip(params, GRADS):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))
    assert params[-1].grad is None


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_clipping_matches_eager(backend):
    def clip(model, x):
        model.zero_grad()
        model(x).pow(2).sum().backward()
        total = nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=2.0)
        nn.utils.clip_grad_value_(model.parameters(), 0.05)
        return total

    def fresh():
        dynjit.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
    x = dynjit.randn(6, 4)
    eager_model, compiled_model = fresh(), fresh()
    want = clip(eager_model, x)
    dynjit.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dynjit.compile(clip, backend=backend)(compiled_model, x)
    tol = 0 if backend != "llvm" else 1e-6
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    for p, q in zip(compiled_model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=tol, atol=tol)
