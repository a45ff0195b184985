"""dynjit.explain(fn)(*args): what the JIT did with one call — graphs, ops
per graph, graph breaks with their reasons, kinds, hints and the user's file:line, and
recompiles with the guard that failed."""
import collections
import contextlib

from .eval_frame import CompiledFunction, _recorders


class ExplainOutput:
    def __init__(self, graphs, breaks, recompiles, result):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.ops_per_graph = [sum(1 for n in g.graph.nodes if n.op.startswith("call")) for g in graphs]
        self.op_count = sum(self.ops_per_graph)
        self.break_reasons = breaks
        self.graph_break_count = len(breaks)
        self.breaks_by_kind = collections.Counter(b.kind for b in breaks)
        self.recompile_reasons = recompiles
        self.result = result

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}",
                 f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}",
                 "Ops per graph: " + ", ".join(map(str, self.ops_per_graph))]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, brk in enumerate(self.break_reasons, 1):
                lines.append(f"  {i}. [{brk.kind.title}] {brk.reason}\n     at {brk.where}\n"
                             f"     hint: {brk.hint}")
            lines.append("Breaks by kind: " + ", ".join(f"{kind.title}: {n}"
                                                        for kind, n in self.breaks_by_kind.items()))
        if self.recompile_reasons:
            lines.append("Recompiles:")
            for reason in self.recompile_reasons:
                lines.append(f"  guard failed: {reason}")
        for i, g in enumerate(self.graphs):
            lines.append(f"--- graph {i} ---")
            lines.append(g.print_readable(print_output=False).rstrip())
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *extra_args, **extra_kwargs):
    """explain(fn)(*args, **kwargs) -> ExplainOutput (the call's result is `.result`)."""
    if extra_args or extra_kwargs:
        return explain(fn)(*extra_args, **extra_kwargs)
    fn = _unwrap_compiled(fn)

    def run(*args, **kwargs):
        graphs = []

        def recording_backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward
        created = []
        with _recording(created):
            compiled = CompiledFunction(fn, recording_backend, False, None)
            result = compiled(*args, **kwargs)
        breaks, recompiles = [], []
        for c in created:
            breaks.extend(c.break_reasons)
            recompiles.extend(c.recompile_reasons)
        return ExplainOutput(graphs, breaks, recompiles, result)
    return run


def _unwrap_compiled(fn):
    """explain(f) for f already compiled (dynjit.compile of a function, method or module), or
    for an nn.Module: explain what f compiles."""
    from .eval_frame import OptimizedModule, is_nn_module
    if isinstance(fn, OptimizedModule):
        return fn._orig_mod.forward
    if is_nn_module(fn):            # explain(model)(x): what compiling the model compiles
        return fn.forward
    if isinstance(fn, CompiledFunction):
        inner = fn._fn
        return inner if fn._bound_self is None else inner.__get__(fn._bound_self)
    return fn


@contextlib.contextmanager
def _recording(into):
    _recorders.append(into)
    try:
        yield
    finally:
        _recorders.pop()
