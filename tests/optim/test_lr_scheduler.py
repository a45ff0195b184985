"""dynjit.optim.lr_scheduler: every scheduler's learning rates over 30 steps (two
parameter groups) against the closed form of its documented schedule, momentum
cycling, state_dict round trips, PyTorch's warnings and errors, and a compiled
training step with a scheduler == eager on every backend."""
import math
import pickle
import warnings

import numpy as np
import pytest

import dynjit
from dynjit import nn, optim
import dynjit.nn.functional as F
from dynjit.optim import lr_scheduler as lrs

BASE_LRS = (0.1, 0.3)
EPOCHS = 30


def _optimizer(kind="SGD"):
    a, b = nn.Parameter(dynjit.zeros(2)), nn.Parameter(dynjit.zeros(2))
    groups = [{"params": [a]}, {"params": [b], "lr": BASE_LRS[1]}]
    if kind == "SGD":
        return optim.SGD(groups, lr=BASE_LRS[0], momentum=0.9)
    return getattr(optim, kind)(groups, lr=BASE_LRS[0])


def _lrs_over_epochs(opt, scheduler, epochs=EPOCHS):
    """lrs in effect at epochs 0..epochs-1 (the one set at construction, then after each step)."""
    seen = [[g["lr"] for g in opt.param_groups]]
    assert scheduler.get_last_lr() == seen[0]
    for _ in range(epochs - 1):
        opt.step()
        scheduler.step()
        seen.append(scheduler.get_last_lr())
        assert seen[-1] == [g["lr"] for g in opt.param_groups]
    return np.array(seen)


def _expected(per_group):
    """per_group(base_lr, epoch) for every epoch and both groups."""
    return np.array([[per_group(base, e) for base in BASE_LRS] for e in range(EPOCHS)])


def _cos(eta_min, base, t, period):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


def _sgdr(base, e, T_0, T_mult, eta_min):
    """SGDR (Loshchilov & Hutter): restarts after T_0, T_0 T_mult, T_0 T_mult^2, ... epochs."""
    T_i, start = T_0, 0
    while e >= start + T_i:
        start += T_i
        T_i *= T_mult
    return _cos(eta_min, base, e - start, T_i)


def _sequential(base, e):
    # LinearLR(0.1 -> 1 over 5) until epoch 5, CosineAnnealingLR(T_max=8) from 5, StepLR(3, 0.5) from 15;
    # each takes over at its own epoch 0, from the initial lr
    if e < 5:
        return base * (0.1 + 0.9 * e / 5)
    if e < 15:
        return _cos(0.0, base, e - 5, 8)
    return base * 0.5 ** ((e - 15) // 3)


SCHEDULES = {
    "StepLR": (lambda o: lrs.StepLR(o, step_size=4, gamma=0.5),
               lambda base, e: base * 0.5 ** (e // 4)),
    "MultiStepLR": (lambda o: lrs.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
                    lambda base, e: base * 0.3 ** sum(m <= e for m in (3, 7, 7, 20))),
    "ExponentialLR": (lambda o: lrs.ExponentialLR(o, gamma=0.9),
                      lambda base, e: base * 0.9 ** e),
    "CosineAnnealingLR": (lambda o: lrs.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
                          lambda base, e: _cos(0.01, base, e, 10)),
    "CosineAnnealingWarmRestarts": (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.001),
                                    lambda base, e: _sgdr(base, e, 4, 2, 0.001)),
    "CosineAnnealingWarmRestarts_Tmult1": (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=7),
                                           lambda base, e: _sgdr(base, e, 7, 1, 0.0)),
    "LambdaLR": (lambda o: lrs.LambdaLR(o, lr_lambda=lambda e: 1 / (1 + 0.5 * e)),
                 lambda base, e: base / (1 + 0.5 * e)),
    "MultiplicativeLR": (lambda o: lrs.MultiplicativeLR(o, lr_lambda=lambda e: 0.97 - 0.001 * e),
                         lambda base, e: base * math.prod(0.97 - 0.001 * k for k in range(1, e + 1))),
    "LinearLR": (lambda o: lrs.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=10),
                 lambda base, e: base * (0.2 + 0.7 * min(e, 10) / 10)),
    "ConstantLR": (lambda o: lrs.ConstantLR(o, factor=0.5, total_iters=6),
                   lambda base, e: base * (0.5 if e < 6 else 1.0)),
    "PolynomialLR": (lambda o: lrs.PolynomialLR(o, total_iters=12, power=2.0),
                     lambda base, e: base * (1 - min(e, 12) / 12) ** 2),
    "SequentialLR": (lambda o: lrs.SequentialLR(o, [lrs.LinearLR(o, 0.1, 1.0, 5), lrs.CosineAnnealingLR(o, 8),
                                                    lrs.StepLR(o, 3, 0.5)], milestones=[5, 15]),
                     _sequential),
    "ChainedScheduler": (lambda o: lrs.ChainedScheduler([lrs.ConstantLR(o, 0.5, 4), lrs.ExponentialLR(o, 0.9)]),
                         lambda base, e: base * (0.5 if e < 4 else 1.0) * 0.9 ** e),
    "CyclicLR_triangular2": (
        lambda o: lrs.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.3], step_size_up=4, step_size_down=3,
                               mode="triangular2", cycle_momentum=False),
        None),
}


