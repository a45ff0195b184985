"""Library additions the second batch of real programs (tests/programs) needed:
F.embedding_bag / nn.EmbeddingBag (a composite of registered ops), and Tensor.uniform_ /
Tensor.normal_. Values against independent numpy loops, gradients by finite differences,
plain against compiled on every backend."""
import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]


def bags_reference(weight, indices, offsets, mode, per_sample_weights=None, include_last_offset=False,
                   padding_idx=None):
    """One numpy loop per bag: the rows of `weight` in it, padding rows left out."""
    ends = list(offsets[1:]) + ([] if include_last_offset else [len(indices)])
    starts = offsets[:-1] if include_last_offset else offsets
    out = np.zeros((len(starts), weight.shape[1]), weight.dtype)
    for b, (s, e) in enumerate(zip(starts, ends)):
        rows = [weight[indices[i]] * (1 if per_sample_weights is None else per_sample_weights[i])
                for i in range(s, e) if indices[i] != padding_idx]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](np.stack(rows), axis=0)
    return out


INDICES = np.array([1, 2, 0, 4, 5, 0, 3, 9, 2])
OFFSETS = np.array([0, 3, 3, 5])        # the second bag is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_matches_a_loop_per_bag(mode, padding_idx, include_last_offset):
    weight = np.random.RandomState(0).randn(10, 3)
    offsets = np.append(OFFSETS, len(INDICES)) if include_last_offset else OFFSETS
    out = F.embedding_bag(dynjit.tensor(INDICES), dynjit.tensor(weight), dynjit.tensor(offsets), mode=mode,
                          padding_idx=padding_idx, include_last_offset=include_last_offset)
    expected = bags_reference(weight, INDICES, offsets, mode, include_last_offset=include_last_offset,
                              padding_idx=padding_idx)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_embedding_bag_2d_input_and_per_sample_weights():
    weight = np.random.RandomState(1).randn(10, 4)
    indices = np.array([[1, 2, 3], [4, 4, 9]])
    out = F.embedding_bag(dynjit.tensor(indices), dynjit.tensor(weight), mode="mean")
    np.testing.assert_allclose(out.numpy(), weight[indices].mean(1), rtol=1e-12)
    psw = np.random.RandomState(2).rand(len(INDICES))
    out = F.embedding_bag(dynjit.tensor(INDICES), dynjit.tensor(weight), dynjit.tensor(OFFSETS), mode="sum",
                          per_sample_weights=dynjit.tensor(psw))
    np.testing.assert_allclose(out.numpy(), bags_reference(weight, INDICES, OFFSETS, "sum", psw), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    weight = dynjit.tensor(np.random.RandomState(3).randn(10, 3), requires_grad=True)
    psw = dynjit.tensor(np.random.RandomState(4).rand(len(INDICES)), requires_grad=True)
    indices, offsets = dynjit.tensor(INDICES), dynjit.tensor(OFFSETS)
    if mode == "sum":
        assert gradcheck(lambda w, p: F.embedding_bag(indices, w, offsets, mode="sum", per_sample_weights=p),
                         (weight, psw))
    else:
        assert gradcheck(lambda w: F.embedding_bag(indices, w, offsets, mode=mode, padding_idx=0), (weight,))


def test_embedding_bag_padding_row_gets_no_gradient():
    bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert np.all(bag.weight.detach().numpy()[0] == 0)
    bag(dynjit.tensor(INDICES), dynjit.tensor(OFFSETS)).sum().backward()
    grad = bag.weight.grad.numpy()
    assert np.all(grad[0] == 0)
    np.testing.assert_array_equal(grad[:, 0], np.bincount(INDICES[INDICES != 0], minlength=10))


def test_embedding_bag_errors():
    weight = dynjit.randn(10, 3)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(dynjit.tensor(INDICES), weight, dynjit.tensor(OFFSETS), mode="prod")
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(dynjit.tensor([[1, 2]]), weight, dynjit.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(dynjit.tensor([1, 2]), weight)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(dynjit.tensor([1, 2]), weight, dynjit.tensor([0]), mode="mean",
                        per_sample_weights=dynjit.ones(2))
    with pytest.raises(RuntimeError, match="integer dtype"):
        F.embedding_bag(dynjit.tensor([1.0]), weight, dynjit.tensor([0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["mean", "max"])
def test_embedding_bag_compiled_like_plain(backend, mode):
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=0)

    def step(indices, offsets):
        bag.weight.grad = None
        out = bag(indices, offsets)
        (out * dynjit.arange(out.numel()).reshape(out.shape)).sum().backward()
        return out.detach(), bag.weight.grad.clone()

    compiled = dynjit.compile(step, backend=backend)
    for offsets in (OFFSETS, np.array([0, 4, 8])):   # other offsets: the graph reads them, not a constant
        args = dynjit.tensor(INDICES), dynjit.tensor(offsets)
        for a, b in zip(step(*args), compiled(*args)):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


def test_tensor_uniform_and_normal_in_place():
    dynjit.manual_seed(5)
    x = dynjit.empty(2000)
    assert x.uniform_(-0.5, 2.0) is x
    values = x.numpy()
    assert values.min() >= -0.5 and values.max() < 2.0 and abs(values.mean() - 0.75) < 0.05
    dynjit.manual_seed(5)
    np.testing.assert_array_equal(dynjit.empty(2000).uniform_(**{"from": -0.5, "to": 2.0}).numpy(), values)
    y = dynjit.empty(4000).normal_(mean=3.0, std=0.5)
    assert abs(y.numpy().mean() - 3.0) < 0.05 and abs(y.numpy().std() - 0.5) < 0.05
    g1, g2 = dynjit.Generator().manual_seed(1), dynjit.Generator().manual_seed(1)
    np.testing.assert_array_equal(dynjit.empty(5).normal_(generator=g1).numpy(),
                                  dynjit.empty(5).normal_(generator=g2).numpy())
    with pytest.raises(Exception, match="not implemented for 'Long'"):
        dynjit.zeros(3, dtype=dynjit.int64).uniform_()


# -- optim.swa_utils --------------------------------------------------------------------

from dynjit.optim.swa_utils import (SWALR, AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn,  # noqa: E402
                                    get_swa_multi_avg_fn, update_bn)


def _bn_model():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double()


def _snapshots(model, n, seed=0):
    """n successive states of `model` (parameters moved by random steps, BatchNorm statistics
    by a training-mode forward), as numpy copies after each."""
    rng = np.random.RandomState(seed)
    states = []
    for _ in range(n):
        with dynjit.no_grad():
            for p in model.parameters():
                p.add_(dynjit.tensor(rng.randn(*p.shape)))
        model.train()
        model(dynjit.tensor(rng.randn(5, 3)))
        states.append({k: v.numpy().copy() for k, v in model.state_dict().items()})
        yield states[-1]


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_fn", "swa_multi"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_the_running_average(kind, use_buffers):
    decay = 0.8
    fns = {"swa": {}, "ema_multi": {"multi_avg_fn": get_ema_multi_avg_fn(decay)},
           "ema_fn": {"avg_fn": get_ema_avg_fn(decay)}, "swa_multi": {"multi_avg_fn": get_swa_multi_avg_fn()}}
    model = _bn_model()
    averaged = AveragedModel(model, use_buffers=use_buffers, **fns[kind])
    if kind == "swa_multi" and use_buffers:     # num_batches_tracked averaged by addcdiv: PyTorch's error
        snapshots = _snapshots(model, 2)
        next(snapshots), averaged.update_parameters(model), next(snapshots)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            averaged.update_parameters(model)
        return
    reference = None
    for i, state in enumerate(_snapshots(model, 4)):
        averaged.update_parameters(model)
        if reference is None:
            reference = {k: v.astype(np.float64) for k, v in state.items()}
        else:
            for k, v in state.items():
                # swa_multi's lerp weight is PyTorch's 1 / (n_averaged + 1), a float32 tensor
                w = (1 - decay) if kind.startswith("ema") else \
                    float(np.float32(1 / (i + 1))) if kind == "swa_multi" else 1 / (i + 1)
                reference[k] = reference[k] + w * (v - reference[k])
                if v.dtype.kind == "i":        # written back into the integer buffer: truncated
                    reference[k] = np.trunc(reference[k])
    assert int(averaged.n_averaged) == 4
    result = averaged.state_dict()
    for k, v in reference.items():
        got = result["module." + k].numpy()
        if k.endswith("num_batches_tracked"):
            # an integer buffer: the last model's when not averaged; else averaged and truncated
            expected = state[k] if not use_buffers else v
            assert int(got) == int(expected), (k, got, expected)
        elif k.startswith("1.running") and not use_buffers:
            np.testing.assert_allclose(got, state[k], rtol=1e-12)       # copied from the model
        else:
            np.testing.assert_allclose(got, v, rtol=1e-10, atol=1e-12, err_msg=k)


def test_averaged_model_errors_and_forward():
    model = _bn_model()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        AveragedModel(model, avg_fn=get_ema_avg_fn(), multi_avg_fn=get_ema_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        get_ema_multi_avg_fn(1.5)
    averaged = AveragedModel(model)
    averaged.update_parameters(model)
    model.eval(), averaged.eval()
    x = dynjit.randn(4, 3, dtype=dynjit.float64)
    np.testing.assert_array_equal(averaged(x).detach().numpy(), model(x).detach().numpy())
    assert all(not p.requires_grad or p.grad is None for p in averaged.parameters())


@pytest.mark.parametrize("backend", BACKENDS)
def test_averaged_model_compiled_forward_like_plain(backend):
    model = _bn_model()
    averaged = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.5))
    for _ in _snapshots(model, 3):
        averaged.update_parameters(model)
    averaged.eval()
    compiled = dynjit.compile(averaged, backend=backend)
    x = dynjit.randn(6, 3, dtype=dynjit.float64)
    np.testing.assert_allclose(compiled(x).detach().numpy(), averaged(x).detach().numpy(), rtol=1e-12)


def test_update_bn_recomputes_statistics_as_a_cumulative_average():
    model = _bn_model()
    list(_snapshots(model, 2))
    model.eval()
    data = np.random.RandomState(3).randn(12, 3)
    loader = [(dynjit.tensor(data[i:i + 4]), dynjit.zeros(4)) for i in range(0, 12, 4)]
    update_bn(loader, model)
    with dynjit.no_grad():
        hidden = [model[0](x).numpy() for x, _ in loader]
    bn = model[1]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([h.mean(0) for h in hidden], 0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([h.var(0, ddof=1) for h in hidden], 0), rtol=1e-12)
    assert int(bn.num_batches_tracked) == 3 and bn.momentum == 0.1 and not model.training


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 3])
def test_swalr_anneals_to_the_swa_learning_rate(strategy, anneal_epochs):
    params = [nn.Parameter(dynjit.zeros(1)), nn.Parameter(dynjit.zeros(1))]
    optimizer = dynjit.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1)
    scheduler = SWALR(optimizer, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    anneal = (lambda t: (1 - np.cos(np.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    for step in range(1, 6):
        optimizer.step()
        scheduler.step()
        t = min(1.0, step / max(1, anneal_epochs)) if anneal_epochs else 1.0
        # the closed form: lr = swa_lr * alpha(t) + start_lr * (1 - alpha(t))
        for lr, start, swa_lr in zip(scheduler.get_last_lr(), (0.1, 0.5), (0.05, 0.01)):
            assert lr == pytest.approx(swa_lr * anneal(t) + start * (1 - anneal(t)), rel=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear'"):
        SWALR(optimizer, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
        SWALR(optimizer, [0.1])


# -- activations: Hardsigmoid, Hardswish, SELU, CELU, PReLU, GLU, Softshrink, Hardshrink, Tanhshrink

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {   # name: (function, numpy formula, numpy derivative)
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                    lambda x: np.where((x > -3) & (x < 3), 1 / 6, 0)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.where(x <= -3, 0, np.where(x < 3, (2 * x + 3) / 6, 1))),
    "selu": (F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * (np.exp(x) - 1)),
             lambda x: SELU_SCALE * np.where(x > 0, 1, SELU_ALPHA * np.exp(x))),
    "celu": (lambda x: F.celu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * (np.exp(x / 0.7) - 1)),
             lambda x: np.where(x > 0, 1, np.exp(x / 0.7))),
    "softshrink": (lambda x: F.softshrink(x, 0.5), lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)),
                   lambda x: np.where(np.abs(x) > 0.5, 1, 0)),
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), lambda x: np.where(np.abs(x) > 0.5, x, 0),
                   lambda x: np.where(np.abs(x) > 0.5, 1, 0)),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x), lambda x: np.tanh(x) ** 2),
}
# the kinks are included: PyTorch's one-sided derivative there is what the formulas give
POINTS = np.array([-4.0, -3.0, -2.5, -0.5, 0.0, 0.3, 0.5, 0.6, 2.9, 3.0, 3.5])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_derivatives(name):
    fn, formula, derivative = ACTIVATIONS[name]
    x = dynjit.tensor(POINTS, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), formula(POINTS), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), derivative(POINTS), rtol=1e-12, atol=1e-15)
    smooth = dynjit.tensor(np.random.RandomState(0).uniform(-4, 4, 20), requires_grad=True)  # away from kinks
    assert gradcheck(fn, (smooth,))


