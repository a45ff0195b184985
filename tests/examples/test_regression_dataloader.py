"""examples/regression_dataloader.py: a shortened run learns, gives the same losses with worker
processes as without, and the same losses with its training step compiled on each backend."""
import importlib.util
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "regression_dataloader.py"


def _load():
    spec = importlib.util.spec_from_file_location("regression_dataloader_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()
EPOCHS = 4


@pytest.fixture(scope="module")
def eager_losses():
    return example.main(epochs=EPOCHS, n=256)


def test_eager_run_learns(eager_losses):
    assert len(eager_losses) == EPOCHS + 1 and all(np.isfinite(eager_losses))
    # y = sin(3x) + noise has variance about 0.5; training brings the mse well below it
    assert eager_losses[EPOCHS - 1] < eager_losses[0] and eager_losses[-1] < 0.4


def test_workers_give_the_same_losses(eager_losses):
    assert example.main(epochs=EPOCHS, n=256, num_workers=2) == eager_losses


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_losses_equal_eager(backend, eager_losses):
    losses = example.main(epochs=EPOCHS, n=256, backend=backend)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-7)
