"""make_fx: tracing a function at the op-dispatch level into a GraphModule."""
import pytest

import dynjit
from dynjit.autograd import grad
from dynjit.fx import make_fx
from dynjit.ops import registry as R

def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx, TestPythonKey.test_nnc_jit
def test_make_fx_replays_on_new_inputs():
    def f(x):
        return dynjit.sin(x)
    gm = make_fx(f)(dynjit.randn(3))
    new = dynjit.randn(3)
    assert dynjit.equal(gm(new), f(new))
    assert _targets(gm) == [R["sin"]]


# ports: 001_fdd911346beae147.txt TestPythonKey.test_nnc_scalar
def test_make_fx_of_a_0d_tensor():
    gm = make_fx(dynjit.sin)(dynjit.randn(()))
    new = dynjit.randn(())
    assert gm(new).shape == () and dynjit.equal(gm(new), dynjit.sin(new))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_grad
def test_make_fx_of_a_gradient():
    def f(x):
        return grad(dynjit.sin(x).sum(), x)[0]
    gm = make_fx(f)(dynjit.randn(3, requires_grad=True))
    assert gm.code == (
        "def forward(self, x_1):\n"
        "    ones = dynjit.ops.ones((), dynjit.float32)\n"
        "    expand = dynjit.ops.expand(ones, (3,));  ones = None\n"
        "    cos = dynjit.ops.cos(x_1);  x_1 = None\n"
        "    mul = dynjit.ops.mul(expand, cos);  expand = cos = None\n"
        "    return mul\n")
    new = dynjit.randn(3, requires_grad=True)
    assert dynjit.allclose(gm(new), f(new))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_scalar_device
def test_make_fx_with_a_0d_integer_tensor():
    def f(a, b):
        return a + b
    inps = [dynjit.randn(3), dynjit.tensor(5)]
    gm = make_fx(f)(*inps)
    assert dynjit.equal(gm(*inps), f(*inps))
    assert dynjit.equal(gm(dynjit.zeros(3), dynjit.tensor(2)), dynjit.full((3,), 2.0))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_vjp
def test_make_fx_with_non_tensor_arguments():
    primal = dynjit.randn(3, requires_grad=True)
    y = dynjit.sin(primal).sum()

    def vjp_fn(cotangent, retain_graph=True, allow_unused=True):
        return grad(y, primal, cotangent, retain_graph=retain_graph, allow_unused=allow_unused)
    gm = make_fx(vjp_fn)(dynjit.randn(()), True, True)
    assert [n.op for n in gm.graph.nodes].count("placeholder") == 3
    new = dynjit.randn(())
    assert dynjit.allclose(gm(new, True, True)[0], vjp_fn(new)[0])


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_no_decompose
def test_make_fx_decomposition_table():
    def f(x):
        return grad(dynjit.tanh(x).sum(), x)[0]
    x = dynjit.randn(5, requires_grad=True)
    assert R["tanh"] in _targets(make_fx(f)(x))

    def tanh_decomposition(x):
        e = (x * 2).exp()
        return (e - 1) / (e + 1)
    gm = make_fx(f, {R["tanh"]: tanh_decomposition})(x)
    targets = _targets(gm)
    assert R["tanh"] not in targets and R["exp"] in targets
    new = dynjit.randn(5, requires_grad=True)
    assert dynjit.allclose(gm(new), f(new), atol=1e-5)


# ports: 001_fdd911346beae147.txt TestPythonKey.test_nnc_pytrees
def test_make_fx_nested_inputs_and_outputs():
    def f(x):
        return [dynjit.sin(x[0])]
    inp = [dynjit.randn(3)]
    gm = make_fx(f)(inp)
    out = gm(inp)
    assert isinstance(out, list) and dynjit.equal(out[0], f(inp)[0])

    def g(d, pair):
        return {"s": d["a"] + pair[1], "t": pair[0] * 2}
    args = ({"a": dynjit.randn(2)}, (dynjit.randn(2), dynjit.randn(2)))
    gm = make_fx(g)(*args)
    res, ref = gm(*args), g(*args)
    assert res.keys() == ref.keys() and all(dynjit.equal(res[k], ref[k]) for k in ref)


# ports: 001_fdd911346beae147.txt TestPythonKey.test_external_calls
def test_make_fx_extern_op():
    def f(a, b):
        return dynjit.mv(a, b)
    inp = [dynjit.randn(3, 3), dynjit.randn(3)]
    gm = make_fx(f)(*inp)
    assert dynjit.allclose(gm(*inp), f(*inp))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_nnc_passthrough
def test_make_fx_returns_inputs_unchanged():
    def f(x, y):
        return x + y, y
    inp = (dynjit.randn(3), dynjit.randn(3))
    gm = make_fx(f)(*inp)
    out = gm(*inp)
    assert dynjit.equal(out[0], inp[0] + inp[1]) and out[1] is inp[1]
    assert gm.code.endswith("    return (add, y_1)\n")


def test_make_fx_does_not_mutate_the_callers_tensors():
    def f(x):
        x.mul_(2)
        return x + 1
    x = dynjit.ones(3)
    gm = make_fx(f)(x)
    assert dynjit.equal(x, dynjit.ones(3))
    # in-place ops stay in-place in a make_fx graph: running it mutates its input
    assert _targets(gm) == [R["mul_"], R["add"]]
    t = dynjit.ones(3)
    assert dynjit.equal(gm(t), dynjit.full((3,), 3.0))
    assert dynjit.equal(t, dynjit.full((3,), 2.0))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_custom_autograd
def test_make_fx_traces_custom_function_forward_and_backward():
    class Square(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    def f(x):
        y = Square.apply(x)
        return y, grad(y.sum(), x)[0]
    gm = make_fx(f)(dynjit.randn(4, requires_grad=True))
    assert R["mul"] in _targets(gm)
    new = dynjit.randn(4, requires_grad=True)
    (y1, g1), (y2, g2) = gm(new), f(new)
    assert dynjit.allclose(y1, y2) and dynjit.allclose(g1, g2)


def test_make_fx_gradient_through_an_inplace_op_reads_the_old_value():
    # y.mul_(x) saves y's old value for backward: the graph must compute it
    # from the input, not keep the value seen while tracing.
    def f(x):
        y = x * 3
        y.mul_(x)
        return grad(y.sum(), x)[0]
    gm = make_fx(f)(dynjit.randn(3, requires_grad=True))
    assert not any(n.op == "get_attr" for n in gm.graph.nodes)
    new = dynjit.randn(3, requires_grad=True)
    assert dynjit.allclose(gm(new), 6 * new)


def test_make_fx_meta_records_shapes_and_dtypes():
    gm = make_fx(lambda x: x.sum(0).long())(dynjit.ones(2, 5))
    metas = {n.name: n.meta["val"] for n in gm.graph.nodes if n.op != "output"}
    assert metas["x_1"].shape == (2, 5) and metas["x_1"].dtype is dynjit.float32
    assert metas["sum_1"].shape == (5,)
    assert [m.dtype for m in metas.values()][-1] is dynjit.int64


def test_make_fx_rejects_bad_options():
    with pytest.raises(ValueError, match="tracing_mode must be"):
        make_fx(lambda x: x, tracing_mode="meta")
    with pytest.raises(TypeError, match="decomposition_table must be a dict"):
        make_fx(lambda x: x, decomposition_table=[R["tanh"]])