def test_prelu_per_channel_and_its_module():
    rng = np.random.RandomState(1)
    x_np, w_np = rng.randn(2, 3, 4), np.array([0.1, 0.2, 0.3])
    x, w = dynjit.tensor(x_np, requires_grad=True), dynjit.tensor(w_np, requires_grad=True)
    expected = np.where(x_np > 0, x_np, w_np[None, :, None] * x_np)
    np.testing.assert_allclose(F.prelu(x, w).detach().numpy(), expected, rtol=1e-12)
    assert gradcheck(F.prelu, (x, w))
    layer = nn.PReLU(3).double()
    assert np.all(layer.weight.detach().numpy() == 0.25) and repr(layer) == "PReLU(num_parameters=3)"
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.where(x_np > 0, 0, x_np).sum((0, 2)), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 5"):
        F.prelu(dynjit.ones(2, 5), dynjit.ones(3))


def test_glu_halves_and_errors():
    x_np = np.random.RandomState(2).randn(3, 6)
    x = dynjit.tensor(x_np, requires_grad=True)
    np.testing.assert_allclose(nn.GLU(dim=1)(x).detach().numpy(), x_np[:, :3] * _sigmoid(x_np[:, 3:]), rtol=1e-12)
    assert gradcheck(lambda t: F.glu(t, 0 if t.shape[0] % 2 == 0 else 1), (x,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(dynjit.ones(2, 5))


def test_activation_errors_and_reprs():
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\] for input dtype Float, "
                                           "but found -1"):
        F.softshrink(dynjit.ones(2), -1.0)
    assert [repr(m) for m in (nn.Hardswish(), nn.CELU(0.5), nn.Softshrink(0.3), nn.GLU(), nn.SELU(inplace=True))] \
        == ["Hardswish()", "CELU(alpha=0.5)", "Softshrink(0.3)", "GLU(dim=-1)", "SELU(inplace=True)"]
    x = dynjit.tensor([-4.0, 1.0, 4.0])
    assert F.hardswish(x, inplace=True) is x
    np.testing.assert_allclose(x.numpy(), [0.0, 2.0 / 3.0, 4.0], rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_activations_compiled_like_plain(backend):
    model = nn.Sequential(nn.Linear(4, 8), nn.Hardswish(), nn.Linear(8, 8), nn.PReLU(8), nn.Linear(8, 8), nn.SELU(),
                          nn.Linear(8, 8), nn.CELU(0.5), nn.Linear(8, 8), nn.GLU(), nn.Softshrink(0.1),
                          nn.Hardshrink(0.05), nn.Tanhshrink(), nn.Linear(4, 1), nn.Hardsigmoid())

    def step(x):
        model.zero_grad()
        out = model(x)
        out.sum().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters()]

    x = dynjit.randn(16, 4) * 3
    expected = step(x)
    got = dynjit.compile(step, backend=backend)(x)
    np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got[1], expected[1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name, fn", [
    ("hardswish", F.hardswish), ("hardsigmoid", F.hardsigmoid), ("selu", F.selu), ("celu", F.celu),
    ("mish", F.mish), ("alpha_dropout", lambda x, inplace: F.alpha_dropout(x, 0.3, True, inplace)),
    ("dropout2d", lambda x, inplace: F.dropout2d(x, 0.3, True, inplace))])
