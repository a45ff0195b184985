"""A character-level LSTM language model trained with truncated backpropagation through
time, as PyTorch's examples/word_language_model writes it (main.py, model.py,
generate.py), on a small synthetic text: the corpus `batchify`d into columns
(`narrow`, `view(bsz, -1).t().contiguous()`), `get_batch` slices of `bptt` steps, the
hidden state carried between chunks and cut from the graph by the recursive
`repackage_hidden` (`h.detach()` of a tuple), `init_hidden` from `next(self.parameters())
.new_zeros`, `Dropout`, a 2-layer `nn.LSTM` with dropout between layers, tied encoder and
decoder weights, `log_softmax` + `NLLLoss`, `clip_grad_norm_`, the manual SGD update
`p.data.add_(p.grad, alpha=-lr)`, evaluation under `model.eval()` / `no_grad`, the
learning rate divided by 4 when the validation loss does not improve, and generation by
`torch.multinomial` of `output.squeeze().div(temperature).exp()`."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state


def make_text(n_chars, seed=0):
    """Sentences built from a small grammar, so that characters are predictable."""
    rng = np.random.RandomState(seed)
    subjects, verbs, objects = ["the cat", "a dog", "my bird"], ["sees", "eats", "likes"], ["fish.", "seeds.", "bones."]
    text = ""
    while len(text) < n_chars:
        text += f"{subjects[rng.randint(3)]} {verbs[rng.randint(3)]} {objects[rng.randint(3)]} "
    return text[:n_chars]


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def run(steps=20, backend=None, init=None, seed=0, rnn_type="LSTM", batch_size=4, eval_batch_size=2, bptt=8,
        emsize=16, nlayers=2, dropout=0.2, lr=4.0, clip=0.25, text_chars=360, generate=0, temperature=0.8,
        compile_mode="step"):
    """Train for `steps` epochs; returns (losses, state): the training loss per batch, the
    validation loss per epoch, then `generate` sampled characters (their ids). With
    `backend`, the training step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    text = make_text(text_chars + text_chars // 4, seed)
    chars = sorted(set(text))
    idx = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    train_data = batchify(idx[:text_chars], batch_size)
    val_data = batchify(idx[text_chars:], eval_batch_size)
    ntokens = len(chars)
    model = RNNModel(rnn_type, ntokens, emsize, emsize, nlayers, dropout, tie_weights=True)
    load_state(torch, {"model": model}, init)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model
    criterion = nn.NLLLoss()

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    def train_step(data, targets, hidden):
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = net(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        return loss, hidden

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step

    def evaluate(data_source):
        # Turn on evaluation mode which disables dropout.
        model.eval()
        total_loss = 0.
        hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                output, hidden = net(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    losses = []
    best_val_loss = None
    for epoch in range(1, steps + 1):
        # Turn on training mode which enables dropout.
        model.train()
        hidden = model.init_hidden(batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            loss, hidden = step_fn(data, targets, hidden)
            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(val_data)
        losses.append(val_loss)
        # Anneal the learning rate if no improvement has been seen in the validation dataset.
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            lr /= 4.0

    model.eval()
    hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)
    with torch.no_grad():  # no tracking history
        for i in range(generate):
            output, hidden = net(input, hidden)
            word_weights = output.squeeze().div(temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            losses.append(float(word_idx))
    return losses, dump_state({"model": model})
