"""dynjit.optim: every optimizer against an independent numpy implementation of its
update rule as PyTorch documents it (float64, several steps, two parameter groups
with their own hyperparameters, a parameter without a gradient), state_dict round
trips, zero_grad, add_param_group, hyperparameter errors, LBFGS (two-loop
recursion, strong-Wolfe conditions, convergence) and a compiled training step
== eager on every backend."""
import copy

import numpy as np
import pytest

import dynjit
from dynjit import nn, optim
import dynjit.nn.functional as F
from dynjit.testing import CompileCounter

STEPS = 10
RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 3))
B = RNG.standard_normal(5)
W0 = RNG.standard_normal(3)
V0 = RNG.standard_normal((2, 2)) * 0.7
U0 = RNG.standard_normal(2)


def _np_grads(w, v):
    """Gradients of loss = |A w - b|^2 + sum(v^4) + sum(v[0] * w[:2])."""
    dw = 2 * A.T @ (A @ w - B)
    dw[:2] += v[0]
    dv = 4 * v ** 3
    dv[0] += w[:2]
    return dw, dv


def _loss(w, v):
    return ((dynjit.tensor(A) @ w - dynjit.tensor(B)) ** 2).sum() + (v ** 4).sum() + (v[0] * w[:2]).sum()


def _params():
    return [nn.Parameter(dynjit.tensor(x.copy())) for x in (W0, V0, U0)]


def _groups(params, group1):
    w, v, u = params
    return [{"params": [w]}, dict(group1, params=[v, u])]


def _train(opt, params, steps):
    w, v, _ = params
    for _ in range(steps):
        opt.zero_grad()
        _loss(w, v).backward()
        opt.step()


# -- numpy references: one function per optimizer, (p, g, state, hyperparameters) -> new p ------

def _decay(p, g, hp):
    g = -g if hp.get("maximize") else g
    if hp.get("weight_decay", 0) and not hp.get("decoupled"):
        g = g + hp["weight_decay"] * p
    if hp.get("weight_decay", 0) and hp.get("decoupled"):
        p = p * (1 - hp["lr"] * hp["weight_decay"])
    return p, g


def np_sgd(p, g, s, hp):
    p, g = _decay(p, g, hp)
    mom, damp = hp.get("momentum", 0), hp.get("dampening", 0)
    if mom:
        s["buf"] = g.copy() if "buf" not in s else mom * s["buf"] + (1 - damp) * g
        g = g + mom * s["buf"] if hp.get("nesterov") else s["buf"]
    return p - hp["lr"] * g


def np_adam(p, g, s, hp):
    p, g = _decay(p, g, hp)
    b1, b2 = hp.get("betas", (0.9, 0.999))
    eps = hp.get("eps", 1e-8)
    t = s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    s["vmax"] = np.maximum(s.get("vmax", 0), s["v"])
    v = s["vmax"] if hp.get("amsgrad") else s["v"]
    return p - hp["lr"] * (s["m"] / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


def np_rmsprop(p, g, s, hp):
    p, g = _decay(p, g, hp)
    alpha, eps, mom = hp.get("alpha", 0.99), hp.get("eps", 1e-8), hp.get("momentum", 0)
    s["sq"] = alpha * s.get("sq", 0) + (1 - alpha) * g * g
    if hp.get("centered"):
        s["gavg"] = alpha * s.get("gavg", 0) + (1 - alpha) * g
        denom = np.sqrt(s["sq"] - s["gavg"] ** 2) + eps
    else:
        denom = np.sqrt(s["sq"]) + eps
    if mom > 0:
        s["buf"] = mom * s.get("buf", 0) + g / denom
        return p - hp["lr"] * s["buf"]
    return p - hp["lr"] * g / denom


def np_adagrad(p, g, s, hp):
    p, g = _decay(p, g, hp)
    t = s["t"] = s.get("t", 0) + 1
    s["sum"] = s.get("sum", hp.get("initial_accumulator_value", 0)) + g * g
    clr = hp["lr"] / (1 + (t - 1) * hp.get("lr_decay", 0))
    return p - clr * g / (np.sqrt(s["sum"]) + hp.get("eps", 1e-10))


def np_adadelta(p, g, s, hp):
    p, g = _decay(p, g, hp)
    rho, eps = hp.get("rho", 0.9), hp.get("eps", 1e-6)
    s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
    delta = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
    s["u"] = rho * s.get("u", 0) + (1 - rho) * delta * delta
    return p - hp["lr"] * delta


def np_adamax(p, g, s, hp):
    p, g = _decay(p, g, hp)
    b1, b2 = hp.get("betas", (0.9, 0.999))
    t = s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + hp.get("eps", 1e-8))
    return p - hp["lr"] / (1 - b1 ** t) * s["m"] / s["u"]


