"""aot_export_module / aot_export_joint_simple: the exported graphs (inference, joint,
pre-dispatch), their signatures, running them against eager, and what export refuses."""
import copy

import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.aot import (aot_export_module, aot_export_joint_simple, aot_function,
                        default_partition, GraphSignature)

from aot_verify import GraphRecorder


class TestMod(nn.Module):
    """A module with one parameter p (ones(2)) whose forward is fn(p, *args)."""
    __test__ = False

    def __init__(self, fn):
        super().__init__()
        self.p = nn.Parameter(dynjit.ones(2))
        self.fn = fn

    def forward(self, *args):
        return self.fn(self.p, *args)


def _close(a, b):
    np.testing.assert_allclose(a.numpy(force=True), b.numpy(force=True), rtol=1e-5, atol=1e-6)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_ban_dropout_mut_pre_dispatch
def test_pre_dispatch_refuses_writing_into_eval_dropout():
    def fn(p, x):
        y = dynjit.dropout(x, 0.1, train=False)
        y.add_(1)
        return (y,)
    mod = TestMod(fn)
    inp = dynjit.randn(2, 2)
    before = inp.clone()
    # before dispatch, eval-mode dropout is its input itself: the write would change it
    with pytest.raises(RuntimeError, match="cannot mutate tensors with frozen storage"):
        aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=True)
    # after dispatch, it is a copy: a write into an intermediate, functionalized away
    gm, sig = aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=False)
    assert gm.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    native_dropout = dynjit.ops.native_dropout(arg1_1, 0.1, False);  arg1_1 = None\n"
        "    getitem = native_dropout[0];  native_dropout = None\n"
        "    add = dynjit.ops.add(getitem, 1);  getitem = None\n"
        "    return (add,)\n")
    assert sig.user_inputs_to_mutate == {} and sig.buffers_to_mutate == {}
    _close(gm(mod.p, inp)[0], before + 1)
    _close(inp, before)            # exporting did not run the write on the caller's tensor


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_func_simple
def test_pre_dispatch_records_the_users_grad_mode_switches():
    def fn(p, x):
        y = x + 2
        with dynjit.no_grad():
            y.add_(2)
        return (x * 2 + y,)
    mod = TestMod(fn)
    inp = dynjit.randn(2, 2)
    with dynjit.no_grad():
        gm, _ = aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=True)
    # entering no_grad and leaving it (back to the caller's no_grad) are both recorded
    assert gm.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    add = dynjit.ops.add(arg1_1, 2)\n"
        "    _set_grad_enabled = dynjit.aot.export._set_grad_enabled(False)\n"
        "    add_1 = dynjit.ops.add(add, 2);  add = None\n"
        "    _set_grad_enabled_1 = dynjit.aot.export._set_grad_enabled(False)\n"
        "    mul = dynjit.ops.mul(arg1_1, 2);  arg1_1 = None\n"
        "    add_2 = dynjit.ops.add(mul, add_1);  mul = add_1 = None\n"
        "    return (add_2,)\n")
    assert dynjit.is_grad_enabled()
    # exported with grad on, leaving no_grad switches back on
    gm, _ = aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=True)
    assert "_set_grad_enabled_1 = dynjit.aot.export._set_grad_enabled(True)\n" in gm.code
    with dynjit.no_grad():
        _close(gm(mod.p, inp)[0], inp * 2 + inp + 4)
    # without pre_dispatch no switch is recorded
    gm, _ = aot_export_module(mod, [inp], trace_joint=False)
    assert "_set_grad_enabled" not in gm.code


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_with_autograd_op
def test_pre_dispatch_records_enable_grad_inside_no_grad():
    def foo(p, x):
        with dynjit.enable_grad():
            y = x + 5
            y.add_(5)
            y.add_(7)
            return (x.cos() + y.sin(),)
    inp = dynjit.randn(2, 2)
    mod = TestMod(foo)
    with dynjit.no_grad():
        gm, _ = aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=True)
    assert gm.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    _set_grad_enabled = dynjit.aot.export._set_grad_enabled(True)\n"
        "    add = dynjit.ops.add(arg1_1, 5)\n"
        "    add_1 = dynjit.ops.add(add, 5);  add = None\n"
        "    add_2 = dynjit.ops.add(add_1, 7);  add_1 = None\n"
        "    cos = dynjit.ops.cos(arg1_1);  arg1_1 = None\n"
        "    sin = dynjit.ops.sin(add_2);  add_2 = None\n"
        "    add_3 = dynjit.ops.add(cos, sin);  cos = sin = None\n"
        "    _set_grad_enabled_1 = dynjit.aot.export._set_grad_enabled(False)\n"
        "    return (add_3,)\n")
    assert dynjit.is_grad_enabled()      # the trace left the caller's grad mode as it was


