"""Graph -> fused kernels + a straight-line Python wrapper that calls them.

The graph is walked once in order. Pointwise ops (those with a lowering in
op_lowerings) and the reductions that consume them are put into *groups*;
a group becomes one kernel. A group has an iteration shape S and the dims D
its reductions reduce (none for a purely elementwise group). A pointwise node
joins the open group of its inputs when its shape is S, or, in a group with
reductions, the shape of S reduced over D (with or without keepdim: it is
computed once per row, after the reductions it needs); a reduction over D of
a value of shape S joins its input's group. So `((a*b + c).sin() * 0.5).exp()`
is one loop, `(a*b).sum(1)` one loop nest, and softmax
(amax, sub, exp, sum, div) one kernel doing three passes over each row.

A group closes when anything outside it uses one of its values (that value
is then stored to a buffer) or before an op that may write memory; its
kernel call is emitted into the wrapper at that point, so kernels and the
other ops run in an order that respects every dependency.

Everything else becomes a line of the wrapper: views that feed kernels are
stride arithmetic (see layouts.py) and otherwise numpy views / dispatched
view ops; matmul-like ("extern") ops call their numpy kernel; any other op
is called through the dispatcher as in eager mode, so an op the backend does
not know never fails the graph.
"""
import math
import operator

import numpy as np

from dynjit import _dtype as D
from dynjit.fx.cse import eliminate_common_subexpressions
from dynjit.ops.meta import normalize_dims
from dynjit.ops.registry import OpDef, POINTWISE, VIEW, EXTERN, INPLACE, registry

from . import layouts as L
from .codegen import SUPPORTED_DTYPES
from .kernel import Kernel, KNode, Operand, ScalarArg, SizeNumber
from .op_lowerings import DIRECT_KERNELS, KernelBuilder, Unsupported, direct_kernel, lower_pointwise
from .runtime import CACHED_BUFFER_BYTES, BufferCache, store_into_lines
from .threads import split_ranges

REDUCTIONS = {"sum": "sum", "mean": "sum", "prod": "prod", "amax": "max", "amin": "min",
              "max": "max", "min": "min", "sum_to_size": "sum"}
COPY_OPS = ("to_dtype", "clone", "contiguous_copy", "copy")
DECOMPOSED = ("softmax", "log_softmax", "var", "var_mean", "linear")   # spelled as simpler ops (decompose)
ALIAS_OPS = ("detach",)

# a kernel runs on as many threads as give each at least this much work (elements x cost per
# element), at most the configured number
PARALLEL_WORK = 1 << 17
MATH_COST = 6
# the most IR a kernel gets, in units of one primitive op (a transcendental function counts
# MATH_WEIGHT): LLVM's time grows faster than linearly with a function's size, so a chain of
# thousands of ops is split into kernels of this size (at the cost of one buffer between two)
MAX_KERNEL_WEIGHT = 2048
# nll_loss(log_softmax(x)) of fewer elements keeps the (N, C) log_softmax and one nll_loss:
# the row log-sum-exp form costs two nll_loss calls, a broadcast and a 0-d kernel (about
# 5 us), more than writing and gathering a small log_softmax (64 x 100: 14 against 19.5 us;
# even at 64 x 500, 64 x 1000 and 1000 x 64; the row form ahead from 256 x 1000 up)
NLL_ROW_FORM_MIN_ELEMENTS = 1 << 15
MATH_WEIGHT = 16


# Python arithmetic on number inputs that the wrapper computes (make_fx records it on traced
# numbers: `lr * 2`); its result is a number input of the kernels like the inputs themselves
NUMBER_ARITHMETIC = (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                     operator.mod, operator.pow, operator.neg, operator.pos, operator.abs)


INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _is_number(value):
    t = type(value)
    return t is int or t is float


def _is_check_specialized(target):
    return getattr(target, "__name__", None) == "check_specialized" and \
        getattr(target, "__module__", "").endswith("traced_number")


class RuntimeNumber:
    """A number input (or a number the wrapper computes from them) as an argument of a
    pointwise lowering: not a number, so that a lowering that would decide something from
    its value (`alpha != 1`, pow's `e == 2`, numpy's dtype of it) cannot, and the node runs
    eagerly instead; `Builder.cast` makes it a kernel's scalar argument."""
    __slots__ = ("var", "kind")

    def __init__(self, var, kind):
        self.var, self.kind = var, kind        # the wrapper's variable; "f64" or "i64"

    def _value_needed(self, *args):
        raise Unsupported("the value of a number input")

    @property
    def weak_value(self):
        """What numpy's dtype rules see for it (op_lowerings.compare_dtype): a weak float.
        An int is not offered: numpy compares an integer tensor with an int it cannot hold
        by value, which depends on the value."""
        if self.kind == "f64":
            return 0.0
        raise Unsupported("an int number input compared with a tensor")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = _value_needed
    __float__ = __int__ = __index__ = __neg__ = __abs__ = _value_needed
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _value_needed
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _value_needed
    __hash__ = object.__hash__


class Builder(KernelBuilder):
    """The KernelBuilder of one kernel, which also makes constants known only when the
    kernel runs: a RuntimeNumber becomes a scalar argument (`self.scalars`: the wrapper
    expression and kind of each), a SizeNumber is read from the sizes array."""

    def __init__(self):
        super().__init__()
        self.scalars = []

    def cast(self, x, dtype):
        if isinstance(x, RuntimeNumber):
            if x.kind == "f64" and not dtype.is_floating_point:
                raise Unsupported("a float number input cast to an integer")
            key = (x.var, x.kind)
            if key not in self.scalars:
                self.scalars.append(key)
            index = self.scalars.index(key)
            return self._shared(("scalar", index, dtype),
                                lambda: KNode("const", dtype, value=ScalarArg(index, x.kind)))
        if isinstance(x, SizeNumber):
            if not dtype.is_floating_point:
                raise Unsupported("a size-derived number cast to an integer")
            return self._shared(("size", id(x), dtype), lambda: KNode("const", dtype, value=x))
        if isinstance(x, KNode) and x.kind == "const" and isinstance(x.value, (ScalarArg, SizeNumber)):
            if x.dtype is dtype:
                return x
            return self._shared(("cast", id(x), dtype), lambda: KNode("prim", dtype, op="cast", args=(x,)))
        return super().cast(x, dtype)


