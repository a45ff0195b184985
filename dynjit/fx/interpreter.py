"""`Interpreter`: runs a GraphModule node by node (override methods to
customise how each kind of node runs)."""
from .node import map_arg


class Interpreter:
    def __init__(self, module):
        self.module = module
        self.graph = module.graph
        self.env = {}

    def run(self, *args):
        self.env = {}
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args) != len(placeholders):
            raise TypeError(f"graph expects {len(placeholders)} inputs, got {len(args)}")
        it = iter(args)
        for node in self.graph.nodes:
            if node.op == "placeholder":
                self.env[node] = next(it)
                continue
            if node.op == "output":
                return self.output(node.target, self.fetch_args(node.args), {})
            self.env[node] = self.run_node(node)
        return None

    def fetch_args(self, args):
        return map_arg(args, lambda n: self.env[n])

    def run_node(self, node):
        args = self.fetch_args(node.args)
        kwargs = self.fetch_args(node.kwargs)
        return getattr(self, node.op)(node.target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        obj, *rest = args
        return getattr(obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        obj = self.module
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj
