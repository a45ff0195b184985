"""Every module class dynjit.nn exports, through aot_module, in training and in eval
mode, against the same module run eagerly: the same outputs, the same gradients of
the inputs and of every parameter, the same buffer updates (BatchNorm's running
statistics), the same writes into inputs (in-place activations) and into
parameters (Embedding's max_norm renormalization). Each case then runs again on
other values without recompiling, so a value baked into the graph shows.

dynjit has no ModuleInfo database: MODULES below is the explicit table, one row
per (class, constructor arguments, example inputs). Classes that take no tensor
input are left out of it (see NO_TENSOR_INPUT); test_table_covers_every_module
keeps the table in step with dynjit.nn's exports.
"""
import copy

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
from dynjit.aot import aot_module, nop


def _leaf(*shape, low=None):
    t = dynjit.randn(*shape) if low is None else dynjit.rand(*shape) * (1 - 2 * low) + low
    return t.requires_grad_()


def _x(*shape):
    """One differentiable input."""
    def make():
        x = _leaf(*shape)
        return [x], [x]
    return make


def _x_nonleaf(*shape):
    """A differentiable non-leaf input, for in-place modules (a leaf that requires grad
    cannot be written in place)."""
    def make():
        x = _leaf(*shape)
        return [x], [x * 1.0]
    return make


def _two(*shape):
    def make():
        a, b = _leaf(*shape), _leaf(*shape)
        return [a, b], [a, b]
    return make


def _classes(n, c, ignore=None):
    """(N, C) scores and int64 targets; `ignore` sets the first target to that class."""
    def make():
        x = _leaf(n, c)
        t = dynjit.randint(0, c, (n,))
        if ignore is not None:
            t[0] = ignore
        return [x], [x, t]
    return make


def _probs(*shape):
    """BCELoss: probabilities in (0, 1) as input and as target."""
    def make():
        x, t = _leaf(*shape, low=0.05), _leaf(*shape, low=0.0)
        return [x, t], [x, t]
    return make


def _log_probs(n, c, log_target):
    def make():
        x, t = _leaf(n, c), _leaf(n, c)
        lx = x.log_softmax(1)
        lt = t.log_softmax(1) if log_target else t.softmax(1)
        return [x, t], [lx, lt]
    return make


def _ids(*shape, high=10):
    def make():
        return [], [dynjit.randint(0, high, shape)]
    return make


def _two_rnn(x_shape, h_shape):
    """An input and an initial hidden state, both differentiable."""
    def make():
        x, h = _leaf(*x_shape), _leaf(*h_shape)
        return [x, h], [x, h]
    return make


def _lstm_state(x_shape, h_shape, c_shape):
    """An LSTM input and its (h0, c0), all differentiable."""
    def make():
        x, h, c = _leaf(*x_shape), _leaf(*h_shape), _leaf(*c_shape)
        return [x, h, c], [x, (h, c)]
    return make


def _pm_one(n):
    """MarginRankingLoss / CosineEmbeddingLoss targets: 1 or -1 per sample."""
    return dynjit.randint(0, 2, (n,)).float() * 2 - 1


def _pair_target(x1_shape, x2_shape, n):
    """Two differentiable inputs and a +-1 target (not differentiable)."""
    def make():
        a, b = _leaf(*x1_shape), _leaf(*x2_shape)
        return [a, b], [a, b, _pm_one(n)]
    return make


def _three(*shape):
    def make():
        a, b, c = _leaf(*shape), _leaf(*shape), _leaf(*shape)
        return [a, b, c], [a, b, c]
    return make


def _padding_mask(n, s):
    """A random (N, S) key_padding_mask that never masks every key of a sample (an
    all-masked row is NaN in PyTorch too); True = ignore that key."""
    mask = dynjit.rand(n, s) < 0.4
    mask[:, 0] = False
    return mask


def _float_mask(l, s):
    """A random additive (L, S) attention mask: 0 or -inf, never -inf on every key."""
    mask = dynjit.zeros(l, s).masked_fill(dynjit.rand(l, s) < 0.4, float("-inf"))
    mask[:, 0] = 0.0
    return mask


def _causal(l):
    return nn.Transformer.generate_square_subsequent_mask(l)


def _attention(l, s, n, e, kdim=None, vdim=None, *, batch_first=False, self_attention=False,
               key_padding=False, attn_mask=None, **kwargs):
    """MultiheadAttention's (query, key, value) plus masks and flags. attn_mask: None,
    "bool" (random, True = not allowed), "float" (random additive) or "causal" (with
    is_causal=True, as the Transformer layers pass it)."""
    def shape(length, dim):
        return (n, length, dim) if batch_first else (length, n, dim)

    def make():
        q = _leaf(*shape(l, e))
        if self_attention:
            leaves, args = [q], [q, q, q]
        else:
            k, v = _leaf(*shape(s, kdim or e)), _leaf(*shape(s, vdim or e))
            leaves, args = [q, k, v], [q, k, v]
        kw = dict(kwargs)
        if key_padding:
            kw["key_padding_mask"] = _padding_mask(n, s)
        if attn_mask == "bool":
            kw["attn_mask"] = (dynjit.rand(l, s) < 0.4).masked_fill(
                dynjit.arange(s).unsqueeze(0) == 0, False)
        elif attn_mask == "float":
            kw["attn_mask"] = _float_mask(l, s)
        elif attn_mask == "causal":
            kw["attn_mask"], kw["is_causal"] = _causal(l), True
        return leaves, args, kw
    return make


def _src(s, n, e, *, batch_first=False, mask=None, padding=False, unbatched=False, mask_name="src_mask"):
    """A Transformer encoder (layer)'s source and optional masks."""
    def make():
        src = _leaf(s, e) if unbatched else _leaf(*((n, s, e) if batch_first else (s, n, e)))
        kw = {}
        if mask == "causal":
            kw[mask_name] = _causal(s)
            kw["is_causal"] = True
        elif mask == "float":
            kw[mask_name] = _float_mask(s, s)
        if padding:
            kw["src_key_padding_mask"] = _padding_mask(n, s)
        return [src], [src], kw
    return make


