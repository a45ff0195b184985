"""trace_wrapped: eager calls fn; make_fx records one opaque `trace_wrapped` node; as a
tensor hook it runs during backward, compiled or not (seed 003's non-compiled-autograd tests)."""
import pytest

import dynjit
from dynjit.fx import make_fx, trace_wrapped
from dynjit.testing import normalize_gm, same


def _multiply(x):
    return x * x


def _multiply_invoke(grad):
    return trace_wrapped(grad, fn=_multiply)


_ONE_NODE = '''\
class GraphModule(dynjit.nn.Module):
    def forward(self, grad_1: "f32[2]"):
        trace_wrapped: "f32[2]" = dynjit__trace_wrapped_self_invoke(grad_1);  grad_1 = None
        return trace_wrapped
'''


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_in_eager
def test_hook_through_trace_wrapped_in_eager():
    x = dynjit.tensor([0.5, 0.5], requires_grad=True)
    y = dynjit.tensor([0.5, 0.5], requires_grad=True)
    x.register_hook(_multiply_invoke)
    (x * y).backward(dynjit.tensor([2.0, 2.0]))
    # the hook squares the incoming gradient y * grad_out = [1, 1]
    assert same(x.grad, (y * dynjit.tensor([2.0, 2.0])).detach() ** 2)


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_in_pt2
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_hook_through_trace_wrapped_registered_in_compiled_code(backend):
    def fn(x, y):
        x.register_hook(_multiply_invoke)
        return x * y

    dynjit.reset()
    x = dynjit.tensor([0.5, 1.5], requires_grad=True)
    y = dynjit.tensor([0.5, 0.5], requires_grad=True)
    out = dynjit.optimize(backend)(fn)(x, y)
    out.backward(dynjit.tensor([2.0, 2.0]))
    assert same(x.grad, dynjit.tensor([1.0, 1.0]))          # (y * grad_out) ** 2
    assert same(y.grad, dynjit.tensor([1.0, 3.0]))


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_make_fx_forward_contrived
def test_make_fx_records_one_opaque_node():
    x = dynjit.tensor([0.5, 0.5], requires_grad=True)
    gm = make_fx(_multiply_invoke)(x)
    assert same(gm(x).detach(), dynjit.tensor([0.25, 0.25]))
    assert normalize_gm(gm.print_readable(False)) == _ONE_NODE


# ports: 003_631b059d21a5ae3d.txt BackwardHigherOrderOpTests.test_invoke_make_bw
def test_make_fx_of_the_hook_on_a_real_gradient():
    x = dynjit.tensor([0.5, 0.5], requires_grad=True)

    def fwd(x):
        z = x * x
        return z + z

    fwd(x).backward(dynjit.tensor([1.0, 1.0]))
    gm = make_fx(_multiply_invoke)(x.grad)
    assert same(gm(x.grad), dynjit.tensor([4.0, 4.0]))
    assert normalize_gm(gm.print_readable(False)) == _ONE_NODE


def test_opaque_calls_keep_their_own_functions_and_names():
    def neg(t):
        return -t

    def f(g):
        return trace_wrapped(trace_wrapped(g, fn=_multiply), fn=neg) + 1

    gm = make_fx(f)(dynjit.tensor([3.0]))
    assert [n.name for n in gm.graph.nodes if n.op == "call_function"] == \
        ["trace_wrapped", "trace_wrapped_1", "add"]
    assert same(gm(dynjit.tensor([2.0])), dynjit.tensor([-3.0]))
