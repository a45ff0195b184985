"""The one dispatcher: the only path from a Tensor method or `dynjit.<fn>` to a kernel.

`dispatch(op, args, kwargs)` hands the call to the innermost active dispatch
mode if there is one (graph tracing records nodes there), else runs it
eagerly: unwrap tensors, run the numpy kernel, wrap the outputs with the
registry's dtype rule, and, when grad mode is on and an input requires grad,
record the backward node. A pointwise kernel runs in PyTorch's computation
dtype: its tensor operands are converted to it first (numpy would otherwise
compute in its own promoted dtype: acos of int8 in float16, int64 + float32 in
float64). In-place ops run their functional op and write the result back;
views share storage and a version counter with their base.
"""
import os
import threading

import numpy as np

from .. import _dtype
from .._dtype import result_type
from .vocab import POINTWISE, VIEW, INPLACE, FLOAT, BOOL, KEEP, PROMOTE, REAL, REAL_FLOAT
from .._dtype import round_to_bfloat16, is_bfloat16_np, dtype_of_np

class _ModeStack(threading.local):
    """The dispatch-mode stack, innermost last, per thread: a mode one thread enters (make_fx,
    vmap, a forward-AD level, a profiler) sees only that thread's ops. It reads and writes
    like a list."""

    def __init__(self):
        self.items = []

    def append(self, mode):
        self.items.append(mode)

    def pop(self):
        return self.items.pop()

    def extend(self, modes):
        self.items.extend(modes)

    def clear(self):
        self.items.clear()

    def __bool__(self):
        return bool(self.items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __setitem__(self, index, value):
        self.items[index] = value

    def __delitem__(self, index):
        del self.items[index]

    def __contains__(self, mode):
        return mode in self.items

    def __getattr__(self, name):          # the rest of list's methods (index, insert, remove ...)
        return getattr(self.items, name)


_modes = _ModeStack()
_snapshot_observers = []   # tracers told about the copy an in-place op saves for backward
_mutation_observers = []   # fn(tensor) before an in-place op writes `tensor` (allow_mutation_on_saved_tensors)


class _GradState(threading.local):
    """Grad mode, per thread: whether the dispatcher records autograd history (the
    switches are dynjit.autograd.grad_mode's no_grad, inference_mode, ...)."""

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.view_replay = False


grad_state = _GradState()

INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. To work around you can make a clone to "
    "get a normal tensor and use it in autograd.")


# -- the layers above ops plug in here --------------------------------------------------
# ops imports nothing above it. dynjit/__init__.py hands in the tensor class and autograd's
# entry points, once, right after importing them, before any op runs.

Tensor = None          # the tensor class (install_tensor_class)
_rebase_view = None    # autograd.graph.rebase_view (install_autograd)


def install_tensor_class(cls):
    """The class the dispatcher wraps kernel outputs in and recognizes tensors by."""
    global Tensor
    Tensor = cls


# Sparse tensors (ops/sparse.py) install their router here; the dispatcher asks it only once
# a sparse tensor exists, so that programs without any pay nothing for the layout check.
sparse_seen = False
_sparse_route = None
_sparse_inplace = None


def install_sparse_router(route, inplace):
    """`route(op, args)`: the op to run instead of `op` when an operand is sparse (None when
    none is); it raises PyTorch's error for ops without a sparse kernel. `inplace(op, args)`
    runs the in-place op `op` on a sparse `self`."""
    global _sparse_route, _sparse_inplace
    _sparse_route, _sparse_inplace = route, inplace


def install_autograd(make_backward_class, rebase_view):
    """Autograd's part of eager execution: `make_backward_class(op)` builds the node class
    an op's derivative runs in; `rebase_view(view, node)` gives the base of a view that an
    in-place op wrote through its new history."""
    global _rebase_view
    _rebase_view = rebase_view
    from .registry import set_backward_class_factory
    set_backward_class_factory(make_backward_class)


