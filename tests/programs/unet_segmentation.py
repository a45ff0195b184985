"""A small U-Net (Ronneberger et al., 2015) trained for binary segmentation of synthetic
images of discs and squares, the way segmentation tutorials write it: double-conv blocks of
Conv2d + BatchNorm2d + ReLU, `MaxPool2d` down, `ConvTranspose2d(stride=2)` up, skip
connections joined with `torch.cat` (cropped by `F.pad` when sizes differ), a 1x1 conv head,
and a loss of `BCEWithLogitsLoss(pos_weight=)` plus a soft Dice loss; Adam with a
`ReduceLROnPlateau`-free `MultiStepLR`; evaluation of the IoU under `torch.no_grad()`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state


def make_data(n, size=20, seed=0):
    """Images with a bright disc or square on noise; the mask marks the shape."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    images = np.zeros((n, 1, size, size), np.float32)
    masks = np.zeros((n, 1, size, size), np.float32)
    for i in range(n):
        cy, cx, r = rng.randint(5, size - 5), rng.randint(5, size - 5), rng.randint(2, 5)
        if rng.rand() < 0.5:
            shape = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        else:
            shape = (abs(yy - cy) <= r) & (abs(xx - cx) <= r)
        masks[i, 0] = shape
        images[i, 0] = shape * rng.uniform(0.5, 1.0) + 0.3 * rng.randn(size, size)
    return torch.from_numpy(images), torch.from_numpy(masks)


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diff_y = x2.size()[2] - x1.size()[2]
        diff_x = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels=1, n_classes=1, width=4):
        super().__init__()
        self.inc = DoubleConv(n_channels, width)
        self.down1 = Down(width, 2 * width)
        self.down2 = Down(2 * width, 4 * width)
        self.up1 = Up(4 * width, 2 * width)
        self.up2 = Up(2 * width, width)
        self.outc = nn.Conv2d(width, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_loss(logits, target, eps=1.0):
    probs = torch.sigmoid(logits)
    inter = (probs * target).sum(dim=(2, 3))
    union = probs.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


def run(steps=20, backend=None, init=None, seed=0, batch_size=8, size=20, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the IoU on
    held-out images. With `backend`, the training step ("step") or the model ("model") runs
    under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(64, size, seed)
    x_val, y_val = make_data(16, size, seed + 1)
    model = UNet()
    load_state(torch, {"model": model}, init)
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[max(steps // 2, 1)], gamma=0.3)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(images, masks):
        logits = net(images)
        loss = bce(logits, masks) + dice_loss(logits, masks)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        images, masks = x[idx], y[idx]
        if rng.rand() < 0.5:        # random horizontal flip, image and mask together
            images, masks = torch.flip(images, dims=[3]), torch.flip(masks, dims=[3])
        optimizer.zero_grad()
        loss = step_fn(images, masks)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = net(x_val) > 0
        target = y_val > 0.5
        iou = (pred & target).sum().float() / (pred | target).sum().clamp(min=1).float()
    losses.append(iou.item())
    return losses, dump_state({"model": model})
