"""examples/lstm_language_model.py: a shortened run trains (the loss falls) and gives the same
losses eagerly and with its training step compiled on each backend (the step detaches the
carried hidden state, truncated BPTT, which once failed under aot_eager and llvm)."""
import importlib.util
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "lstm_language_model.py"


def _load():
    spec = importlib.util.spec_from_file_location("lstm_language_model_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()
STEPS = 12


@pytest.fixture(scope="module")
def eager_losses():
    return example.main(steps=STEPS)


def test_eager_run_learns(eager_losses):
    assert len(eager_losses) == STEPS
    assert all(np.isfinite(eager_losses))
    # starts near log(vocab size) (uniform predictions) and falls
    vocab = len(set(example.CORPUS))
    assert abs(eager_losses[0] - np.log(vocab)) < 0.3
    assert eager_losses[-1] < eager_losses[0] - 0.3


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_losses_equal_eager(backend, eager_losses):
    losses = example.main(steps=STEPS, backend=backend)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)


def test_wraps_around_the_corpus_with_fresh_state():
    # more steps than one pass over the corpus: the position wraps and the state restarts
    data_len = len(example.CORPUS) // 8
    steps = data_len // 16 + 2
    losses = example.main(steps=steps)
    assert len(losses) == steps and all(np.isfinite(losses))
