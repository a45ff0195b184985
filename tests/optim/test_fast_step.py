"""The default (foreach=None) eager update of Adam/AdamW, SGD and RMSprop runs in numpy
(dynjit/optim/_fast.py): it must give every bit the reference per-parameter loop
(foreach=False) gives, for every option, dtype and step, keep the state's tensors and
version counts as the loop does, and hand anything it does not reproduce back to the loop."""
import io
import warnings

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.optim import _fast

SHAPES = [(7, 5), (5,), (3, 7), (3,), ()]      # () : a 0-d parameter (ufuncs give scalars)

CONFIGS = [
    ("Adam", {}), ("Adam", {"amsgrad": True}), ("Adam", {"weight_decay": 0.1}),
    ("Adam", {"maximize": True, "amsgrad": True, "weight_decay": 0.05, "betas": (0.8, 0.95), "eps": 1e-6}),
    ("AdamW", {}), ("AdamW", {"amsgrad": True, "maximize": True}), ("AdamW", {"weight_decay": 0}),
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "nesterov": True, "weight_decay": 1e-2}),
    ("SGD", {"lr": 1, "momentum": 1, "maximize": True, "weight_decay": 2}),
    ("RMSprop", {}), ("RMSprop", {"centered": True}), ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1, "maximize": True, "alpha": 0.9}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for name, kw in CONFIGS]

FAST = {"Adam": "adam_step", "AdamW": "adam_step", "SGD": "sgd_step", "RMSprop": "rmsprop_step"}


def _params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [nn.Parameter(dynjit.tensor(np.asarray(rng.standard_normal(s)).astype(dtype))) for s in SHAPES]


def _grads(step, dtype):
    rng = np.random.default_rng(100 + step)
    grads = [np.asarray(rng.standard_normal(s)).astype(dtype) for s in SHAPES]
    # non-finite and tiny values: the same bits must come out of both paths
    grads[0][0, 0] = np.nan if step == 2 else grads[0][0, 0]
    grads[1][0] = 1e-30
    return grads


def _bits(t):
    a = np.ascontiguousarray(t._data)
    return a.dtype, a.shape, a.tobytes()


def _assert_same(opt_a, params_a, opt_b, params_b):
    for pa, pb in zip(params_a, params_b):
        assert _bits(pa) == _bits(pb)
        assert pa._version == pb._version
        sa, sb = opt_a.state.get(pa, {}), opt_b.state.get(pb, {})
        assert sorted(sa) == sorted(sb)
        for k in sa:
            assert _bits(sa[k]) == _bits(sb[k]), k
            assert sa[k]._version == sb[k]._version, k


@pytest.fixture
def fast_calls(monkeypatch):
    """For every call of the fast update functions, how many parameters it updated in numpy
    (those with gradients that it did not leave to the loop)."""
    calls = []
    for name in set(FAST.values()):
        real = getattr(_fast, name)

        def spy(optimizer, group, *args, _real=real):
            with_grad = [p for p in group["params"] if p.grad is not None]
            left = _real(optimizer, group, *args)
            calls.append(len(with_grad) - len([p for p in left if p.grad is not None]))
            return left
        monkeypatch.setattr(_fast, name, spy)
    return calls


def _run(name, kwargs, dtype, foreach, steps=5, grad_none_at=(3,), lr_change_at=2):
    params = _params(dtype)
    opt = getattr(dynjit.optim, name)(params, foreach=foreach, **kwargs)
    for step in range(steps):
        for i, (p, g) in enumerate(zip(params, _grads(step, dtype))):
            p.grad = None if (step in grad_none_at and i == 1) else dynjit.tensor(g)
        if step == lr_change_at:
            opt.param_groups[0]["lr"] *= 0.5
        opt.step()
    return opt, params


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_default_step_is_bitwise_the_loop(name, kwargs, dtype, fast_calls):
    opt_ref, params_ref = _run(name, kwargs, dtype, foreach=False)
    assert not any(fast_calls)
    fast_calls.clear()
    opt_fast, params_fast = _run(name, kwargs, dtype, foreach=None)
    # the numpy path ran for every parameter but the 0-d one (and the one without a gradient
    # at step 3), on every step after the first where there is state to create
    first = 4 if name == "SGD" and "momentum" not in kwargs else 0
    assert fast_calls == [first, 4, 4, 3, 4]
    _assert_same(opt_fast, params_fast, opt_ref, params_ref)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[3], CONFIGS[10], CONFIGS[15]], ids=[IDS[3], IDS[10], IDS[15]])