def _meta(node):
    m = node.meta.get("val")
    if m is not None and hasattr(m, "shape") and isinstance(getattr(m, "dtype", None), D.dtype):
        return m
    return None


def _is_tensor_node(a):
    return hasattr(a, "op") and hasattr(a, "meta") and _meta(a) is not None


def _is_node(a):
    return hasattr(a, "op") and hasattr(a, "users")


def _nodes_in(a):
    from dynjit.fx.node import iter_nodes
    return iter_nodes(a)


class Group:
    """Nodes that become one kernel: iteration shape S, reduced dims D."""

    def __init__(self, shape, reduced=()):
        self.shape = tuple(shape)
        self.reduced = frozenset(reduced)
        self.members = []
        self.weight = 0          # the size of its kernel (see MAX_KERNEL_WEIGHT)
        self.dim_map = {}        # member -> the S dim of each of its dims
        self.after = {}          # member -> needs a reduction result of this group
        self.inputs = set()      # nodes read from outside
        self.open = True

    def kept_shape(self, keepdim):
        if keepdim:
            return tuple(1 if d in self.reduced else s for d, s in enumerate(self.shape))
        return tuple(s for d, s in enumerate(self.shape) if d not in self.reduced)

    def kept_dims(self):
        return tuple(d for d in range(len(self.shape)) if d not in self.reduced)

    def has_room(self, weight):
        return self.weight + weight <= MAX_KERNEL_WEIGHT

    def is_full(self, reduced=None):
        reduced = self.reduced if reduced is None else reduced
        return math.prod(s for d, s in enumerate(self.shape) if d not in reduced) == 1

    def add(self, node, dim_map, after, weight=1):
        for a in _nodes_in((node.args, node.kwargs)):
            if a not in self.dim_map:
                self.inputs.add(a)
        self.weight += weight
        self.members.append(node)
        self.dim_map[node] = tuple(dim_map)
        self.after[node] = after

    def pointwise_map(self, shape):
        """How a pointwise value of `shape` maps onto S (None: it does not fit this group)."""
        shape = tuple(shape)
        ident = tuple(range(len(self.shape)))
        if shape == self.shape:
            return ident
        if self.reduced:
            if shape == self.kept_shape(True):
                return ident
            if shape == self.kept_shape(False):
                return self.kept_dims()
        return None

    def consistent(self, arg, node_shape, node_map):
        """Whether member `arg`, broadcast to a consumer of `node_shape` mapped by
        `node_map`, lands on the S dims it was computed on."""
        a_shape = _meta(arg).shape
        lead = len(node_shape) - len(a_shape)
        a_map = self.dim_map[arg]
        for i, n in enumerate(a_shape):
            if n != 1 and node_map[i + lead] != a_map[i]:
                return False
        return True


