"""bincount: a numpy loop reference (used by the op table), weights and minlength, PyTorch's
dtypes and errors, and compiled == plain (its output size depends on the values)."""
import numpy as np
import pytest

import dynjit


def reference_bincount(x, weights=None, minlength=0):
    n = max(int(x.max()) + 1 if x.size else 0, minlength)
    out = np.zeros(n, np.float64 if weights is not None else np.int64)
    for i, v in enumerate(x):
        out[v] += 1 if weights is None else weights[i]
    return out.astype(np.float32) if weights is not None and weights.dtype == np.float32 else out


def test_counts_weights_and_dtypes():
    x = dynjit.tensor([0, 2, 2, 5])
    np.testing.assert_array_equal(dynjit.bincount(x).numpy(), [1, 0, 2, 0, 0, 1])
    np.testing.assert_array_equal(x.bincount(minlength=8).numpy(), [1, 0, 2, 0, 0, 1, 0, 0])
    w = dynjit.tensor([0.5, 1.0, 2.0, 4.0])
    out = dynjit.bincount(x, weights=w)
    assert out.dtype == dynjit.float32
    np.testing.assert_array_equal(out.numpy(), [0.5, 0, 3.0, 0, 0, 4.0])
    assert dynjit.bincount(x, weights=dynjit.tensor([1, 2, 3, 4])).dtype == dynjit.float64
    assert dynjit.bincount(x.int()).dtype == dynjit.int64
    assert dynjit.bincount(dynjit.tensor([], dtype=dynjit.int64)).shape == (0,)


@pytest.mark.parametrize("call, error, message", [
    (lambda: dynjit.bincount(dynjit.tensor([-1])), RuntimeError, "bincount only supports 1-d non-negative integral inputs."),
    (lambda: dynjit.bincount(dynjit.tensor([[1]])), RuntimeError, "bincount only supports 1-d non-negative integral inputs."),
    (lambda: dynjit.bincount(dynjit.tensor([1.0])), NotImplementedError, "\"bincount_cpu\" not implemented for 'Float'"),
    (lambda: dynjit.bincount(dynjit.tensor([1, 2]), weights=dynjit.ones(3)), RuntimeError,
     "weights should be 1-d and have the same length as input"),
    (lambda: dynjit.bincount(dynjit.tensor([1]), minlength=-1), RuntimeError, "minlength should be >= 0"),
])
def test_errors_are_pytorchs(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        call()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_plain(backend):
    def class_weights(labels):
        counts = dynjit.bincount(labels, minlength=4).float()
        return counts.sum() / (4 * counts.clamp(min=1))

    f = dynjit.compile(class_weights, backend=backend)
    for labels in ([0, 1, 1, 3, 3, 3], [2, 2, 0], [5, 0]):      # 5: one more bin than minlength
        t = dynjit.tensor(labels)
        np.testing.assert_allclose(f(t).numpy(), class_weights(t).numpy(), rtol=1e-6)
