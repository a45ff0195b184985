"""Partitioners: split a joint forward+backward graph into a forward graph and
a backward graph, choosing which forward values are saved for backward.

- `default_partition`: the forward graph computes what the forward outputs
  need; every forward value that backward reads is saved.
- `min_cut_rematerialization_partition`: a max-flow/min-cut over the forward
  values finds the cheapest set of tensors to save (in bytes); cheap ops
  (pointwise, views, reductions, data movement) between the saved values and
  the backward are recomputed in backward instead of being saved. Expensive
  ops (matmul and friends) and random ops are never recomputed.

The joint graph's placeholders are `primals_*` then `tangents_*`; its output
is `(*forward_outputs, *input_gradients)`. Both partitioners return
`(forward_gm, backward_gm)`: the forward graph takes the primals and returns
`(*forward_outputs, *saved)`, the backward graph takes `(*saved, *tangents)`
and returns the gradients; `gm.meta["num_saved"]` and `gm.meta["saved"]`
(the saved node names) describe the split.

Symbolic sizes (dynjit.aot.symbolic): a symbol read from a size of an input tensor is a
placeholder of the joint graph (`meta["size_of"]` names the tensor and dim). Both
partitioners compute it in the forward instead, as PyTorch does: a `sym_size_int(x, d)`
node on the input, whose value is saved for the backward like any other forward value
(and sizes computed from it, `s1 + s2`, are saved or, by the min-cut, recomputed). The
forward graph then takes the tensors only; `fw_gm.meta["dropped_inputs"]` lists the
positions of the joint graph's inputs it no longer takes, and `drop_inputs` wraps the
compiled forward so that callers passing every input still can.
"""
import math
import operator
from collections import deque

from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node, map_arg, iter_nodes
from ..fx.symbolic_shapes import sym_size_int
from ..ops.registry import COMPUTE_BOUND, EXTERN, INPLACE, RANDOM, registry

_clone = registry["clone"]
_NUMBER_ARITHMETIC = frozenset((operator.add, operator.sub, operator.mul, operator.floordiv,
                                operator.mod, operator.neg, operator.truediv, operator.pow))


def _sizes_computed_in_forward(joint_module):
    """The joint graph with each size placeholder replaced by a `sym_size_int` node on the
    input tensor it is read from; and the positions of the inputs dropped."""
    graph = joint_module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    names = {n.name: n for n in placeholders}
    sizes = [n for n in placeholders if n.meta.get("size_of", (None,))[0] in names]
    if not sizes:
        return joint_module, []
    new = Graph()
    env = {}
    for n in placeholders:
        if n not in sizes:
            env[n] = new.node_copy(n, lambda x: env[x])
    for n in sizes:
        tensor, dim = n.meta["size_of"]
        env[n] = new.call_function(sym_size_int, (env[names[tensor]], dim))
        env[n].meta = {k: v for k, v in n.meta.items() if k != "size_of"}
    for n in graph.nodes:
        if n.op != "placeholder":
            env[n] = new.node_copy(n, lambda x: env[x])
    gm = GraphModule(_constants(joint_module), new)
    primals = [n for n in placeholders if not n.name.startswith("tangents")]
    return gm, [k for k, n in enumerate(primals) if n in sizes]


def drop_inputs(compiled_fw, dropped):
    """The compiled forward of a graph that no longer takes the inputs at positions `dropped`
    (see the module docstring), called with every input, boxed."""
    if not dropped:
        return compiled_fw
    dropped = frozenset(dropped)
    boxed = bool(getattr(compiled_fw, "_boxed_call", False))

    def forward(args):
        kept = [a for k, a in enumerate(args) if k not in dropped]
        return compiled_fw(kept) if boxed else compiled_fw(*kept)
    forward._boxed_call = True
    return forward


def _split_joint(joint_gm, num_fwd_outputs):
    graph = joint_gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals = [n for n in placeholders if not n.name.startswith("tangents")]
    tangents = [n for n in placeholders if n.name.startswith("tangents")]
    outs = list(graph.output_node().args[0])
    return graph, primals, tangents, outs[:num_fwd_outputs], outs[num_fwd_outputs:]


