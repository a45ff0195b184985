"""A small ResNet trained the way fast CIFAR-style training scripts do it, on synthetic
10-class 16x16 images: BasicBlocks with a residual (and a 1x1 strided shortcut), global
`F.adaptive_avg_pool2d`, `CrossEntropyLoss(label_smoothing=0.1)`, SGD with Nesterov momentum
and weight decay under a `OneCycleLR` schedule, `clip_grad_norm_`, and the forward pass under
`torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp)`; evaluation
under `torch.no_grad()` with `argmax` accuracy."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

N_CLASSES = 10


def make_data(n, seed=0):
    """Images whose class sets the frequency and angle of a grating, plus noise."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, N_CLASSES, n)
    yy, xx = np.mgrid[0:16, 0:16] / 16.0
    angle = labels[:, None, None] * np.pi / N_CLASSES
    freq = 2 + labels[:, None, None] % 3
    grating = np.sin(2 * np.pi * freq * (np.cos(angle) * xx + np.sin(angle) * yy))
    images = np.stack([grating, grating ** 2, -grating], 1) + 0.3 * rng.randn(n, 3, 16, 16)
    return torch.tensor(images.astype(np.float32)), torch.tensor(labels)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class ResNet(nn.Module):
    def __init__(self, num_blocks=(1, 1), width=8):
        super().__init__()
        self.in_planes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layer1 = self._make_layer(width, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(2 * width, num_blocks[1], stride=2)
        self.linear = nn.Linear(2 * width, N_CLASSES)

    def _make_layer(self, planes, num_blocks, stride):
        layers = []
        for s in [stride] + [1] * (num_blocks - 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = F.adaptive_avg_pool2d(out, 1)
        out = torch.flatten(out, 1)
        return self.linear(out)


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, use_amp=False, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the
    accuracy on held-out images. With `backend`, the training step (compile_mode="step")
    or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(512, seed)
    x_val, y_val = make_data(128, seed + 1)
    model = ResNet()
    load_state(torch, {"model": model}, init)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=max(steps, 2))
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(inputs, targets):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            outputs = net(inputs)
            loss = criterion(outputs.float(), targets)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        optimizer.zero_grad(set_to_none=True)
        loss = step_fn(x[idx], y[idx])
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        correct = (net(x_val).argmax(dim=1) == y_val).sum().item()
    losses.append(correct / len(y_val))
    return losses, dump_state({"model": model})
