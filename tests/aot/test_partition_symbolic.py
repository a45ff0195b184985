"""The partitioners with symbolic sizes: a size the backward needs is computed in the forward
(`sym_size_int` of an input tensor) and saved, so the forward graph takes only the tensors
and the backward graph gets the sizes among its saved values, as in PyTorch."""
from functools import partial

import pytest

import dynjit
from dynjit.aot import aot_function, default_partition, min_cut_rematerialization_partition
from dynjit.fx.symbolic_shapes import sym_size_int

PARTITIONERS = [default_partition, min_cut_rematerialization_partition]


def _keep(gm, _example_inputs, cell):
    cell.append(gm)
    return gm


def _ins_outs(gm):
    ins = [n for n in gm.graph.nodes if n.op == "placeholder"]
    outs = tuple(gm.graph.output_node().args[0])
    return ins, outs


def _counts(gm):
    ins, outs = _ins_outs(gm)
    return len(ins), len(outs)


def _is_size(node):
    """A node whose value is a size (an int with a symbolic expression), not a tensor."""
    return type(node.meta.get("val")) is int and "sym" in node.meta


def _compiled(f, partitioner):
    fw, bw = [], []
    compiled = aot_function(f, fw_compiler=partial(_keep, cell=fw), bw_compiler=partial(_keep, cell=bw),
                            partition_fn=partitioner, dynamic=True)
    return compiled, fw, bw


def _cat_of_expanded(a, b, c):
    # the seed builds a size out of other sizes, to see how sizes are saved; it reads b's
    # sizes with torch.ops.aten.sym_size(b), the same list as b.size() (dynjit has no aten)
    sb = b.size()
    sc = c.size()
    x = sb[0] + sc[0]
    a_sz = (x, a.size(0))
    return dynjit.cat([a.expand(a_sz), b, c])


def _inputs(rows_b, rows_c, width=10):
    return [dynjit.randn(width, requires_grad=True), dynjit.randn(rows_b, width, requires_grad=True),
            dynjit.randn(rows_c, width, requires_grad=True)]


def _check_sizes_of_the_inputs_saved_for_backward():
    """The seed's second function: sizes combined into an expand's size."""
    compiled, fw, bw = _compiled(_cat_of_expanded, min_cut_rematerialization_partition)
    compiled(*_inputs(3, 2)).sum().backward()
    fw_graph, bw_graph = fw[0], bw[0]
    assert _counts(fw_graph) == (3, 4)
    assert _counts(bw_graph) == (4, 3)
    _, outs = _ins_outs(fw_graph)
    assert all(_is_size(n) for n in outs[1:])
    # each saved size is read from an input tensor by the forward; the sum of two of them
    # (the expand's first size) is recomputed by the backward rather than saved
    assert [n.target for n in outs[1:]] == [sym_size_int] * 3
    assert sorted((n.args[0].name, n.args[1]) for n in outs[1:]) == \
        [("primals_1", 0), ("primals_2", 0), ("primals_3", 0)]
    ins, _ = _ins_outs(bw_graph)
    assert [n.name for n in ins[:3]] == [n.name for n in outs[1:]]
    assert all(not _is_size(n) for n in _ins_outs(fw_graph)[0])


# ports: 001_fdd911346beae147.txt TestAOTExport.test_min_cut_partitioner_save_shape
def test_min_cut_partitioner_save_shape():
    _check_each_size_of_a_square_input_saved()
    _check_sizes_of_the_inputs_saved_for_backward()


@pytest.mark.parametrize("partitioner", PARTITIONERS, ids=["default", "min_cut"])
def test_results_and_gradients_for_other_sizes_match_eager(partitioner):
    compiled, fw, bw = _compiled(_cat_of_expanded, partitioner)
    for rows_b, rows_c in [(3, 2), (5, 4), (2, 7), (9, 3)]:
        args = _inputs(rows_b, rows_c)
        ref_args = [a.detach().clone().requires_grad_() for a in args]
        weight = dynjit.randn(rows_b + rows_c + rows_b + rows_c, 10)
        out = compiled(*args)
        ref = _cat_of_expanded(*ref_args)
        assert out.shape == ref.shape and dynjit.allclose(out, ref)
        (out * weight).sum().backward()
        (ref * weight).sum().backward()
        for a, r in zip(args, ref_args):
            assert dynjit.allclose(a.grad, r.grad, atol=1e-5)
    # one symbolic trace served every size: one forward and one backward graph
    assert len(fw) == 1 and len(bw) == 1
    assert _ins_outs(fw[0])[0] and all(not _is_size(n) for n in _ins_outs(fw[0])[0])


def test_the_default_partitioner_saves_the_sizes_the_backward_reads():
    compiled, fw, bw = _compiled(_cat_of_expanded, default_partition)
    compiled(*_inputs(3, 2)).sum().backward()
    ins, outs = _ins_outs(fw[0])
    assert len(ins) == 3 and not any(_is_size(n) for n in ins)
    saved = outs[1:]
    assert saved and all(_is_size(n) for n in saved)
    # the backward takes exactly what the forward saved, then the gradient of the output
    bw_ins, _ = _ins_outs(bw[0])
    assert [n.name for n in bw_ins] == [n.name for n in saved] + ["tangents_1"]


def _check_each_size_of_a_square_input_saved():
    """The seed's first function. With dynamic=True the two equal sizes are one symbol (duck
    sizing), but each (tensor, dim) is read by a node of its own, as PyTorch's sym_size:
    both are saved."""
    def f(x):
        return x.sum(dim=1)

    compiled, fw, bw = _compiled(f, min_cut_rematerialization_partition)
    compiled(dynjit.ones(10, 10, requires_grad=True)).sum().backward()
    _, outs = _ins_outs(fw[0])
    assert _counts(fw[0]) == (1, 3)
    assert _counts(bw[0]) == (3, 1)
    assert str(outs[0]) == "sum_1"
    assert str(outs[1]) == "sym_size_int"
    assert str(outs[2]) == "sym_size_int_1"
    assert [(n.args[0].name, n.args[1]) for n in outs[1:]] == [("primals_1", 0), ("primals_1", 1)]
    # the symbol is shared: a non-square input is another trace, a square one is not
    x = dynjit.randn(6, 6, requires_grad=True)
    compiled(x).sum().backward()
    assert dynjit.allclose(x.grad, dynjit.ones(6, 6))
    assert len(fw) == 1
    y = dynjit.randn(6, 4, requires_grad=True)
    compiled(y).sum().backward()
    assert dynjit.allclose(y.grad, dynjit.ones(6, 4))
    assert len(fw) == 2


@pytest.mark.parametrize("backend", ["aot_eager", "llvm"])
def test_compiled_training_with_saved_sizes_matches_plain(backend):
    def step(x, w):
        h = (x @ w).relu()
        return h.view(x.shape[0], -1).sum(1).mean()

    compiled = dynjit.compile(step, backend=backend)
    w = dynjit.randn(4, 6, requires_grad=True)
    for n in range(2, 9):
        x = dynjit.randn(n, 4)
        loss = compiled(x, w)
        (g,) = dynjit.autograd.grad(loss, [w])
        w2 = w.detach().clone().requires_grad_()
        ref = step(x, w2)
        (g_ref,) = dynjit.autograd.grad(ref, [w2])
        assert dynjit.allclose(loss, ref, atol=1e-5)
        assert dynjit.allclose(g, g_ref, atol=1e-5)
