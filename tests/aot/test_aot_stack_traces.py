"""Stack traces: make_fx(record_stack_traces=True) records on each op node the user's
lines that made it, and AOT autograd copies them onto the forward and backward nodes
made from that node (and onto the copy_ that replays an input write)."""
import dynjit
import dynjit.nn as nn
from dynjit.aot import aot_module_simplified
from dynjit.fx import make_fx

THIS_FILE = "test_aot_stack_traces.py"


def _assert_ops_have_user_traces(gm):
    for node in gm.graph.nodes:
        if node.op in ("output", "placeholder", "get_attr"):
            continue
        assert node.stack_trace is not None and THIS_FILE in node.stack_trace, node


# ports: 001_fdd911346beae147.txt TestAOTModuleSimplified.test_aot_module_simplified_preserves_stack_trace
def test_aot_module_simplified_preserves_stack_trace():
    class MockModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(20, 30)

        def forward(self, x, y):
            z = self.linear(x)
            z = z + y
            z = z.relu()
            return (z,)

    x = dynjit.randn(128, 20, requires_grad=True)
    y = dynjit.randn(128, 30, requires_grad=True)
    mod = make_fx(MockModule(), record_stack_traces=True)(x, y)
    _assert_ops_have_user_traces(mod)
    relu = next(n for n in mod.graph.nodes if n.op == "call_function" and n.target.name == "relu")
    assert "z = z.relu()" in relu.stack_trace
    compiled_graphs = []

    def assert_compiler(gm, _):
        _assert_ops_have_user_traces(gm)
        compiled_graphs.append(gm)
        return gm
    compiled_f = aot_module_simplified(mod, [x, y], fw_compiler=assert_compiler, bw_compiler=assert_compiler)
    res = compiled_f(x, y)
    res[0].sum().backward()
    assert len(compiled_graphs) == 2          # the forward and the backward were both checked
    # the backward of relu (a mask of its output) comes from the relu line
    gt = next(n for n in compiled_graphs[1].graph.nodes if n.op == "call_function" and n.target.name == "gt")
    assert "z = z.relu()" in gt.stack_trace


# ports: 001_fdd911346beae147.txt TestAOTModuleSimplified.test_aot_module_simplified_preserves_stack_trace_from_mutation
def test_aot_module_simplified_preserves_stack_trace_from_mutation():
    class MockModule(nn.Module):
        def forward(self, x):
            x_view = x[0]
            x_view.mul_(2)
            return (x + x,)

    mod = make_fx(MockModule(), record_stack_traces=True)(dynjit.randn(128, 20))
    _assert_ops_have_user_traces(mod)
    seen = []

    def assert_compiler(gm, _):
        copies = [n for n in gm.graph.nodes if n.op == "call_function" and n.target.name == "copy_"]
        assert copies
        for node in copies:
            assert "x_view.mul_(2)" in node.meta["stack_trace"]
        seen.append(gm)
        return gm
    aot_module_simplified(mod, [dynjit.randn(128, 20)], fw_compiler=assert_compiler,
                          bw_compiler=assert_compiler, keep_inference_input_mutations=True)
    assert len(seen) == 1
