"""Modules through aot_module and make_fx: a composite op (linear) stays one node, and a
module's parameters traced by make_fx are constants of the graph, not inputs."""
import dynjit
import dynjit.nn as nn
from dynjit.aot import aot_module, nop
from dynjit.func import functionalize
from dynjit.fx import make_fx

from aot_verify import verify_aot, GraphRecorder


class _Foo(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, a):
        return self.linear(a)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_composite_impl_compile
def test_composite_impl_compile():
    mod = _Foo()
    fw = GraphRecorder()
    compiled = aot_module(mod, fw, nop)

    def make():
        leaf = dynjit.ones(3, 3, requires_grad=True)
        return [leaf], [leaf.clone()]
    eager_mod = _Foo()
    eager_mod.load_state_dict(mod.state_dict())
    _, x = make()
    _, x2 = make()
    out, ref = compiled(*x), eager_mod(*x2)
    out.sum().backward()
    ref.sum().backward()
    assert dynjit.allclose(out, ref)
    assert dynjit.allclose(mod.linear.weight.grad, eager_mod.linear.weight.grad)
    assert dynjit.allclose(mod.linear.bias.grad, eager_mod.linear.bias.grad)
    # the parameters come first; linear is one op, and backward needs the weight and input
    assert fw.graphs[-1].code == (
        "def forward(self, primals_1, primals_2, primals_3):\n"
        "    linear = dynjit.ops.linear(primals_3, primals_1, primals_2);  primals_2 = None\n"
        "    return (linear, primals_1, primals_3)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_real_weights_in_symbolic_mode
def test_real_weights_in_symbolic_mode():
    m = _Foo(5).eval()
    inp = dynjit.randn(2, 5)
    gm = make_fx(m, tracing_mode="symbolic", _allow_non_fake_inputs=True)(inp)
    assert dynjit.allclose(gm(dynjit.ones(2, 5)), m(dynjit.ones(2, 5)))
    gm_functionalized = make_fx(functionalize(gm), tracing_mode="symbolic", _allow_non_fake_inputs=True)(inp)
    assert dynjit.allclose(gm_functionalized(dynjit.ones(2, 5)), m(dynjit.ones(2, 5)))
    # the weights are the module's tensors, not lifted to inputs
    for g in (gm, gm_functionalized):
        assert sum(n.op == "placeholder" for n in g.graph.nodes) == 1
