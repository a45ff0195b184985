"""compile_graph: GraphModule + example inputs -> a callable running fused kernels.

Lowering (lowering.py) yields the kernels and the wrapper's lines; the kernels
become one LLVM module (codegen.py), compiled or fetched from the cache
(jit.py); the wrapper is compiled with the kernels' ctypes functions in its
globals. The result is a plain function; its attributes show what was made:
`.source` (the wrapper), `.kernels`, `.ir` (LLVM IR), `.stats`.
"""
import operator

import numpy as np

from dynjit.autograd.grad_mode import no_grad, state as _grad_state

from . import jit
from .codegen import build_module
from .lowering import Lowering
from .runtime import MAX_SPECIALIZATIONS, RUNTIME_GLOBALS, kernel_function, make_function
from .threads import num_threads


def _signature(args):
    key = []
    for a in args:
        data = getattr(a, "_data", None)
        if isinstance(data, np.ndarray):
            key.append((data.shape, data.strides, data.dtype.str))
        elif isinstance(a, (int, float, bool, str, type(None))):
            key.append((type(a), a))
        else:
            key.append(type(a))
    return tuple(key)


def _is_op_level(gm):
    """Whether every call in the graph is a registry op (what make_fx / AOT produce)."""
    from dynjit.ops.registry import OpDef
    for n in gm.graph.nodes:
        if n.op in ("call_method", "call_module"):
            return False
        if n.op == "call_function" and not isinstance(n.target, OpDef) and n.target is not operator.getitem:
            return False
    return True


def _metas_match(gm, example_inputs):
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, x in zip(placeholders, example_inputs):
        meta = node.meta.get("val")
        data = getattr(x, "_data", None)
        if data is None:
            continue
        if meta is None or tuple(meta.shape) != data.shape or getattr(meta.dtype, "np", None) != data.dtype:
            return False
    return True


def to_op_level(gm, example_inputs):
    """The graph at the op level with metas for these inputs: retraced when it calls
    Tensor methods and Python operators (the frontend's graphs) or was traced for
    other shapes or dtypes. The RNG state is restored, so random ops draw what eager draws."""
    if _is_op_level(gm) and _metas_match(gm, example_inputs):
        return gm
    import dynjit
    from dynjit.fx import make_fx
    state = dynjit.get_rng_state()
    try:
        with no_grad():
            return make_fx(gm)(*example_inputs)
    finally:
        dynjit.set_rng_state(state)


def compile_graph(gm, example_inputs):
    """Compile `gm` for inputs laid out like `example_inputs`; other layouts, dtypes
    or scalar values compile again when they are first seen (up to
    MAX_SPECIALIZATIONS, then the graph runs eagerly for new ones). With grad
    mode on and an input that requires grad, the call runs the graph eagerly so
    that autograd records it (use the `llvm` backend, which goes through AOT
    autograd, to compile training graphs)."""
    specializations = {}

    def respecialize(*args):
        if _grad_state.enabled and any(getattr(a, "_requires_grad", False) for a in args):
            return gm(*args)
        key = _signature(args)
        fn = specializations.get(key)
        if fn is None:
            if len(specializations) >= MAX_SPECIALIZATIONS:
                return gm(*args)
            fn = specializations[key] = _compile_one(gm, args, respecialize)
        return fn(*args)

    first = _compile_one(gm, example_inputs, respecialize)
    specializations[_signature(example_inputs)] = first
    first.specializations = specializations
    return first


def _compile_one(gm, example_inputs, respecialize):
    low = Lowering(to_op_level(gm, example_inputs), example_inputs, num_threads()).run()
    globs = dict(RUNTIME_GLOBALS)
    globs.update(low.globals)
    globs["_respecialize"] = respecialize
    globs["_grad_state"] = _grad_state
    ir_text = ""
    if low.kernels:
        names = [k.name for k in low.kernels]
        ir_text = str(build_module(low.kernels, names))
        addresses = jit.load(ir_text, names)
        for i, k in enumerate(low.kernels):
            globs[f"_k{i}"] = kernel_function(addresses[k.name], k.nargs, k.packed)
    guards = list(low.guards)
    tensor_params = [p for p, n in zip(low.params, low.examples) if hasattr(n, "_requires_grad")]
    if tensor_params:
        guards.append("(_grad_state.enabled and (" + " or ".join(f"{p}._requires_grad" for p in tensor_params) + "))")
    fn, src = make_function("compiled_graph", low.params, low.lines, guards, low.prologue, globs)
    fn.source = src
    fn.kernels = low.kernels
    fn.ir = ir_text
    fn.stats = low.stats
    return fn