def test_inplace_activation_backpropagates_like_out_of_place(name, fn):
    """In place on an intermediate result (as nn.Hardswish(inplace=True) in MobileNetV3): the
    backward must see the values before the write (it raised "modified by an inplace operation")."""
    grads = []
    for inplace in (False, True):
        dynjit.manual_seed(7)       # the same dropout masks in both runs
        x = dynjit.tensor(np.linspace(-4, 4, 18).reshape(2, 9, 1), requires_grad=True)
        y = x * 1.5
        z = fn(y, inplace=inplace)
        assert (z is y) == inplace
        (z * dynjit.arange(18.0).reshape(2, 9, 1)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


@pytest.mark.parametrize("inplace", [False, True])
def test_hardtanh_and_relu6_have_no_gradient_at_their_bounds(inplace):
    """PyTorch's hardtanh backward passes the gradient strictly inside (min_val, max_val):
    relu6 at exactly 0 or 6 gets 0 (clamp's gradient, which passes at the bounds, gave 1)."""
    points = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 6.0, 7.0])
    for fn, low, high in ((F.hardtanh, -1.0, 1.0), (F.relu6, 0.0, 6.0)):
        x = dynjit.tensor(points, requires_grad=True)
        y = fn(x * 1.0, inplace=inplace)
        y.sum().backward()
        np.testing.assert_array_equal(y.detach().numpy(), np.clip(points, low, high))
        np.testing.assert_array_equal(x.grad.numpy(), ((points > low) & (points < high)).astype(float))


