"""BERT-style masked-language-model pretraining (Devlin et al., 2018) as PyTorch
implementations write it, on padded sentences from a small grammar: the encoder of
codertimo's BERT-pytorch (token + learned position + segment embeddings, multi-head
attention whose padding mask is `(x > 0).unsqueeze(1).repeat(1, x.size(1),
1).unsqueeze(1)` applied by `scores.masked_fill(mask == 0, -1e9)`, GELU feed-forward,
pre-norm sublayer connections with dropout), the MLM head with its decoder weight tied to the
token embedding, HuggingFace's DataCollatorForLanguageModeling masking (`torch.bernoulli` of
a 0.15 probability matrix with special tokens excluded by `masked_fill_`, labels -100 where
not masked, 80% `[MASK]`, 10% random tokens by boolean-mask assignment, 10% unchanged),
`CrossEntropyLoss(ignore_index=-100)`, AdamW with the no-decay parameter groups for biases
and LayerNorm weights, and a linear warmup/decay schedule by `LambdaLR`."""
import math

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

PAD, CLS, SEP, MASK = 0, 1, 2, 3
WORDS = ["the", "a", "cat", "dog", "bird", "sees", "eats", "likes", "fish", "seeds", "bones", "big", "small",
         "red", "quick", "slow"]


def make_sentences(n, seed=0):
    """n token-id sequences `[CLS] ... [SEP]` of 4 to 8 words from a small grammar."""
    rng = np.random.RandomState(seed)
    vocab = {w: i + 4 for i, w in enumerate(WORDS)}
    out = []
    for _ in range(n):
        words = [["the", "a"][rng.randint(2)]]
        if rng.rand() < 0.5:
            words.append(["big", "small", "red", "quick", "slow"][rng.randint(5)])
        words += [["cat", "dog", "bird"][rng.randint(3)], ["sees", "eats", "likes"][rng.randint(3)]]
        if rng.rand() < 0.5:
            words.append(["the", "a"][rng.randint(2)])
        words.append(["fish", "seeds", "bones"][rng.randint(3)])
        out.append([CLS] + [vocab[w] for w in words] + [SEP])
    return out


class GELU(nn.Module):
    """Paper Section 3.4, last paragraph notice that BERT used the GELU instead of RELU"""

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class Attention(nn.Module):
    """Compute 'Scaled Dot Product Attention'"""

    def forward(self, query, key, value, mask=None, dropout=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        if dropout is not None:
            p_attn = dropout(p_attn)
        return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """Take in model size and number of heads."""

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        # We assume d_v always equals d_k
        self.d_k = d_model // h
        self.h = h
        self.linear_layers = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
        self.output_linear = nn.Linear(d_model, d_model)
        self.attention = Attention()
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        batch_size = query.size(0)
        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [l(x).view(batch_size, -1, self.h, self.d_k).transpose(1, 2)
                             for l, x in zip(self.linear_layers, (query, key, value))]
        # 2) Apply attention on all the projected vectors in batch.
        x, attn = self.attention(query, key, value, mask=mask, dropout=self.dropout)
        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(batch_size, -1, self.h * self.d_k)
        return self.output_linear(x)


class SublayerConnection(nn.Module):
    """A residual connection followed by a layer norm. Note for code simplicity the norm is
    first as opposed to last."""

    def __init__(self, size, dropout):
        super(SublayerConnection, self).__init__()
        self.norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        "Apply residual connection to any sublayer with the same size."
        return x + self.dropout(sublayer(self.norm(x)))


class PositionwiseFeedForward(nn.Module):
    "Implements FFN equation."

    def __init__(self, d_model, d_ff, dropout=0.1):
        super(PositionwiseFeedForward, self).__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = GELU()

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class TransformerBlock(nn.Module):
    """Bidirectional Encoder = Transformer (self-attention)
    Transformer = MultiHead_Attention + Feed_Forward with sublayer connection"""

    def __init__(self, hidden, attn_heads, feed_forward_hidden, dropout):
        super().__init__()
        self.attention = MultiHeadedAttention(h=attn_heads, d_model=hidden, dropout=dropout)
        self.feed_forward = PositionwiseFeedForward(d_model=hidden, d_ff=feed_forward_hidden, dropout=dropout)
        self.input_sublayer = SublayerConnection(size=hidden, dropout=dropout)
        self.output_sublayer = SublayerConnection(size=hidden, dropout=dropout)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, mask):
        x = self.input_sublayer(x, lambda _x: self.attention.forward(_x, _x, _x, mask=mask))
        x = self.output_sublayer(x, self.feed_forward)
        return self.dropout(x)


class BERTEmbedding(nn.Module):
    """Token embedding + learned positional embedding + segment embedding, then dropout."""

    def __init__(self, vocab_size, embed_size, max_len, dropout=0.1):
        super().__init__()
        self.token = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.position = nn.Embedding(max_len, embed_size)
        self.segment = nn.Embedding(3, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(p=dropout)
        self.embed_size = embed_size

    def forward(self, sequence, segment_label):
        positions = torch.arange(sequence.size(1), dtype=torch.long).unsqueeze(0).expand_as(sequence)
        x = self.token(sequence) + self.position(positions) + self.segment(segment_label)
        return self.dropout(x)


class BERT(nn.Module):
    def __init__(self, vocab_size, hidden=32, n_layers=2, attn_heads=4, dropout=0.1, max_len=16):
        super().__init__()
        self.hidden = hidden
        self.n_layers = n_layers
        self.attn_heads = attn_heads
        # paper noted they used 4*hidden_size for ff_network_hidden_size
        self.feed_forward_hidden = hidden * 4
        self.embedding = BERTEmbedding(vocab_size=vocab_size, embed_size=hidden, max_len=max_len, dropout=dropout)
        self.transformer_blocks = nn.ModuleList(
            [TransformerBlock(hidden, attn_heads, hidden * 4, dropout) for _ in range(n_layers)])

    def forward(self, x, segment_info):
        # attention masking for padded token
        # torch.ByteTensor([batch_size, 1, seq_len, seq_len)
        mask = (x > 0).unsqueeze(1).repeat(1, x.size(1), 1).unsqueeze(1)
        x = self.embedding(x, segment_info)
        for transformer in self.transformer_blocks:
            x = transformer.forward(x, mask)
        return x


class MaskedLanguageModel(nn.Module):
    """predicting origin token from masked input sequence: a transform (dense, GELU,
    LayerNorm) and a decoder whose weight is the token embedding's"""

    def __init__(self, hidden, vocab_size, embedding_weight):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = GELU()
        self.layer_norm = nn.LayerNorm(hidden)
        self.decoder = nn.Linear(hidden, vocab_size, bias=False)
        self.decoder.weight = embedding_weight
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, x):
        return self.decoder(self.layer_norm(self.activation(self.dense(x)))) + self.bias


