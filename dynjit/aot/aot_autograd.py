"""aot_function / aot_module / aot_module_simplified.

On the first call with a given signature (see `flat.call_key`: shapes,
dtypes, strides, requires_grad, grad mode, non-tensor values, aliasing), the
function is traced once (`joint.trace_function`) into a joint forward+backward
graph, or a forward-only graph when no gradient is needed; the joint graph is
split by `partition_fn` and the two halves are handed to `fw_compiler` and
(on the first backward) `bw_compiler`. Later calls with the same signature go
straight to the compiled code (`runtime.CompiledEntry`). Results, gradients,
input mutations and the aliasing of outputs are those of eager.

A compiler is `compiler(gm, example_inputs) -> callable`; the callable takes
the graph's inputs positionally, or as one list if it is marked boxed (see
`make_boxed_func`).

Tracing runs the function on real values, once per signature: Python control
flow and values read out of tensors (`.item()`, `if x.sum() > 0`) are
specialized to that first call, as in any tracer (`dynjit.compile` breaks the
graph there instead). An int or float argument is not part of the signature:
it is a graph input (in the forward and, where a derivative uses it, the
backward), so one trace serves all its values, unless the function needs its
value while tracing (an `if` on it, `range(n)`, `math.sqrt(n)`): then that
trace is kept for that value only, and another value traces again (see
`dynjit.fx.traced_number`). The compilers then receive graphs some of whose
placeholders are Python numbers (their example input is the number). Sizes
can be symbols too (dynjit/aot/symbolic.py): a graph of the dynjit.compile
frontend, a call that misses only because tensor sizes changed, or
`dynamic=True`, is traced once with its sizes as symbols, and that trace
serves every size its guards admit; its graphs take each symbol as a number
placeholder (`Sym(s0)`). Tensors the function reads that are not arguments
(globals, closures) stay live references; those that require grad become
extra graph inputs so that gradients reach them; writing into them in place
is an error.
"""
import contextlib
import functools
import itertools
import logging
import threading
import warnings

from ..ops import dispatch as _dispatch
from ..tensor import Tensor
from .flat import call_key, specialized_key
from ..autograd.saved import suspended_hooks
from .joint import BackwardNotTraceable, trace_function
from .._pytree import tree_unflatten
from ..exc import DynjitError
from ..ops.dispatch import raised_by_an_op
from .partition import default_partition, drop_inputs
from .runtime import CompiledEntry
from . import symbolic as _symbolic

# Trace sizes as symbols where a graph's sizes vary (see dynjit/aot/symbolic.py); False traces
# once per size, as before symbolic sizes existed.
SYMBOLIC_SIZES = True

_log = logging.getLogger("dynjit.dynamic")

# Numbers each compiled function (an aot_function / aot_module / aot_module_simplified) in
# the order their first graph is compiled: "graph 3" in messages, "3_forward" in
# get_aot_compilation_context(). Every signature one function is traced for shares its number.
AOT_COUNTER = itertools.count()

_context = threading.local()


def get_aot_compilation_context():
    """While a compiler runs: ([name of the graph being compiled], name of the function, graph
    number). The name is "<graph number>_forward", "_inference" or "_backward"."""
    return (list(getattr(_context, "names", [])), getattr(_context, "model_name", None),
            getattr(_context, "nth_graph", None))


@contextlib.contextmanager
def _compiling(aot_id, kind, model_name):
    saved = (getattr(_context, "names", []), getattr(_context, "model_name", None),
             getattr(_context, "nth_graph", None))
    _context.names, _context.model_name, _context.nth_graph = [f"{aot_id}_{kind}"], model_name, aot_id
    try:
        yield
    finally:
        _context.names, _context.model_name, _context.nth_graph = saved


# Compiled signatures per function before calls with a new one run uncompiled (a
# signature that changes on every call, such as a new unhashable object passed each
# time, would otherwise retrace forever).
CACHE_SIZE_LIMIT = 64


def _check_compiled(fn, compiler, what):
    if not callable(fn):
        name = getattr(compiler, "__name__", repr(compiler))
        raise TypeError(f"the {what} compiler {name} returned {type(fn).__name__}, which is not "
                        "callable; a compiler must return a function that takes the graph's inputs")
    return fn


def _example_inputs(gm):
    """Zero tensors shaped like a graph's placeholders (what a compiler may inspect)."""
    import numpy as np
    out = []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            meta = n.meta.get("val")
            is_tensor = hasattr(meta, "shape") and hasattr(meta, "dtype")
            out.append(Tensor._make(np.zeros(meta.shape, dtype=meta.dtype.np)) if is_tensor else meta)
    return out


