"""The description of one fused kernel, between lowering and code generation.

A kernel iterates over a shape S; `reduced` names the dims of S that its
reductions sum (or max, ...) over; the other dims are kept ("P" dims). Every
buffer it reads or writes is an `Operand` with one stride per dim of S
(stride 0 = broadcast along that dim, e.g. a reduction's output along the
reduced dims). Values are `KNode`s, a small SSA graph:

- `load`   an operand's element at the current index
- `const`  a Python number in a dtype; a `SizeNumber` (computed from sizes: read from
           the kernel's sizes array) or a `ScalarArg` (a number input of the graph: a
           kernel argument) is a constant known only when the kernel runs
- `prim`   a primitive operation (see codegen.PRIMS) of other KNodes
- `reduce` sum / prod / max / min of a KNode over the reduced dims; its value is
           known once its pass over the reduced dims is done

`stores` lists (value, operand) pairs. `coalesce()` merges dims that every
operand walks contiguously (and drops size-1 dims), so a contiguous
elementwise kernel over any shape becomes one flat loop.
"""
import math


class SizeNumber(float):
    """A number the lowering computed from sizes (var's divisor N - correction): a float
    that the kernel reads from its sizes array instead of compiling it in."""
    __slots__ = ()


class ScalarArg:
    """The `index`-th scalar argument of a kernel, a double (`kind` "f64") or an int64 ("i64")."""
    __slots__ = ("index", "kind")

    def __init__(self, index, kind):
        self.index, self.kind = index, kind

    def __repr__(self):
        return f"ScalarArg({self.index}, {self.kind})"


class Operand:
    __slots__ = ("arg", "dtype", "offset", "strides", "is_output")

    def __init__(self, arg, dtype, offset, strides, is_output=False):
        self.arg = arg            # index in the kernel's argument list
        self.dtype = dtype        # a dynjit dtype
        self.offset = offset      # in elements, from the argument array's data pointer
        self.strides = tuple(strides)
        self.is_output = is_output

    def __repr__(self):
        kind = "out" if self.is_output else "in"
        return f"Operand({kind}{self.arg}, {self.dtype._short}, +{self.offset}, {self.strides})"


class KNode:
    __slots__ = ("kind", "op", "args", "dtype", "value", "operand", "params")

    def __init__(self, kind, dtype, op=None, args=(), value=None, operand=None, params=None):
        self.kind = kind
        self.dtype = dtype
        self.op = op
        self.args = tuple(args)
        self.value = value
        self.operand = operand
        self.params = params or {}

    def __repr__(self):
        if self.kind == "const":
            return f"const({self.value!r}:{self.dtype._short})"
        if self.kind == "load":
            return f"load({self.operand})"
        return f"{self.kind}.{self.op}:{self.dtype._short}"


def postorder(roots, children=lambda n: n.args):
    """Every node reachable from `roots`, each once, its children before it (a depth-first
    post-order, in the order a recursive walk gives), without recursion: a kernel may be a
    chain of thousands of ops."""
    seen, order = set(), []
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(children(root)))]
        while stack:
            node, it = stack[-1]
            for c in it:
                if id(c) not in seen:
                    seen.add(id(c))
                    stack.append((c, iter(children(c))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# a kernel with more array arguments than this takes them as one array of pointers
# (ctypes calls take at most 1024 arguments)
MAX_DIRECT_ARGS = 256


class Kernel:
    def __init__(self, shape, reduced, operands, stores, name):
        self.shape = tuple(shape)
        self.reduced = frozenset(reduced)
        self.operands = list(operands)
        self.stores = list(stores)
        self.name = name
        self.split = False        # full reduction split over threads: writes partial accumulators
        self.partials = []        # (reduce KNode, Operand) in split mode
        self.par_dim = None       # dim whose [start, end) range the caller passes
        self.scalars = []         # (wrapper expression, "f64" / "i64") per scalar argument
        self.size_values = []     # the sizes array's values (filled by codegen)

    @property
    def nargs(self):
        """The number of arrays the kernel takes."""
        return 1 + max((op.arg for op in self.operands), default=-1)

    @property
    def packed(self):
        """Whether the arrays come as one `PyObject *args[nargs]` (see MAX_DIRECT_ARGS)."""
        return self.nargs > MAX_DIRECT_ARGS

    @property
    def numel(self):
        return math.prod(self.shape)

    def reductions(self):
        """The reduce KNodes, in dependency order."""
        order = []
        for n in postorder([v for v, _ in self.stores] + [v for v, _ in self.partials]):
            if n.kind == "reduce":
                order.append(n)
        return order

    def coalesce(self):
        """Drop size-1 dims and merge neighbours that all operands walk contiguously."""
        ops = self.operands
        dims = [d for d, s in enumerate(self.shape) if s != 1]
        shape = [self.shape[d] for d in dims]
        reduced = [d in self.reduced for d in dims]
        strides = [[op.strides[d] for d in dims] for op in ops]
        i = 0
        while i + 1 < len(shape):
            mergeable = reduced[i] == reduced[i + 1] and all(
                st[i] == st[i + 1] * shape[i + 1] for st in strides)
            if mergeable:
                shape[i] *= shape[i + 1]
                for st in strides:
                    st[i] = st[i + 1]
                    del st[i + 1]
                del shape[i + 1], reduced[i + 1]
            else:
                i += 1
        self.shape = tuple(shape)
        self.reduced = frozenset(i for i, r in enumerate(reduced) if r)
        for op, st in zip(ops, strides):
            op.strides = tuple(st)

    def kept_dims(self):
        return [d for d in range(len(self.shape)) if d not in self.reduced]

    def reduced_dims(self):
        return [d for d in range(len(self.shape)) if d in self.reduced]
