"""MAML (Finn et al., 2017) on sine-wave regression, as PyTorch's functorch examples write
it (examples/maml_regression: evjang.py and evjang_transforms_module.py): a 1-40-40-1 MLP
module, tasks of random amplitude and phase drawn with numpy, the inner step's fast weights
`{k: params[k] - alpha * grads[k]}` from `torch.autograd.grad(loss, params.values(),
create_graph=True)` (or `torch.func.grad` of a function of the parameter dict), the module
called with the fast weights by `torch.func.functional_call`, the query losses of a batch of
tasks averaged and backpropagated through the inner step (second-order MAML), Adam on the
meta-parameters; at the end, a few steps of fine-tuning on a new task from the learned
initialization (the figure the example draws)."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
from dynjit.func import functional_call, grad

from tests.programs._state import dump_state, load_state


class ThreeLayerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1, 40)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(40, 40)
        self.relu2 = nn.ReLU()
        self.fc3 = nn.Linear(40, 1)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        x = self.relu2(x)
        x = self.fc3(x)
        return x


def mse_loss(x, y):
    return torch.mean((x - y) ** 2)


def sample_tasks(outer_batch_size, inner_batch_size, rng):
    # Select amplitude and phase for the task
    As = []
    phases = []
    for _ in range(outer_batch_size):
        As.append(rng.uniform(low=0.1, high=.5))
        phases.append(rng.uniform(low=0., high=np.pi))

    def get_batch():
        xs, ys = [], []
        for A, phase in zip(As, phases):
            x = rng.uniform(low=-5., high=5., size=(inner_batch_size, 1))
            y = A * np.sin(x + phase)
            xs.append(x)
            ys.append(y)
        return torch.tensor(np.array(xs), dtype=torch.float), torch.tensor(np.array(ys), dtype=torch.float)
    x1, y1 = get_batch()
    x2, y2 = get_batch()
    return x1, y1, x2, y2


def run(steps=20, backend=None, init=None, seed=0, num_tasks=4, K=10, alpha=0.1, inner="autograd",
        compile_mode="task", finetune_steps=3):
    """Meta-train for `steps` outer steps; returns (losses, state): the meta-loss per step,
    then the query loss of a new task after each of `finetune_steps` plain SGD steps from
    the learned weights. `inner` is "autograd" (autograd.grad with create_graph) or
    "func_grad" (torch.func.grad). With `backend`, the per-task loss ("task"), the whole
    meta-step with its backward ("step") or the network ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    net = ThreeLayerNet()
    load_state(torch, {"net": net}, init)
    model = torch.compile(net, backend=backend) if backend and compile_mode == "model" else net
    params = dict(net.named_parameters())
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)

    def get_loss_for_task(x1, y1, x2, y2):
        if inner == "func_grad":
            def inner_loss(params, x1, y1):
                f = functional_call(model, params, (x1,))
                loss = mse_loss(f, y1)
                return loss

            grads = grad(inner_loss)(params, x1, y1)
        else:
            f = functional_call(model, params, (x1,))
            inner_loss = mse_loss(f, y1)
            grads = dict(zip(params.keys(), torch.autograd.grad(inner_loss, params.values(), create_graph=True)))
        new_params = {k: params[k] - alpha * grads[k] for k in params.keys()}
        v_f = functional_call(model, new_params, (x2,))
        return mse_loss(v_f, y2)

    task_loss = torch.compile(get_loss_for_task, backend=backend) if backend and compile_mode == "task" \
        else get_loss_for_task

    def meta_step(x1, y1, x2, y2):
        inner_losses = [task_loss(x1[i], y1[i], x2[i], y2[i]) for i in range(num_tasks)]
        loss2 = sum(inner_losses) / len(inner_losses)
        loss2.backward()
        return loss2

    step = torch.compile(meta_step, backend=backend) if backend and compile_mode == "step" else meta_step
    losses = []
    for it in range(steps):
        opt.zero_grad()
        task = sample_tasks(num_tasks, K, rng)
        loss2 = step(*task)
        opt.step()
        losses.append(loss2.item())
    # fine-tune a copy of the meta-learned weights on a new task, as the example's plot does
    x1, y1, x2, y2 = sample_tasks(1, K, rng)
    fast = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    for _ in range(finetune_steps):
        loss = mse_loss(functional_call(net, fast, (x1[0],)), y1[0])
        grads = torch.autograd.grad(loss, list(fast.values()))
        fast = {k: (v - alpha * g).detach().requires_grad_(True) for (k, v), g in zip(fast.items(), grads)}
        with torch.no_grad():
            losses.append(mse_loss(functional_call(net, fast, (x2[0],)), y2[0]).item())
    return losses, dump_state({"net": net})
