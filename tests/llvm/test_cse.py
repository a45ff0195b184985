"""dynjit/fx/cse.py: common-subexpression elimination on FX graphs (what is merged,
what never is), and through the llvm backend: `x.amax(1)` written twice is
computed once, with eager's results."""
import numpy as np

import dynjit
from dynjit.fx import make_fx
from dynjit.fx.cse import eliminate_common_subexpressions

from llvm_helpers import compiled


def _calls(graph, name):
    return [n for n in graph.nodes if n.op == "call_function" and getattr(n.target, "name", None) == name]


def _x(*shape):
    return dynjit.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def test_repeated_pure_calls_are_computed_once():
    x = _x(6, 5)
    gm = make_fx(lambda t: (t - t.amax(1, keepdim=True)) * t.amax(1, keepdim=True) + (t * 2).exp() + (t * 2).exp())(x)
    assert len(_calls(gm.graph, "amax")) == 2 and len(_calls(gm.graph, "exp")) == 2
    graph, removed = eliminate_common_subexpressions(gm.graph)
    assert removed == 3                        # amax, t * 2 and its exp (exp + exp adds one node to itself)
    assert len(_calls(graph, "amax")) == 1 and len(_calls(graph, "exp")) == 1 and len(_calls(graph, "mul")) == 2
    assert len(_calls(gm.graph, "amax")) == 2                  # the input graph is untouched
    graph.lint()
    out = dynjit.fx.GraphModule(gm, graph)(x)
    np.testing.assert_array_equal(out.numpy(), gm(x).numpy())


def test_different_arguments_and_constants_are_not_merged():
    x = _x(4, 3)
    gm = make_fx(lambda t: (t + 0.0, t + -0.0, t + 1, t + 1.0, t.sum(0), t.sum(1), t.amax(1, keepdim=True),
                            t.amax(1, keepdim=False)))(x)
    graph, removed = eliminate_common_subexpressions(gm.graph)
    assert removed == 0
    neg_zero = dynjit.tensor(np.array([-0.0], np.float32))
    outs = dynjit.fx.GraphModule(gm, graph)(neg_zero.expand(4, 3).contiguous())
    assert np.signbit(outs[0].numpy()).sum() == 0 and np.signbit(outs[1].numpy()).all()   # -0 + 0.0, -0 + -0.0


def test_random_ops_and_graphs_that_write_are_left_alone():
    x = _x(4, 3)
    gm = make_fx(lambda t: (dynjit.rand(4, 3) + t, dynjit.rand(4, 3) + t))(x)
    graph, removed = eliminate_common_subexpressions(gm.graph)
    assert removed == 0 and len(_calls(graph, "rand")) == 2     # two draws stay two draws

    def writes(t):
        a = t.clone()
        b = t.clone()
        a.add_(1)
        return a, b
    gm = make_fx(writes)(x)
    graph, removed = eliminate_common_subexpressions(gm.graph)
    assert removed == 0
    a, b = dynjit.fx.GraphModule(gm, graph)(x)
    np.testing.assert_array_equal(b.numpy(), x.numpy())         # b was not written through a


def test_llvm_backend_computes_a_repeated_amax_once():
    x = _x(64, 33)

    def twice(t):
        return (t - t.amax(1, keepdim=True)).exp() / t.amax(1, keepdim=True)

    def once(t):
        m = t.amax(1, keepdim=True)
        return (t - m).exp() / m
    gm, fn = compiled(twice, x)
    _, ref = compiled(once, x)
    assert fn.stats["cse"] == 1 and ref.stats["cse"] == 0
    assert fn.ir.count("call") == ref.ir.count("call")           # the same kernel: one max pass
    np.testing.assert_allclose(fn(x).numpy(), gm(x).numpy(), rtol=1e-6, atol=1e-7)   # exp: numpy's to 2 ulp
    _, two_softmaxes = compiled(lambda t: t.softmax(1) + t.softmax(1), x)
    assert two_softmaxes.stats["cse"] >= 1 and two_softmaxes.stats["kernels"] == 1


def test_compiled_equals_eager_for_every_backend():
    x = _x(16, 7)

    def f(t):
        m1 = t.amax(1, keepdim=True)
        m2 = t.amax(1, keepdim=True)
        return (t - m1).exp().sum(1) + (t - m2).exp().sum(1)
    want = f(x).numpy()
    for backend in ("eager", "aot_eager", "llvm"):
        np.testing.assert_allclose(dynjit.compile(f, backend=backend)(x).numpy(), want, rtol=1e-6, err_msg=backend)


def test_equal_outputs_stay_two_tensors():
    # eager returns two tensors: writing one leaves the other as it was
    def fn(x, y):
        return y * 3 + x, y * 3 + x, (y * 3 + x).sum()
    gm = make_fx(fn)(_x(4), _x(4))
    new, _ = eliminate_common_subexpressions(gm.graph)
    outputs = [n for n in new.nodes if n.op == "output"][0].args[0]
    assert outputs[0] is not outputs[1]
    for backend in ("eager", "aot_eager", "llvm"):
        a, b, _ = dynjit.compile(fn, backend=backend)(dynjit.ones(2), dynjit.ones(2))
        assert a is not b
        a.add_(1)
        np.testing.assert_array_equal(b.numpy(), [4.0, 4.0])