def _compile(traced, fw_compiler, bw_compiler, partition_fn, inference_compiler, aot_id=0, name=None):
    example_inputs, traced.example_inputs = traced.example_inputs, None   # not kept alive
    if not traced.training:
        compiler = inference_compiler or fw_compiler
        with _compiling(aot_id, "inference", name):
            fw = _check_compiled(compiler(traced.gm, example_inputs), compiler, "inference")
        return CompiledEntry(traced, fw, fw_gm=traced.gm)
    fw_gm, bw_gm = partition_fn(traced.gm, example_inputs, num_fwd_outputs=traced.num_fwd_outputs)
    dropped = fw_gm.meta.get("dropped_inputs")     # sizes the forward computes (partition.py)
    if dropped:
        example_inputs = [x for k, x in enumerate(example_inputs) if k not in dropped]
    with _compiling(aot_id, "forward", name):
        fw = drop_inputs(_check_compiled(fw_compiler(fw_gm, example_inputs), fw_compiler, "forward"), dropped)

    def compile_bw():
        with _compiling(aot_id, "backward", name):
            return _check_compiled(bw_compiler(bw_gm, _example_inputs(bw_gm)), bw_compiler, "backward")
    return CompiledEntry(traced, fw, compile_bw, fw_gm=fw_gm, bw_gm=bw_gm)


