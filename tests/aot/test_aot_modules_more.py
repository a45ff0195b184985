"""Modules through aot_module and make_fx: a composite op (linear) stays one node, and a
module's parameters traced by make_fx are constants of the graph, not inputs."""
import pytest

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


class _ResizesItsBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buffer", dynjit.ones(4, 5))

    def forward(self, x):
        y = self.buffer.add_(3)
        y.resize_([20])
        assert y.shape == self.buffer.shape
        return x.sum() + self.buffer.sum()


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_real_weights_in_symbolic_mode_with_inplace_ops
def test_real_weights_in_symbolic_mode_with_inplace_ops():
    # the buffer is a real tensor, not the trace's: resizing it is PyTorch's error
    m = _ResizesItsBuffer().eval()
    with pytest.raises(Exception, match="Can't call metadata"):
        make_fx(m, tracing_mode="symbolic", _allow_non_fake_inputs=True)(dynjit.randn(2, 5))
    # raised before the buffer's metadata changed
    assert m.buffer.shape == (4, 5)


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
def test_metadata_mutation_of_a_tensor_made_outside_a_fake_trace_raises(mode):
    w = dynjit.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"Can't call metadata mutating ops on non-Fake Tensor inputs\. "
                                           r"Found in aten\.t_\.default\(tensor\(\[\.\.\.\], size=\(4, 5\)\)\)"):
        make_fx(lambda x: x + w.t_().t(), tracing_mode=mode)(dynjit.randn(4, 5))
    assert w.shape == (4, 5)
    src = dynjit.ones(2, 5)
    with pytest.raises(RuntimeError, match=r"aten\.set_\.source_Tensor\(tensor\(\[\.\.\.\], size=\(4, 5\)\), "
                                           r"tensor\(\[\.\.\.\], size=\(2, 5\)\)\)"):
        make_fx(lambda x: x + w.set_(src), tracing_mode=mode)(dynjit.randn(2, 5))
    assert w.shape == (4, 5)


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
def test_metadata_mutation_of_the_traces_own_tensors_is_traced(mode):
    # an input, and a tensor made inside the trace, are the trace's own (fake in PyTorch)
    def f(x):
        y = dynjit.ones(2, 5).unsqueeze_(0)
        return x.t_() + y[0]
    gm = make_fx(f, tracing_mode=mode)(dynjit.randn(5, 2))
    x = dynjit.randn(5, 2)
    assert dynjit.allclose(gm(x.clone()), x.t() + 1)
