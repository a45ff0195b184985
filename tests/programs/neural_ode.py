"""A neural ODE (Chen et al., 2018) fitted to trajectories of a damped spiral, in the style
of torchdiffeq's ode_demo.py but with the solver written out: the dynamics dy/dt = f(t, y)
are an MLP (`Tanh`) applied to y**3, integrated by a fixed-step classical Runge-Kutta 4
solver in a Python loop over a time grid (`torch.linspace`), the trajectory `torch.stack`ed;
the loss is the mean absolute error against the true trajectory on random batches of
initial points and time windows; RMSprop. A `function-evaluation` counter in the module
counts calls, as the demo's does."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn

from tests.programs._state import dump_state, load_state

TRUE_A = np.array([[-0.1, 2.0], [-2.0, -0.1]], np.float32)


def true_trajectory(y0, t):
    """The true spiral dy/dt = y**3 @ A, integrated finely with numpy RK4."""
    ys, y = [y0], y0.astype(np.float64)
    for t0, t1 in zip(t[:-1], t[1:]):
        h = (t1 - t0) / 10
        for _ in range(10):
            f = lambda v: (v ** 3) @ TRUE_A
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return np.stack(ys).astype(np.float32)


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y ** 3)


def rk4_step(func, t, dt, y):
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def odeint(func, y0, t):
    """Solve from y0 at t[0] over the grid t with one RK4 step per interval: (len(t), *y0.shape)."""
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        y = rk4_step(func, t[i], t[i + 1] - t[i], y)
        ys.append(y)
    return torch.stack(ys)


def run(steps=20, backend=None, init=None, seed=0, batch_time=6, batch_size=8, compile_mode="step"):
    """Fit for `steps` batches; returns (losses, state): the loss per step, then the mean
    absolute error of the whole trajectory from its start and the function evaluations per
    step. With `backend`, the training step ("step") or the dynamics ("model") runs under
    dynjit.compile."""
    torch.manual_seed(seed)
    t_np = np.linspace(0.0, 2.5, 26).astype(np.float32)
    true_y = true_trajectory(np.array([[2.0, 0.0]], np.float32), t_np)       # (T, 1, 2)
    t = torch.linspace(0.0, 2.5, 26)
    true_y_t = torch.tensor(true_y)
    func = ODEFunc()
    load_state(torch, {"func": func}, init)
    optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-3)
    dynamics = torch.compile(func, backend=backend) if backend and compile_mode == "model" else func

    def train_step(batch_y0, batch_t, batch_y):
        pred_y = odeint(dynamics, batch_y0, batch_t)
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    for _ in range(steps):
        s = torch.from_numpy(rng.choice(np.arange(len(t_np) - batch_time), batch_size, replace=False))
        batch_y0 = true_y_t[s]                                                   # (M, 1, 2)
        batch_t = t[:batch_time]
        batch_y = torch.stack([true_y_t[s + i] for i in range(batch_time)], dim=0)  # (T, M, 1, 2)
        optimizer.zero_grad()
        loss = step_fn(batch_y0, batch_t, batch_y)
        optimizer.step()
        losses.append(loss.item())
    func.nfe = 0
    with torch.no_grad():
        pred_y = odeint(func, true_y_t[0], t)
        losses += [torch.mean(torch.abs(pred_y - true_y_t)).item(), float(func.nfe)]
    return losses, dump_state({"func": func})