def _ancestors(nodes, stop=()):
    """All nodes `nodes` depend on (inclusive), not walking past `stop`."""
    seen = set()
    stack = [n for n in nodes if isinstance(n, Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in stop:
            continue
        stack.extend(n.all_input_nodes)
    return seen


def _descendants(nodes):
    seen = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.users)
    return seen


def _side_effects(graph):
    """Nodes that must run in the forward although nothing reads them (copy_ into an input)."""
    return [n for n in graph.nodes if n.op == "call_function" and getattr(n.target, "kind", None) == INPLACE]


def extract_graph(joint_graph, inputs, outputs, constants_root, side_effects=()):
    """A GraphModule computing `outputs` (a structure of joint nodes) from the `inputs` nodes."""
    new = Graph()
    env = {}
    for n in inputs:
        env[n] = new.placeholder(n.name)
        env[n].meta = dict(n.meta)
    needed = _ancestors(list(iter_nodes(outputs)) + list(side_effects), stop=set(inputs))
    for n in joint_graph.nodes:
        if n in env or n not in needed or n.op == "output":
            continue
        if n.op == "placeholder":
            raise RuntimeError(f"partitioning error: {n.name} is needed but is not an input of this graph")
        env[n] = new.node_copy(n, lambda x: env[x])
    new.output(map_arg(outputs, lambda x: env[x]))
    return GraphModule(constants_root, new)


def _constants(joint_gm):
    return {k: v for k, v in vars(joint_gm).items() if k.startswith("_tensor_constant")}


def _protect_inputs_written_in_graph(graph, saved):
    """A saved input that the forward graph itself overwrites (a kept `copy_`) is saved
    as a clone taken before the write."""
    written_by = set(_side_effects(graph))
    written = {n.args[0] for n in written_by if n.args and isinstance(n.args[0], Node)}
    result = []
    for n in saved:
        if n.op == "placeholder" and n in written:
            first_use = next(u for u in graph.nodes if u in n.users)
            with graph.inserting_before(first_use):
                copy = graph.call_function(_clone, (n,))
            copy.meta = dict(n.meta)
            for u in list(n.users):
                if u is not copy and not (u in written_by and u.args[0] is n):
                    u.replace_input_with(n, copy)
            n = copy
        result.append(n)
    return result


def _finish(joint_gm, graph, primals, tangents, fw_outs, grads, saved, dropped=()):
    saved = _protect_inputs_written_in_graph(graph, list(saved))
    order = {n: i for i, n in enumerate(graph.nodes)}
    saved = sorted(set(saved), key=order.__getitem__)
    root = _constants(joint_gm)
    fw = extract_graph(graph, primals, tuple(fw_outs) + tuple(saved), root, _side_effects(graph))
    bw = extract_graph(graph, saved + tangents, tuple(grads), root)
    for gm in (fw, bw):
        gm.meta["num_saved"] = len(saved)
        gm.meta["saved"] = [n.name for n in saved]
    fw.meta["dropped_inputs"] = list(dropped)
    return fw, bw


def _backward_frontier(grads, available):
    """Forward values that backward needs when every node outside `available` is recomputed."""
    saved = set()
    seen = set()
    stack = list(iter_nodes(grads))
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in available:
            saved.add(n)
            continue
        stack.extend(n.all_input_nodes)
    return saved


def default_partition(joint_module, _joint_inputs=None, *, num_fwd_outputs):
    """Forward = what the forward outputs need; save every forward value backward reads."""
    joint_module, dropped = _sizes_computed_in_forward(joint_module)
    graph, primals, tangents, fw_outs, grads = _split_joint(joint_module, num_fwd_outputs)
    forward_nodes = _ancestors(list(fw_outs) + _side_effects(graph)) | set(primals)
    forward_nodes.discard(graph.output_node())
    # the items of a forward multi-output op are forward values too (save an item, not a tuple)
    forward_nodes |= {u for n in forward_nodes for u in n.users
                      if u.op == "call_function" and u.target is operator.getitem}
    saved = _backward_frontier(grads, forward_nodes | set(tangents)) - set(tangents)
    return _finish(joint_module, graph, primals, tangents, fw_outs, grads, saved, dropped)


def _is_recomputable(n):
    """May backward recompute this node instead of the forward saving it? Everything but
    expensive ops (matmul and friends, ops tagged COMPUTE_BOUND such as convolution and
    pooling), random ops (they would draw other numbers) and calls that are not registered ops."""
    if n.op == "placeholder":
        return False
    if n.op != "call_function":
        return n.op == "get_attr"
    if n.target is operator.getitem or n.target in _NUMBER_ARITHMETIC:
        return True      # an item of a tuple; arithmetic on sizes (saving its inputs is as cheap)
    kind = getattr(n.target, "kind", None)
    tags = getattr(n.target, "tags", ())
    if kind is None or kind in (EXTERN, INPLACE) or RANDOM in tags or COMPUTE_BOUND in tags:
        return False
    return True


def size_in_bytes(n):
    """What saving node `n`'s value costs (tuples cannot be saved as such: their items are)."""
    val = n.meta.get("val")
    if isinstance(val, (tuple, list)):
        return math.inf
    shape = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if shape is None or dtype is None:
        return 8
    return max(math.prod(shape), 1) * dtype.itemsize


def min_cut_rematerialization_partition(joint_module, _joint_inputs=None, compiler="inductor", *,
                                        num_fwd_outputs, recomputable_ops=None):
    """Save the cheapest cut of forward values; recompute cheap ops in backward.

    `recomputable_ops`, if given, is a collection of op names that may be
    recomputed (instead of every op but matmul-like and random ones)."""
    joint_module, dropped = _sizes_computed_in_forward(joint_module)
    graph, primals, tangents, fw_outs, grads = _split_joint(joint_module, num_fwd_outputs)
    tangent_side = _descendants(tangents)
    writes = set(_side_effects(graph))
    forward_region = [n for n in graph.nodes if n not in tangent_side and n.op != "output"
                      and n not in writes]
    region = set(forward_region)
    grad_nodes = set(iter_nodes(grads))
    backward_nodes = _ancestors(grad_nodes, stop=region) - region
    required = {n for n in forward_region
                if n in grad_nodes or any(u in backward_nodes for u in n.users)}
    if not required:
        return _finish(joint_module, graph, primals, tangents, fw_outs, grads, [], dropped)
    cap = {}

    def edge(a, b, c):
        cap.setdefault(a, {})
        cap.setdefault(b, {})
        cap[a][b] = cap[a].get(b, 0) + c
        cap[b].setdefault(a, 0)

    for n in forward_region:
        if recomputable_ops is None:
            can = _is_recomputable(n)
        else:
            can = n.op == "call_function" and getattr(n.target, "name", None) in recomputable_ops
        if n.op == "placeholder" or not can:
            edge("source", ("in", n), math.inf)
        edge(("in", n), ("out", n), size_in_bytes(n))
        for u in n.users:
            if u in region:
                edge(("out", n), ("in", u), math.inf)
        if n in required:
            edge(("out", n), "sink", math.inf)
    reachable = _min_cut_source_side(cap)
    saved = {n for n in forward_region if ("in", n) in reachable and ("out", n) not in reachable}
    # a safety net: anything backward cannot reach from the saved values is saved too
    saved |= _backward_frontier(grads, saved | set(primals) | set(tangents)) - set(tangents)
    return _finish(joint_module, graph, primals, tangents, fw_outs, grads, saved, dropped)


def _min_cut_source_side(cap):
    """Edmonds-Karp max flow; returns the nodes reachable from source in the residual graph."""
    flow_cap = {a: dict(bs) for a, bs in cap.items()}
    while True:
        parent = {"source": None}
        queue = deque(["source"])
        while queue and "sink" not in parent:
            a = queue.popleft()
            for b, c in flow_cap.get(a, {}).items():
                if c > 0 and b not in parent:
                    parent[b] = a
                    queue.append(b)
        if "sink" not in parent:
            return set(parent)
        path = []
        b = "sink"
        while parent[b] is not None:
            path.append((parent[b], b))
            b = parent[b]
        push = min(flow_cap[a][b] for a, b in path)
        if push == math.inf:
            raise RuntimeError("min-cut partitioner: a value backward needs can only be had by "
                               "recomputing an op that must not be recomputed; this is a dynjit bug")
        for a, b in path:
            flow_cap[a][b] -= push
            flow_cap[b][a] = flow_cap[b].get(a, 0) + push


def saved_stats(forward_gm):
    """(number of tensors, bytes) a partitioned forward graph saves for backward."""
    saved = set(forward_gm.meta.get("saved", ()))
    sizes = [size_in_bytes(n) for n in forward_gm.graph.nodes if n.name in saved]
    return len(sizes), sum(sizes)
