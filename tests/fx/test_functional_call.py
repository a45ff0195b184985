"""dynjit.func.functional_call: a module called with given parameters and buffers, against
numpy formulas, finite differences (second order, as MAML uses it) and PyTorch's errors;
compiled calls equal plain ones."""
import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
from dynjit.autograd import gradcheck
from dynjit.func import functional_call, grad


def _linear():
    dynjit.manual_seed(0)
    return nn.Linear(3, 2)


def test_uses_given_parameters_and_restores_module():
    lin = _linear()
    weight_before = lin.weight.detach().numpy().copy()
    w = dynjit.randn(2, 3, dtype=dynjit.float64)
    b = dynjit.randn(2, dtype=dynjit.float64)
    x = dynjit.randn(4, 3, dtype=dynjit.float64)
    out = functional_call(lin, {"weight": w, "bias": b}, (x,))
    np.testing.assert_allclose(out.detach().numpy(), x.numpy() @ w.numpy().T + b.numpy(), rtol=1e-12)
    assert isinstance(lin.weight, nn.Parameter)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), weight_before)
    # a single non-tuple argument, a subset of the parameters, and kwargs
    out = functional_call(lin, {"bias": b.float()}, x.float())
    np.testing.assert_allclose(out.detach().numpy(), x.numpy() @ weight_before.T + b.numpy(), rtol=1e-5)


def test_module_restored_when_forward_raises():
    lin = _linear()
    weight = lin.weight
    with pytest.raises(RuntimeError):
        functional_call(lin, {"weight": dynjit.randn(5, 7)}, (dynjit.randn(4, 3),))
    assert lin.weight is weight


def test_gradients_reach_the_given_tensors_only():
    lin = _linear()
    w = dynjit.randn(2, 3, requires_grad=True)
    x = dynjit.randn(4, 3)
    functional_call(lin, {"weight": w}, (x,)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (2, 1)), rtol=1e-5)
    assert lin.weight.grad is None
    assert lin.bias.grad is not None      # the module's own bias was used


def test_buffers_and_several_dicts():
    dynjit.manual_seed(0)
    bn = nn.BatchNorm1d(3).eval()
    mean, var = dynjit.tensor([1., 2., 3.]), dynjit.tensor([4., 1., 0.25])
    x = dynjit.randn(5, 3)
    out = functional_call(bn, ({"running_mean": mean}, {"running_var": var}), (x,))
    np.testing.assert_allclose(out.detach().numpy(), (x.numpy() - mean.numpy()) / np.sqrt(var.numpy() + 1e-5), rtol=1e-5)
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3, np.float32))


def test_pytorch_errors():
    lin = _linear()
    w = dynjit.randn(2, 3)
    with pytest.raises(ValueError, match=r"\['weight'\] appeared in multiple dictionaries"):
        functional_call(lin, ({"weight": w}, {"weight": w}), (dynjit.randn(1, 3),))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        functional_call(lin, [{"weight": w}, 3], (dynjit.randn(1, 3),))
    with pytest.raises(ValueError, match="to be a dict, or a list/tuple of dicts"):
        functional_call(lin, 3, (dynjit.randn(1, 3),))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Linear:\n\tUnexpected key\(s\): "
                                           r"'scale'.\n\tMissing key\(s\): 'bias'."):
        functional_call(lin, {"weight": w, "scale": w}, (dynjit.randn(1, 3),), strict=True)
    assert not hasattr(lin, "scale")


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(3, 3, bias=False)
        self.decoder = nn.Linear(3, 3, bias=False)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        return self.decoder(self.encoder(x))


