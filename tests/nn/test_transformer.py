"""Transformer layers: encoder and decoder layers against a numpy reference built from the
same weights (post-norm and norm_first, relu/gelu/callable activations, masks), the stacks
and nn.Transformer, initialization and errors, gradcheck, and compiled == eager training
steps on every backend."""
import math

import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]


def _np(p):
    return p.detach().numpy()


def _layer_norm(x, ln):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + ln.eps) * _np(ln.weight) + _np(ln.bias)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _attention(mha, q, k, v, bias=None):
    """Multi-head attention on (L, N, E) arrays with the module's weights."""
    E, H = mha.embed_dim, mha.num_heads
    d = E // H
    wq, wk, wv = np.split(_np(mha.in_proj_weight), 3)
    bq, bk, bv = np.split(_np(mha.in_proj_bias), 3)
    heads = lambda X: X.reshape(X.shape[0], X.shape[1], H, d).transpose(1, 2, 0, 3)
    Q, K, V = heads(q @ wq.T + bq), heads(k @ wk.T + bk), heads(v @ wv.T + bv)
    s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(d)
    if bias is not None:
        s = s + bias
    out = (_softmax(s) @ V).transpose(2, 0, 1, 3).reshape(q.shape[0], q.shape[1], E)
    return out @ _np(mha.out_proj.weight).T + _np(mha.out_proj.bias)


def _erf(x):
    return np.vectorize(math.erf)(x)


ACTS = {"relu": lambda x: np.maximum(x, 0), "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
        "tanh": np.tanh}


def _ff(layer, x, act):
    h = ACTS[act](x @ _np(layer.linear1.weight).T + _np(layer.linear1.bias))
    return h @ _np(layer.linear2.weight).T + _np(layer.linear2.bias)


def np_encoder_layer(layer, x, act, bias=None):
    if layer.norm_first:
        h = _layer_norm(x, layer.norm1)
        x = x + _attention(layer.self_attn, h, h, h, bias)
        return x + _ff(layer, _layer_norm(x, layer.norm2), act)
    x = _layer_norm(x + _attention(layer.self_attn, x, x, x, bias), layer.norm1)
    return _layer_norm(x + _ff(layer, x, act), layer.norm2)


def np_decoder_layer(layer, x, mem, act, bias=None):
    if layer.norm_first:
        h = _layer_norm(x, layer.norm1)
        x = x + _attention(layer.self_attn, h, h, h, bias)
        x = x + _attention(layer.multihead_attn, _layer_norm(x, layer.norm2), mem, mem)
        return x + _ff(layer, _layer_norm(x, layer.norm3), act)
    x = _layer_norm(x + _attention(layer.self_attn, x, x, x, bias), layer.norm1)
    x = _layer_norm(x + _attention(layer.multihead_attn, x, mem, mem), layer.norm2)
    return _layer_norm(x + _ff(layer, x, act), layer.norm3)


def _randomize(module):
    """Non-trivial LayerNorm and bias values (they start at ones and zeros)."""
    with dynjit.no_grad():
        for p in module.parameters():
            p.copy_(dynjit.randn(*p.shape, dtype=p.dtype) * 0.5)


CAUSAL = np.triu(np.full((4, 4), -np.inf), 1)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu", "tanh"])
def test_encoder_layer_matches_reference(norm_first, act):
    activation = dynjit.tanh if act == "tanh" else act
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation, norm_first=norm_first,
                                       dtype=dynjit.float64)
    _randomize(layer)
    x = np.random.default_rng(0).standard_normal((4, 3, 8))
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=dynjit.float64)
    np.testing.assert_allclose(mask.numpy(), CAUSAL)
    out = layer(dynjit.tensor(x), src_mask=mask)
    np.testing.assert_allclose(out.detach().numpy(), np_encoder_layer(layer, x, act, CAUSAL), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_reference_batch_first(norm_first):
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=norm_first,
                                       batch_first=True, dtype=dynjit.float64)
    _randomize(layer)
    rng = np.random.default_rng(1)
    x, mem = rng.standard_normal((3, 4, 8)), rng.standard_normal((3, 6, 8))
    out = layer(dynjit.tensor(x), dynjit.tensor(mem), tgt_mask=dynjit.tensor(CAUSAL), tgt_is_causal=True)
    ref = np_decoder_layer(layer, x.transpose(1, 0, 2), mem.transpose(1, 0, 2), "gelu", CAUSAL)
    np.testing.assert_allclose(out.detach().numpy(), ref.transpose(1, 0, 2), rtol=1e-9, atol=1e-10)