class BERTLM(nn.Module):
    def __init__(self, bert, vocab_size):
        super().__init__()
        self.bert = bert
        self.mask_lm = MaskedLanguageModel(self.bert.hidden, vocab_size, self.bert.embedding.token.weight)

    def forward(self, x, segment_label):
        x = self.bert(x, segment_label)
        return self.mask_lm(x)


def init_weights(module):
    """BertPreTrainedModel._init_weights: normal(0, 0.02) weights, zero biases and padding rows."""
    if isinstance(module, nn.Linear):
        module.weight.data.normal_(mean=0.0, std=0.02)
        if module.bias is not None:
            module.bias.data.zero_()
    elif isinstance(module, nn.Embedding):
        module.weight.data.normal_(mean=0.0, std=0.02)
        if module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()
    elif isinstance(module, nn.LayerNorm):
        module.bias.data.zero_()
        module.weight.data.fill_(1.0)


def mask_tokens(inputs, vocab_size, mlm_probability=0.15):
    """DataCollatorForLanguageModeling.torch_mask_tokens: 80% [MASK], 10% random, 10% kept."""
    labels = inputs.clone()
    # We sample a few tokens in each sequence for MLM training (with probability `mlm_probability`)
    probability_matrix = torch.full(labels.shape, mlm_probability)
    special_tokens_mask = inputs <= SEP
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = torch.bernoulli(probability_matrix).bool()
    labels[~masked_indices] = -100  # We only compute loss on masked tokens

    # 80% of the time, we replace masked input tokens with tokenizer.mask_token ([MASK])
    indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_indices
    inputs[indices_replaced] = MASK

    # 10% of the time, we replace masked input tokens with random word
    indices_random = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked_indices & ~indices_replaced
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long)
    inputs[indices_random] = random_words[indices_random]

    # The rest of the time (10% of the time) we keep the masked input tokens unchanged
    return inputs, labels


def run(steps=20, backend=None, init=None, seed=0, batch_size=8, dropout=0.1, warmup_steps=3, lr=3e-3,
        masking="torch", compile_mode="step"):
    """Train for `steps` batches; returns (losses, state): per step the MLM loss and the
    accuracy on masked tokens. `masking="torch"` masks with torch.bernoulli inside the
    training step; "numpy" draws the same decisions from a seeded numpy generator outside it
    (comparable across libraries). With `backend`, the training step ("step") or the model
    ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    sentences = make_sentences(256, seed)
    vocab_size = len(WORDS) + 4
    max_len = max(map(len, sentences))
    model = BERTLM(BERT(vocab_size, hidden=32, n_layers=2, attn_heads=4, dropout=dropout, max_len=max_len),
                   vocab_size)
    model.apply(init_weights)
    load_state(torch, {"model": model}, init)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model
    no_decay = ["bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=lr)

    def lr_lambda(current_step):   # transformers.get_linear_schedule_with_warmup
        if current_step < warmup_steps:
            return float(current_step) / float(max(1, warmup_steps))
        return max(0.0, float(steps - current_step) / float(max(1, steps - warmup_steps)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    criterion = nn.CrossEntropyLoss(ignore_index=-100)

    def train_step(input_ids, segment_label, labels):
        if labels is None:
            input_ids, labels = mask_tokens(input_ids, vocab_size)
        logits = net(input_ids, segment_label)
        loss = criterion(logits.view(-1, vocab_size), labels.view(-1))
        loss.backward()
        with torch.no_grad():
            masked = labels != -100
            accuracy = (logits.argmax(-1) == labels).float().sum() / masked.float().sum().clamp(min=1)
        return loss, accuracy

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    model.train()
    losses = []
    for step in range(steps):
        batch = [sentences[k] for k in rng.randint(0, len(sentences), batch_size)]
        length = max(map(len, batch))
        input_ids = torch.tensor([s + [PAD] * (length - len(s)) for s in batch])
        segment_label = (input_ids > 0).long()
        labels = None
        if masking == "numpy":
            ids = input_ids.numpy().copy()
            labels_np = np.where((rng.rand(*ids.shape) < 0.15) & (ids > SEP), ids, -100)
            decision = rng.rand(*ids.shape)
            masked = labels_np != -100
            ids[masked & (decision < 0.8)] = MASK
            random_positions = masked & (decision >= 0.8) & (decision < 0.9)
            ids[random_positions] = rng.randint(4, vocab_size, int(random_positions.sum()))
            input_ids, labels = torch.tensor(ids), torch.tensor(labels_np)
        optimizer.zero_grad()
        loss, accuracy = step_fn(input_ids, segment_label, labels)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), accuracy.item()]
    return losses, dump_state({"model": model})