def _tgt_memory(t, s, n, e, *, batch_first=False, causal=False, padding=False, memory_mask=False,
                causal_kw="tgt_is_causal"):
    """A Transformer decoder (layer)'s target and memory, both differentiable, and masks."""
    def make():
        def shape(length):
            return (n, length, e) if batch_first else (length, n, e)
        tgt, mem = _leaf(*shape(t)), _leaf(*shape(s))
        kw = {}
        if causal:
            kw["tgt_mask"], kw[causal_kw] = _causal(t), True
        if padding:
            kw["tgt_key_padding_mask"] = _padding_mask(n, t)
            kw["memory_key_padding_mask"] = _padding_mask(n, s)
        if memory_mask:
            kw["memory_mask"] = _float_mask(t, s)
        return [tgt, mem], [tgt, mem], kw
    return make


def _src_tgt(s, t, n, e, *, batch_first=False, masks=False):
    """The full Transformer's source and target (both differentiable) and masks."""
    def make():
        def shape(length):
            return (n, length, e) if batch_first else (length, n, e)
        src, tgt = _leaf(*shape(s)), _leaf(*shape(t))
        kw = {}
        if masks:
            kw = dict(tgt_mask=_causal(t), tgt_is_causal=True, src_key_padding_mask=_padding_mask(n, s),
                      memory_key_padding_mask=_padding_mask(n, s), memory_mask=_float_mask(t, s))
        return [src, tgt], [src, tgt], kw
    return make


def _pos(*shape):
    """One differentiable input in (0.1, 0.9): LP pooling of an odd power needs window sums > 0."""
    def make():
        x = _leaf(*shape, low=0.1)
        return [x], [x]
    return make


def _pooled(pool, *shape, output_size=None):
    """MaxUnpool's (input, indices[, output_size]): `pool` (a max pool returning indices)
    applied to a differentiable leaf, so the gradient reaches the leaf through the unpooling."""
    def make():
        x = _leaf(*shape)
        values, indices = pool(x)
        return [x], [values, indices] + ([output_size] if output_size is not None else [])
    return make


def _gaussian(input_shape, var_shape):
    """GaussianNLLLoss's input, target and a positive variance, all differentiable."""
    def make():
        x, t, v = _leaf(*input_shape), _leaf(*input_shape), _leaf(*var_shape, low=0.05)
        return [x, t, v], [x, t, v]
    return make


def _enc_layer(**kw):
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, **kw)


def _dec_layer(**kw):
    return nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, **kw)


def _seq():
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2))


