"""Devices on a CPU-only library: dynjit.device, Tensor.device/.to/.cpu, factories' device=,
the is_* attributes, dynjit.cuda / dynjit.accelerator / dynjit.backends.mps queries, amp's
autocast and GradScaler, and the clear error for any device but the CPU. Compiled runs of the
device idioms match eager, in one graph."""
import contextlib
import pickle
import warnings

import numpy as np
import pytest

import dynjit
from dynjit import nn

BACKENDS = ("eager", "aot_eager", "llvm")
CPU_ONLY = r"dynjit runs on the CPU only; device 'cuda(:0)?' is not available\. Use device='cpu'"


def test_device_objects():
    d = dynjit.device("cpu")
    assert d.type == "cpu" and d.index is None and str(d) == "cpu" and repr(d) == "device(type='cpu')"
    d0 = dynjit.device("cpu:0")
    assert d0.index == 0 and str(d0) == "cpu:0" and repr(d0) == "device(type='cpu', index=0)"
    assert dynjit.device("cpu", 0) == d0 and d0 != d and dynjit.device(d0) == d0
    assert hash(dynjit.device("cpu")) == hash(d) and len({d, dynjit.device("cpu"), d0}) == 2
    assert pickle.loads(pickle.dumps(d0)) == d0
    with pytest.raises(AttributeError):
        d.type = "cuda"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device string: tpu"):
        dynjit.device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cpu:-1'"):
        dynjit.device("cpu:-1")
    with pytest.raises(RuntimeError, match="there is no cpu:1"):
        dynjit.device("cpu:1")
    with pytest.raises(TypeError, match="expects a string or a device"):
        dynjit.device(1.5)
    assert dynjit.get_default_device() == d
    with dynjit.device("cpu"):
        assert dynjit.zeros(1).device == d


@pytest.mark.parametrize("name", ["cuda", "cuda:0", "mps", "xpu", "meta"])
def test_other_devices_raise_a_clear_error(name):
    msg = (rf"dynjit runs on the CPU only; device '{name}' is not available\. Use device='cpu', or "
           r"choose the device portably: device = \"cuda\" if dynjit.cuda.is_available\(\) else \"cpu\"")
    x = dynjit.ones(2)
    with pytest.raises(RuntimeError, match=msg):
        dynjit.device(name)
    with pytest.raises(RuntimeError, match=msg):
        x.to(name)
    with pytest.raises(RuntimeError, match=msg):
        x.to(device=name, dtype=dynjit.float64)
    for factory in (lambda: dynjit.zeros(2, device=name), lambda: dynjit.tensor([1.0], device=name),
                    lambda: dynjit.arange(3, device=name), lambda: dynjit.full((2,), 1.0, device=name),
                    lambda: dynjit.randn(2, device=name), lambda: dynjit.zeros_like(x, device=name),
                    lambda: dynjit.eye(2, device=name), lambda: x.new_zeros(2, device=name),
                    lambda: dynjit.as_tensor([1.0], device=name), lambda: dynjit.randperm(3, device=name)):
        with pytest.raises(RuntimeError, match=msg):
            factory()
    with pytest.raises(RuntimeError, match=msg):
        nn.Linear(2, 2).to(name)
    with pytest.raises(RuntimeError, match=msg):
        nn.Linear(2, 2).to(device=name)


def test_cuda_method_raises():
    with pytest.raises(RuntimeError, match=CPU_ONLY):
        dynjit.ones(2).cuda()


def test_tensor_device_and_is_attributes():
    x = dynjit.randn(2, 3)
    assert isinstance(x.device, dynjit.device) and x.device == dynjit.device("cpu")
    assert x.device.type == "cpu" and x.get_device() == -1
    assert x.is_cpu is True
    assert (x.is_cuda, x.is_xpu, x.is_mps, x.is_meta, x.is_quantized) == (False,) * 5


