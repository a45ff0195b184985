"""A multi-step time-series forecaster as written in many tutorials: a noisy sum of
seasonal signals cut into sliding windows with `Tensor.unfold`, normalized with the training
statistics, a Conv1d feature extractor followed by a two-layer LSTM (batch_first) and a linear
head predicting the next HORIZON values, MSE loss, Adam with a CosineAnnealingLR schedule,
`clip_grad_norm_`, and an evaluation that reports the validation MAE under `torch.no_grad()`."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

WINDOW, HORIZON = 24, 4


def make_series(n=400, seed=0):
    rng = np.random.RandomState(seed)
    t = np.arange(n)
    y = np.sin(2 * math.pi * t / 24) + 0.5 * np.sin(2 * math.pi * t / 7) + 0.002 * t + 0.1 * rng.randn(n)
    return torch.tensor(y.astype(np.float32))


def make_windows(series, window=WINDOW):
    """(inputs, targets): windows of `window` values and the HORIZON values after each."""
    chunks = series.unfold(0, window + HORIZON, 1)            # (n - W - H + 1, W + H), a view
    return chunks[:, :window].unsqueeze(-1), chunks[:, window:]


class Forecaster(nn.Module):
    def __init__(self, channels=8, hidden=16):
        super().__init__()
        self.conv = nn.Conv1d(1, channels, kernel_size=5, padding=2)
        self.lstm = nn.LSTM(channels, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, HORIZON)

    def forward(self, x):                       # x: (batch, WINDOW, 1)
        h = F.gelu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        out, (h_n, c_n) = self.lstm(h)
        return self.head(out[:, -1])


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, compile_mode="step", window=WINDOW):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the
    validation MAE in the series' units. With `backend`, the training step (compile_mode
    "step") or the model ("model") runs under dynjit.compile. (`window`: the input length;
    the LSTM is unrolled over it in a compiled graph.)"""
    torch.manual_seed(seed)
    series = make_series(seed=seed)
    split = 300
    mean, std = series[:split].mean(), series[:split].std()
    normalized = (series - mean) / std
    x_train, y_train = make_windows(normalized[:split], window)
    x_val, y_val = make_windows(normalized[split - window:], window)
    model = Forecaster()
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(steps, 1), eta_min=1e-4)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(xb, yb):
        pred = net(xb)
        loss = F.mse_loss(pred, yb)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 1)
    losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x_train), batch_size))
        optimizer.zero_grad()
        loss = step_fn(x_train[idx], y_train[idx])
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        mae = ((net(x_val) - y_val).abs().mean() * std).item()
    losses.append(mae)
    return losses, dump_state({"model": model})