class LinearBatchnorm(nn.Module):
    # dynjit has no Conv2d: the seed's 1x1 convolution is a Linear layer here
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return (self.bn(self.lin(x)),)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_conv_and_bn
def test_pre_dispatch_batchnorm_returns_new_running_stats_first():
    mod = LinearBatchnorm()
    mod.train()
    inp = dynjit.randn(4, 2)
    gm, sig = aot_export_module(mod, [inp], trace_joint=False, pre_dispatch=True)
    # 8 inputs: 4 parameters, 3 buffers, the input; outputs: the 3 updated buffers, the result
    assert gm.code.splitlines()[0] == \
        "def forward(self, arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1):"
    assert gm.code.splitlines()[-1] == "    return (add_1, add_2, add, add_4)"
    # batch_norm's own no_grad around the running-statistics update is not the user's switch
    assert "_set_grad_enabled" not in gm.code
    assert sig.buffers_to_mutate == {"add_1": "bn.running_mean", "add_2": "bn.running_var",
                                     "add": "bn.num_batches_tracked"}
    eager = copy.deepcopy(mod)
    ref = eager(inp)[0]
    state = [p for _, p in mod.named_parameters()] + [b for _, b in mod.named_buffers()]
    mean, var, count, out = gm(*state, inp)
    _close(out, ref)
    _close(mean, eager.bn.running_mean)
    _close(var, eager.bn.running_var)
    assert count.item() == 1 and mod.bn.num_batches_tracked.item() == 0   # mod itself unchanged


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_reshape
def test_pre_dispatch_reshape():
    class Reshape(nn.Module):
        def forward(self, x):
            return (x.reshape(4, 4).sum(),)
    inp = dynjit.randn(2, 8)
    gm, _ = aot_export_module(Reshape(), [inp], trace_joint=False, pre_dispatch=True)
    assert gm.code == (
        "def forward(self, arg0_1):\n"
        "    reshape = dynjit.ops.reshape(arg0_1, (4, 4));  arg0_1 = None\n"
        "    sum_1 = dynjit.ops.sum(reshape);  reshape = None\n"
        "    return (sum_1,)\n")
    _close(gm(inp)[0], inp.sum())


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_contiguous
def test_pre_dispatch_contiguous_of_a_contiguous_input_is_no_op():
    class Cont(nn.Module):
        def forward(self, x):
            return (x.contiguous().sum(),)
    inp = dynjit.randn(2, 8)
    gm, _ = aot_export_module(Cont(), [inp], trace_joint=False, pre_dispatch=True)
    assert gm.code == (
        "def forward(self, arg0_1):\n"
        "    sum_1 = dynjit.ops.sum(arg0_1);  arg0_1 = None\n"
        "    return (sum_1,)\n")
    # a transposed input does need the copy
    gm, _ = aot_export_module(Cont(), [dynjit.randn(8, 2).t()], trace_joint=False, pre_dispatch=True)
    assert "contiguous_copy" in gm.code


class LinearBatchnormRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        x = self.bn(self.lin(x))
        user_out = F.relu(x)
        loss = user_out.sum()
        return loss, user_out.detach()


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_module_joint
def test_export_module_joint_graph_and_signature():
    mod = LinearBatchnormRelu()
    mod.train()
    inp = dynjit.randn(4, 2)
    fx_g, sig = aot_export_module(mod, [inp], trace_joint=True, output_loss_index=0)
    assert isinstance(sig, GraphSignature)
    code = fx_g.code
    # 8 inputs (4 parameters, 3 buffers, the input), no tangent: the loss is seeded with ones;
    # 9 outputs: 3 updated buffers, 2 user outputs, 4 parameter gradients
    assert code.splitlines()[0] == \
        "def forward(self, arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1):"
    assert "    ones = dynjit.ops.ones((), dynjit.float32)\n" in code
    assert code.splitlines()[-1] == \
        "    return (add_1, add_2, add, sum_1, detach_2, mm, sum_to_size_4, reshape_5, reshape_4)"
    assert sig.parameters == ["lin.weight", "lin.bias", "bn.weight", "bn.bias"]
    assert sig.buffers == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert sig.user_inputs == ["arg7_1"]
    assert sig.user_outputs == ["sum_1", "detach_2"]
    assert sig.inputs_to_parameters == {"arg0_1": "lin.weight", "arg1_1": "lin.bias",
                                        "arg2_1": "bn.weight", "arg3_1": "bn.bias"}
    assert sig.inputs_to_buffers == {"arg4_1": "bn.running_mean", "arg5_1": "bn.running_var",
                                     "arg6_1": "bn.num_batches_tracked"}
    assert sig.buffers_to_mutate == {"add_1": "bn.running_mean", "add_2": "bn.running_var",
                                     "add": "bn.num_batches_tracked"}
    bw = sig.backward_signature
    assert bw.gradients_to_parameters == {"mm": "lin.weight", "sum_to_size_4": "lin.bias",
                                          "reshape_5": "bn.weight", "reshape_4": "bn.bias"}
    assert bw.gradients_to_user_inputs == {}
    assert bw.loss_output == "sum_1"

    # running the joint graph gives eager's loss, output, new buffers and gradients
    eager = copy.deepcopy(mod)
    loss_ref, out_ref = eager(inp)
    loss_ref.backward()
    params = [p for _, p in mod.named_parameters()]
    buffers = [b for _, b in mod.named_buffers()]
    with dynjit.no_grad():
        mean, var, count, loss, out, *grads = fx_g(*params, *buffers, inp)
    _close(loss, loss_ref)
    _close(out, out_ref)
    _close(mean, eager.bn.running_mean)
    _close(var, eager.bn.running_var)
    assert count.item() == 1
    for g, (_, p) in zip(grads, eager.named_parameters()):
        _close(g, p.grad)

    # the inference graph: the same forward, 5 outputs, annotated with shapes
    fx_inf, sig_inf = aot_export_module(mod, [inp], trace_joint=False)
    assert sig_inf.backward_signature is None
    assert fx_inf.print_readable(print_output=False) == '''\
class GraphModule(dynjit.nn.Module):
    def forward(self, arg0_1: "f32[3, 2]", arg1_1: "f32[3]", arg2_1: "f32[3]", arg3_1: "f32[3]", arg4_1: "f32[3]", arg5_1: "f32[3]", arg6_1: "i64[]", arg7_1: "f32[4, 2]"):
        linear: "f32[4, 3]" = dynjit.ops.linear(arg7_1, arg0_1, arg1_1);  arg7_1 = arg0_1 = arg1_1 = None
        add: "i64[]" = dynjit.ops.add(arg6_1, 1);  arg6_1 = None
        var_mean: "(f32[3], f32[3])" = dynjit.ops.var_mean(linear, (0,), 0)
        getitem: "f32[3]" = var_mean[0]
        getitem_1: "f32[3]" = var_mean[1];  var_mean = None
        mul: "f32[3]" = dynjit.ops.mul(arg4_1, 0.9);  arg4_1 = None
        detach: "f32[3]" = dynjit.ops.detach(getitem_1)
        mul_1: "f32[3]" = dynjit.ops.mul(detach, 0.1);  detach = None
        add_1: "f32[3]" = dynjit.ops.add(mul, mul_1);  mul = mul_1 = None
        mul_2: "f32[3]" = dynjit.ops.mul(arg5_1, 0.9);  arg5_1 = None
        detach_1: "f32[3]" = dynjit.ops.detach(getitem)
        mul_3: "f32[3]" = dynjit.ops.mul(detach_1, 0.13333333333333333);  detach_1 = None
        add_2: "f32[3]" = dynjit.ops.add(mul_2, mul_3);  mul_2 = mul_3 = None
        reshape: "f32[1, 3]" = dynjit.ops.reshape(getitem_1, (1, 3));  getitem_1 = None
        sub: "f32[4, 3]" = dynjit.ops.sub(linear, reshape);  linear = reshape = None
        reshape_1: "f32[1, 3]" = dynjit.ops.reshape(getitem, (1, 3));  getitem = None
        add_3: "f32[1, 3]" = dynjit.ops.add(reshape_1, 1e-05);  reshape_1 = None
        rsqrt: "f32[1, 3]" = dynjit.ops.rsqrt(add_3);  add_3 = None
        mul_4: "f32[4, 3]" = dynjit.ops.mul(sub, rsqrt);  sub = rsqrt = None
        reshape_2: "f32[1, 3]" = dynjit.ops.reshape(arg2_1, (1, 3));  arg2_1 = None
        mul_5: "f32[4, 3]" = dynjit.ops.mul(mul_4, reshape_2);  mul_4 = reshape_2 = None
        reshape_3: "f32[1, 3]" = dynjit.ops.reshape(arg3_1, (1, 3));  arg3_1 = None
        add_4: "f32[4, 3]" = dynjit.ops.add(mul_5, reshape_3);  mul_5 = reshape_3 = None
        relu: "f32[4, 3]" = dynjit.ops.relu(add_4);  add_4 = None
        sum_1: "f32[]" = dynjit.ops.sum(relu)
        detach_2: "f32[4, 3]" = dynjit.ops.detach(relu);  relu = None
        return (add_1, add_2, add, sum_1, detach_2)
'''