def test_to_forms():
    x = dynjit.randn(2, 3)
    assert x.to("cpu") is x and x.to(dynjit.device("cpu")) is x and x.cpu() is x
    assert x.to(device="cpu:0") is x and x.to("cpu", non_blocking=True) is x
    y = x.to(dynjit.float64)
    assert y.dtype is dynjit.float64 and np.array_equal(y.numpy(), x.numpy().astype(np.float64))
    z = x.to(dynjit.device("cpu"), dynjit.int32)
    assert z.dtype is dynjit.int32 and np.array_equal(z.numpy(), x.numpy().astype(np.int32))
    assert x.to(device="cpu", dtype=dynjit.float64).dtype is dynjit.float64
    other = dynjit.zeros(1, dtype=dynjit.float16)
    assert x.to(other).dtype is dynjit.float16
    c = x.to("cpu", copy=True)
    assert c is not x and dynjit.equal(c, x) and c.data_ptr() != x.data_ptr()
    with pytest.raises(TypeError, match="invalid combination of arguments - got list"):
        x.to([1])


def test_gradient_flows_through_to():
    x = dynjit.randn(3, requires_grad=True)
    (x.to("cpu", dynjit.float64) ** 2).sum().backward()
    assert np.allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_factories_accept_devices():
    d = dynjit.device("cpu")
    for dev in (d, "cpu", "cpu:0", None):
        assert dynjit.zeros(2, 3, device=dev).shape == (2, 3)
        assert dynjit.ones(2, device=dev).device == d
        assert dynjit.tensor([1.0, 2.0], device=dev).device == d
        assert dynjit.arange(3, device=dev).tolist() == [0, 1, 2]
        assert dynjit.full((2,), 7.0, device=dev).tolist() == [7.0, 7.0]
        assert dynjit.randn(2, device=dev).shape == (2,)
        assert dynjit.empty_like(dynjit.ones(2), device=dev).shape == (2,)


def test_module_to_device():
    m = nn.Linear(3, 2)
    w = m.weight.detach().clone()
    assert m.to(dynjit.device("cpu")) is m and m.to("cpu") is m and m.cpu() is m
    assert dynjit.equal(m.weight, w)
    m.to("cpu", dtype=dynjit.float64)
    assert m.weight.dtype is dynjit.float64


def test_cuda_queries():
    assert dynjit.cuda.is_available() is False and dynjit.cuda.device_count() == 0
    state = dynjit.get_rng_state()
    dynjit.cuda.manual_seed_all(123)
    dynjit.cuda.manual_seed(123)
    dynjit.cuda.synchronize()
    dynjit.cuda.empty_cache()
    # CUDA seeding leaves the CPU generator alone, as in torch
    assert dynjit.get_rng_state() == state
    with pytest.raises(RuntimeError, match="dynjit.cuda.current_device\\(\\): dynjit runs on the CPU only"):
        dynjit.cuda.current_device()
    device = "cuda" if dynjit.cuda.is_available() else "cpu"
    assert dynjit.ones(2).to(device).device.type == "cpu"


def test_accelerator_and_mps():
    assert dynjit.accelerator.is_available() is False
    assert dynjit.accelerator.current_accelerator() is None
    assert dynjit.accelerator.device_count() == 0
    assert dynjit.backends.mps.is_available() is False
    device = (dynjit.accelerator.current_accelerator().type if dynjit.accelerator.is_available()
              else "cpu")
    assert dynjit.zeros(1, device=device).device.type == "cpu"


def _train(scaler_or_none, steps=5, poison_step=None):
    dynjit.manual_seed(0)
    m = nn.Linear(4, 1)
    opt = dynjit.optim.SGD(m.parameters(), lr=0.1)
    x, y = dynjit.randn(8, 4), dynjit.randn(8, 1)
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        if i == poison_step:
            loss = loss * float("inf")
        losses.append(loss.item())
        if scaler_or_none is None:
            loss.backward()
            opt.step()
        else:
            scaler_or_none.scale(loss).backward()
            scaler_or_none.step(opt)
            scaler_or_none.update()
    return losses, m.weight.detach().clone()


