"""Every op of the registry and every module of the sweep through AOT autograd with
`dynamic=True` (their sizes traced as symbols from the first call): the compiled function
gives eager's outputs and gradients. Where a symbolic trace cannot serve (it pins its sizes,
or differs from a concrete trace at other sizes), AOT falls back to a concrete trace; the
results must be eager's either way, and the tests count how many ops stay symbolic."""
import copy
import os
import sys

import numpy as np
import pytest

import dynjit
from dynjit.aot import aot_function, aot_module, nop
from dynjit.ops.registry import registry, INPLACE

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "ops"))
sys.path.insert(0, HERE)
from opinfo_samples import SAMPLES, materialize  # noqa: E402
import test_aot_module_sweep as sweep  # noqa: E402


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _outputs_and_grads(f, sample):
    dynjit.manual_seed(7)
    leaves, _ = materialize(sample, requires_grad=True)
    outs = [o for o in _flat(f(*leaves)) if isinstance(o, dynjit.Tensor)]
    diff = [o for o in outs if o.requires_grad]
    wrt = [t for t in leaves if t.requires_grad]
    grads = []
    if diff and wrt:
        total = sum((o * (k + 1.0 + 0.5j)).sum().real if o.is_complex() else (o * (k + 1)).sum()
                    for k, o in enumerate(diff))
        grads = dynjit.autograd.grad(total, wrt, allow_unused=True)
    return outs, grads


FUNCTIONAL = [(n, i) for n, op in sorted(registry.items()) if op.kind != INPLACE
              for i in range(len(SAMPLES.get(n, ())))]


def _compiled_op(name, i):
    op = registry[name]
    _, build = materialize(SAMPLES[name][i])

    def fn(*leaves):
        args, kwargs = build(leaves)
        return op(*args, **kwargs)
    return fn, aot_function(fn, nop, dynamic=True)


# ports: 001_fdd911346beae147.txt TestEagerFusionOpInfo.test_aot_autograd_symbolic_exhaustive
@pytest.mark.parametrize("name,i", FUNCTIONAL, ids=[f"{n}-{i}" for n, i in FUNCTIONAL])
def test_op_through_aot_function_with_symbolic_sizes(name, i):
    sample = SAMPLES[name][i]
    fn, compiled = _compiled_op(name, i)
    (ref_outs, ref_grads), (outs, grads) = _outputs_and_grads(fn, sample), _outputs_and_grads(compiled, sample)
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
    assert len(compiled._cache) == 1


# ops a model is made of: some sample of each is traced with symbolic sizes (not the fallback)
@pytest.mark.parametrize("name", ["add", "mul", "mm", "matmul", "bmm", "addmm", "linear", "sum", "mean",
                                  "relu", "exp", "where", "softmax", "transpose", "reshape", "view", "cat"])
def test_common_ops_stay_symbolic(name):
    symbolic = 0
    for i in range(len(SAMPLES[name])):
        _, compiled = _compiled_op(name, i)
        _outputs_and_grads(compiled, SAMPLES[name][i])
        symbolic += bool(compiled._symbolic_entries)
    assert symbolic >= 1


# ports: 001_fdd911346beae147.txt TestEagerFusionModuleInfo.test_aot_autograd_symbolic_module_exhaustive
@pytest.mark.parametrize("ctor, make_inputs, training", list(sweep._cases()))
def test_module_through_aot_module_with_symbolic_sizes(ctor, make_inputs, training):
    dynjit.manual_seed(0)
    ref_mod = ctor()
    test_mod = copy.deepcopy(ref_mod)
    ref_mod.train(training)
    test_mod.train(training)
    graphs = []

    def fw_compiler(gm, example_inputs):
        graphs.append(gm)
        return nop(gm, example_inputs)
    compiled = aot_module(test_mod, fw_compiler, nop, dynamic=True)
    sweep._check(ref_mod, test_mod, compiled, make_inputs, seed=1)
    sweep._check(ref_mod, test_mod, compiled, make_inputs, seed=2)
    assert len(graphs) == 1
