"""examples/char_gpt.py runs (shortened) eagerly and under dynjit.compile on every backend
with the same losses, and its loss goes down."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "char_gpt.py"


def _load():
    spec = importlib.util.spec_from_file_location("char_gpt_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return _load()


@pytest.fixture(scope="module")
def eager_losses(example):
    return example.main(steps=6, verbose=False, sample_chars=4)


def test_eager_trains_and_samples(example, capsys):
    losses = example.main(steps=25, verbose=True, sample_chars=8)
    assert len(losses) == 25 and losses[-1] < losses[0] - 0.3
    out = capsys.readouterr().out
    assert "step    0" in out and "sampled: 'T" in out and "greedy:  'T" in out


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_losses_equal_eager(example, eager_losses, backend):
    losses = example.main(steps=6, backend=backend, verbose=False, sample_chars=4)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
