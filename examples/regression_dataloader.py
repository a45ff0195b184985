"""Regression with a DataLoader: an MLP fits y = sin(3x) + noise from a TensorDataset split by
random_split and shuffled by a seeded dynjit.Generator, written as a PyTorch script would be
(only the import changes).

    python examples/regression_dataloader.py [--epochs N] [--compile BACKEND] [--workers N]
"""
import argparse

import dynjit as torch
import dynjit.nn.functional as F
from dynjit import nn
from dynjit.utils.data import DataLoader, TensorDataset, random_split


def make_dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.tensor(g.np.uniform(-2.0, 2.0, size=(n, 1)), dtype=torch.float32)
    noise = torch.tensor(g.np.normal(0.0, 0.1, size=(n, 1)), dtype=torch.float32)
    return TensorDataset(x, torch.sin(3 * x) + noise)


def make_model(hidden):
    return nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, 1))


def main(epochs=20, backend=None, batch_size=32, n=512, hidden=32, lr=0.01, seed=0, num_workers=0,
         log=False):
    """Train; return the mean training loss of each epoch (and the validation loss last)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.benchmark = True          # scripts set it unconditionally; no effect here
    torch.manual_seed(seed)
    train_set, val_set = random_split(make_dataset(n, seed), [0.8, 0.2],
                                      generator=torch.Generator().manual_seed(seed))
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        generator=torch.Generator().manual_seed(seed + 1))
    val_loader = DataLoader(val_set, batch_size=256)
    model = make_model(hidden).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def train_step(xb, yb):
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    step = train_step if backend is None else torch.compile(train_step, backend=backend)
    losses = []
    for epoch in range(epochs):
        model.train()
        total, count = 0.0, 0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = step(xb, yb)
            total += loss.item() * len(xb)
            count += len(xb)
        losses.append(total / count)
        if log:
            print(f"epoch {epoch:3d}  train mse {losses[-1]:.5f}")
    model.eval()
    with torch.no_grad():
        val = sum(F.mse_loss(model(xb), yb, reduction="sum").item() for xb, yb in val_loader) / len(val_set)
    if log:
        print(f"validation mse {val:.5f}")
    return losses + [val]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--compile", dest="backend", default=None,
                        help="compile the training step with this backend (eager, aot_eager, llvm)")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    args = parser.parse_args()
    main(epochs=args.epochs, backend=args.backend, num_workers=args.workers, log=True)