class DispatchMode:
    """Base class for modes that intercept every op (graph tracing, functionalization).

    Subclasses override `__dispatch__(op, args, kwargs)`. Inside it, the mode
    is popped, so calling `op(*args)` runs the next mode or eager execution.
    """

    def __enter__(self):
        _modes.append(self)
        return self

    def __exit__(self, *exc):
        popped = _modes.pop()
        assert popped is self, "dispatch modes exited out of order"
        return False

    def __dispatch__(self, op, args, kwargs):
        raise NotImplementedError


def dispatch(op, args, kwargs):
    stack = _modes.items
    if stack:
        mode = stack.pop()
        try:
            return mode.__dispatch__(op, args, kwargs)
        finally:
            stack.append(mode)
    return op.impl(op, args, kwargs)


def current_modes():
    return tuple(_modes.items)


# -- eager execution ------------------------------------------------------

def _unwrap(op, args):
    """numpy values for the kernel, plus the tensor inputs (in param order)."""
    lists = op.tensor_lists
    if not lists:
        tensors = [a for a in args if isinstance(a, Tensor)]
        if not tensors:
            return list(args), tensors
        return [a._data if isinstance(a, Tensor) else a for a in args], tensors
    vals = list(args)
    tensors = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            vals[i] = a._data
            tensors.append(a)
        elif i in lists:
            vals[i] = [t._data if isinstance(t, Tensor) else t for t in a]
            tensors.extend(t for t in a if isinstance(t, Tensor))
    return vals, tensors


# numpy's floating-point error state is a context variable (numpy >= 2): a kernel runs with
# the current state's errors ignored, as under np.errstate(all="ignore"), but without making
# an errstate object and its state per call (half the cost of a small op's kernel call).
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _np_error_state, _make_extobj
except ImportError:         # numpy 1.x: np.errstate itself
    _np_error_state = None
_quiet_state = (None, None)     # (a numpy error state, the same with every error ignored)


def _run_quiet(kernel, vals):
    """kernel(*vals) under np.errstate(all="ignore")."""
    global _quiet_state
    if _np_error_state is None:
        with np.errstate(all="ignore"):
            return kernel(*vals)
    current = _np_error_state.get()
    known = _quiet_state
    if known[0] is current:
        quiet = known[1]
    else:       # built from the current state: keeps its buffer size and error callback
        quiet = _make_extobj(all="ignore")
        _quiet_state = (current, quiet)
    token = _np_error_state.set(quiet)
    try:
        return kernel(*vals)
    finally:
        _np_error_state.reset(token)


def pointwise_dtypes(op, args):
    """(computation dtype, output dtype) of a pointwise op under PyTorch promotion: the
    tensor operands are converted to the first, the kernel's result to the second."""
    dims, zero, scalars = [], [], []
    for i in op.operands:
        a = args[i]
        if isinstance(a, Tensor):
            (dims if a._data.ndim else zero).append(dtype_of_np(a._data.dtype))
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
    d = result_type(dims, zero, scalars)
    if d is not None and d._category == 3 and not op.complex_ok:
        raise complex_refused(op, d)
    rule = op.dtype_rule
    if (rule == FLOAT or rule == REAL_FLOAT) and d._category < 2:
        d = _dtype.get_default_dtype()
    elif (rule == REAL or rule == REAL_FLOAT) and d._category == 3:
        return d, d.to_real()
    elif rule == BOOL:
        return d, _dtype.bool_          # comparisons compare in the promoted dtype
    elif rule == KEEP:
        for a in args:
            if isinstance(a, Tensor):
                d = dtype_of_np(a._data.dtype)
                break
    return d, d


def complex_refused(op, d):
    """The error of an op that PyTorch does not implement for complex tensors."""
    if op.complex_error is not None:
        return op.complex_error(d) if callable(op.complex_error) else NotImplementedError(op.complex_error)
    return NotImplementedError(f'"{op.name}_cpu" not implemented for '
                               f"'{_dtype.scalar_type_name(d)}'")


