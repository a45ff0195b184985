"""dynjit.distributions against independent numpy formulas, finite-difference gradients of
log_prob / entropy / rsample, PyTorch's validation errors, and compiled == plain."""
import math

import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck
from dynjit.distributions import Bernoulli, Categorical, Normal, kl_divergence


def _np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.fixture
def logits_np():
    return np.random.RandomState(0).randn(4, 5)


def test_categorical_from_logits_matches_numpy(logits_np):
    value = np.array([0, 3, 4, 1])
    d = Categorical(logits=dynjit.tensor(logits_np))
    ref = _np_log_softmax(logits_np)
    np.testing.assert_allclose(d.logits.numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(d.probs.numpy(), np.exp(ref), rtol=1e-12)
    np.testing.assert_allclose(d.log_prob(dynjit.tensor(value)).numpy(), ref[np.arange(4), value], rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), -(np.exp(ref) * ref).sum(-1), rtol=1e-12)
    np.testing.assert_array_equal(d.mode.numpy(), ref.argmax(-1))
    assert d.batch_shape == (4,) and d.event_shape == ()


def test_categorical_from_probs_normalizes_and_broadcasts_values():
    p = np.array([[1.0, 3.0], [2.0, 2.0]])
    d = Categorical(probs=dynjit.tensor(p))
    np.testing.assert_allclose(d.probs.numpy(), p / p.sum(-1, keepdims=True))
    lp = d.log_prob(dynjit.tensor([[0], [1], [1]]))         # (3, 1) against batch (2,)
    ref = np.log(p / p.sum(-1, keepdims=True))
    np.testing.assert_allclose(lp.numpy(), np.stack([ref[:, 0], ref[:, 1], ref[:, 1]]))


def test_categorical_sample_frequencies_and_shape():
    dynjit.manual_seed(1)
    d = Categorical(probs=dynjit.tensor([0.1, 0.6, 0.3]))
    s = d.sample((20000,))
    assert s.shape == (20000,) and s.dtype == dynjit.int64
    freq = np.bincount(s.numpy(), minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.015)
    assert Categorical(logits=dynjit.zeros(2, 4)).sample((3,)).shape == (3, 2)


def test_categorical_gradients():
    logits = dynjit.randn(3, 4, dtype=dynjit.float64, requires_grad=True)
    value = dynjit.tensor([1, 0, 3])
    assert gradcheck(lambda l: Categorical(logits=l).log_prob(value), (logits,))
    assert gradcheck(lambda l: Categorical(logits=l).entropy(), (logits,))
    probs = dynjit.rand(3, 4, dtype=dynjit.float64).add(0.1).requires_grad_()
    assert gradcheck(lambda p: Categorical(probs=p).log_prob(value), (probs,))


def test_normal_matches_numpy_and_gradients():
    loc = np.array([0.3, -1.0, 2.0])
    scale = np.array([0.5, 1.0, 2.0])
    x = np.array([0.1, -0.3, 2.5])
    d = Normal(dynjit.tensor(loc), dynjit.tensor(scale))
    ref = -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(d.log_prob(dynjit.tensor(x)).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(dynjit.tensor(x)).numpy(),
                               [0.5 * (1 + math.erf((a - m) / (s * math.sqrt(2)))) for a, m, s in zip(x, loc, scale)])
    np.testing.assert_allclose(d.variance.numpy(), scale ** 2)
    l = dynjit.tensor(loc, requires_grad=True)
    s = dynjit.tensor(scale, requires_grad=True)
    assert gradcheck(lambda l, s: Normal(l, s).log_prob(dynjit.tensor(x)), (l, s))
    assert gradcheck(lambda s: Normal(0.0, 1.0).entropy() + Normal(l, s).entropy(), (s,))


def test_normal_rsample_is_reparameterized():
    dynjit.manual_seed(3)
    loc = dynjit.tensor([1.0, -2.0], dtype=dynjit.float64, requires_grad=True)
    scale = dynjit.tensor([0.5, 3.0], dtype=dynjit.float64, requires_grad=True)
    z = Normal(loc, scale).rsample((5000,))
    assert z.shape == (5000, 2)
    np.testing.assert_allclose(z.mean(0).detach().numpy(), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(z.std(0).detach().numpy(), [0.5, 3.0], rtol=0.05)
    z.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [5000.0, 5000.0])     # dz/dloc = 1 per sample
    assert not Normal(loc, scale).sample().requires_grad


