"""Loss modules and functions against numpy formulas, for every reduction, and their
gradients by gradcheck in float64."""
import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

REDUCTIONS = ["mean", "sum", "none"]


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


def _log_softmax(a, axis):
    s = a - a.max(axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis, keepdims=True))


@pytest.fixture
def regression():
    x = dynjit.randn(4, 3, dtype=dynjit.float64)
    y = dynjit.randn(4, 3, dtype=dynjit.float64)
    return x, y


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_and_l1(regression, reduction):
    x, y = regression
    a, b = x.numpy(), y.numpy()
    np.testing.assert_allclose(nn.MSELoss(reduction=reduction)(x, y).numpy(),
                               _reduce((a - b) ** 2, reduction), rtol=1e-12)
    np.testing.assert_allclose(nn.L1Loss(reduction=reduction)(x, y).numpy(),
                               _reduce(np.abs(a - b), reduction), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1_and_huber(regression, reduction):
    x, y = regression
    d = np.abs(x.numpy() - y.numpy())
    beta = 0.7
    np.testing.assert_allclose(nn.SmoothL1Loss(reduction=reduction, beta=beta)(x, y).numpy(),
                               _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction))
    np.testing.assert_allclose(nn.HuberLoss(reduction=reduction, delta=beta)(x, y).numpy(),
                               _reduce(np.where(d < beta, 0.5 * d * d, beta * (d - 0.5 * beta)), reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_cross_entropy(reduction):
    logits = dynjit.randn(5, 4, dtype=dynjit.float64)
    target = dynjit.tensor([0, 3, 1, 3, 2])
    weight = dynjit.tensor([1.0, 2.0, 0.5, 1.5], dtype=dynjit.float64)
    logp = _log_softmax(logits.numpy(), 1)
    t, w = target.numpy(), weight.numpy()
    picked = -logp[np.arange(5), t]
    expected = {"none": picked, "sum": picked.sum(), "mean": picked.mean()}[reduction]
    np.testing.assert_allclose(nn.CrossEntropyLoss(reduction=reduction)(logits, target).numpy(), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(nn.NLLLoss(reduction=reduction)(F.log_softmax(logits, 1), target).numpy(),
                               expected, rtol=1e-12)
    weighted = picked * w[t]
    expected_w = {"none": weighted, "sum": weighted.sum(), "mean": weighted.sum() / w[t].sum()}[reduction]
    np.testing.assert_allclose(nn.CrossEntropyLoss(weight, reduction=reduction)(logits, target).numpy(),
                               expected_w, rtol=1e-12)


def test_cross_entropy_ignore_index_and_label_smoothing():
    logits = dynjit.randn(4, 3, dtype=dynjit.float64)
    target = dynjit.tensor([0, -100, 2, 1])
    logp = _log_softmax(logits.numpy(), 1)
    keep = np.array([0, 2, 3])
    t = target.numpy()[keep]
    nll = -logp[keep, t]
    np.testing.assert_allclose(F.cross_entropy(logits, target).item(), nll.mean(), rtol=1e-12)
    eps = 0.2
    smooth = -logp[keep].sum(1) / 3
    expected = ((1 - eps) * nll + eps * smooth).mean()
    np.testing.assert_allclose(F.cross_entropy(logits, target, label_smoothing=eps).item(), expected,
                               rtol=1e-12)


def test_cross_entropy_with_probability_targets_and_spatial_inputs():
    logits = dynjit.randn(3, 4, dtype=dynjit.float64)
    probs = dynjit.softmax(dynjit.randn(3, 4, dtype=dynjit.float64), 1)
    expected = -(probs.numpy() * _log_softmax(logits.numpy(), 1)).sum(1).mean()
    np.testing.assert_allclose(F.cross_entropy(logits, probs).item(), expected, rtol=1e-12)
    spatial = dynjit.randn(2, 3, 5, dtype=dynjit.float64)      # (N, C, d)
    target = dynjit.randint(0, 3, (2, 5))
    logp = _log_softmax(spatial.numpy(), 1)
    n, d = np.meshgrid(np.arange(2), np.arange(5), indexing="ij")
    expected = -logp[n, target.numpy(), d]
    np.testing.assert_allclose(F.cross_entropy(spatial, target, reduction="none").numpy(), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(F.cross_entropy(spatial, target).item(), expected.mean(), rtol=1e-12)


def test_cross_entropy_unbatched():
    logits = dynjit.randn(4, dtype=dynjit.float64)
    expected = -_log_softmax(logits.numpy(), 0)[2]
    np.testing.assert_allclose(F.cross_entropy(logits, dynjit.tensor(2)).item(), expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p = dynjit.rand(6, dtype=dynjit.float64) * 0.9 + 0.05
    t = dynjit.tensor([0.0, 1.0, 1.0, 0.0, 0.3, 1.0], dtype=dynjit.float64)
    w = dynjit.rand(6, dtype=dynjit.float64)
    a, b = p.numpy(), t.numpy()
    ref = -(b * np.log(a) + (1 - b) * np.log(1 - a))
    np.testing.assert_allclose(nn.BCELoss(reduction=reduction)(p, t).numpy(), _reduce(ref, reduction),
                               rtol=1e-12)
    np.testing.assert_allclose(nn.BCELoss(w, reduction=reduction)(p, t).numpy(),
                               _reduce(ref * w.numpy(), reduction), rtol=1e-12)


def test_binary_cross_entropy_clamps_logs_and_checks_range():
    p = dynjit.tensor([0.0, 1.0], dtype=dynjit.float64)
    t = dynjit.tensor([1.0, 0.0], dtype=dynjit.float64)
    assert F.binary_cross_entropy(p, t, reduction="none").tolist() == [100.0, 100.0]
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(dynjit.tensor([1.5]), dynjit.tensor([1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(dynjit.tensor([0.5]), dynjit.tensor([1.0, 0.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(reduction):
    x = dynjit.randn(5, dtype=dynjit.float64) * 30       # large logits: must stay finite
    t = dynjit.rand(5, dtype=dynjit.float64)
    pos = dynjit.tensor([1.0, 2.0, 0.5, 3.0, 1.0], dtype=dynjit.float64)
    a, b = x.numpy(), t.numpy()
    log_sig = -np.logaddexp(0, -a)
    log_one_minus = -np.logaddexp(0, a)
    ref = -(b * log_sig + (1 - b) * log_one_minus)
    np.testing.assert_allclose(nn.BCEWithLogitsLoss(reduction=reduction)(x, t).numpy(),
                               _reduce(ref, reduction), rtol=1e-10)
    ref_pos = -(pos.numpy() * b * log_sig + (1 - b) * log_one_minus)
    np.testing.assert_allclose(nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=pos)(x, t).numpy(),
                               _reduce(ref_pos, reduction), rtol=1e-10)


def test_kl_div():
    logq = F.log_softmax(dynjit.randn(3, 4, dtype=dynjit.float64), 1)
    p = dynjit.softmax(dynjit.randn(3, 4, dtype=dynjit.float64), 1)
    ref = (p.numpy() * (np.log(p.numpy()) - logq.numpy()))
    np.testing.assert_allclose(nn.KLDivLoss(reduction="batchmean")(logq, p).item(), ref.sum() / 3, rtol=1e-12)
    np.testing.assert_allclose(F.kl_div(logq, p.log(), reduction="sum", log_target=True).item(), ref.sum(),
                               rtol=1e-12)


def test_loss_option_errors():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(dynjit.randn(2, 3), dynjit.tensor([0, 1]), label_smoothing=2.0)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(dynjit.randn(3), dynjit.randn(1))
    with pytest.raises(RuntimeError, match="integer"):
        F.nll_loss(dynjit.randn(2, 3), dynjit.tensor([0.0, 1.0]))


def test_legacy_size_average_and_reduce():
    x, y = dynjit.tensor([1.0, 3.0]), dynjit.tensor([0.0, 0.0])
    assert F.mse_loss(x, y, size_average=False).item() == 10.0
    assert F.mse_loss(x, y, reduce=False).tolist() == [1.0, 9.0]
    assert nn.L1Loss(size_average=False)(x, y).item() == 4.0


# -- gradients ---------------------------------------------------------------------------------------

def _x(*shape):
    return dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck_losses(reduction):
    x, y = _x(3, 4), _x(3, 4)
    target = dynjit.tensor([1, 0, 3])
    weight = dynjit.tensor([1.0, 2.0, 0.5, 1.5], dtype=dynjit.float64)
    probs = (dynjit.rand(3, 4, dtype=dynjit.float64) * 0.8 + 0.1).requires_grad_()
    labels = dynjit.rand(3, 4, dtype=dynjit.float64)
    checks = [
        (lambda a, b: F.mse_loss(a, b, reduction=reduction), (x, y)),
        (lambda a, b: F.l1_loss(a, b, reduction=reduction), (x, y)),
        (lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5), (x, y)),
        (lambda a: F.cross_entropy(a, target, weight, reduction=reduction, label_smoothing=0.1), (x,)),
        (lambda a: F.nll_loss(F.log_softmax(a, 1), target, reduction=reduction), (x,)),
        (lambda a, b: F.cross_entropy(a, dynjit.softmax(b, 1), reduction=reduction), (x, y)),
        (lambda p: F.binary_cross_entropy(p, labels, reduction=reduction), (probs,)),
        (lambda a: F.binary_cross_entropy_with_logits(a, labels, reduction=reduction,
                                                      pos_weight=weight), (x,)),
    ]
    for fn, args in checks:
        assert gradcheck(fn, args)
