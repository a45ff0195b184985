"""Control flow that a traced graph keeps as such: `cond` and `map`.

Tracing runs a function on real values, so a Python `if` on a tensor is taken
once and baked into the graph. `cond(pred, true_fn, false_fn, operands)` and
`map(f, xs, *args)` instead put both branches (or the loop body) into the
graph as subgraphs:

- called eagerly, `cond` calls the branch `pred` selects and `map` applies `f`
  to each slice `xs[i]` (along dim 0) and stacks the results;
- called while `make_fx` or AOT autograd traces (`aot_function`,
  `aot_export_module`), each branch / the body is traced on its own into a
  GraphModule, stored on the graph as `true_graph_<n>` / `false_graph_<n>` /
  `body_graph_<n>` (get_attr nodes), and the graph gets one node
  `cond(pred, true_graph_0, false_graph_0, [operands])` or
  `map(body_graph_0, xs, *args)` whose items (`getitem`) are the results.
  Running the graph calls `cond` / `map` with those GraphModules (which return
  tuples), so a graph holding them can itself be traced again. In-place ops in
  a branch are functionalized like the rest of an AOT graph.

Rules (as PyTorch's `torch.cond` / `control_flow.map`): operands are tensors;
both branches return tensors of the same shapes and dtypes; a branch must not
write into its operands or return one of them (or a view of one). Tensors a
branch reads from the enclosing traced function without receiving them as
operands are added as extra operands. Gradients through `cond` / `map` inside a
traced graph are not supported (eagerly, autograd sees the branch's ops).
"""
import contextlib

from . import random as _random
from .fx.proxy_tensor import GraphTracer, same_layout_copy
from .ops import dispatch as _dispatch
from .autograd.grad_mode import state as _grad_state
from .tensor import Tensor

__all__ = ["cond", "map"]



def _flat(out, what):
    """(list of output tensors, rebuild(list) -> out's structure)."""
    if isinstance(out, Tensor):
        return [out], lambda leaves: leaves[0]
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        kind = type(out)
        return list(out), lambda leaves: kind(leaves)
    raise TypeError(f"{what} must return a tensor or a tuple/list of tensors, got "
                    f"{type(out).__name__}")


def _active_tracer():
    mode = _dispatch._modes[-1] if _dispatch._modes else None
    return mode if isinstance(mode, GraphTracer) else None


@contextlib.contextmanager
def _only(mode):
    """Run the block with `mode` as the only dispatch mode (outer tracers see nothing)."""
    outer = _dispatch._modes[:]
    _dispatch._modes.clear()
    try:
        if mode is None:
            yield
        else:
            with mode:
                yield
    finally:
        _dispatch._modes[:] = outer


def _check_no_grad(tracer, tensors, what):
    if _grad_state.enabled and any(t.requires_grad for t in tensors):
        raise NotImplementedError(
            f"{what} with inputs that require grad inside a traced graph: gradients through "
            f"{what} are not supported in graphs yet. Call it under no_grad, or on inputs that "
            "do not require grad (eagerly, outside a trace, autograd works).")


def _subgraph_name(tracer, prefix):
    n = 0
    while f"{prefix}_{n}" in tracer.constants:
        n += 1
    return f"{prefix}_{n}"


