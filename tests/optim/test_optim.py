"""dynjit.optim: SGD, Adam and AdamW updates against numpy implementations of the
published update rules (multi-step, float64), param groups, state_dict, errors,
and training an MLP."""
import copy
import math

import numpy as np
import pytest

import dynjit
from dynjit import nn, optim

STEPS = 5


def _quadratic_problem(seed=0):
    """Parameters and a loss whose gradient is known in closed form:
    loss = sum(A @ w - b)^2 + sum(v^3)  ->  dw = 2 A^T (A w - b), dv = 3 v^2."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((4, 3))
    b = rng.standard_normal(4)
    w0 = rng.standard_normal(3)
    v0 = rng.standard_normal(2)

    def grads(w, v):
        return [2 * A.T @ (A @ w - b), 3 * v ** 2]

    def loss(w, v):
        At, bt = dynjit.tensor(A), dynjit.tensor(b)
        return ((At @ w - bt) ** 2).sum() + (v ** 3).sum()
    return [w0, v0], grads, loss


def _run_dynjit(make_opt, steps=STEPS):
    init, _, loss_fn = _quadratic_problem()
    params = [nn.Parameter(dynjit.tensor(x, dtype=dynjit.float64)) for x in init]
    opt = make_opt(params)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(*params).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params]


def _numpy_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    init, grads, _ = _quadratic_problem()
    ps = [x.copy() for x in init]
    bufs = [None] * len(ps)
    for _ in range(STEPS):
        gs = grads(*ps)
        for i, (p, g) in enumerate(zip(ps, gs)):
            if maximize:
                g = -g
            g = g + weight_decay * p
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = p - lr * g
    return ps


def _numpy_adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False,
                maximize=False):
    init, grads, _ = _quadratic_problem()
    ps = [x.copy() for x in init]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    vmax = [np.zeros_like(p) for p in ps]
    b1, b2 = betas
    for t in range(1, STEPS + 1):
        gs = grads(*ps)
        for i, (p, g) in enumerate(zip(ps, gs)):
            if maximize:
                g = -g
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = np.maximum(vmax[i], v[i])
            m_hat = m[i] / (1 - b1 ** t)
            v_hat = (vmax[i] if amsgrad else v[i]) / (1 - b2 ** t)
            ps[i] = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return ps


SGD_CASES = [
    dict(lr=0.05),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.5, weight_decay=0.1),
    dict(lr=0.01, maximize=True, momentum=0.3),
]


@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_sgd_matches_the_update_rule(kwargs):
    got = _run_dynjit(lambda ps: optim.SGD(ps, **kwargs))
    for g, e in zip(got, _numpy_sgd(**kwargs)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


ADAM_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6),
    dict(lr=0.1, weight_decay=0.2),
    dict(lr=0.1, amsgrad=True),
    dict(lr=0.1, maximize=True),
]


@pytest.mark.parametrize("kwargs", ADAM_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_adam_matches_the_update_rule(kwargs):
    got = _run_dynjit(lambda ps: optim.Adam(ps, **kwargs))
    for g, e in zip(got, _numpy_adam(**kwargs)):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.1, weight_decay=0.3, amsgrad=True)])
def test_adamw_matches_the_decoupled_update_rule(kwargs):
    got = _run_dynjit(lambda ps: optim.AdamW(ps, **kwargs))
    expected = _numpy_adam(decoupled=True, **dict(dict(weight_decay=1e-2), **kwargs))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_adam_and_adamw_differ_with_weight_decay():
    a = _run_dynjit(lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.5))
    b = _run_dynjit(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.5))
    assert not np.allclose(a[0], b[0])


def test_float32_parameters_stay_float32():
    p = nn.Parameter(dynjit.randn(3))
    opt = optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    assert p.dtype is dynjit.float32 and opt.state[p]["exp_avg"].dtype is dynjit.float32


# -- param groups, state, zero_grad ------------------------------------------------------

def test_param_groups_take_their_own_hyperparameters():
    a = nn.Parameter(dynjit.tensor([1.0]))
    b = nn.Parameter(dynjit.tensor([1.0]))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0
    (a + b).sum().backward()
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)


def test_add_param_group_and_errors():
    a = nn.Parameter(dynjit.tensor([1.0]))
    b = nn.Parameter(dynjit.tensor([2.0]))
    opt = optim.SGD([a], lr=0.1)
    opt.add_param_group({"params": b, "momentum": 0.9})
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["lr"] == 0.1
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([a], lr=0.1, nesterov=True)


def test_step_skips_parameters_without_grad():
    a = nn.Parameter(dynjit.tensor([1.0]))
    b = nn.Parameter(dynjit.tensor([1.0]))
    opt = optim.Adam([a, b], lr=0.1)
    (a * 3).sum().backward()
    opt.step()
    assert b.item() == 1.0 and b not in opt.state and a.item() != 1.0


def test_zero_grad_modes():
    a = nn.Parameter(dynjit.tensor([1.0, 2.0]))
    opt = optim.SGD([a], lr=0.1)
    (a * a).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_closure_is_evaluated_with_grad_and_its_loss_returned():
    a = nn.Parameter(dynjit.tensor([3.0]))
    opt = optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    with dynjit.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and a.item() == pytest.approx(3.0 - 0.1 * 6.0)


def test_state_dict_round_trip_continues_identically():
    init, _, loss_fn = _quadratic_problem()

    def fresh():
        return [nn.Parameter(dynjit.tensor(x, dtype=dynjit.float64)) for x in init]

    def run(params, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            loss_fn(*params).backward()
            opt.step()

    ref = fresh()
    ref_opt = optim.Adam(ref, lr=0.1, amsgrad=True)
    run(ref, ref_opt, 4)

    first = fresh()
    opt = optim.Adam(first, lr=0.1, amsgrad=True)
    run(first, opt, 2)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["param_groups"][0]["params"] == [0, 1]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

    second = [nn.Parameter(p.detach().clone()) for p in first]
    opt2 = optim.Adam(second, lr=0.5, amsgrad=True)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["params"] == second
    assert opt2.state[second[0]]["exp_avg"] is not sd["state"][0]["exp_avg"]    # copied
    run(second, opt2, 2)
    for a, b in zip(ref, second):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_load_state_dict_rejects_mismatched_groups():
    a = nn.Parameter(dynjit.tensor([1.0]))
    b = nn.Parameter(dynjit.tensor([1.0]))
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)


def test_repr_lists_groups():
    opt = optim.SGD([nn.Parameter(dynjit.zeros(1))], lr=0.1, momentum=0.9)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n")
    assert "    lr: 0.1\n" in text and "    momentum: 0.9\n" in text and text.endswith(")")


def test_step_hooks_run_around_the_step():
    a = nn.Parameter(dynjit.tensor([1.0]))
    opt = optim.SGD([a], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", a.item())))
    h = opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", a.item())))
    a.sum().backward()
    opt.step()
    h.remove()
    opt.step()
    assert seen == [("pre", 1.0), ("post", pytest.approx(0.9)), ("pre", pytest.approx(0.9))]
    assert a.item() == pytest.approx(0.8)


# -- training ---------------------------------------------------------------------------------

def _mlp_problem():
    dynjit.manual_seed(0)
    x = dynjit.randn(64, 4)
    y = (x[:, :1] * 2 - x[:, 1:2] + 0.5 * x[:, 2:3] * x[:, 3:4])
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    return x, y, model


@pytest.mark.parametrize("make_opt", [lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9),
                                      lambda ps: optim.Adam(ps, lr=0.01),
                                      lambda ps: optim.AdamW(ps, lr=0.01)],
                         ids=["sgd", "adam", "adamw"])
def test_mlp_training_loss_decreases(make_opt):
    x, y, model = _mlp_problem()
    opt = make_opt(model.parameters())
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
    assert all(math.isfinite(v) for v in losses)


def test_post_accumulate_grad_hook_optimizers_match_one_optimizer_over_a_copy():
    # ports: 002_7f98adb56adba91b.txt TestAutograd.test_post_accumulate_grad_hook_e2e
    # one Adam per parameter, stepped from the parameter's post-accumulate-grad hook during
    # backward, matches one Adam over a deep copy stepped after backward
    model = nn.Linear(3, 2)
    per_param = {p: optim.Adam([p]) for p in model.parameters()}

    def step_in_backward(p):
        per_param[p].step()
        per_param[p].zero_grad()
    handles = [p.register_post_accumulate_grad_hook(step_in_backward) for p in model.parameters()]
    model_copy = copy.deepcopy(model)
    copy_opt = optim.Adam(model_copy.parameters())
    x = dynjit.rand(2, 3)

    def iterate():
        for _ in range(5):
            model(x).sum().backward()
            model_copy(x).sum().backward()
            copy_opt.step()
            copy_opt.zero_grad()
    iterate()
    frozen = []
    for ref, p in zip(model_copy.parameters(), model.parameters()):
        assert np.array_equal(ref.detach().numpy(), p.detach().numpy()) and p.grad is None
        frozen.append(p.detach().clone())
    for h in handles:
        h.remove()
    iterate()       # without the hooks the model no longer changes; its copy does
    for old, ref, p in zip(frozen, model_copy.parameters(), model.parameters()):
        assert np.array_equal(old.numpy(), p.detach().numpy())
        assert not np.array_equal(ref.detach().numpy(), p.detach().numpy())
