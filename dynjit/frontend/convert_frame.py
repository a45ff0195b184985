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
import ast
import linecache
import logging
import types
import weakref

from .. import _jit_callback
from .. import random as _random
from ..autograd.grad_mode import state as _grad_state
from ..compiler.registry import call_backend, contract_error
from ..exc import Unsupported, BreakKind
from ..fx.graph_module import GraphModule
from ..utils import counters, forget_source_with
from . import resume, tracebacks
from .exc import quiet_floating_point
from .bytecode_info import live_after, code_info
from .codegen import generate, signature_source
from .guards import namespace, weakly_held
from .output_graph import OutputGraph
from .source import LocalSource, ConstSource, ClosureCellSource, local_name
from .translator import InstructionTranslator, UNBOUND
from .variables import build, NULL, FunctionVariable, BoundMethodVariable, CellVariable
from .variables.functions import GradModeExitVariable
from .variables.base import VariableTracker

graph_code_log = logging.getLogger("dynjit.graph_code")
bytecode_log = logging.getLogger("dynjit.bytecode")


class CompiledEntry:
    """One cache entry: its guard (`guard.guards` the records, `guard.consts` the constants of
    its generated code, `guard.life` its life), the transformed function, the graph. It keeps
    no trace state: no tracker, no example tensor, no user object but weakly (guards.py)."""

    def __init__(self, guard, transformed, gm, ops, break_reason=None):
        self.guard = guard
        self.transformed = transformed
        self.gm = gm
        self.op_count = ops
        self.break_reason = break_reason
        self.break_fn = None       # the generated function that runs the breaking instruction
        self.dynamic = False


def location(exc):
    """The user's (file, line) where tracing stopped."""
    return getattr(exc, "_tx_location", ("<unknown>", 0))


