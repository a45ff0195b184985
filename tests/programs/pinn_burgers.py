"""A physics-informed neural network (Raissi et al., 2019) for the viscous Burgers equation
u_t + u u_x = nu u_xx on x in [-1, 1], t in [0, 1], with u(0, x) = -sin(pi x) and
u(t, +-1) = 0, written as PINN code is written: collocation points with `requires_grad_()`,
the derivatives of the network's output with respect to its inputs by
`torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), create_graph=True)` (twice for
u_xx), the PDE residual, initial and boundary losses summed, Adam on a `StepLR`, then a few
`LBFGS` steps with a closure and `line_search_fn="strong_wolfe"`, as the paper does."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn

from tests.programs._state import dump_state, load_state

NU = 0.01 / math.pi


class PINN(nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        layers, in_dim = [], 2
        for _ in range(depth):
            layers += [nn.Linear(in_dim, width), nn.Tanh()]
            in_dim = width
        layers.append(nn.Linear(in_dim, 1))
        self.net = nn.Sequential(*layers)
        for m in self.net:
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, t, x):
        return self.net(torch.cat([t, x], dim=1))


def residual(model, t, x):
    u = model(t, x)
    u_t, u_x = torch.autograd.grad(u, (t, x), grad_outputs=torch.ones_like(u), create_graph=True)
    u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), create_graph=True)[0]
    return u_t + u * u_x - NU * u_xx


def make_points(n_collocation, n_boundary, seed):
    rng = np.random.RandomState(seed)
    t_f = rng.rand(n_collocation, 1)
    x_f = rng.uniform(-1, 1, (n_collocation, 1))
    x_0 = rng.uniform(-1, 1, (n_boundary, 1))
    t_b = rng.rand(n_boundary, 1)
    x_b = np.where(rng.rand(n_boundary, 1) < 0.5, -1.0, 1.0)
    as_t = lambda a: torch.tensor(a.astype(np.float32))
    return as_t(t_f), as_t(x_f), as_t(x_0), as_t(t_b), as_t(x_b)


def run(steps=20, backend=None, init=None, seed=0, lbfgs_steps=3, compile_mode="step"):
    """Adam for `steps` steps then `lbfgs_steps` LBFGS steps; returns (losses, state): the
    loss per step, then the residual's mean square on fresh points. With `backend`, the loss
    function (residual, initial and boundary terms; compile_mode="step") or the network
    ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    t_f, x_f, x_0, t_b, x_b = make_points(64, 16, seed)
    model = PINN()
    load_state(torch, {"model": model}, init)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def pinn_loss(t_f, x_f, x_0, t_b, x_b):
        t_f = t_f.clone().requires_grad_(True)
        x_f = x_f.clone().requires_grad_(True)
        loss_f = residual(net, t_f, x_f).pow(2).mean()
        u_0 = net(torch.zeros_like(x_0), x_0)
        loss_0 = torch.mean((u_0 + torch.sin(math.pi * x_0)) ** 2)
        loss_b = net(t_b, x_b).pow(2).mean()
        return loss_f + loss_0 + loss_b

    loss_fn = torch.compile(pinn_loss, backend=backend) if backend and compile_mode == "step" else pinn_loss
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(t_f, x_f, x_0, t_b, x_b)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    lbfgs = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5, history_size=10,
                              line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = loss_fn(t_f, x_f, x_0, t_b, x_b)
        loss.backward()
        return loss

    for _ in range(lbfgs_steps):
        losses.append(lbfgs.step(closure).item())
    t_test, x_test = make_points(32, 1, seed + 1)[:2]
    t_test.requires_grad_(True), x_test.requires_grad_(True)
    losses.append(residual(model, t_test, x_test).pow(2).mean().item())
    return losses, dump_state({"model": model})
