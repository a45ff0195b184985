"""scaled_dot_product_attention and nn.MultiheadAttention: values against independent numpy
formulas (masks, causal, scale, grouped-query heads, bias_kv, zero_attn, key padding),
float64 gradcheck, PyTorch's error messages, and compiled == eager (forward and backward)."""
import numpy as np
import pytest

import dynjit
from dynjit import nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck

BACKENDS = ["eager", "aot_eager", "llvm"]


def _t(a, requires_grad=False):
    return dynjit.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_sdpa(q, k, v, bias=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        s = s + bias
    out = np.zeros(s.shape)
    finite = np.isfinite(s).any(-1)
    safe = np.where(finite[..., None], s, 0.0)
    out = np.where(finite[..., None], _softmax(safe), 0.0)
    return out @ v


@pytest.fixture
def qkv():
    rng = np.random.default_rng(1)
    return rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 5, 6))


def test_sdpa_plain_and_scale(qkv):
    q, k, v = qkv
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v)).numpy(), np_sdpa(q, k, v),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v), scale=0.3).numpy(),
                               np_sdpa(q, k, v, scale=0.3), rtol=1e-12, atol=1e-12)


def test_sdpa_bool_mask_attends_where_true_and_empty_rows_give_zeros(qkv):
    q, k, v = qkv
    mask = np.random.default_rng(2).random((4, 5)) > 0.4
    mask[1] = False                 # row 1 may attend to nothing: zeros, not NaN
    mask[0, 0] = True
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=dynjit.tensor(mask)).numpy()
    np.testing.assert_allclose(out, np_sdpa(q, k, v, np.where(mask, 0.0, -np.inf)), rtol=1e-12, atol=1e-12)
    assert np.all(out[:, :, 1] == 0)


def test_sdpa_float_mask_is_added(qkv):
    q, k, v = qkv
    bias = np.random.default_rng(3).standard_normal((3, 4, 5))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(bias))
    np.testing.assert_allclose(out.numpy(), np_sdpa(q, k, v, bias), rtol=1e-12, atol=1e-12)


def test_sdpa_is_causal(qkv):
    q, k, v = qkv
    causal = np.where(np.tril(np.ones((4, 5), bool)), 0.0, -np.inf)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True)
    np.testing.assert_allclose(out.numpy(), np_sdpa(q, k, v, causal), rtol=1e-12, atol=1e-12)


def test_sdpa_grouped_query_heads(qkv):
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 6, 4, 8)), rng.standard_normal((2, 2, 5, 8)), rng.standard_normal((2, 2, 5, 3))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True)
    expected = np_sdpa(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_sdpa_dropout_p_one_and_statistics(qkv):
    q, k, v = qkv
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), dropout_p=1.0)
    assert np.all(out.numpy() == 0)
    # dropout keeps the expectation: averaged over many draws, close to the plain result
    ones = dynjit.ones(1, 1, 1, 200, dtype=dynjit.float64)
    vals = dynjit.ones(1, 1, 200, 1, dtype=dynjit.float64)
    draws = F.scaled_dot_product_attention(dynjit.zeros(1, 1, 1, 200, dtype=dynjit.float64), ones.transpose(-1, -2).expand(1, 1, 200, 200), vals, dropout_p=0.25)
    assert 0 < abs(draws.item() - 1.0) < 0.15     # dropped some, rescaled the rest


def test_sdpa_errors(qkv):
    q, k, v = (_t(a) for a in qkv)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=dynjit.ones(4, 5, dtype=dynjit.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same dtype"):
        F.scaled_dot_product_attention(q, k.float(), v)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=dynjit.ones(4, 5, dtype=dynjit.int64))
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the number of heads"):
        F.scaled_dot_product_attention(q, _t(np.ones((2, 2, 5, 8))), _t(np.ones((2, 2, 5, 6))), enable_gqa=True)
    with pytest.raises(RuntimeError, match="same sequence length"):
        F.scaled_dot_product_attention(q, k, v[..., :4, :])