# (row id, module class, constructor, make_inputs). make_inputs() -> (leaves, args) or
# (leaves, args, kwargs): gradients are taken w.r.t. the leaves (and the parameters);
# args (and kwargs: masks, flags) go to forward.
MODULES = [
    ("Identity", nn.Identity, lambda: nn.Identity(3, unused=True), _x(2, 3)),
    ("Linear", nn.Linear, lambda: nn.Linear(4, 3), _x(5, 4)),
    ("Linear_nobias", nn.Linear, lambda: nn.Linear(4, 3, bias=False), _x(2, 5, 4)),
    ("Linear_1d", nn.Linear, lambda: nn.Linear(4, 3), _x(4)),
    ("Bilinear", nn.Bilinear, lambda: nn.Bilinear(3, 4, 2),
     lambda: (lambda a, b: ([a, b], [a, b]))(_leaf(5, 3), _leaf(5, 4))),
    ("Bilinear_nobias", nn.Bilinear, lambda: nn.Bilinear(3, 3, 2, bias=False), _two(4, 3)),
    ("Sequential", nn.Sequential, _seq, _x(8, 4)),
    ("ReLU", nn.ReLU, lambda: nn.ReLU(), _x(3, 4)),
    ("ReLU_inplace", nn.ReLU, lambda: nn.ReLU(inplace=True), _x_nonleaf(3, 4)),
    ("ReLU6", nn.ReLU6, lambda: nn.ReLU6(), lambda: (lambda x: ([x], [x * 4]))(_leaf(3, 4))),
    ("LeakyReLU", nn.LeakyReLU, lambda: nn.LeakyReLU(0.2), _x(3, 4)),
    ("LeakyReLU_inplace", nn.LeakyReLU, lambda: nn.LeakyReLU(0.2, inplace=True), _x_nonleaf(3, 4)),
    ("ELU", nn.ELU, lambda: nn.ELU(alpha=0.5), _x(3, 4)),
    ("ELU_inplace", nn.ELU, lambda: nn.ELU(inplace=True), _x_nonleaf(3, 4)),
    ("GELU", nn.GELU, lambda: nn.GELU(), _x(3, 4)),
    ("GELU_tanh", nn.GELU, lambda: nn.GELU(approximate="tanh"), _x(3, 4)),
    ("SiLU", nn.SiLU, lambda: nn.SiLU(), _x(3, 4)),
    ("SiLU_inplace", nn.SiLU, lambda: nn.SiLU(inplace=True), _x_nonleaf(3, 4)),
    ("Mish", nn.Mish, lambda: nn.Mish(), _x(3, 4)),
    ("Sigmoid", nn.Sigmoid, lambda: nn.Sigmoid(), _x(3, 4)),
    ("Tanh", nn.Tanh, lambda: nn.Tanh(), _x(3, 4)),
    ("Softplus", nn.Softplus, lambda: nn.Softplus(beta=2.0, threshold=1.0), _x(3, 4)),
    ("Hardtanh", nn.Hardtanh, lambda: nn.Hardtanh(-0.5, 0.5), _x(3, 4)),
    ("Hardtanh_inplace", nn.Hardtanh, lambda: nn.Hardtanh(inplace=True), _x_nonleaf(3, 4)),
    ("Threshold", nn.Threshold, lambda: nn.Threshold(0.1, 20.0), _x(3, 4)),
    ("Threshold_inplace", nn.Threshold, lambda: nn.Threshold(0.1, 20.0, inplace=True), _x_nonleaf(3, 4)),
    ("LogSigmoid", nn.LogSigmoid, lambda: nn.LogSigmoid(), _x(3, 4)),
    ("Softmax", nn.Softmax, lambda: nn.Softmax(dim=1), _x(3, 4, 2)),
    ("Softmax_neg_dim", nn.Softmax, lambda: nn.Softmax(dim=-1), _x(3, 4)),
    ("LogSoftmax", nn.LogSoftmax, lambda: nn.LogSoftmax(dim=1), _x(3, 4)),
    ("Softmin", nn.Softmin, lambda: nn.Softmin(dim=0), _x(3, 4)),
    ("Dropout", nn.Dropout, lambda: nn.Dropout(0.3), _x(6, 5)),
    ("Dropout_inplace", nn.Dropout, lambda: nn.Dropout(0.3, inplace=True), _x_nonleaf(6, 5)),
    ("Dropout1d", nn.Dropout1d, lambda: nn.Dropout1d(0.4), _x(3, 4, 5)),
    ("Dropout1d_unbatched", nn.Dropout1d, lambda: nn.Dropout1d(0.4), _x(4, 5)),
    ("Dropout2d", nn.Dropout2d, lambda: nn.Dropout2d(0.4), _x(2, 4, 3, 3)),
    ("Dropout2d_inplace", nn.Dropout2d, lambda: nn.Dropout2d(0.4, inplace=True), _x_nonleaf(2, 4, 3, 3)),
    ("Dropout3d", nn.Dropout3d, lambda: nn.Dropout3d(0.4), _x(2, 4, 2, 3, 2)),
    ("Dropout3d_unbatched", nn.Dropout3d, lambda: nn.Dropout3d(0.4), _x(4, 2, 3, 2)),
    ("AlphaDropout", nn.AlphaDropout, lambda: nn.AlphaDropout(0.3), _x(6, 5)),
    ("Flatten", nn.Flatten, lambda: nn.Flatten(), _x(2, 3, 4)),
    ("Flatten_dims", nn.Flatten, lambda: nn.Flatten(0, 1), _x(2, 3, 4)),
    ("Unflatten", nn.Unflatten, lambda: nn.Unflatten(1, (2, 3)), _x(4, 6)),
    ("LayerNorm", nn.LayerNorm, lambda: nn.LayerNorm(4), _x(3, 4)),
    ("LayerNorm_2d", nn.LayerNorm, lambda: nn.LayerNorm((3, 4), eps=1e-3), _x(2, 3, 4)),
    ("LayerNorm_no_affine", nn.LayerNorm, lambda: nn.LayerNorm(4, elementwise_affine=False), _x(3, 4)),
    ("LayerNorm_no_bias", nn.LayerNorm, lambda: nn.LayerNorm(4, bias=False), _x(3, 4)),
    ("BatchNorm1d", nn.BatchNorm1d, lambda: nn.BatchNorm1d(4), _x(6, 4)),
    ("BatchNorm1d_3d", nn.BatchNorm1d, lambda: nn.BatchNorm1d(3, momentum=0.3), _x(4, 3, 5)),
    ("BatchNorm1d_cumulative", nn.BatchNorm1d, lambda: nn.BatchNorm1d(4, momentum=None), _x(6, 4)),
    ("BatchNorm1d_no_affine", nn.BatchNorm1d, lambda: nn.BatchNorm1d(4, affine=False), _x(6, 4)),
    ("BatchNorm1d_no_stats", nn.BatchNorm1d, lambda: nn.BatchNorm1d(4, track_running_stats=False), _x(6, 4)),
    ("BatchNorm2d", nn.BatchNorm2d, lambda: nn.BatchNorm2d(3), _x(2, 3, 4, 4)),
    ("BatchNorm2d_eps", nn.BatchNorm2d, lambda: nn.BatchNorm2d(3, eps=1e-2, momentum=0.5), _x(2, 3, 2, 5)),
    ("BatchNorm3d", nn.BatchNorm3d, lambda: nn.BatchNorm3d(3), _x(2, 3, 2, 3, 2)),
    ("BatchNorm3d_no_affine_no_stats", nn.BatchNorm3d,
     lambda: nn.BatchNorm3d(3, affine=False, track_running_stats=False), _x(2, 3, 2, 2, 3)),
    ("InstanceNorm1d", nn.InstanceNorm1d, lambda: nn.InstanceNorm1d(3), _x(2, 3, 5)),
    ("InstanceNorm1d_affine_stats", nn.InstanceNorm1d,
     lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), _x(2, 3, 5)),
    ("InstanceNorm1d_unbatched", nn.InstanceNorm1d, lambda: nn.InstanceNorm1d(3, affine=True), _x(3, 5)),
    ("InstanceNorm2d", nn.InstanceNorm2d, lambda: nn.InstanceNorm2d(3, eps=1e-3), _x(2, 3, 4, 3)),
    ("InstanceNorm2d_affine_stats", nn.InstanceNorm2d,
     lambda: nn.InstanceNorm2d(3, momentum=0.3, affine=True, track_running_stats=True), _x(2, 3, 4, 3)),
    ("InstanceNorm3d", nn.InstanceNorm3d, lambda: nn.InstanceNorm3d(2, affine=True), _x(2, 2, 2, 3, 2)),
    ("InstanceNorm3d_stats_unbatched", nn.InstanceNorm3d,
     lambda: nn.InstanceNorm3d(2, track_running_stats=True), _x(2, 2, 3, 2)),
    ("GroupNorm", nn.GroupNorm, lambda: nn.GroupNorm(2, 4), _x(3, 4, 5)),
    ("GroupNorm_no_affine_4d", nn.GroupNorm, lambda: nn.GroupNorm(3, 6, eps=1e-3, affine=False),
     _x(2, 6, 2, 3)),
    ("GroupNorm_2d", nn.GroupNorm, lambda: nn.GroupNorm(1, 4), _x(3, 4)),
    ("RMSNorm", nn.RMSNorm, lambda: nn.RMSNorm(4), _x(3, 4)),
    ("RMSNorm_2d_eps", nn.RMSNorm, lambda: nn.RMSNorm((3, 4), eps=1e-3), _x(2, 3, 4)),
    ("RMSNorm_no_affine", nn.RMSNorm, lambda: nn.RMSNorm(4, elementwise_affine=False), _x(3, 4)),
    ("LocalResponseNorm", nn.LocalResponseNorm, lambda: nn.LocalResponseNorm(2), _x(2, 5, 4)),
    ("LocalResponseNorm_4d", nn.LocalResponseNorm, lambda: nn.LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0),
     _x(2, 6, 3, 3)),
    ("Embedding", nn.Embedding, lambda: nn.Embedding(10, 3), _ids(2, 4)),
    ("Embedding_padding_idx", nn.Embedding, lambda: nn.Embedding(10, 3, padding_idx=0),
     lambda: ([], [dynjit.tensor([[0, 2, 0], [5, 9, 2]])])),
    ("Embedding_max_norm", nn.Embedding, lambda: nn.Embedding(10, 3, max_norm=1.0), _ids(5)),
    ("EmbeddingBag_mean", nn.EmbeddingBag, lambda: nn.EmbeddingBag(10, 3), _ids(2, 4)),
    ("EmbeddingBag_sum_offsets", nn.EmbeddingBag, lambda: nn.EmbeddingBag(10, 3, mode="sum"),
     lambda: ([], [dynjit.tensor([1, 2, 4, 5, 4, 3, 2, 9]), dynjit.tensor([0, 3, 5])])),
    ("EmbeddingBag_max", nn.EmbeddingBag, lambda: nn.EmbeddingBag(10, 3, mode="max"), _ids(3, 2)),
    ("CELU", nn.CELU, lambda: nn.CELU(alpha=0.7), _x(3, 4)),
    ("SELU", nn.SELU, lambda: nn.SELU(), _x(3, 4)),
    ("GLU", nn.GLU, lambda: nn.GLU(dim=1), _x(3, 4)),
    ("Hardshrink", nn.Hardshrink, lambda: nn.Hardshrink(0.3), _x(3, 4)),
    ("Softshrink", nn.Softshrink, lambda: nn.Softshrink(0.3), _x(3, 4)),
    ("Tanhshrink", nn.Tanhshrink, lambda: nn.Tanhshrink(), _x(3, 4)),
    ("Hardsigmoid", nn.Hardsigmoid, lambda: nn.Hardsigmoid(), lambda: (lambda x: ([x], [x * 4]))(_leaf(3, 4))),
    ("Hardswish", nn.Hardswish, lambda: nn.Hardswish(), lambda: (lambda x: ([x], [x * 4]))(_leaf(3, 4))),
    ("PReLU", nn.PReLU, lambda: nn.PReLU(), _x(3, 4)),
    ("PReLU_per_channel", nn.PReLU, lambda: nn.PReLU(num_parameters=3, init=0.1), _x(2, 3, 4)),
    ("Upsample_nearest", nn.Upsample, lambda: nn.Upsample(scale_factor=2), _x(2, 3, 4)),
    ("Upsample_nearest_size", nn.Upsample, lambda: nn.Upsample(size=(5, 3)), _x(1, 2, 3, 4)),
    ("Upsample_linear", nn.Upsample, lambda: nn.Upsample(size=7, mode="linear"), _x(2, 3, 4)),
    ("Upsample_bilinear_align", nn.Upsample,
     lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), _x(2, 3, 4, 5)),
    ("Upsample_bilinear_scale", nn.Upsample, lambda: nn.Upsample(scale_factor=1.7, mode="bilinear"),
     _x(1, 2, 3, 4)),
    ("Upsample_trilinear", nn.Upsample, lambda: nn.Upsample(scale_factor=(1, 2, 1.5), mode="trilinear"),
     _x(1, 2, 2, 3, 2)),
    ("UpsamplingNearest2d", nn.UpsamplingNearest2d, lambda: nn.UpsamplingNearest2d(scale_factor=2),
     _x(1, 2, 3, 3)),
    ("UpsamplingBilinear2d", nn.UpsamplingBilinear2d, lambda: nn.UpsamplingBilinear2d(size=(4, 6)),
     _x(1, 2, 3, 3)),
    ("Conv1d", nn.Conv1d, lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), _x(2, 4, 7)),
    ("Conv2d", nn.Conv2d, lambda: nn.Conv2d(3, 4, (3, 2), padding=1, dilation=(1, 2)), _x(2, 3, 5, 6)),
    ("Conv2d_same_reflect", nn.Conv2d, lambda: nn.Conv2d(2, 3, 2, padding="same", padding_mode="reflect"),
     _x(1, 2, 4, 5)),
    ("Conv2d_circular_unbatched", nn.Conv2d, lambda: nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular",
                                                               bias=False), _x(2, 4, 4)),
    ("Conv3d", nn.Conv3d, lambda: nn.Conv3d(2, 3, 2, padding=(1, 0, 0)), _x(1, 2, 3, 3, 4)),
    ("ConvTranspose1d", nn.ConvTranspose1d, lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1,
                                                                       groups=2), _x(2, 4, 5)),
    ("ConvTranspose2d", nn.ConvTranspose2d, lambda: nn.ConvTranspose2d(3, 2, (2, 3), stride=(2, 1), padding=1),
     _x(2, 3, 4, 4)),
    ("ConvTranspose3d", nn.ConvTranspose3d, lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), _x(1, 2, 2, 2, 3)),
    ("PixelShuffle", nn.PixelShuffle, lambda: nn.PixelShuffle(2), _x(2, 8, 2, 3)),
    ("PixelShuffle_unbatched", nn.PixelShuffle, lambda: nn.PixelShuffle(3), _x(9, 2, 1)),
    ("PixelUnshuffle", nn.PixelUnshuffle, lambda: nn.PixelUnshuffle(2), _x(2, 2, 4, 6)),
    ("PixelUnshuffle_5d", nn.PixelUnshuffle, lambda: nn.PixelUnshuffle(3), _x(2, 1, 2, 3, 6)),
    ("Unfold", nn.Unfold, lambda: nn.Unfold(2, padding=1, stride=2), _x(2, 3, 4, 5)),
    ("Fold", nn.Fold, lambda: nn.Fold((4, 5), 2), _x(2, 12, 12)),
    ("MaxPool1d", nn.MaxPool1d, lambda: nn.MaxPool1d(3, 2, padding=1, ceil_mode=True), _x(2, 3, 8)),
    ("MaxPool2d", nn.MaxPool2d, lambda: nn.MaxPool2d(2), _x(2, 3, 4, 6)),
    ("MaxPool2d_indices", nn.MaxPool2d, lambda: nn.MaxPool2d(3, 2, 1, dilation=1, return_indices=True),
     _x(2, 3, 5, 5)),
    ("MaxPool3d", nn.MaxPool3d, lambda: nn.MaxPool3d(2), _x(1, 2, 2, 4, 4)),
    ("AvgPool1d", nn.AvgPool1d, lambda: nn.AvgPool1d(3, 2, 1, count_include_pad=False), _x(2, 3, 8)),
    ("AvgPool2d", nn.AvgPool2d, lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=4),
     _x(2, 3, 5, 6)),
    ("AvgPool3d", nn.AvgPool3d, lambda: nn.AvgPool3d(2), _x(1, 2, 2, 4, 4)),
    ("AdaptiveAvgPool1d", nn.AdaptiveAvgPool1d, lambda: nn.AdaptiveAvgPool1d(3), _x(2, 3, 7)),
    ("AdaptiveAvgPool2d", nn.AdaptiveAvgPool2d, lambda: nn.AdaptiveAvgPool2d((2, None)), _x(2, 3, 5, 4)),
    ("AdaptiveAvgPool3d", nn.AdaptiveAvgPool3d, lambda: nn.AdaptiveAvgPool3d(1), _x(1, 2, 2, 3, 3)),
    ("AdaptiveMaxPool1d", nn.AdaptiveMaxPool1d, lambda: nn.AdaptiveMaxPool1d(3, return_indices=True),
     _x(2, 3, 7)),
    ("AdaptiveMaxPool2d", nn.AdaptiveMaxPool2d, lambda: nn.AdaptiveMaxPool2d((2, 3)), _x(2, 3, 5, 4)),
    ("LPPool1d", nn.LPPool1d, lambda: nn.LPPool1d(2, 3, 2), _x(2, 3, 8)),
    ("LPPool1d_p3_ceil", nn.LPPool1d, lambda: nn.LPPool1d(3, 2, ceil_mode=True), _pos(2, 3, 7)),
    ("LPPool2d", nn.LPPool2d, lambda: nn.LPPool2d(2, (2, 3), stride=(1, 2)), _x(2, 3, 4, 6)),
    ("LPPool3d", nn.LPPool3d, lambda: nn.LPPool3d(1.5, 2), _pos(1, 2, 2, 4, 4)),
    ("MaxUnpool1d", nn.MaxUnpool1d, lambda: nn.MaxUnpool1d(2),
     _pooled(nn.MaxPool1d(2, return_indices=True), 2, 3, 8)),
    ("MaxUnpool2d_output_size", nn.MaxUnpool2d, lambda: nn.MaxUnpool2d(3, 2, 1),
     _pooled(nn.MaxPool2d(3, 2, 1, return_indices=True), 2, 3, 6, 7, output_size=[6, 7])),
    ("MaxUnpool3d", nn.MaxUnpool3d, lambda: nn.MaxUnpool3d(2),
     _pooled(nn.MaxPool3d(2, return_indices=True), 1, 2, 2, 4, 4)),
    # the samples that place the windows are drawn in forward (seeded alike in both runs)
    # or fixed in the _random_samples buffer
    ("FractionalMaxPool2d", nn.FractionalMaxPool2d, lambda: nn.FractionalMaxPool2d(2, output_size=(4, 5)),
     _x(2, 3, 7, 9)),
    ("FractionalMaxPool2d_ratio_indices", nn.FractionalMaxPool2d,
     lambda: nn.FractionalMaxPool2d((3, 2), output_ratio=0.5, return_indices=True), _x(2, 2, 10, 8)),
    ("FractionalMaxPool3d_fixed_samples", nn.FractionalMaxPool3d,
     lambda: nn.FractionalMaxPool3d(2, output_size=(2, 3, 2), _random_samples=dynjit.rand(1, 2, 3)),
     _x(1, 2, 4, 6, 5)),
    ("MSELoss", nn.MSELoss, lambda: nn.MSELoss(), _two(3, 4)),
    ("MSELoss_sum", nn.MSELoss, lambda: nn.MSELoss(reduction="sum"), _two(3, 4)),
    ("MSELoss_none", nn.MSELoss, lambda: nn.MSELoss(reduction="none"), _two(3, 4)),
    ("L1Loss", nn.L1Loss, lambda: nn.L1Loss(), _two(3, 4)),
    ("SmoothL1Loss", nn.SmoothL1Loss, lambda: nn.SmoothL1Loss(beta=0.5), _two(3, 4)),
    ("HuberLoss", nn.HuberLoss, lambda: nn.HuberLoss(delta=0.5, reduction="sum"), _two(3, 4)),
    ("NLLLoss", nn.NLLLoss, lambda: nn.NLLLoss(), _classes(5, 4)),
    ("NLLLoss_weight_ignore", nn.NLLLoss,
     lambda: nn.NLLLoss(weight=dynjit.rand(4) + 0.5, ignore_index=1), _classes(5, 4, ignore=1)),
    ("NLLLoss_none", nn.NLLLoss, lambda: nn.NLLLoss(reduction="none"), _classes(5, 4)),
    ("CrossEntropyLoss", nn.CrossEntropyLoss, lambda: nn.CrossEntropyLoss(), _classes(5, 4)),
    ("CrossEntropyLoss_weight_smoothing", nn.CrossEntropyLoss,
     lambda: nn.CrossEntropyLoss(weight=dynjit.rand(4) + 0.5, label_smoothing=0.1), _classes(5, 4)),
    ("CrossEntropyLoss_ignore_sum", nn.CrossEntropyLoss,
     lambda: nn.CrossEntropyLoss(ignore_index=2, reduction="sum"), _classes(5, 4, ignore=2)),
    ("BCELoss", nn.BCELoss, lambda: nn.BCELoss(), _probs(3, 4)),
    ("BCELoss_weight", nn.BCELoss, lambda: nn.BCELoss(weight=dynjit.rand(4), reduction="sum"), _probs(3, 4)),
    ("BCEWithLogitsLoss", nn.BCEWithLogitsLoss, lambda: nn.BCEWithLogitsLoss(),
     lambda: (lambda x, t: ([x, t], [x, t]))(_leaf(3, 4), _leaf(3, 4, low=0.0))),
    ("BCEWithLogitsLoss_pos_weight", nn.BCEWithLogitsLoss,
     lambda: nn.BCEWithLogitsLoss(weight=dynjit.rand(4), pos_weight=dynjit.rand(4) + 0.5),
     lambda: (lambda x, t: ([x, t], [x, t]))(_leaf(3, 4), _leaf(3, 4, low=0.0))),
    ("KLDivLoss", nn.KLDivLoss, lambda: nn.KLDivLoss(reduction="batchmean"), _log_probs(3, 4, False)),
    ("KLDivLoss_log_target", nn.KLDivLoss, lambda: nn.KLDivLoss(reduction="sum", log_target=True),
     _log_probs(3, 4, True)),
    ("PairwiseDistance", nn.PairwiseDistance, lambda: nn.PairwiseDistance(), _two(3, 4)),
    ("PairwiseDistance_p1_keepdim", nn.PairwiseDistance, lambda: nn.PairwiseDistance(p=1.0, keepdim=True),
     _two(3, 4)),
    ("PairwiseDistance_broadcast", nn.PairwiseDistance, lambda: nn.PairwiseDistance(p=3.0, eps=1e-3),
     lambda: (lambda a, b: ([a, b], [a, b]))(_leaf(3, 4), _leaf(4))),
    ("CosineSimilarity", nn.CosineSimilarity, lambda: nn.CosineSimilarity(), _two(3, 4)),
    ("CosineSimilarity_dim0", nn.CosineSimilarity, lambda: nn.CosineSimilarity(dim=0, eps=1e-3), _two(3, 4, 2)),
    ("GaussianNLLLoss", nn.GaussianNLLLoss, lambda: nn.GaussianNLLLoss(), _gaussian((4, 3), (4, 3))),
    ("GaussianNLLLoss_full_sum_shared_var", nn.GaussianNLLLoss,
     lambda: nn.GaussianNLLLoss(full=True, reduction="sum"), _gaussian((4, 3), (4, 1))),
    ("GaussianNLLLoss_none_eps_var_one_dim_fewer", nn.GaussianNLLLoss,
     lambda: nn.GaussianNLLLoss(eps=0.1, reduction="none"), _gaussian((4, 3), (4,))),
    ("SoftMarginLoss", nn.SoftMarginLoss, lambda: nn.SoftMarginLoss(),
     lambda: (lambda x: ([x], [x, _pm_one(5)]))(_leaf(5))),
    ("MultiLabelSoftMarginLoss", nn.MultiLabelSoftMarginLoss,
     lambda: nn.MultiLabelSoftMarginLoss(weight=dynjit.rand(4) + 0.5),
     lambda: (lambda x: ([x], [x, dynjit.randint(0, 2, (3, 4)).float()]))(_leaf(3, 4))),
    ("HingeEmbeddingLoss", nn.HingeEmbeddingLoss, lambda: nn.HingeEmbeddingLoss(margin=0.5),
     lambda: (lambda x: ([x], [x, _pm_one(5)]))(_leaf(5))),
    ("PoissonNLLLoss", nn.PoissonNLLLoss, lambda: nn.PoissonNLLLoss(),
     lambda: (lambda x: ([x], [x, dynjit.rand(3, 4) * 3]))(_leaf(3, 4))),
    ("PoissonNLLLoss_full_rate", nn.PoissonNLLLoss, lambda: nn.PoissonNLLLoss(log_input=False, full=True),
     lambda: (lambda x: ([x], [x, dynjit.rand(3, 4) * 3 + 1]))(_leaf(3, 4, low=0.1))),
    ("MultiMarginLoss", nn.MultiMarginLoss, lambda: nn.MultiMarginLoss(), _classes(5, 4)),
    ("MultiMarginLoss_p2_weight", nn.MultiMarginLoss,
     lambda: nn.MultiMarginLoss(p=2, margin=0.5, weight=dynjit.rand(4) + 0.5, reduction="sum"), _classes(5, 4)),
    ("MarginRankingLoss", nn.MarginRankingLoss, lambda: nn.MarginRankingLoss(), _pair_target((5,), (5,), 5)),
    ("MarginRankingLoss_margin_none", nn.MarginRankingLoss,
     lambda: nn.MarginRankingLoss(margin=0.5, reduction="none"), _pair_target((5,), (5,), 5)),
    ("CosineEmbeddingLoss", nn.CosineEmbeddingLoss, lambda: nn.CosineEmbeddingLoss(),
     _pair_target((5, 3), (5, 3), 5)),
    ("CosineEmbeddingLoss_margin_sum", nn.CosineEmbeddingLoss,
     lambda: nn.CosineEmbeddingLoss(margin=0.2, reduction="sum"), _pair_target((5, 3), (5, 3), 5)),
    ("TripletMarginLoss", nn.TripletMarginLoss, lambda: nn.TripletMarginLoss(), _three(5, 3)),
    ("TripletMarginLoss_p1_swap_none", nn.TripletMarginLoss,
     lambda: nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="none"), _three(5, 3)),
    ("MultiheadAttention", nn.MultiheadAttention, lambda: nn.MultiheadAttention(6, 2), _attention(3, 4, 2, 6)),
    ("MultiheadAttention_self_nobias_no_weights", nn.MultiheadAttention,
     lambda: nn.MultiheadAttention(6, 3, bias=False),
     _attention(4, 4, 2, 6, self_attention=True, need_weights=False)),
    ("MultiheadAttention_masks_per_head", nn.MultiheadAttention, lambda: nn.MultiheadAttention(6, 2),
     _attention(3, 4, 2, 6, key_padding=True, attn_mask="bool", average_attn_weights=False)),
    ("MultiheadAttention_float_mask_batch_first", nn.MultiheadAttention,
     lambda: nn.MultiheadAttention(4, 2, batch_first=True), _attention(3, 5, 2, 4, batch_first=True,
                                                                       attn_mask="float")),
    ("MultiheadAttention_causal", nn.MultiheadAttention, lambda: nn.MultiheadAttention(4, 1),
     _attention(3, 3, 2, 4, self_attention=True, attn_mask="causal", need_weights=False)),
    ("MultiheadAttention_kdim_vdim_bias_kv_zero_attn", nn.MultiheadAttention,
     lambda: nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True),
     _attention(3, 4, 2, 4, kdim=3, vdim=5, key_padding=True)),
    ("MultiheadAttention_dropout", nn.MultiheadAttention, lambda: nn.MultiheadAttention(4, 2, dropout=0.3),
     _attention(3, 4, 2, 4)),
    ("MultiheadAttention_unbatched", nn.MultiheadAttention, lambda: nn.MultiheadAttention(4, 2),
     lambda: (lambda q, k, v: ([q, k, v], [q, k, v]))(_leaf(3, 4), _leaf(5, 4), _leaf(5, 4))),
    ("TransformerEncoderLayer", nn.TransformerEncoderLayer, lambda: _enc_layer(), _src(5, 2, 8)),
    ("TransformerEncoderLayer_norm_first_gelu_masks", nn.TransformerEncoderLayer,
     lambda: _enc_layer(activation="gelu", norm_first=True, batch_first=True),
     _src(5, 2, 8, batch_first=True, mask="float", padding=True)),
    ("TransformerEncoderLayer_causal_nobias", nn.TransformerEncoderLayer,
     lambda: _enc_layer(dropout=0.0, bias=False, layer_norm_eps=1e-3), _src(4, 2, 8, mask="causal")),
    ("TransformerEncoderLayer_unbatched", nn.TransformerEncoderLayer, lambda: _enc_layer(),
     _src(4, 1, 8, unbatched=True)),
    ("TransformerDecoderLayer", nn.TransformerDecoderLayer, lambda: _dec_layer(), _tgt_memory(4, 5, 2, 8)),
    ("TransformerDecoderLayer_norm_first_masks", nn.TransformerDecoderLayer,
     lambda: _dec_layer(norm_first=True, batch_first=True, activation=nn.functional.silu),
     _tgt_memory(4, 5, 2, 8, batch_first=True, causal=True, padding=True, memory_mask=True)),
    ("TransformerEncoder", nn.TransformerEncoder, lambda: nn.TransformerEncoder(_enc_layer(), 2),
     _src(5, 2, 8, mask_name="mask")),
    ("TransformerEncoder_norm_masks", nn.TransformerEncoder,
     lambda: nn.TransformerEncoder(_enc_layer(batch_first=True), 2, norm=nn.LayerNorm(8)),
     _src(5, 2, 8, batch_first=True, mask="causal", padding=True, mask_name="mask")),
    ("TransformerDecoder", nn.TransformerDecoder, lambda: nn.TransformerDecoder(_dec_layer(), 2),
     _tgt_memory(4, 5, 2, 8)),
    ("TransformerDecoder_norm_masks", nn.TransformerDecoder,
     lambda: nn.TransformerDecoder(_dec_layer(norm_first=True), 2, norm=nn.LayerNorm(8)),
     _tgt_memory(4, 5, 2, 8, causal=True, padding=True, memory_mask=True)),
    ("Transformer", nn.Transformer, lambda: nn.Transformer(8, 2, 1, 1, 12), _src_tgt(5, 4, 2, 8)),
    ("Transformer_batch_first_masks", nn.Transformer,
     lambda: nn.Transformer(8, 2, 2, 1, 12, dropout=0.2, batch_first=True, norm_first=True),
     _src_tgt(5, 4, 2, 8, batch_first=True, masks=True)),
    ("RNNBase", nn.RNNBase, lambda: nn.RNNBase("GRU", 3, 4), _x(5, 2, 3)),
    ("RNN", nn.RNN, lambda: nn.RNN(3, 4), _x(5, 2, 3)),
    ("RNN_relu_bidirectional_batch_first", nn.RNN,
     lambda: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True, batch_first=True), _x(2, 5, 3)),
    ("RNN_unbatched_h0", nn.RNN, lambda: nn.RNN(3, 4, num_layers=2), _two_rnn((5, 3), (2, 4))),
    ("LSTM", nn.LSTM, lambda: nn.LSTM(3, 4), _x(5, 2, 3)),
    ("LSTM_2layer_bidirectional_h0", nn.LSTM, lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
     _lstm_state((5, 2, 3), (4, 2, 4), (4, 2, 4))),
    ("LSTM_proj_nobias", nn.LSTM, lambda: nn.LSTM(3, 4, proj_size=2, bias=False), _x(5, 2, 3)),
    ("GRU", nn.GRU, lambda: nn.GRU(3, 4), _x(5, 2, 3)),
    ("GRU_dropout", nn.GRU, lambda: nn.GRU(3, 4, num_layers=2, dropout=0.3), _x(5, 2, 3)),
    ("RNNCell", nn.RNNCell, lambda: nn.RNNCell(3, 4, nonlinearity="relu"), _two_rnn((2, 3), (2, 4))),
    ("LSTMCell", nn.LSTMCell, lambda: nn.LSTMCell(3, 4), _lstm_state((2, 3), (2, 4), (2, 4))),
    ("GRUCell", nn.GRUCell, lambda: nn.GRUCell(3, 4), _x(3)),
    ("ZeroPad1d", nn.ZeroPad1d, lambda: nn.ZeroPad1d((1, 2)), _x(2, 3, 4)),
    ("ZeroPad2d", nn.ZeroPad2d, lambda: nn.ZeroPad2d(1), _x(1, 2, 3, 4)),
    ("ZeroPad3d", nn.ZeroPad3d, lambda: nn.ZeroPad3d((1, 0, 0, 1, 1, 1)), _x(1, 2, 3, 3, 3)),
    ("ConstantPad1d", nn.ConstantPad1d, lambda: nn.ConstantPad1d(2, 3.5), _x(2, 4)),
    ("ConstantPad2d", nn.ConstantPad2d, lambda: nn.ConstantPad2d((1, 2, 0, 1), -1.0), _x(2, 3, 4)),
    ("ConstantPad3d", nn.ConstantPad3d, lambda: nn.ConstantPad3d(1, 0.5), _x(1, 2, 2, 3, 3)),
    ("ReflectionPad1d", nn.ReflectionPad1d, lambda: nn.ReflectionPad1d((2, 1)), _x(2, 3, 5)),
    ("ReflectionPad2d", nn.ReflectionPad2d, lambda: nn.ReflectionPad2d(1), _x(1, 2, 4, 4)),
    ("ReflectionPad3d", nn.ReflectionPad3d, lambda: nn.ReflectionPad3d((1, 1, 2, 0, 0, 1)), _x(1, 1, 3, 4, 3)),
    ("ReplicationPad1d", nn.ReplicationPad1d, lambda: nn.ReplicationPad1d(2), _x(2, 3, 4)),
    ("ReplicationPad2d", nn.ReplicationPad2d, lambda: nn.ReplicationPad2d((0, 2, 1, 1)), _x(1, 2, 3, 3)),
    ("ReplicationPad3d", nn.ReplicationPad3d, lambda: nn.ReplicationPad3d(1), _x(1, 1, 2, 3, 2)),
    ("CircularPad1d", nn.CircularPad1d, lambda: nn.CircularPad1d((1, 2)), _x(2, 3, 4)),
    ("CircularPad2d", nn.CircularPad2d, lambda: nn.CircularPad2d(1), _x(1, 2, 3, 4)),
    ("CircularPad3d", nn.CircularPad3d, lambda: nn.CircularPad3d((1, 0, 1, 1, 0, 1)), _x(1, 1, 3, 3, 3)),
]

