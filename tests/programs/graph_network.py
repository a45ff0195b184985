"""A graph neural network for node classification in the style of the "GCN from scratch"
code people write before reaching for PyTorch Geometric: a two-community graph with noisy
node features; each layer computes degree-normalized messages along the edges
(`gather` / `index_select` on the source nodes, `scatter_add` for the degrees) and sums them
into the destination nodes with `index_add_`; an edge gate (sigmoid of both ends' features)
weights each message. Trained full-batch with Adam and weight decay on a train mask,
evaluated with `argmax` accuracy under `torch.no_grad()` on the held-out nodes."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

N_NODES, N_FEATURES, N_CLASSES, HIDDEN = 60, 8, 2, 16


def make_graph(seed=0):
    """A stochastic block model: two communities of 30 nodes, edges 0.25 likely inside a
    community and 0.03 across; features are a noisy class mean. Edges go both ways, with
    self-loops."""
    rng = np.random.RandomState(seed)
    labels = np.repeat(np.arange(N_CLASSES), N_NODES // N_CLASSES)
    same = labels[:, None] == labels[None, :]
    adj = rng.rand(N_NODES, N_NODES) < np.where(same, 0.25, 0.03)
    adj = np.triu(adj, 1)
    adj = adj | adj.T | np.eye(N_NODES, dtype=bool)
    src, dst = np.nonzero(adj)
    means = rng.randn(N_CLASSES, N_FEATURES)
    x = means[labels] + 2.0 * rng.randn(N_NODES, N_FEATURES)
    train_mask = rng.rand(N_NODES) < 0.3
    return (torch.tensor(x.astype(np.float32)), torch.tensor(np.stack([src, dst])), torch.tensor(labels),
            torch.tensor(train_mask))


class GraphConv(nn.Module):
    """h_i' = W h_i + sum over edges (j -> i) of gate_ji * h_j W_msg / sqrt(deg_i deg_j)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.lin = nn.Linear(in_features, out_features, bias=False)
        self.lin_self = nn.Linear(in_features, out_features)
        self.gate = nn.Linear(2 * in_features, 1)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        n = x.size(0)
        deg = torch.zeros(n).scatter_add(0, dst, torch.ones(dst.size(0)))
        norm = deg.gather(0, src).rsqrt() * deg.gather(0, dst).rsqrt()
        gate = torch.sigmoid(self.gate(torch.cat([x.index_select(0, src), x[dst]], dim=1))).squeeze(-1)
        messages = self.lin(x)[src] * (norm * gate).unsqueeze(-1)
        out = torch.zeros(n, messages.size(1), dtype=x.dtype)
        out.index_add_(0, dst, messages)
        return out + self.lin_self(x)


class GNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GraphConv(N_FEATURES, HIDDEN)
        self.conv2 = GraphConv(HIDDEN, N_CLASSES)

    def forward(self, x, edge_index):
        h = F.relu(self.conv1(x, edge_index))
        return self.conv2(h, edge_index)


def run(steps=20, backend=None, init=None, seed=0, compile_mode="step"):
    """Train for `steps` full-batch steps; returns (losses, state), the last "loss" being
    the held-out accuracy. With `backend`, the training step (forward, loss and backward:
    compile_mode="step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    x, edge_index, y, train_mask = make_graph(seed)
    model = GNN()
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step():
        out = net(x, edge_index)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step_fn()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = net(x, edge_index).argmax(dim=1)
        losses.append((pred[~train_mask] == y[~train_mask]).float().mean().item())
    return losses, dump_state({"model": model})
