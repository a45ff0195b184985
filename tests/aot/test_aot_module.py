"""aot_module and aot_module_simplified on modules: parameters and buffers are
graph inputs (never constants), buffer writes are replayed on the module's
buffers, gradients reach the module's parameters.

`Affine` is a minimal module with just what aot_module relies on (the
`named_parameters` / `named_buffers` listing and the `_parameters` /
`_buffers` dicts that functional_call swaps), so these tests do not depend on
dynjit.nn."""
import dynjit
from dynjit.aot import aot_module, aot_module_simplified, functional_call, make_boxed_compiler, nop
from dynjit.ops import registry as R

from aot_verify import GraphRecorder


class Module:
    def __init__(self):
        self.__dict__.update(_parameters={}, _buffers={}, _modules={})

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, dynjit.Tensor) and value.requires_grad:
            self._parameters[name] = value
        else:
            object.__setattr__(self, name, value)

    def register_buffer(self, name, value):
        self._buffers[name] = value

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__[store]
            if name in d:
                return d[name]
        raise AttributeError(name)

    def _named(self, store, prefix=""):
        for name, value in self.__dict__[store].items():
            yield prefix + name, value
        for name, sub in self._modules.items():
            yield from sub._named(store, prefix + name + ".")

    def named_parameters(self):
        return self._named("_parameters")

    def named_buffers(self):
        return self._named("_buffers")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class Affine(Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = dynjit.randn(n_out, n_in, requires_grad=True)
        self.bias = dynjit.zeros(n_out, requires_grad=True)

    def forward(self, x):
        return R["linear"](x, self.weight, self.bias)


class TwoLayers(Module):
    def __init__(self):
        super().__init__()
        self.first = Affine(32, 16)
        self.second = Affine(16, 4)
        self.register_buffer("calls", dynjit.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return self.second(self.first(x).relu())


def _clone_module(mod, cls, *args):
    other = cls(*args)
    for (_, a), (_, b) in zip(mod.named_parameters(), other.named_parameters()):
        with dynjit.no_grad():
            b.copy_(a)
    return other


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_module
def test_module_outputs_and_parameter_gradients():
    mod = TwoLayers()
    ref_mod = _clone_module(mod, TwoLayers)
    compiled = aot_module(mod, nop, nop)
    inp = dynjit.randn(8, 32)
    ref_out = ref_mod(inp)
    ref_out.sum().backward()
    out = compiled(inp)
    out.sum().backward()
    assert dynjit.allclose(out, ref_out)
    for (name, p), (ref_name, q) in zip(mod.named_parameters(), ref_mod.named_parameters()):
        assert name == ref_name and dynjit.allclose(p.grad, q.grad)
    assert dynjit.equal(mod.calls, dynjit.ones(1))           # the buffer write happened once


def test_parameters_and_buffers_are_graph_inputs_in_order():
    fw = GraphRecorder()
    mod = TwoLayers()
    aot_module(mod, fw, nop)(dynjit.randn(2, 32))
    names = [n for n, _ in mod.named_parameters()] + [n for n, _ in mod.named_buffers()]
    assert names == ["first.weight", "first.bias", "second.weight", "second.bias", "calls"]
    placeholders = [n for n in fw.graphs[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 6 and not any(n.op == "get_attr" for n in fw.graphs[0].graph.nodes)


def test_parameter_updates_are_seen_without_recompiling():
    fw = GraphRecorder()
    mod = Affine(3, 2)
    compiled = aot_module(mod, fw)
    x = dynjit.randn(4, 3)
    compiled(x)
    with dynjit.no_grad():
        mod.weight.mul_(0)
        mod.bias.fill_(5)
    assert dynjit.equal(compiled(x), dynjit.full((4, 2), 5.0)) and len(fw.graphs) == 1


def test_aot_module_delegates_attributes():
    mod = Affine(3, 2)
    compiled = aot_module(mod, nop)
    assert compiled.orig_module is mod and compiled.weight is mod.weight
    assert compiled.parameters() == [mod.weight, mod.bias]


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_buffer_copied_in_graph
def test_buffer_copied_in_graph():
    class MyModel(Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", dynjit.zeros(1))
            self.w1 = dynjit.zeros(1, requires_grad=True)
            self.w2 = dynjit.zeros(1, requires_grad=True)

        def forward(self, x):
            self.buf.add_(1)
            return (self.w1 * x * self.w2).sum() + self.buf.sum()

    model_for_eager, model_for_compile = MyModel(), MyModel()
    fw = GraphRecorder()
    compiled_f = aot_module(model_for_compile, fw_compiler=make_boxed_compiler(fw), bw_compiler=nop,
                            keep_inference_input_mutations=True)
    inp_ref, inp_test = dynjit.ones(1, requires_grad=True), dynjit.ones(1, requires_grad=True)
    out_ref = model_for_eager(inp_ref.clone())
    out_test = compiled_f(inp_test.clone())
    assert fw.graphs[0].code == (
        "def forward(self, primals_1, primals_2, primals_3, primals_4):\n"
        "    add = dynjit.ops.add(primals_3, 1)\n"
        "    mul = dynjit.ops.mul(primals_1, primals_4)\n"
        "    mul_1 = dynjit.ops.mul(mul, primals_2)\n"
        "    sum_1 = dynjit.ops.sum(mul_1);  mul_1 = None\n"
        "    sum_2 = dynjit.ops.sum(add)\n"
        "    add_1 = dynjit.ops.add(sum_1, sum_2);  sum_1 = sum_2 = None\n"
        "    copy_ = dynjit.ops.copy_(primals_3, add);  primals_3 = add = None\n"
        "    return (add_1, primals_1, primals_2, primals_4, mul)\n")
    assert dynjit.equal(out_ref, out_test)
    out_ref.backward()
    out_test.backward()
    assert dynjit.equal(model_for_compile.buf, model_for_eager.buf)
    assert dynjit.equal(model_for_compile.w1.grad, model_for_eager.w1.grad)
    assert dynjit.equal(inp_test.grad, inp_ref.grad)


# ports: 001_fdd911346beae147.txt TestAOTModuleSimplified.test_aot_module_simplified
def test_aot_module_simplified():
    class MockModule(Module):
        def __init__(self):
            super().__init__()
            self.linear = Affine(20, 30)

        def forward(self, x, y):
            return (self.linear(x) + y,)

    mod = MockModule()
    x, y = dynjit.randn(128, 20, requires_grad=True), dynjit.randn(128, 30, requires_grad=True)
    inputs = [x, y]
    cloned_inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    ref = mod(*inputs)
    ref[0].sum().backward()
    ref_weight_grad = mod.linear.weight.grad
    mod.linear.weight.grad = None
    compiled_f = aot_module_simplified(mod, cloned_inputs, nop)
    res = compiled_f(*cloned_inputs)
    res[0].sum().backward()
    assert dynjit.allclose(ref[0], res[0])
    assert dynjit.allclose(inputs[0].grad, cloned_inputs[0].grad)
    assert dynjit.allclose(inputs[1].grad, cloned_inputs[1].grad)
    assert dynjit.allclose(mod.linear.weight.grad, ref_weight_grad)


def test_functional_call_swaps_and_restores():
    mod = Affine(2, 2)
    weight = mod.weight
    x = dynjit.ones(1, 2)
    out = functional_call(mod, {"weight": dynjit.zeros(2, 2), "bias": dynjit.ones(2)}, (x,))
    assert dynjit.equal(out, dynjit.ones(1, 2)) and mod.weight is weight
    try:
        functional_call(mod, {"nonexistent": dynjit.ones(2)}, (x,))
    except KeyError as e:
        assert "Affine has no parameter or buffer named 'nonexistent'" in str(e)
    else:
        raise AssertionError("expected a KeyError")
