"""Recurrent layers and sequence packing: nn.RNN / LSTM / GRU and their cells against an
independent numpy implementation of the recurrences, float64 gradcheck, PyTorch's parameter
names, shapes and init, packed sequences against each sequence run alone, the packing and
padding utilities, PyTorch's errors, and compiled == eager (forward and backward)."""
import math

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.autograd import gradcheck
from dynjit.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence,
                                 pad_packed_sequence, pad_sequence, unpack_sequence,
                                 unpad_sequence)


# -- the numpy reference -----------------------------------------------------------------

def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode, x, h, c, p, suffix=""):
    """One step of `mode` on numpy arrays; p maps PyTorch parameter names to arrays.
    Returns (h', c') (c' None except for LSTM)."""
    w_ih, w_hh = p["weight_ih" + suffix], p["weight_hh" + suffix]
    b_ih = p.get("bias_ih" + suffix, 0.0)
    b_hh = p.get("bias_hh" + suffix, 0.0)
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0.0)), None
    if mode == "LSTM":
        H = c.shape[-1]
        g = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, gg, o = (g[:, k * H:(k + 1) * H] for k in range(4))
        c_new = _sig(f) * c + _sig(i) * np.tanh(gg)
        h_new = _sig(o) * np.tanh(c_new)
        if "weight_hr" + suffix in p:
            h_new = h_new @ p["weight_hr" + suffix].T
        return h_new, c_new
    H = h.shape[-1]
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    r = _sig(gi[:, :H] + gh[:, :H])
    z = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h, None


def np_rnn(mode, x, p, num_layers, bidirectional, h0, c0=None):
    """The multi-layer recurrence on x (T, B, F): (output (T, B, D*H_out), h_n, c_n)."""
    dirs = 2 if bidirectional else 1
    T = x.shape[0]
    hs, cs = [], []
    inp = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            names = {n[: -len(suffix)]: v for n, v in p.items() if n.endswith(suffix)}
            h, c = h0[k], (c0[k] if c0 is not None else None)
            out = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h, c = np_cell(mode, inp[t], h, c, names)
                out[t] = h
            outs.append(np.stack(out))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hs), (np.stack(cs) if c0 is not None else None)


def _params(module):
    return {n: p.detach().numpy().astype(np.float64) for n, p in module.named_parameters()}


def _make(kind, *args, **kwargs):
    if kind == "RNN_RELU":
        return nn.RNN(*args, nonlinearity="relu", **kwargs)
    return {"RNN_TANH": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}[kind](*args, **kwargs)


CONFIGS = [
    dict(),
    dict(num_layers=2),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True),
    dict(bias=False),
    dict(batch_first=True, num_layers=2),
]


