"""Batch norm through AOT autograd: running statistics are buffers written in place
(copied back, or kept in the graph as copy_ with keep_inference_input_mutations), the
saved input is its value before any write, and eval mode writes nothing."""
import copy

import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.aot import aot_module, aot_function, make_boxed_compiler, nop

from aot_verify import verify_aot, GraphRecorder


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_batchnorm
@pytest.mark.parametrize("requires_grad", [True, False])
def test_input_mutation_batchnorm(requires_grad):
    def f(inpt, weight, bias, running_mean, running_var):
        return F.batch_norm(inpt, running_mean, running_var, weight, bias, True, 0.5, 1e-5)

    def make():
        leaves = [dynjit.randn(2, 5, 5, 5, requires_grad=requires_grad),
                  dynjit.randn(5, requires_grad=requires_grad), dynjit.randn(5, requires_grad=requires_grad)]
        return leaves, leaves + [dynjit.randn(5), dynjit.rand(5) + 0.5]
    fw = GraphRecorder()
    verify_aot(f, make, compiled_f=aot_function(f, fw, nop))   # running stats updated as in eager
    assert "copy_" not in fw.graphs[-1].code    # new running stats are outputs, copied back


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_batchnorm_inference
def test_batchnorm_inference():
    m = nn.BatchNorm2d(4, 4)          # (num_features, eps), as in PyTorch
    m.eval()
    fw = GraphRecorder()
    compiled = aot_module(m, fw, nop, keep_inference_input_mutations=True)
    x = dynjit.randn(4, 4, 4, 4)
    with dynjit.no_grad():
        out = compiled(x)
        ref = m(x)
    assert dynjit.allclose(out, ref)
    assert "copy_" not in fw.graphs[-1].code    # eval mode writes no running statistic


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_batchnorm
def test_batchnorm():
    eager, compiled_mod = nn.BatchNorm2d(4), nn.BatchNorm2d(4)
    mod = aot_module(compiled_mod, nop, nop)
    x = dynjit.randn(1, 4, 2, 2)
    ref, out = eager(x), mod(x)
    ref.sum().backward()
    out.sum().backward()
    assert dynjit.allclose(out, ref)
    assert dynjit.allclose(compiled_mod.weight.grad, eager.weight.grad)
    assert dynjit.allclose(compiled_mod.bias.grad, eager.bias.grad)
    for a, b in zip(eager.buffers(), compiled_mod.buffers()):
        assert dynjit.allclose(a, b)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_buffer_batch_norm
def test_buffer_batch_norm():
    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = nn.BatchNorm1d(100)

        def forward(self, x):
            return self.m(x)

    model_for_eager = MyModel()
    model_for_compile = copy.deepcopy(model_for_eager)
    fw, bw = GraphRecorder(), GraphRecorder()
    compiled_f = aot_module(model_for_compile, make_boxed_compiler(fw), make_boxed_compiler(bw),
                            keep_inference_input_mutations=True)
    inp_ref = dynjit.randn(20, 100, requires_grad=True)
    inp_test = inp_ref.detach().clone().requires_grad_()
    out_ref = model_for_eager(inp_ref.clone())
    out_test = compiled_f(inp_test.clone())
    code = fw.graphs[-1].code
    # inputs: weight, bias, running_mean, running_var, num_batches_tracked, x; the three
    # buffer updates (no gradient flows into them) stay in the graph as copy_ at its end
    assert code.startswith("def forward(self, primals_1, primals_2, primals_3, primals_4, primals_5, "
                           "primals_6):\n    add = dynjit.ops.add(primals_5, 1)\n")
    assert code.count("copy_(") == 3
    assert "copy_ = dynjit.ops.copy_(primals_3, " in code and "dynjit.ops.copy_(primals_4, " in code \
        and "dynjit.ops.copy_(primals_5, add)" in code
    assert dynjit.allclose(out_ref, out_test)
    out_ref.sum().backward()
    out_test.sum().backward()
    assert dynjit.allclose(inp_ref.grad, inp_test.grad, atol=1e-5)
    for (name, a), (_, b) in zip(model_for_eager.named_buffers(), model_for_compile.named_buffers()):
        assert dynjit.allclose(a, b), name
    # the backward gives gradients to weight, bias and x only
    assert bw.graphs[-1].code.rstrip().splitlines()[-1].count(",") == 2
