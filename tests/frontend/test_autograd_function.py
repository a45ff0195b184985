"""Custom autograd.Functions inside compiled code: F.apply becomes one
autograd_function_apply node with traced forward/backward bodies; results and
gradients equal eager's on every backend; graph breaks inside forward make
forward a compiled frame of its own."""
import enum
import math
import warnings
from dataclasses import dataclass

import pytest

import dynjit
from dynjit import nn
from dynjit.autograd import Function
from dynjit.autograd.function import once_differentiable
from dynjit.exc import Unsupported
from dynjit.testing import CompileCounter, CompileCounterWithBackend, normalize_gm, same
from dynjit.utils import counters

BACKENDS = ["eager", "aot_eager", "llvm"]

pytestmark = pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")


# -- Functions and modules shared by several tests -------------------------------------------
class Doubler(Function):
    @staticmethod
    def forward(ctx, t):
        return t + t

    @staticmethod
    def backward(ctx, g):
        return g


class BreaksInForward(Function):
    @staticmethod
    def forward(ctx, t):
        r = t + t
        dynjit.graph_break()
        r = r + t
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * math.sqrt(r.numel())


class ApplyOnInstance(nn.Module):
    def __init__(self, fn_cls):
        super().__init__()
        self.fn_cls = fn_cls

    def forward(self, t):
        return self.fn_cls().apply(t)


class ApplyStored(nn.Module):
    def __init__(self, fn_cls):
        super().__init__()
        self.fn = fn_cls.apply

    def forward(self, t):
        return self.fn(t)


