"""Which sizes AOT autograd traces as symbols, and when a symbolic trace fits a call.

A symbolic trace (dynjit.fx.symbolic_shapes) serves every call whose tensors have the same
ranks, dtypes and requires_grad, whose symbolic sizes are >= 2 (0 and 1 stay specialized),
and whose sizes satisfy the trace's guards. It is made:

- from the first trace, for a dynamic graph of the `dynjit.compile` frontend (one that
  takes sizes as numbers, or whose code was traced before: see
  aot_autograd._frontend_dynamic_hint): the sizes of its inputs that are arguments of the
  compiled function (their placeholders' source is a local), and the int inputs the
  frontend read from them (`x.shape[0]` passed as a number shares the symbol of that size);
- from the first trace with `dynamic=True`: every size of the arguments, equal sizes
  sharing one symbol;
- otherwise when a call misses the cache only because tensor sizes differ from a trace
  already made (automatic dynamic sizes): the sizes that differ become symbols.

Int arguments >= 2 are symbols too, so a number that decides a shape (`x.view(n, -1)`) is
not specialized. Before a symbolic trace is kept, it is checked against a concrete trace at
other sizes (`agrees_with_concrete`): both must make the same ops with the same arguments
(the symbolic graph's sizes evaluated at those sizes). A size that reached the graph without
passing through a symbol (code reading numpy shapes directly) shows up there as a constant
that differs, and the symbolic trace is dropped: AOT then traces once per size, as before.
"""
import numpy as np

from ..fx.node import Node
from ..ops.registry import OpDef
from ..tensor import Tensor


class SymbolicSpec:
    """dims: {leaf: dims traced as symbols}; numbers: int leaves traced as symbols;
    ties: {(leaf, dim): int leaf read from that size}; duck: sizes of equal value share one
    symbol (a guard that they stay equal), as `dynamic=True` asks."""

    def __init__(self, dims, numbers, ties=None, duck=False):
        self.dims = {i: frozenset(d) for i, d in dims.items() if d}
        self.numbers = frozenset(numbers)
        self.ties = dict(ties or {})
        self.duck = duck

    def __bool__(self):
        return bool(self.dims or self.numbers)


def describe_sources(sources):
    """'argument 1 = size 0 of argument 0' for a symbol's sources (argument = leaf index)."""
    return " = ".join(f"size {src[2]} of argument {src[1]}" if src[0] == "dim" else f"argument {src[1]}"
                      for src in sources)


def symbolic_numbers(leaves):
    return [i for i, v in enumerate(leaves) if type(v) is int and v >= 2]


def _contiguous(t):
    return t._data.flags.c_contiguous


def spec_from_hint(hint, leaves):
    """The spec for a frontend graph: `hint` is (tensor leaves, {number leaf: (tensor leaf, dim)})."""
    tensor_leaves, reads = hint
    dims = {}
    for i in tensor_leaves:
        v = leaves[i]
        if isinstance(v, Tensor) and _contiguous(v):
            dims[i] = {d for d, n in enumerate(v._data.shape) if n >= 2}
    ties = {(i, d): j for j, (i, d) in reads.items() if i in dims}
    return SymbolicSpec(dims, symbolic_numbers(leaves), ties)


def spec_all_dynamic(leaves, first):
    """`dynamic=True`: every size >= 2 of the contiguous tensor leaves from `first` on (the
    leaves before it are parameters and buffers), duck-sized."""
    dims = {i: {d for d, n in enumerate(v._data.shape) if n >= 2} for i, v in enumerate(leaves)
            if i >= first and isinstance(v, Tensor) and _contiguous(v)}
    return SymbolicSpec(dims, symbolic_numbers(leaves), duck=True)


def spec_from_keys(key, previous, leaves, nested):
    """Automatic dynamic sizes: the spec for a call whose key differs from an earlier trace's
    key only in tensor sizes (the sizes that differ, >= 2 now), or None."""
    off = 2 if nested else 1
    for old in previous:
        if len(old) != len(key) or old[:off] != key[:off]:
            continue
        dims = {}
        ok = True
        for p, (a, b) in enumerate(zip(old[off:], key[off:])):
            i = p
            if a == b:
                continue
            tensor = i < len(leaves) and isinstance(leaves[i], Tensor)
            if not (tensor and type(a) is tuple and len(a) == 4 and a[1:2] == b[1:2] and a[3] == b[3]
                    and len(a[0]) == len(b[0]) and _contiguous(leaves[i])):
                ok = False
                break
            dims[i] = {d for d, (m, n) in enumerate(zip(a[0], b[0])) if m != n and n >= 2 and m >= 2}
            if any(m != n and (m < 2 or n < 2) for m, n in zip(a[0], b[0])):
                ok = False
                break
        if ok and dims:
            return SymbolicSpec(dims, symbolic_numbers(leaves))
    return None


def symbolic_key(key, nested, dims):
    """`key` with the symbolic sizes of the tensors in `dims` left out (their strides too:
    a symbolic trace is made for contiguous tensors)."""
    off = 2 if nested else 1
    parts = list(key)
    for i, ds in dims.items():
        p = off + i
        if p >= len(parts):
            return None
        part = parts[p]
        if type(part) is not tuple or len(part) != 4:
            return None
        shape, dtype, _, rg = part
        parts[p] = (tuple(None if d in ds else n for d, n in enumerate(shape)), dtype, "contiguous", rg)
    return tuple(parts)


