"""A small CNN classifier on synthetic MNIST-shaped data (1x28x28 images, 10 classes), written
as a PyTorch training script is (only the import changes): Conv2d / ReLU / MaxPool2d / Linear,
CrossEntropyLoss, Adam, mini-batches, a few epochs.

    python examples/cnn_classifier.py [--epochs N] [--compile BACKEND]

Each class is a fixed random blurred "stroke" pattern; an image is its class's pattern,
shifted by up to three pixels, plus noise, so the network has something to learn."""
import argparse
import time

import numpy as np

import dynjit as torch
from dynjit import nn


def make_data(n, seed=0, num_classes=10):
    """(images (n, 1, 28, 28) float32, labels (n,) int64) as numpy arrays."""
    rng = np.random.default_rng(seed)
    patterns = rng.standard_normal((num_classes, 28, 28))
    for _ in range(3):                 # blur: neighbouring pixels agree, like strokes
        patterns = (patterns + np.roll(patterns, 1, 1) + np.roll(patterns, 1, 2)) / 3
    patterns /= patterns.std(axis=(1, 2), keepdims=True)
    labels = rng.integers(0, num_classes, n)
    shifts = rng.integers(-3, 4, (n, 2))
    images = np.stack([np.roll(patterns[c], tuple(s), (0, 1)) for c, s in zip(labels, shifts)])
    images = images + 2.5 * rng.standard_normal(images.shape)
    return images[:, None].astype(np.float32), labels.astype(np.int64)


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # 8 x 14 x 14
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 7 x 7
        )
        self.classifier = nn.Linear(16 * 7 * 7, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def main(epochs=3, steps=None, backend=None, batch_size=64, n=2048, lr=2e-3, seed=0, log=False,
         model=None):
    """Train; return the loss of every step. `steps` stops early after that many steps; `model`
    trains a given Net (to start from known weights) instead of a fresh one."""
    torch.manual_seed(seed)
    images, labels = make_data(n, seed)
    x_all, y_all = torch.tensor(images), torch.tensor(labels)
    model = Net() if model is None else model
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def train_step(xb, yb):
        opt.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    step = train_step if backend is None else torch.compile(train_step, backend=backend)
    order = np.random.default_rng(seed + 1)
    losses = []
    for epoch in range(epochs):
        model.train()
        start, epoch_losses = time.perf_counter(), []
        perm = order.permutation(n)
        for i in range(0, n - batch_size + 1, batch_size):
            idx = torch.tensor(perm[i:i + batch_size])
            loss = step(x_all[idx], y_all[idx])
            epoch_losses.append(loss.item())
            if steps is not None and len(losses) + len(epoch_losses) >= steps:
                break
        losses += epoch_losses
        if log:
            with torch.no_grad():
                accuracy = (model(x_all[:512]).argmax(1) == y_all[:512]).float().mean().item()
            print(f"epoch {epoch}  loss {np.mean(epoch_losses):.4f}  train accuracy {accuracy:.3f}  "
                  f"({time.perf_counter() - start:.1f}s)")
        if steps is not None and len(losses) >= steps:
            break
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--compile", dest="backend", default=None,
                        help="compile the training step with this backend (eager, aot_eager, llvm)")
    args = parser.parse_args()
    main(epochs=args.epochs, backend=args.backend, log=True)