def test_tie_weights():
    dynjit.manual_seed(0)
    model = _Tied()
    w = dynjit.randn(3, 3)
    x = dynjit.randn(2, 3)
    tied = functional_call(model, {"encoder.weight": w}, (x,))
    np.testing.assert_allclose(tied.numpy(), x.numpy() @ w.numpy().T @ w.numpy().T, rtol=1e-5)
    untied = functional_call(model, {"encoder.weight": w}, (x,), tie_weights=False)
    own = model.encoder.weight.detach().numpy()
    np.testing.assert_allclose(untied.detach().numpy(), x.numpy() @ w.numpy().T @ own.T, rtol=1e-5)
    with pytest.raises(ValueError, match=r"multiple values for keys \['decoder.weight', 'encoder.weight'\], "
                                         "which are tied"):
        functional_call(model, {"encoder.weight": w, "decoder.weight": w.clone()}, (x,))


def _maml_query_loss(w1, b1, w2, net, x1, y1, x2, y2, alpha=0.3):
    params = {"0.weight": w1, "0.bias": b1, "2.weight": w2}
    inner = ((functional_call(net, params, (x1,)) - y1) ** 2).mean()
    grads = dynjit.autograd.grad(inner, list(params.values()), create_graph=True)
    fast = {k: v - alpha * g for (k, v), g in zip(params.items(), grads)}
    return ((functional_call(net, fast, (x2,)) - y2) ** 2).mean()


def test_second_order_maml_gradient_matches_finite_differences():
    dynjit.manual_seed(0)
    net = nn.Sequential(nn.Linear(1, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    x1, y1, x2, y2 = (dynjit.randn(5, 1, dtype=dynjit.float64) for _ in range(4))
    w1 = dynjit.randn(4, 1, dtype=dynjit.float64, requires_grad=True)
    b1 = dynjit.randn(4, dtype=dynjit.float64, requires_grad=True)
    w2 = dynjit.randn(1, 4, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(lambda a, b, c: _maml_query_loss(a, b, c, net, x1, y1, x2, y2), (w1, b1, w2))


def test_func_grad_of_a_parameter_dict():
    lin = _linear()
    params = {k: v.detach() for k, v in lin.named_parameters()}
    x, t = dynjit.randn(4, 3), dynjit.randn(4, 2)
    g = grad(lambda p: ((functional_call(lin, p, (x,)) - t) ** 2).sum())(params)
    residual = x.numpy() @ params["weight"].numpy().T + params["bias"].numpy() - t.numpy()
    np.testing.assert_allclose(g["weight"].numpy(), 2 * residual.T @ x.numpy(), rtol=1e-5)
    np.testing.assert_allclose(g["bias"].numpy(), 2 * residual.sum(0), rtol=1e-5)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain(backend):
    dynjit.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    w = dynjit.randn(4, 3, requires_grad=True)
    x = dynjit.randn(6, 3)

    def loss_fn(w, x):
        return functional_call(net, {"0.weight": w}, (x,)).pow(2).mean()

    plain = loss_fn(w, x)
    (g_plain,) = dynjit.autograd.grad(plain, w)
    compiled = dynjit.compile(loss_fn, backend=backend)(w, x)
    (g_compiled,) = dynjit.autograd.grad(compiled, w)
    np.testing.assert_allclose(compiled.item(), plain.item(), rtol=1e-6)
    np.testing.assert_allclose(g_compiled.numpy(), g_plain.numpy(), rtol=1e-5, atol=1e-7)


# what functional_call does inside (and what a traced functional_call would do): a write to a
# module's _parameters followed by a call of the module, which must use the new parameter.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_parameter_swap_is_seen_by_the_module_call(backend):
    dynjit.manual_seed(0)
    lin = nn.Linear(2, 1, bias=False)

    def f(x, w):
        old = lin._parameters["weight"]
        lin._parameters["weight"] = w
        try:
            return lin(x)
        finally:
            lin._parameters["weight"] = old

    x, w = dynjit.ones(1, 2), dynjit.full((1, 2), 10.0)
    np.testing.assert_allclose(dynjit.compile(f, backend=backend)(x, w).numpy(), f(x, w).numpy())
