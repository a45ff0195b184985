"""dynjit.fx: the graph IR (Graph, Node, GraphModule, Interpreter) and
make_fx, which traces a function at the op-dispatch level."""
from .node import Node, map_arg
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter
from .proxy_tensor import make_fx

__all__ = ["Node", "Graph", "GraphModule", "Interpreter", "make_fx", "map_arg"]
