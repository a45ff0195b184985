"""Adversarial programs: numerical code with data-dependent output shapes
(boolean masks, nonzero, unique, topk), data-dependent loops (Newton, power
iteration), argmax used as a Python index, and sizes that go dynamic then
stop broadcasting."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["boolean_mask_dynamic_shape"] = '''
import dynjit
def main(x):
    pos = x[x > 0]
    n = pos.shape[0]
    if n == 0:
        return "none", x.sum()
    return pos * 2, n, pos.mean(), x.masked_fill(x < 0, 0.0)
def make_args(call):
    return (dynjit.tensor([[1.0, -2.0, 3.0], [-1.0, -1.0, -1.0], [0.5, 0.5, -0.5]][call]),)
'''

PROGRAMS["nonzero_unique_topk"] = '''
import dynjit
def main(x, k):
    nz = x.nonzero()
    u = dynjit.unique(x)
    vals, idx = x.topk(k)
    return nz, u, vals, idx, [int(i) for i in idx]
def make_args(call):
    return dynjit.tensor([[3.0, 0.0, 3.0, 1.0], [0.0, 0.0, 2.0, 2.0], [5.0, 4.0, 0.0, 0.0]][call]), [2, 2, 3][call]
'''

PROGRAMS["argmax_as_python_index"] = '''
import dynjit
NAMES = ["a", "b", "c", "d"]
def main(logits):
    i = logits.argmax().item()
    j = int(logits.argmin())
    return NAMES[i], NAMES[j], logits[i] - logits[j]
def make_args(call):
    return (dynjit.tensor([[0.1, 0.9, 0.3, 0.2], [0.1, 0.9, 0.3, 0.2], [2.0, -1.0, 0.0, 1.0]][call]),)
'''

PROGRAMS["newton_sqrt_while"] = '''
import dynjit
def main(a):
    x = a.clone()
    it = 0
    while (x * x - a).abs().max() > 1e-4 and it < 50:
        x = 0.5 * (x + a / x)
        it += 1
    return x, it
def make_args(call):
    return (dynjit.tensor([[2.0, 9.0], [2.0, 9.0], [100.0, 0.25]][call]),)
'''

PROGRAMS["power_iteration"] = '''
import dynjit
def main(m, steps):
    v = dynjit.ones(m.shape[0])
    for _ in range(steps):
        v = m @ v
        v = v / v.norm()
    lam = (v @ (m @ v)).item()
    return round(lam, 3), v
def make_args(call):
    m = dynjit.tensor([[2.0, 1.0], [1.0, 3.0]]) + call
    return m, [6, 6, 8][call]
'''

PROGRAMS["stable_softmax_and_logsumexp"] = '''
import dynjit
def main(x):
    m = x.max(dim=-1, keepdim=True).values
    e = (x - m).exp()
    sm = e / e.sum(-1, keepdim=True)
    lse = m.squeeze(-1) + e.sum(-1).log()
    return sm, lse, dynjit.allclose(sm, x.softmax(-1))
def make_args(call):
    return (dynjit.tensor([[1.0, 2.0, 3.0]]) * [1, 1, 100][call],)
'''

PROGRAMS["broadcast_after_dynamic_sizes"] = '''
import dynjit
def main(x, b):
    try:
        return x + b
    except RuntimeError as e:
        return "no broadcast", str(e)
def make_args(call):
    sizes = [(2, 3), (4, 3), (5, 3), (5, 3), (6, 3)]
    bs = [3, 3, 3, 5, 1]
    return dynjit.ones(*sizes[call]), dynjit.ones(bs[call])
'''

PROGRAMS["cumsum_sort_gather"] = '''
import dynjit
def main(x):
    s, idx = x.sort(descending=True)
    c = s.cumsum(0)
    keep = c <= c[-1] * 0.8
    kept_idx = idx[keep]
    return s, c, kept_idx, x.gather(0, kept_idx), len(kept_idx.tolist())
def make_args(call):
    return (dynjit.tensor([[0.1, 0.5, 0.2, 0.2], [0.1, 0.5, 0.2, 0.2], [0.7, 0.1, 0.1, 0.1]][call]),)
'''

PROGRAMS["where_and_clamp_with_python_scalars"] = '''
import dynjit
def main(x, lo, hi):
    y = x.clamp(lo, hi)
    z = dynjit.where(x > (lo + hi) / 2, x, dynjit.zeros_like(x))
    return y, z, float(y.max()) == hi
def make_args(call):
    return dynjit.linspace(-2, 2, 5), [-1.0, -1.0, 0.0][call], [1.0, 1.0, 0.5][call]
'''

PROGRAMS["integer_tensor_python_loop_bound"] = '''
import dynjit
def main(counts, x):
    out = []
    for c in counts:
        out.append(x[: int(c)].sum())
    return dynjit.stack(out), counts.sum().item()
def make_args(call):
    return dynjit.tensor([[1, 2, 3], [1, 2, 3], [3, 0, 2]][call]), dynjit.arange(4, dtype=dynjit.float32)
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=5 if name == "broadcast_after_dynamic_sizes" else 3)