def test_state_dict_round_trip_continues_bitwise(name, kwargs, fast_calls):
    opt_ref, params_ref = _run(name, kwargs, np.float32, foreach=False, steps=3)
    opt_fast, params_fast = _run(name, kwargs, np.float32, foreach=None, steps=3)
    buffer = io.BytesIO()
    dynjit.save(opt_fast.state_dict(), buffer)
    buffer.seek(0)
    loaded_params = [nn.Parameter(p.detach().clone()) for p in params_fast]
    loaded = getattr(dynjit.optim, name)(loaded_params, **kwargs)
    loaded.load_state_dict(dynjit.load(buffer))
    fast_calls.clear()
    for step in range(3, 6):
        for ps in (params_ref, loaded_params):
            for p, g in zip(ps, _grads(step, np.float32)):
                p.grad = dynjit.tensor(g)
        opt_ref.step()
        loaded.step()
    assert fast_calls[1::2] == [4, 4, 4]      # (the even calls: opt_ref's loop)
    for pa, pb in zip(loaded_params, params_ref):
        assert _bits(pa) == _bits(pb)
        for k in opt_ref.state[pb]:
            assert _bits(loaded.state[pa][k]) == _bits(opt_ref.state[pb][k])
    assert loaded.state_dict()["state"][0]["step" if name != "SGD" else "momentum_buffer"] is not None


@pytest.mark.parametrize("name,kwargs", [("Adam", {}), ("RMSprop", {"centered": True, "momentum": 0.5}),
                                         ("SGD", {"momentum": 0.9, "weight_decay": 0.1})])
def test_non_finite_values_are_values_not_warnings(name, kwargs, fast_calls):
    """inf/inf and sqrt of a negative make NaNs, as in the loop, without numpy warnings (an
    error here: the filter turns every warning of the numpy path into one)."""
    runs = []
    for foreach in (None, False):
        params = _params(np.float32)
        opt = getattr(dynjit.optim, name)(params, foreach=foreach, **kwargs)
        with warnings.catch_warnings():
            # (the loop's add kernel, outside dynjit.ops's own filter, may warn: not tested here)
            warnings.simplefilter("error" if foreach is None else "ignore")
            for step in range(3):
                for p, g in zip(params, _grads(step, np.float32)):
                    if g.ndim:
                        g = g.copy()
                        g.reshape(-1)[:3] = (np.inf, -np.inf, 1e30)
                    p.grad = dynjit.tensor(g)
                opt.step()
        runs.append((opt, params))
    assert np.isnan(runs[0][1][0]._data).any()
    assert fast_calls[1:3] == [4, 4]
    _assert_same(*runs[0], *runs[1])


def test_step_counter_stays_a_float64_tensor_and_closure_loss_is_returned():
    params = _params(np.float32)
    opt = dynjit.optim.Adam(params)
    for step in range(3):
        for p, g in zip(params, _grads(step, np.float32)):
            p.grad = dynjit.tensor(g)
        loss = opt.step(lambda: dynjit.tensor(float(step)))
        assert loss.item() == float(step)
    s = opt.state[params[0]]["step"]
    assert isinstance(s, dynjit.Tensor) and s.dtype == dynjit.float64 and s.shape == () and s.item() == 3.0


def test_zero_grad_set_to_none_skips_parameters(fast_calls):
    params = _params(np.float64)
    opt = dynjit.optim.AdamW(params)
    for p, g in zip(params, _grads(0, np.float64)):
        p.grad = dynjit.tensor(g)
    opt.step()
    opt.zero_grad(set_to_none=True)
    before = [p.detach().clone() for p in params]
    opt.step()
    assert fast_calls == [0, 0]      # the first creates the state; the second has no gradients
    for p, b in zip(params, before):
        assert _bits(p) == _bits(b)
    assert opt.state[params[0]]["step"].item() == 1.0


def _fallback_matches(make_params, make_grads, name, kwargs, fast_calls, numpy_updated=0):
    """Two runs, foreach=None and foreach=False, equal bit for bit; the numpy path updated
    `numpy_updated` parameters at each step of the first run."""
    results = []
    for foreach in (None, False):
        params = make_params()
        opt = getattr(dynjit.optim, name)(params, foreach=foreach, **kwargs)
        for step in range(3):
            for p, g in zip(params, make_grads(step)):
                p.grad = g
            opt.step()
        results.append([_bits(p) for p in params])
    assert results[0] == results[1]
    assert fast_calls == [numpy_updated] * 3 + [0] * 3
    fast_calls.clear()


@pytest.mark.parametrize("name,kwargs", [("Adam", {}), ("SGD", {"momentum": 0.9}), ("RMSprop", {})])
def test_float16_and_bfloat16_use_the_loop(name, kwargs, fast_calls):
    for dtype in (dynjit.float16, dynjit.bfloat16):
        _fallback_matches(lambda: [nn.Parameter(p.detach().to(dtype)) for p in _params(np.float32)],
                          lambda step: [dynjit.tensor(g).to(dtype) for g in _grads(step, np.float32)],
                          name, kwargs, fast_calls)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[3], CONFIGS[11], CONFIGS[15]], ids=[IDS[3], IDS[11], IDS[15]])