# -- affine_grid and grid_sample (the spatial transformer) ------------------------------------

def grid_sample_reference(image, grid, mode, padding_mode, align_corners):
    """One point at a time: unnormalize, clip for "border", then bilinear or nearest reading
    of the four (one) neighbouring pixels, zero outside."""
    n, c, h, w = image.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                x, y = grid[b, i, j]
                if align_corners:
                    x, y = (x + 1) / 2 * (w - 1), (y + 1) / 2 * (h - 1)
                else:
                    x, y = ((x + 1) * w - 1) / 2, ((y + 1) * h - 1) / 2
                if padding_mode == "border":
                    x, y = min(max(x, 0), w - 1), min(max(y, 0), h - 1)

                def pixel(px, py):
                    return image[b, :, py, px] if 0 <= px < w and 0 <= py < h else np.zeros(c)

                if mode == "nearest":
                    out[b, :, i, j] = pixel(int(np.rint(x)), int(np.rint(y)))
                else:
                    x0, y0 = int(np.floor(x)), int(np.floor(y))
                    fx, fy = x - x0, y - y0
                    out[b, :, i, j] = (pixel(x0, y0) * (1 - fx) * (1 - fy) + pixel(x0 + 1, y0) * fx * (1 - fy)
                                       + pixel(x0, y0 + 1) * (1 - fx) * fy + pixel(x0 + 1, y0 + 1) * fx * fy)
    return out


