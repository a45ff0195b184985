"""nn.functional beyond the layers: padding, normalization, similarities, bilinear,
in-place flavours; and nn modules under dynjit.compile giving eager's results."""
import numpy as np
import pytest

import dynjit
from dynjit import nn, optim
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck
from dynjit.testing import CompileCounter


def _x(*shape):
    return dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)


def test_pad_constant():
    x = dynjit.arange(6.0).reshape(2, 3)
    out = F.pad(x, (1, 2), value=-1.0)
    np.testing.assert_array_equal(out.numpy(), np.pad(x.numpy(), ((0, 0), (1, 2)), constant_values=-1))
    out = F.pad(x, (0, 1, 1, 0))
    np.testing.assert_array_equal(out.numpy(), np.pad(x.numpy(), ((1, 0), (0, 1))))
    assert F.pad(x, (-1, 0)).tolist() == [[1.0, 2.0], [4.0, 5.0]]
    with pytest.raises(ValueError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode bogus"):
        F.pad(x, (1, 1), mode="bogus")
    assert gradcheck(lambda a: F.pad(a, (1, 1, 2, 0), value=3.0), (_x(2, 3),))


def test_normalize_and_similarities():
    a, b = _x(3, 4), _x(3, 4)
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(F.normalize(a).detach().numpy(),
                               an / np.linalg.norm(an, axis=1, keepdims=True), rtol=1e-12)
    cos = (an * bn).sum(1) / (np.linalg.norm(an, axis=1) * np.linalg.norm(bn, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(a, b).detach().numpy(), cos, rtol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(a, b).detach().numpy(),
                               np.linalg.norm(an - bn + 1e-6, axis=1), rtol=1e-12)
    assert gradcheck(F.normalize, (a,))
    assert gradcheck(F.cosine_similarity, (a, b))


def test_bilinear_matches_einsum():
    x1, x2, w, bias = _x(5, 2), _x(5, 3), _x(4, 2, 3), _x(4)
    ref = np.einsum("ni,oij,nj->no", x1.detach().numpy(), w.detach().numpy(), x2.detach().numpy())
    np.testing.assert_allclose(F.bilinear(x1, x2, w, bias).detach().numpy(), ref + bias.detach().numpy(),
                               rtol=1e-12)


def test_pointwise_activations():
    x = dynjit.linspace(-2, 2, 9, dtype=dynjit.float64)
    a = x.numpy()
    np.testing.assert_allclose(F.softsign(x).numpy(), a / (1 + np.abs(a)))
    np.testing.assert_allclose(F.logsigmoid(x).numpy(), -np.logaddexp(0, -a), rtol=1e-12)
    np.testing.assert_allclose(F.mish(x).numpy(), a * np.tanh(np.log1p(np.exp(a))), rtol=1e-12)
    np.testing.assert_allclose(F.elu(x, 0.5).numpy(), np.where(a > 0, a, 0.5 * np.expm1(a)), rtol=1e-12)
    np.testing.assert_allclose(F.softmin(x, 0).numpy(), np.exp(-a) / np.exp(-a).sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="fast")


def test_inplace_flavours_write_their_input():
    for fn in (lambda t: F.relu(t, inplace=True), lambda t: F.leaky_relu(t, 0.1, inplace=True),
               lambda t: F.threshold(t, 0.0, 5.0, inplace=True), lambda t: F.hardtanh(t, inplace=True),
               lambda t: F.dropout(t, 0.0, inplace=True)):
        x = dynjit.tensor([-1.0, 0.5])
        expected = fn(x.clone())
        assert fn(x) is x and x.tolist() == expected.tolist()


def test_inplace_activation_on_a_non_leaf_keeps_gradients_right():
    x = dynjit.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    F.relu(y, inplace=True)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]


# -- under the JIT ----------------------------------------------------------------------------

class _Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, target):
        return self.loss(self.body(x), target)


def test_compiled_module_matches_eager_and_trains_the_same():
    dynjit.manual_seed(1)
    eager = _Classifier()
    compiled_model = _Classifier()
    compiled_model.load_state_dict(eager.state_dict())
    counter = CompileCounter()
    compiled = dynjit.compile(compiled_model, backend=counter)
    opt_e = optim.Adam(eager.parameters(), lr=0.01)
    opt_c = optim.Adam(compiled_model.parameters(), lr=0.01)
    x = dynjit.randn(6, 4)
    target = dynjit.tensor([0, 1, 2, 0, 1, 2])
    for _ in range(3):
        losses = []
        for model, opt in ((eager, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            loss = model(x, target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    for (name, a), (_, b) in zip(eager.named_parameters(), compiled_model.named_parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert counter.frame_count >= 1 and counter.op_count > 0
