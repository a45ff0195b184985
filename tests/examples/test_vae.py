"""examples/vae.py runs (shortened) eagerly and under dynjit.compile on every backend with
the same losses (the reparameterization's random draws included), and its loss goes down."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vae.py"


def _load():
    spec = importlib.util.spec_from_file_location("vae_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return _load()


@pytest.fixture(scope="module")
def eager_losses(example):
    return example.main(steps=20, verbose=False)


def test_eager_trains(example, capsys):
    losses = example.main(steps=150, verbose=True)
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) - 3
    assert "step    0" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_losses_equal_eager(example, eager_losses, backend):
    losses = example.main(steps=20, backend=backend, verbose=False)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