def _cyclic_triangular2(base_index, e):
    """Smith's triangular2 policy: up over 4 steps, down over 3, amplitude halved each cycle."""
    max_lr = (0.1, 0.3)[base_index]
    cycle, pos = divmod(e, 7)
    frac = pos / 4 if pos <= 4 else 1 - (pos - 4) / 3
    return 0.01 + (max_lr - 0.01) * frac / 2 ** cycle


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_its_closed_form(name):
    make, per_group = SCHEDULES[name]
    opt = _optimizer()
    got = _lrs_over_epochs(opt, make(opt))
    if per_group is None:
        expected = np.array([[_cyclic_triangular2(i, e) for i in range(2)] for e in range(EPOCHS)])
    else:
        expected = _expected(per_group)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def _one_cycle_reference(e, max_lr, total, pct, anneal, div=25.0, final_div=1e4, three_phase=False,
                         moms=(0.85, 0.95)):
    """The 1cycle policy (Smith 2018) as PyTorch documents it: phases end at steps
    pct*total - 1 (and 2*pct*total - 2 with three_phase) and total - 1."""
    initial, low = max_lr / div, max_lr / div / final_div
    base_m, max_m = moms

    def interp(start, end, frac):
        if anneal == "cos":
            return end + (start - end) * (1 + math.cos(math.pi * frac)) / 2
        return start + (end - start) * frac
    up_end = pct * total - 1
    if three_phase:
        phases = [(0.0, up_end, initial, max_lr, max_m, base_m),
                  (up_end, 2 * pct * total - 2, max_lr, initial, base_m, max_m),
                  (2 * pct * total - 2, total - 1, initial, low, max_m, max_m)]
    else:
        phases = [(0.0, up_end, initial, max_lr, max_m, base_m), (up_end, total - 1, max_lr, low, base_m, max_m)]
    for i, (start, end, lr0, lr1, m0, m1) in enumerate(phases):
        if e <= end or i == len(phases) - 1:
            frac = (e - start) / (end - start)
            return interp(lr0, lr1, frac), interp(m0, m1, frac)


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("anneal,three_phase", [("cos", False), ("linear", False), ("cos", True), ("linear", True)])
def test_one_cycle_lr_and_momentum_follow_the_policy(kind, anneal, three_phase):
    opt = _optimizer(kind)
    scheduler = lrs.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=EPOCHS + 1, pct_start=0.25,
                               anneal_strategy=anneal, three_phase=three_phase)
    moms = []
    for e in range(EPOCHS):
        if e:
            opt.step()
            scheduler.step()
        for i, (group, max_lr) in enumerate(zip(opt.param_groups, (1.0, 2.0))):
            lr, mom = _one_cycle_reference(e, max_lr, EPOCHS + 1, 0.25, anneal, three_phase=three_phase)
            assert group["lr"] == pytest.approx(lr, rel=1e-12)
            momentum = group["betas"][0] if kind == "Adam" else group["momentum"]
            assert momentum == pytest.approx(mom, rel=1e-12)
            moms.append(momentum)
        if kind == "Adam":
            assert opt.param_groups[0]["betas"][1] == 0.999
    assert min(moms) < 0.86 and max(moms) == pytest.approx(0.95)


