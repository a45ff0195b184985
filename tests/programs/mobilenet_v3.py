"""A small MobileNetV3 (Howard et al., 2019) written as torchvision's mobilenetv3.py writes
it: `_make_divisible` channel rounding, inverted-residual blocks of a 1x1 expansion, a
depthwise 3x3 `Conv2d(groups=channels)` with stride, a squeeze-and-excitation block
(`adaptive_avg_pool2d`, 1x1 convs, `ReLU` then `Hardsigmoid` scaling the input) and a 1x1
projection, each conv followed by `BatchNorm2d(eps=0.001, momentum=0.01)` and `Hardswish` or
`ReLU`, the residual added when shapes allow; a classifier of `Linear`, `Hardswish`,
`Dropout(p=0.0)` and `Linear`; `kaiming_normal_(mode="fan_out")` initialization; RMSprop
with `momentum` and `eps=0.0316` as the paper's recipe, `CrossEntropyLoss(label_smoothing)`
and `ExponentialLR`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

N_CLASSES = 5


def make_data(n, seed=0):
    """12x12 RGB images: the class sets which channel carries a checkerboard and its scale."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, N_CLASSES, n)
    yy, xx = np.mgrid[0:12, 0:12]
    images = 0.5 * rng.randn(n, 3, 12, 12)
    for i, c in enumerate(labels):
        period = 2 + c // 3
        images[i, c % 3] += np.where(((yy // period) + (xx // period)) % 2 == 0, 1.0, -1.0)
    return torch.tensor(images.astype(np.float32)), torch.tensor(labels)


def _make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class SqueezeExcitation(nn.Module):
    def __init__(self, input_channels, squeeze_channels):
        super().__init__()
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, input):
        scale = F.adaptive_avg_pool2d(input, 1)
        scale = self.fc2(self.activation(self.fc1(scale)))
        return self.scale_activation(scale) * input


def conv_bn_act(in_channels, out_channels, kernel_size, stride=1, groups=1, activation=nn.Hardswish):
    layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups,
                        bias=False),
              nn.BatchNorm2d(out_channels, eps=0.001, momentum=0.01)]
    if activation is not None:
        layers.append(activation(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, in_channels, expanded, out_channels, stride, use_se, use_hs):
        super().__init__()
        self.use_res_connect = stride == 1 and in_channels == out_channels
        activation = nn.Hardswish if use_hs else nn.ReLU
        layers = []
        if expanded != in_channels:
            layers.append(conv_bn_act(in_channels, expanded, 1, activation=activation))
        layers.append(conv_bn_act(expanded, expanded, 3, stride, groups=expanded, activation=activation))
        if use_se:
            layers.append(SqueezeExcitation(expanded, _make_divisible(expanded // 4, 8)))
        layers.append(conv_bn_act(expanded, out_channels, 1, activation=None))
        self.block = nn.Sequential(*layers)

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = result + input
        return result


class MobileNetV3(nn.Module):
    # in, expanded, out, stride, squeeze-excitation, hard-swish (a shortened "small" setting)
    SETTING = [(16, 16, 16, 2, True, False), (16, 40, 24, 2, False, False), (24, 48, 24, 1, True, True)]

    def __init__(self, num_classes=N_CLASSES, last_channel=64):
        super().__init__()
        layers = [conv_bn_act(3, 16, 3, stride=1)]
        layers += [InvertedResidual(*cfg) for cfg in self.SETTING]
        layers.append(conv_bn_act(24, 96, 1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(96, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=0.0, inplace=True), nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def run(steps=20, backend=None, init=None, seed=0, batch_size=16, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the
    held-out accuracy. With `backend`, the training step ("step") or the model ("model") runs
    under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(256, seed)
    x_val, y_val = make_data(64, seed + 1)
    model = MobileNetV3()
    load_state(torch, {"model": model}, init)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, eps=0.0316, momentum=0.9,
                                    weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.97)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(images, targets):
        loss = criterion(net(images), targets)
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
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append((net(x_val).argmax(1) == y_val).float().mean().item())
    return losses, dump_state({"model": model})