# -- values against numpy ------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("with_h0", [False, True])
def test_values_against_numpy(mode, config, with_h0):
    T, B, F_in, H = 5, 3, 4, 6
    m = _make(mode, F_in, H, **config).double()
    dirs = 2 if config.get("bidirectional") else 1
    L = config.get("num_layers", 1)
    x = dynjit.randn(T, B, F_in, dtype=dynjit.float64)
    h0 = dynjit.randn(L * dirs, B, H, dtype=dynjit.float64) if with_h0 else None
    c0 = dynjit.randn(L * dirs, B, H, dtype=dynjit.float64) if with_h0 else None
    x_in = x.transpose(0, 1) if config.get("batch_first") else x
    if mode == "LSTM":
        out, (h_n, c_n) = m(x_in, (h0, c0) if with_h0 else None)
    else:
        out, h_n = m(x_in, h0)
    zeros = np.zeros((L * dirs, B, H))
    ref_out, ref_h, ref_c = np_rnn(mode, x.detach().numpy(), _params(m), L, dirs == 2,
                                   h0.detach().numpy() if with_h0 else zeros,
                                   (c0.detach().numpy() if with_h0 else zeros) if mode == "LSTM" else None)
    if config.get("batch_first"):
        ref_out = ref_out.transpose(1, 0, 2)
    assert tuple(out.shape) == ref_out.shape
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_n.detach().numpy(), ref_h, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(c_n.detach().numpy(), ref_c, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_proj_size_against_numpy(bidirectional):
    T, B, F_in, H, P = 4, 2, 3, 5, 2
    m = nn.LSTM(F_in, H, num_layers=2, proj_size=P, bidirectional=bidirectional).double()
    dirs = 2 if bidirectional else 1
    assert tuple(m.weight_hr_l0.shape) == (P, H)
    assert tuple(m.weight_hh_l0.shape) == (4 * H, P)
    assert tuple(m.weight_ih_l1.shape) == (4 * H, P * dirs)
    x = dynjit.randn(T, B, F_in, dtype=dynjit.float64)
    h0 = dynjit.randn(2 * dirs, B, P, dtype=dynjit.float64)
    c0 = dynjit.randn(2 * dirs, B, H, dtype=dynjit.float64)
    out, (h_n, c_n) = m(x, (h0, c0))
    ref_out, ref_h, ref_c = np_rnn("LSTM", x.detach().numpy(), _params(m), 2, bidirectional, h0.detach().numpy(), c0.detach().numpy())
    assert tuple(out.shape) == (T, B, P * dirs) and tuple(h_n.shape) == (2 * dirs, B, P)
    assert tuple(c_n.shape) == (2 * dirs, B, H)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_n.detach().numpy(), ref_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c_n.detach().numpy(), ref_c, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input_is_a_batch_of_one(mode, batch_first):
    m = _make(mode, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = dynjit.randn(5, 3)
    h0 = dynjit.randn(4, 4)
    hx = (h0, dynjit.randn(4, 4)) if mode == "LSTM" else h0
    out, h = m(x, hx)
    batched_hx = tuple(t.unsqueeze(1) for t in hx) if mode == "LSTM" else hx.unsqueeze(1)
    out_b, h_b = m(x.unsqueeze(0 if batch_first else 1), batched_hx)
    assert tuple(out.shape) == (5, 8)
    np.testing.assert_allclose(out.detach().numpy(), out_b.squeeze(0 if batch_first else 1).detach().numpy(), rtol=1e-6)
    for a, b in zip(h if mode == "LSTM" else (h,), h_b if mode == "LSTM" else (h_b,)):
        assert tuple(a.shape) == (4, 4)
        np.testing.assert_allclose(a.detach().numpy(), b.squeeze(1).detach().numpy(), rtol=1e-6)


# -- cells ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_against_numpy(mode, bias):
    if mode.startswith("RNN"):
        cell = nn.RNNCell(3, 5, bias=bias, nonlinearity="tanh" if mode == "RNN_TANH" else "relu")
    else:
        cell = {"LSTM": nn.LSTMCell, "GRU": nn.GRUCell}[mode](3, 5, bias=bias)
    cell.double()
    assert tuple(cell.weight_ih.shape) == (cell.weight_ih.shape[0], 3)
    assert cell.weight_ih.shape[0] == {"LSTM": 20, "GRU": 15}.get(mode, 5)
    assert (cell.bias_ih is not None) == bias
    x = dynjit.randn(4, 3, dtype=dynjit.float64)
    h = dynjit.randn(4, 5, dtype=dynjit.float64)
    c = dynjit.randn(4, 5, dtype=dynjit.float64)
    p = _params(cell)
    ref_h, ref_c = np_cell(mode, x.detach().numpy(), h.detach().numpy(), c.detach().numpy(), p)
    if mode == "LSTM":
        h1, c1 = cell(x, (h, c))
        np.testing.assert_allclose(c1.detach().numpy(), ref_c, rtol=1e-12)
        h_zero, _ = cell(x)
    else:
        h1 = cell(x, h)
        h_zero = cell(x)
    np.testing.assert_allclose(h1.detach().numpy(), ref_h, rtol=1e-12)
    zero = np.zeros((4, 5))
    np.testing.assert_allclose(h_zero.detach().numpy(), np_cell(mode, x.detach().numpy(), zero, zero, p)[0], rtol=1e-12)
    # unbatched: 1-D input and state
    if mode == "LSTM":
        h_u, c_u = cell(x[0], (h[0], c[0]))
        assert tuple(c_u.shape) == (5,)
    else:
        h_u = cell(x[0], h[0])
    assert tuple(h_u.shape) == (5,)
    np.testing.assert_allclose(h_u.detach().numpy(), ref_h[0], rtol=1e-12)


def _check(module, *inputs):
    """gradcheck a float64 module w.r.t. its tensor inputs and all of its parameters."""
    module.double()
    params = list(module.parameters())
    n = len(inputs)

    def run(*args):
        out = module(*args[:n]) if n != 3 else module(args[0], (args[1], args[2]))
        if isinstance(out, tuple):
            flat = []
            for o in out:
                flat.extend(o if isinstance(o, tuple) else (o,))
            return tuple(flat)
        return out
    return gradcheck(run, tuple(inputs) + tuple(params))


def _x(*shape):
    return dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)


@pytest.mark.parametrize("make", [
    lambda: nn.RNNCell(3, 4), lambda: nn.RNNCell(3, 4, nonlinearity="relu"),
    lambda: nn.GRUCell(3, 4), lambda: nn.GRUCell(3, 4, bias=False),
], ids=["rnn_tanh", "rnn_relu", "gru", "gru_nobias"])
def test_gradcheck_cells(make):
    assert _check(make(), _x(2, 3), _x(2, 4))


def test_gradcheck_lstm_cell():
    assert _check(nn.LSTMCell(3, 4), _x(2, 3), _x(2, 4), _x(2, 4))


def test_gradcheck_two_layer_bidirectional_lstm():
    m = nn.LSTM(2, 3, num_layers=2, bidirectional=True)
    assert _check(m, _x(3, 2, 2), _x(4, 2, 3), _x(4, 2, 3))


def test_gradcheck_lstm_proj_and_gru_batch_first():
    assert _check(nn.LSTM(2, 3, proj_size=2, bidirectional=True), _x(3, 1, 2), _x(2, 1, 2), _x(2, 1, 3))
    assert _check(nn.GRU(2, 3, batch_first=True, num_layers=2), _x(2, 3, 2), _x(2, 2, 3))


# -- parameters ----------------------------------------------------------------------------

def test_parameter_names_and_shapes_are_pytorchs():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    expected = {}
    for layer, in_size in ((0, 3), (1, 4)):
        for suffix in ("", "_reverse"):
            expected.update({f"weight_ih_l{layer}{suffix}": (20, in_size),
                             f"weight_hh_l{layer}{suffix}": (20, 2),
                             f"bias_ih_l{layer}{suffix}": (20,), f"bias_hh_l{layer}{suffix}": (20,),
                             f"weight_hr_l{layer}{suffix}": (2, 5)})
    assert shapes == expected
    # PyTorch's order: per layer, per direction: w_ih, w_hh, b_ih, b_hh, w_hr
    assert list(shapes)[:6] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                "weight_hr_l0", "weight_ih_l0_reverse"]
    assert list(m.state_dict()) == list(shapes)
    g = nn.GRU(3, 4, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (12, 3)
    cell = nn.LSTMCell(3, 4)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]


