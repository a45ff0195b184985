"""Large output buffers are reused between calls once nothing holds them, and never
while anything (a tensor, a view, a numpy array taken out of it) still does."""
import numpy as np
import pytest

import dynjit
from backends.llvm import runtime

from llvm_helpers import compiled

N = 400_000          # 1.6 MB of float32: past runtime.CACHED_BUFFER_BYTES


@pytest.fixture(params=["1", "2"], ids=["1-thread", "2-threads"])
def exp_fn(request, monkeypatch):
    monkeypatch.setenv("DYNJIT_NUM_THREADS", request.param)
    x = dynjit.randn(N)
    _, fn = compiled(lambda x: (x * 2).exp(), x)
    assert ("_par(" in fn.source) == (request.param == "2")
    return fn, x


def _address(t):
    return t.numpy().__array_interface__["data"][0]


def test_dropped_result_buffer_is_reused(exp_fn):
    fn, x = exp_fn
    first = _address(fn(x))
    assert _address(fn(x)) == first


@pytest.mark.parametrize("hold", [lambda t: t, lambda t: t[::2], lambda t: t.numpy(),
                                  lambda t: t.numpy()[5:], lambda t: memoryview(t.numpy())])
def test_held_results_are_never_overwritten(exp_fn, hold):
    fn, x = exp_fn
    out = fn(x)
    expected = out.numpy().copy()
    kept = hold(out)
    del out
    y = dynjit.randn(N)
    second = fn(y)
    np.testing.assert_array_equal(np.asarray(kept), np.asarray(hold(dynjit.tensor(expected))))
    np.testing.assert_allclose(second.numpy(), (y * 2).exp().numpy(), rtol=1e-6)
    del kept
    assert _address(fn(x)) != _address(second)          # `second` is still held


def test_x_equals_f_of_x_alternates_between_two_buffers():
    x = dynjit.rand(N)
    _, fn = compiled(lambda x: x * 0.5 + 0.25, x)
    addresses = set()
    ref = x.numpy().astype(np.float64)
    for _ in range(6):
        x = fn(x)
        ref = ref * 0.5 + 0.25
        addresses.add(_address(x))
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-6)
    assert len(addresses) == 2


def test_cache_size_is_bounded(monkeypatch):
    monkeypatch.setattr(runtime, "CACHE_LIMIT_BYTES", 0)
    x = dynjit.randn(N)
    _, fn = compiled(lambda x: x.sin(), x)
    (cache,) = [v for k, v in fn.__globals__.items() if k.startswith("_buffers")]
    fn(x)
    assert len(cache.arrays) == 0


def test_small_outputs_are_allocated_fresh():
    x = dynjit.randn(1000)
    _, fn = compiled(lambda x: x.sin(), x)
    assert "_buffers" not in fn.source and "_empty(" in fn.source
