"""examples/cnn_classifier.py: a shortened run learns, and gives the same losses (to float32
tolerance) with its training step compiled on each backend."""
import importlib.util
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "cnn_classifier.py"


def _load():
    spec = importlib.util.spec_from_file_location("cnn_classifier_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()
STEPS = 10
SHORT = dict(steps=STEPS, n=256, batch_size=32)


@pytest.fixture(scope="module")
def eager_losses():
    return example.main(**SHORT)


def test_eager_run_learns(eager_losses):
    assert len(eager_losses) == STEPS and all(np.isfinite(eager_losses))
    # ten classes: the first loss is near log(10) (the noisy inputs give large logits at first);
    # a few Adam steps bring it down
    assert 1.5 < eager_losses[0] < 4.0
    assert np.mean(eager_losses[-3:]) < np.mean(eager_losses[:3])


def test_data_is_mnist_shaped():
    images, labels = example.make_data(8)
    assert images.shape == (8, 1, 28, 28) and images.dtype == np.float32
    assert labels.dtype == np.int64 and set(labels) <= set(range(10))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_losses_equal_eager(backend, eager_losses):
    losses = example.main(backend=backend, **SHORT)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-4, atol=1e-5)
