"""Generate the transformed function: call the compiled graph with the inputs
read from their sources, rebuild the return value and any new Python objects
from the graph's outputs, and replay side effects — as Python source with the
compiled function's own signature."""
import inspect
import math

from .exc import unimplemented
from .source import ObjectKey, local_name
from .variables.base import ConstantVariable


def signature_source(code):
    """The parameter list of `code` as source (defaults are attached afterwards)."""
    names = [local_name(n) for n in code.co_varnames]
    argc, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    parts = list(names[:argc])
    if posonly:
        parts.insert(posonly, "/")
    idx = argc + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        parts.append("*" + names[idx])
        idx += 1
    elif kwonly:
        parts.append("*")
    parts.extend(names[argc:argc + kwonly])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parts.append("**" + names[idx])
    return ", ".join(parts)


def rerun_plain(fn, graph_error, args, kwargs):
    """A compiled frame's graph raised `graph_error` (an error of this call's data: an index
    out of range, an integer division by zero). The graph wrote no memory and drew no random
    numbers, so nothing it did is visible: the frame's code runs plain from its start, and the
    user's own try/except, and the effects before the failing line, are plain Python's.
    Counted in counters["graph_rerun"] and logged (DYNJIT_LOGS=recompiles)."""
    from .. import _jit_callback
    from ..exc import DynjitError
    from ..ops.dispatch import raised_by_an_op
    from ..utils import counters
    if isinstance(graph_error, DynjitError) or not raised_by_an_op(graph_error):
        # dynjit's own (a backend breaking its contract), or the backend's (a checking backend
        # that raises on purpose, or a bug in it): the user sees it
        raise graph_error
    from .eval_frame import recompiles_log
    what = f"{type(graph_error).__name__}: {graph_error}"
    counters["graph_rerun"][what] += 1
    recompiles_log.debug("The graph of %s raised %s: the call runs plain", fn.__qualname__, what)
    return _jit_callback.run_without(fn, *args, **kwargs)


def call_arguments(code):
    """Source passing the parameters of `code` (bound to its own names) on to a call:
    `(a, b, *args), {'k': k, **kw}`."""
    names = [local_name(n) for n in code.co_varnames]
    argc, kwonly = code.co_argcount, code.co_kwonlyargcount
    positional = names[:argc]
    idx = argc + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        positional.append("*" + names[idx])
        idx += 1
    keywords = [f"{code.co_varnames[i]!r}: {names[i]}" for i in range(argc, argc + kwonly)]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        keywords.append("**" + names[idx])
    return f"({''.join(p + ', ' for p in positional)}), {{{', '.join(keywords)}}}"


class CodeGen:
    def __init__(self, output):
        self.output = output
        self.lines = []
        self.memo = {}
        self.graph_outputs = []
        self._out_index = {}
        self._tmp = 0

    def temp(self, expr):
        self._tmp += 1
        name = f"___t{self._tmp}"
        self.lines.append(f"{name} = {expr}")
        return name

    def constant(self, value):
        if type(value) in (int, str, bool, bytes) or value is None:
            return repr(value)
        if isinstance(value, ObjectKey):
            return repr(value)
        if type(value) is float and math.isfinite(value):
            return repr(value)
        return f"K[{self.output.stash(value)!r}]"

    def value(self, var):
        name = self.memo.get(id(var))
        if name is not None:
            return name
        expr = var.reconstruct(self)
        if not expr.isidentifier() and not (isinstance(var, ConstantVariable) and var.is_literal()):
            # Build or read each value once, into a temporary that every reference uses: one
            # object stays one object (a list held in a local and by a bound method on the stack),
            # and a source is read before the side effects are replayed (`r = obj.g; obj.g = None;
            # return r` returns the old value, not what obj.g holds after the writes).
            expr = self.memo[id(var)] = self.temp(expr)
        return expr

    def graph_output(self, tvar):
        node = tvar.node
        if node.op == "placeholder":
            return node.meta["source"].expr()
        i = self._out_index.get(node)
        if i is None:
            i = self._out_index[node] = len(self.graph_outputs)
            self.graph_outputs.append(node)
        return f"___out[{i}]"

    def new_object(self, var):
        name = f"___o{len(self.memo)}"
        self.memo[id(var)] = name
        self.lines.append(f"{name} = K['new']({self.constant(var.cls)})")
        if var.attrs:
            attrs = ", ".join(f"{k!r}: {self.value(v)}" for k, v in var.attrs.items())
            self.lines.append(f"{name}.__dict__.update({{{attrs}}})")
        return name

    def cell(self, var):
        name = f"___c{len(self.memo)}"
        self.memo[id(var)] = name
        self.lines.append(f"{name} = K['CellType']()")
        self.output.consts.setdefault("CellType", type((lambda: name).__closure__[0]))
        if var.contents is not None:
            self.lines.append(f"{name}.cell_contents = {self.value(var.contents)}")
        return name

    def nested_function(self, var):
        name = f"___f{len(self.memo)}"
        self.memo[id(var)] = name
        closure = "None"
        if var.closure:
            cells = [self.value(c) for c in var.closure]
            closure = "(" + ", ".join(cells) + ",)"
        defaults = "None" if var.defaults is None else self.value(var.defaults)
        g = "G" if var.f_globals is self.output.root_globals else self.constant(var.f_globals)
        self.lines.append(f"{name} = K['FunctionType']({self.constant(var.code)}, {g}, "
                          f"{var.code.co_name!r}, {defaults}, {closure})")
        if var.kwdefaults is not None:
            self.lines.append(f"{name}.__kwdefaults__ = {self.value(var.kwdefaults)}")
        return name


