"""index_add / index_add_ and Tensor.unfold (with unfold_backward): numpy loop references
(used by the op table, tests/ops/opinfo_samples.py), PyTorch's errors, the accumulation of
repeated indices, unfold's view semantics, and compiled == plain."""
import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck


def reference_index_add(a, dim, index, source, alpha=1):
    out = np.array(a, copy=True)
    if out.ndim == 0:
        return out + alpha * np.asarray(source).reshape(())
    src = np.moveaxis(np.asarray(source), dim, 0)
    view = np.moveaxis(out, dim, 0)
    for i, j in enumerate(np.asarray(index).reshape(-1)):
        view[j] = view[j] + alpha * src[i]
    return out


def reference_unfold(a, dimension, size, step):
    if a.ndim == 0:
        return a.reshape(1)
    d = dimension % a.ndim
    windows = [np.moveaxis(np.take(a, np.arange(s, s + size), axis=d), d, -1)
               for s in range(0, a.shape[d] - size + 1, step)]
    shape = a.shape[:d] + (0,) + a.shape[d + 1:] + (size,)
    return np.stack(windows, axis=d) if windows else np.zeros(shape, a.dtype)


def reference_unfold_backward(g, input_sizes, dim, size, step):
    out = np.zeros(input_sizes, g.dtype)
    if not input_sizes:
        return g.reshape(())
    d = dim % len(input_sizes)
    for w in range(g.shape[d]):
        for k in range(size):
            idx = (slice(None),) * d + (w * step + k,)
            out[idx] += np.take(np.take(g, w, axis=d), k, axis=-1)
    return out


def test_index_add_accumulates_repeats_and_scales():
    x = dynjit.zeros(3, 4)
    out = x.index_add(0, dynjit.tensor([0, 0, 2]), dynjit.ones(3, 4), alpha=2)
    np.testing.assert_array_equal(out.numpy(), [[4] * 4, [0] * 4, [2] * 4])
    assert (x == 0).all()
    x.index_add_(1, dynjit.tensor([3, 1]), dynjit.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 0, 0], [0, 3, 0, 2], [0, 5, 0, 4]])
    np.testing.assert_array_equal(dynjit.index_add(dynjit.zeros(()), 0, dynjit.tensor(0), dynjit.ones(())).numpy(), 1.0)


@pytest.mark.parametrize("call, error, message", [
    (lambda x: x.index_add(0, dynjit.tensor([[0]]), dynjit.ones(1, 4)), IndexError,
     r"index_add_\(\): Index is supposed to be a vector, but got dim: 2 with type: Long and size: \[1, 1\]"),
    (lambda x: x.index_add(0, dynjit.tensor([0, 1]), dynjit.ones(3, 4)), RuntimeError,
     r"index_add_\(\): Number of indices \(2\) should be equal to source.size\(dim\): \(3\), for dim: 0"),
    (lambda x: x.index_add(0, dynjit.tensor([0]), dynjit.ones(1, 4, dtype=dynjit.float64)), RuntimeError,
     r"index_add_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda x: x.index_add(0, dynjit.tensor([0.0]), dynjit.ones(1, 4)), RuntimeError,
     r"index_add_\(\): Expected dtype int32/int64 for index but got: Float"),
    (lambda x: x.index_add(0, dynjit.tensor([5]), dynjit.ones(1, 4)), RuntimeError,
     r"index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.index_add(0, dynjit.tensor([0]), dynjit.ones(1, 3)), RuntimeError,
     r"source tensor shape must match self tensor shape, excluding the specified dimension. "
     r"Got self.shape = \[3, 4\] source.shape = \[1, 3\]"),
    (lambda x: x.unfold(1, 5, 1), RuntimeError, "maximum size for tensor at dimension 1 is 4 but size is 5"),
    (lambda x: x.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.unfold(2, 1, 1), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
])
def test_errors_are_pytorchs(call, error, message):
    with pytest.raises(error, match=message):
        call(dynjit.zeros(3, 4))


def test_index_add_gradients():
    x = dynjit.randn(4, 3, dtype=dynjit.float64, requires_grad=True)
    src = dynjit.randn(5, 3, dtype=dynjit.float64, requires_grad=True)
    idx = dynjit.tensor([0, 3, 0, 1, 3])
    assert gradcheck(lambda x, s: x.index_add(0, idx, s, alpha=-1.5), (x, src))
    assert gradcheck(lambda x, s: x.index_add(1, dynjit.tensor([2, 2]), s[:4, :2]), (x, src))


def test_unfold_is_a_sliding_window_view():
    x = dynjit.arange(10.0).reshape(2, 5)
    u = x.unfold(1, 3, 2)
    np.testing.assert_array_equal(u.numpy(), [[[0, 1, 2], [2, 3, 4]], [[5, 6, 7], [7, 8, 9]]])
    assert u._is_view()                        # a view: a write through x shows in u
    x[0, 2] = 100.0
    assert u[0, 0, 2].item() == 100.0 and u[0, 1, 0].item() == 100.0
    assert dynjit.zeros(()).unfold(0, 1, 1).shape == (1,)
    assert dynjit.zeros(4).unfold(0, 0, 1).shape == (5, 0)


def test_unfold_gradients_sum_overlapping_windows():
    x = dynjit.randn(3, 7, dtype=dynjit.float64, requires_grad=True)
    for dim, size, step in [(1, 3, 1), (1, 2, 3), (0, 2, 1), (-1, 7, 1)]:
        assert gradcheck(lambda x: x.unfold(dim, size, step) * 1.0, (x,))
    x.grad = None
    x.unfold(1, 3, 1).sum().backward()        # middle elements are in three windows
    np.testing.assert_array_equal(x.grad.numpy()[0], [1, 2, 3, 3, 3, 2, 1])


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain(backend):
    def message_passing(h, src, dst, w):
        windows = h.unfold(1, 2, 1).mean(-1)                       # (n, f - 1)
        messages = (windows.index_select(0, src) * w).tanh()
        return dynjit.zeros_like(windows).index_add(0, dst, messages).pow(2).sum()

    rng = np.random.RandomState(0)
    h0 = rng.randn(5, 4).astype(np.float32)
    src, dst = dynjit.tensor([0, 1, 2, 3, 4, 0]), dynjit.tensor([1, 2, 3, 4, 0, 2])
    w0 = rng.randn(6, 1).astype(np.float32)
    results = []
    for fn in (message_passing, dynjit.compile(message_passing, backend=backend)):
        h, w = dynjit.tensor(h0, requires_grad=True), dynjit.tensor(w0, requires_grad=True)
        out = fn(h, src, dst, w)
        out.backward()
        results.append((out.item(), h.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-5, atol=1e-7)
