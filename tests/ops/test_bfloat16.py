"""bfloat16: a dtype that computes in float32 and rounds every result to bfloat16's 8
significant bits (round to nearest, ties to even), stored in float32 arrays; and CPU
autocast, which computes matrix products in it.

The rounding is checked against a reference written here from the definition (the two
bfloat16 neighbours of a value and the nearer one, in float64 arithmetic), not against
dynjit's bit manipulation."""
import math

import numpy as np
import pytest

import dynjit
from dynjit import bfloat16, float32, float64


def bf16_reference(values):
    """Each float32 value rounded to the nearest bfloat16 (ties to the even mantissa)."""
    values = np.asarray(values, dtype=np.float32)
    out = []
    for v in values.reshape(-1).tolist():
        if math.isnan(v) or math.isinf(v) or v == 0:
            out.append(v)
            continue
        bits = int(np.array(v, np.float32).view(np.uint32))
        low_bits = bits & 0xFFFF0000
        low = float(np.array(low_bits, np.uint32).view(np.float32))
        high = float(np.array(low_bits + 0x10000, np.uint32).view(np.float32))   # next away from 0
        d_low, d_high = abs(v - low), abs(high - v)
        if d_low < d_high or (d_low == d_high and (low_bits >> 16) % 2 == 0):
            out.append(low)
        else:
            out.append(high)
    return np.array(out, dtype=np.float32).reshape(values.shape)


VALUES = np.concatenate([
    np.random.default_rng(0).standard_normal(2000).astype(np.float32) * 10.0 ** np.random.default_rng(1).integers(-30, 30, 2000),
    np.float32([1.0, 3.14159, 1 / 3, 1e-3, 65504.0, 3.38e38, -2.7182818, 1.00390625, 1.01171875, 1.005859375,
                1e-40, -0.0, float("inf"), float("-inf"), 2.0 ** -133]),
]).astype(np.float32)


def test_dtype_properties():
    assert bfloat16.is_floating_point and not bfloat16.is_complex and bfloat16.itemsize == 2
    x = dynjit.ones(3, dtype=bfloat16)
    assert x.dtype is bfloat16 and x.element_size() == 2 and x.is_floating_point()
    assert x.type() == "dynjit.BFloat16Tensor"
    assert repr(bfloat16) == "dynjit.bfloat16"


def test_conversion_rounds_to_nearest_even():
    x = dynjit.tensor(VALUES)
    for converted in (x.to(bfloat16), x.bfloat16(), dynjit.tensor(VALUES, dtype=bfloat16),
                      dynjit.tensor(VALUES.tolist(), dtype=bfloat16)):
        assert converted.dtype is bfloat16
        np.testing.assert_array_equal(converted.float().numpy(), bf16_reference(VALUES))
    nan = dynjit.tensor([float("nan")]).bfloat16()
    assert math.isnan(nan.item())
    # back to float32 is exact, and says float32
    back = x.bfloat16().float()
    assert back.dtype is float32


def test_ties_go_to_the_even_neighbour():
    # 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the even one (1.0) wins; 1 + 3*2^-8
    # lies halfway between 1 + 2^-7 and 1 + 2^-6: the even one (1 + 2^-6) wins
    x = dynjit.tensor([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20]).bfloat16()
    assert x.tolist() == [1.0, 1 + 2 ** -6, 1 + 2 ** -7]


