"""Adversarial programs in the style of real user code: a tokenizer feeding an
embedding, a recursive tree model over nested lists, message passing over a
dict adjacency, beam search with heapq, a registry of activations chosen by
name from a dataclass config, a shape-keyed memo cache, a Kalman filter."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["tokenizer_embedding"] = '''
import dynjit
import dynjit.nn as nn
VOCAB = {}
dynjit.manual_seed(0)
EMB = nn.Embedding(16, 3)
def tokenize(text):
    ids = []
    for w in text.lower().split():
        if w not in VOCAB:
            VOCAB[w] = len(VOCAB) % 16
        ids.append(VOCAB[w])
    return ids
def main(text):
    ids = tokenize(text)
    e = EMB(dynjit.tensor(ids))
    return e.mean(0), len(VOCAB), ids
def make_args(call):
    return (["the cat sat", "the cat sat", "a dog sat on the mat"][call],)
'''

PROGRAMS["recursive_tree_model"] = '''
import dynjit
def embed(tree, leaf_w, mix_w):
    if isinstance(tree, (int, float)):
        return leaf_w * tree
    kids = [embed(t, leaf_w, mix_w) for t in tree]
    h = kids[0]
    for k in kids[1:]:
        h = (h + k) * mix_w
    return h.tanh()
def main(tree, w):
    return embed(tree, w, w * 0.5)
def make_args(call):
    trees = [[1, [2, 3]], [1, [2, 3]], [[1, 2], [3, [4, 5]], 6]]
    return trees[call], dynjit.tensor([0.5, -0.25])
'''

PROGRAMS["message_passing_dict_graph"] = '''
import dynjit
def main(adj, feats, rounds):
    h = dict(feats)
    for _ in range(rounds):
        new = {}
        for node, nbrs in adj.items():
            msg = sum((h[n] for n in nbrs), dynjit.zeros_like(h[node]))
            new[node] = (h[node] + msg / max(len(nbrs), 1)).relu()
        h = new
    return {k: v for k, v in sorted(h.items())}
def make_args(call):
    adj = {"a": ["b"], "b": ["a", "c"], "c": []}
    if call == 2:
        adj["d"] = ["a", "b", "c"]
    feats = {k: dynjit.tensor([float(i), -float(i)]) for i, k in enumerate(sorted(adj))}
    return adj, feats, 2
'''

PROGRAMS["beam_search_heapq"] = '''
import heapq
import dynjit
def main(logp, beam):
    beams = [(0.0, [])]
    for t in range(logp.shape[0]):
        cand = []
        for score, seq in beams:
            for tok in range(logp.shape[1]):
                cand.append((score - logp[t, tok].item(), seq + [tok]))
        beams = heapq.nsmallest(beam, cand)
    best_score, best = beams[0]
    return round(-best_score, 4), best, len(beams)
def make_args(call):
    dynjit.manual_seed(call % 2)
    return dynjit.randn(3, 4).log_softmax(-1), [2, 2, 3][call]
'''

PROGRAMS["config_registry_dataclass"] = '''
import dataclasses
import dynjit
import dynjit.nn.functional as F
ACTS = {"relu": F.relu, "gelu": F.gelu, "tanh": dynjit.tanh}
@dataclasses.dataclass
class Cfg:
    act: str = "relu"
    depth: int = 2
    residual: bool = True
def main(x, cfg):
    act = ACTS[cfg.act]
    for i in range(cfg.depth):
        y = act(x * (i + 1) - 1)
        x = x + y if cfg.residual else y
    return x
def make_args(call):
    return dynjit.linspace(-1, 1, 4), [Cfg(), Cfg(), Cfg("gelu", 3, False)][call]
'''

PROGRAMS["shape_keyed_memo_cache"] = '''
import dynjit
CACHE = {}
def mask_for(n):
    key = ("mask", n)
    if key not in CACHE:
        CACHE[key] = dynjit.ones(n, n).tril()
    return CACHE[key]
def main(x):
    m = mask_for(x.shape[0])
    return (x @ x.t()) * m, len(CACHE)
def make_args(call):
    return (dynjit.ones([2, 2, 3][call], 2),)
'''

PROGRAMS["kalman_filter_loop"] = '''
import dynjit
def main(zs, q, r):
    x = dynjit.zeros(1)
    p = dynjit.ones(1)
    hist = []
    for z in zs:
        p = p + q
        k = p / (p + r)
        x = x + k * (z - x)
        p = (1 - k) * p
        hist.append(round(x.item(), 4))
    return x, p, hist
def make_args(call):
    return [1.0, 2.0, 1.5, 1.8][: 3 + (call == 2)], 0.01, [0.5, 0.5, 0.1][call]
'''

PROGRAMS["logging_metrics_dict_of_lists"] = '''
import collections
import dynjit
METRICS = collections.defaultdict(list)
def log(name, value):
    METRICS[name].append(round(float(value), 4))
def main(pred, target):
    err = (pred - target).abs()
    log("mae", err.mean())
    log("max", err.max())
    if err.max() > 1:
        log("outliers", (err > 1).sum())
    return {k: list(v) for k, v in METRICS.items()}
def make_args(call):
    return dynjit.tensor([1.0, 2.0, 3.0]) * (call + 1), dynjit.tensor([1.0, 2.0, 3.5])
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
