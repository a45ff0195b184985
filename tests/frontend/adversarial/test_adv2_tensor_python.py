"""Adversarial programs, round two: where tensors meet plain Python: Size
arithmetic and comparisons with tuples and lists, dtype objects as values,
Parameter types, tensor subclasses, attributes set on tensors, property
setters (requires_grad, grad, data), copy/deepcopy, results aliasing each
other in returned containers, lists of input tensors mutated in place."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["size_compares_and_arithmetic"] = '''
import dynjit
def main(x):
    s = x.shape
    r = (s == (2, 3), s == [2, 3], s != (2, 3), list(s) == [2, 3], s + (1,), type(s + (1,)).__name__,
         (1,) + s, type((1,) + s).__name__, s[1:], type(s[1:]).__name__, s * 2, type(s * 2).__name__, s.numel(),
         s.index(3) if 3 in s else -1, s.count(2), len(s), hash(s) == hash(tuple(s)), {s: 1}.get((2, 3)),
         dynjit.Size([2, 3]) == s, max(s), sorted(s), s < (3,), tuple(reversed(s)), isinstance(s, tuple))
    return r, x * s[0]
def make_args(call):
    return (dynjit.ones([2, 2, 4][call], 3),)
'''

PROGRAMS["dtype_objects_as_values"] = '''
import dynjit
def main(x, want):
    d = x.dtype
    table = {dynjit.float32: "f32", dynjit.float64: "f64", dynjit.int64: "i64"}
    r = (table.get(d), d is dynjit.float32, d == want, d.is_floating_point, d.itemsize, str(d), repr(d),
         d in (dynjit.float32, dynjit.float64), dynjit.promote_types(d, want) if hasattr(dynjit, "promote_types") else None,
         dynjit.result_type(x, 1.5) if hasattr(dynjit, "result_type") else None, x.to(want).dtype == want)
    return r, x.to(want) * 2
def make_args(call):
    return [dynjit.ones(2), dynjit.ones(2), dynjit.arange(2)][call], [dynjit.float64, dynjit.float64, dynjit.float32][call]
'''

PROGRAMS["parameter_types_and_arithmetic_results"] = '''
import dynjit
nn = dynjit.nn
def main(p, x):
    y = p * 2
    z = p.detach()
    q = p.data
    r = (type(p).__name__, type(y).__name__, type(z).__name__, type(q).__name__, isinstance(p, dynjit.Tensor),
         isinstance(y, nn.Parameter), p.is_leaf, y.is_leaf, p.requires_grad, type(p.clone()).__name__,
         type(p[0]).__name__, type(p.view(-1)).__name__)
    return r, y + x
def make_args(call):
    return nn.Parameter(dynjit.ones(2) * (call + 1)), dynjit.ones(2)
'''

PROGRAMS["tensor_subclass_methods_and_results"] = '''
import dynjit
class Tagged(dynjit.Tensor):
    def describe(self):
        return "tagged%d" % self.dim()
def main(x, k):
    t = x.as_subclass(Tagged) if hasattr(x, "as_subclass") else x
    y = t * k
    return type(t).__name__, type(y).__name__, t.describe() if isinstance(t, Tagged) else None, y
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["python_attribute_set_on_input_tensor"] = '''
import dynjit
def main(x, k):
    x.tag = k
    x.meta = {"scale": k}
    y = x * x.tag
    y.note = "made inside"
    return y, y.note, x.tag, getattr(x, "missing", "none"), hasattr(y, "tag")
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["python_attribute_read_from_input_tensor_changes"] = '''
import dynjit
def main(x):
    k = getattr(x, "scale", 1)
    return x * k
def make_args(call):
    t = dynjit.ones(2)
    if call >= 1:
        t.scale = call + 1
    return (t,)
'''

PROGRAMS["requires_grad_and_grad_setters_on_inputs"] = '''
import dynjit
def main(x, g):
    x.requires_grad = True
    y = (x * 3).sum()
    y.backward()
    first = x.grad.clone()
    x.grad = g
    (x * 2).sum().backward()
    return first, x.grad, x.grad is g, g
def make_args(call):
    return dynjit.ones(2) * call, dynjit.full((2,), 10.0)
'''

PROGRAMS["copy_and_deepcopy_tensors_with_grad"] = '''
import copy
import dynjit
def main(w, x):
    a = copy.copy(x)
    b = copy.deepcopy(w)
    c = copy.deepcopy([w, w])
    d = copy.deepcopy({"t": x, "again": x})
    x.add_(1)
    return (a is x, b is w, b.requires_grad, b.is_leaf, c[0] is c[1], d["t"] is d["again"], a, b, d["t"])
def make_args(call):
    return dynjit.ones(2, requires_grad=True), dynjit.zeros(2) + call
'''

PROGRAMS["returned_containers_alias_same_tensor"] = '''
import dynjit
def main(x):
    y = x * 2
    v = y.view(-1)
    return {"a": y, "b": y, "v": v}, [y, y], (v, y), y
def make_args(call):
    return (dynjit.ones(2, 2) * call,)
'''

PROGRAMS["returned_view_of_input_then_caller_mutates"] = '''
import dynjit
def main(x):
    return x[0], x.view(-1), x.t(), x.detach(), x.expand(2, 2, 2)
def make_args(call):
    return (dynjit.arange(4, dtype=dynjit.float32).reshape(2, 2) * (call + 1),)
'''

PROGRAMS["input_list_of_tensors_mutated_in_place"] = '''
import dynjit
def main(ts, k):
    ts[0] = ts[0] * k
    ts.append(ts[-1] + 1)
    ts.reverse()
    ts[1].mul_(2)
    ts.sort(key=lambda t: t.sum().item()) if False else None
    del ts[-1]
    return len(ts), ts
def make_args(call):
    return [dynjit.ones(2), dynjit.ones(2) * 2, dynjit.ones(2) * 3][: 2 + call % 2], call + 1
'''

PROGRAMS["same_tensor_in_tuple_and_dict_args"] = '''
import dynjit
def main(pair, d):
    a, b = pair
    a.add_(1)
    d["x"].mul_(2)
    return a is b, d["x"] is a, pair, d
def make_args(call):
    t = dynjit.ones(2) * call
    u = dynjit.ones(2)
    return (t, t) if call != 2 else (t, u), {"x": t}
'''

PROGRAMS["tensor_constructors_from_python_data"] = '''
import dynjit
def main(x, vals):
    a = dynjit.tensor(vals)
    b = dynjit.tensor([x.sum(), x.max()])
    c = dynjit.tensor([[1, 2], [3, 4]], dtype=dynjit.float64)
    d = dynjit.as_tensor(vals, dtype=dynjit.float32)
    e = x.new_tensor(vals)
    f = x.new_ones((2, len(vals)))
    g = dynjit.full((2,), len(vals))
    h = dynjit.arange(len(vals)) * 1.5
    i = dynjit.tensor(True)
    return [(t, str(t.dtype)) for t in (a, b, c, d, e, f, g, h, i)]
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32), [[1, 2], [1, 2], [1.5, 2, 3]][call]
'''

PROGRAMS["scalars_from_item_in_python_containers"] = '''
import math
import dynjit
def main(x):
    vals = {round(v, 2): i for i, v in enumerate(x.tolist())}
    m = x.mean().item()
    flags = [math.isnan(m), math.isfinite(m), m == int(m), f"{m:.3g}", str(round(m, 1)), int(m) // 2]
    best = max(vals)
    return vals, flags, best, x * best
def make_args(call):
    return (dynjit.tensor([[0.123, 1.5, 2.0], [0.123, 1.5, 2.0], [4.0, 4.0, 1.0]][call]),)
'''

PROGRAMS["tensor_bool_conversions_and_errors"] = '''
import dynjit
def main(x, mode):
    r = [bool(x[0]), bool(x.sum() > 0), (x > 0).all().item(), not x[0]]
    if mode == 1:
        r.append(bool(x))
    if mode == 2:
        r.append(x and 1)
    return r
def make_args(call):
    return dynjit.tensor([1.0, -1.0]), call
'''

PROGRAMS["sum_and_builtins_over_tensor_lists"] = '''
import dynjit
def main(ts):
    r = (sum(ts), sum(ts, dynjit.zeros(2)), len(ts), [t.sum() for t in ts], sorted(ts, key=lambda t: t.sum().item()),
         list(map(dynjit.neg, ts)), list(zip(ts, range(3))), any(t.sum() > 3 for t in ts), dynjit.stack(ts).max(0).values)
    return r
def make_args(call):
    return ([dynjit.ones(2) * i for i in [3, 1, 2, 5][: 3 + call % 2]],)
'''

PROGRAMS["numel_zero_dim_and_shapes_in_python_logic"] = '''
import dynjit
def main(x):
    out = []
    if x.dim() == 1:
        out.append("vector")
    elif x.dim() == 0:
        out.append("scalar")
    if x.numel() > 2:
        out.append("big")
    n = x.shape[0] if x.dim() else 1
    for i in range(n):
        out.append(i)
    return out, x.reshape(-1) * n
def make_args(call):
    return ([dynjit.ones(3), dynjit.ones(3), dynjit.tensor(2.0), dynjit.ones(2, 2)][call],)
'''

PROGRAMS["tensor_methods_via_getattr_and_strings"] = '''
import dynjit
def main(x, ops):
    r = x
    for op in ops:
        r = getattr(r, op)()
    meth = getattr(dynjit, "mul")
    return r, meth(x, 2), getattr(x, "T"), hasattr(x, "nonexistent_method"), callable(getattr(x, "sum"))
def make_args(call):
    return dynjit.tensor([[1.0, -2.0], [3.0, -4.0]]), [["abs", "sqrt"], ["abs", "sqrt"], ["neg", "exp", "log"]][call]
'''

XFAIL = {}

CALLS = {"numel_zero_dim_and_shapes_in_python_logic": 4}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