@pytest.mark.parametrize("make", [lambda: nn.LSTM(10, 16, num_layers=2), lambda: nn.GRUCell(10, 25),
                                  lambda: nn.RNN(4, 9, bidirectional=True)])
def test_init_is_uniform_in_one_over_sqrt_hidden(make):
    m = make()
    bound = 1 / math.sqrt(m.hidden_size)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.all(np.abs(values) <= bound)
    # spread over the whole range, roughly uniformly
    assert values.max() > 0.9 * bound and values.min() < -0.9 * bound
    assert abs(values.mean()) < 0.1 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_state_dict_round_trip_and_repr():
    a, b = nn.LSTM(3, 4, num_layers=2), nn.LSTM(3, 4, num_layers=2)
    b.load_state_dict(a.state_dict())
    x = dynjit.randn(3, 2, 3)
    np.testing.assert_array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())
    assert repr(nn.LSTM(3, 4, num_layers=2, batch_first=True)) == "LSTM(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.GRUCell(3, 4, bias=False)) == "GRUCell(3, 4, bias=False)"


# -- dropout between layers ------------------------------------------------------------------

def test_dropout_applies_between_layers_in_training_only():
    dynjit.manual_seed(1)
    m = nn.GRU(3, 4, num_layers=2, dropout=1.0)
    x = dynjit.randn(5, 2, 3)
    # p=1 zeroes the first layer's output: the second layer then sees only zeros
    m.train()
    out, h = m(x)
    ref_out, _, _ = np_rnn("GRU", np.zeros((5, 2, 4)), {n.replace("_l1", "_l0"): v for n, v in _params(m).items()
                                                         if n.endswith("_l1")}, 1, False, np.zeros((1, 2, 4)))
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-5, atol=1e-6)
    m.eval()
    ref_eval, ref_h, _ = np_rnn("GRU", x.detach().numpy().astype(np.float64), _params(m), 2, False, np.zeros((2, 2, 4)))
    np.testing.assert_allclose(m(x)[0].detach().numpy(), ref_eval, rtol=1e-5, atol=1e-6)


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)


