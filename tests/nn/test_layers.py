"""Layers: values against numpy, gradcheck in float64 (w.r.t. inputs and
parameters), train/eval behaviour, containers, init and gradient clipping."""
import math

import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck


def _check_layer(module, *inputs):
    """gradcheck a float64 module w.r.t. its inputs and all of its parameters."""
    module.double()
    params = list(module.parameters())
    n = len(inputs)
    return gradcheck(lambda *args: module(*args[:n]), tuple(inputs) + tuple(params))


def _x(*shape):
    return dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)


# -- gradcheck of every layer -------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: nn.Linear(3, 2), lambda: nn.Linear(3, 2, bias=False), lambda: nn.Identity(),
    lambda: nn.ReLU(), lambda: nn.Tanh(), lambda: nn.Sigmoid(), lambda: nn.GELU(),
    lambda: nn.GELU("tanh"), lambda: nn.SiLU(), lambda: nn.LeakyReLU(0.2), lambda: nn.ELU(),
    lambda: nn.Softplus(), lambda: nn.Mish(), lambda: nn.Hardtanh(), lambda: nn.LogSigmoid(),
    lambda: nn.Softmax(1), lambda: nn.LogSoftmax(-1), lambda: nn.Softmin(0),
    lambda: nn.LayerNorm(3), lambda: nn.Flatten(0), lambda: nn.Dropout(0.0),
    lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)),
], ids=lambda f: "")
def test_gradcheck_layers(make):
    x = _x(4, 3) + 0.05      # keep clear of the kinks of relu & co at 0
    assert _check_layer(make(), x.detach().requires_grad_())


def test_gradcheck_batchnorm_training_and_eval():
    bn = nn.BatchNorm1d(3)
    with dynjit.no_grad():
        bn.weight.copy_(dynjit.tensor([1.0, 2.0, 0.5]))
        bn.bias.copy_(dynjit.tensor([0.0, 1.0, -1.0]))
    assert _check_layer(bn, _x(5, 3))
    bn.eval()
    assert _check_layer(bn, _x(5, 3, 2))


def test_gradcheck_embedding_and_bilinear():
    emb = nn.Embedding(5, 3).double()      # (the padding row gets no gradient by design)
    idx = dynjit.tensor([[0, 1], [4, 0]])
    assert gradcheck(lambda w: emb(idx), (emb.weight,))
    assert _check_layer(nn.Bilinear(2, 3, 2), _x(4, 2), _x(4, 3))


def test_gradcheck_layer_norm_over_two_dims():
    ln = nn.LayerNorm((2, 3))
    with dynjit.no_grad():
        ln.weight.copy_(dynjit.randn(2, 3))
        ln.bias.copy_(dynjit.randn(2, 3))
    assert _check_layer(ln, _x(4, 2, 3))


# -- values --------------------------------------------------------------------------------

