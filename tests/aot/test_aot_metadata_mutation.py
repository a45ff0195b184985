"""Metadata mutation (t_, transpose_, unsqueeze_, squeeze_, set_) in eager and through
aot_function: the compiled function leaves its arguments with the shapes, strides,
values and autograd history eager leaves them with (checked by verify_aot)."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.fx import make_fx

from aot_verify import verify_aot, run, GraphRecorder


def _non_leaves(*shape, n=1, requires_grad=True):
    """make_inputs: n tensors made by an op from leaves, so they may be written in place."""
    def make():
        bases = [dynjit.ones(*shape, requires_grad=requires_grad) for _ in range(n)]
        return bases, [b.add(1) for b in bases]
    return make


def _compile_recording(f, **kwargs):
    fw, bw = GraphRecorder(), GraphRecorder()
    return aot_function(f, fw, bw, **kwargs), fw, bw


# -- eager ----------------------------------------------------------------------------

def test_inplace_view_ops_change_shape_and_keep_memory():
    x = dynjit.arange(6.0).reshape(2, 3).clone()
    ptr, version = x.data_ptr(), x._version
    assert x.t_() is x and x.shape == (3, 2) and x.data_ptr() == ptr and not x.is_contiguous()
    assert x._version == version + 1            # as in PyTorch, a metadata change bumps the version
    x.unsqueeze_(0)
    assert x.shape == (1, 3, 2)
    x.transpose_(0, 2)
    assert x.shape == (2, 3, 1)
    x.squeeze_()
    assert x.shape == (2, 3) and dynjit.equal(x, dynjit.arange(6.0).reshape(2, 3))
    x.swapdims_(0, 1)
    assert x.shape == (3, 2) and x._base is None


def test_inplace_view_op_on_a_leaf_that_requires_grad_is_refused():
    x = dynjit.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad is being used in an in-place operation \(t_\)"):
        x.t_()
    with dynjit.no_grad():
        x.t_()                                      # allowed without recording, as in PyTorch
    assert x.is_leaf


def test_inplace_view_op_records_history_and_earlier_views_keep_their_layout():
    base = dynjit.arange(6.0).reshape(2, 3).requires_grad_()
    a = base * 1
    before = a.unsqueeze(0)                         # made before the metadata change
    a.t_()
    assert type(a.grad_fn).__name__ == "TBackward0"
    after = a[0]                                    # made after: a column of the original
    assert before.shape == (1, 2, 3) and dynjit.equal(before[0], base.detach())
    assert dynjit.equal(after, dynjit.tensor([0.0, 3.0]))
    (a.sum() * 2 + (before * 3).sum() + (after * 5).sum()).backward()
    assert dynjit.equal(base.grad, dynjit.tensor([[10.0, 5.0, 5.0], [10.0, 5.0, 5.0]]))


def test_metadata_change_of_a_view_extends_its_view_chain():
    base = dynjit.arange(6.0).reshape(2, 3)
    c = base.clone()
    row = c[1]
    row.unsqueeze_(0)
    assert row.shape == (1, 3) and row._base is c
    c.mul_(2)                                       # the view follows its base
    assert dynjit.equal(row, dynjit.tensor([[6.0, 8.0, 10.0]]))


def test_set_takes_the_other_tensors_memory():
    a, b = dynjit.zeros(3), dynjit.arange(4.0)
    a.set_(b)
    assert a.shape == (4,) and a.data_ptr() == b.data_ptr()
    b.add_(1)                                       # shared memory: a sees the write
    assert dynjit.equal(a, dynjit.tensor([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(RuntimeError, match="set_\\(\\) on a tensor that requires grad"):
        dynjit.ones(2, requires_grad=True).clone().set_(b)


def test_make_fx_records_an_inplace_view_op_as_its_view():
    def f(a):
        b = a * 2
        v = b.unsqueeze(0)
        b.t_()
        b.mul_(3)
        return b + 1, v
    a = dynjit.randn(2, 3)
    gm = make_fx(f)(a)
    assert "dynjit.ops.t(mul)" in gm.code
    x = dynjit.randn(2, 3)
    for got, want in zip(gm(x), f(x)):
        assert dynjit.allclose(got, want)


# -- through aot_function -------------------------------------------------------------

# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_metadata
@pytest.mark.parametrize("requires_grad", [True, False])
def test_input_mutation_metadata(requires_grad):
    def f(a, b):
        a.transpose_(1, 0)
        return a + b

    def make():
        bases = [dynjit.arange(9.0).reshape(3, 3).requires_grad_(requires_grad), dynjit.ones(3, 3)]
        return bases, [bases[0].add(1), bases[1]]
    ref, res = run(f, make)
    a = res["args"][0]
    assert a.stride() == (1, 3)                       # the caller's tensor is transposed too
    if requires_grad:
        assert type(a.grad_fn).__name__ == "TransposeBackward0"


def test_metadata_only_mutation_is_not_a_graph_output():
    def f(a):
        a.unsqueeze_(0)
        return a * 2
    compiled, fw, _ = _compile_recording(f)
    verify_aot(f, _non_leaves(2, 2), compiled_f=compiled)
    # nothing is copied back: the runtime replays unsqueeze_ on the caller's tensor
    assert fw.graphs[-1].code == (
        "def forward(self, primals_1):\n"
        "    unsqueeze = dynjit.ops.unsqueeze(primals_1, 0);  primals_1 = None\n"
        "    mul = dynjit.ops.mul(unsqueeze, 2);  unsqueeze = None\n"
        "    return (mul,)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_output_view_metadata_mutate_multiple
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_output_view_metadata_mutate_multiple(requires_grad):
    def f(a, b, c):
        b.mul_(3)
        c.t_()
        return a.view(2, 2), b.view(2, 2), c.view(2, 2)
    compiled, fw, _ = _compile_recording(f)
    ref, res = run(f, _non_leaves(2, 2, n=3, requires_grad=requires_grad), compiled_f=compiled)
    for out, arg in zip(res["out"], res["args"]):
        assert out._base is arg                      # views of the caller's tensors
    if requires_grad:
        # only b's new value comes out of the graph; c's transpose is replayed at run time
        assert fw.graphs[-1].code == (
            "def forward(self, primals_1, primals_2, primals_3):\n"
            "    mul = dynjit.ops.mul(primals_2, 3);  primals_2 = None\n"
            "    return (mul,)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_output_view_multiple
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_mutation_output_view_multiple(requires_grad):
    def f(a, b, c, d):
        b.transpose_(1, 0)
        c.add_(1)
        return d + 1, b.diagonal(), a + c

    def make():
        bases = [dynjit.arange(4, dtype=dynjit.float32).requires_grad_(requires_grad) for _ in range(2)] + \
            [dynjit.ones(2, 2, requires_grad=requires_grad) for _ in range(2)]
        return bases, [bases[0].view(2, 2).add(1), bases[1].view(2, 2).add(1), bases[2].add(1), bases[3].add(1)]
    ref, res = run(f, make)
    assert res["out"][1]._base is res["args"][1]


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_intermediate_inplace_view_and_view
@pytest.mark.parametrize("requires_grad", [False, True])
def test_output_aliases_intermediate_inplace_view_and_view(requires_grad):
    def f(a):
        out = dynjit.mul(a, 3)
        out_view = out.unsqueeze(0)        # made before out's transpose: keeps the old layout
        out.t_()
        out_view2 = out.unsqueeze(0)
        return out_view, out, out_view2
    ref, res = run(f, lambda: ([x := dynjit.randn(2, 4, requires_grad=requires_grad)], [x]))
    out_view, out, out_view2 = res["out"]
    assert out_view.shape == (1, 2, 4) and out_view2.shape == (1, 4, 2)
    assert out_view._base is out and out_view2._base is out


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_data_and_metadata_mutation
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_data_and_metadata_mutation(requires_grad):
    def f(a):
        a.t_()
        a[0].mul_(2)
        return a.view(a.shape)

    def make():
        base = dynjit.arange(9.0).reshape(3, 3).requires_grad_(requires_grad)
        return [base], [base.add(1)]
    compiled, fw, _ = _compile_recording(f)
    ref, res = run(f, make, compiled_f=compiled)
    assert res["out"]._base is res["args"][0]
    if requires_grad:
        # the new value, in the new layout, is copied into the caller's tensor once it is transposed
        assert fw.graphs[-1].code == (
            "def forward(self, primals_1):\n"
            "    t = dynjit.ops.t(primals_1);  primals_1 = None\n"
            "    getitem = dynjit.ops.getitem(t, (0,))\n"
            "    mul = dynjit.ops.mul(getitem, 2);  getitem = None\n"
            "    view_scatter = dynjit.ops.view_scatter(t, mul, ((dynjit.ops.getitem, ((0,),), None),));"
            "  t = mul = None\n"
            "    return (view_scatter,)\n")


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_data_and_metadata_mutation_aliases_other_input
@pytest.mark.parametrize("requires_grad", [False, True])
def test_input_data_and_metadata_mutation_aliases_other_input(requires_grad):
    def f(a, b):
        a.mul_(2)
        b.t_()
        return a.mul(b)

    def make():
        base = dynjit.arange(4.0).reshape(2, 2).requires_grad_(requires_grad)
        x = base.add(1)
        return [base], [x[0], x[0]]          # two views of one row
    ref, res = run(f, make)
    a, b = res["args"]
    assert a._base is b._base and dynjit.equal(a, b)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_backward_mutation_metadata
def test_backward_mutation_metadata():
    class BwMutation(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a.clone(), b.clone()

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            (b,) = ctx.saved_tensors
            b.transpose_(1, 0)
            return grad_a.clone(), grad_b.clone()

    def f(a, b):
        a_, b_ = BwMutation.apply(a, b)
        return a_ * b_
    with pytest.raises(RuntimeError, match="input that had its metadata mutated in the backward"):
        aot_function(f, nop)(dynjit.ones(3, 3, requires_grad=True), dynjit.ones(3, 3))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_input_mutation_set__nop
@pytest.mark.parametrize("requires_grad", [True, False])
def test_input_mutation_set__nop(requires_grad):
    def f(a):
        b = dynjit.arange(9, dtype=a.dtype)
        a_old = a.view(a.shape)
        with dynjit.no_grad():
            a.set_(b)
            a.set_(a_old)          # back on its own memory: no mutation in the end
        return a + b.reshape(3, 3)
    compiled, fw, _ = _compile_recording(f, keep_inference_input_mutations=True)
    verify_aot(f, _non_leaves(3, 3, requires_grad=requires_grad), compiled_f=compiled)
    # no set_ in the graph, and one output: the two set_() calls cancel out
    ph = "primals_1" if requires_grad else "arg0_1"
    assert fw.graphs[-1].code == (
        f"def forward(self, {ph}):\n"
        "    arange = dynjit.ops.arange(9, None, 1, dynjit.float32)\n"
        "    reshape = dynjit.ops.reshape(arange, (3, 3));  arange = None\n"
        f"    add = dynjit.ops.add({ph}, reshape);  {ph} = reshape = None\n"
        "    return (add,)\n")


def test_input_set_to_new_memory_is_replayed():
    def f(a, b):
        with dynjit.no_grad():
            a.set_(b * 2)
        return a + 1
    b = dynjit.arange(3.0)
    a_ref, a_test = dynjit.ones(2), dynjit.ones(2)
    out_ref, out_test = f(a_ref, b), aot_function(f, nop)(a_test, b)
    assert dynjit.equal(out_ref, out_test) and dynjit.equal(a_ref, a_test) and a_test.shape == (3,)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_set__and_data_mutation_bad
def test_set__and_data_mutation_bad():
    def f(a):
        a_view = a.view(-1)
        tmp = dynjit.ones(3, 3, requires_grad=True)
        with dynjit.no_grad():
            a.set_(tmp)
            a_view.mul_(2)         # writes the memory a had before set_()
        return a + tmp
    compiled = aot_function(f, nop, keep_inference_input_mutations=True)
    with pytest.raises(RuntimeError, match="cannot mutate tensors with frozen storage"):
        compiled(dynjit.ones(3, 3, requires_grad=True).clone())


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_set__not_allowed
def test_set__not_allowed():
    def f(a, b):
        with dynjit.no_grad():
            a.set_(b)
        a.mul_(2)                  # and then written: refused
        return a + b
    compiled = aot_function(f, nop, keep_inference_input_mutations=True)
    with pytest.raises(RuntimeError, match="but the input has other mutations that we cannot"):
        compiled(*[dynjit.ones(3, 3, requires_grad=True).clone() for _ in range(2)])
