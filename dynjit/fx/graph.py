"""`Graph`: an ordered list of Nodes, with editing helpers, a linter, dead-code
elimination, Python code generation and DOT export."""
import builtins
import contextlib
import keyword
import math
import re
import sys

from .node import Node, map_arg, target_name, meta_str


class _Namespace:
    """Unique, valid Python names for nodes."""

    def __init__(self):
        self._used = set(dir(builtins)) | set(keyword.kwlist) | {"self", "dynjit", "operator"}
        self._counts = {}

    def create(self, candidate):
        base = re.sub(r"[^0-9a-zA-Z_]", "_", candidate) or "v"
        if base[0].isdigit():
            base = "_" + base
        if base not in self._used:
            self._used.add(base)
            return base
        m = re.match(r"^(.*)_(\d+)$", base)
        if m and m.group(1):
            base = m.group(1)
        name = base
        while name in self._used:
            n = self._counts.get(base, 0) + 1
            self._counts[base] = n
            name = f"{base}_{n}"
        self._used.add(name)
        return name


def _default_name(op, target):
    if op == "placeholder":
        return str(target)
    if op == "get_attr":
        return str(target).replace(".", "_")
    if op == "call_method":
        return str(target)
    if op == "output":
        return "output"
    name = getattr(target, "name", None) or getattr(target, "__name__", None) or "fn"
    return str(name).split(".")[-1]