# -- packed sequences ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_matches_each_sequence_alone(mode, enforce_sorted):
    m = _make(mode, 3, 4, num_layers=2, bidirectional=True).double()
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 3]
    seqs = [dynjit.randn(n, 3, dtype=dynjit.float64) for n in lengths]
    packed = pack_sequence(seqs, enforce_sorted=enforce_sorted)
    assert isinstance(packed, PackedSequence)
    out, h = m(packed)
    assert isinstance(out, PackedSequence)
    padded, out_lengths = pad_packed_sequence(out, batch_first=True)
    assert out_lengths.tolist() == lengths
    h_n = h[0] if mode == "LSTM" else h
    for b, s in enumerate(seqs):
        alone_out, alone_h = m(s)
        np.testing.assert_allclose(padded[b, :lengths[b]].detach().numpy(), alone_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        assert np.all(padded[b, lengths[b]:].detach().numpy() == 0)
        alone_h_n = alone_h[0] if mode == "LSTM" else alone_h
        np.testing.assert_allclose(h_n[:, b].detach().numpy(), alone_h_n.detach().numpy(), rtol=1e-10, atol=1e-12)
        if mode == "LSTM":
            np.testing.assert_allclose(h[1][:, b].detach().numpy(), alone_h[1].detach().numpy(), rtol=1e-10, atol=1e-12)


def test_packed_gradients_match_each_sequence_alone():
    m = nn.LSTM(3, 4, bidirectional=True).double()
    seqs = [dynjit.randn(n, 3, dtype=dynjit.float64, requires_grad=True) for n in (2, 4, 1)]
    out, (h, c) = m(pack_sequence(seqs, enforce_sorted=False))
    (out.data.sum() + h.sum() + c.sum()).backward()
    packed_grads = [p.grad.detach().numpy().copy() for p in m.parameters()]
    packed_input_grads = [s.grad.detach().numpy().copy() for s in seqs]
    m.zero_grad()
    for s in seqs:
        s.grad = None
        o, (hs, cs) = m(s)
        (o.sum() + hs.sum() + cs.sum()).backward()
    for a, p in zip(packed_grads, m.parameters()):
        np.testing.assert_allclose(a, p.grad.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, s in zip(packed_input_grads, seqs):
        np.testing.assert_allclose(a, s.grad.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_packed_with_initial_state_follows_the_callers_order():
    m = nn.GRU(2, 3)
    seqs = [dynjit.randn(n, 2) for n in (1, 3, 2)]
    h0 = dynjit.randn(1, 3, 3)
    _, h = m(pack_sequence(seqs, enforce_sorted=False), h0)
    for b, s in enumerate(seqs):
        _, alone = m(s, h0[:, b])
        np.testing.assert_allclose(h[:, b].detach().numpy(), alone.detach().numpy(), rtol=1e-6)


# -- packing and padding utilities -------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_against_numpy(batch_first, padding_side):
    arrays = [np.random.default_rng(k).standard_normal((n, 2, 3)).astype(np.float32) for k, n in enumerate((2, 4, 1))]
    out = pad_sequence([dynjit.tensor(a) for a in arrays], batch_first=batch_first, padding_value=-7.0,
                       padding_side=padding_side)
    ref = np.full((3, 4, 2, 3), -7.0, dtype=np.float32)
    for b, a in enumerate(arrays):
        if padding_side == "right":
            ref[b, :len(a)] = a
        else:
            ref[b, 4 - len(a):] = a
    if not batch_first:
        ref = ref.transpose(1, 0, 2, 3)
    np.testing.assert_array_equal(out.detach().numpy(), ref)


def test_pack_padded_sequence_layout_and_round_trip():
    # time-major (T=3, B=3): sequence b holds 10*b + t
    padded = dynjit.tensor([[0., 10., 20.], [1., 11., 0.], [2., 0., 0.]]).unsqueeze(-1)
    packed = pack_padded_sequence(padded, [3, 2, 1])
    assert packed.data.squeeze(-1).tolist() == [0., 10., 20., 1., 11., 2.]
    assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.batch_sizes.dtype == dynjit.int64
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    back, lengths = pad_packed_sequence(packed, padding_value=-1.0, total_length=4)
    assert lengths.tolist() == [3, 2, 1]
    assert back.squeeze(-1).tolist() == [[0., 10., 20.], [1., 11., -1.], [2., -1., -1.], [-1., -1., -1.]]
    # unsorted lengths, batch_first, lengths as a tensor
    x = dynjit.randn(3, 4, 2)
    packed = pack_padded_sequence(x, dynjit.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 0, 2] and packed.unsorted_indices.tolist() == [1, 0, 2]
    back, lengths = pad_packed_sequence(packed, batch_first=True)
    assert lengths.tolist() == [2, 4, 1]
    for b, n in enumerate([2, 4, 1]):
        np.testing.assert_array_equal(back[b, :n].detach().numpy(), x[b, :n].detach().numpy())
        assert np.all(back[b, n:].detach().numpy() == 0)
    assert [tuple(s.shape) for s in unpack_sequence(packed)] == [(2, 2), (4, 2), (1, 2)]
    assert [tuple(s.shape) for s in unpad_sequence(back, lengths, batch_first=True)] == [(2, 2), (4, 2), (1, 2)]


def test_packing_is_differentiable():
    x = dynjit.randn(3, 2, 2, requires_grad=True)
    packed = pack_padded_sequence(x, [3, 1])
    padded, _ = pad_packed_sequence(packed)
    (padded * dynjit.arange(12.).view(3, 2, 2)).sum().backward()
    expected = np.arange(12.).reshape(3, 2, 2)
    expected[1:, 1] = 0           # padding positions get no gradient
    np.testing.assert_array_equal(x.grad.detach().numpy(), expected)


def test_packed_sequence_methods():
    p = pack_sequence([dynjit.randn(2, 3), dynjit.randn(1, 3)])
    assert p.double().data.dtype == dynjit.float64 and p.to(dynjit.float64).data.dtype == dynjit.float64
    assert p.to(dynjit.float32) is p
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert batch_sizes.tolist() == [2, 1] and sorted_indices is None


def test_packing_errors():
    x = dynjit.zeros(3, 2, 1)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [1, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [2, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 \(batch_size=2\)"):
        pack_padded_sequence(x, [2, 2, 1])
    with pytest.raises(RuntimeError, match="larger than the input's time dimension"):
        pack_padded_sequence(x, [4, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest"):
        pad_packed_sequence(pack_sequence([dynjit.ones(3), dynjit.ones(2)]), total_length=2)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got mid."):
        pad_sequence([dynjit.ones(2)], padding_side="mid")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="same trailing dimensions"):
        pad_sequence([dynjit.ones(2, 3), dynjit.ones(2, 4)])


# -- errors (PyTorch's messages) ----------------------------------------------------------------

def test_constructor_errors():
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.GRU(3, 4.0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.RNN(3, 4, num_layers=0)


def test_forward_errors():
    m = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(dynjit.zeros(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(dynjit.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"):
        m(dynjit.zeros(2, 2, 3), (dynjit.zeros(1, 3, 4), dynjit.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match=r"For batched 3-D input, hx and cx should also be 3-D but got \(2-D, 3-D\) tensors"):
        m(dynjit.zeros(2, 2, 3), (dynjit.zeros(2, 4), dynjit.zeros(1, 2, 4)))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\) of two tensors"):
        m(dynjit.zeros(2, 2, 3), dynjit.zeros(1, 2, 4))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple"):
        m(pack_sequence([dynjit.zeros(2, 3)]), dynjit.zeros(1, 1, 4))
    out, (h, c) = m(pack_sequence([dynjit.zeros(2, 3)]), [dynjit.zeros(1, 1, 4), dynjit.zeros(1, 1, 4)])
    assert tuple(h.shape) == (1, 1, 4)
    with pytest.raises(ValueError, match="RNN input dtype \\(dynjit.float64\\) does not match weight dtype"):
        m(dynjit.zeros(2, 2, 3, dtype=dynjit.float64))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        m(dynjit.zeros(0, 2, 3))
    assert tuple(m(dynjit.zeros(2, 0, 3))[0].shape) == (2, 0, 4)      # an empty batch is fine
    g = nn.GRU(3, 4, batch_first=True)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 5, 4\]"):
        g(dynjit.zeros(2, 5, 3), dynjit.zeros(1, 5, 4))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        nn.RNN(3, 4)(dynjit.zeros(5, 3), dynjit.zeros(1, 1, 4))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        nn.GRUCell(3, 4)(dynjit.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        nn.RNNCell(3, 4)(dynjit.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        nn.LSTMCell(3, 4)(dynjit.zeros(2, 3), (dynjit.zeros(3, 4), dynjit.zeros(2, 4)))


# -- compiled == eager -----------------------------------------------------------------------

class _Tagger(nn.Module):
    """Embedding -> 2-layer bidirectional LSTM -> Linear on every step."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 4)
        self.lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(10, 3)

    def forward(self, tokens, hidden):
        out, (h, c) = self.lstm(self.embed(tokens), hidden)
        return self.head(out), h, c


def _tagger_step(model, tokens, hidden):
    logits, h, c = model(tokens, hidden)
    loss = logits.square().mean() + h.sum() * 0.1 + c.square().sum() * 0.01
    loss.backward()
    return loss.detach(), h.detach(), c.detach()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_lstm_model_matches_eager(backend):
    dynjit.manual_seed(0)
    eager_model = _Tagger()
    compiled_model = _Tagger()
    compiled_model.load_state_dict(eager_model.state_dict())
    step = dynjit.compile(_tagger_step, backend=backend)
    hidden_e = hidden_c = (dynjit.zeros(4, 2, 5), dynjit.zeros(4, 2, 5))
    for _ in range(3):
        tokens = dynjit.randint(0, 11, (2, 6))
        loss_e, *hidden_e = _tagger_step(eager_model, tokens, tuple(hidden_e))
        loss_c, *hidden_c = step(compiled_model, tokens, tuple(hidden_c))
        np.testing.assert_allclose(loss_c.item(), loss_e.item(), rtol=1e-5)
        for a, b in zip(hidden_c, hidden_e):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for (name, p_e), p_c in zip(eager_model.named_parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(p_c.grad.detach().numpy(), p_e.grad.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_cells_match_eager(backend):
    cells = [nn.GRUCell(3, 4), nn.LSTMCell(3, 4), nn.RNNCell(3, 4, nonlinearity="relu")]

    def unroll(x, h):
        g = l = r = h
        c = dynjit.zeros_like(h)
        for t in range(x.shape[0]):
            g = cells[0](x[t], g)
            l, c = cells[1](x[t], (l, c))
            r = cells[2](x[t], r)
        return g + l + r

    x = dynjit.randn(4, 2, 3)
    h = dynjit.randn(2, 4, requires_grad=True)
    eager = unroll(x, h)
    eager.sum().backward()
    eager_grads = [h.grad.detach().numpy().copy()] + [p.grad.detach().numpy().copy() for c in cells for p in c.parameters()]
    h.grad = None
    for c in cells:
        c.zero_grad()
    out = dynjit.compile(unroll, backend=backend)(x, h)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-5, atol=1e-6)
    grads = [h.grad.detach().numpy()] + [p.grad.detach().numpy() for c in cells for p in c.parameters()]
    for a, b in zip(grads, eager_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_packed_sequence_matches_eager(backend):
    # packing inside the compiled function; batch_sizes is read as Python ints (a
    # data-dependent graph break), the recurrences around it still compile
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True)

    def f(x, lengths):
        out, h = m(pack_padded_sequence(x, lengths, enforce_sorted=False))
        padded, out_lengths = pad_packed_sequence(out, batch_first=True)
        return (padded * padded).sum() + h.sum(), out_lengths

    x = dynjit.randn(5, 3, 3, requires_grad=True)
    loss_e, lengths_e = f(x, [2, 5, 3])
    loss_e.backward()
    grads_e = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]
    x.grad = None
    m.zero_grad()
    loss_c, lengths_c = dynjit.compile(f, backend=backend)(x, [2, 5, 3])
    loss_c.backward()
    assert lengths_c.tolist() == lengths_e.tolist() == [2, 5, 3]
    np.testing.assert_allclose(loss_c.item(), loss_e.item(), rtol=1e-5)
    for a, b in zip([x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()], grads_e):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
