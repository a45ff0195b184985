"""Adversarial programs, round two: sizes that change between calls, so the
function is recompiled for dynamic sizes (automatic dynamic) and then reused
for other sizes: ops whose NUMBER of outputs depends on a size (chunk, split,
unbind) and the Python code that counts or indexes those outputs, next to
size-dependent code that must keep working (iteration, len, slicing)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

SIZES = "[3, 3, 4, 5, 7, 8][call]"


def _prog(body, sizes=SIZES):
    return f'''
import dynjit
def main(x):
{body}
def make_args(call):
    n = {sizes}
    return (dynjit.arange(n * 2, dtype=dynjit.float32).reshape(n, 2),)
'''


PROGRAMS["chunk_count_follows_size"] = _prog("""    parts = x.chunk(3)
    return len(parts), parts[-1]""")
PROGRAMS["chunk_by_size_itself"] = _prog("""    parts = x.chunk(x.shape[0])
    return len(parts), parts[-1]""")
PROGRAMS["split_fixed_size_count"] = _prog("""    parts = x.split(2)
    return len(parts), parts[-1], sum(p.sum() for p in parts)""")
PROGRAMS["split_by_half_size"] = _prog("""    parts = x.split(x.shape[0] // 2)
    return len(parts), parts[-1]""")
PROGRAMS["unbind_rows_count"] = _prog("""    rows = x.unbind(0)
    return len(rows), rows[-1], dynjit.stack(rows[::-1])""")
PROGRAMS["unbind_transposed_columns"] = _prog("""    cols = x.t().unbind(1)
    return len(cols), cols[-1]""")
PROGRAMS["functional_chunk_four"] = _prog("""    parts = dynjit.chunk(x, 4)
    return len(parts), parts[-1]""")
PROGRAMS["flatten_split_five"] = _prog("""    parts = x.flatten().split(5)
    return len(parts), parts[-1]""")
PROGRAMS["iteration_and_len_on_dynamic_size"] = _prog("""    rows = [r * i for i, r in enumerate(x)]
    return len(rows), len(x), rows[-1], x[x.shape[0] // 2:], list(range(x.shape[0]))""")
PROGRAMS["chunks_summed_in_python_loop"] = _prog("""    total = x.new_zeros(2)
    count = 0
    for part in x.chunk(2):
        total = total + part.sum(0)
        count += 1
    return total, count""")

PROGRAMS["chunk_and_split_by_python_int_argument"] = '''
import dynjit
def main(x, k):
    return len(x.chunk(k)), len(x.split(k)), x.split(k)[-1], len(dynjit.zeros(k).unbind(0))
def make_args(call):
    return dynjit.arange(8, dtype=dynjit.float32), [2, 2, 3, 4, 5, 6][call]
'''

def _scalar_prog(body):
    return f'''
import dynjit
F = dynjit.nn.functional
def main(x, k):
{body}
def make_args(call):
    return dynjit.arange(12, dtype=dynjit.float32), [2, 2, 3, 4, 5, 6][call]
'''


PROGRAMS["size_from_dynamic_int_returned"] = _scalar_prog("""    return x.repeat(k).shape, dynjit.zeros(k).shape, x.new_zeros(k, 2).shape, x.expand(k, 12).shape""")
PROGRAMS["size_from_dynamic_int_in_python_logic"] = _scalar_prog("""    y = x.repeat(k)
    return "big" if y.shape[0] > 40 else "small", len(y), y.numel(), [i for i in range(y.shape[0] // 12)]""")
PROGRAMS["dim_argument_from_dynamic_int"] = _scalar_prog("""    a = x.unsqueeze(k % 2)
    b = x.reshape(3, 4).transpose(0, k % 2)
    return a.shape, b.shape, a, b""")
PROGRAMS["unfold_and_pad_by_dynamic_int"] = _scalar_prog("""    u = x.unfold(0, k, 1)
    p = F.pad(x, (k, 0))
    return u.shape, p.shape, u.sum(), p""")

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=6)