def test_sdpa_gradcheck(qkv):
    q, k, v = (_t(a[:1, :2], requires_grad=True) for a in qkv)
    mask = dynjit.tensor(np.tril(np.ones((4, 5), bool)) | np.eye(4, 5, 2, dtype=bool))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7), (q, k, v))


# -- MultiheadAttention ----------------------------------------------------------------

def np_mha(mha, q, k, v, key_padding_mask=None, attn_mask=None):
    """Reference multi-head attention on (L, N, E) inputs from the module's weights."""
    E, H = mha.embed_dim, mha.num_heads
    d = E // H
    P = {n: p.detach().numpy() for n, p in mha.named_parameters()}
    if mha._qkv_same_embed_dim:
        wq, wk, wv = np.split(P["in_proj_weight"], 3)
    else:
        wq, wk, wv = P["q_proj_weight"], P["k_proj_weight"], P["v_proj_weight"]
    bq, bk, bv = np.split(P["in_proj_bias"], 3) if "in_proj_bias" in P else (0, 0, 0)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    L, N, _ = Q.shape
    if "bias_k" in P:
        K = np.concatenate([K, np.broadcast_to(P["bias_k"], (1, N, E))])
        V = np.concatenate([V, np.broadcast_to(P["bias_v"], (1, N, E))])
    S = K.shape[0]
    bias = np.zeros((N, 1, L, S))
    if attn_mask is not None:
        am = np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == bool else attn_mask
        bias[..., :am.shape[-1]] += am
    if key_padding_mask is not None:
        bias[..., :key_padding_mask.shape[1]] += np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]
    heads = lambda X: X.reshape(X.shape[0], N, H, d).transpose(1, 2, 0, 3)     # (N, H, len, d)
    Qh, Kh, Vh = heads(Q), heads(K), heads(V)
    if mha.add_zero_attn:
        Kh = np.concatenate([Kh, np.zeros((N, H, 1, d))], 2)
        Vh = np.concatenate([Vh, np.zeros((N, H, 1, d))], 2)
        bias = np.concatenate([bias, np.zeros((N, 1, L, 1))], -1)
    w = _softmax(Qh @ Kh.transpose(0, 1, 3, 2) / np.sqrt(d) + bias)
    out = (w @ Vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = out @ P["out_proj.weight"].T + P.get("out_proj.bias", 0)
    return out, w


@pytest.mark.parametrize("kwargs", [{}, {"bias": False}, {"kdim": 5, "vdim": 3}, {"add_bias_kv": True},
                                    {"add_zero_attn": True}, {"add_bias_kv": True, "add_zero_attn": True}])
def test_mha_matches_reference(kwargs):
    mha = nn.MultiheadAttention(8, 2, dtype=dynjit.float64, **kwargs)
    rng = np.random.default_rng(5)
    q = rng.standard_normal((4, 3, 8))
    k = rng.standard_normal((5, 3, kwargs.get("kdim", 8)))
    v = rng.standard_normal((5, 3, kwargs.get("vdim", 8)))
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    am = rng.standard_normal((4, 5))
    out, w = mha(_t(q), _t(k), _t(v), key_padding_mask=dynjit.tensor(kpm), attn_mask=_t(am),
                 average_attn_weights=False)
    ref_out, ref_w = np_mha(mha, q, k, v, kpm, am)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), ref_w, rtol=1e-10, atol=1e-12)
    # need_weights=False takes the scaled_dot_product_attention path: same output
    out2, none = mha(_t(q), _t(k), _t(v), key_padding_mask=dynjit.tensor(kpm), attn_mask=_t(am), need_weights=False)
    assert none is None
    np.testing.assert_allclose(out2.detach().numpy(), ref_out, rtol=1e-10, atol=1e-12)