def test_one_cycle_epochs_and_steps_per_epoch_and_its_errors():
    opt = _optimizer()
    scheduler = lrs.OneCycleLR(opt, max_lr=0.5, epochs=2, steps_per_epoch=5, cycle_momentum=False)
    assert scheduler.total_steps == 10 and opt.param_groups[0]["momentum"] == 0.9
    for _ in range(10):
        opt.step()
        scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total steps is 10"):
        scheduler.step()
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lrs.OneCycleLR(_optimizer(), max_lr=0.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        lrs.OneCycleLR(_optimizer(), max_lr=0.5, total_steps=5, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        lrs.OneCycleLR(_optimizer(), max_lr=[0.5], total_steps=5)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lrs.OneCycleLR(_optimizer("Adagrad"), max_lr=0.5, total_steps=5)


def test_cosine_annealing_continues_as_a_cosine_past_t_max():
    # the recursive form PyTorch uses rises again after T_max (period 2 T_max), like the closed form
    opt = _optimizer()
    got = _lrs_over_epochs(opt, lrs.CosineAnnealingLR(opt, T_max=5), epochs=21)
    np.testing.assert_allclose(got[:, 0], [_cos(0.0, 0.1, e, 5) for e in range(21)], atol=1e-15)
    assert got[5, 0] == pytest.approx(0.0, abs=1e-15) and got[10, 0] == pytest.approx(0.1)


def test_warm_restarts_accept_fractional_epochs():
    opt = _optimizer()
    scheduler = lrs.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
    for epoch in (0.5, 3.25, 4.0, 9.5, 12.0, 13.0):
        scheduler.step(epoch)
        assert opt.param_groups[0]["lr"] == pytest.approx(_sgdr(0.1, epoch, 4, 2, 0.0))


def _reduce_on_plateau_reference(metrics, base, factor, patience, cooldown, threshold, min_lr, mode):
    """The documented rule, written out: a metric is better when it beats the best by more
    than threshold (relative); after more than `patience` epochs without improvement the lr
    is multiplied by factor (not below min_lr), then `cooldown` epochs are not counted."""
    lr, best, bad, cool = base, None, 0, 0
    out = []
    for m in metrics:
        improved = best is None or (m < best * (1 - threshold) if mode == "min" else m > best * (1 + threshold))
        if improved:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            if lr - new > 1e-8:
                lr = new
            cool, bad = cooldown, 0
        out.append(lr)
    return out


@pytest.mark.parametrize("mode", ["min", "max"])
def test_reduce_lr_on_plateau_follows_the_rule(mode):
    rng = np.random.default_rng(3)
    metrics = np.round(rng.uniform(1, 2, size=40) * np.linspace(2, 1, 40), 1)
    if mode == "max":
        metrics = -metrics
    opt = _optimizer()
    scheduler = lrs.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2, cooldown=1, min_lr=[0.0, 0.05])
    got = []
    for m in metrics:
        opt.step()
        scheduler.step(dynjit.tensor(float(m)))      # a 0-d tensor metric is accepted
        got.append(scheduler.get_last_lr())
    got = np.array(got)
    for i, (base, min_lr) in enumerate(zip(BASE_LRS, (0.0, 0.05))):
        expected = _reduce_on_plateau_reference(metrics, base, 0.5, 2, 1, 1e-4, min_lr, mode)
        np.testing.assert_allclose(got[:, i], expected, rtol=1e-15)
    assert got[-1, 0] < BASE_LRS[0] and got[-1, 1] >= 0.05


def test_reduce_lr_on_plateau_abs_threshold_and_errors():
    opt = _optimizer()
    scheduler = lrs.ReduceLROnPlateau(opt, threshold=0.5, threshold_mode="abs", patience=0)
    scheduler.step(10.0)
    scheduler.step(9.6)         # not better than 10 - 0.5: reduced
    assert scheduler.get_last_lr() == pytest.approx([0.01, 0.03])
    scheduler.step(9.0)         # better
    assert scheduler.get_last_lr() == pytest.approx([0.01, 0.03])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        lrs.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode sideways is unknown!"):
        lrs.ReduceLROnPlateau(opt, mode="sideways")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        lrs.ReduceLROnPlateau(opt, min_lr=[0.1])


# -- step order, state, errors ---------------------------------------------------------------------

def test_warns_when_scheduler_steps_before_the_optimizer():
    opt = _optimizer()
    scheduler = lrs.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        scheduler.step()

    opt = _optimizer()
    scheduler = lrs.StepLR(opt, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        scheduler.step()
        scheduler.step()            # only the first step is checked

    opt = _optimizer()
    scheduler = lrs.StepLR(opt, 2)
    opt.step = lambda closure=None: None       # replaced after the scheduler wrapped it
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler initialization"):
        scheduler.step()


def test_two_schedulers_wrap_the_optimizer_step_once():
    opt = _optimizer()
    lrs.StepLR(opt, 2)
    wrapped = opt.step
    lrs.ExponentialLR(opt, 0.5)
    assert opt.step is wrapped


def test_get_lr_outside_step_warns():
    opt = _optimizer()
    scheduler = lrs.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        scheduler.get_lr()


def test_initial_lr_is_recorded_and_needed_to_resume():
    opt = _optimizer()
    lrs.ExponentialLR(opt, 0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == list(BASE_LRS)
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\]"):
        lrs.ExponentialLR(_optimizer(), 0.5, last_epoch=3)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lrs.StepLR([], 2)


def test_step_with_an_epoch_uses_the_closed_form_and_warns():
    opt = _optimizer()
    scheduler = lrs.MultiStepLR(opt, milestones=[2, 5], gamma=0.1)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        scheduler.step(6)
    assert scheduler.last_epoch == 6 and scheduler.get_last_lr() == pytest.approx([0.001, 0.003])


SCHEDULERS_FOR_STATE = {
    "StepLR": lambda o: lrs.StepLR(o, 3, 0.5),
    "CosineAnnealingLR": lambda o: lrs.CosineAnnealingLR(o, 7, 0.001),
    "CosineAnnealingWarmRestarts": lambda o: lrs.CosineAnnealingWarmRestarts(o, 3, 2),
    "OneCycleLR": lambda o: lrs.OneCycleLR(o, 1.0, total_steps=20),
    "MultiplicativeLR": lambda o: lrs.MultiplicativeLR(o, lambda e: 0.9),
    "SequentialLR": lambda o: lrs.SequentialLR(o, [lrs.ConstantLR(o, 0.5, 2), lrs.ExponentialLR(o, 0.8)], [4]),
    "ChainedScheduler": lambda o: lrs.ChainedScheduler([lrs.LinearLR(o, 0.5, 1.0, 4), lrs.ExponentialLR(o, 0.9)]),
    "CyclicLR": lambda o: lrs.CyclicLR(o, 0.01, 0.2, step_size_up=3),
}


@pytest.mark.parametrize("name", SCHEDULERS_FOR_STATE)
def test_state_dict_round_trip_continues_identically(name):
    make = SCHEDULERS_FOR_STATE[name]
    opt = _optimizer()
    ref = make(opt)
    reference = _lrs_over_epochs(opt, ref, epochs=15)

    opt = _optimizer()
    first = make(opt)
    head = _lrs_over_epochs(opt, first, epochs=6)
    optimizer_state, scheduler_state = opt.state_dict(), pickle.loads(pickle.dumps(first.state_dict()))
    assert "optimizer" not in scheduler_state
    assert scheduler_state.get("last_epoch", 5) >= 5     # ChainedScheduler keeps its parts' epochs only

    opt2 = _optimizer()
    second = make(opt2)             # built first, then both states loaded, as PyTorch advises
    opt2.load_state_dict(optimizer_state)
    second.load_state_dict(scheduler_state)
    tail = []
    for _ in range(9):
        opt2.step()
        second.step()
        tail.append(second.get_last_lr())
    np.testing.assert_allclose(np.concatenate([head, tail]), reference, rtol=1e-15)


def test_lambda_state_dict_keeps_callable_objects_state_but_not_functions():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch
    opt = _optimizer()
    scheduler = lrs.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]
    state["lr_lambdas"][0]["rate"] = 0.25
    other = lrs.LambdaLR(_optimizer(), [Decay(0.5), lambda e: 1.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.25
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lrs.LambdaLR(_optimizer(), [lambda e: 1.0])


def test_composite_schedulers_validate_their_parts():
    opt, other = _optimizer(), _optimizer()
    step = lrs.StepLR(opt, 2)
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        lrs.SequentialLR(opt, [step, lrs.StepLR(other, 2)], milestones=[3])
    with pytest.raises(ValueError, match="number of milestones to be equal to 0"):
        lrs.SequentialLR(opt, [step, lrs.ExponentialLR(opt, 0.5)], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lrs.ChainedScheduler([step, lrs.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="expects at least one scheduler to be chained"):
        lrs.ChainedScheduler([])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        lrs.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        lrs.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lrs.CosineAnnealingWarmRestarts(opt, T_0=0)


def test_public_names_match_pytorch():
    for name in ("LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                 "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR", "LambdaLR", "MultiplicativeLR",
                 "LinearLR", "ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"):
        assert hasattr(dynjit.optim.lr_scheduler, name), name
    assert issubclass(lrs.ReduceLROnPlateau, lrs.LRScheduler)


# -- under dynjit.compile ------------------------------------------------------------------------

def _model_optimizer_scheduler():
    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt, lrs.OneCycleLR(opt, max_lr=0.5, total_steps=20)


def _train_step(model, opt, scheduler, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    scheduler.step()
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_step_with_clipping_and_a_per_batch_schedule_matches_eager(backend):
    dynjit.manual_seed(1)
    x, y = dynjit.randn(16, 6), dynjit.randint(0, 3, (16,))
    model, opt, scheduler = _model_optimizer_scheduler()
    eager = [_train_step(model, opt, scheduler, x, y).item() for _ in range(6)]
    eager_params = [p.detach().numpy().copy() for p in model.parameters()]
    eager_lrs = scheduler.get_last_lr()

    dynjit.reset()
    model, opt, scheduler = _model_optimizer_scheduler()
    step = dynjit.compile(_train_step, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # the optimizer is seen to step first: no step-order warning
        got = [step(model, opt, scheduler, x, y).item() for _ in range(6)]
    tol = dict(rtol=0, atol=0) if backend != "llvm" else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, eager, **tol)
    for p, e in zip(model.parameters(), eager_params):
        np.testing.assert_allclose(p.detach().numpy(), e, **tol)
    assert scheduler.get_last_lr() == eager_lrs and scheduler.last_epoch == 6
