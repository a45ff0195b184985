"""Adversarial programs, round two: autograd inside compiled code: custom
autograd.Function (save_for_backward, mark_dirty, mark_non_differentiable,
needs_input_grad, set_materialize_grads, once_differentiable, non-tensor
outputs), dynjit.autograd.grad with create_graph, tensor hooks, backward
inside compiled code, grad-mode contexts used as decorators and objects
(no_grad, enable_grad, set_grad_enabled, inference_mode), and autocast."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["function_save_for_backward_needs_input_grad"] = '''
import dynjit
LOG = []
class MulAdd(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        return a * b + k
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        LOG.append(tuple(ctx.needs_input_grad))
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb, None
def main(a, b, k):
    y = MulAdd.apply(a, b, k)
    y.sum().backward()
    return y, a.grad, b.grad, y.requires_grad
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32).requires_grad_(), dynjit.ones(3, requires_grad=call != 1),
            float(call))
'''

PROGRAMS["function_mark_dirty_inplace"] = '''
import dynjit
class AddOneInplace(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x
    @staticmethod
    def backward(ctx, g):
        return g
def main(w):
    x = w * 2
    y = AddOneInplace.apply(x)
    (y * y).sum().backward()
    return y is x, y, w.grad, x._version > 0
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32).requires_grad_(),)
'''

PROGRAMS["function_non_differentiable_output_and_materialize"] = '''
import dynjit
SEEN = []
class SortWithIdx(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.set_materialize_grads(False)
        return vals, idx
    @staticmethod
    def backward(ctx, gv, gi):
        SEEN.append((gv is None, gi is None))
        (idx,) = ctx.saved_tensors
        g = dynjit.zeros_like(gv)
        g[idx] = gv
        return g
def main(x):
    vals, idx = SortWithIdx.apply(x)
    (vals * dynjit.arange(vals.shape[0], dtype=dynjit.float32)).sum().backward()
    return vals, idx, idx.requires_grad, x.grad
def make_args(call):
    return (dynjit.tensor([[3.0, 1.0, 2.0], [3.0, 1.0, 2.0], [0.5, -1.0, 4.0, 2.0]][call], requires_grad=True),)
'''

PROGRAMS["function_once_differentiable_and_python_outputs"] = '''
import dynjit
from dynjit.autograd.function import once_differentiable
class Clip(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mask = (x >= ctx.lo) & (x <= ctx.hi)
        return g * mask, None, None
def main(x, hi):
    y = Clip.apply(x, -1.0, hi)
    y.sum().backward()
    return y, x.grad
def make_args(call):
    return dynjit.tensor([-2.0, 0.0, 0.5, 3.0], requires_grad=True), [1.0, 1.0, 5.0][call]
'''

PROGRAMS["function_setup_context_style"] = '''
import dynjit
class Square(dynjit.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * x * k
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * ctx.k, None
def main(x, k):
    y = Square.apply(x, k)
    g, = dynjit.autograd.grad(y.sum(), x)
    return y, g
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32).requires_grad_(), call + 1
'''

PROGRAMS["function_backward_wrong_count_error"] = '''
import dynjit
class Bad(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b
    @staticmethod
    def backward(ctx, g):
        return g
def main(a, b):
    y = Bad.apply(a, b)
    y.sum().backward()
    return a.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True), dynjit.ones(2, requires_grad=True)
'''

PROGRAMS["autograd_grad_create_graph_second_order"] = '''
import dynjit
def main(x):
    y = (x ** 3).sum()
    g, = dynjit.autograd.grad(y, x, create_graph=True)
    h, = dynjit.autograd.grad(g.sum(), x)
    return g, h, g.requires_grad, h.requires_grad, x.grad
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32).requires_grad_() * 1 + call,)
'''

PROGRAMS["autograd_grad_allow_unused_and_retain_graph"] = '''
import dynjit
def main(a, b):
    y = (a * 2).sum()
    ga, gb = dynjit.autograd.grad(y, [a, b], allow_unused=True, retain_graph=True)
    ga2, = dynjit.autograd.grad(y, a)
    return ga, gb, ga2, a.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True), dynjit.ones(3, requires_grad=True)
'''

PROGRAMS["backward_twice_without_retain_raises"] = '''
import dynjit
def main(a, retain):
    y = (a * a).sum()
    y.backward(retain_graph=retain)
    y.backward()
    return a.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True), [True, True, False][call]
'''

PROGRAMS["tensor_hook_modifies_grad_and_counts"] = '''
import dynjit
LOG = []
def main(w, k):
    y = w * 2
    h1 = y.register_hook(lambda g: g * k)
    h2 = w.register_hook(lambda g: LOG.append(g.sum().item()))
    (y * y).sum().backward()
    h1.remove()
    h2.remove()
    (w * 1).sum().backward()
    return w.grad, len(LOG)
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call + 1
'''

PROGRAMS["post_accumulate_grad_hook_and_retain_grad"] = '''
import dynjit
SEEN = []
def main(w):
    w.register_post_accumulate_grad_hook(lambda p: SEEN.append(p.grad.clone()))
    y = w.exp()
    y.retain_grad()
    y.sum().backward()
    return y.grad, w.grad, len(SEEN)
def make_args(call):
    return (dynjit.zeros(2 + call, requires_grad=True),)
'''

PROGRAMS["no_grad_decorator_on_helper_and_nested_enable"] = '''
import dynjit
@dynjit.no_grad()
def frozen(t):
    with dynjit.enable_grad():
        inner = t * 2
    return t * 3, inner, dynjit.is_grad_enabled()
@dynjit.enable_grad()
def forced(t):
    return t * 4
def main(w):
    a, b, mode = frozen(w)
    with dynjit.no_grad():
        c = forced(w)
    d = w * 5
    return a.requires_grad, b.requires_grad, mode, c.requires_grad, d.requires_grad, dynjit.is_grad_enabled()
def make_args(call):
    return (dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["set_grad_enabled_object_and_function_forms"] = '''
import dynjit
def main(w, flag):
    ctx = dynjit.set_grad_enabled(flag)
    a = w * 2
    with ctx:
        b = w * 3
    dynjit.set_grad_enabled(True)
    with dynjit.set_grad_enabled(False):
        c = w * 4
        with dynjit.set_grad_enabled(True):
            d = w * 5
    return a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, dynjit.is_grad_enabled()
def make_args(call):
    return dynjit.ones(2, requires_grad=True), [False, False, True][call]
'''

PROGRAMS["grad_mode_left_disabled_by_function"] = '''
import dynjit
def main(w, leave):
    y = w * 2
    if leave:
        dynjit.set_grad_enabled(False)
    z = w * 3
    return y.requires_grad, z.requires_grad, dynjit.is_grad_enabled()
def make_args(call):
    return dynjit.ones(2, requires_grad=True), [True, True, False][call]
'''

PROGRAMS["inference_mode_context_and_decorator"] = '''
import dynjit
@dynjit.inference_mode()
def infer(t):
    return t * 2, dynjit.is_inference_mode_enabled()
def main(w):
    with dynjit.inference_mode():
        a = w * 3
        inside = dynjit.is_inference_mode_enabled(), dynjit.is_grad_enabled()
    b, flag = infer(w)
    with dynjit.inference_mode(False):
        c = w * 4
    return a.requires_grad, a.is_inference(), inside, b.is_inference(), flag, c.requires_grad, c.is_inference(), a
def make_args(call):
    return (dynjit.ones(2, requires_grad=True) if call < 2 else dynjit.ones(3),)
'''

PROGRAMS["inference_tensor_used_in_autograd_raises"] = '''
import dynjit
def main(w):
    with dynjit.inference_mode():
        a = w * 3
    b = a * w
    b.sum().backward()
    return w.grad
def make_args(call):
    return (dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["autocast_context_inside_compiled"] = '''
import dynjit
def main(a, b, enabled):
    with dynjit.autocast("cpu", dtype=dynjit.bfloat16, enabled=enabled):
        c = a @ b
        d = c + 1
        e = dynjit.nn.functional.softmax(d, -1)
        inner = dynjit.is_autocast_enabled() if hasattr(dynjit, "is_autocast_enabled") else None
    f = a @ b
    return str(c.dtype), str(d.dtype), str(e.dtype), str(f.dtype), inner, c.float()
def make_args(call):
    return dynjit.ones(2, 3), dynjit.ones(3, 2) * 0.5, [True, True, False][call]
'''

PROGRAMS["autocast_decorator_and_nested_disable"] = '''
import dynjit
@dynjit.autocast("cpu", dtype=dynjit.bfloat16)
def low(a, b):
    with dynjit.autocast("cpu", enabled=False):
        full = a @ b
    return a @ b, full
def main(a, b):
    x, y = low(a, b)
    return str(x.dtype), str(y.dtype), y
def make_args(call):
    return dynjit.ones(2, 2) * (call + 1), dynjit.ones(2, 2)
'''

PROGRAMS["detect_anomaly_and_grad_of_nan"] = '''
import dynjit
def main(x):
    with dynjit.autograd.detect_anomaly(check_nan=False):
        y = x.sqrt()
        y.sum().backward()
    return y, x.grad
def make_args(call):
    return (dynjit.tensor([1.0, 4.0, 0.25 * (call + 1)], requires_grad=True),)
'''

PROGRAMS["requires_grad_toggled_inside_and_leaf_errors"] = '''
import dynjit
def main(x, mode):
    x.requires_grad_(True)
    y = (x * 2).sum()
    y.backward()
    g = x.grad.clone()
    if mode == 1:
        y2 = x * 3
        y2.requires_grad_(False)
    if mode == 2:
        x.add_(1)
    return g, x.requires_grad
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["backward_with_gradient_argument_and_inputs"] = '''
import dynjit
def main(a, b):
    y = a * b
    y.backward(gradient=dynjit.tensor([1.0, 0.5]), inputs=[a])
    z = (a + b).sum()
    dynjit.autograd.backward([z], inputs=[b])
    return a.grad, b.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True) * 1, dynjit.full((2,), 3.0 + call, requires_grad=True)
'''

PROGRAMS["grad_of_non_scalar_error_and_nonleaf_grad_warning"] = '''
import dynjit
def main(a, mode):
    y = a * 2
    if mode == 1:
        return y.grad
    if mode == 2:
        y.backward()
    return y
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call
'''

PROGRAMS["zero_grad_variants_and_accumulation"] = '''
import dynjit
def main(w, steps):
    grads = []
    for i in range(steps):
        (w * (i + 1)).sum().backward()
        grads.append(w.grad.clone())
    w.grad.zero_()
    g0 = w.grad
    w.grad = None
    (w * w).sum().backward()
    return grads, g0, w.grad
def make_args(call):
    return dynjit.ones(2, requires_grad=True), [2, 2, 3][call]
'''

PROGRAMS["checkpoint_like_recompute_with_no_grad"] = '''
import dynjit
def block(t, w):
    return (t @ w).tanh()
def main(x, w):
    with dynjit.no_grad():
        h = block(x, w)
    h2 = block(x, w)
    loss = (h2 * h).sum()
    loss.backward()
    return h, w.grad, h.requires_grad
def make_args(call):
    return dynjit.ones(2, 3) * 0.1 * (call + 1), dynjit.ones(3, 3, requires_grad=True)
'''

PROGRAMS["function_with_list_and_number_arguments"] = '''
import dynjit
class Weighted(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x, ks, scale=1.0):
        ctx.total = sum(ks) * scale
        return x * ctx.total
    @staticmethod
    def backward(ctx, g):
        return g * ctx.total, None, None
def main(x, ks, s):
    y = Weighted.apply(x, ks, s)
    y.sum().backward()
    return y, x.grad
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32).requires_grad_(), [[1, 2], [1, 2], [3, 4]][call], [1.0, 1.0, 2.0][call]
'''

PROGRAMS["inplace_on_saved_tensor_without_backward"] = '''
import dynjit
F = dynjit.nn.functional
def main(w, x):
    h = F.relu(x @ w)
    h.add_(1)
    y = w.exp()
    y.mul_(2)
    return h, y
def make_args(call):
    return dynjit.ones(2, 2, requires_grad=True) * 0.5, dynjit.ones(3, 2) * (call + 1)
'''

PROGRAMS["inplace_on_saved_tensor_then_backward_raises_at_backward"] = '''
import dynjit
LOG = []
def main(w):
    y = w.exp()
    y.add_(1)
    LOG.append("before backward")
    print("before backward")
    y.sum().backward()
    return w.grad
def make_args(call):
    return (dynjit.ones(2, requires_grad=True),)
'''

XFAIL = {
    "function_mark_dirty_inplace": "frontend/aot_eager,llvm: _version of a tensor changed in place in a Function "
                                   "stays 0 (findings R2-T4b)",
}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))
