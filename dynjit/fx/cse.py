"""Common-subexpression elimination on an FX graph, for any backend.

`eliminate_common_subexpressions(graph)` returns a copy of the graph in which a
pure call repeated with the same target and the same arguments is computed once:
`x.amax(1)` written twice, or the same `x - m` built by two decompositions,
becomes one node whose users are both callers'. The input graph is not changed,
so a backend can run the pass on a graph the frontend or AOT still holds.

What counts as the same call: the same target and arguments that are the same
nodes and equal constants of the same type (`1`, `1.0` and `True` differ; lists
and tuples compare element by element). What is never merged:

- impure calls (`Node.is_impure`: in-place ops, random ops, which must draw what
  eager draws, methods ending in `_`), calls with an `out=` argument, calls of
  modules and attributes;
- calls that are not registry ops, `operator` functions or Tensor methods (a
  user function in the graph may have effects);
- an output into another output: they are two tensors, as in eager;
- anything in a graph that may write memory (an in-place op, an `out=`, a call of
  a module or of a function that is not a registry op): two `x.clone()` are two
  buffers once one of them is written to, through any view, so such graphs are
  copied as they are.
"""
import operator

import numpy as np

from .node import map_arg

# the pure functions of the operator module (not setitem, iadd ...)
_o = operator
_OPERATOR_FUNCTIONS = frozenset((
    _o.add, _o.sub, _o.mul, _o.truediv, _o.floordiv, _o.mod, _o.pow, _o.matmul, _o.neg, _o.pos, _o.abs, _o.invert,
    _o.and_, _o.or_, _o.xor, _o.lshift, _o.rshift, _o.getitem, _o.eq, _o.ne, _o.lt, _o.le, _o.gt, _o.ge, _o.not_,
    _o.truth))
del _o


def _key(value):
    """A hashable key for an argument: nodes (and any other object) by identity; numbers,
    strings and numpy scalars by type and repr, so that 0.0 and -0.0 differ (x + 0.0 and
    x + -0.0 do on -0.0) and two NaN constants are the same argument."""
    from .node import Node
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))))
    if isinstance(value, slice):
        return ("slice", _key(value.start), _key(value.stop), _key(value.step))
    if value is None or isinstance(value, (bool, int, float, complex, str, np.generic)):
        return (type(value), repr(value))
    return ("object", id(value))      # dtypes, devices, tensors, functions: the same object


class _Unhashable(Exception):
    pass


def _mergeable(node):
    if node.op == "call_method":
        return isinstance(node.target, str) and not node.target.endswith("_")
    if node.op != "call_function":
        return False
    from dynjit.ops.registry import OpDef
    t = node.target
    return isinstance(t, OpDef) or t in _OPERATOR_FUNCTIONS


def _mutates(node):
    """Whether the node writes memory (an in-place op, a method ending in `_`, an `out=`)."""
    if node.op == "call_function":
        from dynjit.ops.registry import OpDef
        t = node.target
        if isinstance(t, OpDef):
            return t.kind == "inplace" or getattr(t, "_is_impure", False) or "out" in node.kwargs
        return t not in _OPERATOR_FUNCTIONS        # a function dynjit does not know may write
    if node.op == "call_method":
        return node.is_impure() or "out" in node.kwargs
    return node.op == "call_module"


def eliminate_common_subexpressions(graph):
    """(a copy of `graph` with repeated pure calls computed once, number of calls removed)."""
    from .graph import Graph
    new = Graph()
    env = {}
    known = {}
    removed = 0
    merging = not any(_mutates(n) for n in graph.nodes)
    # two outputs are two tensors in eager (writing one leaves the other as it was): an output
    # is never merged into another output
    outputs = set()
    for node in graph.nodes:
        if node.op == "output":
            map_arg(node.args[0], outputs.add)
    returned = set()
    for node in graph.nodes:
        if node.op == "output":
            new.output(map_arg(node.args[0], lambda n: env[n]))
            continue
        args = map_arg(node.args, lambda n: env[n])
        kwargs = map_arg(node.kwargs, lambda n: env[n])
        key = None
        if node.is_impure() or "out" in node.kwargs:
            known.clear()
        elif merging and _mergeable(node):
            try:
                key = (node.op, node.target, _key(args), _key(kwargs))
            except _Unhashable:
                key = None
            if key is not None:
                same = known.get(key)
                if same is not None and not (node in outputs and same in returned):
                    env[node] = same
                    removed += 1
                    if node in outputs:
                        returned.add(same)
                    continue
        copy = new.node_copy(node, lambda n: env[n])
        env[node] = copy
        if node in outputs:
            returned.add(copy)
        if key is not None:
            known[key] = copy
    return new, removed


__all__ = ["eliminate_common_subexpressions"]
