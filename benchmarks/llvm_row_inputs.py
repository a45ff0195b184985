"""Inputs of the row-reduction benchmarks, drawn from fixed seeds: shared by
benchmarks/bench_reductions.py and the torch worker, so every candidate computes
on the same numbers."""
import numpy as np

SHAPE = (4096, 1024)
CE_SHAPE = (4096, 1000)


def row_inputs(case, shape=None):
    """The inputs of `case` at `shape` (rows, columns); None: the default shapes above."""
    if shape is not None:
        shape = tuple(shape)
    SHAPE, CE_SHAPE = (shape, shape) if shape is not None else (globals()["SHAPE"], globals()["CE_SHAPE"])
    if case in ("softmax", "log_softmax"):
        return [np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)]
    if case == "layernorm":
        rng = np.random.default_rng(4)
        return [rng.standard_normal(SHAPE).astype(np.float32), rng.standard_normal(SHAPE[1]).astype(np.float32),
                rng.standard_normal(SHAPE[1]).astype(np.float32)]
    if case == "rmsnorm":
        rng = np.random.default_rng(5)
        return [rng.standard_normal(SHAPE).astype(np.float32), rng.standard_normal(SHAPE[1]).astype(np.float32)]
    if case == "cross_entropy":
        rng = np.random.default_rng(6)
        return [rng.standard_normal(CE_SHAPE).astype(np.float32), rng.integers(0, CE_SHAPE[1], CE_SHAPE[0])]
    raise ValueError(f"unknown case {case!r}")
