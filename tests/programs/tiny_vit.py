"""A tiny Vision Transformer (Dosovitskiy et al., 2020) as the from-scratch ViT tutorials
write it: a Conv2d patch embedding (kernel = stride = patch size), a learned class token
(`nn.Parameter`) prepended with `torch.cat` and `expand`, learned positional embeddings,
`nn.TransformerEncoder` of pre-norm `nn.TransformerEncoderLayer`s (batch_first, GELU, no biases), the
class token's LayerNorm-ed output to a linear head; `trunc_normal_` initialization through
`model.apply`, AdamW with a linear-warmup-then-cosine `LambdaLR`, and `argmax` accuracy."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

IMAGE, PATCH, N_CLASSES = 16, 4, 4


def make_data(n, seed=0):
    """Four classes of 1-channel images: a bright square in one of the four quadrants, with noise."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, N_CLASSES, n)
    images = 0.5 * rng.randn(n, 1, IMAGE, IMAGE)
    for i, c in enumerate(labels):
        r, col = (c // 2) * 8 + rng.randint(0, 4), (c % 2) * 8 + rng.randint(0, 4)
        images[i, 0, r:r + 4, col:col + 4] += 2.0
    return torch.tensor(images.astype(np.float32)), torch.tensor(labels)


class PatchEmbed(nn.Module):
    def __init__(self, in_chans=1, embed_dim=32):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=PATCH, stride=PATCH)

    def forward(self, x):
        x = self.proj(x)                          # (B, D, H/P, W/P)
        return x.flatten(2).transpose(1, 2)       # (B, N, D)


class ViT(nn.Module):
    def __init__(self, embed_dim=32, depth=2, num_heads=4, mlp_ratio=2, dropout=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(1, embed_dim)
        num_patches = (IMAGE // PATCH) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(dropout)
        # bias=False: attention's key bias gets no gradient (softmax ignores a per-query
        # shift), only rounding noise that AdamW scales up to lr-sized steps
        layer = nn.TransformerEncoderLayer(embed_dim, num_heads, dim_feedforward=embed_dim * mlp_ratio,
                                           dropout=dropout, activation="gelu", batch_first=True, norm_first=True,
                                           bias=False)
        self.encoder = nn.TransformerEncoder(layer, num_layers=depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, N_CLASSES)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.encoder(x)
        return self.head(self.norm(x)[:, 0])


def warmup_cosine(warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def run(steps=20, backend=None, init=None, seed=0, dropout=0.1, batch_size=32, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state), the last "loss" being held-out
    accuracy. With `backend`, the training step (compile_mode="step") or the model
    ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(512, seed)
    x_val, y_val = make_data(128, seed + 1)
    model = ViT(dropout=dropout)
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(max(steps // 5, 1), steps))
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(images, labels):
        loss = F.cross_entropy(net(images), labels)
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
        losses.append((net(x_val).argmax(-1) == y_val).float().mean().item())
    return losses, dump_state({"model": model})
