"""Helpers for testing code compiled with dynjit: counting compiled frames and ops,
recording graphs, comparing results."""
import re

from .compiler.registry import lookup_backend


class CompileCounter:
    """A backend that counts the graphs it receives (frame_count) and their call nodes (op_count)."""

    dynjit_scalar_inputs = True     # graphs may take dynamic numbers as inputs (it runs them as is)

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += count_ops(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0


class CompileCounterWithBackend(CompileCounter):
    """CompileCounter that compiles each graph with `backend` (a name or a callable) and keeps
    the graphs and what the backend made of them (`aot_traces`: how many traces an AOT
    backend's compiled functions made, one per signature it served)."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend
        self.graphs = []
        self.compiled = []

    @property
    def aot_traces(self):
        return sum(len(getattr(fn, "_cache", ())) for fn in self.compiled)

    @property
    def dynjit_scalar_inputs(self):
        from .compiler.registry import lookup_backend
        return getattr(lookup_backend(self.backend), "dynjit_scalar_inputs", False)

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += count_ops(gm)
        self.graphs.append(gm)
        fn = lookup_backend(self.backend)(gm, example_inputs)
        self.compiled.append(fn)
        return fn


class EagerAndRecordGraphs:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


class AotEagerAndRecordGraphs:
    def __init__(self):
        self.graphs = []
        self.fw_graphs = []
        self.bw_graphs = []

    def __call__(self, gm, example_inputs):
        from .aot import aot_module_simplified

        def fw(g, inputs):
            self.fw_graphs.append(g)
            return g.forward

        def bw(g, inputs):
            self.bw_graphs.append(g)
            return g.forward
        self.graphs.append(gm)
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw, bw_compiler=bw)


def count_ops(gm):
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


def normalize_gm(gm_str):
    """Strip what varies between runs from printed graph code (comments, trailing spaces)."""
    out = []
    for line in gm_str.split("\n"):
        line = re.sub(r"\s*#.*$", "", line).rstrip()
        out.append(line)
    return "\n".join(out)


def same(a, b, tol=1e-4, equal_nan=False):
    """Deep comparison of results (tensors with tolerance, containers element-wise)."""
    from .tensor import Tensor
    import numpy as np
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a.shape != b.shape:
            return False
        return bool(np.allclose(a._data, b._data, rtol=tol, atol=tol, equal_nan=equal_nan))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, tol, equal_nan) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol, equal_nan) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol * max(1.0, abs(b)) or (equal_nan and a != a and b != b)
    if hasattr(a, "__dict__") and type(a) is type(b) and not isinstance(a, type):
        return same(vars(a), vars(b), tol, equal_nan)
    return a == b
