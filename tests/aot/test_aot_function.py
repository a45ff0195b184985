"""aot_function basics: outputs, inference graphs, compilers, custom Functions,
autograd.grad inside, caching and recompiles, random numbers, error cases."""
import weakref

import pytest

import dynjit
from dynjit.aot import (aot_function, aot_module, aot_module_simplified, make_boxed_compiler, make_boxed_func,
                        nop, min_cut_rematerialization_partition)
from dynjit.ops import registry as R

from aot_verify import verify_aot, GraphRecorder


def _leaf(*shape, requires_grad=True, fill=None):
    if fill is not None:
        return dynjit.full(shape, fill, requires_grad=requires_grad)
    return dynjit.randn(*shape, requires_grad=requires_grad)


def _inputs(*tensors):
    """make_inputs for verify_aot: the given leaf factories, passed as the arguments."""
    def make():
        ts = [t() if callable(t) else t for t in tensors]
        return [t for t in ts if isinstance(t, dynjit.Tensor) and t.requires_grad], ts
    return make


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_non_tensor_and_none_inputs
@pytest.mark.parametrize("requires_grad", [True, False])
def test_non_tensor_and_none_inputs(requires_grad):
    def f(a, b, c):
        return a * c
    verify_aot(f, _inputs(2, None, lambda: dynjit.ones(3, 3, requires_grad=requires_grad)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_single_output
@pytest.mark.parametrize("requires_grad", [True, False])
def test_single_output(requires_grad):
    verify_aot(lambda a, b: a + b, _inputs(lambda: _leaf(3, 3, requires_grad=requires_grad),
                                           lambda: _leaf(3, 3, requires_grad=False)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_multi_output
@pytest.mark.parametrize("requires_grad", [True, False])
def test_multi_output(requires_grad):
    verify_aot(lambda a, b: (a + b, a - b), _inputs(lambda: _leaf(3, 3, requires_grad=requires_grad),
                                                    lambda: _leaf(3, 3, requires_grad=False)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_multi_output_list
@pytest.mark.parametrize("requires_grad", [True, False])
def test_multi_output_list(requires_grad):
    verify_aot(lambda a, b: [a + b, a - b], _inputs(lambda: _leaf(3, 3, requires_grad=requires_grad),
                                                    lambda: _leaf(3, 3, requires_grad=False)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_dict
def test_output_dict():
    verify_aot(lambda x: {"a": x, "b": x}, _inputs(lambda: _leaf(3, 3)))
    verify_aot(lambda x, y: {"a": x, "b": y + x}, _inputs(lambda: _leaf(3), lambda: _leaf(3, requires_grad=False)))

    def f(d):
        return {k: d[k] * 2 for k in d}

    def make():
        a, b = _leaf(3), _leaf(3)
        return [a, b], [{"a": a, "b": b}]
    verify_aot(f, make)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_some_outputs_dont_require_grad_non_view
def test_some_outputs_dont_require_grad_non_view():
    verify_aot(lambda a, b: (a.add(1).detach(), b), _inputs(lambda: _leaf(3, 3), lambda: _leaf(3, 3)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_inner_grad
def test_autograd_grad_inside_the_compiled_function():
    def foo(x):
        y = dynjit.exp(x)
        return dynjit.autograd.grad(y, x)
    verify_aot(foo, _inputs(lambda: _leaf()))


def test_create_graph_inside_the_compiled_function():
    # a gradient computed with create_graph=True is itself differentiated by the joint trace
    def f(x):
        g, = dynjit.autograd.grad((x ** 3).sum(), x, create_graph=True)
        return g
    verify_aot(f, _inputs(lambda: _leaf(4)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_grad_context
def test_bw_compiler_runs_only_when_a_backward_runs():
    sizes = []

    def get_graph_size(gm, _):
        sizes.append(len(gm.graph.nodes))
        return gm
    x = _leaf()
    f = aot_function(lambda x: x * 2, nop, get_graph_size)
    with dynjit.set_grad_enabled(False):
        f(x)
    assert sizes == []
    f = aot_function(lambda x: x * 2, nop, get_graph_size)
    out = f(x)
    assert sizes == []
    out.sum().backward()
    assert len(sizes) == 1 and sizes[0] > 2


def test_no_grad_call_compiles_only_a_forward_graph():
    fw, bw = GraphRecorder(), GraphRecorder()
    f = aot_function(lambda x, y: (x * y).sin(), fw, bw)
    with dynjit.no_grad():
        out = f(_leaf(3), _leaf(3))
    assert not out.requires_grad and len(fw.graphs) == 1 and bw.graphs == []
    assert fw.graphs[0].code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    mul = dynjit.ops.mul(arg0_1, arg1_1);  arg0_1 = arg1_1 = None\n"
        "    sin = dynjit.ops.sin(mul);  mul = None\n"
        "    return (sin,)\n")


def test_grad_mode_is_part_of_the_signature():
    fw = GraphRecorder()
    f = aot_function(lambda x: x.exp(), fw)
    x = _leaf(3)
    with dynjit.no_grad():
        f(x)
    out = f(x)
    assert len(fw.graphs) == 2 and out.requires_grad
    out.sum().backward()
    assert dynjit.allclose(x.grad, x.exp())


# ports: 001_fdd911346beae147.txt TestAOTExport.test_generate_gives_inference_graph
def test_no_grad_inside_gives_an_inference_graph():
    def generate(x):
        with dynjit.no_grad():
            return dynjit.mul(x, x)
    inference, fw = GraphRecorder(), GraphRecorder()
    f = aot_function(generate, fw, inference_compiler=inference)
    res = f(_leaf(4))
    assert len(inference.graphs) == 1 and fw.graphs == []
    assert not res.requires_grad and res.grad_fn is None


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_inference_mode
def test_inference_mode():
    m = dynjit.nn.Linear(4, 4)
    inp = dynjit.randn(4, 4)
    aot_mod = aot_module(m, fw_compiler=nop)
    with dynjit.inference_mode():
        out_ref = m(inp)
        out_test = aot_mod(inp)
    assert dynjit.equal(out_ref, out_test)
    assert not out_test.requires_grad


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_list_codegen
def test_boxed_compiler_output():
    def list_nop(gm, _):
        def g(inputs):
            assert isinstance(inputs, list)
            return gm(*inputs)
        g._boxed_call = True
        return g
    f = aot_function(lambda a, b, c: a.sin() * b.cos() * c.sin(), list_nop)
    inp = [_leaf(5) for _ in range(3)]
    f(*inp).sum().backward()
    assert dynjit.allclose(inp[0].grad, inp[0].cos() * inp[1].cos() * inp[2].sin())


def test_make_boxed_compiler_and_func():
    calls = []

    def compiler(gm, example_inputs):
        calls.append([tuple(t.shape) for t in example_inputs])
        return gm.forward
    boxed = make_boxed_compiler(compiler)
    fn = boxed(dynjit.fx.make_fx(lambda x: x + 1)(dynjit.ones(2)), [dynjit.ones(2)])
    assert fn._boxed_call and dynjit.equal(fn([dynjit.zeros(2)]), dynjit.ones(2))
    assert make_boxed_func(fn) is not fn and make_boxed_func(lambda x: x)([3]) == 3
    f = aot_function(lambda x: x.sin(), boxed)
    x = _leaf(2, 3)
    f(x).sum().backward()
    # the direct call above, then forward (the primals), then backward (saved + tangents)
    assert calls == [[(2,)], [(2, 3)], [(2, 3), (2, 3)]]


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_custom_autograd
@pytest.mark.parametrize("requires_grad", [False, True])
def test_custom_autograd_function(requires_grad):
    class CustomFn(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output + 1
    verify_aot(lambda x: CustomFn.apply(x), _inputs(lambda: _leaf(3, requires_grad=requires_grad)))


def test_custom_function_with_saved_tensors_and_non_differentiable_output():
    class SortedWithIndex(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * x * scale, idx

        @staticmethod
        def backward(ctx, g, _):
            x, = ctx.saved_tensors
            return 2 * x * g * ctx.scale, None

    def f(x):
        y, idx = SortedWithIndex.apply(x, 3.0)
        return y.sum(), idx
    verify_aot(f, _inputs(lambda: _leaf(5)))


def test_custom_function_returning_its_input():
    class Identity(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    verify_aot(lambda x: Identity.apply(x * 1) * 3, _inputs(lambda: _leaf(4)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_backward_mutation_data
@pytest.mark.parametrize("b_requires_grad", [False, True])
def test_backward_writes_into_a_saved_input(b_requires_grad):
    class BwMutation(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            x.mul_(2)
            return grad_output.clone()

    def f(a, b):
        return a * BwMutation.apply(b)
    verify_aot(f, _inputs(lambda: dynjit.ones(3, 3, requires_grad=True),
                          lambda: dynjit.ones(3, 3, requires_grad=b_requires_grad)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_backward_mutation_forward_inputs
def test_backward_zeroes_a_forward_input():
    class Clone(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x, x1):
            ctx.x1 = x1
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            with dynjit.no_grad():
                ctx.x1.zero_()
            return grad * 2, None

    def fn(x, x1):
        return Clone.apply(x, x1)
    x, x1 = _leaf(3), dynjit.randn(3)
    ref_x, ref_x1 = x.detach().clone().requires_grad_(), x1.clone()
    ref_y = fn(ref_x, ref_x1)
    ref_y.sum().backward()
    y = aot_function(fn, nop)(x, x1)
    assert not (x1 == 0).all().item()      # written in the backward, not the forward
    y.sum().backward()
    assert dynjit.equal(x1, ref_x1) and dynjit.equal(x1, dynjit.zeros(3))
    assert dynjit.equal(y, ref_y) and dynjit.equal(x.grad, ref_x.grad)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_backward_mutation_on_grad_out
def test_backward_writing_its_grad_output_is_an_error():
    class BwMutation(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            grad_output.mul_(2)
            return grad_output.clone()

    f = aot_function(lambda a, b: BwMutation.apply(a * b), nop)
    with pytest.raises(RuntimeError, match="input to the backward that was mutated during the backward"):
        f(_leaf(3, 3), _leaf(3, 3))


# (The seed TestAOTAutograd.test_backward_mutation_forward_inputs_create_graph needs torch.library.custom_op
# and AOT's error for a backward that mutates a forward input; this checks only the refusal of double backward.)
def test_double_backward_through_a_compiled_function_is_an_error():
    f = aot_function(lambda x: x.sin(), nop)
    x = _leaf(3)
    loss = f(x).sum()
    with pytest.raises(RuntimeError, match="does not support double backward"):
        dynjit.autograd.grad(loss, x, create_graph=True)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_dupe_arg
def test_same_tensor_passed_twice():
    x = _leaf(3, 3)
    verify_aot(lambda x, y: x + y, lambda: ([x], [x, x]))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_dupe_arg_returned_as_output
def test_same_tensor_twice_written_and_returned():
    def f(a, b, a_):
        a[0].add_(1)
        return a_
    f_compiled = aot_function(f, nop)
    a, b = dynjit.ones(2), dynjit.ones(2)
    out_ref = f(a, b, a)
    a2, b2 = dynjit.ones(2), dynjit.ones(2)
    out_test = f_compiled(a2, b2, a2)
    assert out_test is a2 and dynjit.equal(out_ref, out_test) and dynjit.equal(a, a2)


def test_aliasing_of_arguments_is_part_of_the_signature():
    fw = GraphRecorder()
    f = aot_function(lambda a, b: a.add_(1) + b, fw)
    x = dynjit.zeros(3)
    assert dynjit.equal(f(x, x), dynjit.full((3,), 2.0))          # b sees a's write
    assert dynjit.equal(f(dynjit.zeros(3), dynjit.zeros(3)), dynjit.ones(3))
    assert len(fw.graphs) == 2


def test_non_tensor_arguments_are_specialized():
    # a string is specialized; an int is a graph input (a traced number, see
    # tests/aot/test_number_inputs.py): a new value of it does not trace again
    fw = GraphRecorder()
    f = aot_function(lambda x, n, mode: x * n if mode == "mul" else x + n, fw)
    x = dynjit.ones(2)
    assert dynjit.equal(f(x, 2, "mul"), dynjit.full((2,), 2.0))
    assert dynjit.equal(f(x, 3, "mul"), dynjit.full((2,), 3.0))
    assert dynjit.equal(f(x, 3, "add"), dynjit.full((2,), 4.0))
    assert dynjit.equal(f(x, 3, "add"), dynjit.full((2,), 4.0))
    assert len(fw.graphs) == 2
    assert "mul(arg0_1, arg1_1)" in fw.graphs[0].code and "add(arg0_1, arg1_1)" in fw.graphs[1].code


def test_shapes_dtypes_and_requires_grad_are_part_of_the_signature():
    fw = GraphRecorder()
    f = aot_function(lambda x: x.sum(0), fw)
    f(dynjit.ones(2, 3))
    f(dynjit.ones(2, 3))
    f(dynjit.ones(4, 3))
    f(dynjit.ones(2, 3, dtype=dynjit.float64))
    f(dynjit.ones(2, 3).t())                      # other strides
    f(dynjit.ones(2, 3, requires_grad=True))
    assert len(fw.graphs) == 5 and len(f._cache) == 5


def test_keyword_arguments():
    def g(x, *, scale=1.0, shift=None):
        return x * scale + (0 if shift is None else shift)
    f = aot_function(g, nop)
    verify_aot(lambda x: g(x, scale=2.0, shift=x), _inputs(lambda: _leaf(3)),
               compiled_f=lambda x: f(x, scale=2.0, shift=x))
    x = _leaf(3)
    assert dynjit.allclose(f(x, scale=3.0), x * 3) and len(f._cache) == 2


def test_int_and_none_outputs():
    verify_aot(lambda x: (x * 2, x.shape[0], None, "tag"), _inputs(lambda: _leaf(3)))


def test_integer_tensor_outputs_never_require_grad():
    verify_aot(lambda x: (x.argmax(), (x > 0), x.sum()), _inputs(lambda: _leaf(5)))


# ports: 001_fdd911346beae147.txt TestAOTExport.test_preserve_random
def test_random_numbers_are_those_eager_draws():
    def fn(x):
        return dynjit.dropout(x, 0.5) + x
    x = dynjit.randn(16)
    dynjit.manual_seed(0)
    ref = [fn(x), fn(x)]
    dynjit.manual_seed(0)
    aot_fn = aot_function(fn, nop)
    res = [aot_fn(x), aot_fn(x)]
    assert dynjit.equal(ref[0], res[0]) and dynjit.equal(ref[1], res[1])


# ports: 001_fdd911346beae147.txt TestAOTExport.test_contiguous
def test_gradient_of_a_transposed_view_output():
    def f(x):
        return x.view(2, 3).t()
    inp = _leaf(6)
    out = aot_function(f, nop)(inp)
    g = dynjit.randn(3, 2)
    grad, = dynjit.autograd.grad(out, inp, g)
    assert dynjit.equal(grad, g.t().reshape(6))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_op_depending_on_symint
def test_expand_to_own_shape_with_min_cut():
    af = aot_function(lambda x: x.expand(x.shape), nop, partition_fn=min_cut_rematerialization_partition)
    inp = _leaf(5)
    assert dynjit.equal(af(inp), inp.expand(inp.shape))


# ports: 001_fdd911346beae147.txt TestAOTExport.test_meta_tensor_inplace_op
def test_every_graph_node_has_tensor_meta():
    def check_meta_tensor(gm, _):
        for node in gm.graph.nodes:
            if node.op != "output":
                assert "tensor_meta" in node.meta, node.name
        return gm
    w, b = _leaf(12, 8), _leaf(12)

    def f(x):
        y = R["linear"](x, w, b)
        y.mul_(0.5)
        return R["gelu"](y)
    out = aot_function(f, check_meta_tensor)(_leaf(4, 3, 8))
    out.sum().backward()
    assert w.grad is not None


# ports: 001_fdd911346beae147.txt TestAOTModuleSimplified.test_lift_fresh_copy_in_graph
def test_tensor_literal_made_inside_the_function():
    def f(x):
        c = dynjit.tensor([1.0, 2.0, 3.0, 4.0])
        c.mul_(2)                      # written in place: the graph starts from the literal
        return (x.mul(c),)
    compiled = aot_module_simplified(f, [dynjit.ones(4, requires_grad=True)], nop)
    for _ in range(2):
        x = dynjit.ones(4, requires_grad=True)
        assert dynjit.equal(compiled(x)[0].detach(), f(x)[0].detach())


def test_aot_module_simplified_compiles_for_the_example_inputs():
    fw = GraphRecorder()
    compiled = aot_module_simplified(lambda x, y: (x @ y,), [dynjit.randn(2, 3), dynjit.randn(3, 4)], fw)
    assert len(fw.graphs) == 1                      # at compile time, not at the first call
    x, y = dynjit.randn(2, 3), dynjit.randn(3, 4)
    assert dynjit.allclose(compiled(x, y)[0], x @ y) and len(fw.graphs) == 1


def test_outputs_holding_tensors_in_other_objects_are_an_error():
    class Result:
        def __init__(self, value):
            self.value = value
    f = aot_function(lambda x: Result(x * 2), nop)
    with pytest.raises(TypeError, match="returned a Result holding tensors"):
        f(dynjit.ones(2))


def test_aot_function_errors_are_clear():
    with pytest.raises(TypeError, match="aot_function needs a callable"):
        aot_function(3, nop)
    with pytest.raises(TypeError, match="fw_compiler must be a callable"):
        aot_function(lambda x: x, None)
    f = aot_function(lambda x: x + 1, lambda gm, ex: "not a function")
    with pytest.raises(TypeError, match="returned str, which is not callable"):
        f(dynjit.ones(2))


def test_leaf_written_in_place_raises_as_in_eager():
    def f(x):
        x.mul_(2)
        return x
    x = _leaf(3)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an "
                                           r"in-place operation \(mul_\)"):
        f(x)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an "
                                           r"in-place operation \(mul_\)"):
        aot_function(f, nop)(x)
    assert dynjit.equal(x, x.detach())        # nothing was written
    with dynjit.no_grad():
        aot_function(f, nop)(x)               # allowed under no_grad, as in eager
    v = _leaf(4)[1:]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        aot_function(f, nop)(v)


def test_closure_tensors_that_require_grad_become_inputs():
    w = _leaf(3, 3)
    fw = GraphRecorder()
    f = aot_function(lambda x: (x @ w).relu(), fw)
    x = dynjit.randn(2, 3)              # only the closure's tensor needs a gradient
    out = f(x)
    assert out.requires_grad
    out.sum().backward()
    assert dynjit.allclose(w.grad, x.t() @ ((x @ w) > 0).float())
    assert [n.name for n in fw.graphs[0].graph.nodes if n.op == "placeholder"] == ["primals_1", "primals_2"]
    with dynjit.no_grad():
        w.mul_(2)                        # the graph reads the tensor itself, not a copy
    assert dynjit.allclose(f(x), (x @ w).relu())


def test_writing_a_closure_tensor_is_an_error():
    w = _leaf(3).mul(1)
    with pytest.raises(RuntimeError, match=r"modifies in place \(mul_\) a tensor that is not one of its arguments"):
        aot_function(lambda x: w.mul_(x), nop)(dynjit.ones(3))
    buf = dynjit.zeros(3)
    with pytest.raises(RuntimeError, match=r"modifies in place \(add_\) a tensor that is not one of its arguments"):
        aot_function(lambda x: buf.add_(x), nop)(dynjit.ones(3))


def test_nested_aot_inside_make_fx():
    inner = aot_function(lambda x: x.sin() * 2, nop)
    gm = dynjit.fx.make_fx(lambda x: inner(x) + 1)(dynjit.randn(3))
    x = dynjit.randn(3)
    assert dynjit.allclose(gm(x), x.sin() * 2 + 1)
    assert not any(n.op == "get_attr" for n in gm.graph.nodes)


def test_an_error_while_tracing_leaves_no_state_behind():
    from dynjit.ops.dispatch import current_modes

    def f(x, fail):
        y = x * 2
        if fail:
            raise ValueError("bad input")
        return y
    compiled = aot_function(f, nop)
    with dynjit.no_grad():
        with pytest.raises(ValueError, match="bad input"):
            compiled(_leaf(3), True)
        assert current_modes() == () and not dynjit.is_grad_enabled()
    assert dynjit.is_grad_enabled() and not compiled._cache
    assert dynjit.allclose(compiled(dynjit.ones(3), False), dynjit.full((3,), 2.0))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_mem_leak_from_save_for_bw
def test_saved_tensors_are_freed():
    import weakref

    def f(a, b):
        add = a + a
        first, second = add.split(4, 1)
        return second, second.unsqueeze(-1) * b
    compiled = aot_function(f, nop)
    inps = [dynjit.ones(8, 8, requires_grad=True), dynjit.ones(1, 4, 1, requires_grad=True)]
    outs = compiled(*inps)
    node = outs[1].grad_fn
    saved = [weakref.ref(s.tensor) for s in node._saved if s.tensor is not inps[0] and s.tensor is not inps[1]]
    assert saved
    del node, outs                      # no reference cycle keeps them
    assert all(r() is None for r in saved)
    outs = compiled(*inps)
    node = outs[1].grad_fn
    saved = [weakref.ref(s.tensor) for s in node._saved if s.tensor is not inps[0] and s.tensor is not inps[1]]
    outs[1].sum().backward()            # backward frees them too
    del node
    assert all(r() is None for r in saved)


def test_signature_changing_on_every_call_stops_compiling(monkeypatch):
    from dynjit.aot import aot_autograd
    monkeypatch.setattr(aot_autograd, "CACHE_SIZE_LIMIT", 3)

    class Config:                  # unhashable-by-value objects key by identity
        __hash__ = None

        def __init__(self, scale):
            self.scale = scale
    fw = GraphRecorder()
    f = aot_function(lambda x, cfg: x * cfg.scale, fw)
    x = dynjit.ones(2)
    for i in range(3):
        assert dynjit.equal(f(x, Config(i)), dynjit.full((2,), float(i)))
    with pytest.warns(UserWarning, match="traced for 3 different signatures"):
        assert dynjit.equal(f(x, Config(7)), dynjit.full((2,), 7.0))
    assert dynjit.equal(f(x, Config(8)), dynjit.full((2,), 8.0))     # one warning only
    assert len(fw.graphs) == 3


def test_unhashable_argument_at_a_dead_objects_address_is_not_served_its_trace():
    class Config:
        __hash__ = None

        def __init__(self, scale):
            self.scale = scale
    f = aot_function(lambda x, cfg: x * cfg.scale, nop)
    x = dynjit.ones(2)
    first = Config(2.0)
    assert dynjit.equal(f(x, first), dynjit.full((2,), 2.0))
    address = id(first)
    del first
    keep = []
    for _ in range(1000):          # the allocator hands the freed address out again
        c = Config(5.0)
        if id(c) == address:
            break
        keep.append(c)
    else:
        pytest.skip("the allocator did not reuse the address")
    assert dynjit.equal(f(x, c), dynjit.full((2,), 5.0))


def test_unhashable_argument_is_not_kept_alive_by_the_cache():
    class Config:
        __hash__ = None
        scale = 3.0
    f = aot_function(lambda x, cfg: x * cfg.scale, nop)
    cfg = Config()
    f(dynjit.ones(2), cfg)
    ref = weakref.ref(cfg)
    del cfg
    assert ref() is None


def _outcome(fn, *args):
    try:
        return "returned", fn(*args)
    except Exception as e:
        return "raised", (type(e), str(e))


def test_an_error_on_a_calls_data_comes_after_the_input_writes_before_it_as_in_eager():
    def bump_then_pick(x, idx):
        x.mul_(2)                      # written before the failing index, as eager writes it
        return x[idx]
    f = aot_function(bump_then_pick, nop)
    assert dynjit.equal(f(dynjit.ones(3), dynjit.tensor([0, 2])), dynjit.full((2,), 2.0))
    plain_x, compiled_x = dynjit.ones(3), dynjit.ones(3)
    want = _outcome(bump_then_pick, plain_x, dynjit.tensor([0, 7]))
    got = _outcome(f, compiled_x, dynjit.tensor([0, 7]))      # the cached graph raises
    assert got[0] == want[0] == "raised" and got[1] == want[1]
    assert dynjit.equal(compiled_x, plain_x)


def test_a_size_mismatch_on_a_new_signature_raises_after_the_writes_before_it():
    def bump_then_add(x, y):
        x.add_(1)
        return x + y
    f = aot_function(bump_then_add, nop)
    f(dynjit.zeros(3), dynjit.ones(3))
    plain_x, compiled_x = dynjit.zeros(4), dynjit.zeros(4)
    want = _outcome(bump_then_add, plain_x, dynjit.ones(5))
    got = _outcome(f, compiled_x, dynjit.ones(5))           # its trace raises the user's error
    assert got[0] == want[0] == "raised" and got[1] == want[1]
    assert dynjit.equal(compiled_x, plain_x)