# Exported classes with no forward taking a tensor: Module is the abstract base (its
# forward raises); the containers other than Sequential hold modules or parameters and
# have no forward at all; RNNCellBase holds a cell's parameters, its subclasses the forward.
NO_TENSOR_INPUT = {"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                   "RNNCellBase"}

XFAIL = {}


def test_table_covers_every_module():
    exported = {name for name in nn.modules.__all__ if isinstance(getattr(nn, name), type)}
    covered = {cls.__name__ for _, cls, _, _ in MODULES}
    assert exported - NO_TENSOR_INPUT == covered
    for _, cls, ctor, _ in MODULES:
        assert type(ctor()) is cls


def _tensors(v):
    if isinstance(v, dynjit.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    return []


def _cotangent(o, i):
    """Fixed, uneven weights for output i. A plain out.sum() would test nothing for
    outputs whose sum does not depend on the input (softmax rows sum to 1, a LayerNorm
    with its initial weight and bias sums to 0 up to rounding)."""
    w = np.cos(np.arange(o.numel()) * 0.7 + 0.3 + i).reshape(o.shape)
    return dynjit.tensor(w, dtype=o.dtype)


def _forward_backward(fn, mod, leaves, args, kwargs):
    """Run forward; the gradients of sum_i (out_i * w_i).sum() over the differentiable
    tensor outputs w.r.t. the parameters and the leaves (None where there is no path)."""
    out = fn(*args, **kwargs)
    diff = [p for p in mod.parameters() if p.requires_grad] + leaves
    total = sum((o * _cotangent(o, i)).sum() for i, o in enumerate(_tensors(out)) if o.requires_grad)
    if not diff or not isinstance(total, dynjit.Tensor):
        return out, []
    return out, list(dynjit.autograd.grad(total, diff, allow_unused=True))


def _assert_close(a, b, what):
    if a is None or b is None:
        assert a is None and b is None, f"{what}: eager {a!r}, compiled {b!r}"
        return
    assert a.shape == b.shape and a.dtype is b.dtype, f"{what}: {a.dtype}{list(a.shape)} != {b.dtype}{list(b.shape)}"
    assert a.requires_grad == b.requires_grad, f"{what}: requires_grad {a.requires_grad} != {b.requires_grad}"
    np.testing.assert_allclose(b.numpy(force=True), a.numpy(force=True), rtol=1e-5, atol=1e-6, err_msg=what)


def _state(mod):
    return dict(mod.named_parameters()) | dict(mod.named_buffers())


def _check(ref_mod, test_mod, compiled, make_inputs, seed):
    results = []
    for mod, fn in ((ref_mod, ref_mod), (test_mod, compiled)):
        dynjit.manual_seed(seed)            # same inputs, same dropout masks
        leaves, args, *kwargs = make_inputs()
        out, grads = _forward_backward(fn, mod, leaves, args, kwargs[0] if kwargs else {})
        results.append((out, grads, args))
    (ref_out, ref_grads, ref_args), (out, grads, args) = results
    ref_outs, outs = _tensors(ref_out), _tensors(out)
    assert type(out) is type(ref_out) and len(outs) == len(ref_outs)
    for i, (a, b) in enumerate(zip(ref_outs, outs)):
        _assert_close(a, b, f"output {i}")
    assert len(grads) == len(ref_grads)
    names = [n for n, p in ref_mod.named_parameters() if p.requires_grad]
    for i, (a, b) in enumerate(zip(ref_grads, grads)):
        _assert_close(a, b, f"gradient of {names[i] if i < len(names) else f'input {i - len(names)}'}")
    for i, (a, b) in enumerate(zip(_tensors(ref_args), _tensors(args))):
        _assert_close(a.detach(), b.detach(), f"input {i} after the call")
    ref_state, state = _state(ref_mod), _state(test_mod)
    assert ref_state.keys() == state.keys()
    for name in ref_state:                 # buffer updates and in-place parameter writes
        _assert_close(ref_state[name].detach(), state[name].detach(), f"{name} after the call")


def _cases():
    for row_id, cls, ctor, make_inputs in MODULES:
        for training in (True, False):
            case = f"{row_id}-{'train' if training else 'eval'}"
            marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case])] if case in XFAIL else []
            yield pytest.param(ctor, make_inputs, training, id=case, marks=marks)


