"""Checkpoint and resume: train a small classifier for some epochs, save the model, the
optimizer (Adam's moments included) and the data order's generator with dynjit.save, load them
into fresh objects with dynjit.load, train on, and check that the losses equal those of an
uninterrupted run exactly.

    python examples/save_resume.py [--epochs N] [--resume-at K] [--compile BACKEND]
"""
import argparse
import os
import tempfile

import dynjit as torch
import dynjit.nn.functional as F
from dynjit import nn
from dynjit.utils.data import DataLoader, TensorDataset


def make_dataset(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.tensor(g.np.normal(size=(n, 4)), dtype=torch.float32)
    labels = ((x[:, 0] * x[:, 1] > 0).long() + (x[:, 2] > 0.5).long())      # 3 classes
    return TensorDataset(x, labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def fresh_state(seed):
    """Model, optimizer, data-order generator and loader as a run starts them."""
    torch.manual_seed(seed)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(seed + 1)
    loader = DataLoader(make_dataset(), batch_size=32, shuffle=True, generator=g)   # the same data each run
    return model, opt, g, loader


def train_epochs(model, opt, loader, epochs, backend):
    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = train_step if backend is None else torch.compile(train_step, backend=backend)
    losses = []
    for _ in range(epochs):
        for x, y in loader:
            losses.append(step(x, y).item())
    return losses


def main(epochs=6, resume_at=3, backend=None, seed=0, checkpoint=None, log=False):
    """Return the losses of the interrupted-and-resumed run, after checking they equal an
    uninterrupted run's."""
    model, opt, g, loader = fresh_state(seed)
    reference = train_epochs(model, opt, loader, epochs, backend)

    model, opt, g, loader = fresh_state(seed)
    first = train_epochs(model, opt, loader, resume_at, backend)
    with tempfile.TemporaryDirectory() as tmp:
        path = checkpoint or os.path.join(tmp, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "data_generator": g.get_state(), "epoch": resume_at}, path)
        del model, opt, g, loader                  # nothing of the first half survives
        ckpt = torch.load(path, map_location="cpu")
    model, opt, g, loader = fresh_state(seed + 100)          # different weights and order...
    model.load_state_dict(ckpt["model"])                      # ...until the checkpoint loads
    opt.load_state_dict(ckpt["optimizer"])
    g.set_state(ckpt["data_generator"])
    rest = train_epochs(model, opt, loader, epochs - ckpt["epoch"], backend)
    resumed = first + rest
    if resumed != reference:
        raise AssertionError("the resumed run's losses differ from the uninterrupted run's")
    if log:
        print(f"{len(reference)} steps; loss {reference[0]:.4f} -> {reference[-1]:.4f}; "
              f"resumed after epoch {resume_at}: identical losses")
    return resumed


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--resume-at", type=int, default=3)
    parser.add_argument("--compile", dest="backend", default=None,
                        help="compile the training step with this backend (eager, aot_eager, llvm)")
    parser.add_argument("--checkpoint", default=None, help="where to write the checkpoint (default: a temporary file)")
    args = parser.parse_args()
    main(epochs=args.epochs, resume_at=args.resume_at, backend=args.backend, checkpoint=args.checkpoint,
         log=True)
