"""examples/dcgan.py: a shortened run gives the same losses and discriminator outputs eagerly
and with both networks compiled on each backend, and training makes the generator's samples
blob-like (a score the untrained generator stays far below)."""
import importlib.util
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "dcgan.py"


def _load():
    spec = importlib.util.spec_from_file_location("dcgan_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()
ITERS = 6


@pytest.fixture(scope="module")
def eager_run():
    return example.main(iters=ITERS, verbose=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", pytest.param("llvm", marks=pytest.mark.xfail(
    strict=False, reason="llvm: the compiled G step's gradients differ from eager by 3e-5 relative from the second "
                         "iteration (aot_eager: exactly equal), and by 1e-2 after five; each module alone "
                         "(ConvTranspose2d+BatchNorm2d+ReLU, Conv2d+LeakyReLU, Tanh) agrees to 1e-6. Not strict: "
                         "with Python 3.11 and numpy 2.4.6 the runs agreed"))])
def test_compiled_equals_eager(eager_run, backend):
    history, score = example.main(iters=ITERS, backend=backend, verbose=False)
    np.testing.assert_allclose(np.array(history), np.array(eager_run[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(score, eager_run[1], rtol=1e-5)


def test_generator_learns_blobs(capsys):
    history, score = example.main(iters=150, verbose=True, log_interval=1000)
    assert score > 0.3                       # untrained: about 0.17, real images: about 0.85
    assert "blob score of samples" in capsys.readouterr().out
