"""SimCLR-style contrastive learning (Chen et al., 2020) on synthetic 1-D signals: two
augmented views per sample (random shift by `torch.roll`, scaling and noise, drawn with numpy),
an encoder of `Conv1d` + `BatchNorm1d` + `AdaptiveAvgPool1d` with a projection head, and the
NT-Xent loss written as public implementations write it: `F.normalize`, the 2N x 2N cosine
similarity matrix divided by a temperature, the diagonal removed with `masked_fill(-inf)`
(a `torch.eye(...).bool()` mask), positives at `(i + N) % 2N`, and `F.cross_entropy` over
the rows. A linear probe on the frozen encoder (`requires_grad_(False)`, `detach`) reports
accuracy. LARS-free: SGD with momentum and a `CosineAnnealingLR`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

LENGTH, N_CLASSES = 32, 3


def make_data(n, seed=0):
    """Signals of one of three shapes (sine, square, sawtooth) at a random phase."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, N_CLASSES, n)
    phase = rng.rand(n, 1) * 2 * np.pi
    t = np.linspace(0, 4 * np.pi, LENGTH)[None, :] + phase
    waves = np.stack([np.sin(t), np.sign(np.sin(t)), (t % (2 * np.pi)) / np.pi - 1], 1)
    x = waves[np.arange(n), labels] + 0.1 * rng.randn(n, LENGTH)
    return x.astype(np.float32)[:, None, :], labels


def augment(x, rng):
    """A random circular shift, amplitude scaling and jitter per sample."""
    n = x.shape[0]
    shifts = rng.randint(-6, 7, n)
    views = np.stack([np.roll(x[i], shifts[i], axis=-1) for i in range(n)])
    views = views * rng.uniform(0.7, 1.3, (n, 1, 1)) + 0.1 * rng.randn(*x.shape)
    return torch.tensor(views.astype(np.float32))


class Encoder(nn.Module):
    def __init__(self, width=16, feature_dim=16, projection_dim=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, width, 5, padding=2), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, width, 5, padding=2, stride=2), nn.BatchNorm1d(width), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(width, feature_dim))
        self.projector = nn.Sequential(nn.Linear(feature_dim, feature_dim), nn.ReLU(inplace=True),
                                       nn.Linear(feature_dim, projection_dim))

    def forward(self, x):
        h = self.features(x)
        return h, self.projector(h)


def nt_xent_loss(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    n = z1.size(0)
    similarity = torch.matmul(z, z.T) / temperature
    self_mask = torch.eye(2 * n, dtype=torch.bool)
    similarity = similarity.masked_fill(self_mask, float("-inf"))
    targets = (torch.arange(2 * n) + n) % (2 * n)
    return F.cross_entropy(similarity, targets)


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, temperature=0.5, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state): the NT-Xent loss per step, the
    cosine similarity of two views of the same signal checked against
    `F.cosine_similarity`, then the linear probe's accuracy. With `backend`, the training step
    ("step") or the encoder ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x_np, labels = make_data(256, seed)
    model = Encoder()
    probe = nn.Linear(16, N_CLASSES)
    load_state(torch, {"model": model, "probe": probe}, init)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(steps, 1), eta_min=1e-3)
    encoder = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(view1, view2):
        _, z1 = encoder(view1)
        _, z2 = encoder(view2)
        loss = nt_xent_loss(z1, z2, temperature)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    model.train()
    for _ in range(steps):
        batch = x_np[rng.randint(0, len(x_np), batch_size)]
        optimizer.zero_grad()
        loss = step_fn(augment(batch, rng), augment(batch, rng))
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    model.requires_grad_(False)
    with torch.no_grad():
        h, z = encoder(torch.tensor(x_np))
        _, z_other = encoder(augment(x_np, rng))
        cosine = F.cosine_similarity(z, z_other, dim=1)
        by_hand = (F.normalize(z, dim=1) * F.normalize(z_other, dim=1)).sum(1)
        assert torch.allclose(cosine, by_hand, atol=1e-5)
    losses.append(cosine.mean().item())
    features, targets = h.detach(), torch.tensor(labels)
    probe_opt = torch.optim.Adam(probe.parameters(), lr=0.05)
    for _ in range(30):
        probe_opt.zero_grad()
        F.cross_entropy(probe(features), targets).backward()
        probe_opt.step()
    losses.append((probe(features).argmax(1) == targets).float().mean().item())
    return losses, dump_state({"model": model, "probe": probe})