def np_nadam(p, g, s, hp):
    p, g = _decay(p, g, hp)
    b1, b2 = hp.get("betas", (0.9, 0.999))
    psi, eps = hp.get("momentum_decay", 4e-3), hp.get("eps", 1e-8)
    t = s["t"] = s.get("t", 0) + 1
    mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
    s["mu_prod"] = s.get("mu_prod", 1.0) * mu
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    denom = np.sqrt(s["v"] / (1 - b2 ** t)) + eps
    return (p - hp["lr"] * (1 - mu) / (1 - s["mu_prod"]) * g / denom
            - hp["lr"] * mu_next / (1 - s["mu_prod"] * mu_next) * s["m"] / denom)


def np_radam(p, g, s, hp):
    p, g = _decay(p, g, hp)
    b1, b2 = hp.get("betas", (0.9, 0.999))
    t = s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    m_hat = s["m"] / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho_t <= 5:
        return p - hp["lr"] * m_hat
    r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    l_t = np.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + hp.get("eps", 1e-8))
    return p - hp["lr"] * m_hat * r * l_t


def _np_run(rule, defaults, group1, steps=STEPS):
    """The reference: params w (group 0, defaults) and v, u (group 1); u gets no gradient."""
    hps = [defaults, dict(defaults, **group1)]
    w, v = W0.copy(), V0.copy()
    states = [{}, {}]
    for _ in range(steps):
        dw, dv = _np_grads(w, v)
        w = rule(w, dw, states[0], hps[0])
        v = rule(v, dv, states[1], hps[1])
    return [w, v, U0]


def _decoupled(name, kw):
    return name == "AdamW" or kw.get("decoupled_weight_decay", False)


