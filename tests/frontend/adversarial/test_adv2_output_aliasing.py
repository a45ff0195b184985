"""Adversarial programs, round two: storage sharing of what a compiled function
returns. A view of an input, or of another output, must share memory exactly
as in eager: the next call's make_args (plain code) writes into each returned
tensor in place and records the arguments and the other outputs afterwards, so
an output that should be a view but came back as a copy (or the reverse) shows
as a difference. Also data_ptr/storage_offset/stride/is_contiguous reads."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

_POKE = '''
ESC = []
SEEN = []
def main(*args):
    r = body(*args)
    ESC.append((args, r))
    return r
def _flat(v):
    if isinstance(v, (list, tuple)):
        return [t for e in v for t in _flat(e)]
    return [v] if hasattr(v, "add_") else []
def make_args(call):
    while ESC:
        args, r = ESC.pop(0)
        outs = _flat(r)
        for i, t in enumerate(outs):
            with dynjit.no_grad():
                t.add_(10 ** i)
            SEEN.append(("after poke", i, [a.tolist() for a in _flat(args)], [o.tolist() for o in outs]))
    return fresh_args(call)
'''


def _prog(body):
    return "import dynjit\n" + _POKE + body


PROGRAMS["out_views_of_input"] = _prog('''
def body(x):
    return x.view(-1), x[0], x.t(), x.detach(), x.unsqueeze(0), x.flatten(), x.reshape(-1), x.narrow(1, 0, 1)
def fresh_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32).reshape(2, 2) * (call + 1),)
''')

PROGRAMS["out_views_of_intermediate"] = _prog('''
def body(x):
    y = x * 2
    return y, y[1:], y.view(2, -1), y.diagonal() if y.dim() == 2 else y[:1]
def fresh_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32) + call,)
''')

PROGRAMS["out_unbind_split_chunk_views"] = _prog('''
def body(x):
    a, b = x.unbind(0)
    s = x.split(1, dim=1)
    c = x.chunk(2, dim=0)
    return a, b, s, c
def fresh_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32).reshape(2, 2) * (call + 1),)
''')

PROGRAMS["out_inplace_result_and_input"] = _prog('''
def body(x, y):
    r = x.add_(1)
    z = y.mul_(2).view(-1)
    return r, z
def fresh_args(call):
    return dynjit.zeros(2) + call, dynjit.ones(2, 2)
''')

PROGRAMS["out_expand_and_as_strided"] = _prog('''
def body(x):
    e = x.expand(2, 3)
    a = x.as_strided((2,), (2,))
    return e.clone(), a
def fresh_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32) + call,)
''')

PROGRAMS["out_view_after_graph_break"] = _prog('''
def body(x):
    y = x * 3
    print("break")
    v = y[::2]
    w = x[1:]
    return y, v, w
def fresh_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32) + call,)
''')

PROGRAMS["out_same_view_returned_twice_and_in_dict"] = _prog('''
def body(x):
    v = x.view(-1)
    return [v, v, {"k": v}["k"], x]
def fresh_args(call):
    return (dynjit.ones(2, 2) * call,)
''')

PROGRAMS["out_input_returned_after_inplace_view_write"] = _prog('''
def body(x, k):
    x[0] = k
    v = x[1:]
    v.mul_(k)
    return x, v
def fresh_args(call):
    return dynjit.ones(3), call + 2
''')

PROGRAMS["out_requires_grad_views_of_leaf_detached"] = _prog('''
def body(w):
    d = w.detach()
    v = w.detach().view(-1)
    return d, v, w.data
def fresh_args(call):
    return (dynjit.ones(2, 2, requires_grad=True),)
''')

PROGRAMS["storage_metadata_reads"] = '''
import dynjit
def main(x):
    v = x.t()
    s = x[:, 1:]
    y = x * 2
    c = v.contiguous()
    r = (v.data_ptr() == x.data_ptr(), s.storage_offset(), s.stride(), v.is_contiguous(), c.is_contiguous(),
         c.data_ptr() == x.data_ptr(), y.data_ptr() == x.data_ptr(), x.view(-1).data_ptr() == x.data_ptr(),
         x.untyped_storage().nbytes() if hasattr(x, "untyped_storage") else None, s.is_contiguous(),
         x[1].data_ptr() - x.data_ptr())
    return r
def make_args(call):
    return (dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) * (call + 1),)
'''

PROGRAMS["contiguity_after_ops_in_graph"] = '''
import dynjit
def main(x):
    a = x.t()
    b = a * 2
    c = a.clone()
    d = a + 0
    e = x.permute(1, 0).reshape(-1)
    f = a.transpose(0, 1)
    return [(t.stride(), t.is_contiguous()) for t in (a, b, c, d, e, f)]
def make_args(call):
    return (dynjit.ones(2, 3 + call),)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