class Lowering:
    def __init__(self, gm, example_inputs, nthreads, specialize_inputs=()):
        self.gm = gm
        # repeated pure calls computed once, before and after the decompositions (two
        # softmaxes of one x share its amax)
        graph, removed = eliminate_common_subexpressions(gm.graph)
        self.graph, removed_after = eliminate_common_subexpressions(decompose(graph))
        self.examples = list(example_inputs)
        self.nthreads = nthreads
        self.lines = []
        self.prologue = []
        self.guards = []
        self.globals = {"_np": np}
        self.kernels = []
        self.params = []
        self.array = {}
        self.tensor = {}
        self.layout = {}
        self.group_of = {}
        self.open_groups = []
        self.contig = {}
        self.reduce_info = {}
        self.view_src = {}       # view node -> (source node, numpy view function var, rest of the call)
        self.view_op = {}        # view node -> the dispatched view op's var
        self.store_into = {}     # value -> (graph input it is copied into, copy_ op's var)
        self._visited = set()    # nodes lowered ahead of their place (visit_trailing_copies)
        self.counter = 0
        self.weights = {}        # member -> its weight
        self._order = None
        self.numbers = {}        # number node -> its wrapper variable (inputs and arithmetic on them)
        self.number_kind = {}    # number node -> "f64" / "i64"
        self.specialized = set(specialize_inputs)   # indices of number inputs guarded by value
        self.stats = {"kernels": 0, "fused_nodes": 0, "extern": 0, "fallback": 0, "views": 0,
                      "cse": removed + removed_after}

    # -- names ----------------------------------------------------------------
    def fresh(self, hint):
        self.counter += 1
        return f"{hint}{self.counter}"

    def global_value(self, value, hint="_g"):
        name = self.fresh(hint)
        self.globals[name] = value
        return name

    def literal(self, value):
        if value is None or isinstance(value, (bool, str)) or type(value) is int:
            return repr(value)
        if type(value) is float and math.isfinite(value):
            return repr(value)
        return self.global_value(value)

    def emit(self, line):
        self.lines.append(line)

    # -- the walk -----------------------------------------------------------------
    def run(self):
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.examples):
            raise TypeError(f"the graph has {len(placeholders)} inputs but {len(self.examples)} "
                            "example inputs were given")
        self.dynamic_numbers = self._classify_numbers(placeholders)
        for i, (node, example) in enumerate(zip(placeholders, self.examples)):
            if isinstance(example, (int, float, bool, str, type(None))):
                if node in self.dynamic_numbers:
                    self.guards.append(f"type({node.name}) is not {type(example).__name__}")
                    if type(example) is int:        # a kernel argument is an int64
                        self.guards.append(f"not {INT64_MIN} <= {node.name} <= {INT64_MAX}")
                else:
                    self.specialized.add(i)
                    self.guards.append(f"{node.name} != {self.literal(example)}")
        stores_first = self._trailing_copies()
        for node in self.graph.nodes:
            if node in self._visited:
                continue
            if node is stores_first[0]:
                self.visit_trailing_copies(stores_first)
                continue
            if node.op == "placeholder":
                self.visit_input(node, self.examples[len(self.params)])
            elif node.op == "get_attr":
                self.visit_constant(node)
            elif node.op == "call_function":
                self.visit_call(node)
            elif node.op == "output":
                for g in list(self.open_groups):
                    self.close(g)
                self.emit("return " + self.render(node.args[0], tensor=True))
            else:
                raise Unsupported(f"node op {node.op}")
        return self

    def visit_input(self, node, example):
        name = node.name
        self.params.append(name)
        self.tensor[node] = name
        data = getattr(example, "_data", None)
        if isinstance(data, np.ndarray):
            var = f"{name}_d"
            self.prologue.append(f"{var} = {name}._data")
            self.array[node] = var
            dt = self.global_value(data.dtype, "_dt")
            self.guards.append(f"{var}.shape != {data.shape!r} or {var}.strides != {data.strides!r} "
                               f"or {var}.dtype != {dt}")
            meta = _meta(node)
            if meta is not None and meta.dtype in SUPPORTED_DTYPES:
                lay = L.of_array(L.Storage("input", var), meta.dtype, data)
                if lay is not None:
                    self.layout[node] = lay
        elif node in self.dynamic_numbers:
            self.numbers[node] = name
            self.number_kind[node] = "f64" if type(example) is float else "i64"

    def _classify_numbers(self, placeholders):
        """The number inputs whose values the compiled graph may take at run time: those
        (ints and floats, not bools) used only as operands of pointwise ops and of
        arithmetic whose results are used so, not already specialized by the trace (its
        check_specialized nodes) or by the caller (`specialize_inputs`). Any other use (a
        view's size, an index, a reduction's dim) decides shapes, so the number is guarded
        by value instead."""
        candidates = {n for i, (n, ex) in enumerate(zip(placeholders, self.examples))
                      if _is_number(ex) and i not in self.specialized}
        derived = {}        # arithmetic node -> the inputs it is computed from
        for n in self.graph.nodes:
            if n.op == "call_function" and n.target in NUMBER_ARITHMETIC:
                srcs = set()
                ok = True
                for a in _nodes_in((n.args, n.kwargs)):
                    if a in candidates:
                        srcs.add(a)
                    elif a in derived:
                        srcs |= derived[a]
                    else:
                        ok = False
                if ok and srcs and _is_number(n.meta.get("val")):
                    derived[n] = srcs
        bad = set()
        for n, srcs in list(derived.items()) + [(p, {p}) for p in candidates]:
            for u in n.users:
                if u in derived:
                    continue
                if (u.op == "call_function" and isinstance(u.target, OpDef) and u.target.kind == POINTWISE
                        and n not in _nodes_in(tuple(u.kwargs.values()) + tuple(
                            a for a in u.args if isinstance(a, (list, tuple, dict, slice))))):
                    continue
                bad |= srcs
        dynamic = candidates - bad
        self.derived_numbers = {n for n, srcs in derived.items() if srcs <= dynamic}
        return dynamic

    def visit_number(self, node):
        """Arithmetic on number inputs: a line of the wrapper, no barrier for the kernels."""
        var = self.fresh("n")
        fn = self.global_value(node.target, "_arith")
        args = ", ".join(self.numbers[a] if a in self.numbers else self.render(a, tensor=True)
                         for a in node.args)
        self.emit(f"{var} = {fn}({args})")
        self.numbers[node] = var
        self.tensor[node] = var
        self.number_kind[node] = "f64" if type(node.meta.get("val")) is float else "i64"

    def number_operand(self, a):
        """A pointwise op's argument as a lowering sees it: a RuntimeNumber for a number
        input the graph takes at run time, the argument itself otherwise."""
        if hasattr(a, "op") and a in self.numbers:
            return RuntimeNumber(self.numbers[a], self.number_kind[a])
        if hasattr(a, "op") and a.op == "placeholder" and _is_number(a.meta.get("val")):
            return a.meta["val"]            # a number input guarded by value: a constant
        return a

    def visit_constant(self, node):
        value = self.gm
        for part in node.target.split("."):
            value = getattr(value, part)
        t = self.global_value(value, "_const")
        self.tensor[node] = t
        data = getattr(value, "_data", None)
        if isinstance(data, np.ndarray):
            var = self.fresh("_cd")
            self.prologue.append(f"{var} = {t}._data")
            self.array[node] = var
            meta = _meta(node)
            if meta is not None and meta.dtype in SUPPORTED_DTYPES:
                lay = L.of_array(L.Storage("input", var), meta.dtype, data)
                if lay is not None:
                    self.layout[node] = lay

    def visit_call(self, node):
        target = node.target
        if node in self.derived_numbers:
            self.visit_number(node)
            return
        if _is_check_specialized(target):
            # make_fx's check that a specialized number input has its traced value (the
            # wrapper also guards it: another value is lowered again, and raises as eager)
            self.visit_fallback(node, barrier=False)
            return
        if isinstance(target, OpDef):
            args = target.normalize(tuple(node.args), dict(node.kwargs))
            name = target.name
            if (target.kind == POINTWISE or name in COPY_OPS) and self.try_pointwise(node, target, args):
                return
            if name in REDUCTIONS and self.try_reduction(node, target, args):
                return
            if target.kind == VIEW or name in ALIAS_OPS:
                self.visit_view(node, target, args)
                return
            if (target.kind == EXTERN or name in DIRECT_KERNELS) and self._supported(node, args):
                self.visit_extern(node, target, args)
                return
            if name == "copy_" and self.try_store_into(node, args):
                return
            self.visit_fallback(node, barrier=target.kind == INPLACE or node.is_impure())
            return
        if target is operator.getitem and isinstance(self.layout.get(node.args[0]), list):
            self.visit_view(node, target, tuple(node.args[1:]))
            return
        self.visit_fallback(node, barrier=target is not operator.getitem)

    # -- groups ---------------------------------------------------------------------
    def _open_group_of(self, n):
        g = self.group_of.get(n)
        return g if g is not None and g.open else None

    def _supported(self, node, args):
        meta = _meta(node)
        if meta is None or meta.dtype not in SUPPORTED_DTYPES:
            return False
        for a in _nodes_in(args):
            if a in self.numbers:
                continue
            m = _meta(a)
            if m is None or m.dtype not in SUPPORTED_DTYPES:
                return False
        return True

    def try_pointwise(self, node, op, args):
        if not self._supported(node, args):
            return False
        meta = _meta(node)
        try:       # a dry run: does the op lower with these arguments?
            kb = Builder()
            lower_pointwise(kb, op.name, meta.dtype, [
                KNode("load", _meta(a).dtype) if _is_tensor_node(a) else self.number_operand(a) for a in args])
        except Unsupported:
            return False
        weight = kb.weight(MATH_WEIGHT)
        shape = tuple(meta.shape)
        tensor_args = [a for a in args if _is_tensor_node(a)]
        candidates = []
        for a in tensor_args:
            g = self._open_group_of(a)
            if g is not None and g not in candidates:
                candidates.append(g)
        fits = []
        for g in candidates:
            dm = g.pointwise_map(shape)
            ok = dm is not None and all(g.consistent(a, shape, dm) for a in tensor_args if self.group_of.get(a) is g)
            if ok:
                after = any(g.after.get(a, False) for a in tensor_args if self.group_of.get(a) is g)
                p_valued = g.reduced and shape != g.shape
                if g.is_full() and g.reduced and after and not p_valued:
                    ok = False      # a full reduction's result is known only after the whole pass
            (fits if ok else []).append(g)
        for g in candidates:
            if g not in fits:
                self.close(g)
        target = None
        for g in fits:
            if target is None:
                target = g
            elif g.open and self._mergeable(target, g) and target.has_room(g.weight + weight):
                self._merge(target, g)
            elif g.open:
                self.close(g)
        if target is not None and not target.has_room(weight):
            self.close(target)      # big enough: the rest of the chain goes to a new kernel
            target = None
        if target is None and not candidates:
            target = self._sibling_group(shape, tensor_args, weight)
        if target is None:
            target = Group(shape)
            self.open_groups.append(target)
        dm = target.pointwise_map(shape)
        after = any(target.after.get(a, False) for a in tensor_args if self.group_of.get(a) is target)
        target.add(node, dm, after, weight)
        self.weights[node] = weight
        self.group_of[node] = target
        return True

    def _sibling_group(self, shape, tensor_args, weight):
        """An open group that already reads one of these inputs and has room for a value of
        `shape` (so the inputs are loaded once, and no extra kernel is launched)."""
        for g in reversed(self.open_groups):
            if not any(a in g.inputs for a in tensor_args):
                continue
            if g.pointwise_map(shape) is None or not g.has_room(weight):
                continue
            return g
        return None

    @staticmethod
    def _mergeable(g1, g2):
        return g1.shape == g2.shape and (g1.reduced == g2.reduced or not g2.reduced)

    def _merge(self, target, g):
        for m in g.members:
            target.add(m, g.dim_map[m], g.after[m], self.weights.get(m, 1))
            self.group_of[m] = target
        # keep node order: members are emitted in graph order
        if self._order is None:
            self._order = {n: i for i, n in enumerate(self.graph.nodes)}
        target.members.sort(key=self._order.get)
        g.members = []
        g.open = False
        self.open_groups.remove(g)

    def try_reduction(self, node, op, args):
        x = args[0]
        if not _is_tensor_node(x) or not self._supported(node, args):
            return False
        meta, xmeta = _meta(node), _meta(x)
        shape = tuple(xmeta.shape)
        name = op.name
        in_dtype = xmeta.dtype
        if name == "sum_to_size":
            size = tuple(args[1])
            lead = len(shape) - len(size)
            dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
            out_map = tuple(range(lead, len(shape)))
        else:
            if name in ("max", "min"):
                dim, keepdim = None, False
            else:
                dim, keepdim = args[1], args[2]
            if dim is not None and not isinstance(dim, (int, tuple, list)):
                return False
            dims = normalize_dims(dim, len(shape)) if shape else ()
            if name in ("sum", "mean", "prod") and args[3] is not None:
                in_dtype = D.to_dtype(args[3])
            out_map = tuple(range(len(shape))) if keepdim else tuple(d for d in range(len(shape)) if d not in dims)
        if name == "sum_to_size" and not dims:
            return False            # eager returns the input itself (a view), not a sum
        kind = REDUCTIONS[name]
        out_dtype = meta.dtype
        if name == "mean" and not out_dtype.is_floating_point:
            return False            # eager divides in float64 and converts back
        if kind in ("sum", "prod"):
            acc = D.float64 if out_dtype.is_floating_point else D.int64
        else:
            acc = out_dtype
        if in_dtype not in SUPPORTED_DTYPES or (kind in ("max", "min") and in_dtype is not out_dtype):
            return False
        divide_by = math.prod(shape[d] for d in dims) if name == "mean" else None
        dims = frozenset(dims)
        g = self._open_group_of(x)
        joined = False
        if g is not None and not g.has_room(1):
            self.close(g)
            g = None
        if g is not None and g.dim_map[x] == tuple(range(len(g.shape))) and g.shape == shape:
            same = g.reduced == dims or not g.reduced
            if same and not (g.after[x] and g.is_full(dims)):
                if not g.reduced:
                    g.reduced = dims
                joined = True
        if not joined:
            if g is not None:
                self.close(g)
            g = Group(shape, dims)
            self.open_groups.append(g)
        g.add(node, out_map, True)
        self.reduce_info[node] = {"kind": kind, "acc": acc, "in_dtype": in_dtype, "divide_by": divide_by}
        self.group_of[node] = g
        return True

    def close(self, g):
        if not g.open:
            return
        g.open = False
        self.open_groups.remove(g)
        self.emit_group(g)

    def close_inputs_of(self, node):
        for a in _nodes_in((node.args, node.kwargs)):
            g = self._open_group_of(a)
            if g is not None:
                self.close(g)

    def _trailing_copies(self):
        """The copy_ nodes that end a functionalized graph (AOT writes mutated inputs back
        there, in input order: an optimizer's parameters, then its step counters and state),
        when their order does not matter: each writes a different input with a fresh
        pointwise value that no other node reads as an input. Returns them, or [None]."""
        nodes = list(self.graph.nodes)
        run = []
        for n in reversed(nodes[:-1] if nodes and nodes[-1].op == "output" else nodes):
            if not (n.op == "call_function" and isinstance(n.target, OpDef) and n.target.name == "copy_"):
                break
            run.append(n)
        run.reverse()
        dsts = [n.args[0] if n.args else None for n in run]
        srcs = [n.args[1] if len(n.args) > 1 else None for n in run]
        if (len(run) < 2 or any(n.users or n.kwargs for n in run)
                or any(not _is_node(d) or d.op != "placeholder" for d in dsts)
                or len(set(dsts)) != len(dsts)
                or any(not _is_node(s) or s.op != "call_function" or not isinstance(s.target, OpDef)
                       or s.target.kind != POINTWISE or s.target.name.endswith("_") or s in dsts
                       for s in srcs)):
            return [None]
        return run

    def visit_trailing_copies(self, run):
        """The final copy_ nodes (see _trailing_copies): first those whose value a kernel can
        store straight into the input, then the others. In graph order, one eager copy_ (an
        Adam step counter's, a 0-d value) closed every open kernel before the copies of the
        state after it (exp_avg, exp_avg_sq), which then went through new buffers each step."""
        rest = []
        for node in run:
            self._visited.add(node)
            args = node.target.normalize(tuple(node.args), dict(node.kwargs))
            if not self.try_store_into(node, args):
                rest.append(node)
        for node in rest:
            self.visit_call(node)

    def try_store_into(self, node, args):
        """`copy_(input, value)` of a value computed in an open elementwise group of the
        input's shape and read by nothing else (a functionalized optimizer update
        `p.add_(g, alpha=-lr)`): the kernel stores the value straight into the input's
        memory instead of a new buffer copied afterwards (runtime.store_target decides
        per call, and falls back to the buffer and the eager copy_)."""
        dst, src = args[0], args[1]
        g = self._open_group_of(src) if _is_tensor_node(src) else None
        lay = self.layout.get(dst)
        # later readers of the value read the input: nothing may write the input again
        if (g is None or g.reduced or dst.op != "placeholder" or node.users or not isinstance(lay, L.Layout)
                or any(u.op == "output" for u in src.users)
                or any(u is not node and (u.is_impure() or not isinstance(u.target, OpDef)
                                          or u.target.kind == VIEW or u.target.aliases_input)
                       for u in dst.users)):
            return False
        sm, dm = _meta(src), _meta(dst)
        if (tuple(sm.shape) != g.shape or tuple(dm.shape) != g.shape or sm.dtype is not dm.dtype
                or g.dim_map[src] != tuple(range(len(g.shape))) or lay.offset
                or lay.strides != L.contiguous_strides(g.shape)):
            return False
        for h in list(self.open_groups):
            if h is not g and dst in h.inputs:
                self.close(h)       # reads of the value before the copy run first
        self.store_into[src] = (dst, self.global_value(node.target, "_op"))
        if self._order is None:
            self._order = {n: i for i, n in enumerate(self.graph.nodes)}
        if any(self._order[u] > self._order[node] for u in dst.users):
            self.close(g)           # the input is read again after the copy: the kernel runs now
        self.contig.clear()
        self.tensor[node] = self.tensor_of(dst)
        return True

    # -- a group's kernel -------------------------------------------------------------
    def emit_group(self, g):
        members = set(g.members)
        kb = Builder()
        knode = {}
        operands, arg_vars, loads = [], [], {}
        S = g.shape

        def arg_index(var):
            if var not in arg_vars:
                arg_vars.append(var)
            return arg_vars.index(var)

        def load(a, consumer_shape, consumer_map):
            lay = self.kernel_layout(a)
            s_strides = [0] * len(S)
            lead = len(consumer_shape) - len(lay.shape)
            for i, (n, st) in enumerate(zip(lay.shape, lay.strides)):
                if n != 1:
                    s_strides[consumer_map[i + lead]] = st
            var = self.storage_var(lay.storage)
            key = (var, lay.offset, tuple(s_strides), lay.dtype)
            k = loads.get(key)
            if k is None:
                opnd = Operand(arg_index(var), lay.dtype, lay.offset, s_strides)
                operands.append(opnd)
                k = loads[key] = KNode("load", lay.dtype, operand=opnd)
            return k

        for m in g.members:
            meta = _meta(m)
            if m in self.reduce_info:
                info = self.reduce_info[m]
                x = m.args[0]
                xv = knode[x] if x in members else load(x, S, tuple(range(len(S))))
                xv = kb.cast(xv, info["in_dtype"])
                knode[m] = KNode("reduce", meta.dtype, op=info["kind"], args=(xv,),
                                 params={"acc": info["acc"], "divide_by": info["divide_by"]})
                continue
            op = m.target
            args = op.normalize(tuple(m.args), dict(m.kwargs))
            shape = tuple(meta.shape)
            dm = g.dim_map[m]
            vals = []
            for a in args:
                if _is_tensor_node(a):
                    vals.append(knode[a] if a in members else load(a, shape, dm))
                else:
                    vals.append(self.number_operand(a))
            knode[m] = kb.cast(lower_pointwise(kb, op.name, meta.dtype, vals), meta.dtype)

        stores, outputs = [], []
        for m in g.members:
            if all(u in members for u in m.users):
                continue
            meta = _meta(m)
            var = self.fresh("buf")
            shape = tuple(meta.shape)
            cs = L.contiguous_strides(shape)
            s_strides = [0] * len(S)
            for i, d in enumerate(g.dim_map[m]):
                if shape[i] != 1:
                    s_strides[d] = cs[i]
            opnd = Operand(arg_index(var), meta.dtype, 0, s_strides, is_output=True)
            operands.append(opnd)
            stores.append((knode[m], opnd))
            outputs.append((m, var, shape, meta.dtype))
            self.array[m] = var
            self.layout[m] = L.contiguous(L.Storage("buffer", var), meta.dtype, shape)
        if not stores:
            return
        self.stats["kernels"] += 1
        self.stats["fused_nodes"] += len(g.members)
        kernel = Kernel(S, g.reduced, operands, stores, name=f"KPREFIX_{len(self.kernels)}")
        kernel.scalars = list(kb.scalars)
        kernel.coalesce()
        after = []
        for m, var, shape, dtype in outputs:
            if m in self.store_into:
                dst, op_var = self.store_into[m]
                line, done = store_into_lines(var, self.tensor[dst], self.array[dst], kernel, arg_vars, op_var)
                self.emit(line)
                after.append(done)
            elif math.prod(shape) * dtype.itemsize >= CACHED_BUFFER_BYTES:
                self.emit(f"{var} = {self.global_value(BufferCache(shape, dtype.np), '_buffers')}()")
            else:
                self.emit(f"{var} = _empty({shape!r}, {self.global_value(dtype.np, '_dt')})")
        self.emit_kernel_call(kernel, arg_vars, outputs, knode)
        for line in after:
            self.emit(line)

    def emit_kernel_call(self, kernel, arg_vars, outputs, knode):
        idx = len(self.kernels)
        self.kernels.append(kernel)
        fn = f"_k{idx}"
        kept, red = kernel.kept_dims(), kernel.reduced_dims()
        work = kernel.numel * (1 + MATH_COST * _math_count(kernel))
        # every thread gets at least PARALLEL_WORK: a thread costs a task handed through the
        # pool (tens of microseconds), which a smaller share does not pay back
        nthreads = max(1, min(self.nthreads, work // PARALLEL_WORK))
        parallel = nthreads > 1
        reductions = kernel.reductions()
        if kernel.numel and not kept and red and parallel and kernel.shape[red[0]] >= 2 \
                and _splittable(kernel, reductions):
            self.emit_split_reduction(kernel, fn, arg_vars, outputs, knode, nthreads)
            return
        args = _call_args(kernel, arg_vars, idx)
        par = None
        if parallel and kept:
            par = next((d for d in kept if kernel.shape[d] >= 2 * nthreads), None)
            if par is None:
                par = max(kept, key=lambda d: kernel.shape[d])
        if par is not None and kernel.shape[par] >= 2:
            kernel.par_dim = par
            innermost = not red and par == kept[-1]
            ranges = split_ranges(kernel.shape[par], nthreads, align=16 if innermost else 1)
            self.emit(f"_par({fn}, ({args},), {ranges!r})")
        elif kept:
            # one thread: the range of the outermost kept dim is the whole of it, so the kernel
            # is the same code as on threads (where that dim is split) for every size
            kernel.par_dim = kept[0]
            self.emit(f"{fn}({args}, 0, {kernel.shape[kept[0]]}, 0)")
        else:
            self.emit(f"{fn}({args}, 0, 0, 0)")

    def emit_split_reduction(self, kernel, fn, arg_vars, outputs, knode, nthreads):
        """A big full reduction: each thread reduces a range of the outermost reduced dim
        into its own slot of a partial array; the partials are combined in numpy."""
        red = kernel.reduced_dims()
        kernel.par_dim = red[0]
        ranges = split_ranges(kernel.shape[red[0]], nthreads)
        node_of = {id(v): m for m, v in knode.items()}
        stores, finishes = [], []
        for value, opnd in kernel.stores:
            if value.kind == "reduce":
                part = self.fresh("part")
                acc = value.params["acc"]
                popnd = Operand(len(arg_vars), acc, 0, [0] * len(kernel.shape), is_output=True)
                arg_vars.append(part)
                kernel.operands.append(popnd)
                kernel.partials.append((value, popnd))
                self.emit(f"{part} = _empty({len(ranges)}, {self.global_value(acc.np, '_dt')})")
                out_var = self.array[node_of[id(value)]]
                finishes.append(f"_finish_{value.op}({out_var}, {part}, {value.params['divide_by']!r})")
            else:
                stores.append((value, opnd))
        kernel.stores = stores
        self.emit(f"_par({fn}, ({_call_args(kernel, arg_vars, len(self.kernels) - 1)},), {ranges!r})")
        for line in finishes:
            self.emit(line)

    # -- runtime values -------------------------------------------------------------
    def kernel_layout(self, node):
        lay = self.layout.get(node)
        if isinstance(lay, L.Layout):
            return lay
        meta = _meta(node)
        lay = L.contiguous(L.Storage("runtime", node=node), meta.dtype, tuple(meta.shape))
        self.layout[node] = lay
        return lay

    def storage_var(self, storage):
        if storage.kind != "runtime":
            return storage.var
        var = self.contig.get(storage.node)
        if var is None:
            node = storage.node
            dt = self.global_value(_meta(node).dtype.np, "_dt")
            var = self.fresh("c")
            self.emit(f"{var} = _contig({self.array_of(node)}, {dt})")
            self.contig[node] = var
        return var

    def _view_chain(self, node, *have):
        """`node` and the views it is made from, up to the first one in one of `have` (or
        that is no view), innermost last: a chain of views is walked without recursion."""
        chain = [node]
        while not any(chain[-1] in h for h in have) and chain[-1] in self.view_src:
            chain.append(self.view_src[chain[-1]][0])
        return chain

    def array_of(self, node):
        var = self.array.get(node)
        if var is not None:
            return var
        chain = self._view_chain(node, self.array, self.tensor)
        for n in reversed(chain):
            if n in self.array:
                continue
            if n in self.tensor:
                var = self.fresh("a")
                self.emit(f"{var} = {self.tensor[n]}._data")
            elif n in self.view_src:
                src, fn_name, rest = self.view_src[n]
                var = self.fresh("v")
                self.emit(f"{var} = {fn_name}({self.array[src]}{rest})")
            else:
                raise AssertionError(f"no value for {n}")
            self.array[n] = var
        return self.array[node]

    def tensor_of(self, node):
        var = self.tensor.get(node)
        if var is not None:
            return var
        chain = self._view_chain(node, self.tensor)
        for n in reversed(chain):
            if n in self.tensor:
                continue
            if n in self.view_src:
                src, _, rest = self.view_src[n]
                op = self.view_op[n]
                var = self.fresh("t")
                self.emit(f"{var} = {op}({self.tensor[src]}{rest})")
            else:
                var = self.fresh("t")
                self.emit(f"{var} = _T({self.array_of(n)})")
            self.tensor[n] = var
        return self.tensor[node]

    def render(self, a, tensor):
        """Python source for an argument: nodes as their runtime variables."""
        if hasattr(a, "op") and hasattr(a, "users"):
            if tensor or _meta(a) is None:
                return self.tensor_of(a)
            return self.array_of(a)
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return f"{self.global_value(type(a), '_tuple')}({', '.join(self.render(x, tensor) for x in a)})"
        if isinstance(a, tuple):
            inner = ", ".join(self.render(x, tensor) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.render(x, tensor) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.render(v, tensor)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.render(a.start, tensor)}, {self.render(a.stop, tensor)}, {self.render(a.step, tensor)})"
        return self.literal(a)

    # -- other nodes ------------------------------------------------------------------
    def visit_view(self, node, op, args):
        self.close_inputs_of(node)
        self.stats["views"] += 1
        src = node.args[0]
        rest = "".join(", " + self.render(a, tensor=False) for a in args[1:]) if op is not operator.getitem \
            else ", " + self.render(args[0], tensor=False)
        if op is operator.getitem:
            fn_name = self.global_value(operator.getitem, "_getitem")
            self.view_src[node] = (src, fn_name, rest)
            self.view_op[node] = fn_name
            self.layout[node] = self.layout[src][args[0]]
            return
        self.view_src[node] = (src, self.global_value(direct_kernel(op), "_view"), rest)
        self.view_op[node] = self.global_value(op, "_op")
        if any(_nodes_in(args[1:])) or _meta(src) is None or _meta(src).dtype not in SUPPORTED_DTYPES:
            return
        src_layout = self.kernel_layout(src)
        if op.name in ALIAS_OPS:
            self.layout[node] = src_layout
            return
        dtype = _meta(src).dtype
        lay = L.view_layout(op, src_layout, args[1:], dtype)
        if lay is not None:
            self.layout[node] = lay

    def visit_extern(self, node, op, args):
        self.close_inputs_of(node)
        if any(_meta(a) is None for a in _nodes_in(args)) or _meta(node) is None:
            self.visit_fallback(node, barrier=False)
            return
        self.stats["extern"] += 1
        fn_name = self.global_value(direct_kernel(op), "_ext")
        var = self.fresh("x")
        call = ", ".join(self.render(a, tensor=False) for a in args)
        self.emit(f"{var} = _asarray({fn_name}({call}), {self.global_value(_meta(node).dtype.np, '_dt')})")
        self.array[node] = var

    def visit_fallback(self, node, barrier):
        self.close_inputs_of(node)
        if barrier:
            for g in list(self.open_groups):
                self.close(g)
            self.contig.clear()
        self.stats["fallback"] += 1
        target = node.target
        fn_name = self.global_value(target, "_op" if isinstance(target, OpDef) else "_fn")
        args = ", ".join(self.render(a, tensor=True) for a in node.args)
        kwargs = ", ".join(f"{k}={self.render(v, tensor=True)}" for k, v in node.kwargs.items())
        call = ", ".join(x for x in (args, kwargs) if x)
        var = self.fresh("r")
        self.emit(f"{var} = {fn_name}({call})")
        self.tensor[node] = var


def _call_args(kernel, arg_vars, idx):
    """The kernel's arguments in a wrapper call: its arrays one by one, or packed into one C
    array for a kernel with many; its sizes array (`_sz<idx>`, which compile_graph makes
    from the values codegen lists in `kernel.size_values`); its scalar arguments."""
    args = ", ".join(arg_vars)
    parts = [f"_pack({args})" if kernel.packed else args, f"_sz{idx}"]
    parts += [expr for expr, _ in kernel.scalars]
    return ", ".join(parts)


def _splittable(kernel, reductions):
    """Whether a full reduction can be split over threads: the kernel's only per-output
    values are the reductions themselves (no epilogue), each stored, none of bools."""
    red = kernel.reduced_dims()
    p_values = [v for v, op in kernel.stores if not any(op.strides[d] for d in red)]
    return (all(v.kind == "reduce" for v in p_values)
            and {id(r) for r in reductions} == {id(v) for v in p_values}
            and all(r.params["acc"] is not D.bool_ for r in reductions))


def _math_count(kernel):
    seen, count = set(), 0
    stack = [v for v, _ in kernel.stores]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.kind == "prim" and n.op == "math":
            count += 1
        stack.extend(n.args)
    return count


# -- decompositions ----------------------------------------------------------------------

def decompose(graph):
    """A copy of the graph with softmax / log_softmax, var / var_mean and
    nll_loss(log_softmax(x)) spelled as the reductions and pointwise ops they are made of
    (so they fuse into one pass per row), or the graph itself if it has none of them."""
    if not any(n.op == "call_function" and getattr(n.target, "name", None) in DECOMPOSED
               for n in graph.nodes):
        return graph
    from dynjit.fx import Graph
    new = Graph()
    env = {}
    fused_lsm = {}          # log_softmax nodes read only by an nll_loss that does without them
    for n in graph.nodes:
        name = getattr(n.target, "name", None)
        if n.op == "output":
            new.output(_map(n.args[0], env))
        elif name == "log_softmax" and _nll_of_log_softmax(n) is not None and _softmax_decomposable(n):
            fused_lsm[n] = True
        elif name == "nll_loss" and n.args and n.args[0] in fused_lsm:
            env[n] = _decompose_nll_of_log_softmax(new, n, env)
        elif name in ("softmax", "log_softmax") and _softmax_decomposable(n):
            env[n] = _decompose_softmax(new, n, env, log=name == "log_softmax")
        elif name in ("var", "var_mean") and _var_decomposable(n):
            env[n] = _decompose_var(new, n, env, with_mean=name == "var_mean")
        elif name == "linear" and _linear_decomposable(n):
            env[n] = _decompose_linear(new, n, env)
        elif (n.op == "call_function" and n.target is operator.getitem and n.args
              and isinstance(env.get(n.args[0]), tuple)):
            env[n] = env[n.args[0]][n.args[1]]
        else:
            env[n] = new.node_copy(n, lambda x: env[x])
    return new


def _caller(graph):
    """call(opname, *args): a node of `graph` calling a registry op, with its meta."""
    from dynjit.fx.proxy_tensor import TensorMeta

    def call(opname, *a):
        op = registry[opname]
        node = graph.call_function(op, a)
        metas = [(_meta(v) if hasattr(v, "meta") else v) for v in a]
        shape, dtype = op.meta(metas)
        node.meta["val"] = TensorMeta(shape, dtype)
        return node
    return call


def _nll_of_log_softmax(n):
    """The nll_loss node reading this log_softmax node, when it is its only user and reads
    it as its input over the class dim of a 2-d (N, C) input of at least
    NLL_ROW_FORM_MIN_ELEMENTS elements; else None."""
    users = list(n.users)
    if len(users) != 1:
        return None
    u = users[0]
    if u.op != "call_function" or getattr(u.target, "name", None) != "nll_loss" or not u.args or u.args[0] is not n:
        return None
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    m = _meta(n)
    if m is None or len(m.shape) != 2 or args[1] not in (1, -1) or math.prod(m.shape) < NLL_ROW_FORM_MIN_ELEMENTS:
        return None
    if _meta(args[0]).dtype is not m.dtype:
        return None
    return u


def _decompose_nll_of_log_softmax(graph, n, env):
    """nll_loss(log_softmax(x, 1), t, ...) = nll_loss(x, t, ...) - nll_loss(lse.expand(N, C), t, ...)
    with lse = max + log(sum(exp(x - max))) per row: one pass over each row (no (N, C)
    log_softmax written), the targets checked by nll_loss itself (its errors and weights)."""
    call = _caller(graph)
    lsm = n.args[0]
    x = env[lsm.target.normalize(tuple(lsm.args), dict(lsm.kwargs))[0]]
    rest = [_map(a, env) for a in n.target.normalize(tuple(n.args), dict(n.kwargs))[1:]]
    m = call("amax", x, 1, True)
    m = call("where", call("isfinite", m), m, 0.0)
    lse = call("add", call("log", call("sum", call("exp", call("sub", x, m)), 1, True)), m)
    wide = call("expand", lse, list(_meta(lsm).shape))
    return call("sub", call("nll_loss", x, *rest), call("nll_loss", wide, *rest))


def _var_decomposable(n):
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    x = args[0]
    if not _is_tensor_node(x) or _meta(x).dtype not in (D.float32, D.float64):
        return False
    if isinstance(args[2], bool) or not isinstance(args[2], (int, float)) or not isinstance(args[3], bool):
        return False
    shape = _meta(x).shape
    try:
        dims = normalize_dims(args[1], len(shape))
    except Exception:
        return False
    return len(shape) > 0 and math.prod(shape[d] for d in dims) > 0 and math.prod(shape) > 0


def _linear_decomposable(n):
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    if not all(_is_tensor_node(a) for a in args):
        return False
    x, w, b = (_meta(a) for a in args)
    return (x.dtype is w.dtype is b.dtype and x.dtype in (D.float32, D.float64) and len(x.shape) >= 1
            and len(w.shape) == 2 and tuple(b.shape) == tuple(w.shape[:1]))


def _decompose_linear(graph, n, env):
    """linear(x, w, b) with a bias as matmul(x, w.t()) + b: the product is the same numpy
    call as linear's kernel (x @ w.T), and the bias add joins the kernel of what reads the
    result (an activation, a residual add, a softmax): the matmul's epilogue."""
    call = _caller(graph)
    x, w, b = (_map(a, env) for a in n.target.normalize(tuple(n.args), dict(n.kwargs)))
    shape = tuple(_meta(x).shape)
    if len(shape) <= 2:
        return call("add", call("matmul", x, call("t", w)), b)
    # rows of a batched input as one matrix: one BLAS call instead of numpy's loop of
    # smaller ones (twice as fast for a (4, 16, 784) input on an AVX-512 host)
    y = call("matmul", call("reshape", x, (-1, shape[-1])), call("t", w))
    return call("add", call("reshape", y, shape[:-1] + (_meta(w).shape[0],)), b)


def _decompose_var(graph, n, env, with_mean):
    """var as numpy computes it: mean, then the sum of squared deviations over
    max(N - correction, 0); var_mean gives the tuple (var, mean)."""
    call = _caller(graph)
    x, dim, correction, keepdim = n.target.normalize(tuple(n.args), dict(n.kwargs))
    x = env[x]
    shape = _meta(x).shape
    dims = normalize_dims(dim, len(shape))
    count = math.prod(shape[d] for d in dims)
    dims = list(dims)
    mean_k = call("mean", x, dims, True)
    d = call("sub", x, mean_k)
    var = call("div", call("sum", call("mul", d, d), dims, keepdim), SizeNumber(max(count - correction, 0)))
    if not with_mean:
        return var
    return var, (mean_k if keepdim else call("mean", x, dims, False))


def _map(a, env):
    from dynjit.fx.node import map_arg
    return map_arg(a, lambda x: env[x])


def _softmax_dtype(n):
    """softmax's result dtype by the op's own dtype rule (the input's float dtype, else the
    default float): the node's recorded meta is eager's result, which is float64 for an
    empty float32 input (eager computes x - 0 with an int64 0-d array there)."""
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    try:
        return n.target.meta([_meta(args[0]), args[1]])[1]
    except Exception:
        return None


def _softmax_decomposable(n):
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    x = args[0]
    m = _meta(n)
    if not (_is_tensor_node(x) and m is not None and len(m.shape) > 0 and isinstance(args[1], int)):
        return False
    dtype = _softmax_dtype(n)
    if math.prod(m.shape) == 0:
        return dtype is not None            # an empty result of the right dtype, whatever it is
    return dtype in (D.float32, D.float64)


def _decompose_softmax(graph, n, env, log):
    args = n.target.normalize(tuple(n.args), dict(n.kwargs))
    x, dim = env[args[0]], args[1]
    out_dtype = _softmax_dtype(n)
    call = _caller(graph)
    if _meta(args[0]).dtype is not out_dtype:
        x = call("to_dtype", x, out_dtype)
    if math.prod(_meta(args[0]).shape) == 0:
        # nothing to normalize (and amax of an empty dim is an error): the empty result
        return x if x is not env[args[0]] else call("clone", x)
    m = call("amax", x, dim, True)
    m = call("where", call("isfinite", m), m, 0.0)
    s = call("sub", x, m)
    e = call("exp", s)
    t = call("sum", e, dim, True)
    if log:
        return call("sub", s, call("log", t))
    return call("div", e, t)