def _trace_subgraph(outer, fn, examples, what):
    """Trace fn(*examples) into a GraphModule with one placeholder per example (plus
    one per outer traced tensor fn reads from its closure). Returns (gm, real outputs,
    rebuild, extra outer tensors)."""
    from .fx.graph_module import GraphModule
    sub = type(outer)()
    sub.decompositions = dict(outer.decompositions)
    copies, nodes = [], []
    for i, x in enumerate(examples):
        node = sub.graph.placeholder(f"arg{i}_1")
        c = Tensor._make(same_layout_copy(x._data))
        sub.track(c, node)
        copies.append(c)
        nodes.append(node)
    extras = []
    plain_add_constant = sub.add_constant

    def add_constant(value, snapshot=False):
        if not snapshot and outer.is_tracked(value):
            # a traced value of the enclosing graph read through a closure: an operand too
            with sub.graph.inserting_after(nodes[-1] if nodes else None):
                node = sub.graph.placeholder(f"arg{len(nodes)}_1")
            nodes.append(node)
            extras.append(value)
            sub.track(value, node)
            return node
        return plain_add_constant(value, snapshot)
    sub.add_constant = add_constant
    versions = [c._version_counter[0] for c in copies]
    with _only(sub):
        out = fn(*copies)
    outs, rebuild = _flat(out, what)
    for c, v in zip(copies, versions):
        if c._version_counter[0] != v:
            raise RuntimeError(f"{what} writes in place into one of its operands; branches and "
                               "loop bodies must not mutate their inputs. Write into a clone.")
    for o in outs:
        if any(o is c or o._base is c or (o._base is not None and o._base is c._base and c._base is not None)
               for c in copies):
            raise RuntimeError(f"{what} returns one of its operands (or a view of one); branches "
                               "and loop bodies must return new tensors. Return a clone.")
    sub.graph.output(tuple(sub.to_arg(o) for o in outs))
    sub.graph.eliminate_dead_code()
    sub.graph.lint()
    return GraphModule(sub.constants, sub.graph), outs, rebuild, extras


def _same_signature(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype is y.dtype for x, y in zip(a, b))


def cond(pred, true_fn, false_fn, operands):
    """true_fn(*operands) if pred else false_fn(*operands), kept as a conditional in traced graphs.

    pred: a Python bool or a one-element tensor; operands: a tuple/list of tensors."""
    if not isinstance(operands, (tuple, list)) or not all(isinstance(o, Tensor) for o in operands):
        raise TypeError("cond: operands must be a tuple or list of tensors")
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: pred must be a one-element tensor, got shape {list(pred.shape)}")
        # the value only picks which branch gives the traced value: the graph keeps both
        # branches and decides at run time (so not a data read that tracing freezes)
        taken = bool(pred._data.reshape(()))
    elif isinstance(pred, (bool, int)):
        taken = bool(pred)
    else:
        raise TypeError(f"cond: pred must be a bool or a one-element tensor, got {type(pred).__name__}")
    tracer = _active_tracer()
    if tracer is None:
        return (true_fn if taken else false_fn)(*operands)
    _check_no_grad(tracer, operands, "cond")
    state = _random.get_rng_state()
    true_gm, true_outs, rebuild, true_extra = _trace_subgraph(tracer, true_fn, operands, "cond's true_fn")
    after_true = _random.get_rng_state()
    _random.set_rng_state(state)         # each branch draws what eager would draw
    false_gm, false_outs, _, false_extra = _trace_subgraph(tracer, false_fn, operands, "cond's false_fn")
    if taken:
        _random.set_rng_state(after_true)
    if not _same_signature(true_outs, false_outs):
        def sig(outs):
            return [f"{o.dtype._short}{list(o.shape)}" for o in outs]
        raise RuntimeError(f"cond: true_fn and false_fn must return tensors of the same shapes and "
                           f"dtypes, got {sig(true_outs)} and {sig(false_outs)}")
    extras = _merge_extras([true_gm, false_gm], [true_extra, false_extra], len(operands))
    _check_no_grad(tracer, extras, "cond")
    true_name = _subgraph_name(tracer, "true_graph")
    tracer.constants[true_name] = true_gm
    false_name = _subgraph_name(tracer, "false_graph")
    tracer.constants[false_name] = false_gm
    graph = tracer.graph
    true_node, false_node = graph.get_attr(true_name), graph.get_attr(false_name)
    args = (tracer.to_arg(pred), true_node, false_node, tracer.to_arg(list(operands) + extras))
    node = graph.call_function(cond, args)
    outs = [Tensor._make(o._data) for o in (true_outs if taken else false_outs)]
    tracer.record_result(node, tuple(outs))
    return rebuild(outs)