# ports: 001_fdd911346beae147.txt TestEagerFusionModuleInfo.test_aot_autograd_module_exhaustive
@pytest.mark.parametrize("ctor, make_inputs, training", list(_cases()))
def test_aot_autograd_module_exhaustive(ctor, make_inputs, training):
    dynjit.manual_seed(0)
    ref_mod = ctor()
    test_mod = copy.deepcopy(ref_mod)
    ref_mod.train(training)
    test_mod.train(training)
    graphs = []

    def fw_compiler(gm, example_inputs):
        graphs.append(gm)
        return nop(gm, example_inputs)
    compiled = aot_module(test_mod, fw_compiler, nop)
    _check(ref_mod, test_mod, compiled, make_inputs, seed=1)
    # other values, same compiled graph: nothing of the first call is baked in
    _check(ref_mod, test_mod, compiled, make_inputs, seed=2)
    assert len(graphs) == 1


def test_embedding_max_norm_renormalizes_the_rows_looked_up():
    # the sweep's Embedding_max_norm row compares with eager; this pins eager itself
    emb = nn.Embedding(3, 2, max_norm=1.0)
    with dynjit.no_grad():
        emb.weight.copy_(dynjit.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    out = emb(dynjit.tensor([0, 1, 0]))
    row0 = [3.0 / (5.0 + 1e-7), 4.0 / (5.0 + 1e-7)]    # norm 5 > 1: scaled by 1 / (5 + 1e-7)
    expected = [row0, [0.3, 0.4], [6.0, 8.0]]           # row 1 is under max_norm, row 2 unused
    np.testing.assert_allclose(emb.weight.detach().numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), [row0, [0.3, 0.4], row0], rtol=1e-6)
    emb.weight.grad = None
    out.sum().backward()                                 # gradients as without max_norm
    np.testing.assert_allclose(emb.weight.grad.numpy(), [[2, 2], [1, 1], [0, 0]])
    p1 = nn.Embedding(2, 2, max_norm=2.0, norm_type=1.0)
    with dynjit.no_grad():
        p1.weight.copy_(dynjit.tensor([[3.0, -1.0], [1.0, 0.5]]))
    p1(dynjit.tensor([[0, 1]]))
    np.testing.assert_allclose(p1.weight.detach().numpy(), [[1.5, -0.5], [1.0, 0.5]], rtol=1e-6)
