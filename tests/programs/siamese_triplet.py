"""Metric learning with a siamese embedding network, the way such training scripts are
usually written: a Dataset yielding (anchor, positive, negative) triplets, split with
`random_split` (or fixed `Subset`s), class-balanced batches from a `WeightedRandomSampler`,
an MLP embedder with BatchNorm1d and Dropout initialized by `model.apply(init_fn)`, the sum of
`nn.TripletMarginLoss` and a contrastive loss written with `F.pairwise_distance`, AdamW with
two parameter groups (no weight decay for biases and norm weights, chosen by
`named_parameters`), a StepLR schedule, gradient clipping, a `state_dict` save/load round
trip, and nearest-centroid accuracy with `torch.cdist` and `argmin` under `torch.no_grad()`."""
import io

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.utils.data import DataLoader, Dataset, Subset, WeightedRandomSampler, random_split

from tests.programs._state import dump_state, load_state

N_CLASSES, DIM, EMBED = 4, 12, 6


class TripletDataset(Dataset):
    """Points around 4 class prototypes, the classes unbalanced (60/25/10/5 %). Item i is
    (anchor i, a positive of its class, a negative of another class, its label); partners
    are chosen by a fixed rule so that the same index gives the same triplet everywhere."""

    def __init__(self, n=240, seed=0):
        rng = np.random.RandomState(seed)
        self.labels = rng.choice(N_CLASSES, n, p=[0.6, 0.25, 0.1, 0.05])
        protos = rng.randn(N_CLASSES, DIM) * 1.5
        self.x = torch.tensor((protos[self.labels] + rng.randn(n, DIM)).astype(np.float32))
        self.by_class = [np.nonzero(self.labels == c)[0] for c in range(N_CLASSES)]
        self.pos = [self.by_class[c][(np.searchsorted(self.by_class[c], i) + 1) % len(self.by_class[c])]
                    for i, c in enumerate(self.labels)]
        self.neg = [self.by_class[(c + 1 + i % (N_CLASSES - 1)) % N_CLASSES][i % len(self.by_class[(c + 1 + i % (N_CLASSES - 1)) % N_CLASSES])]
                    for i, c in enumerate(self.labels)]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.x[i], self.x[self.pos[i]], self.x[self.neg[i]], int(self.labels[i])


class EmbeddingNet(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(DIM, 32, bias=False), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(32, 32), nn.ReLU(),
            nn.Linear(32, EMBED))

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        if m.bias is not None:          # no bias before BatchNorm, which would cancel it
            nn.init.zeros_(m.bias)


def contrastive_loss(a, b, same, margin=1.0):
    d = F.pairwise_distance(a, b)
    return (same * d.pow(2) + (1 - same) * F.relu(margin - d).pow(2)).mean()


def parameter_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if name.endswith(".bias") or param.ndim == 1:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def run(steps=20, backend=None, init=None, seed=0, dropout=0.1, sampling="weighted", batch_size=16):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the
    nearest-centroid accuracy on the validation split after a state_dict round trip.
    sampling="weighted" draws batches from a WeightedRandomSampler over a random_split;
    "fixed" takes fixed Subsets in order (no random draws: used to compare with PyTorch).
    With `backend` the training step (forward, both losses, backward) is compiled."""
    torch.manual_seed(seed)
    dataset = TripletDataset(seed=seed)
    if sampling == "weighted":
        train_set, val_set = random_split(dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(seed))
        counts = np.bincount(dataset.labels[train_set.indices], minlength=N_CLASSES)
        weights = [1.0 / counts[dataset.labels[i]] for i in train_set.indices]
        sampler = WeightedRandomSampler(weights, num_samples=steps * batch_size, replacement=True)
        loader = DataLoader(train_set, batch_size=batch_size, sampler=sampler)
    else:
        train_set, val_set = Subset(dataset, range(0, 180)), Subset(dataset, range(180, 240))
        loader = DataLoader(train_set, batch_size=batch_size, shuffle=False, drop_last=True)
    model = EmbeddingNet(dropout)
    model.apply(init_weights)
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.AdamW(parameter_groups(model, 0.05), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)
    triplet = nn.TripletMarginLoss(margin=0.5)

    def train_step(anchor, positive, negative):
        ea, ep, en = model(anchor), model(positive), model(negative)
        pairs = torch.cat([ep, en])
        same = torch.cat([torch.ones(len(ea)), torch.zeros(len(ea))])
        loss = triplet(ea, ep, en) + 0.5 * contrastive_loss(ea.repeat(2, 1), pairs, same)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend else train_step
    losses = []
    model.train()
    batches = iter(loader)
    for step in range(steps):
        try:
            anchor, positive, negative, _ = next(batches)
        except StopIteration:
            batches = iter(loader)
            anchor, positive, negative, _ = next(batches)
        optimizer.zero_grad()
        loss = step_fn(anchor, positive, negative)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())

    buffer = io.BytesIO()                                 # checkpoint round trip
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = EmbeddingNet(dropout)
    restored.load_state_dict(torch.load(buffer))
    restored.eval()
    with torch.no_grad():
        x_train = torch.stack([dataset.x[i] for i in train_set.indices])
        y_train = torch.tensor(dataset.labels[list(train_set.indices)])
        emb = restored(x_train)
        centroids = torch.stack([emb[y_train == c].mean(0) for c in range(N_CLASSES)])
        x_val = torch.stack([dataset.x[i] for i in val_set.indices])
        y_val = torch.tensor(dataset.labels[list(val_set.indices)])
        pred = torch.cdist(restored(x_val), centroids).argmin(dim=1)
        losses.append((pred == y_val).float().mean().item())
    return losses, dump_state({"model": model})