class Graph:
    def __init__(self, owning_module=None):
        self._nodes = []
        self._names = _Namespace()
        self._insert_at = None    # index to insert at; None = append
        self.owning_module = owning_module

    @property
    def nodes(self):
        return list(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def find_nodes(self, *, op, target=None):
        return [n for n in self._nodes if n.op == op and (target is None or n.target is target or n.target == target)]

    # -- creating nodes ---------------------------------------------------------
    def create_node(self, op, target, args=(), kwargs=None, name=None, type_expr=None):
        node = Node(self, self._names.create(name or _default_name(op, target)), op, target,
                    args, kwargs or {})
        if type_expr is not None:
            node.meta["val"] = type_expr
        if self._insert_at is None:
            self._nodes.append(node)
        else:
            self._nodes.insert(self._insert_at, node)
            self._insert_at += 1
        return node

    def placeholder(self, name, type_expr=None, default_value=None):
        n = self.create_node("placeholder", name, name=name, type_expr=type_expr)
        n.target = n.name
        return n

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=(), kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    def call_method(self, method_name, args=(), kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=(), kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def output_node(self):
        for n in reversed(self._nodes):
            if n.op == "output":
                return n
        raise RuntimeError("graph has no output node")

    @contextlib.contextmanager
    def inserting_before(self, node=None):
        prev = self._insert_at
        self._insert_at = self._nodes.index(node) if node is not None else 0
        try:
            yield
        finally:
            self._insert_at = prev

    @contextlib.contextmanager
    def inserting_after(self, node=None):
        prev = self._insert_at
        self._insert_at = self._nodes.index(node) + 1 if node is not None else len(self._nodes)
        try:
            yield
        finally:
            self._insert_at = prev

    def _move(self, node, index):
        i = self._nodes.index(node)
        self._nodes.pop(i)
        if i < index:
            index -= 1
        self._nodes.insert(index, node)

    def node_copy(self, node, arg_transform=lambda n: n):
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, name=node.name)
        new.meta = dict(node.meta)
        if node.op == "placeholder":
            new.target = new.name
        return new

    def graph_copy(self, other, val_map):
        """Copy all of `other`'s nodes except the output into self; returns the output's value."""
        for n in other._nodes:
            if n.op == "output":
                return map_arg(n.args[0], lambda x: val_map[x])
            val_map[n] = self.node_copy(n, lambda x: val_map[x])
        return None

    # -- editing ---------------------------------------------------------------
    def erase_node(self, node):
        if node.users:
            raise RuntimeError(f"Tried to erase Node {node.name} but it still had {len(node.users)} "
                               f"users in the graph: {list(node.users)}!")
        node._set_args((), {})
        self._nodes.remove(node)
        if self._insert_at is not None and self._insert_at > len(self._nodes):
            self._insert_at = len(self._nodes)

    def eliminate_dead_code(self):
        """Remove nodes without users that have no side effects; True if anything changed."""
        changed = False
        for node in reversed(list(self._nodes)):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check the graph is well formed: raise RuntimeError describing the first problem."""
        seen = set()
        names = set()
        outputs = 0
        for node in self._nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node.name} does not belong to this graph")
            if node.name in names:
                raise RuntimeError(f"Node name {node.name} is used twice")
            names.add(node.name)
            for inp in node._inputs:
                if inp not in seen:
                    where = "is not in the graph" if inp.graph is not self or inp not in self._nodes \
                        else "is used before it is defined"
                    raise RuntimeError(f"Argument '{inp.name}' of Node '{node.name}' {where}")
                if node not in inp.users:
                    raise RuntimeError(f"Node {inp.name}'s users do not list {node.name}")
            for u in node.users:
                if u.graph is not self or u not in self._nodes:
                    raise RuntimeError(f"Node {node.name} has user {u.name} that is not in the graph")
            if node.op == "output":
                outputs += 1
            elif outputs:
                raise RuntimeError(f"Node {node.name} comes after the output node")
            if node.op == "call_function" and not callable(node.target):
                raise RuntimeError(f"call_function target of {node.name} is not callable: {node.target!r}")
            if node.op in ("call_method", "get_attr", "placeholder") and not isinstance(node.target, str):
                raise RuntimeError(f"{node.op} node {node.name} needs a str target, got {node.target!r}")
            seen.add(node)
        if outputs != 1:
            raise RuntimeError(f"a graph needs exactly one output node, this one has {outputs}")

    # -- code generation ---------------------------------------------------------
    def python_code(self, root_name="self", annotate=False, with_free=True):
        """(source of `def forward(self, ...)`, globals it needs)."""
        gen = _CodeGen(self, annotate, with_free)
        return gen.source, gen.globals

    def __str__(self):
        lines = ["graph():"]
        for n in self._nodes:
            lines.append("    " + n.format_node())
        return "\n".join(lines)

    def print_tabular(self):
        rows = [("opcode", "name", "target", "args", "kwargs")]
        for n in self._nodes:
            rows.append((n.op, n.name, n.format_target(), str(n.args), str(n.kwargs)))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)
        print(text)
        return text

    # -- DOT ---------------------------------------------------------------------
    def to_dot(self, name="graph"):
        """The graph in Graphviz DOT syntax (render with `dot -Tsvg`)."""
        def esc(s):
            return str(s).replace("\\", "\\\\").replace('"', '\\"')
        lines = [f'digraph "{esc(name)}" {{', '  rankdir=TB;', '  node [shape=record, fontname="monospace"];']
        colors = {"placeholder": "lightblue", "output": "lightgrey", "get_attr": "khaki",
                  "call_function": "white", "call_method": "white", "call_module": "white"}
        for n in self._nodes:
            label = f"{n.name}|{n.op}"
            if n.op not in ("placeholder", "output"):
                label += f"|{n.format_target()}"
            if "val" in n.meta:
                label += f"|{meta_str(n.meta['val'])}"
            label = esc(label).replace("<", "\\<").replace(">", "\\>").replace("{", "\\{").replace("}", "\\}")
            lines.append(f'  "{esc(n.name)}" [label="{{{label}}}", style=filled, fillcolor={colors[n.op]}];')
        for n in self._nodes:
            for inp in n._inputs:
                lines.append(f'  "{esc(inp.name)}" -> "{esc(n.name)}";')
        lines.append("}")
        return "\n".join(lines)


class _Ops:
    """`dynjit.ops.<name>` in generated code: a plain attribute lookup."""


class _DynjitNamespace:
    def __init__(self):
        self.ops = _Ops()


def _dynjit_path(t):
    """`autograd.function.FunctionCtx` for a dynjit object importable by its module and
    qualified name (how generated code names it), else None."""
    mod = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", None)
    if not (isinstance(mod, str) and isinstance(qual, str) and mod.startswith("dynjit.")) or "<" in qual:
        return None
    obj = sys.modules.get(mod)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{mod[len('dynjit.'):]}.{qual}" if obj is t else None


def _fmt_float(x):
    if math.isinf(x):
        return "float('inf')" if x > 0 else "float('-inf')"
    if math.isnan(x):
        return "float('nan')"
    return repr(x)


class _CodeGen:
    def __init__(self, graph, annotate, with_free):
        self.graph = graph
        self.globals = {"operator": __import__("operator")}
        self.dynjit = _DynjitNamespace()
        self.globals["dynjit"] = self.dynjit
        self._node_names = {n.name for n in graph._nodes}
        self._extra = 0
        self.source = self._generate(annotate, with_free)

    def _global(self, obj, hint):
        for k, v in self.globals.items():
            if v is obj:
                return k
        name = re.sub(r"[^0-9a-zA-Z_]", "_", hint)
        if not name or name[0].isdigit():
            name = "_" + name
        base, i = name, 0
        node_names = self._node_names
        while name in self.globals or name in node_names:    # a local would hide the global
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        return name

    def target(self, t):
        from ..ops.registry import OpDef
        if isinstance(t, OpDef):
            if not t.name.isidentifier():       # a custom op, "ns::name" (dynjit.library)
                return self._global(t, t.name)
            setattr(self.dynjit.ops, t.name, t)
            return f"dynjit.ops.{t.name}"
        name = target_name(t)
        if name.startswith("operator."):
            return name
        short = getattr(t, "__name__", None)
        if short and getattr(sys.modules["dynjit"], short, None) is t:    # a public name
            setattr(self.dynjit, short, t)
            return f"dynjit.{short}"
        path = _dynjit_path(t)
        if path is not None and self._bind_dynjit_path(path, t):
            return f"dynjit.{path}"
        return self._global(t, name.replace(".", "_").replace("<", "").replace(">", ""))

    def _bind_dynjit_path(self, path, t):
        """Make `dynjit.<path>` resolve to t in generated code (nested namespaces)."""
        ns = self.dynjit
        parts = path.split(".")
        for p in parts[:-1]:
            nxt = getattr(ns, p, None)
            if nxt is None:
                nxt = _Ops()
                setattr(ns, p, nxt)
            elif not isinstance(nxt, _Ops):
                return False
            ns = nxt
        setattr(ns, parts[-1], t)
        return True

    def arg(self, a):
        from .._dtype import dtype
        from ..ops.registry import OpDef
        if isinstance(a, Node):
            return a.name
        if isinstance(a, OpDef):
            return self.target(a)
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return self._global(type(a), type(a).__name__) + "(" + ", ".join(self.arg(x) for x in a) + ")"
        if isinstance(a, tuple):
            inner = ", ".join(self.arg(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is Ellipsis or type(a) in (bool, int, str):
            return "..." if a is Ellipsis else repr(a)
        if type(a) is float:
            return _fmt_float(a)
        if isinstance(a, dtype):
            setattr(self.dynjit, a.name, a)
            return f"dynjit.{a.name}"
        return self._global(a, f"_{type(a).__name__}_constant")

    def _generate(self, annotate, with_free):
        nodes = self.graph._nodes
        last_use = {}
        for node in nodes:
            for inp in node._inputs:
                last_use[inp] = node
        frees = {}
        for inp, user in last_use.items():
            frees.setdefault(user, []).append(inp)
        params = []
        body = []
        for node in nodes:
            ann = f': "{node.type_str}"' if annotate and "val" in node.meta else ""
            if node.op == "placeholder":
                params.append(f"{node.name}{ann}")
                continue
            if node.op == "output":
                body.append(f"return {self.arg(node.args[0])}")
                continue
            args = ", ".join([self.arg(a) for a in node.args] +
                             [f"{k} = {self.arg(v)}" for k, v in node.kwargs.items()])
            if node.op == "call_function":
                rhs = self._call_function_src(node, args)
            elif node.op == "call_method":
                recv = self.arg(node.args[0])
                rest = ", ".join([self.arg(a) for a in node.args[1:]] +
                                 [f"{k} = {self.arg(v)}" for k, v in node.kwargs.items()])
                rhs = f"{recv}.{node.target}({rest})"
            elif node.op == "call_module":
                rhs = f"self.{node.target}({args})"
            else:   # get_attr
                rhs = f"self.{node.target}"
            line = f"{node.name}{ann} = {rhs}"
            dead = [n.name for n in frees.get(node, [])]
            if with_free and dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        sig = ", ".join(["self"] + params)
        return f"def forward({sig}):\n" + "\n".join("    " + line for line in body) + "\n"

    def _call_function_src(self, node, args):
        import operator
        t = node.target
        if t is operator.getitem and len(node.args) == 2 and not node.kwargs:
            return f"{self.arg(node.args[0])}[{self.arg(node.args[1])}]"
        return f"{self.target(t)}({args})"