# (optimizer, reference rule, defaults, group-1 overrides)
CASES = [
    ("SGD", np_sgd, dict(lr=0.02), dict(lr=0.01, momentum=0.9)),
    ("SGD", np_sgd, dict(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.1), dict(nesterov=False, dampening=0.3)),
    ("SGD", np_sgd, dict(lr=0.01, momentum=0.5, maximize=True), dict(weight_decay=0.2)),
    ("Adam", np_adam, dict(lr=0.05, amsgrad=True), dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", np_adam, dict(lr=0.05, maximize=True, weight_decay=0.05), dict(amsgrad=True, eps=1e-4)),
    ("AdamW", np_adam, dict(lr=0.05), dict(lr=0.03, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", np_rmsprop, dict(lr=0.01), dict(alpha=0.9, weight_decay=0.1)),
    ("RMSprop", np_rmsprop, dict(lr=0.01, centered=True, momentum=0.9), dict(lr=0.005, centered=False)),
    ("RMSprop", np_rmsprop, dict(lr=0.01, centered=True, maximize=True, weight_decay=0.1), dict(momentum=0.5)),
    ("Adagrad", np_adagrad, dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3),
     dict(lr=0.2, weight_decay=0.1, eps=1e-6)),
    ("Adagrad", np_adagrad, dict(lr=0.1, maximize=True), dict(lr_decay=0.5)),
    ("Adadelta", np_adadelta, dict(lr=1.0), dict(rho=0.7, weight_decay=0.1, eps=1e-4)),
    ("Adadelta", np_adadelta, dict(lr=0.5, maximize=True), dict(lr=2.0)),
    ("Adamax", np_adamax, dict(lr=0.05), dict(betas=(0.8, 0.95), weight_decay=0.1)),
    ("Adamax", np_adamax, dict(lr=0.05, maximize=True), dict(eps=1e-3)),
    ("NAdam", np_nadam, dict(lr=0.05), dict(weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", np_nadam, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
     dict(betas=(0.8, 0.9), maximize=True)),
    ("RAdam", np_radam, dict(lr=0.05), dict(weight_decay=0.1)),
    # beta2 = 0.6 gives rho_inf = 4: the rectified branch is never taken; 0.9 takes it from step 6
    ("RAdam", np_radam, dict(lr=0.05, betas=(0.8, 0.6), weight_decay=0.1, decoupled_weight_decay=True),
     dict(betas=(0.9, 0.9), maximize=True)),
]


def _case_id(case):
    name, _, defaults, group1 = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in {**defaults, **group1}.items())


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_update_rule_matches_numpy_reference(case):
    name, rule, defaults, group1 = case
    params = _params()
    opt = getattr(optim, name)(_groups(params, group1), **defaults)
    _train(opt, params, STEPS)
    hp_defaults = dict(defaults, decoupled=_decoupled(name, defaults))
    if name == "AdamW":
        hp_defaults.setdefault("weight_decay", 1e-2)
    expected = _np_run(rule, hp_defaults, dict(group1, decoupled=_decoupled(name, defaults)))
    for got, exp in zip(params, expected):
        np.testing.assert_allclose(got.detach().numpy(), exp, rtol=1e-10, atol=1e-12)
    u = params[2]
    assert u not in opt.state or name == "Adagrad"      # Adagrad makes state for every parameter up front


def test_radam_takes_both_branches_in_the_reference_problem():
    # guards the RAdam cases above: with beta2 = 0.9, rho_t <= 5 on the first steps and > 5 after
    rho_inf = 2 / (1 - 0.9) - 1
    rho = [rho_inf - 2 * t * 0.9 ** t / (1 - 0.9 ** t) for t in range(1, STEPS + 1)]
    assert rho[0] <= 5 < rho[-1]


ALL_OPTIMIZERS = [
    ("SGD", dict(lr=0.02, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)), ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adadelta", dict()), ("Adamax", dict(lr=0.05)), ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.8))),
]


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS, ids=[n for n, _ in ALL_OPTIMIZERS])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    make = getattr(optim, name)
    ref = _params()
    ref_opt = make(_groups(ref, dict(lr=0.01)), **kwargs)
    _train(ref_opt, ref, 6)

    first = _params()
    opt = make(_groups(first, dict(lr=0.01)), **kwargs)
    _train(opt, first, 3)
    sd = opt.state_dict()
    # PyTorch's format: state keyed by the parameter's index across groups, groups list indices
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert sd["param_groups"][1]["lr"] == 0.01 and set(sd["state"]) >= {0, 1}
    assert all(isinstance(k, int) for k in sd["state"])

    second = [nn.Parameter(p.detach().clone()) for p in first]
    opt2 = make(_groups(second, dict(lr=0.5)), **dict(kwargs, lr=0.123))
    opt2.load_state_dict(copy.deepcopy(sd))
    assert opt2.param_groups[1]["lr"] == 0.01 and opt2.param_groups[1]["params"] == second[1:]
    _train(opt2, second, 3)
    for a, b in zip(ref, second):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS, ids=[n for n, _ in ALL_OPTIMIZERS])
def test_add_param_group_takes_defaults_and_is_stepped(name, kwargs):
    w, v, _ = _params()
    opt = getattr(optim, name)([w], **kwargs)
    opt.add_param_group({"params": [v], "lr": 0.0})
    assert opt.param_groups[1]["lr"] == 0.0
    assert {k: val for k, val in opt.param_groups[1].items() if k not in ("params", "lr")} == \
        {k: val for k, val in opt.param_groups[0].items() if k not in ("params", "lr")}
    w0, v0 = w.detach().clone(), v.detach().clone()
    _loss(w, v).backward()
    opt.step()
    assert not np.array_equal(w.detach().numpy(), w0.numpy())
    np.testing.assert_array_equal(v.detach().numpy(), v0.numpy())      # lr 0 leaves it where it was


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS, ids=[n for n, _ in ALL_OPTIMIZERS])
def test_zero_grad_to_none_or_zeros(name, kwargs):
    w, v, _ = _params()
    opt = getattr(optim, name)([w, v], **kwargs)
    _loss(w, v).backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and not w.grad.numpy().any() and not v.grad.numpy().any()
    opt.zero_grad()
    assert w.grad is None and v.grad is None


