"""Adversarial programs, round two: statement forms whose bytecode differs most
between 3.11, 3.12 and 3.13 (swaps and rotations, slice assignment and
augmented slices, walrus in comprehensions, CALL_FUNCTION_EX mixes, f-strings
with nested specs and conversions, nested unpacking, chained comparisons,
for/while-else with break/continue, try/else/finally without a raise, with over
several context managers, del of several targets, imports and annotations in a
function body, classes with __slots__ made in the body)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["form_swap_items"] = '''
import dynjit
def main(x):
    a = [x, x * 2, x * 3]
    a[0], a[2] = a[2], a[0]
    i, j = 1, 2
    a[i], a[j] = a[j], a[i]
    return a
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_rotate3"] = '''
import dynjit
def main(x):
    p, q, r = x, x + 1, x + 2
    p, q, r = q, r, p
    return p, q, r
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_slice_aug"] = '''
import dynjit
def main(x):
    a = [1, 2, 3, 4]
    a[1:3] += [9]
    a[::2] = ['a', 'b'] if len(a[::2]) == 2 else a[::2]
    return a, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_slice_aug_tensor"] = '''
import dynjit
def main(x):
    y = x.clone()
    y[1:3] += 1
    y[::2] *= 2
    return y
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_nested_slices"] = '''
import dynjit
def main(x):
    a = list(range(10))
    b = a[1:-1][::2][1:]
    a[2:4] = a[6:8]
    del a[-3:]
    return a, b, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_walrus_chain"] = '''
import dynjit
def main(x):
    r = [(n, m) for v in range(5) if (n := v * 2) > 2 and (m := n + 1) < 9]
    return r, n, x * n
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_call_ex_mix"] = '''
import dynjit
def main(x):
    def g(*a, **k):
        return a, sorted(k)
    args = [x, 1]
    kw = {'z': 2}
    return g(*args, 3, *[4], q=1, **kw, w=0)
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_print_sep_end"] = '''
import dynjit
def main(x):
    print(x.shape, 1, 'a', sep='|', end='!\\n')
    print(*[1, 2], sep='')
    return x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_fstring_mix"] = '''
import dynjit
def main(x):
    n = 3
    f = 2.5
    s = 'ab'
    return f'{n!r:>4}|{f:{n}.{n-1}f}|{s!a}|{s=}|{n+1=:03}|{x.shape!s}|{{lit}}'
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_cond_in_kwargs"] = '''
import dynjit
def main(x):
    return dynjit.clamp(x, min=(0 if x.sum() > 0 else -1) if False else 0.5, max=2.0 if x.dim() else 1.0)
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_bool_ops_values"] = '''
import dynjit
def main(x):
    a = x.dim() and x.shape[0] or -1
    b = (None or 0) or [] or 'last'
    c = 1 and 0 and 2
    return a, b, c
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_nested_comp_closures"] = '''
import dynjit
def main(x):
    return [[lambda v=v, w=w: v * w for w in range(2)][1]() for v in range(3)], x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_dict_comp_cond"] = '''
import dynjit
def main(x):
    return {k: v for k, v in zip('abc', range(3)) if v != 1 for _ in range(1)}, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_unpack_nested"] = '''
import dynjit
def main(x):
    (a, (b, *c), d), e = (1, (2, 3, 4), 5), 6
    return a, b, c, d, e, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_unpack_dict_keys"] = '''
import dynjit
def main(x):
    a, b = {'p': 1, 'q': 2}
    (k, v), = {'z': 9}.items()
    return a, b, k, v, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_star_in_tuple_return"] = '''
import dynjit
def main(x):
    a = [1, 2]
    return (*a, x, *a[::-1])
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_aug_attr_chain"] = '''
import dynjit
def main(x):
    class O:
        pass
    o = O()
    o.a = O()
    o.a.v = 1
    o.a.v += 2
    o.a.v *= x.shape[0]
    return o.a.v, vars(o.a)
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_aug_subscr_chain"] = '''
import dynjit
def main(x):
    d = {'k': [1, 2]}
    d['k'][0] += 5
    d['k'][-1] *= 3
    return d, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_is_not_in_chain"] = '''
import dynjit
def main(x):
    a = [1]
    return (a is not None) is True, 1 not in a, (2 not in a) == True, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_compare_chain_tensor"] = '''
import dynjit
def main(x):
    return (0 < x.shape[0] <= 5 != 3), x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_lambda_kwonly_default"] = '''
import dynjit
def main(x):
    f = lambda *, k=2, **kw: (k, kw)
    return f(), f(k=3, z=1), x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_global_nonlocal_mix"] = '''
import dynjit
def main(x):
    def outer():
        v = 1
        def inner():
            nonlocal v
            v += 1
            return v
        return inner() + inner()
    return outer(), x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_try_else_finally_no_raise"] = '''
import dynjit
def main(x):
    r = []
    try:
        r.append(1)
    except ValueError:
        r.append(2)
    else:
        r.append(3)
    finally:
        r.append(4)
    return r, x * len(r)
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_with_multiple_items"] = '''
import dynjit
def main(x):
    with dynjit.no_grad(), dynjit.enable_grad():
        y = x * 2
    return y.requires_grad
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_for_else_break_nested"] = '''
import dynjit
def main(x):
    out = []
    for i in range(3):
        for j in range(3):
            if i * j == 2:
                break
        else:
            out.append(i)
            continue
        out.append(-i)
    return out, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_while_with_continue_and_else"] = '''
import dynjit
def main(x):
    i = 0; s = 0
    while i < 6:
        i += 1
        if i % 2:
            continue
        s += i
    else:
        s = -s
    return s, x * s
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_assert_pass"] = '''
import dynjit
def main(x):
    assert x.dim() == 1, 'msg'
    return x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_del_multiple"] = '''
import dynjit
def main(x):
    a = 1
    b = [1, 2, 3]
    c = {'k': 1}
    del a, b[0], c['k']
    return b, c, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_conditional_import"] = '''
import dynjit
def main(x):
    import math as m
    from math import floor as fl
    return m.pi > 3, fl(2.5), x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_annotations_in_body"] = '''
import dynjit
def main(x):
    y: int = 3
    z: 'str'
    return y, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

PROGRAMS["form_class_in_function_with_slots"] = '''
import dynjit
def main(x):
    class P:
        __slots__ = ('a',)
        def __init__(self): self.a = 1
    return P().a, x
def make_args(call):
    return (dynjit.ones(2 + call % 2) * (call + 1),)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
