"""PyTorch's spatial transformer networks tutorial (Jaderberg et al., 2015) on synthetic
shapes instead of MNIST: a localization network (`Conv2d`, `MaxPool2d`, `ReLU`) regressing
the 2x3 affine matrix through `fc_loc`, initialized to the identity (`weight.data.zero_()`,
`bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))`), `F.affine_grid` and
`F.grid_sample` warping the input, then a small CNN classifier with `F.dropout2d` / `F.dropout`
(given `training=self.training`, the tutorial's code, with p=0 so the comparison with PyTorch
draws nothing) and `F.log_softmax` with `F.nll_loss`; SGD. Evaluation also warps a batch with
`padding_mode="border"` and nearest sampling to check the transformer's output range."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

SIZE, N_CLASSES = 16, 4


def make_data(n, seed=0):
    """A cross, an L, a T or a square outline, randomly rotated, scaled and shifted."""
    rng = np.random.RandomState(seed)
    shapes = np.zeros((N_CLASSES, 9, 9), np.float32)
    shapes[0, 4, :] = shapes[0, :, 4] = 1
    shapes[1, :, 1] = shapes[1, 7, 1:8] = 1
    shapes[2, 1, :] = shapes[2, :, 4] = 1
    shapes[3, 1, 1:8] = shapes[3, 7, 1:8] = shapes[3, 1:8, 1] = shapes[3, 1:8, 7] = 1
    labels = rng.randint(0, N_CLASSES, n)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE] - (SIZE - 1) / 2
    images = np.zeros((n, 1, SIZE, SIZE), np.float32)
    for i, c in enumerate(labels):
        angle, scale = rng.uniform(-0.8, 0.8), rng.uniform(0.7, 1.2)
        dx, dy = rng.uniform(-2, 2, 2)
        cos, sin = np.cos(angle) / scale, np.sin(angle) / scale
        u = cos * (xx - dx) + sin * (yy - dy) + 4
        v = -sin * (xx - dx) + cos * (yy - dy) + 4
        inside = (u >= 0) & (u < 8.5) & (v >= 0) & (v < 8.5)
        images[i, 0] = np.where(inside, shapes[c][np.clip(np.rint(v), 0, 8).astype(int), np.clip(np.rint(u), 0, 8).astype(int)], 0)
    images += 0.1 * rng.randn(*images.shape).astype(np.float32)
    return torch.from_numpy(images), torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = dropout
        self.conv1 = nn.Conv2d(1, 6, kernel_size=3)
        self.conv2 = nn.Conv2d(6, 12, kernel_size=3)
        self.fc1 = nn.Linear(12 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, N_CLASSES)
        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(6, 8, kernel_size=3), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(nn.Linear(8 * 2 * 2, 16), nn.ReLU(True), nn.Linear(16, 3 * 2))
        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x, **sample_kwargs):
        xs = self.localization(x)
        xs = xs.view(-1, 8 * 2 * 2)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False, **sample_kwargs)

    def forward(self, x):
        x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(F.dropout2d(self.conv2(x), p=self.dropout, training=self.training), 2))
        x = x.view(-1, 12 * 2 * 2)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state): the loss per step, then the
    held-out accuracy and 1.0 if a border/nearest warp stays within the input's range. With
    `backend`, the training step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(256, seed)
    x_val, y_val = make_data(64, seed + 1)
    model = Net()
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(data, target):
        output = net(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        optimizer.zero_grad()
        loss = step_fn(x[idx], y[idx])
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        correct = (net(x_val).argmax(1) == y_val).sum().item()
        warped = model.stn(x_val[:8], mode="nearest", padding_mode="border")
        in_range = bool(warped.min() >= x_val[:8].min() and warped.max() <= x_val[:8].max())
    losses += [correct / len(y_val), float(in_range)]
    return losses, dump_state({"model": model})
