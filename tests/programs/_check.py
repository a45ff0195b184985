"""Test plumbing: run a program plain and under dynjit.compile, and report what compiling
did (graphs compiled, graph breaks, recompiles, time per step)."""
import time

import numpy as np

import dynjit
from dynjit.testing import CompileCounterWithBackend


def run_and_count(program, backend=None, steps=20, **kwargs):
    """(losses, state, stats) of `program.run`, with `backend` wrapped in a graph counter."""
    dynjit.utils.counters.clear()
    counter = CompileCounterWithBackend(backend) if backend else None
    start = time.perf_counter()
    losses, state = program.run(steps=steps, backend=counter, **kwargs)
    elapsed = time.perf_counter() - start
    counters = dynjit.utils.counters
    stats = {
        "graphs": counter.frame_count if counter else 0,
        "breaks": sum(counters["graph_break"].values()),
        "recompiles": sum(counters["recompiles"].values()) if "recompiles" in counters else 0,
        "ms_per_step": 1000 * elapsed / max(steps, 1),
        "break_reasons": dict(counters["graph_break"]),
    }
    return losses, state, stats


def assert_same_run(plain, compiled, rtol=1e-5, atol=1e-6, state_atol=5e-5):
    """Losses equal step by step and the final states equal, to float32 tolerance. The
    states get an absolute tolerance of 5e-5 (a few percent of the programs' learning rates):
    Adam's first steps are about lr * sign(gradient), so an element whose gradient is tiny
    moves by a learning-rate-sized step that rounding-level gradient differences (compiled
    kernels sum in another order) perturb by far more than their own size. The gradients
    themselves agree to about 1e-7 relative (checked for tiny_vit)."""
    (losses_a, state_a), (losses_b, state_b) = plain, compiled
    np.testing.assert_allclose(losses_b, losses_a, rtol=rtol, atol=atol, err_msg="losses differ")
    assert state_a.keys() == state_b.keys()
    for name in state_a:
        np.testing.assert_allclose(state_b[name], state_a[name], rtol=rtol, atol=state_atol,
                                   err_msg=f"{name} differs after training")