class Linear(Function):
    @staticmethod
    def forward(inp, weight, bias):
        out = inp.mm(weight.t())
        if bias is not None:
            out = out + bias.unsqueeze(0).expand_as(out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        inp, weight, bias = inputs
        ctx.save_for_backward(inp, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        inp, weight, bias = ctx.saved_tensors
        grad_in = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_in = grad_out.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_w = grad_out.t().mm(inp)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_b = grad_out.sum(0)
        return grad_in, grad_w, grad_b


class LinearModule(nn.Module):
    def forward(self, inp, weight, bias=None):
        return Linear.apply(inp, weight, bias)


def leaf(*shape, dtype=dynjit.float32):
    return dynjit.randn(*shape, dtype=dtype).requires_grad_()


def grads_match_eager(fn, compiled, *shapes):
    """Run fn and compiled on equal leaves; outputs and every gradient must agree."""
    eager_in = [leaf(*s) for s in shapes]
    comp_in = [t.detach().clone().requires_grad_() for t in eager_in]
    ref = fn(*eager_in)
    res = compiled(*comp_in)
    assert same(ref, res)
    refs = ref if isinstance(ref, tuple) else (ref,)
    ress = res if isinstance(res, tuple) else (res,)
    sum(r.sum() for r in refs).backward()
    sum(r.sum() for r in ress).backward()
    for a, b in zip(eager_in, comp_in):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            assert same(a.grad, b.grad)


# -- capture ------------------------------------------------------------------------------------
# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_autograd_function_equivalence
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("module", [ApplyOnInstance, ApplyStored])
def test_apply_through_instance_or_stored_method_is_one_node(module, requires_grad):
    dynjit.reset()
    model = module(Doubler)
    cnt = CompileCounter()
    compiled = dynjit.compile(model, backend=cnt)
    x = dynjit.ones(2, 3, requires_grad=requires_grad)
    out = compiled(x)
    assert dynjit.allclose(out, dynjit.tensor([2.0]))
    assert out.requires_grad == requires_grad
    # the ctx made for the call and the apply node itself
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_user_defined_object_as_input
def test_dataclass_argument_graph_and_gradients():
    cnt = CompileCounterWithBackend("aot_eager")

    @dataclass
    class Holder:
        x: int
        b: dynjit.Tensor
        c: dynjit.Tensor

    class Foo(Function):
        @staticmethod
        def forward(ctx, x, holder, z):
            ctx.save_for_backward(holder.b, holder.c)
            return holder.b * holder.c * x.clone()

        @staticmethod
        def backward(ctx, grad):
            b, c = ctx.saved_tensors
            return grad * b * c, None, grad * 2

    @dynjit.compile(backend=cnt, fullgraph=True)
    def f(x, weird, z):
        return Foo.apply(x, weird, z)

    x = dynjit.tensor(2.0, requires_grad=True)
    weird = Holder(1.2, dynjit.tensor(2.5, requires_grad=True), dynjit.tensor(3.5))
    z = dynjit.tensor(3.0, requires_grad=True)
    result = f(x, weird, z)
    result.sum().backward()
    assert same(result, Foo.apply(x, weird, z))
    assert x.grad.item() == pytest.approx(2.5 * 3.5)
    assert z.grad.item() == pytest.approx(2.0)
    assert weird.b.grad is None         # lifted from the dataclass: no gradient, as in eager
    assert normalize_gm(cnt.graphs[0].print_readable(print_output=False)) == '''\
class GraphModule(dynjit.nn.Module):
    def forward(self, L_x_: "f32[]", L_z_: "f32[]", L_weird_b: "f32[]", L_weird_c: "f32[]"):
        function_ctx = dynjit.autograd.function.FunctionCtx()
        fwd_body_0 = self.fwd_body_0
        bwd_body_0 = self.bwd_body_0
        autograd_function_apply: "f32[]" = dynjit.autograd.function_apply.autograd_function_apply(fwd_body_0, bwd_body_0, L_x_, L_z_, L_weird_b, L_weird_c, args_tensor_mask = [True, False, True]);  fwd_body_0 = bwd_body_0 = L_x_ = L_z_ = L_weird_b = L_weird_c = None
        return (autograd_function_apply,)

    class fwd_body_0(dynjit.nn.Module):
        def forward(self, function_ctx, l_x_: "f32[]", l_z_: "f32[]", l_weird_b: "f32[]", l_weird_c: "f32[]"):
            mul: "f32[]" = operator.mul(l_weird_b, l_weird_c)
            clone: "f32[]" = l_x_.clone();  l_x_ = None
            mul_1: "f32[]" = operator.mul(mul, clone);  mul = clone = None
            return (mul_1, [l_weird_b, l_weird_c])

    class bwd_body_0(dynjit.nn.Module):
        def forward(self, function_ctx, mul_1: "f32[]", l_weird_b: "f32[]", l_weird_c: "f32[]"):
            _set_grad_enabled = dynjit.frontend.output_graph.set_grad_enabled_node(False)
            mul: "f32[]" = operator.mul(mul_1, l_weird_b);  l_weird_b = None
            mul_2: "f32[]" = operator.mul(mul, l_weird_c);  mul = l_weird_c = None
            mul_3: "f32[]" = operator.mul(mul_1, 2);  mul_1 = None
            _set_grad_enabled_1 = dynjit.frontend.output_graph.set_grad_enabled_node(True)
            return (mul_2, mul_3)
'''


def test_eager_backend_backward_node_is_named_after_the_function():
    @dynjit.compile(backend="eager", fullgraph=True)
    def f(x):
        return Doubler.apply(x)

    out = f(leaf(3))
    assert out.grad_fn.name() == Doubler.apply(leaf(3)).grad_fn.name() == "DoublerBackward"


# -- graph breaks -------------------------------------------------------------------------------
# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_autograd_function_has_graph_break
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("module", [ApplyOnInstance, ApplyStored])
def test_graph_break_in_forward_compiles_forward_as_its_own_frame(module, requires_grad):
    dynjit.reset()
    x = dynjit.randn(10, requires_grad=requires_grad)
    model = module(BreaksInForward)
    cnt = CompileCounter()
    compiled = dynjit.compile(model, backend=cnt)
    for _ in range(3):
        ref = model(x)
        res = compiled(x)
        assert same(ref, res)
        assert res.requires_grad == requires_grad
    # forward's two graphs (before and after its break); nothing else has ops
    assert cnt.frame_count == 2


def test_graph_break_in_forward_gradients_match_eager():
    dynjit.reset()

    def fn(x):
        return BreaksInForward.apply(x * 2).sum()

    grads_match_eager(fn, dynjit.compile(fn, backend="eager"), (4,))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_print_in_bwd
def test_print_in_backward_raises_under_fullgraph():
    class PrintsInBackward(Function):
        @staticmethod
        def forward(ctx, t):
            return dynjit.add(t, t)

        @staticmethod
        def backward(ctx, g):
            print("in backward")
            return g

    class M(nn.Module):
        def forward(self, x):
            return PrintsInBackward.apply(x)

    compiled = dynjit.optimize("eager", nopython=True)(M())
    with pytest.raises(Unsupported, match="builtin: print"):
        compiled(leaf(2, 2, dtype=dynjit.float64))


def test_print_in_backward_without_fullgraph_breaks_and_prints_at_backward(capsys):
    class PrintsInBackward(Function):
        @staticmethod
        def forward(ctx, t):
            return dynjit.add(t, t)

        @staticmethod
        def backward(ctx, g):
            print("in backward")
            return g * 3

    cnt = CompileCounter()
    f = dynjit.compile(lambda x: PrintsInBackward.apply(x), backend=cnt)
    x = leaf(3)
    f(x).sum().backward()
    assert same(x.grad, dynjit.full((3,), 3.0))
    assert capsys.readouterr().out == "in backward\n"
    assert cnt.frame_count == 1      # forward, compiled as its own frame


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_stride_in_bwd
def test_backward_returning_strides_is_a_graph_break():
    class StrideBackward(Function):
        @staticmethod
        def forward(ctx, t):
            return dynjit.add(t, t)

        @staticmethod
        def backward(ctx, g):
            return g.stride()

    class M(nn.Module):
        def forward(self, x):
            return StrideBackward.apply(x)

    counters.clear()
    cnt = CompileCounter()
    model = M()
    compiled = dynjit.compile(model, backend=cnt)
    x = leaf(2, 2, dtype=dynjit.float64)
    assert same(model(x), compiled(x))
    assert cnt.frame_count == 1
    assert list(counters["graph_break"].values()) == [1]


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_allow_in_graph
def test_allow_in_graph_keeps_apply_opaque_despite_a_break_in_forward():
    counters.clear()
    cnt = CompileCounter()

    @dynjit.allow_in_graph
    class Opaque(Function):
        @staticmethod
        def forward(ctx, t):
            dynjit.graph_break()
            ctx.x0 = t.size(0)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.x0

    @dynjit.compile(backend=cnt, fullgraph=True)
    def fn(x):
        return Opaque.apply(x)

    x = dynjit.rand(2, 3, requires_grad=True)
    out = fn(x)
    assert same(out, Opaque.apply(x))
    assert (cnt.frame_count, cnt.op_count) == (1, 1)
    out.sum().backward()
    assert same(x.grad, dynjit.full((2, 3), 2.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_allow_in_graph_function_is_one_node(backend):
    calls = []

    @dynjit.allow_in_graph
    def opaque(a, b):
        calls.append(1)
        return a * b + 1

    cnt = CompileCounterWithBackend(backend)

    @dynjit.compile(backend=cnt, fullgraph=True)
    def fn(a, b):
        return opaque(a.sin(), b) * 2

    def eager(a, b):
        return (a.sin() * b + 1) * 2

    grads_match_eager(eager, fn, (3,), (3,))
    assert cnt.op_count == 3
    assert any("opaque" in str(n.target) for n in cnt.graphs[0].graph.nodes)


def test_allow_in_graph_rejects_non_callables():
    with pytest.raises(TypeError, match="allow_in_graph"):
        dynjit.allow_in_graph(3)


# -- the exercises of the seed, on every backend ---------------------------------------------
# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_linear_setup_context
@pytest.mark.parametrize("backend", BACKENDS)
def test_setup_context_style_linear(backend):
    model = LinearModule()
    compiled = dynjit.optimize(backend, nopython=True)(model)
    inp = leaf(2, 2, dtype=dynjit.float64)
    weight = leaf(3, 2, dtype=dynjit.float64)
    eager_out = model(inp, weight)
    comp_in = inp.detach().clone().requires_grad_()
    comp_w = weight.detach().clone().requires_grad_()
    comp_out = compiled(comp_in, comp_w)
    assert same(eager_out, comp_out)
    eager_out.sum().backward()
    comp_out.sum().backward()
    assert same(inp.grad, comp_in.grad) and same(weight.grad, comp_w.grad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_setup_context_style_linear_with_bias(backend):
    compiled = dynjit.compile(lambda i, w, b: Linear.apply(i, w, b), backend=backend, fullgraph=True)
    grads_match_eager(lambda i, w, b: Linear.apply(i, w, b), compiled, (4, 2), (3, 2), (3,))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_materialize_grad
def test_set_materialize_grads_false_two_outputs():
    class TwoCopies(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.set_materialize_grads(False)
            return t.clone(), t.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            return g1, g2

    class M(nn.Module):
        def forward(self, x):
            return TwoCopies.apply(x)

    model = M()
    compiled = dynjit.compile(model, backend="eager")
    x = leaf(2, 2, dtype=dynjit.float64)
    assert same(compiled(x), model(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_materialize_grads_false_unused_output(backend):
    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.set_materialize_grads(False)
            return t * 2, t * 3

        @staticmethod
        def backward(ctx, g1, g2):
            grad = g1 * 2
            if g2 is not None:        # None in eager (unused output); zeros when compiled
                grad = grad + g2 * 3
            return grad

    def fn(x):
        return TwoOutputs.apply(x)[0]

    grads_match_eager(fn, dynjit.compile(fn, backend=backend, fullgraph=True), (3,))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_enum_arg
def test_enum_argument_is_guarded():
    class Choice(enum.Enum):
        A = 0
        B = 1

    class Pick(Function):
        @staticmethod
        def forward(ctx, t, choice):
            return t.sin() if choice is Choice.A else t.cos()

        @staticmethod
        def backward(ctx, g):
            return g

    cnt = CompileCounter()

    @dynjit.compile(backend=cnt, fullgraph=True)
    def f(x, choice):
        return Pick.apply(x, choice)

    x = dynjit.tensor([[1.0, 2, 3], [4, 5, 6]], requires_grad=True)
    assert same(f(x, Choice.A), x.sin())
    assert same(f(x, Choice.B), x.cos())       # a different member: recompiled, not reused
    assert cnt.frame_count == 2


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_save_for_bwd
@pytest.mark.parametrize("backend", BACKENDS)
def test_save_for_backward_of_a_forward_result(backend):
    class SaveResult(Function):
        @staticmethod
        def forward(ctx, t):
            r = t + t
            r = r + t
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * math.sqrt(r.numel())

    class M(nn.Module):
        def forward(self, x):
            return SaveResult().apply(x)

    compiled = dynjit.optimize(backend, nopython=True)(M())
    x = leaf(2, 2, dtype=dynjit.float64)
    out = compiled(x)
    assert same(out, x * 3)
    out.sum().backward()
    assert same(x.grad, dynjit.full((2, 2), 2.0, dtype=dynjit.float64))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_once_differentiable
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_once_differentiable_backward(backend):
    class Halve(Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return g * 0.5

    cnt = CompileCounterWithBackend(backend)

    @dynjit.compile(backend=cnt, fullgraph=True)
    def fn(x):
        return Halve.apply(x)

    x = dynjit.randn(3, requires_grad=True)
    out = fn(x)
    assert same(out, Halve.apply(x))
    assert cnt.frame_count == 1
    out.sum().backward()
    assert same(x.grad, dynjit.full((3,), 0.5))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_classmethod
@pytest.mark.parametrize("backend", BACKENDS)
def test_classmethod_forward_and_backward(backend):
    class Shake(Function):
        @classmethod
        def forward(cls, ctx, t):
            return t + t

        @classmethod
        def backward(cls, ctx, g):
            return g

    def f(x):
        return Shake.apply(x)

    cnt = CompileCounterWithBackend(backend)
    grads_match_eager(f, dynjit.compile(f, backend=cnt, fullgraph=True), (4, 4, 4, 4))
    assert cnt.frame_count == 1


class SaveThenMark(Function):
    @staticmethod
    def forward(ctx, t):
        with dynjit.no_grad():
            ctx.save_for_backward(t)
            ctx.mark_non_differentiable(t)
            return t

    @staticmethod
    def backward(ctx, g):
        return g


class MarkThenSave(Function):
    @staticmethod
    def forward(ctx, t):
        with dynjit.no_grad():
            ctx.mark_non_differentiable(t)
            ctx.save_for_backward(t)
            return t

    @staticmethod
    def backward(ctx, g):
        return g


class StoredApply(nn.Module):
    def __init__(self, fn_cls):
        super().__init__()
        self.f = fn_cls.apply

    def forward(self, x):
        return self.f(x)


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_function_context_save_and_mark, AutogradFunctionTests.test_function_context_mark_and_save
@pytest.mark.parametrize("fn_cls", [SaveThenMark, MarkThenSave])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_mark_non_differentiable_inside_no_grad(fn_cls, requires_grad):
    mod = StoredApply(fn_cls)
    x = dynjit.rand(1, requires_grad=requires_grad)
    before = mod(x)
    dynjit.reset()
    after = dynjit.compile(mod, backend="eager")(x)
    assert same(before, after)
    assert after.requires_grad is before.requires_grad is False


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_multi_output
@pytest.mark.parametrize("backend", BACKENDS)
def test_two_outputs(backend):
    class TwoClones(Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone(), t.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2

    cnt = CompileCounterWithBackend(backend)

    @dynjit.compile(backend=cnt, fullgraph=True)
    def f(x):
        return TwoClones.apply(x)

    x = dynjit.randn(3, requires_grad=True)
    out = f(x)
    assert isinstance(out, tuple) and same(out, TwoClones.apply(x))
    assert cnt.frame_count == 1
    (out[0] * 2 + out[1]).sum().backward()
    assert same(x.grad, dynjit.full((3,), 3.0))


# the CPU part of seed 000 test_amp_custom_fwd_bwd (its row stays out-of-scope: AMP)
@pytest.mark.parametrize("backend", BACKENDS)
def test_matmul_function_applied_to_the_same_tensor_twice(backend):
    # the seed wraps forward/backward in CUDA autocast decorators, which do nothing on CPU
    class MyMM(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)

    cnt = CompileCounterWithBackend(backend)

    @dynjit.compile(backend=cnt, fullgraph=True)
    def fn(a, b):
        return MyMM.apply(a, b)

    a = dynjit.randn(16, 16, requires_grad=True)
    a_ref = a.detach().clone().requires_grad_()
    grad = a.detach().clone()
    res = fn(a, a)
    res.backward(grad)
    ref = MyMM.apply(a_ref, a_ref)
    ref.backward(grad)
    assert same(res, ref) and same(a.grad, a_ref.grad)
    assert cnt.frame_count == 1


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_tensor_list_as_input
@pytest.mark.parametrize("backend", BACKENDS)
def test_list_of_tensors_argument(backend):
    class Foo(Function):
        @staticmethod
        def forward(ctx, x, tl):
            ctx.save_for_backward(tl[0], tl[1])
            return x.clone() * (tl[0] + tl[1])

        @staticmethod
        def backward(ctx, grad):
            tl0, tl1 = ctx.saved_tensors
            return grad * (tl0 + tl1), None

    @dynjit.compile(backend=backend, fullgraph=True)
    def f(x, tl):
        return Foo.apply(x, tl)

    x = dynjit.tensor(2.0, requires_grad=True)
    tl = [dynjit.tensor(3.0, requires_grad=True), dynjit.tensor(4.0, requires_grad=True)]
    result = f(x, tl)
    result.sum().backward()
    assert same(result, Foo.apply(x, tl))
    assert x.grad.item() == pytest.approx(7.0)
    assert tl[0].grad is None and tl[1].grad is None


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_multiple_different_non_tensor_inputs
@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_and_list_arguments_together(backend):
    @dataclass
    class Holder:
        x: int
        b: dynjit.Tensor
        c: dynjit.Tensor

    class Foo(Function):
        @staticmethod
        def forward(ctx, x, holder, z, tl):
            ctx.save_for_backward(holder.b, holder.c, tl[0], tl[1])
            return x.clone() * holder.b * holder.c * tl[0]

        @staticmethod
        def backward(ctx, grad):
            b, c, tl0, _ = ctx.saved_tensors
            return grad * b * c * tl0, None, grad * 2, None

    @dynjit.compile(backend=backend, fullgraph=True)
    def f(x, holder, z, tl):
        return Foo.apply(x, holder, z, tl)

    x = dynjit.tensor(2.0, requires_grad=True)
    holder = Holder(1, dynjit.tensor(2.5, requires_grad=True), dynjit.tensor(3.5, requires_grad=True))
    z = dynjit.tensor(3.0, requires_grad=True)
    tl = [dynjit.tensor(0.5, requires_grad=True), dynjit.tensor(0.6, requires_grad=True)]
    result = f(x, holder, z, tl)
    result.sum().backward()
    assert same(result, Foo.apply(x, holder, z, tl))
    assert x.grad.item() == pytest.approx(2.5 * 3.5 * 0.5)
    assert z.grad.item() == pytest.approx(2.0)
    assert all(t.grad is None for t in (holder.b, holder.c, tl[0], tl[1]))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_backward_returns_none_for_tensor_input
@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_returns_none_for_a_tensor_input(backend):
    class Foo(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x.clone() * y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y, None

    @dynjit.compile(backend=backend, fullgraph=True)
    def f(x, y):
        return Foo.apply(x, y)

    x = dynjit.tensor(2.0, requires_grad=True)
    y = dynjit.tensor(3.0, requires_grad=True)
    result = f(x, y)
    result.sum().backward()
    assert same(result, Foo.apply(x, y))
    assert x.grad.item() == pytest.approx(3.0)
    assert y.grad is None


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_function_with_bound_free_variable
@pytest.mark.parametrize("backend", BACKENDS)
def test_parameter_with_a_python_bound(backend):
    class LowerBound(Function):
        @staticmethod
        def forward(ctx, inputs, bound):
            ctx.save_for_backward(inputs, inputs.new_ones(1) * bound)
            return inputs.clamp(min=bound)

        @staticmethod
        def backward(ctx, grad_output):
            inputs, bound = ctx.saved_tensors
            return (inputs >= bound) * grad_output, None

    class MyMod(nn.Module):
        def __init__(self):
            super().__init__()
            self.gamma = nn.Parameter(dynjit.rand(4, 8, 3, 3) * 2)

        def forward(self, x):
            return x + LowerBound.apply(self.gamma, 1)

    mod = MyMod()
    x = dynjit.rand(4, 8, 3, 3)
    before = mod(x)
    before.sum().backward()
    ref_grad = mod.gamma.grad.clone()
    mod.gamma.grad = None
    after = dynjit.compile(mod, backend=backend)(x)
    assert same(before, after)
    after.sum().backward()
    assert same(mod.gamma.grad, ref_grad)


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_smuggle_symint_issue_111031
def test_size_stored_on_ctx():
    class Foo(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x0 = x.size(0)
            return x * 2

        @staticmethod
        def backward(ctx, grad_out):
            return grad_out * ctx.x0

    cnts = CompileCounter()

    @dynjit.compile(backend=cnts, fullgraph=True, dynamic=True)
    def foo(x):
        return Foo.apply(x)

    x = dynjit.randn(2, requires_grad=True)
    foo(x).sum().backward()
    assert cnts.frame_count == 1
    assert same(x.grad, dynjit.full((2,), 2.0))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_needs_input_grad
def test_compiled_backward_reads_needs_input_grad():
    cnt = CompileCounter()

    class NeedsInputGrad(Function):
        @staticmethod
        def forward(ctx, foo):
            result = foo + foo
            ctx.save_for_backward(result)
            return result

        @staticmethod
        @dynjit.compile(backend=cnt, fullgraph=True)
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            if ctx.needs_input_grad[0]:
                return grad_output * result.sin()
            return None

    x = dynjit.randn(10, requires_grad=True)
    NeedsInputGrad.apply(x).sum().backward()
    assert x.grad.shape == x.shape
    assert same(x.grad, (x.detach() * 2).sin())
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_repeated_save_for_backward_calls
@pytest.mark.parametrize("backend", BACKENDS)
def test_save_for_backward_called_twice(backend):
    class Foo(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x)
            ctx.save_for_backward(x, y)      # replaces the first
            return x * y

        @staticmethod
        def backward(ctx, grad_out):
            x, y = ctx.saved_tensors
            return grad_out * x, grad_out * y

    def foo(x, y):
        return Foo.apply(x, y)

    cnts = CompileCounterWithBackend(backend)
    grads_match_eager(foo, dynjit.compile(foo, backend=cnts), (2,), (2,))
    assert cnts.frame_count == 1


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_smuggle_tensor_and_complex_structures
@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_and_list_stored_on_ctx(backend):
    class Foo(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x0 = x
            ctx.x1 = [1, 2, 3]
            return x * 2

        @staticmethod
        def backward(ctx, grad_out):
            x0mul = grad_out * ctx.x0
            for i in ctx.x1:
                x0mul = (x0mul * i) + x0mul
            return x0mul

    cnts = CompileCounterWithBackend(backend)
    f = dynjit.compile(lambda x: Foo.apply(x), backend=cnts, fullgraph=True, dynamic=True)
    grads_match_eager(lambda x: Foo.apply(x), f, (2,))
    assert cnts.frame_count == 1


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_default_values
def test_default_argument_values():
    class Foo(Function):
        @staticmethod
        def forward(ctx, x, alpha=0.99):
            return x * alpha

        @staticmethod
        def backward(ctx, grad_out):
            return grad_out

    @dynjit.compile
    def foo(x):
        return Foo.apply(x)

    assert same(foo(dynjit.ones(2)), dynjit.full((2,), 0.99))
    x = dynjit.ones(2, requires_grad=True)
    out = foo(x)
    assert out.requires_grad
    out.sum().backward()
    assert same(x.grad, dynjit.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_keyword_arguments_to_apply(backend):
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, alpha=2.0, beta=1.0):
            ctx.alpha = alpha
            return x * alpha + beta

        @staticmethod
        def backward(ctx, g):
            return g * ctx.alpha, None, None

    def fn(x):
        return Scale.apply(x, beta=3.0)

    grads_match_eager(fn, dynjit.compile(fn, backend=backend, fullgraph=True), (3,))


# ports: 000_787b203da5a3ecc2.txt AutogradFunctionTests.test_tuple_arg
def test_tuple_of_sizes_argument():
    cnt = CompileCounter()

    class TupleArg(Function):
        @staticmethod
        def forward(ctx, x, shape):
            ctx.save_for_backward(dynjit.randn(shape))
            return x + 1

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return result, None

    @dynjit.compile(backend=cnt, fullgraph=True)
    def fn():
        return TupleArg.apply(x, shape)

    shape = (10, 10)
    x = dynjit.randn(*shape, requires_grad=True)
    out = fn()
    out.sum().backward()
    assert same(out, x + 1)
    assert x.grad.shape == shape
    assert (cnt.frame_count, cnt.op_count) == (1, 2)


# -- beyond the seed ----------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_mark_dirty_in_place_forward(backend):
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, t):
            t.add_(1)
            ctx.mark_dirty(t)
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def fn(x):
        y = x * 1.0
        z = AddOneInPlace.apply(y)
        return z * 3, y

    grads_match_eager(fn, dynjit.compile(fn, backend=backend, fullgraph=True), (3,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_closing_over_a_global_tensor_and_used_in_a_larger_graph(backend):
    scale = dynjit.tensor([1.0, 2.0, 3.0])

    class MulScale(Function):
        @staticmethod
        def forward(ctx, t):
            return t * scale

        @staticmethod
        def backward(ctx, g):
            return g * scale

    def fn(x, y):
        return (MulScale.apply(x.exp()) + y).tanh().sum()

    cnt = CompileCounterWithBackend(backend)
    grads_match_eager(fn, dynjit.compile(fn, backend=cnt, fullgraph=True), (3,), (3,))
    assert cnt.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_inside_forward_of_another_function(backend):
    class Outer(Function):
        @staticmethod
        def forward(ctx, t):
            return Doubler.apply(t) * 3

        @staticmethod
        def backward(ctx, g):
            return g * 6

    def fn(x):
        return Outer.apply(x)

    grads_match_eager(fn, dynjit.compile(fn, backend=backend, fullgraph=True), (4,))


def test_wrong_number_of_gradients_raises_like_eager_at_backward():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    f = dynjit.compile(lambda x: TooMany.apply(x), backend="eager")
    out = f(leaf(3))
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        out.sum().backward()


def test_double_backward_through_a_compiled_function_is_a_clear_error():
    class Square(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 2 * t * g

    f = dynjit.compile(lambda x: Square.apply(x), backend="eager", fullgraph=True)
    x = leaf(3)
    with pytest.raises(RuntimeError, match="double backward"):
        dynjit.autograd.grad(f(x).sum(), x, create_graph=True)


def test_instantiating_a_function_in_compiled_code_matches_eager_warning_free_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = dynjit.compile(lambda x: Doubler.apply(x), backend="eager", fullgraph=True)
        assert same(f(dynjit.ones(2)), dynjit.full((2,), 2.0))


def test_forward_storing_a_tensor_outside_is_a_break_and_still_right():
    log = []

    class Leaky(Function):
        @staticmethod
        def forward(ctx, t):
            y = t * 2
            log.append(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    f = dynjit.compile(lambda x: Leaky.apply(x) + 1, backend="eager")
    x = leaf(3)
    out = f(x)
    assert same(out, x * 2 + 1) and len(log) == 1 and same(log[0], x * 2)
    assert "stores a tensor outside" in f.break_reasons[0][0]
    out.sum().backward()
    assert same(x.grad, dynjit.full((3,), 2.0))


def test_side_effect_in_backward_happens_at_backward_time():
    calls = []

    class Counted(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            calls.append("backward")
            return g * 2

    f = dynjit.compile(lambda x: Counted.apply(x), backend="eager")
    out = f(leaf(3))
    assert calls == []
    out.sum().backward()
    assert calls == ["backward"]


def test_non_tensor_output_is_a_break_with_eager_result():
    class WithCount(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2, 3

        @staticmethod
        def backward(ctx, g, _):
            return g * 2

    f = dynjit.compile(lambda x: WithCount.apply(x), backend="eager")
    x = leaf(3)
    out, n = f(x)
    assert n == 3 and same(out, x * 2)
    assert "only tensors" in f.break_reasons[0][0]


def test_invalid_gradient_error_names_the_same_input_as_eager():
    class SumsGrad(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    f = dynjit.compile(lambda x: SumsGrad.apply(x), backend="eager", fullgraph=True)
    messages = []
    for run in (f, SumsGrad.apply):
        with pytest.raises(RuntimeError, match="invalid gradient") as err:
            run(leaf(3)).sum().backward()
        messages.append(str(err.value))
    assert messages[0] == messages[1]


class ScaleByFirst(Function):
    @staticmethod
    def forward(ctx, t, tl):
        ctx.save_for_backward(tl[0])
        return t * tl[0]

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a, None


class TwoApplies(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = ScaleByFirst.apply

    def forward(self, x, tl):
        with dynjit.no_grad():
            y = self.fn(x, tl)          # no graph for this one: no gradient flows
        return self.fn(x, tl) + y + tl[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_applies_in_one_frame_share_inputs_read_inside_forward(backend):
    model = TwoApplies()
    cnt = CompileCounterWithBackend(backend)
    compiled = dynjit.compile(model, backend=cnt)
    for _ in range(3):
        x = leaf(3)
        x_ref = x.detach().clone().requires_grad_()
        tl = [dynjit.randn(3), dynjit.randn(3)]
        out, ref = compiled(x, tl), model(x_ref, tl)
        assert same(out, ref)
        out.sum().backward()
        ref.sum().backward()
        assert same(x.grad, x_ref.grad)
    assert cnt.frame_count == 1 and len(cnt.graphs[0].named_submodules()) == 4
