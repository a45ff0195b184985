"""The rest of nn's breadth: channel and alpha dropout, PixelShuffle/PixelUnshuffle, the
Upsample modules, nn.init (every initializer, its statistics and errors) and multinomial.
Values against numpy, PyTorch's errors, compiled == eager."""
import math

import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]


# -- dropout ---------------------------------------------------------------------------

@pytest.mark.parametrize("module, shape, lead", [(nn.Dropout1d, (8, 16, 5), 2), (nn.Dropout1d, (16, 5), 1),
                                                 (nn.Dropout2d, (8, 16, 3, 2), 2),
                                                 (nn.Dropout3d, (8, 16, 2, 2, 2), 2),
                                                 (nn.Dropout3d, (16, 2, 2, 2), 1)])
def test_channel_dropout_zeroes_whole_channels(module, shape, lead):
    m = module(0.5)
    out = m(dynjit.ones(*shape)).numpy()
    per_channel = out.reshape(shape[:lead] + (-1,))
    # every channel is all zeros or all 1/(1-p)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    m.eval()
    x = dynjit.randn(*shape)
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(dynjit.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout2d(1.5)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        out = F.dropout2d(dynjit.ones(4, 8, 6)).numpy()
    assert np.all((out == 0).all(-1) | (out == 2).all(-1))     # taken as (N, C, L)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(dynjit.ones(2, 3))


def test_channel_dropout_gradient_follows_the_mask():
    x = dynjit.ones(4, 6, 3, requires_grad=True)
    out = F.dropout1d(x, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


def test_alpha_dropout_keeps_mean_and_variance():
    x = dynjit.randn(200000)
    out = nn.AlphaDropout(0.2)(x).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    alpha = -1.7580993408473766
    a = ((1 - 0.2) * (1 + 0.2 * alpha ** 2)) ** -0.5
    dropped_value = a * alpha - a * alpha * 0.2
    assert np.isclose(out, dropped_value).mean() == pytest.approx(0.2, abs=0.01)
    m = nn.AlphaDropout(0.2).eval()
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())


# -- pixel shuffle and upsampling ---------------------------------------------------------

def test_pixel_shuffle_and_unshuffle():
    x = np.arange(2 * 8 * 3 * 5, dtype=np.float64).reshape(2, 8, 3, 5)
    r = 2
    ref = x.reshape(2, 2, r, r, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    out = nn.PixelShuffle(r)(dynjit.tensor(x))
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(nn.PixelUnshuffle(r)(out).numpy(), x)
    np.testing.assert_array_equal(F.pixel_shuffle(dynjit.tensor(x[0]), r).numpy(), ref[0])   # no batch dim
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=5 is not divisible by 4"):
        F.pixel_shuffle(dynjit.ones(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\)=3 is not divisible by 2"):
        F.pixel_unshuffle(dynjit.ones(1, 5, 3, 2), 2)
    t = dynjit.randn(1, 4, 2, 3, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(lambda t: F.pixel_shuffle(t, 2) * dynjit.arange(24.0, dtype=dynjit.float64).reshape(4, 6), (t,))


def test_upsample_modules():
    x = dynjit.tensor(np.arange(4.0).reshape(1, 1, 2, 2))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(x).numpy()[0, 0],
                                  np.repeat(np.repeat(np.arange(4.0).reshape(2, 2), 2, 0), 2, 1))
    out = nn.UpsamplingBilinear2d(size=3)(x).numpy()[0, 0]
    np.testing.assert_allclose(out, [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])
    assert "scale_factor=2.0" in repr(nn.Upsample(scale_factor=2))
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        nn.Upsample(size=3, scale_factor=2)(x)


# -- nn.init ---------------------------------------------------------------------------

def test_init_statistics():
    w = dynjit.empty(400, 300)
    nn.init.uniform_(w, -2, 3)
    assert w.numpy().min() >= -2 and w.numpy().max() < 3 and abs(w.numpy().mean() - 0.5) < 0.05
    nn.init.normal_(w, 1.0, 2.0)
    assert abs(w.numpy().mean() - 1) < 0.05 and abs(w.numpy().std() - 2) < 0.05
    nn.init.trunc_normal_(w, 0.0, 1.0, -0.5, 1.5)
    assert w.numpy().min() >= -0.5 and w.numpy().max() <= 1.5
    nn.init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 700)
    assert np.abs(w.numpy()).max() <= bound and abs(w.numpy().std() - bound / math.sqrt(3)) < 0.01 * bound
    nn.init.xavier_normal_(w)
    assert abs(w.numpy().std() - math.sqrt(2 / 700)) < 0.002
    nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 400)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.99 * bound
    nn.init.kaiming_normal_(w, a=0.2, nonlinearity="leaky_relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 1.04) / math.sqrt(300)) < 0.003
    nn.init.constant_(w, 0.25)
    assert np.all(w.numpy() == 0.25)
    nn.init.ones_(w)
    nn.init.zeros_(w)
    assert np.all(w.numpy() == 0)
    nn.init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(400, 300))


def test_init_generator_gives_reproducible_draws():
    a, b = dynjit.empty(5, 4), dynjit.empty(5, 4)
    nn.init.normal_(a, generator=dynjit.Generator().manual_seed(3))
    nn.init.normal_(b, generator=dynjit.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_orthogonal_dirac_sparse():
    for shape in [(6, 4), (3, 8), (4, 2, 3)]:
        w = dynjit.empty(*shape)
        nn.init.orthogonal_(w, gain=2.0)
        m = w.numpy().reshape(shape[0], -1).astype(np.float64)
        gram = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 4 * np.eye(gram.shape[0]), atol=1e-5)
    w = dynjit.empty(4, 2, 3, 3)
    nn.init.dirac_(w, groups=2)
    ref = np.zeros((4, 2, 3, 3))
    for g in range(2):
        for d in range(2):
            ref[g * 2 + d, d, 1, 1] = 1
    np.testing.assert_array_equal(w.numpy(), ref)
    # a dirac-initialized convolution weight copies its input (checked through einsum)
    w3 = dynjit.empty(3, 3, 1)
    nn.init.dirac_(w3)
    np.testing.assert_array_equal(w3.numpy()[:, :, 0], np.eye(3))
    s = dynjit.empty(10, 6)
    nn.init.sparse_(s, 0.3, std=0.5)
    assert np.all((s.numpy() == 0).sum(0) >= 3)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        nn.init.dirac_(dynjit.empty(3, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        nn.init.dirac_(dynjit.empty(3, 2, 3), groups=2)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        nn.init.orthogonal_(dynjit.empty(3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.sparse_(dynjit.empty(3, 2, 2), 0.5)


def test_calculate_gain_and_errors():
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init.calculate_gain("selu") == 0.75
    assert nn.init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        nn.init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        nn.init.calculate_gain("leaky_relu", "x")
    with pytest.raises(ValueError, match=r"Mode fan_xx not supported, please use one of \['fan_in', 'fan_out'\]"):
        nn.init.kaiming_uniform_(dynjit.empty(3, 2), mode="fan_xx")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.xavier_uniform_(dynjit.empty(3))


# -- multinomial -----------------------------------------------------------------------

def test_multinomial_frequencies_and_without_replacement():
    probs = dynjit.tensor([[1.0, 2.0, 0.0, 1.0], [0.0, 0.0, 1.0, 3.0]])
    draws = dynjit.multinomial(probs, 20000, replacement=True).numpy()
    assert draws.dtype == np.int64 and draws.shape == (2, 20000)
    for row, p in zip(draws, probs.numpy()):
        np.testing.assert_allclose(np.bincount(row, minlength=4) / 20000, p / p.sum(), atol=0.015)
    once = probs.multinomial(2)
    for row, p in zip(once.numpy(), probs.numpy()):
        assert len(set(row)) == 2 and np.all(p[row] > 0)
    # without replacement, zero weights come last
    assert sorted(dynjit.multinomial(dynjit.tensor([0.0, 5.0, 0.0]), 3).tolist()[:1]) == [1]
    dynjit.manual_seed(7)
    a = dynjit.multinomial(probs, 5, True)
    dynjit.manual_seed(7)
    np.testing.assert_array_equal(a.numpy(), dynjit.multinomial(probs, 5, True).numpy())


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        dynjit.multinomial(dynjit.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes for input, got: int64"):
        dynjit.multinomial(dynjit.tensor([1, 0]), 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        dynjit.multinomial(dynjit.ones(3), 4)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        dynjit.multinomial(dynjit.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
        dynjit.multinomial(dynjit.zeros(3), 1)


# -- compiled == eager ----------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_breadth_compiled_matches_eager(backend):
    def f(x, probs):
        y = F.pixel_unshuffle(F.pixel_shuffle(x, 2) * 2.0, 2)
        y = F.dropout2d(y, 0.5) + F.alpha_dropout(x, 0.3, training=True)
        y.sum().backward()
        return y, dynjit.multinomial(probs, 3, replacement=True)

    def run(fn):
        dynjit.manual_seed(5)
        x = dynjit.randn(2, 4, 3, 3, requires_grad=True)
        probs = dynjit.tensor([[0.2, 0.5, 0.3], [1.0, 1.0, 0.0]])
        y, draws = fn(x, probs)
        return [y.detach().numpy(), x.grad.numpy(), draws.numpy()]

    got, want = run(dynjit.compile(f, backend=backend)), run(f)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- F.pad's non-constant modes --------------------------------------------------------------
_NP_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", sorted(_NP_PAD_MODES))
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 1)), ((1, 2, 5), (0, 3)), ((2, 3, 4), (1, 2, 2, 1)),
                                       ((1, 2, 3, 4), (1, 1, 2, 0)), ((1, 1, 3, 4, 5), (1, 2, 1, 0, 2, 2))])
def test_pad_modes_against_numpy(mode, shape, pad):
    import numpy as np
    import dynjit.nn.functional as F
    x = dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)
    widths = [(0, 0)] * len(shape)
    for i in range(len(pad) // 2):
        widths[len(shape) - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    out = F.pad(x, pad, mode=mode)
    np.testing.assert_array_equal(out.detach().numpy(), np.pad(x.detach().numpy(), widths, mode=_NP_PAD_MODES[mode]))
    assert dynjit.autograd.gradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))
    compiled = dynjit.compile(lambda t: F.pad(t, pad, mode=mode) * 2, backend="aot_eager")
    assert dynjit.equal(compiled(x.detach()), out.detach() * 2)


def test_pad_mode_errors_are_pytorchs():
    import dynjit.nn.functional as F
    x = dynjit.arange(8.).reshape(1, 2, 4)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input tensor"):
        F.pad(dynjit.arange(4.), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(ValueError, match="wrapping around more than once"):
        F.pad(x, (5, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode bogus"):
        F.pad(x, (1, 1), mode="bogus")


@pytest.mark.parametrize("cls,mode,nd", [
    (nn.ZeroPad2d, "constant", 2), (nn.ConstantPad1d, "constant", 1), (nn.ReflectionPad1d, "reflect", 1),
    (nn.ReflectionPad2d, "reflect", 2), (nn.ReplicationPad3d, "replicate", 3), (nn.CircularPad2d, "circular", 2)])
def test_padding_modules_are_f_pad(cls, mode, nd):
    import numpy as np
    x = dynjit.randn(*([1, 2] + [4] * nd))
    module = cls(1) if cls is not nn.ConstantPad1d else cls(1, 2.5)
    widths = [(0, 0), (0, 0)] + [(1, 1)] * nd
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    kwargs = {"constant_values": 2.5 if cls is nn.ConstantPad1d else 0.0} if mode == "constant" else {}
    np.testing.assert_array_equal(module(x).numpy(), np.pad(x.numpy(), widths, mode=np_mode, **kwargs))
    assert module.padding == (1,) * (2 * nd)
