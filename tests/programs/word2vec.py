"""Skip-gram word2vec with negative sampling (Mikolov et al., 2013) as the common PyTorch
implementations write it: a vocabulary built with `collections.Counter`, subsampling of
frequent words and a unigram**0.75 noise distribution (numpy, seeded), (center, context,
negatives) batches, two `nn.Embedding` tables (input initialized `uniform_(-0.5/dim,
0.5/dim)`, output zero), scores by `torch.bmm`, the loss `-(F.logsigmoid(pos) +
F.logsigmoid(-neg).sum(1)).mean()`, `SparseAdam`-free plain SGD with a linearly decaying
learning rate set in `param_groups`, and nearest neighbours by `F.cosine_similarity` and
`topk` at the end."""
from collections import Counter

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

TOPICS = [["king", "queen", "crown", "throne", "royal", "palace"],
          ["cat", "dog", "pet", "fur", "paw", "tail"],
          ["sun", "moon", "star", "sky", "night", "light"]]
FILLER = ["the", "a", "of", "and", "in", "is"]


def make_corpus(n_sentences, seed=0):
    """Sentences mixing one topic's words with frequent filler words."""
    rng = np.random.RandomState(seed)
    words = []
    for _ in range(n_sentences):
        topic = TOPICS[rng.randint(len(TOPICS))]
        for _ in range(8):
            words.append(FILLER[rng.randint(len(FILLER))] if rng.rand() < 0.4 else topic[rng.randint(len(topic))])
    return words


class SkipGramModel(nn.Module):
    def __init__(self, vocab_size, emb_dimension):
        super().__init__()
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(vocab_size, emb_dimension)
        self.v_embeddings = nn.Embedding(vocab_size, emb_dimension)
        initrange = 1.0 / self.emb_dimension
        nn.init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        nn.init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)
        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)
        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
        return torch.mean(score + neg_score)


def run(steps=20, backend=None, init=None, seed=0, batch_size=64, window=2, negatives=5, dim=16, lr=5.0,
        compile_mode="step"):
    """Train for `steps` batches; returns (losses, state): the loss per step, then the share
    of topic words whose nearest neighbour (cosine) is from the same topic. With `backend`,
    the training step ("step") or the model ("model") runs under dynjit.compile."""
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    words = make_corpus(300, seed)
    counts = Counter(words)
    vocab = sorted(counts, key=lambda w: (-counts[w], w))
    word2id = {w: i for i, w in enumerate(vocab)}
    freq = np.array([counts[w] for w in vocab], np.float64) / len(words)
    keep_prob = np.minimum(1.0, np.sqrt(1e-1 / freq))                  # subsampling of frequent words
    noise = freq ** 0.75 / np.sum(freq ** 0.75)
    ids = [word2id[w] for w in words if rng.rand() < keep_prob[word2id[w]]]
    pairs = [(ids[i], ids[j]) for i in range(len(ids)) for j in range(max(0, i - window), min(len(ids), i + window + 1))
             if i != j]
    model = SkipGramModel(len(vocab), dim)
    load_state(torch, {"model": model}, init)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    net = torch.compile(model, backend=backend) if backend and compile_mode == "model" else model

    def train_step(pos_u, pos_v, neg_v):
        loss = net(pos_u, pos_v, neg_v)
        loss.backward()
        return loss

    step_fn = torch.compile(train_step, backend=backend) if backend and compile_mode == "step" else train_step
    losses = []
    for step in range(steps):
        batch = [pairs[k] for k in rng.randint(0, len(pairs), batch_size)]
        pos_u = torch.tensor([u for u, _ in batch])
        pos_v = torch.tensor([v for _, v in batch])
        neg_v = torch.from_numpy(rng.choice(len(vocab), (batch_size, negatives), p=noise))
        for group in optimizer.param_groups:
            group["lr"] = lr * (1.0 - step / max(steps, 1))
        optimizer.zero_grad()
        loss = step_fn(pos_u, pos_v, neg_v)
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        emb = model.u_embeddings.weight
        topic_ids = [word2id[w] for topic in TOPICS for w in topic if w in word2id]
        sims = F.cosine_similarity(emb[topic_ids].unsqueeze(1), emb[topic_ids].unsqueeze(0), dim=2)
        sims.fill_diagonal_(-2.0)
        nearest = sims.topk(1, dim=1).indices.squeeze(1).tolist()
        topic_of = {word2id[w]: t for t, topic in enumerate(TOPICS) for w in topic if w in word2id}
        same = np.mean([topic_of[topic_ids[i]] == topic_of[topic_ids[j]] for i, j in enumerate(nearest)])
    losses.append(float(same))
    return losses, dump_state({"model": model})
