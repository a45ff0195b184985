"""Partitioners: split a joint forward+backward graph into a forward graph and
a backward graph, choosing which forward values are saved for backward.

- `default_partition` saves every forward value that backward reads.
- `min_cut_rematerialization_partition` finds, by a max-flow/min-cut over
  the forward values, the cheapest set of tensors to save (in bytes),
  recomputing cheap ops (pointwise, views) in backward instead of saving
  their results. Ops that are expensive or random are never recomputed.

The joint graph's placeholders are `primals_*` then `tangents_*`; its output
is `(*forward_outputs, *input_gradients)`.
"""
import math
import operator
from collections import deque

from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node, map_arg, iter_nodes
from ..ops.registry import POINTWISE, VIEW, FACTORY

RANDOM_OPS = {"rand", "randn", "randint", "randperm", "bernoulli", "native_dropout"}


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


def extract_graph(joint_graph, inputs, outputs, constants_root):
    """A GraphModule computing `outputs` (a structure of joint nodes) from the `inputs` nodes."""
    new = Graph()
    env = {}
    for n in inputs:
        env[n] = new.placeholder(n.name)
        env[n].meta = dict(n.meta)
    needed = _ancestors(iter_nodes(outputs), stop=set(inputs))
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


def _finish(joint_gm, graph, primals, tangents, fw_outs, grads, saved):
    order = {n: i for i, n in enumerate(graph.nodes)}
    saved = sorted(saved, key=order.__getitem__)
    root = _constants(joint_gm)
    fw = extract_graph(graph, primals, tuple(fw_outs) + tuple(saved), root)
    bw = extract_graph(graph, saved + tangents, tuple(grads), root)
    fw.meta["num_saved"] = bw.meta["num_saved"] = len(saved)
    return fw, bw


def _backward_frontier(graph, grads, available):
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
    graph, primals, tangents, fw_outs, grads = _split_joint(joint_module, num_fwd_outputs)
    forward_nodes = _ancestors(fw_outs) | set(primals)
    saved = _backward_frontier(graph, grads, forward_nodes | set(tangents))
    saved -= set(tangents)
    return _finish(joint_module, graph, primals, tangents, fw_outs, grads, list(saved))


def _is_recomputable(n):
    if n.op == "placeholder":
        return False
    if n.op != "call_function":
        return n.op == "get_attr"
    if n.target is operator.getitem:
        return True
    kind = getattr(n.target, "kind", None)
    name = getattr(n.target, "name", "")
    if name in RANDOM_OPS:
        return False
    return kind in (POINTWISE, VIEW, FACTORY)


def _size_in_bytes(n):
    val = n.meta.get("val")
    shape = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if shape is None or dtype is None:
        return math.inf      # tuples and non-tensors cannot be saved as such
    return max(math.prod(shape), 1) * dtype.itemsize


def min_cut_rematerialization_partition(joint_module, _joint_inputs=None, compiler="inductor", *,
                                        num_fwd_outputs, recomputable_ops=None):
    """Save the cheapest cut of forward values; recompute cheap ops in backward."""
    graph, primals, tangents, fw_outs, grads = _split_joint(joint_module, num_fwd_outputs)
    tangent_side = _descendants(tangents)
    forward_region = [n for n in graph.nodes if n not in tangent_side and n.op != "output"]
    region = set(forward_region)
    backward_needed = _ancestors(iter_nodes(grads), stop=region) - region
    required = {n for n in forward_region
                if any(u in backward_needed or u in iter_nodes(grads) for u in n.users)
                or n in iter_nodes(grads)}
    if not required:
        return _finish(joint_module, graph, primals, tangents, fw_outs, grads, [])
    recomputable = recomputable_ops
    cap = {}

    def edge(a, b, c):
        cap.setdefault(a, {})
        cap.setdefault(b, {})
        cap[a][b] = cap[a].get(b, 0) + c
        cap[b].setdefault(a, 0)

    for n in forward_region:
        can = _is_recomputable(n) if recomputable is None else getattr(n.target, "name", None) in recomputable
        if n.op == "placeholder" or not can:
            edge("source", ("in", n), math.inf)
        edge(("in", n), ("out", n), _size_in_bytes(n))
        for u in n.users:
            if u in region:
                edge(("out", n), ("in", u), math.inf)
        if n in required:
            edge(("out", n), "sink", math.inf)
    reachable = _min_cut_source_side(cap)
    saved = [n for n in forward_region if ("in", n) in reachable and ("out", n) not in reachable]
    # anything backward still cannot reach from the saved values must be saved too
    saved = set(saved) | (_backward_frontier(graph, grads, set(saved) | set(primals) | set(tangents))
                          - set(tangents))
    return _finish(joint_module, graph, primals, tangents, fw_outs, grads, list(saved))


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
            raise RuntimeError("min-cut partitioner: a required backward value can only be obtained "
                               "by recomputing a non-recomputable op; this is a dynjit bug")
        for a, b in path:
            flow_cap[a][b] -= push
            flow_cap[b][a] = flow_cap[b].get(a, 0) + push