def test_float32_parameters_keep_float32_state_for_every_optimizer():
    for name, kwargs in ALL_OPTIMIZERS:
        p = nn.Parameter(dynjit.randn(3))
        opt = getattr(optim, name)([p], **kwargs)
        (p ** 2).sum().backward()
        opt.step()
        assert p.dtype is dynjit.float32, name
        for key, value in opt.state[p].items():
            if isinstance(value, dynjit.Tensor) and value.dim() > 0:
                assert value.dtype is dynjit.float32, (name, key)


@pytest.mark.parametrize("make,message", [
    (lambda p: optim.RMSprop(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.RMSprop(p, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda p: optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: optim.Adamax(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: optim.RAdam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.LBFGS(p, line_search_fn="backtracking"), "line_search_fn must be None or 'strong_wolfe'"),
])
def test_invalid_hyperparameters_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make([nn.Parameter(dynjit.zeros(2))])


# -- LBFGS ------------------------------------------------------------------------------------

def _np_lbfgs(lr, history_size, iterations):
    """L-BFGS with a fixed step (Nocedal & Wright, algorithm 7.4/7.5): the first step is
    scaled by min(1, 1 / |g|_1); H0 = (s.y / y.y) I from the newest pair; a pair is
    kept only when s.y > 1e-10; at most history_size pairs."""
    x = np.concatenate([W0, V0.ravel()])

    def grad(x):
        dw, dv = _np_grads(x[:3], x[3:].reshape(2, 2))
        return np.concatenate([dw, dv.ravel()])
    g = grad(x)
    pairs, gamma, d, t, g_prev = [], 1.0, None, None, None
    for k in range(iterations):
        if k > 0:
            s_k, y_k = d * t, g - g_prev
            if s_k @ y_k > 1e-10:
                pairs = (pairs + [(s_k, y_k)])[-history_size:]
                gamma = (s_k @ y_k) / (y_k @ y_k)
        q = g.copy()
        alphas = []
        for s_i, y_i in reversed(pairs):
            a_i = (s_i @ q) / (y_i @ s_i)
            alphas.append(a_i)
            q = q - a_i * y_i
        r = gamma * q
        for (s_i, y_i), a_i in zip(pairs, reversed(alphas)):
            r = r + s_i * (a_i - (y_i @ r) / (y_i @ s_i))
        d = -r
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 0 else lr
        g_prev = g
        x = x + t * d
        g = grad(x)
    return x[:3], x[3:].reshape(2, 2)


def _lbfgs_closure(opt, w, v):
    def closure():
        opt.zero_grad()
        loss = _loss(w, v)
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("history_size,max_iter,max_eval,steps,iterations_per_step", [
    (100, 4, None, 3, 4), (2, 5, None, 2, 5), (1, 3, 10, 4, 3),
    # the default max_eval, max_iter * 5 // 4 = 3, ends a step after 2 iterations (3 evaluations)
    (1, 3, None, 4, 2),
])
def test_lbfgs_fixed_step_matches_the_two_loop_recursion(history_size, max_iter, max_eval, steps,
                                                         iterations_per_step):
    w, v, _ = _params()
    opt = optim.LBFGS([w, v], lr=0.2, max_iter=max_iter, max_eval=max_eval, history_size=history_size,
                      tolerance_grad=0, tolerance_change=0)
    closure = _lbfgs_closure(opt, w, v)
    first_loss = opt.step(closure)
    assert first_loss.item() == pytest.approx(_loss(dynjit.tensor(W0), dynjit.tensor(V0)).item())
    for _ in range(steps - 1):
        opt.step(closure)
    exp_w, exp_v = _np_lbfgs(0.2, history_size, iterations_per_step * steps)
    np.testing.assert_allclose(w.detach().numpy(), exp_w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(v.detach().numpy(), exp_v, rtol=1e-9, atol=1e-12)
    state = opt.state[w]
    assert state["n_iter"] == iterations_per_step * steps and len(state["old_dirs"]) <= history_size


def test_lbfgs_strong_wolfe_steps_satisfy_the_wolfe_conditions():
    w, v, _ = _params()
    opt = optim.LBFGS([w, v], lr=1, max_iter=1, max_eval=25, line_search_fn="strong_wolfe")
    closure = _lbfgs_closure(opt, w, v)

    def f_and_g(x):
        dw, dv = _np_grads(x[:3], x[3:].reshape(2, 2))
        ww, vv = x[:3], x[3:].reshape(2, 2)
        f = np.sum((A @ ww - B) ** 2) + np.sum(vv ** 4) + np.sum(vv[0] * ww[:2])
        return f, np.concatenate([dw, dv.ravel()])
    for _ in range(8):
        x0 = np.concatenate([w.detach().numpy(), v.detach().numpy().ravel()])
        opt.step(closure)
        x1 = np.concatenate([w.detach().numpy(), v.detach().numpy().ravel()])
        d, t = opt.state[w]["d"].numpy(), opt.state[w]["t"]
        np.testing.assert_allclose(x1, x0 + t * d, rtol=1e-12, atol=1e-14)
        (f0, g0), (f1, g1) = f_and_g(x0), f_and_g(x1)
        assert f1 <= f0 + 1e-4 * t * (g0 @ d)                  # sufficient decrease
        assert abs(g1 @ d) <= 0.9 * abs(g0 @ d) + 1e-12        # curvature


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_minimises_rosenbrock(line_search_fn):
    x = nn.Parameter(dynjit.tensor([-1.5, 2.0], dtype=dynjit.float64))
    opt = optim.LBFGS([x], lr=1 if line_search_fn else 0.1, max_iter=50, history_size=10,
                      line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss
    for _ in range(40 if line_search_fn else 200):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-4)


def test_lbfgs_rejects_groups_and_a_missing_closure():
    a, b = nn.Parameter(dynjit.zeros(1)), nn.Parameter(dynjit.zeros(1))
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = optim.LBFGS([a])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        opt.add_param_group({"params": [b]})
    with pytest.raises(RuntimeError, match="needs a closure"):
        opt.step()


def test_lbfgs_stops_at_once_at_a_stationary_point():
    x = nn.Parameter(dynjit.tensor([0.0, 0.0], dtype=dynjit.float64))
    opt = optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (x ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    assert len(calls) == 1 and x.tolist() == [0.0, 0.0]


# -- compiled training step == eager ------------------------------------------------------------

COMPILED_OPTIMIZERS = [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01)), ("Adadelta", dict(lr=1.0, weight_decay=0.01)),
    ("Adamax", dict(lr=0.05)), ("NAdam", dict(lr=0.05, weight_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.01, foreach=True)),
    ("AdamW", dict(lr=0.05, foreach=True)),
]


def _model_and_optimizer(name, kwargs):
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = getattr(optim, name)([{"params": model[0].parameters()},
                                {"params": model[2].parameters(), "lr": kwargs.get("lr", 1.0) / 2}], **kwargs)
    return model, opt


def _train_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("name,kwargs", COMPILED_OPTIMIZERS,
                         ids=[n + ("-foreach" if k.get("foreach") else "") for n, k in COMPILED_OPTIMIZERS])
def test_compiled_training_step_matches_eager(name, kwargs, backend):
    dynjit.manual_seed(1)
    x, y = dynjit.randn(16, 6), dynjit.randint(0, 3, (16,))
    model, opt = _model_and_optimizer(name, kwargs)
    eager_losses = [_train_step(model, opt, x, y).item() for _ in range(6)]
    eager_params = [p.detach().numpy().copy() for p in model.parameters()]

    dynjit.reset()
    model, opt = _model_and_optimizer(name, kwargs)
    step = dynjit.compile(_train_step, backend=backend)
    losses = [step(model, opt, x, y).item() for _ in range(6)]
    tol = dict(rtol=0, atol=0) if backend != "llvm" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(losses, eager_losses, **tol)
    for p, e in zip(model.parameters(), eager_params):
        np.testing.assert_allclose(p.detach().numpy(), e, **tol)
    assert losses[-1] < losses[0]


# -- foreach=True: one update over flat per-group state ------------------------------------------

FOREACH_CASES = [
    ("Adam", dict(lr=0.05)), ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05, weight_decay=0.3, betas=(0.8, 0.9))),
]


def _mlp_run(name, kwargs, foreach, steps=8, drop_grad_at=None, reload_at=None):
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 7), nn.LayerNorm(7), nn.Linear(7, 3))
    x, y = dynjit.randn(12, 5), dynjit.randint(0, 3, (12,))
    params = list(model.parameters())

    def make():
        return getattr(optim, name)([{"params": params[:4]}, {"params": params[4:], "lr": 0.01}],
                                    foreach=foreach, **kwargs)
    opt = make()
    for i in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        if i == drop_grad_at:
            params[2].grad = None           # one parameter skips a step: its step count falls behind
        opt.step()
        if i == reload_at:
            saved = copy.deepcopy(opt.state_dict())
            opt = make()
            opt.load_state_dict(saved)
    return [p.detach().numpy().copy() for p in params], opt


