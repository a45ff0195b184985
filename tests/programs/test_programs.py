"""Each program of tests/programs, shortened, trains the same plain and under dynjit.compile
on every backend: equal losses step by step and equal parameters afterwards.

(Each program's plain run was also compared with PyTorch 2.13 given the same initial
weights, with compare_with_torch.py: see docs/porting.md.)"""
import importlib

import pytest

from tests.programs._check import assert_same_run, run_and_count

BACKENDS = ["eager", "aot_eager", "llvm"]

# program -> (steps, keyword arguments of its run) per configuration
CONFIGS = {
    "dcgan": [(12, {})],
    "seq2seq_attention": [(10, {"compile_mode": "model"}), (10, {"forcing_per_step": False})],
    "reinforce": [(10, {}), (6, {"compile_mode": "step"})],
    "graph_network": [(10, {}), (5, {"compile_mode": "model"})],
    "siamese_triplet": [(10, {})],
    "timeseries_forecast": [(4, {}), (3, {"compile_mode": "model"})],
}

CASES = [pytest.param(name, steps, kwargs, backend, id=f"{name}-{'-'.join(map(str, kwargs.values())) or 'default'}-{backend}")
         for name, configs in CONFIGS.items() for steps, kwargs in configs for backend in BACKENDS]

_plain_runs = {}


def _plain(name, steps, kwargs):
    key = (name, steps, tuple(sorted(kwargs.items())))
    if key not in _plain_runs:
        program = importlib.import_module(f"tests.programs.{name}")
        _plain_runs[key] = run_and_count(program, None, steps, **kwargs)[:2]
    return _plain_runs[key]


@pytest.mark.parametrize("name, steps, kwargs, backend", CASES)
def test_compiled_trains_like_plain(name, steps, kwargs, backend):
    program = importlib.import_module(f"tests.programs.{name}")
    losses, state, _ = run_and_count(program, backend, steps, **kwargs)
    assert_same_run(_plain(name, steps, kwargs), (losses, state))