def test_export_joint_gives_gradients_of_user_inputs_that_require_grad():
    def fn(p, x):
        return ((p * x).sin().sum(),)
    x = dynjit.randn(2, requires_grad=True)
    mod = TestMod(fn)
    gm, sig = aot_export_module(mod, [x], trace_joint=True, output_loss_index=0)
    assert len(sig.backward_signature.gradients_to_parameters) == 1
    (name, inp_name), = sig.backward_signature.gradients_to_user_inputs.items()
    assert inp_name == "arg1_1"
    loss, gp, gx = gm(mod.p, x)
    ref = fn(mod.p, x)[0]
    ref_gp, ref_gx = dynjit.autograd.grad(ref, [mod.p, x])
    _close(loss, ref)
    _close(gp, ref_gp)
    _close(gx, ref_gx)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_simplified_basic
def test_aot_export_joint_simple_forward_and_joint():
    def f(x, y):
        return x * y, y * y.detach()
    x = dynjit.randn(2, requires_grad=True)
    y = dynjit.randn(2, requires_grad=True)
    f_graph_fw = aot_export_joint_simple(f, [x, y], trace_joint=False)
    assert f_graph_fw.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    mul = dynjit.ops.mul(arg0_1, arg1_1);  arg0_1 = None\n"
        "    detach = dynjit.ops.detach(arg1_1)\n"
        "    mul_1 = dynjit.ops.mul(arg1_1, detach);  arg1_1 = detach = None\n"
        "    return (mul, mul_1)\n")
    for a, b in zip(f(x, y), f_graph_fw(x, y)):      # same calling convention as f
        _close(a, b)

    x = dynjit.randn(2, requires_grad=True)
    y = dynjit.randn(2, requires_grad=True)
    x2, y2 = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    x3, y3 = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    joint = aot_export_joint_simple(f, [x, y], trace_joint=True)
    placeholders = [n.name for n in joint.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["primals_1", "primals_2", "tangents_1", "tangents_2"]
    fw_g, bw_g = default_partition(joint, [x, y], num_fwd_outputs=2)
    out_ref = f(x2, y2)
    fw_outs = fw_g(x3, y3)
    out_test, activations = fw_outs[:2], fw_outs[2:]
    for a, b in zip(out_ref, out_test):
        _close(a, b)
    grad_outs = [dynjit.ones_like(o) for o in out_ref]
    grads_ref = dynjit.autograd.grad(out_ref, [x2, y2], grad_outputs=grad_outs)
    grads_test = bw_g(*activations, *grad_outs)
    assert len(grads_test) == 2
    for a, b in zip(grads_ref, grads_test):
        _close(a, b)


def test_aot_export_joint_simple_refuses_input_mutation_and_aliased_outputs():
    def mutates(x):
        x.mul_(2)
        return (x + 1,)
    with pytest.raises(RuntimeError, match="does not support input mutations"):
        aot_export_joint_simple(mutates, [dynjit.randn(2)], trace_joint=False)
    with pytest.raises(RuntimeError, match="does not support outputs that alias"):
        aot_export_joint_simple(lambda x: (x.view(-1),), [dynjit.randn(2, 2)], trace_joint=False)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_metadata_mutation_banned
def test_export_refuses_metadata_mutation_of_an_input():
    def fn(p, x):
        x.t_()
        return (x * 2,)
    mod = TestMod(fn)
    inp = dynjit.randn(2, 4)
    msg = "Found an input that received a metadata mutation"
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp], trace_joint=False)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp], trace_joint=True)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_module(mod, [inp], trace_joint=False)
    assert inp.shape == (2, 4)          # tracing never transposed the caller's tensor


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_forward_mutation_no_buffer_mut
def test_export_input_mutation_is_a_first_output():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buffer1", dynjit.ones(6, 4))

        def forward(self, x):
            x.add_(4)
            return (x.cos().sum() + self.buffer1.sum(),)
    mod = M()
    inp = dynjit.ones(6, 4)
    gm, sig = aot_export_module(mod, [inp], trace_joint=False)
    assert gm.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    add = dynjit.ops.add(arg1_1, 4);  arg1_1 = None\n"
        "    cos = dynjit.ops.cos(add)\n"
        "    sum_1 = dynjit.ops.sum(cos);  cos = None\n"
        "    sum_2 = dynjit.ops.sum(arg0_1);  arg0_1 = None\n"
        "    add_1 = dynjit.ops.add(sum_1, sum_2);  sum_1 = sum_2 = None\n"
        "    return (add, add_1)\n")
    assert sig.buffers_to_mutate == {}
    assert sig.user_inputs_to_mutate == {"add": "arg1_1"}
    assert sig.inputs_to_buffers == {"arg0_1": "buffer1"}
    new_x, out = gm(mod.buffer1, inp)
    _close(new_x, dynjit.full((6, 4), 5.0))
    _close(inp, dynjit.ones(6, 4))       # the caller applies the mutation, not the export


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_synthetic_bases_banned
def test_export_refuses_mutating_inputs_that_share_memory():
    def fn(p, x, y):
        x.mul_(2)
        return (x + y,)
    mod = TestMod(fn)
    inp = dynjit.randn(2)
    inp2 = inp.view(-1)
    msg = "Encountered aliased inputs that are mutated in the graph"
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp, inp2], trace_joint=False)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp, inp2], trace_joint=True)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_module(mod, [inp, inp2], trace_joint=False)
    # aliased inputs that are only read are fine: one graph input each
    gm, sig = aot_export_module(TestMod(lambda p, x, y: (x + y,)), [inp, inp2], trace_joint=False)
    assert sig.user_inputs == ["arg1_1", "arg2_1"]
    _close(gm(mod.p, inp, inp2)[0], inp * 2)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_input_dupes_banned