def convert(fn, args, kwargs, backend, fullgraph=False, hook=None, dynamic=False, dynamic_scalars=()):
    """Trace fn(*args, **kwargs) into a CompiledEntry; raises Unsupported if it cannot."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        # calling it makes a generator (or coroutine) object; its body runs later, lazily
        e = Unsupported(BreakKind.UNSUPPORTED_BYTECODE, "a generator, coroutine or async generator function "
                        "(calling it only makes the object; its body runs lazily, as plain Python)")
        e._tx_location = (code.co_filename, code.co_firstlineno)
        raise e
    # the code that runs is fn's own, not that of a function it wraps (functools.wraps); the
    # caller has checked that the arguments bind
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    # inspect spells 3.11 comprehensions' `.0` parameter `implicit0`: use the code's own names
    if any(n not in fn.__code__.co_varnames for n in bound.arguments):
        bound.arguments = {(f".{n[8:]}" if n.startswith("implicit") and n not in fn.__code__.co_varnames
                            else n): v for n, v in bound.arguments.items()}
    try:
        return _trace(fn, bound, backend, dynamic=dynamic, dynamic_scalars=dynamic_scalars)
    except Unsupported as e:
        if fullgraph or getattr(e, "_break_step", None) is None or hook is None:
            raise
        try:
            entry = _trace(fn, bound, backend, stop_at=e._break_step, break_exc=e, hook=hook,
                           dynamic=dynamic, dynamic_scalars=dynamic_scalars)
        except (Unsupported, NotImplementedError) as why:
            hint = f"{e.hint}; {why.hint}" if isinstance(why, Unsupported) else e.hint
            plain = Unsupported(e.kind, f"{e}; no graph break possible here: {why}", hint)
            plain._tx_location = location(e)
            raise plain from None
        entry.break_reason = _without_traceback(e)
        return entry


def _without_traceback(exc):
    """`exc` kept for display only: its traceback (the tracer's frames, and through them the
    whole trace) and those of the exceptions it chains to are dropped."""
    seen = set()
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
    return exc


def _trace(fn, bound, backend, stop_at=None, break_exc=None, hook=None, dynamic=False, dynamic_scalars=()):
    output = OutputGraph(fn, backend)
    try:
        return _trace_into(output, fn, bound, backend, stop_at, break_exc, hook, dynamic, dynamic_scalars)
    finally:
        output.release()


def _trace_into(output, fn, bound, backend, stop_at, break_exc, hook, dynamic, dynamic_scalars):
    code = fn.__code__
    output.dynamic = dynamic
    output.dynamic_scalars = dynamic_scalars
    output._bound_args = dict(bound.arguments)
    grad = _grad_state.enabled
    tx = InstructionTranslator(code, fn.__globals__, {}, {}, output)
    tx.stop_at_step = stop_at
    # random numbers the trace draws come from a private copy of the generators' states: the
    # numbers other threads draw meanwhile are neither handed out again nor skipped
    with _random.private_state():
        try:
            for name, value in bound.arguments.items():
                tx.locals[name] = build(tx, value, LocalSource(name))
            fn_src = ConstSource("__fn")
            for i, name in enumerate(code.co_freevars):
                tx.cells[name] = build(tx, fn.__closure__[i], ClosureCellSource(fn_src, i))
            with quiet_floating_point():
                ret = tx.run()
        finally:
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
            lines_before = _generated_sources()
            with quiet_floating_point():
                compiled = _jit_callback.run_without(call_backend, backend, gm, list(output.example_inputs))
            backend_sources = _generated_sources() - lines_before
    guard = output.guards.compile(signature, fn)
    ns = namespace(fn, guard.consts)
    if compiled is not None:
        # the backend's callable is checked on its first call (then called directly)
        ns["___graph"] = check_outputs_once(backend, compiled, len(outs), ns, "___graph")
    exec(_compile_as(src, code), ns)
    transformed = ns["___transformed"]
    transformed.__defaults__ = fn.__defaults__
    transformed.__kwdefaults__ = fn.__kwdefaults__
    transformed.source = src
    if bytecode_log.isEnabledFor(logging.DEBUG):
        bytecode_log.debug("transformed %s:\n%s", fn.__qualname__, src)
    counters["stats"]["frames_converted"] += 1
    if gm is not None:
        _release_trace_state(gm, guard)
        # what the backend put in linecache (its graphs' and wrappers' source) belongs to the
        # callable it made, which this entry owns: it leaves linecache with the entry
        for filename in backend_sources:
            forget_source_with(transformed, filename)
    entry = CompiledEntry(guard, transformed, gm, ops)
    entry.break_fn = break_fn
    entry.dynamic = output.dynamic and not output.shape_specialized
    return entry


def _compile_as(src, code):
    """The transformed function's source compiled so that its frame reads as the original's:
    `code`'s name, qualified name and file, every line the `def` line. Code that walks the
    stack (logging's caller, warnings' stacklevel, inspect) then meets the user's function,
    not a generated one; tracebacks still know it for dynjit's."""
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = code.co_firstlineno
    module = compile(tree, code.co_filename, "exec")
    fn_code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    renamed = fn_code.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    tracebacks.mark_generated(renamed)
    return module.replace(co_consts=tuple(renamed if c is fn_code else c for c in module.co_consts))


def check_outputs_once(backend, compiled, n_outputs, namespace, name):
    """A stand-in for the backend's callable `compiled` in `namespace[name]`: its first call
    checks what the callable returns (a tuple or list of the graph's `n_outputs` outputs) and
    puts `compiled` itself in its place, so later calls cost nothing; a wrong result raises
    BackendCompilerFailed naming the backend, what it returned and what was expected."""
    def first_call(*args):
        lines_before = _generated_sources()
        out = compiled(*args)
        # a backend may compile on its callable's first call (aot): that source, too, leaves
        # linecache with the entry
        owner = namespace.get("___transformed")
        if owner is not None:
            for filename in _generated_sources() - lines_before:
                forget_source_with(owner, filename)
        err = contract_error(backend, out, n_outputs)
        if err is not None:
            raise err
        namespace[name] = compiled
        return out
    first_call.compiled = compiled
    return first_call


