"""`Node`: one instruction of a graph (placeholder, call_function, call_method,
get_attr or output), with its arguments, users and `meta`."""
import operator

from ..ops.registry import RANDOM

OPCODES = ("placeholder", "call_function", "call_method", "call_module", "get_attr", "output")


def map_arg(a, fn):
    """Apply `fn` to every Node inside a (possibly nested) argument structure."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        if hasattr(a, "_fields"):
            return type(a)(*(map_arg(x, fn) for x in a))
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def iter_nodes(a):
    found = []
    map_arg(a, lambda n: found.append(n) or n)
    return found


class Node:
    def __init__(self, graph, name, op, target, args, kwargs):
        if op not in OPCODES:
            raise ValueError(f"unknown node op {op!r}; expected one of {OPCODES}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.users = {}
        self.meta = {}
        self._args = ()
        self._kwargs = {}
        self._inputs = []
        self._set_args(tuple(args), dict(kwargs))

    # -- arguments and use lists --------------------------------------------
    @property
    def stack_trace(self):
        """The user's frames that made this node (meta["stack_trace"]), or None."""
        return self.meta.get("stack_trace")

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._set_args(tuple(value), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._set_args(self._args, dict(value))

    @property
    def all_input_nodes(self):
        return list(self._inputs)

    def _set_args(self, args, kwargs):
        for n in self._inputs:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        inputs = []
        for n in iter_nodes((args, kwargs)):
            if n not in inputs:
                inputs.append(n)
        self._inputs = inputs
        for n in inputs:
            n.users[self] = None

    def replace_input_with(self, old, new):
        self._set_args(map_arg(self._args, lambda n: new if n is old else n),
                       map_arg(self._kwargs, lambda n: new if n is old else n))

    def replace_all_uses_with(self, replacement, delete_user_cb=lambda user: True):
        """Make every user of this node (for which `delete_user_cb(user)` is true) use
        `replacement` instead; returns the users changed."""
        users = [u for u in self.users if delete_user_cb(u)]
        for u in users:
            u.replace_input_with(self, replacement)
        return users

    # -- position in the graph ---------------------------------------------
    @property
    def next(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i + 1] if i + 1 < len(nodes) else None

    @property
    def prev(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i - 1] if i > 0 else None

    def prepend(self, node):
        """Move `node` to just before this node."""
        self.graph._move(node, self.graph._nodes.index(self))

    def append(self, node):
        """Move `node` to just after this node."""
        self.graph._move(node, self.graph._nodes.index(self) + 1)

    # -- description ---------------------------------------------------------
    @property
    def type_str(self):
        m = self.meta.get("val")
        if "sym" in self.meta and type(m) is int:
            return f"Sym({self.meta['sym']})"       # a size of a symbolic trace
        return None if m is None else meta_str(m)

    def format_target(self):
        return target_name(self.target) if self.op == "call_function" else str(self.target)

    def __repr__(self):
        return self.name

    def format_node(self):
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self.format_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def is_impure(self):
        t = self.target
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            kind = getattr(t, "kind", None)
            if kind == "inplace" or getattr(t, "_is_impure", False):
                return True
            if kind is not None and RANDOM in getattr(t, "tags", ()):
                return True     # a graph draws exactly the numbers eager would draw
        if self.op == "call_method" and isinstance(t, str) and t.endswith("_") and not t.startswith("_"):
            return True
        return False


def _format_arg(a):
    """An argument as format_node shows it: nodes as %name, containers recursively."""
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple):
        inner = ", ".join(_format_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return repr(a)


def meta_str(val):
    """`f32[2, 3]` for a tensor meta; tuples print their parts."""
    if isinstance(val, (tuple, list)):
        return "(" + ", ".join(meta_str(v) for v in val) + ")"
    shape = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if shape is None or dtype is None:
        return type(val).__name__
    short = getattr(dtype, "_short", str(dtype))
    sym = getattr(val, "sym_shape", None)      # a symbolic trace's sizes (s0, 4*s0)
    return f"{short}[{', '.join(str(s) for s in (sym if sym is not None else shape))}]"


_OPERATOR_NAMES = {getattr(operator, n): f"operator.{n}" for n in dir(operator) if not n.startswith("_")}


def target_name(target):
    """How a call_function target is written in generated code."""
    if target in _OPERATOR_NAMES if _hashable(target) else False:
        return _OPERATOR_NAMES[target]
    from ..ops.registry import OpDef
    if isinstance(target, OpDef):
        return f"dynjit.ops.{target.name}"
    mod = getattr(target, "__module__", None)
    qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    if mod in (None, "builtins"):
        return qual
    return f"{mod}.{qual}"


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False
