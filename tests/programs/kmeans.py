"""Clustering written with tensor ops, as people write k-means in PyTorch to run it on the
GPU: farthest-point initialization (`argmax` over `cdist`), Lloyd iterations that assign each
point to its nearest centroid (`cdist` + `argmin`) and recompute centroids with `index_add_`
(sums) and `bincount`-style counts by `scatter_add`, the inertia per iteration; then a soft
k-means refinement (a temperature-scaled softmax over negative squared distances) whose
centroids are trained by Adam, and `topk` for each centroid's nearest points."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

K, DIM = 5, 3


def make_blobs(n=400, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-6, 6, (K, DIM))
    labels = rng.randint(0, K, n)
    return torch.tensor((centers[labels] + rng.randn(n, DIM) * 0.8).astype(np.float32)), torch.tensor(labels)


def farthest_point_init(x, k):
    idx = [0]
    d = torch.cdist(x, x[:1]).squeeze(1)
    for _ in range(k - 1):
        i = int(d.argmax())
        idx.append(i)
        d = torch.minimum(d, torch.cdist(x, x[i:i + 1]).squeeze(1))
    return x[torch.tensor(idx)].clone()


def lloyd_step(x, centroids):
    """One k-means iteration: (new centroids, inertia, assignment)."""
    d = torch.cdist(x, centroids)
    assign = d.argmin(dim=1)
    k = centroids.size(0)
    counts = torch.zeros(k).scatter_add(0, assign, torch.ones(x.size(0)))
    sums = torch.zeros(k, x.size(1)).index_add_(0, assign, x)
    new = torch.where(counts.unsqueeze(1) > 0, sums / counts.clamp(min=1).unsqueeze(1), centroids)
    inertia = d.gather(1, assign.unsqueeze(1)).pow(2).sum()
    return new, inertia, assign


class SoftKMeans(nn.Module):
    def __init__(self, centroids, temperature=1.0):
        super().__init__()
        self.centroids = nn.Parameter(centroids.clone())
        self.temperature = temperature

    def forward(self, x):
        d2 = torch.cdist(x, self.centroids).pow(2)
        resp = F.softmax(-d2 / self.temperature, dim=1)
        return (resp * d2).sum(dim=1).mean()


def run(steps=20, backend=None, init=None, seed=0, lloyd_iters=6):
    """`lloyd_iters` k-means iterations, then `steps` Adam steps of soft k-means; returns
    (losses, state): the inertia of each Lloyd iteration, the soft k-means loss of each
    step, the purity of the final clusters, and the mean distance of each centroid's 10
    nearest points. With `backend`, the Lloyd step and the soft k-means training step run
    under dynjit.compile."""
    torch.manual_seed(seed)
    x, labels = make_blobs(seed=seed)
    centroids = farthest_point_init(x, K)
    lloyd = torch.compile(lloyd_step, backend=backend) if backend else lloyd_step
    losses = []
    for _ in range(lloyd_iters):
        centroids, inertia, assign = lloyd(x, centroids)
        losses.append(inertia.item())
    model = SoftKMeans(centroids, temperature=2.0)
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

    def train_step(xb):
        loss = model(xb)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend else train_step
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step_fn(x)
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        d = torch.cdist(x, model.centroids)
        assign = d.argmin(dim=1)
        purity = sum(torch.bincount(labels[assign == c], minlength=K).max().item() if (assign == c).any() else 0
                     for c in range(K)) / len(labels)
        nearest = d.topk(10, dim=0, largest=False).values
        losses += [purity, nearest.mean().item()]
    return losses, dump_state({"model": model})
