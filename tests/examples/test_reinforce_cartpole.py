"""examples/reinforce_cartpole.py: a shortened run plays the same episodes eagerly and with the
policy compiled on each backend (the episode lengths depend on every sampled action, so they
agree only if the policy's probabilities and the random draws do), and the policy improves."""
import importlib.util
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "reinforce_cartpole.py"


def _load():
    spec = importlib.util.spec_from_file_location("reinforce_cartpole_example", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load()
EPISODES = 8


@pytest.fixture(scope="module")
def eager_lengths():
    return example.main(episodes=EPISODES, verbose=False)


def test_prints_progress(capsys):
    example.main(episodes=2, log_interval=1)
    assert "Episode 2\tLast reward:" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_plays_the_same_episodes(eager_lengths, backend):
    assert example.main(episodes=EPISODES, backend=backend, verbose=False) == eager_lengths


def test_policy_improves():
    lengths = example.main(episodes=60, verbose=False)
    assert np.mean(lengths[-15:]) > 1.5 * np.mean(lengths[:15])
