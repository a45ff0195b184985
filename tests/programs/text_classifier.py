"""A text classifier over variable-length token sequences, combining the two ways PyTorch
tutorials write one: torchtext's `TextClassificationModel` (an `nn.EmbeddingBag` mean over
the concatenated tokens of a batch, cut into bags by `offsets`) and a recurrent one
(`nn.Embedding(padding_idx=0)`, `pad_sequence`, `pack_padded_sequence(enforce_sorted=
False)` into a bidirectional 2-layer `GRU`, the last forward and backward hidden states
concatenated, and `pad_packed_sequence` output max-pooled over time with the padding
masked). Trained with `CrossEntropyLoss`, `Adam`, `clip_grad_norm_` and `LambdaLR`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from tests.programs._state import dump_state, load_state

VOCAB, N_CLASSES, PAD = 40, 3, 0


def make_data(n, seed=0):
    """Sentences of 3 to 11 tokens; the class is the topic that most of its topic words
    (ids 1-30, ten per topic) come from; ids 31-39 are filler words."""
    rng = np.random.RandomState(seed)
    texts, labels = [], []
    for _ in range(n):
        label = rng.randint(N_CLASSES)
        length = rng.randint(3, 12)
        topic = 1 + 10 * label + rng.randint(0, 10, length)
        other = 1 + rng.randint(0, 30, length)
        filler = 31 + rng.randint(0, 9, length)
        choice = rng.rand(length)
        texts.append(np.where(choice < 0.45, topic, np.where(choice < 0.7, other, filler)))
        labels.append(label)
    return texts, np.array(labels)


def collate_batch(texts):
    """torchtext's collate: the concatenated ids with bag offsets, and the padded batch
    with lengths."""
    tokens = [torch.tensor(t, dtype=torch.int64) for t in texts]
    offsets = torch.tensor([0] + [len(t) for t in texts[:-1]]).cumsum(dim=0)
    lengths = torch.tensor([len(t) for t in texts])
    padded = pad_sequence(tokens, batch_first=True, padding_value=PAD)
    return torch.cat(tokens), offsets, padded, lengths


class TextClassifier(nn.Module):
    def __init__(self, embed_dim=12, hidden=10):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, embed_dim, mode="mean")
        self.embedding = nn.Embedding(VOCAB, embed_dim, padding_idx=PAD)
        self.rnn = nn.GRU(embed_dim, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(embed_dim + 4 * hidden, N_CLASSES)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.bag.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, flat, offsets, padded, lengths):
        bag = self.bag(flat, offsets)
        embedded = self.embedding(padded)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, hidden = self.rnn(packed)
        last = torch.cat([hidden[-2], hidden[-1]], dim=1)
        out, out_lengths = pad_packed_sequence(packed_out, batch_first=True, padding_value=0.0)
        mask = torch.arange(out.size(1)).unsqueeze(0) < out_lengths.unsqueeze(1)
        pooled = out.masked_fill(~mask.unsqueeze(2), float("-inf")).max(dim=1).values
        return self.fc(torch.cat([bag, last, pooled], dim=1))


def run(steps=20, backend=None, init=None, seed=0, batch_size=16, compile_mode="step"):
    """Train for `steps` batches; returns (losses, state), the last "loss" being the
    accuracy on held-out sentences. With `backend`, the training step ("step") or the model
    ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    texts, labels = make_data(256, seed)
    val_texts, val_labels = make_data(64, seed + 1)
    model = TextClassifier()
    load_state(torch, {"model": model}, init)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1.0 + 0.05 * step))
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(flat, offsets, padded, lengths, targets):
        loss = criterion(net(flat, offsets, padded, lengths), targets)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    rng = np.random.RandomState(seed + 2)
    losses = []
    model.train()
    for _ in range(steps):
        idx = rng.randint(0, len(texts), batch_size)
        batch = collate_batch([texts[i] for i in idx])
        optimizer.zero_grad()
        loss = step_fn(*batch, torch.tensor(labels[idx]))
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = net(*collate_batch(val_texts))
        accuracy = (logits.argmax(1) == torch.tensor(val_labels)).float().mean()
    losses.append(accuracy.item())
    return losses, dump_state({"model": model})
