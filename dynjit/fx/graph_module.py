"""`GraphModule`: a callable made from a Graph. Its `forward` is Python source
generated from the graph (`gm.code`); nested graphs and constants are its
attributes (reached by get_attr / call_module nodes)."""
import linecache
import itertools

from .._pytree import tree_leaves
from .graph import Graph

_file_ids = itertools.count()


class GraphModule:
    _in_spec = None     # set by make_fx when the traced function took nested arguments

    def __init__(self, root, graph, class_name="GraphModule"):
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphModule needs a dynjit.fx.Graph, got {type(graph).__name__}")
        self.__dict__["_attrs"] = {}
        self._class_name = class_name
        self.graph = graph
        graph.owning_module = self
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module"):
                self._copy_attr(root, node.target)
        self.training = True
        self.meta = {}
        self.recompile()

    def _copy_attr(self, root, qualname):
        first = qualname.split(".")[0]
        setattr(self, first, root[first] if isinstance(root, dict) else getattr(root, first))

    def recompile(self):
        src, globs = self.graph.python_code(annotate=False)
        filename = f"<dynjit-graph-{next(_file_ids)}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        code = compile(src, filename, "exec")
        exec(code, globs)
        self._code = src
        self._forward_fn = globs["forward"]
        return src

    @property
    def code(self):
        return self._code

    def forward(self, *args):
        return self._forward_fn(self, *args)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self._class_name} takes its inputs positionally, got keyword "
                            f"arguments {sorted(kwargs)}")
        if self._in_spec is not None:
            args = tree_leaves(args)
        return self._forward_fn(self, *args)

    def named_submodules(self):
        return [(k, v) for k, v in vars(self).items() if isinstance(v, GraphModule)]

    def print_readable(self, print_output=True, include_stride=False, colored=False):
        text = self._readable(self._class_name, 0)
        if print_output:
            print(text)
        return text

    def _readable(self, name, indent):
        pad = " " * indent
        src, _ = self.graph.python_code(annotate=True)
        lines = [f"{pad}class {name}(dynjit.nn.Module):"]
        lines += [pad + "    " + line for line in src.rstrip("\n").split("\n")]
        for sub_name, sub in self.named_submodules():
            lines.append("")
            lines.append(sub._readable(sub_name, indent + 4))
        return "\n".join(lines) + ("\n" if indent == 0 else "")

    def __repr__(self):
        return f"{self._class_name}()"

    def __str__(self):
        return self.print_readable(print_output=False)

    def to_dot(self):
        return self.graph.to_dot(self._class_name)

    def render(self, path, format=None):
        """Write the graph as DOT, or as SVG/PNG (by `format` or the file suffix) via Graphviz's `dot`."""
        import shutil
        import subprocess
        fmt = format or path.rsplit(".", 1)[-1]
        dot = self.to_dot()
        if fmt == "dot":
            with open(path, "w") as f:
                f.write(dot)
            return path
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(f"rendering {fmt} needs Graphviz's `dot` program, which is not installed; "
                               "install graphviz, or write the DOT text with render(path.dot)")
        subprocess.run([exe, f"-T{fmt}", "-o", path], input=dot.encode(), check=True)
        return path
