"""Partitioners: the forward and backward graphs they make, what they save for
backward, and that min-cut saves no more (often less) than the default."""
import os
import sys

import dynjit
from dynjit.aot import aot_function, nop, default_partition, min_cut_rematerialization_partition
from dynjit.aot.partition import saved_stats
from dynjit.ops import registry as R

from aot_verify import GraphRecorder


def fw_bw_graphs(f, inputs, partition_fn):
    fw, bw = GraphRecorder(), GraphRecorder()
    out = aot_function(f, fw, bw, partition_fn=partition_fn)(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.sum() for o in outs).backward()
    return fw.graphs[0], bw.graphs[0]


def num_ins_outs(gm):
    nodes = gm.graph.nodes
    return sum(n.op == "placeholder" for n in nodes), len(gm.graph.output_node().args[0])


def _sin_of_product_and_cos(x, y):
    return (x * y).sin().sum(), x.cos()


def _inputs():
    return [dynjit.randn(3, requires_grad=True), dynjit.randn(3, requires_grad=True)]


def test_default_partition_graphs():
    fw, bw = fw_bw_graphs(_sin_of_product_and_cos, _inputs(), default_partition)
    # the forward returns its outputs, then what backward reads: both inputs and mul
    assert fw.code == (
        "def forward(self, primals_1, primals_2):\n"
        "    mul = dynjit.ops.mul(primals_1, primals_2)\n"
        "    sin = dynjit.ops.sin(mul)\n"
        "    sum_1 = dynjit.ops.sum(sin);  sin = None\n"
        "    cos = dynjit.ops.cos(primals_1)\n"
        "    return (sum_1, cos, primals_1, primals_2, mul)\n")
    assert bw.code == (
        "def forward(self, primals_1, primals_2, mul, tangents_1, tangents_2):\n"
        "    neg = dynjit.ops.neg(tangents_2);  tangents_2 = None\n"
        "    sin_1 = dynjit.ops.sin(primals_1)\n"
        "    mul_1 = dynjit.ops.mul(neg, sin_1);  neg = sin_1 = None\n"
        "    expand = dynjit.ops.expand(tangents_1, (3,));  tangents_1 = None\n"
        "    cos_1 = dynjit.ops.cos(mul);  mul = None\n"
        "    mul_2 = dynjit.ops.mul(expand, cos_1);  expand = cos_1 = None\n"
        "    mul_3 = dynjit.ops.mul(mul_2, primals_2);  primals_2 = None\n"
        "    mul_4 = dynjit.ops.mul(mul_2, primals_1);  primals_1 = mul_2 = None\n"
        "    add = dynjit.ops.add(mul_1, mul_3);  mul_1 = mul_3 = None\n"
        "    return (add, mul_4)\n")
    assert fw.meta["saved"] == ["primals_1", "primals_2", "mul"] and fw.meta["num_saved"] == 3
    assert saved_stats(fw) == (3, 36)


def test_min_cut_partition_graphs():
    fw, bw = fw_bw_graphs(_sin_of_product_and_cos, _inputs(), min_cut_rematerialization_partition)
    # mul is recomputed in backward from the inputs instead of being saved
    assert fw.code == (
        "def forward(self, primals_1, primals_2):\n"
        "    mul = dynjit.ops.mul(primals_1, primals_2)\n"
        "    sin = dynjit.ops.sin(mul);  mul = None\n"
        "    sum_1 = dynjit.ops.sum(sin);  sin = None\n"
        "    cos = dynjit.ops.cos(primals_1)\n"
        "    return (sum_1, cos, primals_1, primals_2)\n")
    assert bw.code == (
        "def forward(self, primals_1, primals_2, tangents_1, tangents_2):\n"
        "    mul = dynjit.ops.mul(primals_1, primals_2)\n"
        "    neg = dynjit.ops.neg(tangents_2);  tangents_2 = None\n"
        "    sin_1 = dynjit.ops.sin(primals_1)\n"
        "    mul_1 = dynjit.ops.mul(neg, sin_1);  neg = sin_1 = None\n"
        "    expand = dynjit.ops.expand(tangents_1, (3,));  tangents_1 = None\n"
        "    cos_1 = dynjit.ops.cos(mul);  mul = None\n"
        "    mul_2 = dynjit.ops.mul(expand, cos_1);  expand = cos_1 = None\n"
        "    mul_3 = dynjit.ops.mul(mul_2, primals_2);  primals_2 = None\n"
        "    mul_4 = dynjit.ops.mul(mul_2, primals_1);  primals_1 = mul_2 = None\n"
        "    add = dynjit.ops.add(mul_1, mul_3);  mul_1 = mul_3 = None\n"
        "    return (add, mul_4)\n")
    assert fw.meta["saved"] == ["primals_1", "primals_2"] and saved_stats(fw) == (2, 24)