def test_linear_values_and_default_init_range():
    lin = nn.Linear(50, 20)
    bound = 1 / math.sqrt(50)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert w.shape == (20, 50) and b.shape == (20,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound        # spread over the whole range, not a constant
    x = dynjit.randn(7, 50)
    np.testing.assert_allclose(lin(x).detach().numpy(), x.numpy() @ w.T + b, rtol=1e-5, atol=1e-6)


def test_linear_init_is_reproducible_with_manual_seed():
    dynjit.manual_seed(123)
    a = nn.Linear(4, 3)
    dynjit.manual_seed(123)
    b = nn.Linear(4, 3)
    assert np.array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    assert not np.array_equal(a.weight.detach().numpy(), nn.Linear(4, 3).weight.detach().numpy())


def test_linear_rejects_bad_sizes_and_inputs():
    with pytest.raises(ValueError, match="in_features must be a non-negative int"):
        nn.Linear(-1, 3)
    with pytest.raises(RuntimeError):
        nn.Linear(3, 2)(dynjit.randn(4, 5))


def test_layer_norm_matches_numpy():
    x = dynjit.randn(4, 5)
    ln = nn.LayerNorm(5, eps=1e-5)
    with dynjit.no_grad():
        ln.weight.copy_(dynjit.randn(5))
        ln.bias.copy_(dynjit.randn(5))
    a = x.numpy()
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    ref = ref * ln.weight.detach().numpy() + ln.bias.detach().numpy()
    np.testing.assert_allclose(ln(x).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="expected input with shape"):
        ln(dynjit.randn(4, 3))


def test_batchnorm_training_updates_running_stats_and_eval_uses_them():
    bn = nn.BatchNorm1d(3, momentum=0.1)
    x = dynjit.randn(8, 3) * 2 + 1
    a = x.numpy()
    out = bn(x)
    ref = (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * a.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * a.var(0, ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = dynjit.randn(2, 3)
    ref = (y.numpy() - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(bn(y).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 1
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_batchnorm_3d_input_and_errors():
    bn = nn.BatchNorm1d(2)
    x = dynjit.randn(4, 2, 3)
    a = x.numpy()
    ref = (a - a.mean((0, 2), keepdims=True)) / np.sqrt(a.var((0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(bn(x).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(dynjit.randn(2))
    with pytest.raises(ValueError, match="expected 2 channels"):
        bn(dynjit.randn(4, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(dynjit.randn(1, 2))


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval():
    bn = nn.BatchNorm1d(2, affine=False, track_running_stats=False).eval()
    assert list(bn.parameters()) == [] and list(bn.buffers()) == []
    x = dynjit.randn(6, 2)
    a = x.numpy()
    np.testing.assert_allclose(bn(x).numpy(), (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5), rtol=1e-4)


def test_dropout_train_and_eval():
    drop = nn.Dropout(0.5)
    x = dynjit.ones(1000)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 350 < (y == 0).sum() < 650
    drop.eval()
    assert np.array_equal(drop(x).numpy(), x.numpy())
    assert repr(drop) == "Dropout(p=0.5, inplace=False)"
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_dropout_gradient_follows_the_mask():
    x = dynjit.ones(200, requires_grad=True)
    y = F.dropout(x, 0.25)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


def test_embedding_lookup_and_padding_gradient():
    emb = nn.Embedding(4, 3, padding_idx=0)
    assert emb.weight[0].tolist() == [0.0, 0.0, 0.0]
    idx = dynjit.tensor([[0, 2], [2, 3]])
    out = emb(idx)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.detach().numpy(), emb.weight.detach().numpy()[idx.numpy()])
    out.sum().backward()
    assert emb.weight.grad.tolist() == [[0.0] * 3, [0.0] * 3, [2.0] * 3, [1.0] * 3]
    with pytest.raises(RuntimeError, match="integer dtype"):
        emb(dynjit.tensor([0.0, 1.0]))
    with pytest.raises(IndexError):
        emb(dynjit.tensor([4]))
    assert repr(emb) == "Embedding(4, 3, padding_idx=0)"


def test_embedding_from_pretrained_is_frozen():
    w = dynjit.randn(3, 2)
    emb = nn.Embedding.from_pretrained(w)
    assert not emb.weight.requires_grad
    assert emb(dynjit.tensor([2])).tolist() == [w[2].tolist()]


def test_activations_match_numpy():
    x = dynjit.linspace(-3, 3, 13)
    a = x.numpy()
    cases = [
        (nn.ReLU(), np.maximum(a, 0)),
        (nn.Tanh(), np.tanh(a)),
        (nn.Sigmoid(), 1 / (1 + np.exp(-a))),
        (nn.SiLU(), a / (1 + np.exp(-a))),
        (nn.LeakyReLU(0.1), np.where(a > 0, a, 0.1 * a)),
        (nn.Softplus(), np.log1p(np.exp(a))),
        (nn.Hardtanh(), np.clip(a, -1, 1)),
        (nn.ReLU6(), np.clip(a, 0, 6)),
        (nn.GELU("tanh"), 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))),
        (nn.Softmax(0), np.exp(a) / np.exp(a).sum()),
        (nn.LogSoftmax(0), a - np.log(np.exp(a).sum())),
        (nn.Threshold(0.5, -1.0), np.where(a > 0.5, a, -1.0)),
    ]
    for module, ref in cases:
        np.testing.assert_allclose(module(x).numpy(), ref, rtol=1e-5, atol=1e-6, err_msg=repr(module))


def test_inplace_relu_writes_its_input():
    x = dynjit.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert out is x and x.tolist() == [0.0, 2.0]
    assert repr(nn.ReLU(True)) == "ReLU(inplace=True)"


def test_flatten_and_unflatten():
    x = dynjit.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(1, (3, 2, 2))(nn.Flatten()(x)).shape == (2, 3, 2, 2)


def test_softmax_without_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmax(dynjit.randn(2, 3))
    np.testing.assert_allclose(out.sum(1).numpy(), [1.0, 1.0], rtol=1e-6)


# -- containers --------------------------------------------------------------------------------

def test_sequential_indexing_len_iteration_append():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b and list(seq) == [a, b]
    seq.append(c)
    assert seq[2] is c and [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    x = dynjit.randn(4, 2)
    np.testing.assert_allclose(seq(x).detach().numpy(), c(b(a(x))).detach().numpy())
    del seq[0]
    assert list(seq) == [b, c] and list(seq._modules) == ["0", "1"]
    seq[0] = nn.Tanh()
    assert isinstance(seq[0], nn.Tanh)
    with pytest.raises(IndexError, match="out of range"):
        seq[5]


def test_sequential_from_ordered_dict():
    from collections import OrderedDict
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in seq.named_parameters()] == ["fc.weight", "fc.bias"]
    assert seq.fc is seq[0]


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh()])
    assert [type(m).__name__ for m in layers] == ["Linear"] * 3 + ["ReLU", "Tanh"]
    assert isinstance(layers[-1], nn.Tanh) and len(layers[1:3]) == 2

    class Owner(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 1)})

        def forward(self, x):
            return self.blocks["b"](self.blocks["a"](x))
    owner = Owner()
    assert [n for n, _ in owner.named_parameters()] == ["blocks.a.weight", "blocks.a.bias",
                                                        "blocks.b.weight", "blocks.b.bias"]
    assert list(owner.blocks.keys()) == ["a", "b"] and "a" in owner.blocks
    assert owner(dynjit.randn(3, 2)).shape == (3, 1)


def test_parameter_list_and_dict():
    plist = nn.ParameterList([dynjit.zeros(2), nn.Parameter(dynjit.ones(3))])
    assert len(plist) == 2 and all(isinstance(p, nn.Parameter) for p in plist)
    plist.append(dynjit.ones(1))
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    assert "(1): Parameter containing: [dynjit.float32 of size 3]" in repr(plist)
    pdict = nn.ParameterDict({"w": dynjit.ones(2)})
    assert isinstance(pdict["w"], nn.Parameter) and list(pdict) == ["w"]
    assert [n for n, _ in pdict.named_parameters()] == ["w"]


# -- init ---------------------------------------------------------------------------------------

def test_init_functions():
    w = nn.Parameter(dynjit.empty(200, 100))
    nn.init.zeros_(w)
    assert not w.any() and w.requires_grad and w.grad_fn is None
    nn.init.ones_(w)
    assert bool((w == 1).all())
    nn.init.constant_(w, 0.3)
    assert np.allclose(w.detach().numpy(), 0.3)
    nn.init.uniform_(w, -2, 3)
    assert w.min().item() >= -2 and w.max().item() <= 3 and w.max().item() > 2.9
    nn.init.normal_(w, 1.0, 0.5)
    assert abs(w.mean().item() - 1.0) < 0.02 and abs(w.std().item() - 0.5) < 0.02
    nn.init.xavier_uniform_(w)
    assert w.abs().max().item() <= math.sqrt(6 / 300) + 1e-7
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 100)
    assert w.abs().max().item() <= bound + 1e-7 and w.abs().max().item() > 0.95 * bound
    nn.init.kaiming_normal_(w, mode="fan_out")
    assert abs(w.std().item() - math.sqrt(2 / (1 + 0.01 ** 2)) / math.sqrt(200)) < 0.01
    assert nn.init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("nope")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(dynjit.empty(3))


# -- gradient clipping --------------------------------------------------------------------------------

def test_clip_grad_norm_scales_all_gradients_together():
    a = nn.Parameter(dynjit.zeros(2))
    b = nn.Parameter(dynjit.zeros(1))
    a.grad = dynjit.tensor([3.0, 0.0])
    b.grad = dynjit.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0.8], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0)       # below the limit: unchanged
    assert total.item() == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0.8], rtol=1e-5)
    a.grad = dynjit.tensor([-7.0, 1.0])
    assert nn.utils.clip_grad_norm_([a], 1.0, norm_type=math.inf).item() == 7.0
    np.testing.assert_allclose(a.grad.numpy(), [-1.0, 1 / 7], rtol=1e-5)
    a.grad = dynjit.tensor([math.nan, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)


def test_clip_grad_value_and_vector_conversion():
    a = nn.Parameter(dynjit.zeros(3))
    a.grad = dynjit.tensor([-5.0, 0.5, 2.0])
    nn.utils.clip_grad_value_([a], 1.0)
    assert a.grad.tolist() == [-1.0, 0.5, 1.0]
    lin = nn.Linear(2, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (6,)
    nn.utils.vector_to_parameters(dynjit.arange(6.0), lin.parameters())
    assert lin.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]] and lin.bias.tolist() == [4.0, 5.0]


def test_batchnorm_momentum_none_keeps_a_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None)
    batches = [dynjit.randn(4, 2) for _ in range(3)]
    for b in batches:
        bn(b)
    expected = np.mean([b.numpy().mean(0) for b in batches], axis=0)
    np.testing.assert_allclose(bn.running_mean.numpy(), expected, rtol=1e-5, atol=1e-7)
    assert bn.num_batches_tracked.item() == 3