class SymbolicEntry:
    """A compiled symbolic trace and the check that a call fits it."""

    def __init__(self, compiled, traced, spec, nested, key, leaves):
        self.compiled = compiled
        self.env = traced.shape_env
        self.dims = {}
        for k, sym in enumerate(self.env.symbols):
            for src in sym.sources:
                if src[0] == "dim":
                    self.dims.setdefault(src[1], set()).add(src[2])
        self.nested = nested
        self.key = symbolic_key(key, nested, self.dims)
        self.specialized = [(i, leaves[i]) for i in sorted(traced.specialized)]

    def fits(self, key, leaves):
        if symbolic_key(key, self.nested, self.dims) != self.key:
            return False
        for i, v in self.specialized:
            w = leaves[i]
            if type(w) is not type(v) or (w != v and not (w != w and v != v)):
                return False
        values = {}
        for k, sym in enumerate(self.env.symbols):
            for src in sym.sources:
                if src[0] == "dim":
                    t = leaves[src[1]]
                    if not _contiguous(t):
                        return False
                    v = t._data.shape[src[2]]
                else:
                    v = leaves[src[1]]
                    if type(v) is not int:
                        return False
                if v < 2:
                    return False
                if values.setdefault(k, v) != v:
                    return False
        return self.env.check(values)


# -- checking a symbolic trace against a concrete one ----------------------------------------

def probe_point(env):
    """Symbol values other than the real ones that satisfy the guards (or None)."""
    for delta in (1, 2, 3, 5, -1):
        free = [k for k in range(len(env.symbols)) if k not in env.replacements]
        if not free:
            return None
        values = env.hints()
        for k in free:
            values[k] = values[k] + delta
        for _ in range(2):
            for k, p in env.replacements.items():
                values[k] = env.norm(p).evaluate(values)
        if all(v >= 2 for v in values.values()) and env.check(values) and \
                any(values[k] != env.symbols[k].hint for k in free):
            return values
    return None


def probe_leaves(env, leaves, values):
    """The call's leaves resized to the symbol values (data repeated, so indices stay valid)."""
    new = list(leaves)
    shapes = {}
    for k, sym in enumerate(env.symbols):
        for src in sym.sources:
            if src[0] == "dim":
                shapes.setdefault(src[1], list(leaves[src[1]]._data.shape))[src[2]] = values[k]
            else:
                new[src[1]] = values[k]
    for i, shape in shapes.items():
        t = leaves[i]
        arr = np.resize(t._data, tuple(shape)).astype(t._data.dtype, copy=False)
        p = Tensor._make(np.ascontiguousarray(arr))
        p._requires_grad = t._requires_grad
        new[i] = p
    return new


def agrees_with_concrete(sym_tr, concrete_tr, values):
    """Do the symbolic trace, evaluated at `values`, and a concrete trace made at those sizes
    make the same ops with the same arguments (see the module docstring)?"""
    env = sym_tr.shape_env
    # placeholder indices without the symbols' own placeholders
    position = {}
    for k, (kind, _) in enumerate(sym_tr.placeholders):
        if kind != "size":
            position[k] = len(position)
    grad_inputs = [position.get(k) for k in sym_tr.grad_inputs]
    if sym_tr.training != concrete_tr.training or sym_tr.num_fwd_outputs != concrete_tr.num_fwd_outputs \
            or grad_inputs != concrete_tr.grad_inputs or len(sym_tr.program) != len(concrete_tr.program) \
            or sym_tr.fw_requires_grad != concrete_tr.fw_requires_grad:
        return False
    from .runtime import _evaluated
    for a, b in zip(sym_tr.program, concrete_tr.program):
        kind = "view" if a[0] == "symview" else a[0]
        if kind != b[0]:
            return False
        if a[0] == "symview" and repr(_evaluated(a[2], values)) != repr(b[2]):
            return False
    g1, g2 = sym_tr.gm.graph, concrete_tr.gm.graph
    sizes = set(sym_tr.size_nodes)
    ph1 = [n for n in g1.nodes if n.op == "placeholder" and n not in sizes]
    ph2 = [n for n in g2.nodes if n.op == "placeholder"]
    if len(ph1) != len(ph2):
        return False
    mapping = dict(zip(ph1, ph2))

    def agree(a, b):
        if isinstance(a, Node):
            sym = a.meta.get("sym")
            bv = b.meta.get("val") if isinstance(b, Node) else b
            if sym is not None:
                # a size: the concrete trace must have its value there
                return type(bv) is int and env.norm(sym).evaluate(values) == bv
            if _is_number_node(a) and a not in mapping:
                return isinstance(bv, (int, float)) and not isinstance(bv, bool)
            if a in mapping:
                return mapping[a] is b
            return False
        if isinstance(b, Node):
            return False
        if isinstance(a, (list, tuple)):
            return isinstance(b, (list, tuple)) and len(a) == len(b) and all(agree(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(agree(a[k], b[k]) for k in a)
        if isinstance(a, slice):
            return isinstance(b, slice) and all(agree(x, y) for x, y in (
                (a.start, b.start), (a.stop, b.stop), (a.step, b.step)))
        if isinstance(a, float) and a != a:
            return isinstance(b, float) and b != b
        return type(a) is type(b) and a == b

    def ops(g):
        return [n for n in g.nodes if n.op in ("call_function", "get_attr", "output")
                and (n.op != "call_function" or isinstance(n.target, OpDef) or not _is_number_node(n))]
    o1, o2 = ops(g1), ops(g2)
    if len(o1) != len(o2):
        return False
    for a, b in zip(o1, o2):
        if a.op != b.op or a.target is not b.target and a.target != b.target:
            return False
        if a.op == "get_attr":
            mapping[a] = b
            continue
        if not (agree(tuple(a.args), tuple(b.args)) and agree(dict(a.kwargs), dict(b.kwargs))):
            return False
        mapping[a] = b
    return True


def _is_number_node(n):
    val = n.meta.get("val")
    return isinstance(val, (int, float)) and not isinstance(val, bool)