def check_complex_operands(op, tensors):
    """Raise the op's error if it refuses complex tensors and one of `tensors` is complex."""
    for t in tensors:
        if t._data.dtype.kind == "c":
            raise complex_refused(op, dtype_of_np(t._data.dtype))


def round_bfloat16_outputs(op, args, tensors, out):
    """bfloat16 computes in float32: round a float32 result to bfloat16 when every floating
    input is bfloat16 (or the result is already tagged bfloat16, as a factory's is), unless
    the op was given an explicit dtype (x.to(float32), sum(dtype=...))."""
    i = op.index.get("dtype")
    explicit = i is not None and args[i] is not None
    if explicit:
        want = _dtype.to_dtype(args[i]) is _dtype.bfloat16
    else:
        floats = [t._data.dtype for t in tensors if t._data.dtype.kind == "f"]
        want = bool(floats) and all(is_bfloat16_np(d) for d in floats)
    return _round_tree(out, want)


def _dtype_argument(op, args):
    i = op.index.get("dtype")
    if i is None or args[i] is None:
        return None
    return _dtype.to_dtype(args[i])


def _round_tree(out, want):
    if isinstance(out, np.generic):
        out = np.asarray(out)
    if isinstance(out, np.ndarray):
        if out.dtype == np.float32 and (want or is_bfloat16_np(out.dtype)):
            return round_to_bfloat16(out)
        return out
    if isinstance(out, (tuple, list)):
        items = [_round_tree(o, want) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


def pointwise_dtype(op, args):
    """Output dtype of a pointwise op under PyTorch promotion."""
    return pointwise_dtypes(op, args)[1]


def _convert_operands(op, vals, compute):
    """Convert the array operands in `vals` (in place) to the computation dtype. KEEP ops
    (masked_fill) convert what they need themselves: their mask stays bool."""
    if op.operand_check is not None:
        op.operand_check(*vals)
    if op.dtype_rule is KEEP:
        return
    np_dtype = compute.np
    for i in op.operands:
        a = vals[i]
        if type(a) is np.ndarray and a.dtype != np_dtype:
            vals[i] = a.astype(np_dtype)


_NP_BOOL = np.dtype(np.bool_)
_NP_F32, _NP_F64, _NP_I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def _fit_int_scalars(op, vals):
    """Python ints that do not fit the integer computation dtype, as PyTorch treats them
    (see int_scalars.py). An int in 0..127 fits every integer dtype: the common case (a float,
    or a small int) costs one look at each operand."""
    for i in op.operands:
        v = vals[i]
        if type(v) is int and not 0 <= v <= 127:
            from .int_scalars import fit_int_scalars
            fit_int_scalars(op, vals)
            return


def _as_array(x, np_dtype):
    if np_dtype.metadata is not None:       # bfloat16: computed in float32, rounded
        return round_to_bfloat16(x)
    if type(x) is not np.ndarray:
        return np.asarray(x, dtype=np_dtype)
    if x.dtype != np_dtype or x.dtype.metadata is not None:    # (numpy keeps an operand's tag)
        return x.astype(np_dtype)
    return x


def _run_pointwise(op, args, vals):
    """A pointwise op's kernel on `vals` (args with tensors unwrapped), its output an array
    in the op's result dtype. The common case, operands of one plain dtype (and Python
    numbers that keep it), computes in that dtype; the dtype rule runs only when they differ."""
    np_dtype = None
    uniform = True
    scalar = 0   # highest category among Python scalar operands (1 int, 2 float)
    for i in op.operands:
        a = vals[i]
        if type(a) is np.ndarray:
            if np_dtype is None:
                np_dtype = a.dtype
                if np_dtype.kind == "c" or np_dtype.metadata is not None:
                    uniform = False     # complex and bfloat16 take the checked path
            elif a.dtype is not np_dtype:
                # (numpy's dtype objects of plain arrays are singletons; a bfloat16 tag
                # makes another object that compares equal to float32's)
                uniform = False
        elif type(a) is float:
            scalar = 2
        elif type(a) is int:
            scalar = scalar or 1
        elif a is not None:
            uniform = False
    if scalar and uniform and np_dtype is not None:
        # a scalar keeps the tensor's dtype unless it is of a higher category
        kind = np_dtype.kind
        uniform = kind == "f" or (scalar == 1 and kind in "iu")
    rule = op.dtype_rule
    # no tensor operand (where(cond, 1.0, 0)): the scalars promote as wrapped numbers,
    # which only result_type knows (numpy would compute 1.0 and 0 in float64)
    checked = False
    if uniform and np_dtype is not None and (rule is PROMOTE or rule is REAL or (
            (rule is FLOAT or rule is REAL_FLOAT) and np_dtype.kind == "f")):
        want = np_dtype         # computed and returned in the operands' own dtype
    elif uniform and rule is BOOL:
        want = _NP_BOOL
    else:
        compute, result = pointwise_dtypes(op, args)
        _convert_operands(op, vals, compute)
        want = result.np
        checked = True          # (a bfloat16 result is rounded by _as_array)
    if scalar:
        _fit_int_scalars(op, vals)
    out = op.kernel(*vals)
    if checked or type(out) is not np.ndarray or out.dtype is not want:     # (identity: see above)
        out = _as_array(out, want)
    return out


def run_kernel(op, args):
    """Run the numpy kernel; return (outputs as arrays or a tuple/list of them, tensors)."""
    vals, tensors = _unwrap(op, args)
    if op.kind is POINTWISE:
        return _run_pointwise(op, args, vals), tensors
    special = False         # a complex or bfloat16 operand (one pass; rare)
    for t in tensors:
        d = t._data.dtype
        if d is _NP_F32 or d is _NP_F64 or d is _NP_I64:
            continue
        if d.kind == "c" or d.metadata is not None:
            special = True
            break
    if special and not op.complex_ok:
        check_complex_operands(op, tensors)
    if op.kind is VIEW:         # (no arithmetic: no floating-point errors to silence)
        return op.kernel(*vals), tensors
    out = _run_quiet(op.kernel, vals)
    if not op.aliases_input and (
            special or ("dtype" in op.index and _dtype_argument(op, args) is _dtype.bfloat16)):
        out = round_bfloat16_outputs(op, args, tensors, out)
    return out, tensors


def _wrap(op, out, tensors):
    if type(out) is np.ndarray or isinstance(out, np.ndarray):
        return Tensor._make(out)
    if isinstance(out, (tuple, list)):
        items = [_wrap(op, o, tensors) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    if isinstance(out, np.generic):
        return Tensor._make(np.asarray(out))
    if getattr(out, "_is_tensor_data", False):     # a sparse tensor's storage (ops/sparse.py)
        return Tensor._make(out)
    return out


def eager(op, args, kwargs):
    if kwargs or len(args) != op.nparams:
        args = op.normalize(args, kwargs)
    if sparse_seen and op.sparse is not op:
        routed = _sparse_route(op, args)
        if routed is not None:
            return routed.impl(routed, args, {})
    if op.kind is POINTWISE:
        result = Tensor._make(_run_pointwise(op, args, [a._data if isinstance(a, Tensor) else a for a in args]))
        if grad_state.enabled and op.backward_cls is not None:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    record(op, args, [t for t in args if isinstance(t, Tensor)], result)
                    break
        return result
    out, tensors = run_kernel(op, args)
    result = _wrap(op, out, tensors)
    if op.kind is VIEW:
        if args[0]._is_inference and not grad_state.inference:
            return _inference_view_outputs(result)
        _mark_views(op, args, result)
    elif op.aliases_input:
        result._version_counter = args[0]._version_counter
    if grad_state.enabled and op.backward_cls is not None:
        for t in tensors:
            if t._requires_grad:
                record(op, args, tensors, result)
                break
    return result


def _mark_views(op, args, result):
    src = args[0]
    outs = result if isinstance(result, (tuple, list)) else (result,)
    base = src._base if src._base is not None else src
    multi = isinstance(result, (tuple, list))
    normal_in_inference = grad_state.inference and not src._is_inference
    # How the view was made, which decides whether it may be written in place later
    # (PyTorch's CreationMeta; a view of such a view inherits it).
    if normal_in_inference:
        new = ("inference",)
    elif not grad_state.enabled and not grad_state.inference:
        new = ("no_grad",)
    else:
        new = None
    prev = src._creation_meta if src._base is not None else None
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and np.may_share_memory(o._data, src._data):
            o._base = base
            o._version_counter = src._version_counter
            # (source, view op, its other args, multi-output?, output index)
            o._view_of = (src, op, args[1:], multi, i)
            if src._meta_ops:
                o._src_meta = len(src._meta_ops)
            o._view_version = o._version_counter[0]     # its grad_fn is current
            meta = new or (("multi", op.backward_cls.__name__ if op.backward_cls else op.name, i)
                           if multi else None)
            if prev is not None and (meta is None or prev[0] == "inference"):
                meta = prev
            o._creation_meta = meta
            if new is not None:
                # like PyTorch: a view made with grad recording off still requires grad
                # when its source does (it has no grad_fn)
                o._requires_grad = src._requires_grad
                if normal_in_inference:
                    o._is_inference = False     # a view of a normal tensor stays normal


def _inference_view_outputs(result):
    """A view op on an inference tensor outside inference mode: like PyTorch, the
    outputs are inference tensors with no view or autograd tracking."""
    for o in (result if isinstance(result, (tuple, list)) else (result,)):
        if isinstance(o, Tensor):
            o._is_inference = True
    return result


def record(op, args, tensors, result):
    """Create the backward node of `op` and attach it to the outputs."""
    if isinstance(result, Tensor) and result._data.dtype.kind not in "fc":
        return      # integer and bool results are not differentiable (x.long(), ...)
    node = op.backward_cls(op, args, tensors, result)
    if isinstance(result, Tensor):
        result._grad_fn = node
        result._requires_grad = True
        if op.saves_result:
            node.save_result(result)
        return
    nondiff = op.nondiff_outputs
    for i, o in enumerate(result):
        if isinstance(o, Tensor) and i not in nondiff and o._data.dtype.kind in "fc":
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True
    if op.saves_result:
        node.save_result(result)


def inplace(op, args, kwargs):
    """In-place op: the functional op's result written back into `self`."""
    args = op.normalize(args, kwargs)
    self = args[0]
    fop = op.functional
    # (an op with no sparse kernel is refused under the in-place op's own name: 'aten::exp_')
    if sparse_seen and fop.sparse is not fop and _sparse_route(op if fop.sparse is None else fop, args) is not None:
        # x.add_(s): the routed op's result written into a dense x (copy_ records the history)
        if type(self._data) is not np.ndarray:
            return _sparse_inplace(op, args)
        return self.copy_(fop(*args))
    needs_grad = grad_state.enabled and fop.backward_cls is not None and any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    check_inplace_allowed(self, needs_grad, op.name)
    if needs_grad and not grad_state.inference:
        for i in fop.saved:
            if isinstance(args[i], Tensor) and args[i]._is_inference:
                raise RuntimeError(INFERENCE_SAVE_MESSAGE)
    out, tensors = run_kernel(fop, args)
    out_dtype = _dtype.from_numpy_dtype(out.dtype)
    if out_dtype._category > self.dtype._category:
        raise RuntimeError(f"result type {out_dtype.name} can't be cast to the desired output "
                           f"type {self.dtype.name} (in-place {op.name} on a {self.dtype.name} tensor)")
    if out.shape != self._data.shape and np.broadcast_shapes(out.shape, self._data.shape) != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(np.broadcast_shapes(out.shape, self._data.shape))}")
    if not self._data.flags.writeable:
        raise RuntimeError(f"{op.name}: this tensor's memory is read-only (it is an expanded view "
                           "or was made from a read-only array); call .clone() first")
    if needs_grad:
        saved_self = self._snapshot() if 0 in fop.saved else self
        if _snapshot_observers and saved_self is not self:
            _snapshot_observers[-1](self, saved_self)
        node_args = (saved_self,) + args[1:]
        node_tensors = [saved_self if t is self else t for t in tensors]
    for observer in _mutation_observers:
        observer(self)
    np.copyto(self._data, out, casting="unsafe")
    self._version_counter[0] += 1
    if needs_grad:
        node = fop.backward_cls(fop, node_args, node_tensors, self)
        if self._base is not None:
            _rebase_view(self, node)
        else:
            self._grad_fn = node
            self._output_nr = 0
            self._requires_grad = True
        if fop.saves_result:
            node.save_result(self)
    return self


def check_inplace_allowed(self, needs_grad, name):
    if self._base is not None:
        base = self._base
        if needs_grad and self._creation_meta is not None:
            raise RuntimeError(view_rebase_message(self, self._creation_meta))
        if base._grad_fn is None and base._requires_grad and grad_state.enabled:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               f"in-place operation ({name}).")
    elif self._grad_fn is None and self._requires_grad and grad_state.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           f"operation ({name}).")
    if not grad_state.inference and self._is_inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed. "
                           "You can make a clone to get a normal tensor before doing inplace update.")