def aot_function(fn, fw_compiler, bw_compiler=None, partition_fn=default_partition,
                 decompositions=None, num_params_buffers=0, keep_inference_input_mutations=False,
                 inference_compiler=None, dynamic=False):
    """Compile `fn` ahead of time: trace forward and backward, partition, compile both halves.

    Every call with a new signature retraces (non-tensor arguments other than
    int and float are specialized; a number is specialized only where the trace
    reads its value). `compiled._cache` holds one entry per trace; each entry
    keeps `fw_gm` / `bw_gm`. A call that misses only because tensor sizes changed is
    traced with those sizes as symbols, and that trace serves every size its guards
    admit (see dynjit/aot/symbolic.py); `dynamic=True` traces every size >= 2 of the
    tensor arguments (after the `num_params_buffers` parameters and buffers) as a symbol
    from the first call, equal sizes sharing one.
    """
    if not callable(fn):
        raise TypeError(f"aot_function needs a callable, got {type(fn).__name__}")
    if not callable(fw_compiler):
        raise TypeError(f"fw_compiler must be a callable compiler(gm, example_inputs), got {fw_compiler!r}")
    if bw_compiler is None:
        bw_compiler = fw_compiler
    cache = {}
    # call key -> [leaf positions]: for each trace under that key that specialized number
    # arguments, which (its entry is in `cache` under specialized_key)
    specialized = {}
    name = getattr(fn, "__qualname__", None) or type(fn).__name__

    symbolic_entries = []      # SymbolicEntry: traces with symbolic sizes, tried in order
    concrete_keys = []         # the keys of the traces made with concrete sizes
    symbolic_memo = {}         # (call key, int arguments) -> the symbolic entry that fits it

    def symbolic_spec(key, leaves, spec):
        if not SYMBOLIC_SIZES or compiled._no_symbolic:
            return None
        if dynamic and not concrete_keys:
            sym = _symbolic.spec_all_dynamic(leaves, num_params_buffers)
        elif compiled._dynamic_hint is not None:
            sym = _symbolic.spec_from_hint(compiled._dynamic_hint, leaves)
        else:
            sym = _symbolic.spec_from_keys(key, concrete_keys, leaves, spec is not None)
        return sym if sym is not None and sym.dims else None

    def trace_symbolic(key, leaves, spec, sym, training):
        """A trace with symbolic sizes checked against a concrete trace at other sizes, or
        None (then this function traces with concrete sizes from now on)."""
        why = None
        try:
            traced = trace_function(fn, leaves, spec, training, keep_inference_input_mutations,
                                    decompositions, symbolic=sym)
        except Exception as e:
            # the function's own error raises again from the concrete trace; only if that one
            # succeeds are symbolic sizes given up for this function
            _log.debug("AOT trace of %s: the symbolic trace raised %s: %s", name, type(e).__name__, e)
            compiled._symbolic_raised = True
            return None
        if traced is not None:
            env = traced.shape_env
            values = _symbolic.probe_point(env)
            if env.gave_up or values is None:
                why = env.gave_up or "every symbol was specialized (" + "; ".join(
                    f"{env.symbols[k].name}: {w}" for k, w in env.pinned.items()) + ")"
            else:
                try:
                    probe = trace_function(fn, _symbolic.probe_leaves(env, leaves, values), spec, training,
                                           keep_inference_input_mutations, decompositions, log=False)
                    if not _symbolic.agrees_with_concrete(traced, probe, values):
                        why = "it differs from a concrete trace at other sizes"
                except Exception as e:
                    why = f"the concrete trace at other sizes raised {type(e).__name__}: {e}"
        if why is not None:
            compiled._no_symbolic = True
            _log.debug("AOT trace of %s: sizes stay concrete: %s", name, why)
            return None
        if _log.isEnabledFor(logging.DEBUG):
            env = traced.shape_env
            _log.debug("AOT trace of %s with symbolic sizes: %s; guards: %s", name,
                       ", ".join(f"{s.name} = {_symbolic.describe_sources(s.sources)}" for s in env.symbols),
                       ", ".join(env.describe_guards()) or "none")
        return traced

    def compile_for(key, leaves, spec):
        # Trace for training: whether an output needs a gradient is known only after the
        # function ran (it may switch grad mode itself); a trace whose outputs need none
        # (nothing required grad, or grad mode was off) becomes an inference graph.
        training = True
        if compiled._aot_id is None:
            compiled._aot_id = next(AOT_COUNTER)
        sym = symbolic_spec(key, leaves, spec)
        compiled._symbolic_raised = False
        if sym is not None:
            with suspended_hooks():
                traced = trace_symbolic(key, leaves, spec, sym, training)
            if traced is not None:
                entry = _compile(traced, fw_compiler, bw_compiler, partition_fn, inference_compiler,
                                 compiled._aot_id, name)
                sym_entry = _symbolic.SymbolicEntry(entry, traced, sym, spec is not None, key, leaves)
                symbolic_entries.append(sym_entry)
                cache[("symbolic", len(symbolic_entries))] = entry
                return entry
        try:
            with suspended_hooks():     # the user's saved-tensor hooks see the compiled graph run, not its trace
                traced = trace_function(fn, leaves, spec, training, keep_inference_input_mutations,
                                        decompositions)
        except BackwardNotTraceable as e:
            # eager raises this only if a backward reaches the modified tensor: the function
            # runs uncompiled for this signature, with eager's autograd
            _log.debug("aot_function(%s) runs uncompiled for this signature: its backward would "
                       "raise: %s", name, e)
            entry = cache[key] = _UncompiledEntry(fn, spec)
            return entry
        concrete_keys.append(key)
        if compiled._symbolic_raised:
            compiled._symbolic_raised = False
            compiled._no_symbolic = True
        if traced.specialized:
            indices = tuple(sorted(traced.specialized))
            groups = specialized.setdefault(key, [])
            if indices not in groups:
                groups.append(indices)
            key = specialized_key(key, indices, leaves)
        entry = cache[key] = _compile(traced, fw_compiler, bw_compiler, partition_fn, inference_compiler,
                                      compiled._aot_id, name)
        return entry

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        key, leaves, spec = call_key(args, kwargs)
        entry = cache.get(key)
        if entry is None and specialized:
            for indices in specialized.get(key, ()):
                entry = cache.get(specialized_key(key, indices, leaves))
                if entry is not None:
                    break
        if entry is None and symbolic_entries:
            # the key holds every size; the int arguments a symbol may be read from do not
            memo_key = (key, tuple(v for v in leaves if type(v) is int))
            entry = symbolic_memo.get(memo_key)
            if entry is None:
                for sym_entry in symbolic_entries:
                    if sym_entry.fits(key, leaves):
                        entry = sym_entry.compiled
                        if len(symbolic_memo) >= 1024:
                            symbolic_memo.clear()
                        symbolic_memo[memo_key] = entry
                        break
        if entry is None:
            if _dispatch._modes:
                # called while an outer trace records ops (make_fx, or an enclosing aot_function
                # tracing this one): the outer graph gets the function's ops, no graph of its own
                return fn(*args, **kwargs)
            if compiled._on_miss is not None:
                compiled._on_miss(args, kwargs)
            if len(cache) >= CACHE_SIZE_LIMIT:
                if not compiled._warned:
                    compiled._warned = True
                    warnings.warn(
                        f"aot_function({getattr(fn, '__qualname__', fn)!r}) was traced for "
                        f"{CACHE_SIZE_LIMIT} different signatures (argument shapes, dtypes, "
                        "requires_grad, non-tensor values); calls with a new signature now run "
                        "uncompiled. Pass values that change on every call as tensors.")
                return fn(*args, **kwargs)
            try:
                entry = compile_for(key, leaves, spec)
            except Exception as e:
                if isinstance(e, DynjitError) or not raised_by_an_op(e):
                    raise
                # the function's own error on this call's inputs (mismatched sizes, an index out
                # of range): eagerly it raises after the writes and draws before it, so it runs
                # eagerly, as it would uncompiled
                return fn(*args, **kwargs)
        try:
            return entry(leaves)
        except Exception as e:
            if not getattr(entry, "replays_eagerly", False) or not raised_by_an_op(e):
                raise
        # The graph raised on this call's data before the input writes it defers were copied
        # back: eager would have written them before the failing op, so the function runs
        # eagerly on the untouched inputs, writes and the same error included.
        return fn(*args, **kwargs)

    compiled._cache = cache
    compiled._symbolic_entries = symbolic_entries
    compiled._no_symbolic = False
    compiled._symbolic_raised = False    # the last symbolic trace raised (see compile_for)
    compiled._dynamic_hint = None  # (tensor leaves, {int leaf: (tensor leaf, dim)}): see symbolic.py
    compiled._warned = False
    compiled._aot_id = None
    compiled._on_miss = None       # called with (args, kwargs) before a new signature is traced
    compiled._compile_for = lambda *args, **kwargs: compile_for(*call_key(args, kwargs))
    return compiled


