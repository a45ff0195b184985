"""Adam and AdamW in a compiled training step: compiled == eager, and the optimizer's state
written in place by the kernels.

AOT functionalizes `opt.step()`: its graph ends with one copy_ per mutated input, in input
order (the parameters, then per parameter the step counter, exp_avg, exp_avg_sq). The llvm
backend lowers those final copies stores-first (lowering.visit_trailing_copies), so the one
kernel per parameter that computes the new exp_avg, exp_avg_sq (and max_exp_avg_sq) and the
parameter stores all of them into the inputs' memory (`_store_target`), with no buffers
allocated per step; the step counter's 0-d copy_ runs after it. `beta ** step` (a number to
a tensor's power) is a kernel's pow, not an eager call.
"""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit import nn, optim
from dynjit.aot import aot_module_simplified, min_cut_rematerialization_partition

from backends.llvm import compile_graph

from llvm_helpers import check


def recording_llvm(made):
    """The llvm backend's pipeline (AOT with compile_graph both ways), keeping what it makes."""
    def compiler(gm, example_inputs):
        fn = compile_graph(gm, example_inputs)
        made.append(fn)
        return fn

    def backend(gm, example_inputs, **kwargs):
        if any(getattr(x, "requires_grad", False) for x in example_inputs):
            return aot_module_simplified(gm, example_inputs, fw_compiler=compiler, bw_compiler=compiler,
                                         partition_fn=min_cut_rematerialization_partition,
                                         keep_inference_input_mutations=True)
        return compiler(gm, example_inputs)
    backend.dynjit_scalar_inputs = True
    return backend


def _mlp_step(dtype, opt_name, backend=None, **opt_kwargs):
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(12, 40), nn.ReLU(), nn.Linear(40, 5))
    if dtype == np.float64:
        model = model.double()
    with dynjit.no_grad():
        for p in model.parameters():
            p.copy_(dynjit.tensor(rng.standard_normal(p.shape).astype(dtype) * 0.3))
    x = dynjit.tensor(rng.standard_normal((8, 12)).astype(dtype))
    y = dynjit.tensor(rng.integers(0, 5, 8))
    opt = getattr(optim, opt_name)(model.parameters(), lr=0.01, **opt_kwargs)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    if backend is not None:
        step = dynjit.compile(step, backend=backend)
    return model, opt, lambda: step(x, y)


OPTIONS = [("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {}),
           ("AdamW", {"amsgrad": True, "maximize": True}), ("Adam", {"foreach": True})]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opt_name,kwargs", OPTIONS, ids=[f"{n}-{'-'.join(k) or 'plain'}" for n, k in OPTIONS])
def test_adam_training_step_compiled_equals_eager(backend, dtype, opt_name, kwargs):
    model_e, opt_e, run_e = _mlp_step(dtype, opt_name, **kwargs)
    model_c, opt_c, run_c = _mlp_step(dtype, opt_name, backend, **kwargs)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    for _ in range(4):
        np.testing.assert_allclose(run_c().item(), run_e().item(), **tol)
    for pe, pc in zip(model_e.parameters(), model_c.parameters()):
        np.testing.assert_allclose(pc._data, pe._data, **tol)
        assert pc._data.dtype == dtype
        se, sc = opt_e.state[pe], opt_c.state[pc]
        for k in se:
            np.testing.assert_allclose(np.asarray(sc[k]._data), np.asarray(se[k]._data), **tol)


@pytest.mark.parametrize("opt_name,kwargs", [("Adam", {}), ("AdamW", {}), ("Adam", {"amsgrad": True})])
def test_adam_state_is_written_in_place_by_the_kernels(opt_name, kwargs):
    made = []
    model, opt, run = _mlp_step(np.float32, opt_name, recording_llvm(made), **kwargs)
    run()
    run()
    memory = {id(t): t._data for p in model.parameters() for t in [p] + list(opt.state[p].values())}
    # the first step creates the state (a graph of its own); the steady step's update is the last
    update = [f for f in made if "_store_target(" in f.source]
    src = update[-1].source
    n_params = len(list(model.parameters()))
    per_param = 4 if kwargs.get("amsgrad") else 3         # param, exp_avg, exp_avg_sq (, max_exp_avg_sq)
    assert src.count("_store_target(") == per_param * n_params
    assert "_empty_like(" not in src
    # no buffer of a parameter's shape is allocated per step: every such value goes in place
    for p in model.parameters():
        if p.dim() > 0:
            assert f"_empty({tuple(p.shape)}" not in src
    # the update's pointwise math, beta ** step included, runs in kernels: what runs eagerly
    # is the step counters' 0-d copy_ (one per parameter)
    assert update[-1].stats["fallback"] <= n_params
    for _ in range(3):
        run()
    for p in model.parameters():
        for t in [p] + list(opt.state[p].values()):
            assert t._data is memory[id(t)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_number_to_a_tensor_power(dtype):
    t = dynjit.tensor(np.array([0.0, -0.0, 1.0, 2.5, 100.0, 1e4, -3.0, np.inf, -np.inf, np.nan], dtype))
    fn = check(lambda t: (dynjit.ops.pow(0.9, t), dynjit.ops.pow(2.0, t) - 1, dynjit.ops.pow(-2.0, t)), t,
               rtol=4e-7 if dtype == np.float32 else 1e-15, atol=0)
    assert fn.stats["fallback"] == 0


def test_functional_copy_in_the_middle_of_an_update_fuses():
    """`m.copy_(maximum(m, v))` read later in the same step (amsgrad as PyTorch writes it):
    AOT makes it the functional `copy` plus a final copy_; `copy` lowers as a pointwise cast
    (src broadcast to m's shape in m's dtype), so the update stays one kernel storing both
    inputs in place, with nothing run eagerly."""
    from dynjit.aot import aot_function

    def update(m, v, p):
        with dynjit.no_grad():
            m.copy_(dynjit.ops.maximum(m, v))
            p.sub_(m * 0.1)

    made = []

    def compiler(gm, example_inputs):
        fn = compile_graph(gm, example_inputs)
        made.append(fn)
        return fn
    step = aot_function(update, fw_compiler=compiler, keep_inference_input_mutations=True)
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((6, 37)).astype(np.float32) for _ in range(3)]
    arrays[1][0, :3] = [np.nan, np.inf, -np.inf]
    me, ve, pe = (dynjit.tensor(a.copy()) for a in arrays)
    mc, vc, pc = (dynjit.tensor(a.copy()) for a in arrays)
    pe.requires_grad_()
    pc.requires_grad_()
    for _ in range(3):
        update(me, ve, pe)
        step(mc, vc, pc)
    np.testing.assert_array_equal(mc._data, me._data)
    np.testing.assert_array_equal(pc._data, pe._data)
    assert made[-1].stats["fallback"] == 0 and made[-1].stats["kernels"] == 1
    assert made[-1].source.count("_store_target(") == 2
