"""Every op of the registry through aot_function: on every sample of the op table,
the compiled function (nop compilers) gives eager's outputs and eager's
gradients, for functional ops and for their in-place variants (which AOT
tracing functionalizes)."""
import os
import sys

import numpy as np
import pytest

import dynjit
from dynjit.aot import aot_function, nop, min_cut_rematerialization_partition
from dynjit.ops.registry import registry, INPLACE

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ops"))
from opinfo_samples import SAMPLES, materialize, inplace_samples  # noqa: E402


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _check(op, sample, partition_fn=None, inplace=False):
    def fn(*leaves):
        if inplace:
            leaves = [t.clone() if t.dtype.is_floating_point or t.dtype.is_complex else t for t in leaves]
        args, kwargs = build(leaves)
        out = op(*args, **kwargs)
        return out if not inplace else (out, args[0])

    def run(f):
        dynjit.manual_seed(7)
        leaves, _ = materialize(sample, requires_grad=True)
        out = f(*leaves)
        outs = [o for o in _flat(out) if isinstance(o, dynjit.Tensor)]
        diff = [o for o in outs if o.requires_grad]
        grads = []
        wrt = [t for t in leaves if t.requires_grad]
        if diff and wrt:
            # (a complex output enters the real loss through both of its parts)
            total = sum((o * (k + 1.0 + 0.5j)).sum().real if o.is_complex() else (o * (k + 1)).sum()
                        for k, o in enumerate(diff))
            grads = dynjit.autograd.grad(total, wrt, allow_unused=True)
        return outs, grads

    _, build = materialize(sample)
    kwargs = {} if partition_fn is None else {"partition_fn": partition_fn}
    compiled = aot_function(fn, nop, **kwargs)
    (ref_outs, ref_grads), (outs, grads) = run(fn), run(compiled)
    assert len(outs) == len(ref_outs)
    for a, b in zip(ref_outs, outs):
        assert a.dtype is b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-8,
                                   equal_nan=True)
    assert len(grads) == len(ref_grads)
    for a, b in zip(ref_grads, grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-8, equal_nan=True)


FUNCTIONAL = [(n, i) for n, op in sorted(registry.items()) if op.kind != INPLACE
              for i in range(len(SAMPLES.get(n, ())))]
INPLACE_CASES = [(n, i) for n, op in sorted(registry.items()) if op.kind == INPLACE
                 for i in range(len(inplace_samples(op)))]


# ports: 001_fdd911346beae147.txt TestEagerFusionOpInfo.test_aot_autograd_exhaustive
@pytest.mark.parametrize("name,i", FUNCTIONAL, ids=[f"{n}-{i}" for n, i in FUNCTIONAL])
def test_op_through_aot_function(name, i):
    _check(registry[name], SAMPLES[name][i])


@pytest.mark.parametrize("name,i", INPLACE_CASES, ids=[f"{n}-{i}" for n, i in INPLACE_CASES])
def test_inplace_op_through_aot_function(name, i):
    op = registry[name]
    _check(op, inplace_samples(op)[i], inplace=True)


MIN_CUT = [(n, 0) for n, op in sorted(registry.items())
           if op.kind != INPLACE and op.backward_cls is not None and SAMPLES.get(n)]


@pytest.mark.parametrize("name,i", MIN_CUT, ids=[f"{n}-{i}" for n, i in MIN_CUT])
def test_op_through_min_cut_partition(name, i):
    _check(registry[name], SAMPLES[name][i], partition_fn=min_cut_rematerialization_partition)