def test_export_refuses_mutating_an_input_passed_twice():
    def fn(p, x, y):
        x.mul_(2)
        return (x + y,)
    mod = TestMod(fn)
    inp = dynjit.randn(2)
    msg = "Encountered duplicated inputs that are mutated in the graph"
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp, inp], trace_joint=False)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_joint_simple(fn, [mod.p, inp, inp], trace_joint=True)
    with pytest.raises(RuntimeError, match=msg):
        aot_export_module(mod, [inp, inp], trace_joint=False)
    gm, sig = aot_export_module(TestMod(lambda p, x, y: (x * y,)), [inp, inp], trace_joint=False)
    assert sig.user_inputs == ["arg1_1", "arg2_1"]
    _close(gm(mod.p, inp, inp)[0], inp * inp)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_multiple_outputs_require_grad_banned
def test_export_joint_refuses_outputs_other_than_the_loss_that_require_grad():
    def fn(p, x):
        out = p * x
        return out, out.sum()
    mod = TestMod(fn)
    inp = dynjit.randn(2)
    with pytest.raises(RuntimeError, match="Found an output of the forward that requires gradients, "
                                           "that was not"):
        aot_export_module(mod, [inp], trace_joint=True, output_loss_index=1)
    # detached, it is fine
    gm, sig = aot_export_module(TestMod(lambda p, x: ((p * x).detach(), (p * x).sum())), [inp],
                                trace_joint=True, output_loss_index=1)
    assert sig.backward_signature.loss_output == sig.user_outputs[1]
    with pytest.raises(RuntimeError, match="output_loss_index"):
        aot_export_module(mod, [inp], trace_joint=True)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_default_partitioner_getitem