class _UncompiledEntry:
    """A cache entry that calls the function itself (a signature AOT cannot trace ahead of
    time, see BackwardNotTraceable)."""

    def __init__(self, fn, spec):
        self.fn, self.spec = fn, spec

    def __call__(self, leaves):
        if self.spec is None:
            return self.fn(*leaves)
        args, kwargs = tree_unflatten(self.spec, list(leaves))
        return self.fn(*args, **kwargs)


class AOTModule:
    """What aot_module returns: calls the module through its compiled function; other
    attributes (parameters, train/eval ...) are the original module's."""

    def __init__(self, mod, compiled, names):
        self.__dict__.update(orig_module=mod, _compiled=compiled, _names=names)

    def _state(self):
        mod = self.orig_module
        return [p for _, p in mod.named_parameters()] + [b for _, b in mod.named_buffers()]

    def __call__(self, *args, **kwargs):
        return self._compiled(*self._state(), *args, **kwargs)

    forward = __call__

    def __getattr__(self, name):
        return getattr(self.__dict__["orig_module"], name)


def aot_module(mod, fw_compiler, bw_compiler=None, **kwargs):
    """aot_function for an nn.Module: its parameters and buffers become graph inputs
    (first the parameters, then the buffers, in `named_parameters` / `named_buffers`
    order), so the graph never holds them as constants and updates to them are seen."""
    from .functional_call import functional_call
    names = [n for n, _ in mod.named_parameters()] + [n for n, _ in mod.named_buffers()]
    n = len(names)

    def flat_fn(*args, **kw):
        return functional_call(mod, dict(zip(names, args[:n])), tuple(args[n:]), kw)
    flat_fn.__name__ = type(mod).__name__ + "_forward"
    from ..fx.graph_module import GraphModule
    if isinstance(mod, GraphModule) and n == 0:
        flat_fn._aot_graph_module = mod     # traced node by node (keeps nodes' stack traces)
    compiled = aot_function(flat_fn, fw_compiler, bw_compiler, num_params_buffers=n, **kwargs)
    return AOTModule(mod, compiled, names)


def aot_module_simplified(mod, example_inputs, fw_compiler, bw_compiler=None,
                          partition_fn=default_partition, decompositions=None,
                          keep_inference_input_mutations=False, inference_compiler=None, dynamic=False):
    """The entry backends use: compile `mod` (a GraphModule taking flat tensors, or any
    callable; an nn.Module's parameters and buffers are lifted to inputs) for
    `example_inputs` right away, so compile errors surface at compile time.
    Returns a callable taking the same inputs."""
    options = dict(partition_fn=partition_fn, decompositions=decompositions,
                   keep_inference_input_mutations=keep_inference_input_mutations,
                   inference_compiler=inference_compiler, dynamic=dynamic)
    n_state = 0
    if hasattr(mod, "named_parameters") and hasattr(mod, "named_buffers"):
        aot_mod = aot_module(mod, fw_compiler, bw_compiler, **options)
        compiled = aot_mod._compiled
        n_state = len(aot_mod._state())

        def forward(*args):
            return compiled(*aot_mod._state(), *args)
    else:
        forward = compiled = aot_function(mod, fw_compiler, bw_compiler, **options)
    compiled._dynamic_hint = _frontend_dynamic_hint(mod, n_state, fw_compiler)
    if hasattr(mod, "named_parameters") and hasattr(mod, "named_buffers"):
        if example_inputs is not None:
            compiled._compile_for(*aot_mod._state(), *example_inputs)
    else:
        if example_inputs is not None:
            compiled._compile_for(*example_inputs)
    if example_inputs is not None:
        compiled._on_miss = _assumption_check(compiled, list(example_inputs), n_state)
    forward._cache = compiled._cache
    forward.zero_grad = lambda: None
    forward.named_parameters = lambda: iter(())
    forward.named_buffers = lambda: iter(())
    return forward