THETA = np.array([[[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]], [[1.4, 0.0, 0.3], [0.1, 0.7, 0.5]]])


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_is_theta_times_the_base_grid(align_corners):
    grid = F.affine_grid(dynjit.tensor(THETA), (2, 3, 4, 5), align_corners=align_corners).numpy()
    h, w = 4, 5
    xs = np.linspace(-1, 1, w) * (1 if align_corners else (w - 1) / w)
    ys = np.linspace(-1, 1, h) * (1 if align_corners else (h - 1) / h)
    for b in range(2):
        for i in range(h):
            for j in range(w):
                np.testing.assert_allclose(grid[b, i, j], THETA[b] @ [xs[j], ys[i], 1.0], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_a_loop_per_point(mode, padding_mode, align_corners):
    rng = np.random.RandomState(0)
    image = rng.randn(2, 3, 5, 6)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 3, 2))
    out = F.grid_sample(dynjit.tensor(image), dynjit.tensor(grid), mode=mode, padding_mode=padding_mode,
                        align_corners=align_corners)
    np.testing.assert_allclose(out.numpy(), grid_sample_reference(image, grid, mode, padding_mode, align_corners),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
def test_grid_sample_gradcheck(padding_mode):
    rng = np.random.RandomState(1)
    image = dynjit.tensor(rng.randn(1, 2, 4, 5), requires_grad=True)
    theta = dynjit.tensor(THETA[:1] * 1.1, requires_grad=True)
    assert gradcheck(lambda x, t: F.grid_sample(x, F.affine_grid(t, (1, 2, 3, 3), align_corners=False),
                                                padding_mode=padding_mode, align_corners=False), (image, theta))


def test_grid_sample_nearest_gives_the_grid_a_zero_gradient_and_errors():
    grid = dynjit.zeros(1, 2, 2, 2, requires_grad=True)
    F.grid_sample(dynjit.ones(1, 1, 3, 3), grid, mode="nearest", align_corners=False).sum().backward()
    assert grid.grad is not None and np.all(grid.grad.numpy() == 0)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(dynjit.ones(1, 1, 3, 3), grid, mode="area", align_corners=False)
    with pytest.raises(NotImplementedError, match="reflection"):
        F.grid_sample(dynjit.ones(1, 1, 3, 3), grid, padding_mode="reflection", align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(dynjit.ones(1, 3, 3), (1, 1, 2, 2), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(dynjit.ones(1, 2, 3), (1, 1, 2, 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_spatial_transformer_compiled_like_plain(backend):
    image = dynjit.randn(2, 3, 6, 6)
    theta = dynjit.tensor(THETA.astype(np.float32), requires_grad=True)

    def warp(image, theta):
        theta.grad = None
        grid = F.affine_grid(theta, image.size(), align_corners=False)
        out = F.grid_sample(image, grid, align_corners=False)
        out.pow(2).sum().backward()
        return out.detach(), theta.grad.clone()

    for a, b in zip(warp(image, theta), dynjit.compile(warp, backend=backend)(image, theta)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-5)


# -- losses: SoftMargin, MultiLabelSoftMargin, HingeEmbedding, PoissonNLL, MultiMargin ----------

_RNG = np.random.RandomState(5)
X = _RNG.randn(4, 5)
SIGNS = np.sign(_RNG.randn(4, 5))
BITS = (_RNG.rand(4, 5) > 0.5).astype(float)
CLASSES = np.array([0, 3, 4, 1])
COUNTS = _RNG.poisson(2.0, (4, 5)).astype(float)
CLASS_WEIGHT = _RNG.rand(5)


def _log_sigmoid(x):
    return -np.log1p(np.exp(-x))


def _multi_margin(x, y, p, margin, weight):
    out = np.zeros(len(x))
    for n in range(len(x)):
        for i in range(x.shape[1]):
            if i != y[n]:
                out[n] += max(0.0, margin - x[n, y[n]] + x[n, i]) ** p * (1 if weight is None else weight[y[n]])
    return out / x.shape[1]


def _stirling(t):
    return np.where(t > 1, t * np.log(np.where(t > 1, t, 1)) - t + 0.5 * np.log(2 * np.pi * np.where(t > 1, t, 1)), 0)


LOSSES = {   # name: (loss of x with reduction, per-element (or per-sample) numpy reference)
    "soft_margin": (lambda x, r: F.soft_margin_loss(x, dynjit.tensor(SIGNS), reduction=r),
                    lambda x: np.log1p(np.exp(-SIGNS * x))),
    "multilabel_soft_margin": (
        lambda x, r: nn.MultiLabelSoftMarginLoss(weight=dynjit.tensor(CLASS_WEIGHT), reduction=r)(x, dynjit.tensor(BITS)),
        lambda x: (-(BITS * _log_sigmoid(x) + (1 - BITS) * _log_sigmoid(-x)) * CLASS_WEIGHT).mean(1)),
    "hinge_embedding": (lambda x, r: nn.HingeEmbeddingLoss(0.7, reduction=r)(x, dynjit.tensor(SIGNS)),
                        lambda x: np.where(SIGNS == 1, x, np.maximum(0, 0.7 - x))),
    "poisson_nll": (lambda x, r: nn.PoissonNLLLoss(full=True, reduction=r)(x, dynjit.tensor(COUNTS)),
                    lambda x: np.exp(x) - COUNTS * x + _stirling(COUNTS)),
    "poisson_nll_rate": (lambda x, r: F.poisson_nll_loss(x.abs() + 0.1, dynjit.tensor(COUNTS), log_input=False,
                                                         reduction=r),
                         lambda x: np.abs(x) + 0.1 - COUNTS * np.log(np.abs(x) + 0.1 + 1e-8)),
    "multi_margin": (lambda x, r: nn.MultiMarginLoss(p=2, margin=0.5, weight=dynjit.tensor(CLASS_WEIGHT),
                                                     reduction=r)(x, dynjit.tensor(CLASSES)),
                     lambda x: _multi_margin(x, CLASSES, 2, 0.5, CLASS_WEIGHT)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_match_numpy_formulas_and_gradcheck(name):
    loss_fn, reference = LOSSES[name]
    expected = reference(X)
    for reduction, reduce in (("none", lambda a: a), ("mean", np.mean), ("sum", np.sum)):
        np.testing.assert_allclose(loss_fn(dynjit.tensor(X), reduction).numpy(), reduce(expected), rtol=1e-12)
    assert gradcheck(lambda x: loss_fn(x, "mean"), (dynjit.tensor(X, requires_grad=True),))


def test_multi_margin_loss_errors_and_one_sample():
    np.testing.assert_allclose(F.multi_margin_loss(dynjit.tensor(X[0]), dynjit.tensor(3)).numpy(),
                               _multi_margin(X[:1], [3], 1, 1.0, None)[0], rtol=1e-12)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.poisson_nll_loss(dynjit.ones(2), dynjit.ones(2), reduction="avg")


@pytest.mark.parametrize("backend", BACKENDS)
def test_losses_compiled_like_plain(backend):
    def total(x):
        loss = sum(loss_fn(x, "mean") for loss_fn, _ in LOSSES.values())
        loss.backward()
        return loss.detach()

    x_plain, x_compiled = (dynjit.tensor(X.astype(np.float32), requires_grad=True) for _ in range(2))
    np.testing.assert_allclose(dynjit.compile(total, backend=backend)(x_compiled).numpy(), total(x_plain).numpy(),
                               rtol=1e-5)
    np.testing.assert_allclose(x_compiled.grad.numpy(), x_plain.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((7, 3), False), ((7, 3), True), ((3, 5), True),
                                         ((3, 3, 3), False)])
def test_fill_diagonal_in_place(shape, wrap):
    expected = np.zeros(shape)
    if len(shape) == 2:
        np.fill_diagonal(expected, 5.0, wrap=wrap)     # numpy's fill_diagonal has PyTorch's wrap rule
    else:
        for i in range(shape[0]):
            expected[(i,) * len(shape)] = 5.0
    t = dynjit.zeros(*shape, dtype=dynjit.float64)
    assert t.fill_diagonal_(5.0, wrap=wrap) is t
    np.testing.assert_array_equal(t.numpy(), expected)


def test_fill_diagonal_gradient_and_errors():
    x = dynjit.ones(3, 3, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * (1 - np.eye(3)))
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        dynjit.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        dynjit.zeros(2, 3, 3).fill_diagonal_(1)