_AMBIGUOUS = ("Given that this use case is ambiguous and error-prone, it is forbidden. You can "
              "clarify your code by moving both the view and the inplace either both inside the "
              "{block} block (if you don't want the inplace to be tracked) or both outside (if you "
              "want the inplace to be tracked).")


def view_rebase_message(view, meta, indirect=False):
    """Why the view `view`, made as `meta` says, may not be modified in place, or (indirect)
    follow an in-place change of its base (PyTorch's words)."""
    kind = meta[0]
    modified = ("its base or another view of its base has been modified inplace" if indirect
                else "is being modified inplace")
    if kind == "multi":
        return (f"Output {meta[2]} of {meta[1]} is a view and {modified}. This view is "
                "the output of a function that returns multiple views. Such functions do not allow "
                "the output views to be modified inplace. You should replace the inplace operation "
                "by an out-of-place one.")
    if kind == "custom":
        return (f"Output {meta[2]} of {meta[1]} is a view and {modified}. This view "
                "was created inside a custom Function (or because an input was returned as-is) and "
                "the autograd logic to handle view+inplace would override the custom backward "
                "associated with the custom Function, leading to incorrect gradients. This behavior "
                "is forbidden. You can fix this by cloning the output of the custom Function.")
    fn = None if indirect else view._grad_fn
    prefix = (f"Output {view._output_nr} of {fn.name()} is a view of a view which was created"
              if fn is not None else "A view was created")
    if indirect:
        modified = "and " + modified
    else:
        modified = "and is being modified inplace"
    if kind == "inference":
        return (f"{prefix} in inference mode {modified} in normal mode. "
                + _AMBIGUOUS.format(block="inference_mode"))
    return (f"{prefix} in no_grad mode {modified} with grad mode enabled. "
            + _AMBIGUOUS.format(block="no_grad"))


def install(op):
    """Give an OpDef its eager entry (the registry calls this as it registers the op)."""
    op.impl = inplace if op.kind == INPLACE else eager



_OPS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def raised_by_an_op(error):
    """Whether `error` was raised inside dynjit's op library (a kernel's error on a call's
    data: an index out of range, mismatched sizes), not by a backend's or a caller's own code."""
    tb = error.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.startswith(_OPS_DIR)