def test_default_partitioner_saves_items_of_multi_output_ops():
    mod = nn.LayerNorm([10])

    def f(x, w, b):
        return F.layer_norm(x, [10], w, b, eps=1e-6)
    fw, bw = GraphRecorder(), GraphRecorder()
    out = aot_function(f, fw, bw, partition_fn=default_partition)(
        dynjit.randn(3, 10, requires_grad=True), mod.weight, mod.bias)
    out.sum().backward()

    def ins_outs(gm):
        return (sum(n.op == "placeholder" for n in gm.graph.nodes), len(gm.graph.output_node().args[0]))
    assert ins_outs(fw.graphs[0]) == (3, 6)
    assert ins_outs(bw.graphs[0]) == (6, 3)

    # backward reads an item of var_mean: the forward saves that item, never the tuple
    def g(x):
        var, mean = dynjit.var_mean(x, 1, keepdim=True)
        return x * mean
    fw, bw = GraphRecorder(), GraphRecorder()
    aot_function(g, fw, bw, partition_fn=default_partition)(dynjit.randn(3, 4, requires_grad=True)).sum().backward()
    saved = fw.graphs[0].meta["saved"]
    by_name = {n.name: n for n in fw.graphs[0].graph.nodes}
    assert any(by_name[s].target.__name__ == "getitem" for s in saved if by_name[s].op == "call_function")
    assert not any(isinstance(by_name[s].meta["val"], tuple) for s in saved)


# -- control flow kept in the graph: dynjit.control_flow.cond / map --------------------

from dynjit import control_flow                # noqa: E402
from dynjit.control_flow import cond           # noqa: E402
from dynjit.fx import make_fx                  # noqa: E402


_COND_OUTER = (
    "    true_graph_0 = self.true_graph_0\n"
    "    false_graph_0 = self.false_graph_0\n"
    "    cond = dynjit.cond(False, true_graph_0, false_graph_0, [{args}]);  "
    "true_graph_0 = false_graph_0 = {args_freed} = None\n"
    "    getitem = cond[0];  cond = None\n"
    "    add = dynjit.ops.add(getitem, 3)\n"
    "    add_1 = dynjit.ops.add(getitem, 4);  getitem = None\n"
    "    return (add, add_1)\n")


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_with_torch_cond
def test_export_keeps_cond_with_both_branches_functionalized():
    class M(nn.Module):
        def forward(self, x):
            def true_fn(x):
                y = x + 4
                y.add_(5)
                return x.cos()

            def false_fn(x):
                y = x + 5
                y.add_(6)
                return x.sin()
            a = cond(x.shape[0] > 4, true_fn, false_fn, [x])
            return (a + 3, a + 4)
    inp = dynjit.randn(3, 4)
    gm, _ = aot_export_module(M(), (inp,), trace_joint=False)
    assert gm.code == "def forward(self, arg0_1):\n" + _COND_OUTER.format(args="arg0_1", args_freed="arg0_1")
    # the dead writes into a temporary are gone from each branch
    assert gm.true_graph_0.code == (
        "def forward(self, arg0_1):\n"
        "    cos = dynjit.ops.cos(arg0_1);  arg0_1 = None\n"
        "    return (cos,)\n")
    assert gm.false_graph_0.code == (
        "def forward(self, arg0_1):\n"
        "    sin = dynjit.ops.sin(arg0_1);  arg0_1 = None\n"
        "    return (sin,)\n")
    a, b = gm(inp)
    _close(a, inp.sin() + 3)
    _close(b, inp.sin() + 4)
    big = dynjit.randn(5, 4)            # the pred was a Python bool: specialized to False
    _close(gm(big)[0], big.sin() + 3)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_with_cond
