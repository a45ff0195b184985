"""Turn one call of a user function into a cache entry: trace it with the
InstructionTranslator, compile the graph with the backend, generate the guard
and the transformed function.

When tracing stops at an instruction it cannot trace (a graph break), the
trace is restarted and stopped just before that instruction; the graph so
far is compiled, and the transformed function ends by running the
instruction natively and resuming the rest of the frame in a resume function
that goes through the JIT again (see resume.py).
"""
import inspect
import logging
import types

from .. import _jit_callback
from .. import random as _random
from ..autograd.grad_mode import state as _grad_state
from ..backends.registry import call_backend
from ..exc import Unsupported, BreakKind
from ..fx.graph_module import GraphModule
from ..utils import counters
from . import resume
from .bytecode_info import live_after, code_info
from .codegen import generate, signature_source
from .output_graph import OutputGraph
from .source import LocalSource, ConstSource, ClosureCellSource, local_name
from .translator import InstructionTranslator, UNBOUND
from .variables import build, NULL, FunctionVariable, BoundMethodVariable, CellVariable
from .variables.base import VariableTracker

graph_code_log = logging.getLogger("dynjit.graph_code")
bytecode_log = logging.getLogger("dynjit.bytecode")


class CompiledEntry:
    def __init__(self, guard, transformed, gm, output, ops, break_reason=None):
        self.guard = guard
        self.transformed = transformed
        self.gm = gm
        self.output = output
        self.op_count = ops
        self.break_reason = break_reason
        self.break_fn = None       # the generated function that runs the breaking instruction


def location(exc):
    """The user's (file, line) where tracing stopped."""
    return getattr(exc, "_tx_location", ("<unknown>", 0))


def convert(fn, args, kwargs, backend, fullgraph=False, hook=None, dynamic=False):
    """Trace fn(*args, **kwargs) into a CompiledEntry; raises Unsupported if it cannot."""
    # the code that runs is fn's own, not that of a function it wraps (functools.wraps); the
    # caller has checked that the arguments bind
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    # inspect spells 3.11 comprehensions' `.0` parameter `implicit0`: use the code's own names
    if any(n not in fn.__code__.co_varnames for n in bound.arguments):
        bound.arguments = {(f".{n[8:]}" if n.startswith("implicit") and n not in fn.__code__.co_varnames
                            else n): v for n, v in bound.arguments.items()}
    try:
        return _trace(fn, bound, backend, dynamic=dynamic)
    except Unsupported as e:
        if fullgraph or getattr(e, "_break_step", None) is None or hook is None:
            raise
        try:
            entry = _trace(fn, bound, backend, stop_at=e._break_step, break_exc=e, hook=hook,
                           dynamic=dynamic)
        except (Unsupported, NotImplementedError) as why:
            hint = f"{e.hint}; {why.hint}" if isinstance(why, Unsupported) else e.hint
            plain = Unsupported(e.kind, f"{e}; no graph break possible here: {why}", hint)
            plain._tx_location = location(e)
            raise plain from None
        entry.break_reason = e
        return entry


def _trace(fn, bound, backend, stop_at=None, break_exc=None, hook=None, dynamic=False):
    code = fn.__code__
    output = OutputGraph(fn, backend)
    output.dynamic = dynamic
    output._bound_args = dict(bound.arguments)
    rng = _random.get_rng_state()
    grad = _grad_state.enabled
    tx = InstructionTranslator(code, fn.__globals__, {}, {}, output)
    tx.stop_at_step = stop_at
    try:
        for name, value in bound.arguments.items():
            tx.locals[name] = build(tx, value, LocalSource(name))
        fn_src = ConstSource("__fn")
        for i, name in enumerate(code.co_freevars):
            tx.cells[name] = build(tx, fn.__closure__[i], ClosureCellSource(fn_src, i))
        ret = tx.run()
    finally:
        _random.set_rng_state(rng)
        _grad_state.enabled = grad
    signature = signature_source(code)
    break_fn = None
    if tx.stopped is not None:
        ret = _break_call(fn, tx, output, break_exc, hook)
        break_fn = ret.fn_obj
    output.prune_unused_inputs()
    src, outs = generate(output, ret, signature)
    output.graph.output(tuple(outs))
    ops = output.count_ops()
    gm = None
    compiled = None
    if ops:
        gm = GraphModule(output.submodules, output.graph)
        if graph_code_log.isEnabledFor(logging.DEBUG):
            graph_code_log.debug("graph for %s:\n%s", fn.__qualname__, gm.print_readable(print_output=False))
        compiled = _jit_callback.run_without(call_backend, backend, gm, list(output.example_inputs))
    ns = output.guards.namespace(fn)
    ns["___graph"] = compiled
    exec(compile(src, f"<dynjit-transformed {fn.__qualname__}>", "exec"), ns)
    transformed = ns["___transformed"]
    transformed.__defaults__ = fn.__defaults__
    transformed.__kwdefaults__ = fn.__kwdefaults__
    transformed.source = src
    if bytecode_log.isEnabledFor(logging.DEBUG):
        bytecode_log.debug("transformed %s:\n%s", fn.__qualname__, src)
    guard = output.guards.compile(signature, fn)
    counters["stats"]["frames_converted"] += 1
    entry = CompiledEntry(guard, transformed, gm, output, ops)
    entry.break_fn = break_fn
    entry.dynamic = output.dynamic and not output.shape_specialized
    return entry


