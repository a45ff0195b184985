"""examples/save_resume.py: training resumed from a dynjit.save checkpoint (model, Adam state,
data-order generator) gives exactly the losses of an uninterrupted run, eagerly and with the
training step compiled on each backend; and compiled losses equal eager ones."""
import importlib.util
import pathlib

import numpy as np
import pytest

import dynjit

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "save_resume.py"


def _load():
    spec = importlib.util.spec_from_file_location("save_resume_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()


@pytest.fixture(scope="module")
def eager_losses():
    return example.main(epochs=3, resume_at=1)      # main raises unless resumed == uninterrupted


def test_eager_resume_is_exact_and_learns(eager_losses):
    assert len(eager_losses) == 3 * 8 and all(np.isfinite(eager_losses))
    assert np.mean(eager_losses[-4:]) < np.mean(eager_losses[:4])


def test_checkpoint_file_is_weights_only(tmp_path):
    path = tmp_path / "ckpt.pt"
    example.main(epochs=2, resume_at=1, checkpoint=str(path))
    ckpt = dynjit.load(path)                             # weights_only=True: nothing pickled
    assert set(ckpt) == {"model", "optimizer", "data_generator", "epoch"} and ckpt["epoch"] == 1
    assert set(ckpt["optimizer"]["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}


def test_a_missing_optimizer_state_would_be_caught(monkeypatch):
    monkeypatch.setattr(example.torch.optim.Adam, "load_state_dict", lambda self, sd: None)
    with pytest.raises(AssertionError, match="the resumed run's losses differ"):
        example.main(epochs=2, resume_at=1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_resume(backend, eager_losses):
    losses = example.main(epochs=3, resume_at=1, backend=backend)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-7)