def test_pre_dispatch_cond_branch_with_a_random_weight():
    class M(nn.Module):
        def forward(self, x):
            def true_fn(x):
                y = x.sin()
                z = F.linear(y, dynjit.randn(2, 2))
                z.add_(5)
                return z.cos()

            def false_fn(x):
                z = x.cos()
                z.add_(6)
                return z.sin()
            a = cond(x.shape[0] > 4, true_fn, false_fn, [x])
            return (a + 3, a + 4)
    inp = dynjit.randn(2, 2)
    dynjit.manual_seed(0)
    gm, _ = aot_export_module(M(), [inp], trace_joint=False, pre_dispatch=True)
    after_export = dynjit.randn(3)
    assert gm.code == "def forward(self, arg0_1):\n" + _COND_OUTER.format(args="arg0_1", args_freed="arg0_1")
    assert gm.true_graph_0.code == (
        "def forward(self, arg0_1):\n"
        "    sin = dynjit.ops.sin(arg0_1);  arg0_1 = None\n"
        "    randn = dynjit.ops.randn((2, 2))\n"
        "    linear = dynjit.ops.linear(sin, randn);  sin = randn = None\n"
        "    add = dynjit.ops.add(linear, 5);  linear = None\n"
        "    cos = dynjit.ops.cos(add);  add = None\n"
        "    return (cos,)\n")
    assert gm.false_graph_0.code == (
        "def forward(self, arg0_1):\n"
        "    cos = dynjit.ops.cos(arg0_1);  arg0_1 = None\n"
        "    add = dynjit.ops.add(cos, 6);  cos = None\n"
        "    sin = dynjit.ops.sin(add);  add = None\n"
        "    return (sin,)\n")
    _close(gm(inp)[0], (inp.cos() + 6).sin() + 3)
    # tracing the branch not taken drew no random numbers: eager draws the same afterwards
    dynjit.manual_seed(0)
    M()(inp)
    _close(dynjit.randn(3), after_export)


class _MapInCond(nn.Module):
    def forward(self, x, y):
        def true_fn(x, r):
            y = x.sin()
            y.add_(5)
            return y.cos() + r.sum()

        def false_fn(x, r):
            z = x.cos()

            def f(x, y):
                a = x.cos()
                a.add_(5)
                return a + y
            return z + control_flow.map(f, z, r).sum() + control_flow.map(f, z, r).sum()
        a = cond(x.shape[0] > 4, true_fn, false_fn, [x, y])
        return (a + 3, a + 4)


_MAP_BODY = (
    "def forward(self, arg0_1, arg1_1):\n"
    "    cos = dynjit.ops.cos(arg0_1);  arg0_1 = None\n"
    "    add = dynjit.ops.add(cos, 5);  cos = None\n"
    "    add_1 = dynjit.ops.add(add, arg1_1);  add = arg1_1 = None\n"
    "    return (add_1,)\n")


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_map_1
def test_pre_dispatch_map_inside_cond():
    inps = [dynjit.randn(2, 2), dynjit.ones(2)]
    gm, _ = aot_export_module(_MapInCond(), inps, trace_joint=False, pre_dispatch=True)
    assert gm.code == "def forward(self, arg0_1, arg1_1):\n" + _COND_OUTER.format(
        args="arg0_1, arg1_1", args_freed="arg0_1 = arg1_1")
    assert gm.true_graph_0.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    sin = dynjit.ops.sin(arg0_1);  arg0_1 = None\n"
        "    add = dynjit.ops.add(sin, 5);  sin = None\n"
        "    cos = dynjit.ops.cos(add);  add = None\n"
        "    sum_1 = dynjit.ops.sum(arg1_1);  arg1_1 = None\n"
        "    add_1 = dynjit.ops.add(cos, sum_1);  cos = sum_1 = None\n"
        "    return (add_1,)\n")
    assert gm.false_graph_0.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    cos = dynjit.ops.cos(arg0_1);  arg0_1 = None\n"
        "    body_graph_0 = self.body_graph_0\n"
        "    map_impl = dynjit.control_flow.map_impl(body_graph_0, [cos], [arg1_1]);  body_graph_0 = None\n"
        "    getitem = map_impl[0];  map_impl = None\n"
        "    sum_1 = dynjit.ops.sum(getitem);  getitem = None\n"
        "    add = dynjit.ops.add(cos, sum_1);  sum_1 = None\n"
        "    body_graph_1 = self.body_graph_1\n"
        "    map_impl_1 = dynjit.control_flow.map_impl(body_graph_1, [cos], [arg1_1]);  "
        "cos = arg1_1 = body_graph_1 = None\n"
        "    getitem_1 = map_impl_1[0];  map_impl_1 = None\n"
        "    sum_2 = dynjit.ops.sum(getitem_1);  getitem_1 = None\n"
        "    add_1 = dynjit.ops.add(add, sum_2);  add = sum_2 = None\n"
        "    return (add_1,)\n")
    assert gm.false_graph_0.body_graph_0.code == _MAP_BODY
    for a, b in zip(gm(*inps), _MapInCond()(*inps)):
        _close(a, b)