def test_bernoulli_matches_numpy():
    p = np.array([0.2, 0.5, 0.9])
    y = np.array([1.0, 0.0, 1.0])
    d = Bernoulli(probs=dynjit.tensor(p))
    np.testing.assert_allclose(d.log_prob(dynjit.tensor(y)).numpy(), y * np.log(p) + (1 - y) * np.log(1 - p), rtol=1e-6)
    np.testing.assert_allclose(d.entropy().numpy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-6)
    d2 = Bernoulli(logits=dynjit.tensor(np.log(p / (1 - p))))
    np.testing.assert_allclose(d2.probs.numpy(), p, rtol=1e-12)
    dynjit.manual_seed(0)
    np.testing.assert_allclose(Bernoulli(probs=dynjit.tensor(p)).sample((20000,)).mean(0).numpy(), p, atol=0.015)


def test_kl_divergence_matches_numpy():
    pl, ps, ql, qs = 0.3, 0.7, -0.5, 1.5
    kl = kl_divergence(Normal(dynjit.tensor([pl]), dynjit.tensor([ps])), Normal(dynjit.tensor([ql]), dynjit.tensor([qs])))
    np.testing.assert_allclose(kl.numpy(), [np.log(qs / ps) + (ps ** 2 + (pl - ql) ** 2) / (2 * qs ** 2) - 0.5], rtol=1e-6)
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.4, 0.4, 0.2])
    kl = kl_divergence(Categorical(probs=dynjit.tensor(p)), Categorical(probs=dynjit.tensor(q)))
    np.testing.assert_allclose(kl.item(), (p * np.log(p / q)).sum(), rtol=1e-6)
    a, b = 0.3, 0.8
    kl = kl_divergence(Bernoulli(probs=dynjit.tensor(a)), Bernoulli(probs=dynjit.tensor(b)))
    np.testing.assert_allclose(kl.item(), a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b)), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="Normal.*Categorical"):
        kl_divergence(Normal(0.0, 1.0), Categorical(probs=dynjit.tensor(p)))


def test_validation_errors_are_pytorchs():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        Categorical()
    with pytest.raises(ValueError, match=r"Expected parameter probs .* to satisfy the constraint Simplex\(\)"):
        Categorical(probs=dynjit.tensor([-0.1, 1.1]))
    with pytest.raises(ValueError, match=r"Expected parameter scale .*GreaterThan\(lower_bound=0.0\)"):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"Expected value argument .*IntegerInterval\(lower_bound=0, upper_bound=2\)"):
        Categorical(logits=dynjit.zeros(3)).log_prob(dynjit.tensor(3))
    with pytest.raises(ValueError, match="Boolean"):
        Bernoulli(probs=dynjit.tensor(0.5)).log_prob(dynjit.tensor(0.5))
    Categorical(probs=dynjit.tensor([-0.1, 1.1]), validate_args=False)    # no check when asked


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain(backend):
    def policy_loss(logits, loc, scale, x, action):
        m = Categorical(logits=logits)
        n = Normal(loc, scale)
        return (-m.log_prob(action) - 0.01 * m.entropy()).sum() - n.log_prob(x).sum() + kl_divergence(n, Normal(0.0, 1.0)).sum()

    rng = np.random.RandomState(0)
    args = [dynjit.tensor(rng.randn(4, 3).astype(np.float32)), dynjit.tensor(rng.randn(4).astype(np.float32)),
            dynjit.tensor(rng.rand(4).astype(np.float32) + 0.5), dynjit.tensor(rng.randn(4).astype(np.float32)),
            dynjit.tensor([0, 2, 1, 1])]
    results = []
    for fn in (policy_loss, dynjit.compile(policy_loss, backend=backend)):
        leaves = [a.clone().requires_grad_() if a.is_floating_point() else a for a in args]
        out = fn(*leaves)
        out.backward()
        results.append([out.detach().numpy()] + [a.grad.numpy() for a in leaves[:4]])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_sampling_draws_the_plain_samples(backend):
    def act(logits):
        m = Categorical(logits=logits)
        a = m.sample()
        return a, m.log_prob(a)

    logits = dynjit.randn(6, 4)
    dynjit.manual_seed(5)
    a0, lp0 = act(logits)
    dynjit.manual_seed(5)
    a1, lp1 = dynjit.compile(act, backend=backend)(logits)
    np.testing.assert_array_equal(a1.numpy(), a0.numpy())
    np.testing.assert_allclose(lp1.numpy(), lp0.numpy(), rtol=1e-6)


def test_sampling_step_is_one_graph_like_torch_compile():
    from dynjit.testing import CompileCounter

    def act(probs):
        m = Categorical(probs)
        a = m.sample()
        return a, m.log_prob(a), m.entropy()

    counter = CompileCounter()
    f = dynjit.compile(act, backend=counter)
    p = dynjit.softmax(dynjit.randn(1, 3), -1)
    for _ in range(3):
        f(p)
    assert counter.frame_count == 1           # validation is an op: it checks without a break
    with pytest.raises(ValueError, match="Simplex"):
        f(dynjit.tensor([[0.5, -0.5, 1.0]]))  # and it still checks, compiled
