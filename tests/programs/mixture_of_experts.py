"""A sparse mixture-of-experts layer with top-k routing (Shazeer et al., 2017; the
Switch/GShard style of public MoE code) inside a small classifier: a linear router,
`torch.topk` of the gate logits, softmax over the chosen k, a fixed expert capacity (each
expert takes the tokens with the largest gate for it, by `argsort(descending=True,
stable=True)`, the rest dropped), the chosen tokens gathered with `index_select` and the
expert outputs combined back with `index_add_`; the load-balancing auxiliary loss (`F.one_hot`
dispatch fractions times mean router probability) and the router z-loss (`logsumexp`); AdamW.
The sparse layer is checked against a dense `gather`/`scatter` formulation at full capacity."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state


def make_data(n, dim=8, n_classes=4, seed=0):
    """Points from four clusters whose labels depend on a different feature pair each."""
    rng = np.random.RandomState(seed)
    cluster = rng.randint(0, 4, n)
    x = rng.randn(n, dim).astype(np.float32) + 2.0 * np.eye(4, dim, dtype=np.float32)[cluster]
    pair = x[np.arange(n), 4 + cluster % 4] * x[np.arange(n), cluster]
    y = (cluster + (pair > 0)) % n_classes
    return torch.tensor(x), torch.tensor(y)


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class MoELayer(nn.Module):
    def __init__(self, dim=8, hidden=16, num_experts=4, k=2):
        super().__init__()
        self.num_experts, self.k = num_experts, k
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def route(self, x):
        logits = self.router(x)
        probs = F.softmax(logits, dim=-1)
        top_logits, top_idx = torch.topk(logits, self.k, dim=-1)
        top_weights = F.softmax(top_logits, dim=-1)
        # auxiliary losses: balanced load (Switch Transformer) and small router logits (ST-MoE)
        dispatch = F.one_hot(top_idx, self.num_experts).sum(dim=1).float()      # (tokens, experts)
        tokens_per_expert = dispatch.mean(dim=0) / self.k
        balance = self.num_experts * torch.sum(tokens_per_expert * probs.mean(dim=0))
        z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
        return top_weights, top_idx, balance + 1e-3 * z_loss

    def forward(self, x):
        top_weights, top_idx, aux = self.route(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            # each (token, slot) routed to expert e: a fixed-size pass with zero weights elsewhere
            weight_e = torch.where(top_idx == e, top_weights, torch.zeros_like(top_weights)).sum(dim=-1)
            token_idx = torch.argsort(weight_e, descending=True, stable=True)[: x.size(0) * self.k // self.num_experts]
            expert_out = expert(x.index_select(0, token_idx)) * weight_e[token_idx].unsqueeze(-1)
            out.index_add_(0, token_idx, expert_out)
        return out, aux

    def dense_forward(self, x):
        """Every expert on every token, the k chosen ones gathered: the reference formulation."""
        top_weights, top_idx, aux = self.route(x)
        all_out = torch.stack([expert(x) for expert in self.experts], dim=1)            # (tokens, E, dim)
        chosen = torch.gather(all_out, 1, top_idx.unsqueeze(-1).expand(-1, -1, x.size(-1)))
        gates = torch.zeros(x.size(0), self.num_experts).scatter(1, top_idx, top_weights)
        return (chosen * top_weights.unsqueeze(-1)).sum(dim=1), aux, gates


class MoEClassifier(nn.Module):
    def __init__(self, dim=8, n_classes=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.moe = MoELayer(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x, dense=False):
        h = self.norm(x)
        if dense:
            moe_out, aux, _ = self.moe.dense_forward(h)
        else:
            moe_out, aux = self.moe(h)
        return self.head(x + moe_out), aux


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state): the loss per step, then the
    held-out accuracy and the largest difference between the dense formulation and the
    sparse one at full capacity (the dispatch with one slot per token and expert). With
    `backend`, the training step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(512, seed=seed)
    x_val, y_val = make_data(128, seed=seed + 1)
    model = MoEClassifier()
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(inputs, targets):
        logits, aux = net(inputs)
        loss = F.cross_entropy(logits, targets) + 0.01 * aux
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        optimizer.zero_grad()
        loss = step_fn(x[idx], y[idx])
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        logits, _ = net(x_val)
        accuracy = (logits.argmax(-1) == y_val).float().mean().item()
        model.moe.k, saved_k = model.moe.num_experts, model.moe.k     # every expert sees every token
        sparse, _ = model(x_val[:16])
        dense, _ = model(x_val[:16], dense=True)
        model.moe.k = saved_k
    losses += [accuracy, float((sparse - dense).abs().max().item() < 1e-5)]
    return losses, dump_state({"model": model})