def test_stacks_and_transformer():
    dynjit.set_default_dtype(dynjit.float64)
    try:
        model = nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0)
    finally:
        dynjit.set_default_dtype(dynjit.float32)
    _randomize(model)
    enc, dec = model.encoder, model.decoder
    assert len(enc.layers) == 2 and len(dec.layers) == 2
    # clones are independent copies
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    rng = np.random.default_rng(2)
    src, tgt = rng.standard_normal((5, 2, 8)), rng.standard_normal((4, 2, 8))
    mem = src
    for layer in enc.layers:
        mem = np_encoder_layer(layer, mem, "relu")
    mem = _layer_norm(mem, enc.norm)
    y = tgt
    for layer in dec.layers:
        y = np_decoder_layer(layer, y, mem, "relu", CAUSAL)
    y = _layer_norm(y, dec.norm)
    out = model(dynjit.tensor(src), dynjit.tensor(tgt), tgt_mask=model.generate_square_subsequent_mask(4))
    np.testing.assert_allclose(out.detach().numpy(), y, rtol=1e-9, atol=1e-10)


def test_key_padding_mask_ignores_padded_positions():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    layer.eval()
    x = dynjit.randn(1, 5, 8)
    pad = dynjit.tensor([[False, False, False, True, True]])
    a = layer(x, src_key_padding_mask=pad)
    x2 = x.clone()
    x2[0, 3:] = 100.0                    # change only the padded positions
    b = layer(x2, src_key_padding_mask=pad)
    np.testing.assert_allclose(a.detach().numpy()[0, :3], b.detach().numpy()[0, :3], rtol=1e-5, atol=1e-6)


def test_initialization_and_errors():
    model = nn.Transformer(8, 2, 1, 1, 16)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6 / (8 + 16))              # xavier_uniform_ over every matrix
    assert np.abs(w).max() <= bound and np.abs(w).max() > bound * 0.5
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(dynjit.randn(5, 2, 8), dynjit.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(dynjit.randn(5, 2, 6), dynjit.randn(4, 2, 6))


def test_encoder_layer_gradcheck():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=dynjit.float64, norm_first=True,
                                       activation="gelu")
    x = dynjit.randn(3, 2, 4, dtype=dynjit.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=dynjit.float64)
    assert gradcheck(lambda x: layer(x, src_mask=mask), (x,))


def test_dropout_is_active_in_training_only():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = dynjit.randn(4, 2, 8)
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())
    layer.train()
    assert not np.array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


def _train_steps(backend):
    dynjit.manual_seed(0)
    block = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2,
                                  norm=nn.LayerNorm(8))
    head = nn.Linear(8, 5)
    params = list(block.parameters()) + list(head.parameters())
    opt = dynjit.optim.SGD(params, lr=0.1)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    x = dynjit.randn(3, 4, 8)
    y = dynjit.randint(0, 5, (3, 4))

    def step(x, y):
        logits = head(block(x, mask=mask))
        loss = F.cross_entropy(logits.reshape(-1, 5), y.reshape(-1), label_smoothing=0.1)
        loss.backward()
        return loss

    fn = dynjit.compile(step, backend=backend) if backend else step
    losses = []
    for _ in range(3):
        opt.zero_grad()
        losses.append(fn(x, y).item())
        opt.step()
    return losses, [p.detach().numpy() for p in params]


@pytest.mark.parametrize("backend", BACKENDS)
def test_encoder_training_compiled_matches_eager(backend):
    (got, got_params), (want, want_params) = _train_steps(backend), _train_steps(None)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < want[0]
    for a, b in zip(got_params, want_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _dropout_steps(backend):
    dynjit.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True)
    x = dynjit.randn(2, 4, 8)

    def step(x):
        out = layer(x)
        out.sum().backward()
        return out

    fn = dynjit.compile(step, backend=backend) if backend else step
    outs = [fn(x).detach().numpy() for _ in range(2)]
    return outs + [p.grad.numpy() for p in layer.parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout_draws_compiled_match_eager(backend):
    got, want = _dropout_steps(backend), _dropout_steps(None)
    assert not np.array_equal(want[0], want[1])          # fresh dropout masks per call
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
