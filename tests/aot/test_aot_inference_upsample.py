"""aot_module_simplified on a module whose forward is an nn.Upsample (bilinear,
align_corners=True), with an input that does not require grad: an inference graph
(no backward is compiled), one upsample_bilinear2d node, and eager's result.

PyTorch builds the example input under FakeTensorMode; dynjit traces real tensors,
so the example input is a real one, of the seed's shape (2, 512, 40, 59)."""
import dynjit
import dynjit.nn as nn
from dynjit.aot import aot_module_simplified, nop


class _Recorder:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return nop(gm, example_inputs)


# ports: 001_fdd911346beae147.txt TestAOTModuleSimplified.test_inference_python_dispatcher
def test_inference_python_dispatcher():
    class MockModule(nn.Module):               # from a UNet
        def __init__(self):
            super().__init__()
            self.upsample = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)

        def forward(self, x):
            return (self.upsample(x),)

    mod = MockModule()
    x = dynjit.randn(2, 512, 40, 59)           # must not require grad
    fw, bw = _Recorder(), _Recorder()
    compiled_f = aot_module_simplified(mod, [x], fw, bw)
    assert len(fw.graphs) == 1 and bw.graphs == []      # compiled right away, for inference
    targets = [str(n.target) for n in fw.graphs[0].graph.nodes if n.op == "call_function"]
    assert targets == ["dynjit.ops.upsample_bilinear2d"]
    x2 = dynjit.randn(2, 512, 40, 59)
    out, = compiled_f(x2)
    ref, = mod(x2)
    assert out.shape == (2, 512, 80, 118) and not out.requires_grad
    assert dynjit.equal(out, ref)
    assert len(fw.graphs) == 1


def test_upsample_training_graph_through_aot_module_simplified():
    # the same module with an input that requires grad: forward and backward graphs,
    # the backward being the op's upsample_bilinear2d_backward
    mod = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    x = dynjit.randn(2, 3, 4, 5, requires_grad=True)
    fw, bw = _Recorder(), _Recorder()
    compiled_f = aot_module_simplified(mod, [x], fw, bw)
    out = compiled_f(x)
    g = dynjit.randn(2, 3, 8, 10)
    out.backward(g)
    x_ref = x.detach().clone().requires_grad_()
    mod(x_ref).backward(g)
    assert dynjit.allclose(x.grad, x_ref.grad, atol=1e-6)
    assert len(bw.graphs) == 1
    targets = [str(n.target) for n in bw.graphs[0].graph.nodes if n.op == "call_function"]
    assert targets == ["dynjit.ops.upsample_bilinear2d_backward"]
