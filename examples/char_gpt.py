"""A character-level GPT trained on a short built-in text, written as a PyTorch program
with `torch` replaced by `dynjit`: token and position embeddings, pre-norm causal
self-attention blocks kept in an nn.ModuleList, AdamW with a cosine learning-rate
schedule, then sampling a few characters (multinomial and greedy argmax).

    python examples/char_gpt.py [--steps N] [--compile BACKEND]

`main(steps=..., backend=None)` returns the training losses; with a backend, the
forward and backward pass run under dynjit.compile (the optimizer step stays eager)."""
import argparse

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

TEXT = """\
The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a
single step. All that glitters is not gold. To be, or not to be, that is the question:
whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune, or
to take arms against a sea of troubles and by opposing end them. It was the best of times,
it was the worst of times, it was the age of wisdom, it was the age of foolishness.
"""


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size=32, n_embd=32, n_head=4, n_layer=2):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, greedy=False):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size:])
            probs = F.softmax(logits[:, -1, :], dim=-1)
            if greedy:
                nxt = probs.argmax(dim=-1, keepdim=True)
            else:
                nxt = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


def get_batch(data, block_size, batch_size):
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix.tolist()])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix.tolist()])
    return x, y


def main(steps=200, backend=None, batch_size=16, block_size=32, lr=3e-3, seed=0, sample_chars=60, verbose=True):
    torch.manual_seed(seed)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    model = GPT(len(chars), block_size=block_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=lr / 10)

    def train_step(x, y):
        _, loss = model(x, y)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend else train_step
    losses = []
    for step in range(steps):
        x, y = get_batch(data, block_size, batch_size)
        optimizer.zero_grad()
        loss = step_fn(x, y)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if verbose and (step % 50 == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}  lr {scheduler.get_last_lr()[0]:.2e}")
    if sample_chars:
        model.eval()
        prompt = torch.tensor([[stoi["T"]]], dtype=torch.long)
        for greedy in (False, True):
            out = model.generate(prompt, sample_chars, greedy=greedy)[0].tolist()
            text = "".join(chars[i] for i in out)
            if verbose:
                print(("greedy:  " if greedy else "sampled: ") + repr(text))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--compile", dest="backend", default=None, help="a dynjit.compile backend")
    args = parser.parse_args()
    main(steps=args.steps, backend=args.backend)
