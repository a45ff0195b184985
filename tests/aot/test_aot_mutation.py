"""Input mutation and output aliasing through aot_function: the compiled function
writes its inputs and aliases its outputs exactly as eager does (checked by
verify_aot), with functional graphs (no in-place op inside, except the copy_
that keep_inference_input_mutations asks for)."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop

from aot_verify import verify_aot, run, GraphRecorder


def _non_leaves(*shape, n=1, requires_grad=True, fill=1.0):
    """make_inputs: n tensors made by an op from leaves, so they may be written in place."""
    def make():
        bases = [dynjit.full(shape, fill, requires_grad=requires_grad) for _ in range(n)]
        return bases, [b.add(1) for b in bases]
    return make


def _leaves(*shape, n=1, requires_grad=True):
    def make():
        ts = [dynjit.randn(*shape, requires_grad=requires_grad) for _ in range(n)]
        return ts, ts
    return make


def _compile_recording(f, **kwargs):
    fw, bw = GraphRecorder(), GraphRecorder()
    return aot_function(f, fw, bw, **kwargs), fw, bw


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_simple
@pytest.mark.parametrize("requires_grad", [True, False])
def test_input_mutation_simple(requires_grad):
    def f(a):
        a.mul_(2)
        return a * 3
    compiled, fw, bw = _compile_recording(f)
    verify_aot(f, _non_leaves(3, 3, requires_grad=requires_grad), compiled_f=compiled)
    if requires_grad:
        # the new value of the input is a forward output; the runtime copies it back
        assert fw.graphs[-1].code == (
            "def forward(self, primals_1):\n"
            "    mul = dynjit.ops.mul(primals_1, 2);  primals_1 = None\n"
            "    mul_1 = dynjit.ops.mul(mul, 3)\n"
            "    return (mul, mul_1)\n")
        assert bw.graphs[-1].code == (
            "def forward(self, tangents_1, tangents_2):\n"
            "    mul_2 = dynjit.ops.mul(tangents_2, 3);  tangents_2 = None\n"
            "    add = dynjit.ops.add(tangents_1, mul_2);  tangents_1 = mul_2 = None\n"
            "    mul_3 = dynjit.ops.mul(add, 2);  add = None\n"
            "    return (mul_3,)\n")


def test_input_mutation_gives_the_input_eager_history():
    def f(a):
        a.mul_(2)
        return a * 3
    base = dynjit.ones(3, requires_grad=True)
    a = base.add(1)
    aot_function(f, nop)(a)
    assert dynjit.equal(a, dynjit.full((3,), 4.0)) and a.grad_fn is not None
    (a * 10).sum().backward()                 # through the write: d(a*10)/dbase = 20
    assert dynjit.equal(base.grad, dynjit.full((3,), 20.0))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_squeeze_mutation
@pytest.mark.parametrize("requires_grad", [True, False])
def test_squeeze_mutation(requires_grad):
    def f(a):
        b = a.clone().squeeze(-1)
        b.add_(1.0)
        return a + b
    verify_aot(f, _leaves(3, 1, requires_grad=requires_grad))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_hidden_from_autograd_aliasing
def test_input_mutation_hidden_from_autograd_aliasing():
    def f(a):
        a_alias = a.view(-1)
        with dynjit.no_grad():
            a_alias.mul_(2)
        return a + 1
    compiled, fw, _ = _compile_recording(f, keep_inference_input_mutations=True)
    verify_aot(f, lambda: ([a := dynjit.ones(4, requires_grad=True)], [a]), compiled_f=compiled)
    # a write autograd does not see may stay in the graph, as a copy_ at its end
    assert fw.graphs[-1].code == (
        "def forward(self, primals_1):\n"
        "    view = dynjit.ops.view(primals_1, (-1,))\n"
        "    mul = dynjit.ops.mul(view, 2);  view = None\n"
        "    view_scatter = dynjit.ops.view_scatter(primals_1, mul, ((dynjit.ops.view, ((-1,),), None),));"
        "  mul = None\n"
        "    add = dynjit.ops.add(view_scatter, 1)\n"
        "    copy_ = dynjit.ops.copy_(primals_1, view_scatter);  primals_1 = view_scatter = None\n"
        "    return (add,)\n")


@pytest.mark.parametrize("keep", [False, True])
def test_inference_mutation_kept_in_graph_or_copied_back(keep):
    def f(a, b):
        a.mul_(2)
        b[0] = 7.0
        return a + b
    compiled, fw, _ = _compile_recording(f, keep_inference_input_mutations=keep)
    with dynjit.no_grad():
        verify_aot(f, _non_leaves(3, n=2, requires_grad=False), compiled_f=compiled)
    n_copies = fw.graphs[-1].code.count("copy_(")
    assert n_copies == (2 if keep else 0)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_output_view_simple
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_output_view_simple(requires_grad):
    compiled, fw, _ = _compile_recording(lambda a: a.view(-1))
    ref, res = run(lambda a: a.view(-1), _non_leaves(2, 2, requires_grad=requires_grad), compiled_f=compiled)
    assert res["out"]._base is res["args"][0]
    # the output is made from the real input at run time: the graph computes nothing
    assert fw.graphs[-1].code == "def forward(self, arg0_1):\n    return ()\n"


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_output_view_mutate_multiple
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_output_view_mutate_multiple(requires_grad):
    def f(a, b, c):
        a.mul_(2)
        c.mul_(3)
        return b.view(2, 2), c.view(2, 2)
    compiled, fw, bw = _compile_recording(f)
    ref, res = run(f, _non_leaves(2, 2, n=3, requires_grad=requires_grad), compiled_f=compiled)
    assert res["out"][0]._base is res["args"][1] and res["out"][1]._base is res["args"][2]
    if requires_grad:
        assert fw.graphs[-1].code == (
            "def forward(self, primals_1, primals_2, primals_3):\n"
            "    mul = dynjit.ops.mul(primals_1, 2);  primals_1 = None\n"
            "    mul_1 = dynjit.ops.mul(primals_3, 3);  primals_3 = None\n"
            "    return (mul, mul_1)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_single
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_single(requires_grad):
    compiled, fw, _ = _compile_recording(lambda a: dynjit.mul(a, 3).view(-1))
    ref, res = run(lambda a: dynjit.mul(a, 3).view(-1), _leaves(3, 3, requires_grad=requires_grad),
                   compiled_f=compiled)
    assert res["out"]._base is not None and res["out"]._base.shape == (3, 3)
    # the graph returns the intermediate; the view of it is made at run time
    assert fw.graphs[-1].code.endswith("mul = dynjit.ops.mul({}, 3);  {} = None\n    return (mul,)\n".format(
        *(["primals_1"] * 2 if requires_grad else ["arg0_1"] * 2)))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_no_grad
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_no_grad(requires_grad):
    def f(a, b):
        out = dynjit.mul(a, 3)
        return out.view(-1), b.add(1)
    fw = GraphRecorder()
    compiled = aot_function(f, fw_compiler=fw, bw_compiler=nop)
    run(f, lambda: ([b := dynjit.ones(3, 3, requires_grad=requires_grad)], [dynjit.ones(3, 3), b]),
        compiled_f=compiled)
    # the seed's point: the intermediate `out` needs no grad, so the graph returns no extra
    # base output for the view of it (dynjit returns the base the view is replayed on:
    # two outputs, as PyTorch's graph has two)
    a, b = ("primals_1", "primals_2") if requires_grad else ("arg0_1", "arg1_1")   # training / inference graph
    assert fw.graphs[-1].code.strip() == (
        f"def forward(self, {a}, {b}):\n"
        f"    mul = dynjit.ops.mul({a}, 3);  {a} = None\n"
        f"    add = dynjit.ops.add({b}, 1);  {b} = None\n"
        "    return (mul, add)")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_returned_multiple_times
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_returned_multiple_times(requires_grad):
    def f(a):
        out = dynjit.mul(a, 3)
        return out, out.view(-1), out
    ref, res = run(f, _leaves(3, 3, requires_grad=requires_grad))
    assert res["out"][0] is res["out"][2] and res["out"][1]._base is res["out"][0]


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_multiple
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_multiple(requires_grad):
    def f(a):
        out = dynjit.mul(a, 3)
        return out.view(-1), out.view(-1)
    compiled, fw, _ = _compile_recording(f)
    ref, res = run(f, _leaves(3, 3, requires_grad=requires_grad), compiled_f=compiled)
    o1, o2 = res["out"]
    assert o1._base is o2._base and o1._base is not None
    # the graph returns the intermediate once; both views are made from it
    assert fw.graphs[-1].code.endswith("    mul = dynjit.ops.mul(primals_1, 3);  primals_1 = None\n"
                                       "    return (mul,)\n") or not requires_grad


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_and_returned
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_and_returned(requires_grad):
    def f(a):
        out = dynjit.mul(a, 3)
        return out.view(-1), out
    fw = GraphRecorder()
    ref, res = run(f, _leaves(3, 3, requires_grad=requires_grad),
                   compiled_f=aot_function(f, fw_compiler=fw, bw_compiler=nop))
    assert res["out"][0]._base is res["out"][1]
    # the forward graph: PyTorch's returns [view, mul]; dynjit's returns the intermediate
    # once and makes the view of it outside the graph (so the two outputs alias as in eager)
    a = "primals_1" if requires_grad else "arg0_1"
    assert fw.graphs[-1].code.strip() == (
        f"def forward(self, {a}):\n"
        f"    mul = dynjit.ops.mul({a}, 3);  {a} = None\n"
        "    return (mul,)")

    def g(a):
        out = dynjit.mul(a, 3)
        return out, out.view(-1)
    ref, res = run(g, _leaves(3, 3, requires_grad=requires_grad))
    assert res["out"][1]._base is res["out"][0]


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_and_returned_different_grad
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_and_returned_different_grad(requires_grad):
    def f(a):
        out = dynjit.mul(a, 3)
        return out.view(-1), out, out[0].detach()
    ref, res = run(f, _leaves(3, 3, requires_grad=requires_grad))
    view, out, detached = res["out"]
    assert view._base is out and not detached.requires_grad
    with dynjit.no_grad():
        detached.mul_(10)                 # the detached alias shares memory with out
    assert dynjit.equal(out[0], detached)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_multiple_mixed
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_multiple_mixed(requires_grad):
    def f(a):
        out1 = dynjit.mul(a, 3)
        out2 = dynjit.mul(a, 4)
        return out1.view(-1), out2.transpose(1, 0), out1.transpose(1, 0)
    compiled, fw, _ = _compile_recording(f)
    ref, res = run(f, _leaves(3, 3, requires_grad=requires_grad), compiled_f=compiled)
    a, b, c = res["out"]
    assert a._base is c._base and b._base is not a._base
    if requires_grad:
        assert fw.graphs[-1].code == (
            "def forward(self, primals_1):\n"
            "    mul = dynjit.ops.mul(primals_1, 3)\n"
            "    mul_1 = dynjit.ops.mul(primals_1, 4);  primals_1 = None\n"
            "    return (mul, mul_1)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_mutation_linear
def test_output_view_of_intermediate_written_afterwards():
    def f(x):
        return (x + 1).view(-1)
    inp = dynjit.ones(3, 3, requires_grad=True)
    out_ref, out_test = f(inp), aot_function(f, nop)(inp)
    out_ref.mul_(2)
    out_test.mul_(2)
    assert dynjit.equal(out_ref, out_test)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_input_multi_output_view_should_raise_autograd_error
def test_output_views_from_a_multi_output_view_cannot_be_written():
    f1_compiled = aot_function(lambda a: list(a.unbind(0)), nop)
    out = f1_compiled(dynjit.ones(3, 3, requires_grad=True).clone())
    with pytest.raises(RuntimeError, match="Such functions do not allow the output views"):
        out[0].mul_(2)


def test_outputs_of_one_multi_output_view_share_a_grad_fn():
    def f3(a):
        return *list(a.unbind(0)), a.view(a.shape)
    ref, res = run(f3, lambda: ([x := dynjit.ones(3, 3, requires_grad=True)], [x.clone()]),
                   mutate_outputs=False)
    outs = res["out"]
    assert all(type(o.grad_fn).__name__ == "UnbindBackward0" for o in outs[:3])
    assert outs[0].grad_fn is outs[1].grad_fn is outs[2].grad_fn


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_input_view_meta_replay
def test_output_view_of_input_gets_a_view_grad_fn():
    out = aot_function(lambda a: a.view(-1), nop)(dynjit.ones(2, 2, requires_grad=True))
    assert type(out.grad_fn).__name__ == "ViewBackward0"


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_view_meta_replay
def test_output_views_of_an_intermediate_get_view_grad_fns():
    def f(a):
        b = a.clone()
        return b.view(-1), b.view(-1)
    out1, out2 = aot_function(f, nop)(dynjit.ones(2, 2, requires_grad=True))
    assert type(out1.grad_fn).__name__ == "ViewBackward0" == type(out2.grad_fn).__name__


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_output_view_meta_replay
def test_output_view_of_another_output():
    def f(a):
        b = a.add(10)
        return b, b.view(-1)
    out1, out2 = aot_function(f, nop)(dynjit.ones(2, 2, requires_grad=True))
    assert out1.data_ptr() == out2.data_ptr() and out2._base is out1
    assert type(out2.grad_fn).__name__ == "ViewBackward0"


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_noncontiguous
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_mutation_noncontiguous(requires_grad):
    def f(a):
        a.mul_(2)
        return a + 1

    def make():
        base = dynjit.ones(2, 2, requires_grad=requires_grad)
        return [base], [base.add(1)[:, 0]]
    verify_aot(f, make)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_false_aliasing
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_mutation_false_aliasing(requires_grad):
    def f(a, b):
        a.mul_(3)
        b.mul_(2)
        return a.clone().view(-1) + b.clone().view(-1)

    def make():
        base = dynjit.ones(4, 4, requires_grad=requires_grad)
        x = base.add(1)
        return [base], [x[0:2], x[2:4]]       # one base, but the views do not overlap
    compiled, fw, _ = _compile_recording(f)
    verify_aot(f, make, compiled_f=compiled)
    # no overlap: each view is its own graph input
    assert sum(n.op == "placeholder" for n in fw.graphs[-1].graph.nodes) == 2


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_aliases_other_input
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_mutation_aliases_other_input(requires_grad):
    def f(a, b):
        a.add_(1)
        return a + b

    def make():
        base = dynjit.ones(4, 2, requires_grad=requires_grad)
        x = base.add(1)
        return [base], [x[0], x[0]]
    compiled, fw, _ = _compile_recording(f)
    verify_aot(f, make, compiled_f=compiled)
    # the graph takes the shared base once and makes both arguments as views of it
    assert fw.graphs[-1].code.startswith(
        "def forward(self, {0}):\n"
        "    getitem = dynjit.ops.getitem({0}, (0,))\n"
        "    add = dynjit.ops.add(getitem, 1);  getitem = None\n".format("primals_1" if requires_grad else "arg0_1"))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_aliases_and_none_require_gradients
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_mutation_aliases_and_none_require_gradients(requires_grad):
    def f(a, b, c):
        a.mul_(2)
        return b + 1, c + 1

    def make():
        base = dynjit.ones(2, 2)
        c = dynjit.ones(2, 2, requires_grad=requires_grad)
        x = base.add(1)
        return [c], [x.view(-1), x.view(-1), c]
    verify_aot(f, make)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_multiple_inputs_get_correct_one
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_multiple_inputs_get_correct_one(requires_grad):
    def f(a, b):
        return a.view(a.shape), b.view(b.shape)

    def make():
        base = dynjit.ones(2, 2, requires_grad=requires_grad)
        x = base.mul(2)
        return [base], [x.view(-1), x[0]]
    verify_aot(f, make)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_new_inp_requires_grad_now
def test_input_that_needs_grad_after_the_write():
    def f(x, y):
        return x.add_(y)
    compiled, fw, bw = _compile_recording(f, keep_inference_input_mutations=True)
    ref, res = run(f, lambda: ([y := dynjit.ones(20, 100, requires_grad=True)], [dynjit.ones(20, 100), y]),
                   compiled_f=compiled)
    assert res["out"] is res["args"][0] and res["out"].requires_grad
    assert fw.graphs[-1].code == (
        "def forward(self, primals_1, primals_2):\n"
        "    add = dynjit.ops.add(primals_1, primals_2);  primals_1 = primals_2 = None\n"
        "    return (add,)\n")
    assert bw.graphs[-1].code == "def forward(self, tangents_1):\n    return (tangents_1,)\n"


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_default_partitioner_saves_symints_not_tensors_for_bw
def test_write_through_a_view_of_the_input():
    def f(a):
        b = a[0]
        c = dynjit.ones_like(b, dtype=dynjit.bool)
        return b.masked_fill_(c, 0)
    ref, res = run(f, _non_leaves(2, 2))
    assert res["out"]._base is res["args"][0]


def test_setitem_and_views_of_intermediates():
    def f(a, idx):
        b = a * 2
        v = b[1:]
        v.mul_(3)                 # through a view of an intermediate
        b[0] = 5.0                # setitem
        w = b.view(2, 2)
        b.add_(1)                 # w sees this
        b[idx] = b[idx] * 10      # advanced indexing
        return w, b.sum()
    verify_aot(f, lambda: ([a := dynjit.randn(4, requires_grad=True)], [a, dynjit.tensor([1, 3])]))


def test_writes_through_detach_reach_the_source():
    def f(a):
        b = a * 2
        b.detach().mul_(3)        # eager: b is 6a, but autograd saw b = 2a
        return b + 1
    verify_aot(f, _leaves(3))


def test_in_place_casts_to_the_written_tensors_dtype():
    def f(x, y):
        z = x.clone()
        z.add_(y)                 # float32 += float64 stays float32
        m = x.clone()
        m.logical_not_()          # a bool result written into a float tensor
        return z, m
    verify_aot(f, lambda: ([x := dynjit.randn(3, requires_grad=True)], [x, dynjit.randn(3, dtype=dynjit.float64)]))


def test_inputs_written_and_returned_in_containers():
    def f(d):
        d["a"].add_(1)
        d["b"][0].mul_(2)
        return [d["a"], d["b"]]

    def make():
        base = dynjit.ones(3, requires_grad=True)
        a, b = base.add(1), base.add(2)
        return [base], [{"a": a, "b": b}]
    verify_aot(f, make)


def test_custom_function_returning_its_input_as_is_keeps_its_backward():
    # The output aliases the input but its gradient is the Function's backward,
    # so it must come out of the compiled node, and the input must stay a leaf.
    class Halve(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 0.5

    def fn(x):
        return Halve.apply(x)

    x = dynjit.randn(3, requires_grad=True)
    out = aot_function(fn, nop)(x)
    assert x.is_leaf and out is not x and out._base is x
    out.sum().backward()
    assert dynjit.allclose(x.grad, dynjit.full((3,), 0.5))
