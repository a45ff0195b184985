"""Every op of the registry, on its OpInfo samples (tests/ops/opinfo_samples.py),
through make_fx and the llvm backend, against eager: fused when the backend
lowers it, called eagerly otherwise, always eager's result. In-place ops run on
fresh copies of their inputs for each side; random ops are left out (two runs
draw different numbers)."""
import os
import sys

import numpy as np
import pytest

import dynjit
from dynjit.ops.registry import registry

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ops"))
from opinfo_samples import SAMPLES, materialize        # noqa: E402

from llvm_helpers import assert_same, compiled         # noqa: E402

RANDOM = {n for n, op in registry.items() if "random" in op.tags}
NAMES = sorted(n for n in SAMPLES if n not in RANDOM)


def _run_all(name, to_float32):
    op = registry[name]
    samples = SAMPLES[name] if op.kind != "inplace" else SAMPLES.get(name, [])
    checked = 0
    for sample in samples:
        leaves, build = materialize(sample)
        if to_float32:
            leaves = [t.float() if t.dtype == dynjit.float64 else t for t in leaves]

        def fn(*ls):
            args, kwargs = build(list(ls))
            return op(*args, **kwargs)

        def fresh():
            return [t.clone() for t in leaves]
        try:
            fn(*fresh())
        except Exception:
            continue            # a sample of an error case
        gm, cfn = compiled(fn, *fresh())
        out, ref = cfn(*fresh()), gm(*fresh())
        values = ref if isinstance(ref, (tuple, list)) else [ref]
        if not all(isinstance(v, dynjit.Tensor) for v in values):
            assert out == ref
            continue
        single = any(v.dtype == dynjit.float32 for v in values)
        tol = (2e-6, 1e-6) if single else (1e-10, 1e-12)
        assert_same(out, ref, *tol)
        checked += 1
    return checked


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_op_matches_eager(name):
    _run_all(name, to_float32=False)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_op_matches_eager_in_float32(name):
    _run_all(name, to_float32=True)
