"""Adversarial programs: in-place ops on views and aliased inputs, .data and
.grad, requires_grad_ inside compiled code, grad-mode decorators and nesting,
RNG with manual_seed inside, print and warnings.warn."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["inplace_on_view_of_input"] = '''
import dynjit
def main(x):
    v = x[1:]
    v.mul_(2)
    x[0] = -1
    w = x.view(-1)
    w.add_(1)
    return x.sum(), v
def make_args(call):
    return (dynjit.arange(4 + call, dtype=dynjit.float32),)
'''

PROGRAMS["same_tensor_passed_twice_inplace"] = '''
import dynjit
def main(a, b):
    a.add_(1)
    c = b * 2
    b.mul_(3)
    return a, c, a is b
def make_args(call):
    t = dynjit.ones(3) * call
    return (t, t) if call != 2 else (t, t.clone())
'''

PROGRAMS["aliased_views_passed"] = '''
import dynjit
def main(a, b):
    a.add_(10)
    return b.sum(), b
def make_args(call):
    base = dynjit.arange(6, dtype=dynjit.float32)
    return base[:4], base[2:]
'''

PROGRAMS["transpose_view_inplace"] = '''
import dynjit
def main(m):
    t = m.t()
    t[0].fill_(7)
    d = m.diagonal()
    d.zero_()
    return m
def make_args(call):
    return (dynjit.ones(3, 3) * (call + 1),)
'''

PROGRAMS["data_assignment_and_mutation"] = '''
import dynjit
def main(w, x):
    y = (w * x).sum()
    w.data.mul_(0.5)
    w.data = w.data + 1
    z = (w * x).sum()
    return y.detach(), z.detach(), w.requires_grad
def make_args(call):
    return dynjit.ones(3, requires_grad=True), dynjit.ones(3) * call
'''

PROGRAMS["grad_manipulation_and_backward"] = '''
import dynjit
def main(w, x):
    loss = (w * x).sum()
    loss.backward()
    g = w.grad.clone()
    w.grad.mul_(2)
    with dynjit.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
    return g, w.grad, w
def make_args(call):
    return dynjit.ones(3, requires_grad=True), dynjit.arange(3, dtype=dynjit.float32) + call
'''

PROGRAMS["grad_accumulates_across_calls"] = '''
import dynjit
def main(w, x):
    (w * x).sum().backward()
    (w * w * x).sum().backward()
    return w.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True), dynjit.ones(2) * (call + 1)
'''

PROGRAMS["requires_grad_inside"] = '''
import dynjit
def main(x):
    y = x.clone()
    y.requires_grad_()
    z = (y * y).sum()
    g, = dynjit.autograd.grad(z, y)
    d = x.detach().requires_grad_(True)
    return g, y.requires_grad, d.requires_grad, d.is_leaf, z.grad_fn is not None
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32) * (call + 1),)
'''

PROGRAMS["no_grad_decorator_nested"] = '''
import dynjit
@dynjit.no_grad()
def f(t):
    a = t * 2
    with dynjit.enable_grad():
        b = t * 3
    return a.requires_grad, b.requires_grad, dynjit.is_grad_enabled()
@dynjit.enable_grad()
def g(t):
    return (t * 2).requires_grad
def main(w):
    r = [f(w)]
    with dynjit.no_grad():
        r.append(g(w))
        r.append((w * 2).requires_grad)
        with dynjit.set_grad_enabled(True):
            r.append((w + 1).requires_grad)
    r.append(dynjit.is_grad_enabled())
    return r
def make_args(call):
    return (dynjit.ones(2, requires_grad=call != 1),)
'''

PROGRAMS["set_grad_enabled_function_form"] = '''
import dynjit
def main(w):
    prev = dynjit.is_grad_enabled()
    dynjit.set_grad_enabled(False)
    a = w * 2
    dynjit.set_grad_enabled(prev)
    b = w * 2
    return a.requires_grad, b.requires_grad
def make_args(call):
    return (dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["grad_mode_leaks_on_exception"] = '''
import dynjit
def main(w, fail):
    with dynjit.no_grad():
        y = w * 2
        if fail:
            raise ValueError("inside no_grad")
    return y
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call == 1
'''

PROGRAMS["rng_manual_seed_inside"] = '''
import dynjit
def main(x):
    a = dynjit.rand(3)
    dynjit.manual_seed(7)
    b = dynjit.randn(2, 2)
    c = dynjit.randint(0, 10, (4,))
    d = x + dynjit.rand_like(x)
    dynjit.manual_seed(7)
    e = dynjit.randn(2, 2)
    return a, b, c, d, e
def make_args(call):
    return (dynjit.ones(3 + (call == 2)),)
'''

PROGRAMS["rng_across_graph_break"] = '''
import dynjit
def main(x):
    a = x + dynjit.rand(x.shape[0])
    print("mid", a.shape)
    b = a * dynjit.randn(x.shape[0])
    p = dynjit.nn.functional.dropout(b, 0.5, training=True)
    return a, b, p
def make_args(call):
    return (dynjit.ones(4),)
'''

PROGRAMS["rng_python_random_module"] = '''
import random
import dynjit
R = random.Random(3)
def main(x):
    k = R.randint(1, 5)
    return x * k, R.random()
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["print_order_and_sep"] = '''
import dynjit
def main(x):
    print("start", x.shape, sep="|")
    y = x * 2
    print(y.sum().item(), end=";")
    print(f"{y[0].item():.1f}", "x", flush=True)
    for i in range(2):
        print(i, end=" ")
    print()
    return y
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32) + call,)
'''

PROGRAMS["print_tensor_directly"] = '''
import dynjit
def main(x):
    y = x + 1
    print(y)
    print([y, 2])
    return y
def make_args(call):
    return (dynjit.tensor([1.5, 2.25]) * (call + 1),)
'''

PROGRAMS["warnings_warn"] = '''
import warnings
import dynjit
def main(x):
    if x.sum() > 2:
        warnings.warn("large input", UserWarning)
    warnings.warn(f"shape {tuple(x.shape)}", DeprecationWarning)
    return x * 2
def make_args(call):
    return (dynjit.ones(2 + call),)
'''

PROGRAMS["item_tolist_python_arith"] = '''
import dynjit
def main(x):
    s = x.sum().item()
    L = x.tolist()
    n = int(x[0])
    f = float(x.max())
    b = bool(x[1] > 0)
    return s * 2, [v + 1 for v in L], n, f, b, x * s
def make_args(call):
    return (dynjit.tensor([1.5, -2.0, 3.0]) + call,)
'''

PROGRAMS["tensor_setitem_forms"] = '''
import dynjit
def main(x, idx):
    y = x.clone()
    y[idx] = 0
    y[y > 2] = -1
    y[..., 0] += 5
    y[[0, 1]] = y[[1, 0]]
    return y
def make_args(call):
    return dynjit.arange(6, dtype=dynjit.float32).reshape(3, 2) + call, call % 3
'''

PROGRAMS["dtype_promotion_and_int_tensors"] = '''
import dynjit
def main(i, f):
    a = i + 1
    b = i / 2
    c = i // 2
    d = i * 1.5
    e = f + i
    g = (i > 1).sum()
    h = i.float().mean()
    return a, b, c, d, e, g, h, a.dtype, b.dtype, c.dtype
def make_args(call):
    return dynjit.arange(4 + call), dynjit.ones(4 + call)
'''

PROGRAMS["out_of_bounds_index_error"] = '''
import dynjit
def main(x, k):
    try:
        return x[k]
    except IndexError as e:
        return "idx", str(e)
def make_args(call):
    return dynjit.ones(3), [1, 1, 5][call]
'''

PROGRAMS["tensor_bool_ambiguous"] = '''
import dynjit
def main(x):
    try:
        if x > 0:
            return "pos"
        return "nonpos"
    except RuntimeError as e:
        return "ambiguous", str(e)
def make_args(call):
    return (dynjit.ones(1 + call),)
'''

PROGRAMS["tensor_as_dict_key_and_identity"] = '''
import dynjit
def main(a, b):
    d = {a: "a", b: "b"}
    s = {id(a) == id(b), a is b}
    return d[a], len(d), s, [t is a for t in (a, b)]
def make_args(call):
    t = dynjit.ones(2)
    return (t, t) if call == 1 else (t, dynjit.ones(2))
'''

PROGRAMS["leaf_inplace_requires_grad_error"] = '''
import dynjit
def main(w):
    try:
        w.add_(1)
        return "no error"
    except RuntimeError as e:
        return str(e)
def make_args(call):
    return (dynjit.ones(2, requires_grad=call != 1),)
'''

PROGRAMS["retain_grad_and_hooks_on_tensor"] = '''
import dynjit
SEEN = []
def main(w):
    y = w * 2
    y.retain_grad()
    h = y.register_hook(lambda g: SEEN.append(g.sum().item()) or g * 3)
    y.sum().backward()
    h.remove()
    return w.grad, y.grad
def make_args(call):
    return (dynjit.ones(2, requires_grad=True) * 1,)
'''

PROGRAMS["returns_inputs_and_aliases"] = '''
import dynjit
def main(x, L, d):
    y = x
    y.add_(1)
    L.append(x)
    return x, y, L, d, d["t"], x.view(-1), [x, L]
def make_args(call):
    t = dynjit.ones(2) * call
    return t, [t], {"t": t}
'''

PROGRAMS["returns_input_after_break"] = '''
import dynjit
def main(x, o):
    print("break")
    o.t = x
    return o.t, o, x
class O:
    pass
def make_args(call):
    return dynjit.ones(2) * call, O()
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