class _BreakCall(VariableTracker):
    """The transformed function's tail: call the break function with the rebuilt stack and locals."""

    runs_last = True

    def __init__(self, fn_obj, values, hook):
        super().__init__()
        self.fn_obj = fn_obj
        self.values = values
        self.hook = hook

    def reconstruct(self, cg):
        args = ", ".join(cg.value(v) if not isinstance(v, str) else v for v in self.values)
        # the native part runs with this frame's hook active (nested module calls compile)
        return f"{cg.constant(_jit_callback.run_with)}({cg.constant(self.hook)}, {cg.constant(self.fn_obj)}, {args})"


class _Hooked(VariableTracker):
    """A user function called at a graph break: it goes through the JIT as its own frame."""

    def __init__(self, inner, hook):
        super().__init__()
        self.inner = inner
        self.hook = hook

    def reconstruct(self, cg):
        inner = self.inner
        if hasattr(inner, "hooked"):      # e.g. F.apply: its forward goes through the hook
            return cg.constant(inner.hooked(self.hook))
        if isinstance(inner, FunctionVariable):
            return cg.constant(self.hook(inner.fn))
        if isinstance(inner, BoundMethodVariable) and isinstance(inner.func, FunctionVariable):
            return f"K['MethodType']({cg.constant(self.hook(inner.func.fn))}, {cg.value(inner.self_var)})"
        return cg.value(inner)


_resume_cache = {}


def _break_call(fn, tx, output, exc, hook):
    """The transformed function's tail at a graph break: rebuild the stack, the live locals and
    the frame's cells, and call a break function generated from the *original* code."""
    code = fn.__code__
    ip, stack, f_locals = tx.stopped
    inst = tx.info.instructions[ip]
    orig, index = resume.original_index(code, inst.offset)
    orig_info = code_info(orig)
    orig_inst = orig_info.abstract()[2][index]
    if resume.in_try_block(orig, orig_inst.offset):
        raise Unsupported(BreakKind.FRAME_STRUCTURE, "a graph break inside a try block")
    if resume.in_loop(orig, orig_inst.offset):
        raise Unsupported(BreakKind.FRAME_STRUCTURE, "a graph break inside a loop (the frame runs plain)")
    consumed = resume.consumed_by(inst)
    stack = list(stack)
    if getattr(exc, "_in_inlined_call", False) and inst.opname in ("CALL", "CALL_KW", "CALL_FUNCTION_EX"):
        base = len(stack) - consumed
        for k in (base, base + 1):
            if stack[k] is not NULL:
                stack[k] = _Hooked(stack[k], hook)
                break
    live, values = [], []
    needed = live_after(orig, orig_info.index_of[orig_inst.offset])
    for name in orig.co_varnames:
        if name in orig_info.cellvars or (needed is not None and name not in needed):
            continue
        v = f_locals.get(name, UNBOUND)
        if v is UNBOUND:
            v = f_locals.get(local_name(name), UNBOUND)
        if v is UNBOUND or v is NULL:
            continue
        live.append(name)
        values.append(v)
    cells = []
    for name in orig.co_cellvars:
        cell = tx.cells.get(name) if orig is code else f_locals.get(resume.cell_arg(name))
        cells.append(cell if cell is not None else CellVariable())
    if resume.self_first(orig):        # zero-argument super() needs `self` as the first local
        first = orig.co_varnames[0]
        if first in live:
            values.pop(live.index(first))
            live.remove(first)
        v = f_locals.get(first, UNBOUND)
        if v is not UNBOUND and v is not NULL:
            live.insert(0, first)
            values.insert(0, v)
    null_slots = [v is NULL for v in stack]
    stack_values = [v for v in stack if v is not NULL]
    live_t = tuple(live)
    lead = 1 if live and resume.self_first(orig) and live[0] == orig.co_varnames[0] else 0

    # resume functions live as long as the compiled function whose hook runs them
    owner = getattr(hook, "__self__", None)
    resume_cache = owner.__dict__.setdefault("_resume_cache", {}) if owner is not None else _resume_cache

    def make_resume(target, null_slots_after):
        key = (orig, target, tuple(null_slots_after), live_t)
        cached = resume_cache.get(key)
        if cached is None:
            rcode = resume.resume_code(orig, target, null_slots_after, live_t)
            rfn = types.FunctionType(rcode, fn.__globals__, rcode.co_name, None, fn.__closure__)
            cached = resume_cache[key] = hook(rfn)
        return cached

    bcode = resume.break_code(orig, index, null_slots, live_t, make_resume)
    break_fn = types.FunctionType(bcode, fn.__globals__, bcode.co_name, None, fn.__closure__)
    return _BreakCall(break_fn, values[:lead] + stack_values + values[lead:] + cells, hook)
