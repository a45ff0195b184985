"""dynjit.fx: the graph IR (Graph, Node, GraphModule, Interpreter), make_fx, which
traces a function at the op-dispatch level, and trace_wrapped, which keeps a call opaque
in such a trace."""
from .node import Node, map_arg
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter
from .proxy_tensor import make_fx
from .._trace_wrapped import trace_wrapped

__all__ = ["Node", "Graph", "GraphModule", "Interpreter", "make_fx", "map_arg", "trace_wrapped"]