def test_cuda_grad_scaler_is_a_pass_through():
    with pytest.warns(UserWarning, match="GradScaler is enabled, but cuda is not available"):
        scaler = dynjit.cuda.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    ref_losses, ref_w = _train(None)
    losses, w = _train(scaler)
    assert losses == ref_losses and dynjit.equal(w, ref_w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not dynjit.amp.GradScaler("cuda", enabled=False).is_enabled()


def test_cpu_grad_scaler_scales_exactly_and_skips_inf_steps():
    scaler = dynjit.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    assert scaler.is_enabled()
    ref_losses, ref_w = _train(None)
    losses, w = _train(scaler)
    assert losses == ref_losses and dynjit.equal(w, ref_w)     # powers of two: exact
    assert scaler.get_scale() == 2.0 ** 12                    # grew twice in 5 steps
    scaler = dynjit.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    _, w_skip = _train(scaler, steps=1, poison_step=0)
    dynjit.manual_seed(0)
    assert dynjit.equal(w_skip, nn.Linear(4, 1).weight)        # the step was skipped
    assert scaler.get_scale() == 2.0 ** 9
    sd = scaler.state_dict()
    other = dynjit.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.get_scale() == 2.0 ** 9


def test_autocast():
    x = dynjit.randn(3, 3)
    with dynjit.autocast(device_type="cpu", enabled=False):
        y = x @ x
    assert dynjit.equal(y, x @ x)
    with pytest.warns(UserWarning, match="device_type of 'cuda', but CUDA is not available"):
        ctx = dynjit.amp.autocast("cuda", dtype=dynjit.float16)
    with ctx:
        assert dynjit.equal(x @ x, y)
    with pytest.warns(UserWarning):
        with dynjit.cuda.amp.autocast():
            assert dynjit.equal(x @ x, y)
    with dynjit.autocast("cpu", dtype=dynjit.float16):      # CPU autocast runs (tests/ops/test_bfloat16.py)
        assert (x @ x).dtype is dynjit.float16

    assert dynjit.is_autocast_enabled() is False

    @dynjit.autocast("cpu", enabled=False)
    def f(a):
        return a * 2
    assert dynjit.equal(f(x), x * 2)


# -- compiled == eager -----------------------------------------------------------------------
DEV = dynjit.device("cpu")


def _autocast_off(x):
    with dynjit.autocast("cpu", enabled=False):
        return x * 2


def _nullcontext(x):
    with contextlib.nullcontext():
        return x * 2


CASES = [
    pytest.param(lambda x: x.to("cpu") * 2, id="to_str"),
    pytest.param(lambda x: x.cpu() + 1, id="cpu"),
    pytest.param(lambda x: x + dynjit.ones(3, device="cpu"), id="factory_str"),
    pytest.param(lambda x: x.to(dynjit.zeros(1, dtype=dynjit.float64)) * 2, id="to_other"),
    pytest.param(lambda x: x * (2 if x.is_cuda else 3), id="is_cuda"),
    pytest.param(lambda x: x.to(DEV) * 2, id="to_device_object"),
    pytest.param(lambda x: x.to(DEV, dynjit.float64) * 2, id="to_device_dtype"),
    pytest.param(lambda x: x + dynjit.zeros(3, device=DEV), id="factory_device_object"),
    pytest.param(lambda x: x + dynjit.zeros(3, device=x.device), id="factory_tensor_device"),
    pytest.param(lambda x: x * (2 if x.is_xpu else 3), id="is_xpu"),
    pytest.param(lambda x: x * (2 if x.is_cpu else 3), id="is_cpu"),
    pytest.param(lambda x: x.to(dynjit.device("cpu")) * 2, id="device_made_inside"),
    pytest.param(lambda x: x.to(x.device) * 2, id="to_tensor_device"),
    pytest.param(lambda x: x.to("cuda" if dynjit.cuda.is_available() else "cpu") * 2, id="portable_device"),
    pytest.param(lambda x: x * (2 if x.device.type == "cpu" else 3), id="device_type"),
    pytest.param(_autocast_off, id="autocast_disabled"),
    pytest.param(_nullcontext, id="nullcontext"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES)
def test_compiled_device_idioms_match_eager(fn, backend):
    dynjit.reset()
    x = dynjit.randn(3)
    compiled = dynjit.compile(fn, backend=backend, fullgraph=True)
    expected = fn(x)
    got = compiled(x)
    assert got.dtype is expected.dtype and dynjit.allclose(got, expected)
