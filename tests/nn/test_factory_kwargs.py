"""`device=` and `dtype=` in every layer constructor that takes them (PyTorch's factory
kwargs, dynjit/nn/modules/_factory.py): the dtype is the dtype of every floating parameter
and buffer, the CPU is accepted however it is named, and any other device raises the error
a tensor factory raises for it, before the layer is made."""
import pytest

import dynjit
import dynjit.nn as nn

LAYERS = {
    "Linear": ((3, 4), {}), "Bilinear": ((2, 3, 4), {}),
    "Conv1d": ((2, 3, 3), {}), "Conv2d": ((2, 3, 3), {}), "Conv3d": ((2, 3, 3), {}),
    "ConvTranspose1d": ((2, 3, 3), {}), "ConvTranspose2d": ((2, 3, 3), {}), "ConvTranspose3d": ((2, 3, 3), {}),
    "BatchNorm1d": ((3,), {}), "BatchNorm2d": ((3,), {}), "BatchNorm3d": ((3,), {}),
    "InstanceNorm1d": ((3,), dict(affine=True, track_running_stats=True)),
    "InstanceNorm2d": ((3,), dict(affine=True, track_running_stats=True)),
    "InstanceNorm3d": ((3,), dict(affine=True, track_running_stats=True)),
    "LayerNorm": ((3,), {}), "GroupNorm": ((1, 3), {}), "RMSNorm": ((3,), {}), "Embedding": ((5, 3), {}),
    "MultiheadAttention": ((4, 2), dict(add_bias_kv=True)),
    "RNN": ((3, 4), {}), "LSTM": ((3, 4), dict(proj_size=2)), "GRU": ((3, 4), dict(bidirectional=True)),
    "RNNCell": ((3, 4), {}), "LSTMCell": ((3, 4), {}), "GRUCell": ((3, 4), {}),
    "TransformerEncoderLayer": ((4, 2), dict(dim_feedforward=8)),
    "TransformerDecoderLayer": ((4, 2), dict(dim_feedforward=8)),
    "Transformer": ((), dict(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)),
}


def _cuda_error():
    with pytest.raises(RuntimeError) as info:
        dynjit.empty(1, device="cuda")
    return str(info.value)


def _floating(module):
    return [(name, t) for name, t in list(module.named_parameters()) + list(module.named_buffers())
            if t.dtype.is_floating_point]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_dtype_is_honoured(name):
    args, kwargs = LAYERS[name]
    for dtype in (dynjit.float64, dynjit.float32):
        layer = getattr(nn, name)(*args, dtype=dtype, **kwargs)
        tensors = _floating(layer)
        assert tensors
        assert all(t.dtype == dtype for _, t in tensors), [(n, t.dtype) for n, t in tensors]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_device_cpu_is_accepted_and_other_devices_raise_the_factory_error(name):
    args, kwargs = LAYERS[name]
    cls = getattr(nn, name)
    for device in (None, "cpu", "cpu:0", dynjit.device("cpu"), dynjit.device("cpu", 0)):
        layer = cls(*args, device=device, **kwargs)
        assert all(t.device == dynjit.device("cpu") for _, t in _floating(layer))
    expected = _cuda_error()
    with pytest.raises(RuntimeError) as info:
        cls(*args, device="cuda", **kwargs)
    assert str(info.value) == expected
    for other in ("cuda:0", "meta", "mps"):
        with pytest.raises(RuntimeError, match="dynjit runs on the CPU only"):
            cls(*args, device=other, dtype=dynjit.float64, **kwargs)


def test_square_subsequent_mask_takes_the_factory_kwargs():
    mask = nn.Transformer.generate_square_subsequent_mask(3, device="cpu", dtype=dynjit.float64)
    assert mask.dtype == dynjit.float64 and mask.shape == (3, 3)
    with pytest.raises(RuntimeError) as info:
        nn.Transformer.generate_square_subsequent_mask(3, device="cuda")
    assert str(info.value) == _cuda_error()
