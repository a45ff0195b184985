"""GroupNorm, InstanceNorm, RMSNorm, LocalResponseNorm and BatchNorm3d; the triplet,
margin-ranking and cosine-embedding losses; cosine_similarity and pairwise_distance with
PyTorch's broadcasting and eps; cross_entropy's ignore_index / label_smoothing /
probability targets for every reduction. Values against numpy formulas, float64
gradcheck, PyTorch's errors, compiled == eager."""
import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]
REDUCTIONS = ["mean", "sum", "none"]


def _t(a, requires_grad=False):
    return dynjit.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


@pytest.fixture
def x4():
    return np.random.default_rng(0).standard_normal((2, 6, 3, 4))


# -- normalization ---------------------------------------------------------------------

def test_group_norm(x4):
    w, b = np.arange(1.0, 7.0), np.linspace(-1, 1, 6)
    g = x4.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x4.shape)
    ref = ref * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(F.group_norm(_t(x4), 3, _t(w), _t(b)).numpy(), ref, rtol=1e-10, atol=1e-12)
    m = nn.GroupNorm(3, 6, dtype=dynjit.float64)
    with dynjit.no_grad():
        m.weight.copy_(_t(w))
        m.bias.copy_(_t(b))
    np.testing.assert_allclose(m(_t(x4)).detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(_t(x4), 4)


def _instance_ref(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_instance_norm_and_running_stats(x4):
    np.testing.assert_allclose(F.instance_norm(_t(x4)).numpy(), _instance_ref(x4), rtol=1e-10, atol=1e-12)
    m = nn.InstanceNorm2d(6, affine=True, track_running_stats=True, dtype=dynjit.float64)
    out = m(_t(x4))
    np.testing.assert_allclose(out.detach().numpy(), _instance_ref(x4), rtol=1e-10, atol=1e-12)
    axes = (2, 3)
    mean = x4.mean(axes).mean(0)
    var = x4.var(axes, ddof=1).mean(0)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * mean, rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(), 0.9 + 0.1 * var, rtol=1e-10)
    m.eval()      # eval with tracked statistics normalizes by them
    ref = (x4 - m.running_mean.numpy()[:, None, None]) / np.sqrt(m.running_var.numpy()[:, None, None] + 1e-5)
    np.testing.assert_allclose(m(_t(x4)).detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    # unbatched (C, L) input for InstanceNorm1d
    x = x4[0, :, :, 0]
    np.testing.assert_allclose(nn.InstanceNorm1d(6)(_t(x)).numpy(), _instance_ref(x[None])[0], rtol=1e-10)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(_t(np.ones((2, 6, 1))))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(5\)"):
        nn.InstanceNorm1d(5, affine=True)(_t(np.ones((2, 6, 3))))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(5)(_t(np.random.default_rng(1).standard_normal((2, 6, 3))))


def test_rms_norm(x4):
    w = np.random.default_rng(2).standard_normal((3, 4))
    ref = x4 / np.sqrt((x4 ** 2).mean((2, 3), keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(F.rms_norm(_t(x4), (3, 4), _t(w), eps=1e-6).numpy(), ref, rtol=1e-10)
    m = nn.RMSNorm(4)       # eps=None: the dtype's epsilon
    x32 = x4.astype(np.float32)
    ref32 = x32 / np.sqrt((x32 ** 2).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    np.testing.assert_allclose(m(dynjit.tensor(x32)).detach().numpy(), ref32, rtol=1e-5)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*5\]"):
        F.rms_norm(_t(x4), (5,))


def test_local_response_norm(x4):
    size, alpha, beta, k = 3, 0.1, 0.75, 2.0
    sq = np.pad(x4 ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    window = sum(sq[:, i:i + 6] for i in range(size))
    ref = x4 / (k + alpha / size * window) ** beta
    np.testing.assert_allclose(nn.LocalResponseNorm(size, alpha, beta, k)(_t(x4)).numpy(), ref, rtol=1e-10)


def test_batch_norm_3d():
    x = np.random.default_rng(3).standard_normal((2, 3, 2, 2, 2))
    m = nn.BatchNorm3d(3, dtype=dynjit.float64)
    axes = (0, 2, 3, 4)
    ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(m(_t(x)).detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        m(_t(x[0]))


def test_norm_gradchecks(x4):
    x = _t(x4[:, :, :2, :2], requires_grad=True)
    w, b = _t(np.linspace(0.5, 2, 6), True), _t(np.linspace(-1, 1, 6), True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))
    assert gradcheck(lambda x: F.rms_norm(x, (2, 2)), (x,))
    assert gradcheck(lambda x: F.local_response_norm(x, 2), (x,))


def test_normalize():
    x = np.random.default_rng(11).standard_normal((3, 4, 2))
    x[0, :, 0] = 0                      # a zero vector stays zero (the norm is clamped at eps)
    for p, dim in [(2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1)]:
        norm = np.linalg.norm(np.moveaxis(x, dim, -1), ord=p, axis=-1)
        ref = x / np.expand_dims(np.maximum(norm, 1e-12), dim)
        np.testing.assert_allclose(F.normalize(_t(x), p, dim).numpy(), ref, rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda t: F.normalize(t, 2.0, 1), (_t(x[1:], requires_grad=True),))


# -- distances and losses ----------------------------------------------------------------

def test_cosine_similarity_broadcasts_and_clamps_each_norm():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 1, 4)), rng.standard_normal((1, 5, 4))
    ref = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    np.testing.assert_allclose(F.cosine_similarity(_t(a), _t(b), dim=-1).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(nn.CosineSimilarity(dim=-1)(_t(a), _t(b)).numpy(), ref, rtol=1e-12)
    # each norm is clamped at eps separately (a tiny vector is not rescaled to unit length)
    small = F.cosine_similarity(_t([[1e-9, 0.0]]), _t([[1.0, 0.0]]))
    np.testing.assert_allclose(small.numpy(), [0.1], rtol=1e-12)


def test_pairwise_distance():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(4), rng.standard_normal((3, 4))
    ref = (np.abs(a - b + 1e-6) ** 3).sum(-1) ** (1 / 3)
    np.testing.assert_allclose(F.pairwise_distance(_t(a), _t(b), p=3.0).numpy(), ref, rtol=1e-12)
    out = nn.PairwiseDistance(keepdim=True)(_t(b), _t(b[::-1].copy()))
    assert tuple(out.shape) == (3, 1)
    np.testing.assert_allclose(out.numpy()[:, 0], np.linalg.norm(b - b[::-1] + 1e-6, axis=-1), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin_loss(reduction):
    rng = np.random.default_rng(6)
    a, p, n = (rng.standard_normal((5, 4)) for _ in range(3))
    d = lambda x, y: np.linalg.norm(x - y + 1e-6, axis=-1)
    ref = np.maximum(1.0 + d(a, p) - d(a, n), 0)
    got = nn.TripletMarginLoss(reduction=reduction)(_t(a), _t(p), _t(n))
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-12)
    ref_swap = np.maximum(0.5 + d(a, p) - np.minimum(d(a, n), d(p, n)), 0)
    got = F.triplet_margin_loss(_t(a), _t(p), _t(n), margin=0.5, swap=True, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), _reduce(ref_swap, reduction), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_and_cosine_embedding_losses(reduction):
    rng = np.random.default_rng(7)
    x1, x2, y = rng.standard_normal(6), rng.standard_normal(6), np.array([1.0, -1, 1, -1, 1, -1])
    ref = np.maximum(-y * (x1 - x2) + 0.2, 0)
    np.testing.assert_allclose(nn.MarginRankingLoss(0.2, reduction=reduction)(_t(x1), _t(x2), _t(y)).numpy(),
                               _reduce(ref, reduction), rtol=1e-12)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    ref = np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0))
    got = nn.CosineEmbeddingLoss(0.1, reduction=reduction)(_t(a), _t(b), _t(y))
    np.testing.assert_allclose(got.numpy(), _reduce(ref, reduction), rtol=1e-12)


def _log_softmax(a, axis=1):
    s = a - a.max(axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis, keepdims=True))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_smoothing_ignore_index_weights(reduction):
    rng = np.random.default_rng(8)
    logits, target = rng.standard_normal((6, 4)), np.array([0, 1, 3, 2, 1, 0])
    w, eps = np.array([0.5, 2.0, 1.0, 1.5]), 0.2
    logp = _log_softmax(logits)
    valid = target != 1                 # ignore_index=1
    t = np.where(valid, target, 0)
    nll = -logp[np.arange(6), t] * w[t] * valid
    smooth = -(logp * w).sum(1) * valid
    if reduction == "mean":
        ref = (1 - eps) * nll.sum() / (w[t] * valid).sum() + eps / 4 * smooth.sum() / (w[t] * valid).sum()
    else:
        ref = _reduce((1 - eps) * nll + eps / 4 * smooth, reduction)
    got = F.cross_entropy(_t(logits), dynjit.tensor(target), weight=_t(w), ignore_index=1, label_smoothing=eps,
                          reduction=reduction)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    # probability targets (smoothed, weighted): the mean divides by the batch size
    probs = rng.random((6, 4))
    probs /= probs.sum(1, keepdims=True)
    soft = probs * (1 - eps) + eps / 4
    ref = _reduce(-(logp * soft * w).sum(1), reduction)
    got = F.cross_entropy(_t(logits), _t(probs), weight=_t(w), label_smoothing=eps, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


def test_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(dynjit.randn(3, 4), dynjit.rand(3, 4), ignore_index=1)
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(dynjit.randn(3, 4), dynjit.tensor([0, 1, 2]), label_smoothing=1.5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_weights(reduction):
    rng = np.random.default_rng(9)
    p, y, w = 1 / (1 + np.exp(-rng.standard_normal((3, 4)))), rng.random((3, 4)), rng.random(4)
    ref = -w * (y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(nn.BCELoss(weight=_t(w), reduction=reduction)(_t(p), _t(y)).numpy(),
                               _reduce(ref, reduction), rtol=1e-12)


def test_loss_gradchecks():
    rng = np.random.default_rng(10)
    a, p, n = (_t(rng.standard_normal((4, 3)), True) for _ in range(3))
    assert gradcheck(lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True, margin=2.0), (a, p, n))
    y = _t([1.0, -1.0, 1.0, -1.0])
    assert gradcheck(lambda a, p: F.cosine_embedding_loss(a, p, y, margin=-0.5), (a, p))
    assert gradcheck(lambda a, p: F.margin_ranking_loss(a[:, 0], p[:, 0], y, margin=5.0), (a, p))
    assert gradcheck(lambda a, p: F.cosine_similarity(a, p), (a, p))
    assert gradcheck(lambda a, p: F.pairwise_distance(a, p), (a, p))
    target = dynjit.tensor([0, 2, 1, 2])
    assert gradcheck(lambda a: F.cross_entropy(a, target, ignore_index=2, label_smoothing=0.3,
                                               weight=_t([1.0, 2.0, 0.5])), (a,))
    probs = _t(rng.dirichlet(np.ones(3), 4))
    assert gradcheck(lambda a: F.cross_entropy(a, probs, label_smoothing=0.1), (a,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_losses_and_norms_compiled_match_eager(backend):
    def f(x, a, p, n, target):
        h = F.group_norm(x, 2) + F.instance_norm(x) + F.rms_norm(x, (3,))
        loss = (h.pow(2).mean() + F.triplet_margin_loss(a, p, n)
                + F.cross_entropy(a, target, label_smoothing=0.1, ignore_index=0)
                + F.cosine_embedding_loss(a, p, dynjit.tensor([1.0, -1.0, 1.0, -1.0]))
                + F.cosine_similarity(a, n).sum())
        loss.backward()
        return loss

    def run(fn):
        dynjit.manual_seed(3)
        x = dynjit.randn(2, 4, 3, requires_grad=True)
        a, p, n = (dynjit.randn(4, 5, requires_grad=True) for _ in range(3))
        target = dynjit.tensor([0, 1, 4, 2])
        loss = fn(x, a, p, n, target)
        return [loss.detach().numpy()] + [t.grad.numpy() for t in (x, a, p, n)]

    for got, want in zip(run(dynjit.compile(f, backend=backend)), run(f)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