@pytest.mark.parametrize("name,kwargs", FOREACH_CASES, ids=[_case_id((n, None, k, {})) for n, k in FOREACH_CASES])
@pytest.mark.parametrize("drop_grad_at,reload_at", [(None, None), (3, None), (None, 4), (2, 5)])
def test_foreach_update_is_bit_identical_to_the_loop(name, kwargs, drop_grad_at, reload_at):
    loop, _ = _mlp_run(name, kwargs, None, drop_grad_at=drop_grad_at, reload_at=reload_at)
    flat, opt = _mlp_run(name, kwargs, True, drop_grad_at=drop_grad_at, reload_at=reload_at)
    for a, b in zip(loop, flat):
        np.testing.assert_array_equal(a, b)
    for group in opt.param_groups:         # PyTorch's state format is kept: per-parameter tensors
        for p in group["params"]:
            state = opt.state[p]
            assert state["exp_avg"].shape == p.shape and state["step"].shape == ()


def test_foreach_state_is_one_buffer_per_entry_and_its_step_fewer_ops():
    def count_step_ops(foreach):
        dynjit.reset()
        dynjit.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Linear(6, 6), nn.LayerNorm(6), nn.Linear(6, 2))
        opt = optim.Adam(model.parameters(), lr=0.01, foreach=foreach)
        model(dynjit.randn(3, 4)).sum().backward()
        opt.step()
        counter = CompileCounter()
        dynjit.compile(opt.step, backend=counter)()
        return counter.op_count, opt, model
    loop_ops, _, _ = count_step_ops(None)
    flat_ops, opt, model = count_step_ops(True)
    assert flat_ops < loop_ops / 2
    first, second = opt.state[model[0].weight]["exp_avg"], opt.state[model[0].bias]["exp_avg"]
    first.fill_(0.0)
    second.fill_(0.0)
    opt.state[model[0].weight]["exp_avg"].add_(1.0)
    flat = opt._flat_group_states[0][1].buffers["exp_avg"]
    assert flat[:24].tolist() == [1.0] * 24 and flat[24:30].tolist() == [0.0] * 6


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_foreach_step_with_equal_sized_groups_matches_the_eager_loop(backend):
    # two groups with the same number of parameters and elements: their flat buffers and
    # step counts, made by equal factory calls in the first compiled step, must stay distinct
    def run(foreach, compiled):
        dynjit.reset()
        dynjit.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
        opt = optim.AdamW([{"params": model[0].parameters()}, {"params": model[2].parameters()}], lr=0.05,
                          foreach=foreach)
        x = dynjit.randn(8, 4)

        def step():
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
        run_step = dynjit.compile(step, backend=backend) if compiled else step
        for _ in range(5):
            run_step()
        return [p.detach().numpy().copy() for p in model.parameters()]
    tol = 0 if backend != "llvm" else 1e-6
    for a, b in zip(run(None, False), run(True, True)):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_state_dict_round_trip_continues_identically(line_search_fn):
    def run(params, opt, steps):
        closure = _lbfgs_closure(opt, *params[:2])
        for _ in range(steps):
            opt.step(closure)

    def make(params):
        return optim.LBFGS(params[:2], lr=0.5, max_iter=3, history_size=4, line_search_fn=line_search_fn)
    ref = _params()
    run(ref, make(ref), 4)
    first = _params()
    opt = make(first)
    run(first, opt, 2)
    saved = copy.deepcopy(opt.state_dict())
    assert set(saved["state"]) == {0} and {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                                           "prev_loss", "n_iter", "func_evals"} <= set(saved["state"][0])
    second = [nn.Parameter(p.detach().clone()) for p in first]
    opt2 = make(second)
    opt2.load_state_dict(saved)
    run(second, opt2, 2)
    for a, b in zip(ref[:2], second[:2]):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