def generate(output, return_var, signature):
    """(source of the transformed function, the graph's output nodes)."""
    cg = CodeGen(output)
    # the call of a graph break's native part runs last, after the side effects are replayed,
    # with the frame's JIT hook active (set here: a frame less than a helper would cost)
    hook = None
    if getattr(return_var, "runs_last", False):
        if hasattr(return_var, "reconstruct_hooked"):
            hook, ret = return_var.reconstruct_hooked(cg)
        else:
            ret = return_var.reconstruct(cg)
    else:
        ret = cg.value(return_var)
    effects = output.side_effects.codegen(cg)
    changes_mode = any(n.op == "call_function" and getattr(n.target, "__name__", "") == "_set_grad_enabled"
                       for n in output.graph.nodes)
    body = []
    if cg.graph_outputs or output.count_ops():
        inputs = ", ".join(output.placeholder_sources[n].expr()
                           for n in output.graph.nodes if n.op == "placeholder")
        if output.graph_has_effects:
            body.append(f"___out = ___graph({inputs})")
        else:
            # a graph that writes no memory and draws no random numbers leaves nothing behind
            # when it raises (an index out of range, an integer division by zero in this call's
            # data): the frame runs plain from its start, so the user's try/except and the
            # effects before the failing line are plain Python's
            restore = "___grad_state.enabled, ___grad_state.inference = ___mode; " if changes_mode else ""
            body += ["try:",
                     f"    ___out = ___graph({inputs})",
                     "except Exception as ___e:",
                     f"    {restore}return ___rerun_plain(K['__fn'], ___e, {call_arguments(output.fn.__code__)})"]
    if changes_mode and body:
        # the grad mode the graph leaves: a backend that compiles the graph into kernels (llvm)
        # may have dropped its mode-setting nodes, which change no tensor
        body.append(f"___grad_state.enabled = {output.grad_enabled!r}")
    body.extend(cg.lines)
    body.extend(effects)
    if hook is None:
        body.append(f"return {ret}")
    else:
        body += ["___prev_hook = getattr(___jit_state, 'hook', None)",
                 f"___jit_state.hook = {hook}",
                 "try:",
                 f"    return {ret}",
                 "finally:",
                 "    ___jit_state.hook = ___prev_hook"]
    if changes_mode or getattr(return_var, "runs_last", False):
        # An exception leaving the frame unwinds its `with` blocks in plain Python: the grad
        # mode the frame was entered with comes back (the graph and the native code run at a
        # graph break are outside the frame's exception handlers).
        body = (["___mode = ___grad_state.enabled, ___grad_state.inference", "try:"]
                + ["    " + line for line in body]
                + ["except BaseException:",
                   "    ___grad_state.enabled, ___grad_state.inference = ___mode",
                   "    raise"])
    src = f"def ___transformed({signature}):\n" + "".join(f"    {line}\n" for line in body)
    return src, cg.graph_outputs


_ = unimplemented
