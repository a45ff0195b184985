"""A character-level LSTM language model, written as a PyTorch program (only the import differs).

Embedding -> LSTM -> Linear, trained with truncated backpropagation through time: the
corpus is cut into `batch_size` parallel streams, each training step reads the next
`bptt` characters of every stream, and the hidden state carries over between steps but
is detached so gradients stop at the step boundary. CrossEntropyLoss, gradient clipping
with nn.utils.clip_grad_norm_, and Adam.

    python examples/lstm_language_model.py [--steps N] [--compile BACKEND]

`main(steps=..., backend=None)` runs the same thing and returns the list of losses.
"""
import argparse
import time

import dynjit as torch
import dynjit.nn as nn

CORPUS = """\
It was the best of times, it was the worst of times, it was the age of wisdom, it was the
age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the
season of Light, it was the season of Darkness, it was the spring of hope, it was the winter
of despair, we had everything before us, we had nothing before us, we were all going direct
to Heaven, we were all going direct the other way - in short, the period was so far like the
present period, that some of its noisiest authorities insisted on its being received, for
good or for evil, in the superlative degree of comparison only.
"""


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim=16, hidden_size=32, num_layers=2, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, dropout=dropout)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens, hidden):
        output, hidden = self.lstm(self.embed(tokens), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, batch_size):
        shape = (self.lstm.num_layers, batch_size, self.lstm.hidden_size)
        return torch.zeros(shape), torch.zeros(shape)


def batchify(ids, batch_size):
    """Cut the id sequence into batch_size streams: a (length, batch_size) tensor."""
    length = ids.size(0) // batch_size
    return ids[: length * batch_size].view(batch_size, length).t().contiguous()


def main(steps=60, backend=None, batch_size=8, bptt=16, seed=0, lr=0.01, clip=0.5, log_every=0,
         model=None):
    torch.manual_seed(seed)
    vocab = sorted(set(CORPUS))
    ids = torch.tensor([vocab.index(ch) for ch in CORPUS], dtype=torch.int64)
    data = batchify(ids, batch_size)
    if model is None:
        model = CharLSTM(len(vocab))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def train_step(inputs, targets, hidden):
        hidden = tuple(h.detach() for h in hidden)   # truncated BPTT: no gradient into past steps
        optimizer.zero_grad()
        logits, hidden = model(inputs, hidden)
        loss = criterion(logits.view(-1, len(vocab)), targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss, hidden

    step_fn = train_step if backend is None else torch.compile(train_step, backend=backend)
    model.train()
    hidden = model.init_hidden(batch_size)
    losses = []
    position = 0
    for step in range(steps):
        if position + bptt + 1 > data.size(0):   # wrap around: a new pass starts from zeros
            position = 0
            hidden = model.init_hidden(batch_size)
        inputs = data[position: position + bptt]
        targets = data[position + 1: position + 1 + bptt]
        position += bptt
        loss, hidden = step_fn(inputs, targets, hidden)
        losses.append(loss.item())
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1:4d}  loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--compile", dest="backend", default=None,
                        help="compile the training step with this backend (eager, aot_eager, llvm)")
    args = parser.parse_args()
    start = time.perf_counter()
    losses = main(steps=args.steps, backend=args.backend, log_every=10)
    print(f"first loss {losses[0]:.4f}, last loss {losses[-1]:.4f}, "
          f"{time.perf_counter() - start:.1f}s")