def test_group_mixing_dtypes_splits_between_numpy_and_the_loop(name, kwargs, fast_calls):
    """float32 and float64 parameters run in numpy; float16, bfloat16 and 0-d ones in the loop,
    in the same group; every bit equals the loop's."""
    def make_params():
        ps = _params(np.float32)
        return [ps[0], nn.Parameter(ps[1].detach().double()), nn.Parameter(ps[2].detach().half()),
                nn.Parameter(ps[3].detach().bfloat16()), ps[4]]

    def make_grads(step):
        gs = [dynjit.tensor(g) for g in _grads(step, np.float32)]
        return [gs[0], gs[1].double(), gs[2].half(), gs[3].bfloat16(), gs[4]]

    runs = []
    for foreach in (None, False):
        params = make_params()
        opt = getattr(dynjit.optim, name)(params, foreach=foreach, **kwargs)
        for step in range(4):
            for p, g in zip(params, make_grads(step)):
                p.grad = g
            opt.step()
        runs.append((opt, params))
    assert fast_calls[-4:] == [0, 0, 0, 0] and fast_calls[1:4] == [2, 2, 2]
    _assert_same(*runs[0], *runs[1])


def test_tensor_learning_rate_uses_the_loop(fast_calls):
    _fallback_matches(lambda: _params(np.float32),
                      lambda step: [dynjit.tensor(g) for g in _grads(step, np.float32)],
                      "SGD", {"lr": dynjit.tensor(0.1), "momentum": 0.9}, fast_calls)


def test_sparse_gradient_leaves_its_parameter_to_the_loop(fast_calls):
    def grads(step):
        dense = _grads(step, np.float32)
        return [dynjit.tensor(dense[0]).to_sparse()] + [dynjit.tensor(g) for g in dense[1:]]
    # the others, but the 0-d one, run in numpy
    _fallback_matches(lambda: _params(np.float32), grads, "SGD", {"lr": 0.1}, fast_calls, numpy_updated=3)


def test_inference_parameter_keeps_the_loops_error():
    with dynjit.inference_mode():
        p = dynjit.ones(3)
    q = nn.Parameter(dynjit.ones(3))
    opt = dynjit.optim.SGD([q], lr=0.1)
    q.grad = dynjit.ones(3)
    opt.step()
    opt.param_groups[0]["params"] = [p]
    p.grad = dynjit.ones(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        opt.step()


def test_dispatch_mode_sees_the_loops_ops(fast_calls):
    """Under a dispatch mode (as make_fx or fake tensors install), the step's ops are dispatched."""
    from dynjit.ops.dispatch import DispatchMode

    class Count(DispatchMode):
        def __init__(self):
            self.ops = []

        def __dispatch__(self, op, args, kwargs):
            self.ops.append(op.name)
            return op.impl(op, args, kwargs)

    params = _params(np.float32)
    opt = dynjit.optim.Adam(params)
    for step in range(2):
        for p, g in zip(params, _grads(step, np.float32)):
            p.grad = dynjit.tensor(g)
        if step == 1:
            with Count() as mode:
                opt.step()
        else:
            opt.step()
    assert "lerp_" in mode.ops and "addcmul_" in mode.ops
    assert fast_calls == [0, 0]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("name,kwargs", [("Adam", {}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                         ("RMSprop", {"centered": True, "momentum": 0.5})])
def test_compiled_training_step_traces_the_loop(backend, name, kwargs, fast_calls):
    """A compiled optimizer step (fullgraph: no break at the numpy path; the backward runs
    eagerly) equals the eager default step."""
    rng = np.random.default_rng(3)
    x = dynjit.tensor(rng.standard_normal((8, 5)).astype(np.float32))
    y = dynjit.tensor(rng.integers(0, 3, 8))

    def setup():
        dynjit.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
        return model, getattr(dynjit.optim, name)(model.parameters(), **kwargs)

    def make_step(model, opt, backend=None):
        update = opt.step if backend is None else dynjit.compile(opt.step, backend=backend, fullgraph=True)

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            update()
            return loss
        return step

    model_e, opt_e = setup()
    model_c, opt_c = setup()
    run_e = make_step(model_e, opt_e)
    run_c = make_step(model_c, opt_c, backend)
    for _ in range(4):
        np.testing.assert_allclose(run_c(x, y).item(), run_e(x, y).item(), rtol=2e-5, atol=1e-6)
    assert any(fast_calls)
    for pe, pc in zip(model_e.parameters(), model_c.parameters()):
        np.testing.assert_allclose(pc._data, pe._data, rtol=2e-5, atol=1e-6)
        for k in opt_e.state[pe]:
            np.testing.assert_allclose(np.asarray(opt_c.state[pc][k]._data),
                                       np.asarray(opt_e.state[pe][k]._data), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs", [("Adam", {}), ("AdamW", {"lr": 1, "betas": (0.5, 0.9)}),
                                         ("RMSprop", {"centered": True})])
def test_long_run_is_bitwise_the_loop(name, kwargs, fast_calls):
    """60 steps: the bias corrections of every step count match the loop's."""
    runs = []
    for foreach in (None, False):
        params = [nn.Parameter(dynjit.tensor(np.linspace(-1, 1, 9, dtype=np.float32)))]
        opt = getattr(dynjit.optim, name)(params, foreach=foreach, **kwargs)
        for step in range(60):
            params[0].grad = dynjit.tensor(np.cos(np.arange(9, dtype=np.float32) * (step + 1)))
            opt.step()
        runs.append((opt, params))
    assert sum(fast_calls[:60]) == 59
    _assert_same(*runs[0], *runs[1])