def test_mha_batch_first_bool_masks_and_averaged_weights():
    mha = nn.MultiheadAttention(8, 4, batch_first=True, dtype=dynjit.float64)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 8))
    causal = np.triu(np.ones((5, 5), bool), 1)       # True: may not attend
    out, w = mha(_t(x), _t(x), _t(x), attn_mask=dynjit.tensor(causal))
    xs = x.transpose(1, 0, 2)
    ref_out, ref_w = np_mha(mha, xs, xs, xs, attn_mask=causal)
    np.testing.assert_allclose(out.detach().numpy(), ref_out.transpose(1, 0, 2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), ref_w.mean(1), rtol=1e-10, atol=1e-12)
    # unbatched input: (L, E)
    out1, w1 = mha(_t(x[0]), _t(x[0]), _t(x[0]), attn_mask=dynjit.tensor(causal))
    np.testing.assert_allclose(out1.detach().numpy(), out.detach().numpy()[0], rtol=1e-10, atol=1e-12)
    assert tuple(w1.shape) == (5, 5)


def test_mha_parameters_and_errors():
    mha = nn.MultiheadAttention(8, 2)
    assert {n for n, _ in mha.named_parameters()} == {"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                     "out_proj.bias"}
    assert np.all(mha.in_proj_bias.detach().numpy() == 0) and np.all(mha.out_proj.bias.detach().numpy() == 0)
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    assert tuple(sep.k_proj_weight.shape) == (8, 3) and tuple(sep.v_proj_weight.shape) == (8, 5)
    assert sep.in_proj_weight is None
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    x = dynjit.randn(4, 2, 8)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(3, 3\), but should be \(4, 4\)"):
        mha(x, x, x, attn_mask=dynjit.zeros(3, 3))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="expecting key_padding_mask shape of"):
        mha(x, x, x, key_padding_mask=dynjit.zeros(2, 3, dtype=dynjit.bool))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor but received 4-D"):
        mha(x[None], x[None], x[None])
    with pytest.raises(AssertionError, match=r"For batched \(3-D\) `query`, expected `key` and `value` to be 3-D"):
        mha(x, x[0], x[0])


def test_mha_gradcheck():
    mha = nn.MultiheadAttention(4, 2, dtype=dynjit.float64, add_bias_kv=True)
    q = dynjit.randn(3, 2, 4, dtype=dynjit.float64, requires_grad=True)
    kv = dynjit.randn(5, 2, 4, dtype=dynjit.float64, requires_grad=True)
    kpm = dynjit.tensor([[False] * 5, [False, False, False, True, True]])
    assert gradcheck(lambda q, kv: mha(q, kv, kv, key_padding_mask=kpm)[0], (q, kv))
    assert gradcheck(lambda q, kv: mha(q, kv, kv, need_weights=False)[0], (q, kv))


def _attention_step(backend):
    dynjit.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = dynjit.randn(2, 5, 8, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(5)

    def step(x):
        out, w = mha(x, x, x, attn_mask=mask)
        loss = out.pow(2).mean() + w.sum()
        loss.backward()
        return out, w

    fn = dynjit.compile(step, backend=backend) if backend else step
    out, w = fn(x)
    return [out.detach().numpy(), w.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in mha.parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_mha_compiled_matches_eager(backend):
    for got, want in zip(_attention_step(backend), _attention_step(None)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sdpa_compiled_matches_eager(backend):
    def f(q, k, v, mask):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask) + \
            F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
        out.sum().backward()
        return out

    def run(fn):
        dynjit.manual_seed(1)
        q, k, v = (dynjit.randn(2, 2, 4, 3, requires_grad=True) for _ in range(3))
        mask = dynjit.tensor([[True, False, True, False], [False] * 4, [True] * 4, [True, True, False, False]])
        return [fn(q, k, v, mask).detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()]

    for got, want in zip(run(dynjit.compile(f, backend=backend)), run(f)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