def _frontend_dynamic_hint(mod, n_state, compiler=None):
    """For a graph of the dynjit.compile frontend: its inputs that are arguments of the
    compiled function (leaf indices), and the int inputs read from their sizes (`x.shape[0]`:
    leaf -> (tensor leaf, dim)); None for other modules (see symbolic.py)."""
    from ..fx.graph_module import GraphModule
    if not isinstance(mod, GraphModule):
        return None
    placeholders = [n for n in mod.graph.nodes if n.op == "placeholder"]
    tensors, by_expr, reads = [], {}, {}
    for j, n in enumerate(placeholders):
        source = n.meta.get("source")
        if type(source).__name__ == "LocalSource" and hasattr(n.meta.get("val"), "dtype"):
            tensors.append(n_state + j)
            by_expr[source.expr()] = n_state + j
    for j, n in enumerate(placeholders):
        source = n.meta.get("source")
        base = getattr(source, "base", None)
        if type(source).__name__ == "ItemSource" and type(source.key) is int and \
                getattr(base, "attr", None) == "shape" and getattr(base, "base", None) is not None:
            leaf = by_expr.get(base.base.expr())
            if leaf is not None:
                reads[n_state + j] = (leaf, source.key)
    if not tensors:
        return None
    if not reads:
        # No size read as a number: the frontend's first graph for a frame (its sizes are
        # guarded, so a symbolic trace would only cost more), or its dynamic graph for code
        # that reads no size (an MLP's forward), which is the first graph's code again.
        # Symbolic for a graph whose code was compiled before, without the constants a
        # first graph holds for the sizes it read (`x.view(2, -1)`).
        code = (mod.code, id(compiler))
        if code not in _frontend_graphs_seen:
            if len(_frontend_graphs_seen) >= 256:
                _frontend_graphs_seen.clear()
            _frontend_graphs_seen.add(code)
            return None
        sizes = {n for j in tensors for n in placeholders[j - n_state].meta["val"].shape if n >= 2}
        for n in mod.graph.nodes:
            if n.op in ("call_function", "call_method") and _holds_int_in(n.args, sizes):
                return None
    return tensors, reads


# (code, forward compiler) of the frontend graphs traced so far without a size read as a number
_frontend_graphs_seen = set()


def _holds_int_in(value, sizes):
    if type(value) is int:
        return value in sizes
    if isinstance(value, (tuple, list)):
        return any(_holds_int_in(v, sizes) for v in value)
    return False


def _assumption_check(compiled, example_inputs, n_state):
    """What aot_module_simplified assumed of its example inputs that a new trace cannot undo
    silently: that an input is the same tensor as an earlier one (the graph takes it once),
    and that an input needs no gradient (the graph computes none for it). Its caller (the
    dynjit.compile frontend) guards on both; a call that breaks them is a caller's bug."""
    dupes = []
    for j, x in enumerate(example_inputs):
        if isinstance(x, Tensor):
            i = next(i for i, y in enumerate(example_inputs) if y is x)
            if i != j:
                dupes.append((i, j))
    no_grad = [j for j, x in enumerate(example_inputs) if isinstance(x, Tensor) and not x.requires_grad]
    n_inputs = len(example_inputs)       # the inputs themselves are not kept

    def check(args, kwargs):
        user = args[n_state:]
        if len(user) != n_inputs:
            return
        for i, j in dupes:
            if user[j] is not user[i]:
                raise AssertionError(
                    f"At compilation time, graph {compiled._aot_id} was compiled under the assumption "
                    f"that input {j} would be a duplicate of input {i}, but at runtime this was not "
                    "the case. aot_module_simplified compiles once, for its example inputs; compile "
                    "again for inputs that are not the same tensor.")
        for j in no_grad:
            if isinstance(user[j], Tensor) and user[j].requires_grad:
                raise AssertionError(
                    f"At compilation time, graph {compiled._aot_id} was compiled under the assumption "
                    f"that input {j} would not require grad, but at runtime this was not the case. "
                    "aot_module_simplified compiles once, for its example inputs, and that graph "
                    "computes no gradient for this input; compile again with an input that "
                    "requires grad.")
    return check