def _generated_sources():
    return {name for name in list(linecache.cache) if name.startswith("<dynjit-")}


def _release_trace_state(gm, guard):
    """What the entry's graph keeps: node metadata, never the trace's objects (a placeholder's
    source names user objects only weakly); each graph's source leaves linecache with it."""
    from .guards import weaken_source
    weak_ids = {id(ref()) for ref in guard.consts.weak.values()}
    stack = [gm]
    while stack:
        g = stack.pop()
        code = getattr(getattr(g, "_forward_fn", None), "__code__", None)
        if code is not None:
            forget_source_with(g, code.co_filename)
        if weak_ids:
            for node in g.graph.nodes:
                src = node.meta.get("source")
                if src is not None:
                    node.meta["source"] = weaken_source(src, weak_ids)
        stack.extend(sub for _, sub in g.named_submodules())


class _BreakCall(VariableTracker):
    """The transformed function's tail: call the break function with the rebuilt stack and locals."""

    runs_last = True

    def __init__(self, fn_obj, values, hook):
        super().__init__()
        self.fn_obj = fn_obj
        self.values = values
        self.hook = hook

    def _parts(self, cg):
        args = ", ".join(cg.value(v) if not isinstance(v, str) else v for v in self.values)
        # the compiled function whose hook it is, the entry's owner, is held weakly
        if isinstance(self.hook, types.MethodType):
            hook = f"{cg.constant(weakref.WeakMethod(self.hook))}()"
        else:
            hook = cg.constant(self.hook)
        return hook, cg.constant(self.fn_obj), args

    def reconstruct_hooked(self, cg):
        """(the hook to make active, the call of the break function): the native part runs
        with this frame's hook active (nested module calls compile)."""
        hook, fn, args = self._parts(cg)
        return hook, f"{fn}({args})"

    def reconstruct(self, cg):
        hook, fn, args = self._parts(cg)
        return f"{cg.constant(_jit_callback.run_with)}({hook}, {fn}, {args})"


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
        if isinstance(inner, FunctionVariable) and not inner.pinned:
            # an argument guarded by its code: this call's own function, wrapped when it runs
            return f"{cg.constant(self.hook)}({cg.value(inner)})"
        if isinstance(inner, FunctionVariable):
            return _wrapper_constant(cg, inner.fn, self.hook(inner.fn))
        if isinstance(inner, BoundMethodVariable) and isinstance(inner.func, FunctionVariable) \
                and inner.func.pinned:
            wrapper = _wrapper_constant(cg, inner.func.fn, self.hook(inner.func.fn))
            return f"K['MethodType']({wrapper}, {cg.value(inner.self_var)})"
        return cg.value(inner)


def _wrapper_constant(cg, fn, wrapper):
    """The compiled wrapper of a user's function, as a constant of the generated code: held
    weakly when the function is (the function keeps its wrapper alive, eval_frame._nested)."""
    text = cg.constant(wrapper)
    if wrapper is not fn and weakly_held(fn):
        cg.output.__dict__.setdefault("extra_weak_ids", set()).add(id(wrapper))
    return text


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
    if any(not isinstance(stack[slot], GradModeExitVariable) for slot in resume.with_exit_slots(orig, orig_inst.offset)):
        raise Unsupported(BreakKind.FRAME_STRUCTURE, "a graph break inside a `with` block over a context manager "
                          "other than a grad mode (the frame runs plain)")
    consumed = resume.consumed_by(inst)
    stack = list(stack)
    if getattr(exc, "_in_inlined_call", False) and inst.opname in ("CALL", "CALL_KW", "CALL_FUNCTION_EX") \
            and not getattr(exc, "callee_runs_plain", False):
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

    # resume functions live as long as the compiled function whose hook runs them (or the hook)
    owner = getattr(hook, "__self__", hook)
    owner_dict = getattr(owner, "__dict__", None)
    resume_cache = owner_dict.setdefault("_resume_cache", {}) if isinstance(owner_dict, dict) else {}

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
