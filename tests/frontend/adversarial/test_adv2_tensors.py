"""Adversarial programs, round two: tensor identity and metadata the tracer must
reproduce exactly: methods that return self (`is` checks), the version counter,
grad_fn names and next_functions, is_leaf/requires_grad of results, .data
writes, in-place ops on views and aliases (including metadata in-place ops),
__setitem__ with every index kind, tensors as dict keys and set members,
Python scalars from .item()/.tolist() in control flow, and the random streams."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["methods_returning_self_identity"] = '''
import dynjit
def main(x):
    r = (x.to(x.dtype) is x, x.contiguous() is x, x.float() is x, x.type_as(x) is x, x.requires_grad_(False) is x,
         x.add_(0) is x, x.detach() is x, x.view_as(x) is x, x.clone() is x, x[...] is x, x.reshape(x.shape) is x,
         x.to(dynjit.float32) is x, x.cpu() is x, x.double() is x)
    return r, x
def make_args(call):
    return (dynjit.ones(2, 3) * call,)
'''

PROGRAMS["inplace_chain_returns_same_object"] = '''
import dynjit
def main(x):
    y = x.mul_(2).add_(1).clamp_(max=4)
    z = y.t_() if x.dim() == 2 else y
    return y is x, z is x, x.shape, x
def make_args(call):
    return ([dynjit.ones(2, 3), dynjit.ones(2, 3), dynjit.ones(4)][call].clone(),)
'''

PROGRAMS["version_counter_after_inplace"] = '''
import dynjit
def main(x):
    v0 = x._version
    x.add_(1)
    x.mul_(2)
    v = x.view(-1)
    v[0] = 5
    y = x * 2
    y.sub_(1)
    return x._version - v0, v._version - v0, y._version, y
def make_args(call):
    return (dynjit.ones(2, 2) * call,)
'''

PROGRAMS["grad_fn_names_and_next_functions"] = '''
import dynjit
def main(x, w):
    y = x * w
    z = y.sum()
    names = [type(t.grad_fn).__name__ if t.grad_fn is not None else None for t in (x, y, z, x.detach(), y[0])]
    nxt = [type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions]
    return names, nxt, y.is_leaf, z.requires_grad, x.is_leaf
def make_args(call):
    return dynjit.ones(3) * call, dynjit.ones(3, requires_grad=True)
'''

PROGRAMS["grad_fn_under_no_grad_and_requires_grad_flags"] = '''
import dynjit
def main(x, w):
    with dynjit.no_grad():
        a = x * w
    b = x * w
    c = a * w
    d = w.detach().requires_grad_()
    e = d * 2
    return (a.requires_grad, a.grad_fn is None, a.is_leaf, b.requires_grad, c.requires_grad, d.is_leaf,
            d.requires_grad, e.is_leaf, e.grad_fn is None, c)
def make_args(call):
    return dynjit.ones(3) * call, dynjit.ones(3, requires_grad=call != 2)
'''

PROGRAMS["data_attribute_write_and_mutation"] = '''
import dynjit
def main(w, g):
    before = w.data
    w.data.mul_(2)
    w.data = w.data + g
    w.data[0] = -1
    d = w.data
    return w, before, d is w.data, w.requires_grad, w.is_leaf, w._version
def make_args(call):
    return dynjit.ones(3, requires_grad=True), dynjit.arange(3, dtype=dynjit.float32) * call
'''

PROGRAMS["inplace_on_view_mutates_base_and_grad"] = '''
import dynjit
def main(w):
    x = w * 1
    v = x[1:]
    v.mul_(3)
    x[0].add_(10)
    col = x.view(2, -1)[:, 0]
    col.fill_(7)
    loss = (x * x).sum()
    loss.backward()
    return x, w.grad
def make_args(call):
    return (dynjit.arange(4 + 2 * (call // 2), dtype=dynjit.float32).requires_grad_(),)
'''

PROGRAMS["metadata_inplace_ops_on_input"] = '''
import dynjit
def main(x):
    x.unsqueeze_(0)
    s1 = tuple(x.shape)
    x.transpose_(0, 1)
    s2 = tuple(x.shape)
    x.squeeze_()
    x.t_() if x.dim() == 2 else None
    return s1, s2, tuple(x.shape), x.is_contiguous(), x * 1
def make_args(call):
    return (dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) * (call + 1),)
'''

PROGRAMS["view_alias_of_input_mutated_then_base_read"] = '''
import dynjit
def main(x, y):
    a = x.view(-1)
    b = x.t()
    a[::2] = 0
    b[0].mul_(10)
    y.copy_(b[0])
    s = x.sum()
    x.set_(x.clone()) if False else None
    return s, x, y, a.storage_offset(), b.stride()
def make_args(call):
    return dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) + call, dynjit.zeros(2)
'''

PROGRAMS["setitem_every_index_kind"] = '''
import dynjit
def main(x):
    x[0] = 1
    x[-1, 1:] = dynjit.tensor([5.0, 6.0, 7.0])
    x[..., 0] = -1
    x[:, None, 2] = 9
    x[x > 8] = 8
    x[dynjit.tensor([1, 2]), 1] = dynjit.tensor([30.0, 40.0])
    x[[0, 0], [3, 3]] = 2
    x[1:3, ::2] *= 2
    x[dynjit.tensor([True, False, True])] += 0.5
    x[(1, slice(None))] = x[2]
    return x
def make_args(call):
    return (dynjit.arange(12, dtype=dynjit.float32).reshape(3, 4) * (call + 1),)
'''

PROGRAMS["setitem_with_grad_and_broadcast"] = '''
import dynjit
def main(w, k):
    x = dynjit.zeros(3, 4)
    x[1] = w
    x[:, k] = w[:3] * 2
    x[0, 0] = w.sum()
    loss = (x ** 2).sum()
    loss.backward()
    return x, w.grad, x.requires_grad
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32).requires_grad_(), [0, 0, 3][call]
'''

PROGRAMS["setitem_out_of_range_and_shape_mismatch"] = '''
import dynjit
def main(x, k):
    x[k] = 1
    return x
def make_args(call):
    return dynjit.zeros(3), [0, 1, 5][call]
'''

PROGRAMS["tensors_as_dict_keys_and_set_members"] = '''
import dynjit
def main(a, b):
    d = {a: "a", b: "b"}
    d[a] = "A"
    s = {a, b, a}
    y = a * 1
    r = (d[a], len(d), len(s), a in s, y in s, b in d, list(d.values()))
    d2 = {t: i for i, t in enumerate([a, b, y])}
    return r, [d2[t] for t in (y, a, b)]
def make_args(call):
    return dynjit.ones(2) * call, dynjit.ones(2)
'''

PROGRAMS["tensor_lookup_in_dict_with_colliding_int_key"] = '''
import dynjit
def main(a, k):
    d = {id(a) if k else 0: "int key"}
    return a in d, a * 2
def make_args(call):
    return dynjit.ones(2), call % 2
'''

PROGRAMS["tensor_in_list_uses_eq"] = '''
import dynjit
def main(a, lst):
    return lst.index(a) if any(t is a for t in lst) else -1, a in [a], lst.count(a) if len(lst) < 2 else "skip"
def make_args(call):
    a = dynjit.ones(1) * call
    return a, [[a], [a], [dynjit.ones(1), a]][call]
'''

PROGRAMS["item_and_tolist_drive_control_flow"] = '''
import dynjit
def main(x):
    vals = x.tolist()
    out = x
    for i, v in enumerate(vals):
        if v > 1.5:
            out = out + i
        elif v < 0:
            out = out * v
    m = x.max().item()
    k = int(x.argmax())
    steps = 0
    while m > 0.1:
        m /= 3
        steps += 1
    return out, steps, k, type(vals[0]).__name__, type(m).__name__
def make_args(call):
    return (dynjit.tensor([[1.0, 2.0, -0.5], [1.0, 2.0, -0.5], [3.0, 0.2, 9.0]][call]),)
'''

PROGRAMS["int_tensor_item_types_and_bool"] = '''
import dynjit
def main(x):
    i = x.sum().item()
    b = (x > 1).any().item()
    f = x.float().mean().item()
    n = x.numel()
    r = [type(i).__name__, type(b).__name__, type(f).__name__, i, b, f, n, x.tolist(), x[0].item() + 1,
         bool(x[0]), int(x[-1]), float(x.sum()), [1, 2, 3][x[0]] if x[0] < 3 else None]
    return r
def make_args(call):
    return (dynjit.tensor([[0, 2], [0, 2], [1, 5, 7]][call]),)
'''

PROGRAMS["manual_seed_inside_and_streams"] = '''
import dynjit
def main(x, seed):
    a = dynjit.rand(2)
    dynjit.manual_seed(seed)
    b = dynjit.rand(2)
    dynjit.manual_seed(seed)
    c = dynjit.rand(2)
    d = dynjit.randn(3) * x.sum()
    g = dynjit.Generator().manual_seed(seed + 1)
    e = dynjit.rand(2, generator=g)
    f = dynjit.randint(0, 10, (3,))
    return a, b, c, d, e, f, (b == c).all()
def make_args(call):
    return dynjit.ones(2), [3, 3, 4][call]
'''

PROGRAMS["rng_state_save_restore_inside"] = '''
import dynjit
def main(x):
    st = dynjit.get_rng_state()
    a = dynjit.rand(3)
    dynjit.set_rng_state(st)
    b = dynjit.rand(3)
    y = dynjit.nn.functional.dropout(x, 0.5, training=True)
    return a, b, y
def make_args(call):
    return (dynjit.ones(4) * (call + 1),)
'''

PROGRAMS["random_and_numpy_random_modules"] = '''
import random
import numpy as np
import dynjit
def main(x, seed):
    random.seed(seed)
    a = random.random()
    b = random.randint(0, 100)
    c = random.choice("abcdef")
    lst = [1, 2, 3, 4]
    random.shuffle(lst)
    np.random.seed(seed)
    d = np.random.rand(2)
    e = np.random.randint(0, 5, size=3)
    rng = np.random.default_rng(seed)
    f = rng.normal(size=2)
    return x * a + b, c, lst, d, e, f, dynjit.from_numpy(d).float() + x
def make_args(call):
    return dynjit.ones(2), [1, 1, 2][call]
'''

PROGRAMS["global_python_random_unseeded_advances"] = '''
import random
import dynjit
R = random.Random(7)
def main(x):
    a = R.random()
    b = R.gauss(0, 1)
    return x * a + b, R.getstate()[1][:3]
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["rand_like_and_normal_inplace"] = '''
import dynjit
def main(x):
    a = dynjit.rand_like(x)
    b = dynjit.empty_like(x).normal_(0, 1)
    c = x.clone().uniform_(-1, 1)
    d = dynjit.bernoulli(dynjit.full_like(x, 0.5))
    e = dynjit.multinomial(dynjit.tensor([0.1, 0.2, 0.7]), 4, replacement=True)
    f = dynjit.randperm(5)
    return a, b, c, d, e, f
def make_args(call):
    return (dynjit.ones(3) * call,)
'''

PROGRAMS["tensor_python_number_interop"] = '''
import dynjit
def main(x, n):
    r = [x + n, n - x, n / x, n // (x + 1), n ** (x / 4), (x / 4) ** n, n % (x + 2), -x, +x, abs(-x), x * True,
         x + 2 ** 40, (x > n) + 0, ~(x > 0), (x > 0) & True, 1 - (x > 0).float()]
    return r
def make_args(call):
    return dynjit.tensor([1.0, 2.0, 3.0]) * (call + 1), [2, 2, 3.5][call]
'''

PROGRAMS["int_tensor_true_div_and_floor_div"] = '''
import dynjit
def main(a, b):
    return a / b, a // b, a % b, dynjit.div(a, b, rounding_mode="trunc"), dynjit.fmod(a, b), (a / 2).dtype, (a // 2).dtype, (a * 1.5).dtype
def make_args(call):
    return dynjit.tensor([7, -7, 5, -5]) * (call + 1), dynjit.tensor([2, 2, -3, -3])
'''

PROGRAMS["dtype_promotion_with_python_scalars"] = '''
import dynjit
def main(x, s):
    r = [(x + s).dtype, (x * True).dtype, (x + 1.5).dtype, (x.half() + 1.0).dtype if False else None,
         (x.bool() + 1).dtype, (x.int() / 2).dtype, (x.int() + dynjit.tensor(1.5)).dtype,
         (x.float() + dynjit.tensor(2, dtype=dynjit.float64)).dtype, (x.int() + dynjit.tensor([2.0])).dtype]
    return [str(d) for d in r], x + s
def make_args(call):
    return dynjit.tensor([1, 2], dtype=[dynjit.int64, dynjit.int64, dynjit.float32][call]), [1, 1, 2.5][call]
'''

PROGRAMS["tensor_attribute_reads_shape_stride_device"] = '''
import dynjit
def main(x):
    y = x.t()
    return (x.shape, x.size(), x.size(-1), x.stride(), y.stride(), y.is_contiguous(), x.ndim, x.dim(), x.numel(),
            str(x.dtype), x.dtype.is_floating_point, x.element_size(), str(x.device), x.device.type, len(x),
            x.nelement(), x.is_floating_point(), x.dtype == dynjit.float32, x.shape[::-1], list(x.shape) + [1])
def make_args(call):
    return ([dynjit.ones(2, 3), dynjit.ones(2, 3), dynjit.ones(4, 1, dtype=dynjit.float64)][call],)
'''

PROGRAMS["tensor_iteration_unpack_and_zip"] = '''
import dynjit
def main(x):
    a, b = x
    rows = [r * i for i, r in enumerate(x)]
    pairs = list(zip(x, x.flip(0)))
    m = max(x[0])
    s = sum(x)
    return a, b, rows, [p[0] + p[1] for p in pairs], m, s, [float(v) for v in x[1]]
def make_args(call):
    return (dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) * (call + 1),)
'''

PROGRAMS["tensor_unpack_wrong_length"] = '''
import dynjit
def main(x):
    a, b = x
    return a + b
def make_args(call):
    return (dynjit.ones([2, 2, 3][call], 2),)
'''

PROGRAMS["out_argument_and_inplace_overlap"] = '''
import dynjit
def main(a, b):
    out = dynjit.empty(3)
    r = dynjit.add(a, b, out=out)
    dynjit.mul(a, 2, out=a)
    dynjit.add(a, a, out=a)
    return r is out, out, a, a._version
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32) + call, dynjit.ones(3)
'''

PROGRAMS["zero_size_and_scalar_tensors"] = '''
import dynjit
def main(x):
    e = x[x > 100]
    s = x.sum()
    z = dynjit.zeros(0, 3)
    return (e, e.shape, e.sum(), e.numel(), s.dim(), s.shape, s + 1, z.sum(0), z.sum(1),
            dynjit.cat([e, x]), len(e), bool(e.numel()), x[0:0], x.new_zeros(0))
def make_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32) * (call + 1),)
'''

PROGRAMS["tensor_repr_str_and_print"] = '''
import dynjit
def main(x):
    print(x)
    print("val:", x.sum(), repr(x.shape), x.dtype)
    s = str(x)
    r = repr(x * 2)
    return s, r, f"{x.shape}", str(x.shape), repr(x.dtype)
def make_args(call):
    return (dynjit.tensor([1.5, -2.0]) * (call + 1),)
'''

PROGRAMS["numpy_interop_shared_memory"] = '''
import numpy as np
import dynjit
def main(x):
    a = x.numpy()
    a[0] = 100.0
    t = dynjit.from_numpy(np.array([1.0, 2.0], dtype=np.float32))
    b = dynjit.as_tensor(a)
    b[1] = -5
    c = np.asarray(x) * 2
    return x, a, t + x[:2], b is x, c, x.sum()
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32) + call,)
'''

PROGRAMS["clone_detach_requires_grad_chain"] = '''
import dynjit
def main(w):
    a = w.clone()
    b = w.detach().clone().requires_grad_()
    c = a.detach()
    c.add_(100)
    a.retain_grad()
    loss = (a * b).sum()
    loss.backward()
    return a.grad, b.grad, w.grad, c, w, a.is_leaf, b.is_leaf
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32).requires_grad_() if call < 2 else dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["grad_attribute_written_and_read"] = '''
import dynjit
def main(w):
    (w * 3).sum().backward()
    g1 = w.grad.clone()
    w.grad.zero_()
    (w ** 2).sum().backward()
    g2 = w.grad
    w.grad = None
    (w * 1).sum().backward()
    w.grad *= 2
    return g1, g2, w.grad, g2 is w.grad
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32).requires_grad_(),)
'''

PROGRAMS["expand_and_broadcast_write_error"] = '''
import dynjit
def main(x):
    e = x.expand(3, 2)
    s = e.sum(0)
    e2 = e.clone()
    e2[0, 0] = 9
    e.add_(1)
    return s, e2
def make_args(call):
    return (dynjit.ones(1, 2) * call,)
'''

PROGRAMS["grad_fn_name_of_inplace_result"] = '''
import dynjit
def main(w):
    x = w * 1
    x[0] = 5
    y = w * 2
    y.mul_(3)
    return type(x.grad_fn).__name__, type(y.grad_fn).__name__
def make_args(call):
    return (dynjit.ones(2 + call, requires_grad=True),)
'''

PROGRAMS["inplace_on_leaf_made_inside_raises"] = '''
import dynjit
def main(x, k):
    w = dynjit.ones(2, requires_grad=True)
    if k:
        w.add_(1)
    return w * x
def make_args(call):
    return dynjit.ones(2), call % 2
'''

PROGRAMS["numpy_of_tensor_requiring_grad_made_inside_raises"] = '''
import dynjit
def main(x, k):
    w = dynjit.ones(2, requires_grad=True) * x
    if k:
        return w.numpy()
    return w.detach().numpy()
def make_args(call):
    return dynjit.ones(2), call % 2
'''

XFAIL = {
    "grad_fn_names_and_next_functions": ("frontend/aot_eager,llvm on 3.11: the list comprehension is a function "
                                         "there, so reading grad_fn inside it breaks at its call and y, z come "
                                         "out of an AOT graph with grad_fn CompiledFunctionBackward, not "
                                         "MulBackward0/SumBackward0 (findings R2-T5); on 3.12+ the comprehension "
                                         "is inlined and the frame runs plain", sys.version_info < (3, 12)),
    "tensor_lookup_in_dict_with_colliding_int_key": "frontend: a tensor looked up in a dict whose int key has its hash "
                                                    "(id) is not compared with __eq__ (plain raises) (findings R2-T6)",
    "version_counter_after_inplace": "frontend/aot_eager: an input's _version counts 1 for several in-place ops "
                                     "(findings R2-T4)",
    "grad_fn_name_of_inplace_result": "frontend/aot_eager,llvm: grad_fn of a graph output is CompiledFunctionBackward, "
                                      "not CopySlices/MulBackward0 (findings R2-T5)",
}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