# ports: 001_fdd911346beae147.txt TestAOTExport.test_aot_export_predispatch_map_2
def test_pre_dispatch_map():
    class M(nn.Module):
        def forward(self, x, y):
            z = x.cos()

            def f(x, y):
                a = x.cos()
                a.add_(5)
                return a + y
            return (z + control_flow.map(f, z, y).sum(),)
    inps = [dynjit.randn(2, 2), dynjit.ones(2)]
    gm, _ = aot_export_module(M(), inps, trace_joint=False, pre_dispatch=True)
    assert gm.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    cos = dynjit.ops.cos(arg0_1);  arg0_1 = None\n"
        "    body_graph_0 = self.body_graph_0\n"
        "    map_impl = dynjit.control_flow.map_impl(body_graph_0, [cos], [arg1_1]);  "
        "body_graph_0 = arg1_1 = None\n"
        "    getitem = map_impl[0];  map_impl = None\n"
        "    sum_1 = dynjit.ops.sum(getitem);  getitem = None\n"
        "    add = dynjit.ops.add(cos, sum_1);  cos = sum_1 = None\n"
        "    return (add,)\n")
    assert gm.body_graph_0.code == _MAP_BODY
    x = dynjit.randn(3, 2)          # the loop runs over dim 0, whatever its size
    _close(gm(x, inps[1])[0], M()(x, inps[1])[0])


def test_cond_and_map_eagerly():
    x = dynjit.randn(3, requires_grad=True)
    out = cond(dynjit.tensor(False), lambda a: a.sin(), lambda a: a.cos(), [x])
    out.sum().backward()
    _close(x.grad, -x.detach().sin())            # autograd saw the branch taken
    stacked, sums = control_flow.map(lambda a, b: (a * b, a.sum()), dynjit.ones(3, 2),
                                     dynjit.tensor([1., 2.]))
    _close(stacked, dynjit.tensor([[1., 2.]] * 3))
    _close(sums, dynjit.full((3,), 2.0))


def test_make_fx_of_cond_on_a_tensor_pred_with_a_closure_tensor():
    def f(x, y):
        w = y * 2           # a traced value read by the branches without being an operand
        return cond(x.sum() > 0, lambda a: a + w, lambda a: a - w, (x,))
    x, y = dynjit.ones(3), dynjit.randn(3)
    gm = make_fx(f)(x, y)
    assert "dynjit.cond(gt, true_graph_0, false_graph_0, [x_1, mul])" in gm.code
    assert gm.false_graph_0.code == (
        "def forward(self, arg0_1, arg1_1):\n"
        "    sub = dynjit.ops.sub(arg0_1, arg1_1);  arg0_1 = arg1_1 = None\n"
        "    return (sub,)\n")
    _close(gm(x, y), x + 2 * y)
    _close(gm(-x, y), -x - 2 * y)                 # a tensor pred is decided at run time
    compiled = aot_function(f, lambda gm, _: gm)
    _close(compiled(-x, y), -x - 2 * y)


def test_cond_refusals():
    x = dynjit.randn(3)
    with pytest.raises(RuntimeError, match="same shapes and dtypes"):
        make_fx(lambda x: cond(True, lambda a: a.sum(), lambda a: a + 1, [x]))(x)
    with pytest.raises(RuntimeError, match="writes in place into one of its operands"):
        make_fx(lambda x: cond(True, lambda a: a.add_(1), lambda a: a + 1, [x]))(x)
    with pytest.raises(RuntimeError, match="returns one of its operands"):
        make_fx(lambda x: cond(True, lambda a: a + 1, lambda a: a.view(-1), [x]))(x)
    with pytest.raises(NotImplementedError, match="gradients through cond"):
        aot_function(lambda x: cond(True, lambda a: a.sin(), lambda a: a.cos(), [x]),
                     lambda gm, _: gm)(dynjit.randn(3, requires_grad=True))