def test_both_partitions_give_eager_gradients():
    for partition in (default_partition, min_cut_rematerialization_partition):
        x, y = _inputs()
        out = aot_function(_sin_of_product_and_cos, nop, partition_fn=partition)(x, y)
        (out[0] + out[1].sum()).backward()
        assert dynjit.allclose(x.grad, (x * y).cos() * y - x.sin())
        assert dynjit.allclose(y.grad, (x * y).cos() * x)


def _pointwise_chain(x):
    return x.sin().exp().mul(2).tanh().sigmoid().sum()


def test_min_cut_saves_fewer_bytes_on_a_pointwise_chain():
    x = dynjit.randn(10, 10, requires_grad=True)
    fw_default, _ = fw_bw_graphs(_pointwise_chain, [x], default_partition)
    fw_min_cut, bw_min_cut = fw_bw_graphs(_pointwise_chain, [x], min_cut_rematerialization_partition)
    assert saved_stats(fw_default) == (4, 1600)         # x, exp, tanh, sigmoid
    assert saved_stats(fw_min_cut) == (1, 400)          # only x: the chain is recomputed
    assert fw_min_cut.meta["saved"] == ["primals_1"]
    assert [n.name for n in bw_min_cut.graph.nodes][:6] == ["primals_1", "tangents_1", "sin", "exp", "mul",
                                                            "tanh"]


# ports: 001_fdd911346beae147.txt TestAOTExport.test_min_cut_partitioner
def test_min_cut_partitioner():
    fw, bw = fw_bw_graphs(lambda x: x.cos().cos().cos(), [dynjit.randn(3, requires_grad=True)],
                          min_cut_rematerialization_partition)
    assert num_ins_outs(fw) == (1, 2) and num_ins_outs(bw) == (2, 1)

    def f(a, b, c, d):
        x = a + b + c + d
        return x.cos().cos()
    fw, bw = fw_bw_graphs(f, [dynjit.randn(3, requires_grad=True) for _ in range(4)],
                          min_cut_rematerialization_partition)
    assert num_ins_outs(fw) == (4, 2) and num_ins_outs(bw) == (2, 4)
    assert fw.meta["saved"] == ["add_2"]        # one sum instead of four inputs


# ports: 001_fdd911346beae147.txt TestAOTExport.test_recompute_partitioning
def test_recompute_partitioning():
    def fn(a, b):
        return dynjit.sin(dynjit.sin(a)) + b
    ref_a, ref_b = dynjit.rand(10, 10, requires_grad=True), dynjit.rand(10, 10, requires_grad=True)
    ref = fn(ref_a, ref_b)
    ref.sum().backward()
    res_a = ref_a.detach().clone().requires_grad_(True)
    res_b = ref_b.detach().clone().requires_grad_(True)
    compiled = aot_function(fn, lambda gm, _: gm, lambda gm, _: gm,
                            partition_fn=min_cut_rematerialization_partition)
    res = compiled(res_a, res_b)
    res.sum().backward()
    assert dynjit.allclose(ref, res, atol=1e-3, rtol=1e-3)
    assert dynjit.allclose(ref_a.grad, res_a.grad, atol=1e-3, rtol=1e-3)
    assert dynjit.allclose(ref_b.grad, res_b.grad, atol=1e-3, rtol=1e-3)


def test_min_cut_never_recomputes_matmul_or_random_ops():
    def f(x, w):
        h = (x @ w).tanh()
        return dynjit.dropout(h, 0.5) * h
    x, w = dynjit.randn(4, 3, requires_grad=True), dynjit.randn(3, 5, requires_grad=True)
    fw, bw = fw_bw_graphs(f, [x, w], min_cut_rematerialization_partition)
    bw_targets = [n.target.name for n in bw.graph.nodes
                  if n.op == "call_function" and hasattr(n.target, "name")]
    # backward's own two matmuls (the gradients of x and w), not the forward's again
    assert bw_targets.count("matmul") == 2 and "native_dropout" not in bw_targets
    assert "matmul" in fw.meta["saved"] or "tanh" in fw.meta["saved"]


