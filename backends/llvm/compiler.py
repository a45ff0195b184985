"""compile_graph: GraphModule + example inputs -> a callable running fused kernels.

Lowering (lowering.py) yields the kernels and the wrapper's lines; the kernels
become one LLVM module (codegen.py), compiled or fetched from the cache
(jit.py); the wrapper is compiled with the kernels' ctypes functions in its
globals. The result is a plain function; its attributes show what was made:
`.source` (the wrapper), `.kernels`, `.ir` (LLVM IR), `.stats`.
"""
import ctypes
import operator

import numpy as np

from dynjit.autograd.grad_mode import no_grad, state as _grad_state
from dynjit.fx.symbolic_shapes import sym_size_int

from . import jit
from .codegen import build_module, size_slots, structure_key
from .lowering import INT64_MAX, INT64_MIN, NUMBER_ARITHMETIC, Lowering, _is_check_specialized
from .runtime import MAX_SPECIALIZATIONS, RUNTIME_GLOBALS, make_function
from .threads import num_threads


def _signature(args, value_keyed):
    """What a wrapper is compiled for: each tensor's shape, strides and dtype; each number's
    type, and its value where a wrapper guards it (`value_keyed`: those inputs' indices)."""
    key = [value_keyed]
    for i, a in enumerate(args):
        data = getattr(a, "_data", None)
        if isinstance(data, np.ndarray):
            key.append((data.shape, data.strides, data.dtype.str))
        elif isinstance(a, (int, float, bool, str, type(None))):
            key.append((type(a), a) if i in value_keyed or not _is_number(a) else type(a))
        else:
            key.append(type(a))
    return tuple(key)


def _is_number(a):
    return type(a) is int or type(a) is float