@pytest.mark.parametrize("name,fn,ref", [
    ("mul", lambda x, y: x * y, lambda a, b: a * b),
    ("div", lambda x, y: x / y, lambda a, b: a / b),
    ("add_scalar", lambda x, y: x + 1.1, lambda a, b: a + np.float32(1.1)),
    ("exp", lambda x, y: x.exp(), lambda a, b: np.exp(a)),
    ("tanh", lambda x, y: x.tanh(), lambda a, b: np.tanh(a)),
    ("sum", lambda x, y: x.sum(1), lambda a, b: a.sum(1)),
    ("mean", lambda x, y: x.mean(), lambda a, b: a.mean()),
    ("matmul", lambda x, y: x @ y.t(), lambda a, b: a @ b.T),
    ("softmax", lambda x, y: x.softmax(-1), lambda a, b: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
])
def test_ops_compute_in_float32_and_round_their_results(name, fn, ref):
    rng = np.random.default_rng(3)
    a = bf16_reference(rng.standard_normal((4, 6)))
    b = bf16_reference(rng.uniform(0.5, 2.0, (4, 6)))
    out = fn(dynjit.tensor(a, dtype=bfloat16), dynjit.tensor(b, dtype=bfloat16))
    assert out.dtype is bfloat16
    expected = bf16_reference(np.asarray(ref(a.astype(np.float32), b.astype(np.float32)), dtype=np.float32))
    got = out.float().numpy()
    # the float32 result before rounding may differ from numpy's in its last bits (summation
    # order), which can move a value to the neighbouring bfloat16 at most
    np.testing.assert_allclose(got, expected, rtol=2 ** -7, atol=0)
    np.testing.assert_array_equal(got, bf16_reference(got))      # every result is a bfloat16


def test_promotion():
    b = dynjit.ones(2, dtype=bfloat16)
    assert (b + dynjit.ones(2)).dtype is float32
    assert (b + dynjit.ones(2, dtype=dynjit.float16)).dtype is float32
    assert (b + dynjit.ones(2, dtype=float64)).dtype is float64
    assert (b + 1).dtype is bfloat16 and (b * 2.5).dtype is bfloat16
    assert (b + dynjit.ones(2, dtype=dynjit.int64)).dtype is bfloat16
    assert (b + dynjit.tensor(1.0)).dtype is bfloat16      # a 0-d float32 does not win
    assert dynjit.promote_types(bfloat16, dynjit.float16) is float32
    assert (b > 0).dtype is dynjit.bool
    assert dynjit.cat([b, dynjit.ones(2)]).dtype is float32


def test_factories_and_random():
    assert dynjit.full((2,), 1.1, dtype=bfloat16).tolist() == [1.1015625, 1.1015625]
    r = dynjit.randn(1000, dtype=bfloat16)
    assert r.dtype is bfloat16
    np.testing.assert_array_equal(r.float().numpy(), bf16_reference(r.float().numpy()))
    assert dynjit.arange(5, dtype=bfloat16).dtype is bfloat16
    assert (dynjit.arange(5, dtype=bfloat16) / 7).tolist()[1] == 0.142578125


def test_gradients_are_bfloat16():
    w = dynjit.tensor([1.1, 2.2], dtype=bfloat16, requires_grad=True)
    (w * w * 3.3).sum().backward()
    assert w.grad.dtype is bfloat16
    # 2 * w * 3.3 with every intermediate rounded: w = [1.1015625, 2.203125], 3.3 -> 3.296875
    assert w.grad.tolist() == [7.25, 14.5]
    lin = dynjit.nn.Linear(4, 3).to(bfloat16)
    assert lin.weight.dtype is bfloat16
    np.testing.assert_array_equal(lin.weight.detach().float().numpy(),
                                  bf16_reference(lin.weight.detach().float().numpy()))


def test_repr():
    assert repr(dynjit.tensor([1.0, 2.5, 3.14159]).bfloat16()) == "tensor([1.0000, 2.5000, 3.1406], dtype=dynjit.bfloat16)"


def test_autocast_on_the_cpu_computes_matrix_products_in_bfloat16():
    x = dynjit.tensor(np.linspace(-2, 2, 12).reshape(3, 4), dtype=float32)
    w = dynjit.tensor(np.linspace(-1, 1.3, 8).reshape(2, 4), dtype=float32, requires_grad=True)
    bias = dynjit.tensor([0.1, -0.2], requires_grad=True)
    with dynjit.autocast("cpu"):
        assert dynjit.is_autocast_enabled("cpu") and not dynjit.is_autocast_enabled()
        y = dynjit.nn.functional.linear(x, w, bias)
        s = y.relu().sum()                   # not in the policy: runs in its input's dtype
        d = x.double() @ x.double().t()      # float64 is never cast
        with dynjit.autocast("cpu", enabled=False):
            plain = x @ x.t()
    assert y.dtype is bfloat16 and s.dtype is bfloat16 and d.dtype is float64 and plain.dtype is float32
    xa, wa, ba = (bf16_reference(t.detach().numpy()) for t in (x, w, bias))
    expected = bf16_reference(xa @ wa.T + ba)
    np.testing.assert_allclose(y.detach().float().numpy(), expected, rtol=2 ** -7)
    s.float().backward()
    assert w.grad.dtype is float32       # the cast is recorded: the gradient comes back as float32
    mask = (expected > 0).astype(np.float32)
    np.testing.assert_allclose(w.grad.numpy(), bf16_reference(mask.T @ xa), rtol=2 ** -7)
    np.testing.assert_allclose(bias.grad.numpy(), mask.sum(0))
    assert not dynjit.is_autocast_enabled("cpu")


def test_autocast_float32_ops_and_float16():
    logits = dynjit.randn(4, 3).bfloat16()
    target = dynjit.tensor([0, 2, 1, 1])
    with dynjit.autocast("cpu"):
        loss = dynjit.nn.functional.nll_loss(logits.log_softmax(-1), target)
    assert loss.dtype is float32        # nll_loss is on autocast's float32 list
    with dynjit.autocast("cpu", dtype=dynjit.float16):
        assert (dynjit.ones(2, 2) @ dynjit.ones(2, 2)).dtype is dynjit.float16
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtype of torch.bfloat16, torch.float16"):
        with dynjit.autocast("cpu", dtype=float64):
            assert (dynjit.ones(2, 2) @ dynjit.ones(2, 2)).dtype is float32


def test_save_and_load_keep_bfloat16_and_complex(tmp_path):
    import warnings
    b = dynjit.tensor(VALUES[:50]).bfloat16()
    z = dynjit.tensor(np.arange(6) + 1j * np.arange(6)[::-1], dtype=dynjit.complex64)
    path = tmp_path / "t.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (numpy warns when it would drop a dtype's metadata)
        dynjit.save({"b": b, "view": b[10:20], "z": z, "zr": z.real}, path)
    loaded = dynjit.load(path)
    assert loaded["b"].dtype is bfloat16 and loaded["view"].dtype is bfloat16
    np.testing.assert_array_equal(loaded["b"].float().numpy(), b.float().numpy())
    np.testing.assert_array_equal(loaded["view"].float().numpy(), b[10:20].float().numpy())
    assert loaded["z"].dtype is dynjit.complex64 and loaded["zr"].dtype is float32
    np.testing.assert_array_equal(loaded["z"].numpy(), z.numpy())
    np.testing.assert_array_equal(loaded["zr"].numpy(), z.numpy().real)


def test_finfo_and_iinfo():
    f = dynjit.finfo(bfloat16)
    assert (f.bits, f.eps, f.resolution, f.dtype) == (16, 2.0 ** -7, 0.01, "bfloat16")
    assert f.max == float(bf16_reference([3.4e38])[0]) == -f.min      # the largest bfloat16
    assert f.tiny == f.smallest_normal == 2.0 ** -126
    assert repr(f) == ("finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, "
                       "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=bfloat16)")
    for d, np_d in ((dynjit.float16, np.float16), (float32, np.float32), (float64, np.float64),
                    (dynjit.complex128, np.float64)):
        info = dynjit.finfo(d)
        assert (info.bits, info.eps, info.max, info.tiny) == (
            np.finfo(np_d).bits, float(np.finfo(np_d).eps), float(np.finfo(np_d).max), float(np.finfo(np_d).tiny))
    assert dynjit.finfo(dynjit.float16).resolution == 0.001 and dynjit.finfo().dtype == "float32"
    i = dynjit.iinfo(dynjit.int32)
    assert (i.bits, i.max, i.min, i.dtype) == (32, 2 ** 31 - 1, -2 ** 31, "int32")
    with pytest.raises(TypeError, match="requires a floating point input type"):
        dynjit.finfo(dynjit.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        dynjit.iinfo(float32)