def _merge_extras(gms, extras, n_operands):
    """Give every subgraph the placeholders for all the extra operands any of them found
    (in one order), named arg<k>_1 after the operands'."""
    merged = []
    for found in extras:
        for t in found:
            if not any(t is m for m in merged):
                merged.append(t)
    if not merged:
        return merged
    for gm, found in zip(gms, extras):
        graph = gm.graph
        phs = [n for n in graph.nodes if n.op == "placeholder"]
        by_tensor = {id(t): phs[n_operands + i] for i, t in enumerate(found)}
        last = phs[n_operands - 1] if n_operands else None
        for t in merged:
            node = by_tensor.get(id(t))
            if node is None:
                with graph.inserting_after(last):
                    node = graph.placeholder(f"extra_{len(graph.nodes)}")
            elif last is not None:
                last.append(node)
            else:
                graph._move(node, 0)
            last = node
        phs = [n for n in graph.nodes if n.op == "placeholder"]
        for k, n in enumerate(phs):
            n.name = n.target = f"__placeholder_{k}"
        for k, n in enumerate(phs):
            n.name = n.target = f"arg{k}_1"
        graph.lint()
        gm.recompile()
    return merged


def map(f, xs, *args):
    """Stack f(xs[i], *args) over i (dim 0 of xs), kept as one loop node in traced graphs.

    xs: a tensor, or a tuple/list of tensors with the same size in dim 0 (f then gets the
    list of their slices); args: tensors passed whole to every call. f returns a tensor or
    a tuple/list of tensors; each is stacked along a new dim 0."""
    single = isinstance(xs, Tensor)
    xs_list = [xs] if single else list(xs)
    if not xs_list or not all(isinstance(x, Tensor) and x.dim() > 0 for x in xs_list):
        raise TypeError("map: xs must be a tensor (or a tuple/list of tensors) with at least one "
                        "dimension")
    n = xs_list[0].shape[0]
    if any(x.shape[0] != n for x in xs_list):
        raise RuntimeError(f"map: every xs must have the same size in dim 0, got "
                           f"{[x.shape[0] for x in xs_list]}")
    if n == 0:
        raise RuntimeError("map: xs must not be empty in dim 0")
    if not all(isinstance(a, Tensor) for a in args):
        raise TypeError("map: args must be tensors")

    def body(*flat):
        sl, rest = list(flat[:len(xs_list)]), flat[len(xs_list):]
        return f(sl[0] if single else sl, *rest)

    tracer = _active_tracer()
    if tracer is None:
        from .functional import stack
        results = [_flat(body(*[x[i] for x in xs_list], *args), "map's f") for i in range(n)]
        return results[0][1]([stack([r[0][k] for r in results]) for k in range(len(results[0][0]))])
    _check_no_grad(tracer, xs_list + list(args), "map")
    with _only(None):
        examples = [Tensor._make(same_layout_copy(x._data[0])) for x in xs_list]
    gm, _, rebuild, extras = _trace_subgraph(tracer, body, examples + list(args), "map's f")
    _check_no_grad(tracer, extras, "map")
    name = _subgraph_name(tracer, "body_graph")
    tracer.constants[name] = gm
    body_node = tracer.graph.get_attr(name)
    node = tracer.graph.call_function(
        map_impl, (body_node, tracer.to_arg(xs_list), tracer.to_arg(list(args) + extras)))
    with _only(None):
        outs = list(map_impl(gm, xs_list, list(args) + extras))
    tracer.record_result(node, tuple(outs))
    return rebuild(outs)


def map_impl(body, xs, args):
    """The node a traced `map` becomes: body (a GraphModule taking the slices of every xs,
    then args, and returning a tuple) over dim 0 of the tensors in the list xs; returns the
    tuple of stacked outputs."""
    return map(lambda slices, *rest: body(*slices, *rest), list(xs), *args)
