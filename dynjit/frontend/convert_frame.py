"""Turn one call of a user function into a cache entry: trace it with the
InstructionTranslator, compile the graph with the backend, generate the guard
and the transformed function."""
import inspect
import logging

from .. import random as _random
from ..autograd.grad_mode import state as _grad_state
from ..backends.registry import call_backend
from ..exc import Unsupported
from ..fx.graph_module import GraphModule
from ..utils import counters
from .codegen import generate, signature_source
from .output_graph import OutputGraph
from .source import LocalSource, ConstSource, CellContentsSource
from .translator import InstructionTranslator, RealCellVariable
from .variables import build

log = logging.getLogger("dynjit.graph_breaks")
graph_code_log = logging.getLogger("dynjit.graph_code")


class CompiledEntry:
    def __init__(self, guard, transformed, gm, output, ops):
        self.guard = guard
        self.transformed = transformed
        self.gm = gm
        self.output = output
        self.op_count = ops


def convert(fn, args, kwargs, backend):
    """Trace fn(*args, **kwargs); returns a CompiledEntry, or raises Unsupported."""
    code = fn.__code__
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fn.__qualname__}() called with arguments that do not match its signature: {e}") from None
    bound.apply_defaults()
    output = OutputGraph(fn, backend)
    output._bound_args = dict(bound.arguments)
    rng = _random.get_rng_state()
    grad = _grad_state.enabled
    tx = InstructionTranslator(code, fn.__globals__, {}, {}, output)
    try:
        for name, value in bound.arguments.items():
            tx.locals[name] = build(tx, value, LocalSource(name))
        fn_src = ConstSource("__fn")
        for i, name in enumerate(code.co_freevars):
            tx.cells[name] = RealCellVariable(fn.__closure__[i], CellContentsSource(fn_src, i))
        ret = tx.run()
    finally:
        _random.set_rng_state(rng)
        _grad_state.enabled = grad
    if output.grad_enabled != grad:
        pass  # the graph's grad-mode node leaves the mode as the function did
    signature = signature_source(code)
    src, outs = generate(output, ret, signature)
    output.graph.output(tuple(outs))
    ops = output.count_ops()
    gm = None
    compiled = None
    if ops:
        gm = GraphModule({}, output.graph)
        if graph_code_log.isEnabledFor(logging.DEBUG):
            graph_code_log.debug("graph for %s:\n%s", fn.__qualname__, gm.print_readable(print_output=False))
        compiled = call_backend(backend, gm, list(output.example_inputs))
    ns = output.guards.namespace(fn)
    ns["___graph"] = compiled
    exec(compile(src, f"<dynjit-transformed {fn.__qualname__}>", "exec"), ns)
    transformed = ns["___transformed"]
    transformed.__defaults__ = fn.__defaults__
    transformed.__kwdefaults__ = fn.__kwdefaults__
    transformed.source = src
    guard = output.guards.compile(signature, fn)
    counters["stats"]["frames_converted"] += 1
    return CompiledEntry(guard, transformed, gm, output, ops)


def location(exc):
    """The user's (file, line) where tracing stopped."""
    return getattr(exc, "_tx_location", ("<unknown>", 0))
