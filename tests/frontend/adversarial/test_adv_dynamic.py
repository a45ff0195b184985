"""Adversarial programs over sizes that change on every call (so sizes go
dynamic after the first recompile): Python arithmetic, branches and loops on
sizes, splits and views computed from sizes, sizes stored in Python state."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["parity_branch_on_size"] = '''
import dynjit
def main(x):
    n = x.shape[0]
    if n % 2 == 0:
        a, b = x.split(n // 2)
        return a * b, "even"
    return x[:-1].sum() + x[-1], "odd", n // 2
def make_args(call):
    return (dynjit.arange([2, 3, 4, 5, 6, 7][call], dtype=dynjit.float32),)
'''

PROGRAMS["range_over_size"] = '''
import dynjit
def main(x):
    acc = []
    for i in range(x.shape[0]):
        acc.append(x[i] * i)
    return dynjit.stack(acc).sum(), len(acc)
def make_args(call):
    return (dynjit.ones([2, 3, 4, 5, 3][call]),)
'''

PROGRAMS["view_from_size_arithmetic"] = '''
import dynjit
def main(x, heads):
    b, t = x.shape
    hd = t // heads
    y = x.view(b, heads, hd).transpose(0, 1)
    return y.shape, y.sum(-1), b * t
def make_args(call):
    return dynjit.ones([2, 3, 4, 5][call], [4, 4, 8, 8][call]), [2, 2, 4, 2][call]
'''

PROGRAMS["size_stored_in_python_state"] = '''
import dynjit
SEEN = []
def main(x):
    SEEN.append(x.shape[0])
    m = max(SEEN)
    return dynjit.zeros(m)[: x.shape[0]] + x, list(SEEN)
def make_args(call):
    return (dynjit.ones([3, 5, 2, 5, 7][call]),)
'''

PROGRAMS["size_compared_to_python_threshold"] = '''
import dynjit
def main(x, limit):
    if x.numel() > limit:
        x = x[:limit]
    pad = limit - x.shape[0]
    return dynjit.cat([x, dynjit.zeros(pad)]) if pad else x, pad
def make_args(call):
    return dynjit.ones([3, 6, 4, 9, 5][call]), 5
'''

PROGRAMS["size_as_dict_key_and_str"] = '''
import dynjit
TABLE = {2: "two", 3: "three"}
def main(x):
    n = x.shape[0]
    return TABLE.get(n, "many"), f"n={n}", str(x.shape), x.shape == (n,), x * n
def make_args(call):
    return (dynjit.ones([2, 3, 4, 2, 6][call]),)
'''

PROGRAMS["broadcast_size_one_edge"] = '''
import dynjit
def main(x, y):
    try:
        return (x + y).shape, x.shape[0] == 1
    except RuntimeError as e:
        return "mismatch"
def make_args(call):
    return dynjit.ones([2, 3, 1, 4, 1][call], 2), dynjit.ones([2, 3, 3, 1, 5][call], 2)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=4 if name == "view_from_size_arithmetic" else 5)
