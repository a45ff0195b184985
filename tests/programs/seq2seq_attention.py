"""A sequence-to-sequence GRU with attention, in the style of PyTorch's "NLP From Scratch:
Translation with a Sequence to Sequence Network and Attention" tutorial, on a synthetic task
(reverse a sequence of tokens and add one to each): an embedding + GRU encoder, a decoder
with Bahdanau (additive) attention over the encoder outputs, teacher forcing chosen at random
per step (`random.random() < teacher_forcing_ratio`), the decoder's output layer tied to its
embedding (`self.out.weight = self.embedding.weight`, as in Press & Wolf, 2017), NLLLoss on
log_softmax outputs, and two optimizers. Evaluation decodes greedily under `torch.no_grad()` with `topk`."""
import random

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

SOS, EOS, VOCAB, MAX_LEN, HIDDEN = 0, 1, 12, 6, 24


def make_pairs(n, seed=0):
    """n (source, target) token arrays: target = reversed source + 1 (mod the word tokens)."""
    rng = np.random.RandomState(seed)
    src = rng.randint(2, VOCAB - 1, (n, MAX_LEN - 1))
    tgt = src[:, ::-1] + 1
    eos = np.full((n, 1), EOS)
    return torch.tensor(np.concatenate([src, eos], 1)), torch.tensor(np.concatenate([tgt, eos], 1))


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, input):
        embedded = self.embedding(input)
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        # no bias: softmax ignores a shift of the scores, so its gradient would be rounding
        # noise that Adam scales up to full-size steps, in torch and dynjit alike
        self.Va = nn.Linear(hidden_size, 1, bias=False)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.out.weight = self.embedding.weight          # weight tying: one parameter, two uses

    def forward(self, input, hidden, encoder_outputs):
        """One decoding step."""
        embedded = self.embedding(input)
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def train_step(encoder, decoder, input_tensor, target_tensor, use_teacher_forcing):
    """One batch: encode, decode step by step (feeding the target or the model's own guess),
    and backpropagate the NLL loss. `use_teacher_forcing` holds one bool per decoding step."""
    encoder_outputs, encoder_hidden = encoder(input_tensor)
    batch_size = encoder_outputs.size(0)
    decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS)
    decoder_hidden = encoder_hidden
    outputs = []
    for i in range(MAX_LEN):
        output, decoder_hidden, _ = decoder(decoder_input, decoder_hidden, encoder_outputs)
        outputs.append(output)
        if use_teacher_forcing[i]:
            decoder_input = target_tensor[:, i].unsqueeze(1)
        else:
            _, topi = output.topk(1)
            decoder_input = topi.squeeze(-1).detach()
    decoder_outputs = F.log_softmax(torch.cat(outputs, dim=1), dim=-1)
    loss = F.nll_loss(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
    loss.backward()
    return loss


def evaluate(encoder, decoder, input_tensor, target_tensor):
    """Greedy decoding without teacher forcing; returns the token accuracy."""
    with torch.no_grad():
        encoder_outputs, hidden = encoder(input_tensor)
        decoder_input = torch.full((input_tensor.size(0), 1), SOS, dtype=torch.long)
        tokens = []
        for _ in range(MAX_LEN):
            output, hidden, _ = decoder(decoder_input, hidden, encoder_outputs)
            decoder_input = output.argmax(dim=-1)
            tokens.append(decoder_input)
        return (torch.cat(tokens, dim=1) == target_tensor).float().mean().item()


def run(steps=20, backend=None, init=None, batch_size=16, teacher_forcing_ratio=0.5, seed=0,
        compile_mode="step", forcing_per_step=True):
    """Train for `steps` batches; returns (losses, state). With `backend`, dynjit.compile
    runs the training step (forward, decoding loop and backward: compile_mode="step") or the
    encoder and the decoder step (compile_mode="model"). `forcing_per_step` draws teacher
    forcing for every decoding step, else once per batch (a compiled step is specialized
    on these choices, as torch.compile's is: per step they make up to 2**6 variants)."""
    torch.manual_seed(seed)
    chooser = random.Random(seed)
    src, tgt = make_pairs(512)
    encoder, decoder = EncoderRNN(VOCAB, HIDDEN), AttnDecoderRNN(HIDDEN, VOCAB)
    load_state(torch, {"encoder": encoder, "decoder": decoder}, init)
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=3e-3)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=3e-3)
    modules = {"encoder": encoder, "decoder": decoder}
    step_fn = train_step
    if backend and compile_mode == "step":
        step_fn = torch.compile(train_step, backend=backend)
    elif backend:
        encoder, decoder = torch.compile(encoder, backend=backend), torch.compile(decoder, backend=backend)
    rng = np.random.RandomState(seed + 1)
    losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(src), batch_size))
        if forcing_per_step:
            forcing = tuple(chooser.random() < teacher_forcing_ratio for _ in range(MAX_LEN))
        else:
            forcing = (chooser.random() < teacher_forcing_ratio,) * MAX_LEN
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        loss = step_fn(encoder, decoder, src[idx], tgt[idx], forcing)
        encoder_optimizer.step()
        decoder_optimizer.step()
        losses.append(loss.item())
    losses.append(evaluate(encoder, decoder, src[:64], tgt[:64]))
    return losses, dump_state(modules)