def test_min_cut_never_recomputes_compute_bound_ops():
    import dynjit.nn.functional as F

    def f(x, w):
        return F.max_pool2d(F.conv2d(x, w, padding=1).relu(), 2).sum()
    x, w = dynjit.randn(2, 1, 8, 8, requires_grad=True), dynjit.randn(4, 1, 3, 3, requires_grad=True)
    fw, bw = fw_bw_graphs(f, [x, w], min_cut_rematerialization_partition)
    bw_targets = [n.target.name for n in bw.graph.nodes
                  if n.op == "call_function" and hasattr(n.target, "name")]
    # convolution and pooling are tagged COMPUTE_BOUND: saved by the forward, not run again
    assert "convolution" not in bw_targets and "max_pool" not in bw_targets
    assert "max_pool_backward" in bw_targets and "convolution_backward_weight" in bw_targets


def test_recomputable_ops_option():
    x = dynjit.randn(10, 10, requires_grad=True)
    fw, _ = fw_bw_graphs(_pointwise_chain, [x],
                         lambda gm, ex, **kw: min_cut_rematerialization_partition(
                             gm, ex, recomputable_ops={"sin", "mul"}, **kw))
    # exp, tanh, sigmoid may not be recomputed now: they (or what backward derives
    # from them) are saved instead of the single input
    assert "exp" in fw.meta["saved"] and "sin" not in fw.meta["saved"]
    assert saved_stats(fw)[1] > 400


def test_multi_output_op_saves_items_not_tuples():
    def f(x):
        values, indices = x.max(1)
        return values.exp().sum() + x.sum()
    for partition in (default_partition, min_cut_rematerialization_partition):
        fw, bw = fw_bw_graphs(f, [dynjit.randn(3, 4, requires_grad=True)], partition)
        for node in fw.graph.nodes:
            if node.name in fw.meta["saved"]:
                assert not isinstance(node.meta["val"], (tuple, list)), node.name


def test_input_written_in_graph_and_saved_is_saved_as_a_clone():
    # buf is written by the forward graph itself (a copy_ kept in the graph, as the write
    # is hidden from autograd); min-cut prefers saving buf over the larger repeat and
    # recomputing sin(buf).repeat(2) in backward: it must read buf's old value.
    def f(w, buf):
        y = (w * buf.sin().repeat(2)).sum()
        with dynjit.no_grad():
            buf.add_(1)
        return y
    fw, bw = GraphRecorder(), GraphRecorder()
    g = aot_function(f, fw, bw, partition_fn=min_cut_rematerialization_partition,
                     keep_inference_input_mutations=True)
    w, buf = dynjit.ones(6, requires_grad=True), dynjit.full((3,), 2.0)
    g(w, buf).backward()
    assert dynjit.allclose(w.grad, dynjit.full((6,), 2.0).sin()) and dynjit.equal(buf, dynjit.full((3,), 3.0))
    code = fw.graphs[0].code
    assert "copy_ = dynjit.ops.copy_(primals_2, add)" in code
    assert "clone = dynjit.ops.clone(primals_2)" in code and fw.graphs[0].meta["saved"] == ["clone"]


def test_mlp_measurement_script_runs():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import bench_partition
    relu_default = bench_partition.measure(default_partition, steps=1)
    relu_min_cut = bench_partition.measure(min_cut_rematerialization_partition, steps=1)
    assert relu_min_cut[1] <= relu_default[1]
    silu_default = bench_partition.measure(default_partition, bench_partition.silu, steps=1)
    silu_min_cut = bench_partition.measure(min_cut_rematerialization_partition, bench_partition.silu, steps=1)
    assert silu_min_cut[1] < silu_default[1]


def test_min_cut_saves_no_more_than_default_on_a_small_mlp():
    def loss(x, w1, b1, w2, b2):
        h = R["linear"](x, w1, b1)
        h = h * h.sigmoid()
        return R["linear"](h, w2, b2).sum()
    args = [dynjit.randn(8, 6), dynjit.randn(5, 6, requires_grad=True), dynjit.randn(5, requires_grad=True),
            dynjit.randn(2, 5, requires_grad=True), dynjit.randn(2, requires_grad=True)]
    fw_default, _ = fw_bw_graphs(loss, args, default_partition)
    fw_min_cut, _ = fw_bw_graphs(loss, args, min_cut_rematerialization_partition)
    assert saved_stats(fw_min_cut)[1] < saved_stats(fw_default)[1]