def kernel_function(address, nargs, packed, scalar_kinds=()):
    """The kernel at `address` as a ctypes function (see codegen's signature): its arrays
    as `nargs` arguments or `packed` into one array of them (runtime.pack_args), its sizes
    array, its scalar arguments (a double or an int64 each), start, end, chunk."""
    arrays = [ctypes.POINTER(ctypes.py_object)] if packed else [ctypes.py_object] * nargs
    scalars = [ctypes.c_double if kind == "f64" else ctypes.c_int64 for kind in scalar_kinds]
    proto = ctypes.CFUNCTYPE(None, *arrays, ctypes.py_object, *scalars,
                             ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    return proto(address)


def _is_op_level(gm):
    """Whether every call in the graph is a registry op (what make_fx / AOT produce)."""
    from dynjit.ops.registry import OpDef
    for n in gm.graph.nodes:
        if n.op in ("call_method", "call_module"):
            return False
        if (n.op == "call_function" and not isinstance(n.target, OpDef) and n.target is not operator.getitem
                and n.target not in NUMBER_ARITHMETIC and not _is_check_specialized(n.target)
                and n.target is not sym_size_int):     # a size the forward saves (dynjit.aot.partition)
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
    from dynjit import random as _random
    from dynjit.fx import make_fx
    with _random.private_state():       # other threads' draws are not rewound (see random.py)
        state = dynjit.get_rng_state()
        try:
            with no_grad():
                return make_fx(gm)(*example_inputs)
        finally:
            dynjit.set_rng_state(state)


# the sizes of one layout pattern whose wrappers are kept (the least recently compiled is
# dropped past this: compiling it again costs a lowering, its kernels stay loaded)
MAX_SIZES_PER_PATTERN = 64


def _stride_class(n, stride, contiguous_stride):
    if n <= 1:
        return "-"
    if stride == 0:
        return "b"          # broadcast
    if stride == contiguous_stride:
        return "c"
    return "n" if stride < 0 else "s"


def layout_pattern(args, value_keyed=frozenset()):
    """The signature without sizes: per tensor its dtype, rank, which dims have size 0, 1 or
    more, and per dim whether its stride is 0, contiguous, negative or other; numbers by
    type and value. Calls whose signatures differ only in sizes share one pattern (and
    their kernels: the kernels take sizes as arguments)."""
    key = [value_keyed]
    for i, a in enumerate(args):
        data = getattr(a, "_data", None)
        if isinstance(data, np.ndarray):
            shape, item = data.shape, data.itemsize
            contiguous, acc = [], item
            for n in reversed(shape):
                contiguous.append(acc)
                acc *= max(n, 1)
            contiguous.reverse()
            key.append((data.dtype.str, tuple(min(n, 2) for n in shape),
                        tuple(_stride_class(n, st, c) for n, st, c in zip(shape, data.strides, contiguous))))
        elif isinstance(a, (int, float, bool, str, type(None))):
            key.append((type(a), a) if i in value_keyed or not _is_number(a) else type(a))
        else:
            key.append(type(a))
    return tuple(key)


def compile_graph(gm, example_inputs):
    """Compile `gm` for inputs laid out like `example_inputs`. Other sizes, layouts, dtypes
    or scalar values are lowered again when they are first seen; kernels depend only on
    the layout pattern (layout_pattern), so another size of a pattern already seen reuses
    its compiled kernels (no LLVM compile). Up to MAX_SPECIALIZATIONS patterns are
    compiled; the graph runs eagerly for new ones after that. With grad mode on and an
    input that requires grad, the call runs the graph eagerly so that autograd records it
    (use the `llvm` backend, which goes through AOT autograd, to compile training graphs)."""
    specializations = {}        # exact signature -> wrapper
    patterns = {}               # layout pattern -> [exact signatures, oldest first]
    value_keyed = frozenset()   # number inputs some wrapper guards by value (see Lowering)

    def compile_one(args):
        nonlocal value_keyed
        fn = _compile_one(gm, args, respecialize)
        value_keyed = value_keyed | fn.specialized_numbers
        return fn

    def respecialize(*args):
        if _grad_state.enabled and any(getattr(a, "_requires_grad", False) for a in args):
            return gm(*args)
        if any(type(a) is int and not INT64_MIN <= a <= INT64_MAX for a in args):
            return gm(*args)        # no kernel takes it (eager says what such an int does)
        key = _signature(args, value_keyed)
        fn = specializations.get(key)
        if fn is None:
            if layout_pattern(args, value_keyed) not in patterns and len(patterns) >= MAX_SPECIALIZATIONS:
                return gm(*args)
            fn = compile_one(args)
            key = _signature(args, value_keyed)
            pattern = layout_pattern(args, value_keyed)
            sizes = patterns.setdefault(pattern, [])
            if len(sizes) >= MAX_SIZES_PER_PATTERN:
                specializations.pop(sizes.pop(0), None)
            specializations[key] = fn
            sizes.append(key)
        return fn(*args)

    first = compile_one(example_inputs)
    key = _signature(example_inputs, value_keyed)
    specializations[key] = first
    patterns[layout_pattern(example_inputs, value_keyed)] = [key]
    first.specializations = specializations
    first.patterns = patterns
    return first


# compiled modules by the structure of their kernels (codegen.structure_key): another size of
# a layout pattern gets its kernels' code and addresses from here, its sizes from size_slots,
# without generating the IR again (a few hundred ms for a row-reduction kernel)
_MODULES = {}
MAX_CACHED_MODULES = 512


def _load_kernels(kernels):
    """(IR text, {kernel name: address}) of a graph's kernels, filling each kernel's
    size_values."""
    key = tuple(structure_key(k) for k in kernels)
    hit = _MODULES.get(key)
    if hit is not None:
        for k in kernels:
            k.size_values = [value for _, value, _ in size_slots(k)]
        return hit
    names = [k.name for k in kernels]
    ir_text = str(build_module(kernels, names))
    addresses = jit.load(ir_text, names)
    if len(_MODULES) >= MAX_CACHED_MODULES:
        _MODULES.pop(next(iter(_MODULES)))
    _MODULES[key] = (ir_text, addresses)
    return ir_text, addresses


def _baked_numbers(gm, op_gm, example_inputs):
    """Number inputs that the frontend's graph uses but the retraced op-level graph does not:
    a tracer that does not trace numbers made them constants, so they are guarded by value."""
    if op_gm is gm:
        return set()
    before = [n for n in gm.graph.nodes if n.op == "placeholder"]
    after = [n for n in op_gm.graph.nodes if n.op == "placeholder"]
    return {i for i, (b, a, x) in enumerate(zip(before, after, example_inputs))
            if _is_number(x) and b.users and not a.users}


def _compile_one(gm, example_inputs, respecialize):
    op_gm = to_op_level(gm, example_inputs)
    low = Lowering(op_gm, example_inputs, num_threads(), _baked_numbers(gm, op_gm, example_inputs)).run()
    globs = dict(RUNTIME_GLOBALS)
    globs.update(low.globals)
    globs["_respecialize"] = respecialize
    globs["_grad_state"] = _grad_state
    ir_text = ""
    if low.kernels:
        ir_text, addresses = _load_kernels(low.kernels)
        for i, k in enumerate(low.kernels):
            globs[f"_k{i}"] = kernel_function(addresses[k.name], k.nargs, k.packed,
                                              [kind for _, kind in k.scalars])
            globs[f"_sz{i}"] = np.array(k.size_values or [0], np.int64)
    guards = list(low.guards)
    tensor_params = [p for p, n in zip(low.params, low.examples) if hasattr(n, "_requires_grad")]
    if tensor_params:
        guards.append("(_grad_state.enabled and (" + " or ".join(f"{p}._requires_grad" for p in tensor_params) + "))")
    fn, src = make_function("compiled_graph", low.params, low.lines, guards, low.prologue, globs)
    fn.source = src
    fn.kernels = low.kernels
    fn.ir = ir_text
    fn.stats = low.stats
    fn.specialized_numbers = frozenset(low.specialized)
    return fn
