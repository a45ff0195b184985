"""Forward-mode automatic differentiation (PyTorch's torch.autograd.forward_ad).

Inside `dual_level()`, `make_dual(primal, tangent)` gives a tensor that carries a
tangent; every op called on it computes its output's tangent (the Jacobian-vector
product) alongside its value, and `unpack_dual(t)` reads both.

How tangents flow: a dual level is a dispatch mode (dynjit.ops.dispatch), so
the one dispatcher hands it every op while the level is active and nothing
changes (not even a check) when none is. For each op the level runs the op,
then computes the output tangents from the inputs' tangents with

- the op's JVP rule from the registry (`@op.jvp`) when it declares one;
- for view ops: the same view of the input's tangent (the tangent of a view is a
  view of the tangent);
- for pointwise ops: the backward formula applied to the tangents (a pointwise op's
  Jacobian is diagonal, hence its own transpose);
- otherwise the linearization of the op's backward formula: for the backward
  `u -> J^T u` (linear in u), `J t = d/du <J^T u, t>`, one reverse pass through
  the formula, which is written with registered ops and so differentiable.

In-place ops update the tangent in place (a view's tangent is a view of its
base's tangent, so the base sees the update); a tensor without a tangent that an
in-place op writes a dual value into gets one (a view's base gets a zero
tangent first). Tangents are kept per level on the tensor (`_fw_grads`) and are
dropped when the level exits.

Levels nest internally (dynjit.func's jvp of jvp: each level is a mode, the
inner level's tangent computations run through the outer one), but, as in
PyTorch, the public `enter_dual_level` refuses a second public level (one inside
a dynjit.func transform is allowed, as in PyTorch, whose functorch levels are
separate).
"""
import weakref
from collections import namedtuple

import numpy as np

from ..ops import dispatch as _dispatch
from ..ops.dispatch import DispatchMode
from ..ops.registry import registry as R
from ..ops.vocab import INPLACE, POINTWISE, VIEW
from ..tensor import Tensor
from .grad_mode import enable_grad, no_grad, state as _grad_state

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

_levels = []            # the active _Level objects, outermost first
_current_level = -1     # PyTorch's module attribute: the innermost level, -1 when none
_fwd_grad_enabled = [True]
_NOT_LAST = ("Trying to exit a forward AD level that was not the last one that was created. This "
             "is not supported.")


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """What unpack_dual returns: the primal (a new view each call) and the tangent (None
    when the tensor has none at the level)."""


# -- levels ----------------------------------------------------------------------------

class _Level(DispatchMode):
    """One dual level: the dispatch mode that computes tangents, and the tensors holding a
    tangent at this level (weakly, to clear them at exit)."""

    public = True               # entered by enter_dual_level (not a dynjit.func transform)

    def __init__(self, index):
        self.index = index
        self.holders = {}       # id(tensor) -> weakref to it

    def remember(self, t):
        key = id(t)
        if key in self.holders and self.holders[key]() is t:
            return
        holders = self.holders

        def forget(ref, key=key):       # a dead tensor leaves no entry behind
            if holders.get(key) is ref:
                del holders[key]
        holders[key] = weakref.ref(t, forget)

    def clear(self):
        for ref in list(self.holders.values()):    # (callbacks may remove entries meanwhile)
            t = ref()
            if t is not None and t._fw_grads is not None:
                t._fw_grads.pop(self.index, None)
                if not t._fw_grads:
                    t._fw_grads = None
        self.holders.clear()

    def __dispatch__(self, op, args, kwargs):
        if not _fwd_grad_enabled[0]:
            return op(*args, **kwargs)
        return _run_with_tangents(self, op, args, kwargs)

    def __metadata_mutation__(self, kind, tensor, args):
        """An in-place view op (x.t_(), transpose_, unsqueeze_, ...) applies to x's tangent
        too; set_ gives x the source's tangent (or none)."""
        from ..ops.metadata import metadata_mutation
        if not _fwd_grad_enabled[0]:
            return metadata_mutation(kind, tensor, args)
        if kind == "set_":
            out = metadata_mutation(kind, tensor, args)
            source = args[0] if args else None
            tangent = get_tangent(source, self) if isinstance(source, Tensor) else None
            if tangent is not None:
                set_tangent(tensor, tangent, self)
            elif tensor._fw_grads is not None:
                tensor._fw_grads.pop(self.index, None)
            return out
        tangent = get_tangent(tensor, self)
        out = metadata_mutation(kind, tensor, args)
        if tangent is not None:
            metadata_mutation(kind, tangent, args)
        return out


def _enter(allow_nested):
    global _current_level
    if not allow_nested and any(lv.public for lv in _levels):
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = _Level(len(_levels))
    level.public = not allow_nested
    _levels.append(level)
    _dispatch._modes.append(level)
    _current_level = level.index
    return level


def _exit(level):
    global _current_level
    if not _levels or _levels[-1] is not level:
        raise RuntimeError(_NOT_LAST)
    _levels.pop()
    modes = _dispatch._modes
    for i in range(len(modes) - 1, -1, -1):
        if modes[i] is level:
            del modes[i]
            break
    _current_level = len(_levels) - 1
    level.clear()


def enter_dual_level():
    """Enter a new forward-grad level and return its index (PyTorch allows only one)."""
    return _enter(False).index


def exit_dual_level(*, level=None):
    """Exit the innermost forward-grad level (which must be `level` when given), deleting
    every tangent set at it."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if not _levels or level != _levels[-1].index:
        raise RuntimeError(_NOT_LAST)
    _exit(_levels[-1])


class dual_level:
    """Context manager of a forward-AD level: `with dual_level() as level:`; on exit every
    tangent set inside is deleted."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


class _nested_level:
    """A level that may sit inside another (dynjit.func's transforms nest)."""

    def __enter__(self):
        self.level = _enter(True)
        return self.level.index

    def __exit__(self, *exc):
        _exit(self.level)
        return False


def _is_fwd_grad_enabled():
    return _fwd_grad_enabled[0]


class _set_fwd_grad_enabled:
    """Turn forward-grad computation on or off (PyTorch's private helper): usable as a
    plain call or as a context manager that restores the previous state."""

    def __init__(self, mode):
        self.prev = _fwd_grad_enabled[0]
        _fwd_grad_enabled[0] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _fwd_grad_enabled[0] = self.prev
        return False


def _level_object(level):
    if level is None:
        if not _levels:
            return None
        return _levels[-1]
    if not 0 <= level < len(_levels):
        return None
    return _levels[level]


# -- reading and writing tangents ------------------------------------------------------

def get_tangent(t, level):
    """The tangent of tensor `t` at `level` (a _Level), or None. A forward-differentiable
    view without one of its own takes the view of its base's tangent."""
    g = getattr(t, "_fw_grads", None)    # (a view's source may be metadata's _Before record)
    if g is not None:
        tangent = g.get(level.index)
        if tangent is not None:
            return tangent
    if t._base is None or getattr(t, "_fw_nondiff_view", False) or t._view_of is None:
        return None
    tangent = _replay_view(t, level)
    if tangent is not None:
        set_tangent(t, tangent, level)
    return tangent


def _replay_view(t, level):
    """The tangent of view `t` made from the nearest tensor up its chain of views that has a
    tangent: that tangent with the same view ops (undoing in-place view ops applied to a
    source since, as autograd.graph.view_chain does). None when the chain reaches a view
    that is not forward differentiable, or the base, without a tangent."""
    chain = []
    cur = t
    tangent = None
    while cur._view_of is not None:
        src, op, rest, multi, index = cur._view_of
        chain.append((op, rest, index if multi else None))
        for inverse in src._meta_ops[cur._src_meta:]:
            for inv_op, inv_args in reversed(inverse):
                chain.append((inv_op, inv_args, None))
        grads = getattr(src, "_fw_grads", None)
        tangent = grads.get(level.index) if grads else None
        if tangent is not None:
            break
        if getattr(src, "_fw_nondiff_view", False) or src._base is None:
            return None
        cur = src
    if tangent is None:
        return None
    for op, rest, index in reversed(chain):
        tangent = op(tangent, *rest)
        if index is not None:
            tangent = tangent[index]
    return tangent


def _forward_base(t):
    """The tensor whose tangent a view's tangent is a view of: up the chain of views, the
    first that is not forward differentiable (make_dual's result) or the base itself."""
    cur = t
    while cur._view_of is not None:
        src = cur._view_of[0]
        if isinstance(src, Tensor) and (src._fw_nondiff_view or src._base is None):
            return src
        cur = src
    return t._base


def set_tangent(t, tangent, level):
    if t._fw_grads is None:
        t._fw_grads = {}
    t._fw_grads[level.index] = tangent
    level.remember(t)


def _plain(op, args):
    """Call `op` through the modes below the current one (the dispatcher has popped the
    level that is computing tangents)."""
    return op(*args)


# -- make_dual / unpack_dual -----------------------------------------------------------

def _size_message(primal, tangent):
    return ("Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(primal.shape)} while "
            f"the given forward gradient is of size {list(tangent.shape)}.")


def make_dual(tensor, tangent, *, level=None):
    """A new tensor that is a view of `tensor` (its value) carrying `tangent` at `level`
    (default: the innermost one). Gradients of the result flow back to `tensor`."""
    lvl = _level_object(level)
    if lvl is None:
        if level is None:
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                               "make sure to enter_dual_level() first.")
        raise RuntimeError("Invalid level given to _make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): expected tensor and tangent to be Tensors, got "
                        f"{type(tensor).__name__} and {type(tangent).__name__}")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(_size_message(tensor, tangent))
    if tangent._fw_grads is not None and tangent._fw_grads.get(lvl.index) is not None:
        raise RuntimeError("Expected tangent to not be a dual tensor at the same level: the given "
                           "tangent has a forward gradient at the same level as the one being set. "
                           "This is not supported.")
    if not hasattr(tangent, "_bt_value") and not _same_layout(tensor, tangent):     # (not a vmap batch)
        tangent = _in_layout_of(tensor, tangent)
    dual = _alias(tensor, lvl)
    set_tangent(dual, tangent, lvl)
    return dual


def _same_layout(primal, tangent):
    """PyTorch's metadata check for a tangent: the same storage size, strides (those of size-1
    dims aside) and storage offset as the primal; anything goes for empty tensors."""
    from ..ops.as_strided import storage_of
    p, t = primal._data, tangent._data
    if p.size == 0 and t.size == 0:
        return True
    (p_flat, p_off), (t_flat, t_off) = storage_of(p), storage_of(t)
    if p_flat.size != t_flat.size or p_off != t_off:
        return False
    return all(n == 1 or a // p.itemsize == b // t.itemsize for n, a, b in zip(p.shape, p.strides, t.strides))


def _in_layout_of(primal, tangent):
    """A copy of `tangent` laid out as `primal` is: in a new zero storage of the primal's
    storage size, with its strides and offset (so views of the dual, as_strided included,
    find the same layout in the tangent)."""
    from ..ops.as_strided import storage_of
    p = primal._data
    p_flat, offset = storage_of(p)
    storage = np.zeros(p_flat.size, dtype=tangent._data.dtype)
    view = np.lib.stride_tricks.as_strided(storage[offset:], p.shape,
                                           tuple(s // p.itemsize * storage.itemsize for s in p.strides))
    view[...] = tangent._data
    return Tensor._make(view)


def _alias(tensor, lvl):
    """A view of `tensor` made below `lvl` (so it gets no tangent from it) and marked as not
    forward differentiable: in-place changes to it change `tensor`'s values, not its tangent.
    In inference mode (no views there) a plain tensor sharing the memory."""
    from .grad_mode import state
    if state.inference:
        out = Tensor._make(tensor._data)
        out._version_counter = tensor._version_counter
        return out
    modes = _dispatch._modes
    i = modes.index(lvl)
    above = modes[i:]
    del modes[i:]
    try:
        out = R["view"](tensor, tuple(tensor._data.shape))
    finally:
        modes.extend(above)
    out._fw_nondiff_view = True
    return out


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor` at `level` (default: the innermost): the primal is a new
    view without the tangent, the tangent is the tensor given to make_dual (or the one an op
    computed), None when there is none."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    lvl = _level_object(level)
    if lvl is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor, lvl), get_tangent(tensor, lvl))


# -- tangents through one op -----------------------------------------------------------

def _tensor_inputs_with_tangents(op, args, level):
    """Per op parameter, the tangent (a list for tensor-list parameters), and whether any."""
    tangents = [None] * len(args)
    lists = op.tensor_lists
    found = False
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            t = get_tangent(a, level)
            if t is not None:
                tangents[i] = t
                found = True
        elif lists and i in lists:
            ts = [get_tangent(x, level) if isinstance(x, Tensor) else None for x in a]
            if any(t is not None for t in ts):
                tangents[i] = ts
                found = True
    return tangents, found


def _run_with_tangents(level, op, args, kwargs):
    args = op.normalize(args, kwargs)
    tangents, found = _tensor_inputs_with_tangents(op, args, level)
    if op.kind is INPLACE:
        return _inplace_with_tangents(level, op, args, tangents, found)
    result = op(*args)
    if not found or op.backward_cls is None and op.jvp_fn is None and op.kind is not VIEW:
        if found and op.differentiable and op.kind is not VIEW and _has_float(result):
            raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not "
                                      "support it because it has no derivative formula.")
        return result
    out_tangents = op_jvp(op, args, tangents, result)
    _attach(level, result, out_tangents, op)
    return result


def _has_float(result):
    outs = result if isinstance(result, (tuple, list)) else (result,)
    return any(isinstance(o, Tensor) and o.dtype.is_floating_point for o in outs)


def _attach(level, result, out_tangents, op):
    if isinstance(result, Tensor):
        t = _fit(out_tangents, result)
        if t is not None:
            set_tangent(result, t, level)
        return
    nondiff = op.nondiff_outputs
    for k, o in enumerate(result):
        if isinstance(o, Tensor) and k not in nondiff and out_tangents is not None:
            t = _fit(out_tangents[k], o)
            if t is not None:
                set_tangent(o, t, level)


def _fit(tangent, like):
    """The tangent shaped and typed like its primal (None for integral primals)."""
    if tangent is None or not (like.dtype.is_floating_point or like.dtype.is_complex):
        return None
    if tangent._data.shape != like._data.shape:
        tangent = R["clone"](R["expand"](tangent, tuple(like._data.shape)))
    if tangent.dtype is not like.dtype:
        tangent = R["to_dtype"](tangent, like.dtype)
    return tangent


def op_jvp(op, args, tangents, result):
    """The output tangent(s) of `op` at `args` (its output `result`) for the input
    `tangents` (per parameter, None where zero)."""
    if op.jvp_fn is not None:
        return op.jvp_fn(tangents, result, *args)
    if op.kind is VIEW:
        if tangents[0] is None:
            return None
        return op(tangents[0], *args[1:])
    if op.kind is POINTWISE:
        return _jvp_pointwise(op, args, tangents, result)
    return _jvp_by_double_vjp(op, args, tangents, result)


def _derivative_values(op, args, result, needs):
    """What the op's backward formula reads, from the call itself."""
    values = []
    for p in op.derivative_params:
        if p == "result":
            values.append(result)
        elif p == "needs":
            values.append(needs)
        elif p in op.index:
            values.append(args[op.index[p]])
        else:       # <param>_shape
            values.append(tuple(args[op.index[p[:-6]]]._data.shape))
    return values


def _jvp_pointwise(op, args, tangents, result):
    """A pointwise op's Jacobian is diagonal (after broadcasting), so it equals its
    transpose: the backward formula applied to each input's tangent (broadcast to the
    output's shape) is that input's term of the JVP. No reverse pass needed."""
    total = None
    shape = tuple(result._data.shape)
    complex_result = result._data.dtype.kind == "c"
    for i, t in enumerate(tangents):
        if t is None:
            continue
        if complex_result or t._data.dtype.kind == "c":
            g = _jvp_pointwise_complex(op, args, result, i, t, shape)
            if g is None:
                continue
            if g is NotImplemented:
                return _jvp_by_double_vjp(op, args, tangents, result)
            total = g if total is None else R["add"](total, g)
            continue
        needs = tuple(j == i for j in range(op.nparams))
        if tuple(t._data.shape) != shape:
            t = R["expand"](t, shape)
        if t.dtype is not result.dtype:
            t = R["to_dtype"](t, result.dtype)
        grads = op.derivative_fn(t, *_derivative_values(op, args, result, needs))
        if not isinstance(grads, tuple):
            grads = (grads,)
        g = grads[i] if i < len(grads) else None
        if g is None:
            continue
        if tuple(g._data.shape) != shape:
            # the formula reduces this input's gradient itself (masked_fill's 0-d value):
            # not the diagonal form, so take the general route
            return _jvp_by_double_vjp(op, args, tangents, result)
        total = g if total is None else R["add"](total, g)
    return total


def _jvp_pointwise_complex(op, args, result, i, t, shape):
    """Input i's term of a pointwise op's JVP when complex numbers take part. The backward
    formula is the adjoint, g -> g conj(a) + conj(g) b (a = df/dz, b = df/d(conj z)), not the
    JVP t -> t a + conj(t) b: a and b are read from the formula at g = 1 and g = i, per
    element (for a real result, g = 1 only: there b = conj(a))."""
    needs = tuple(j == i for j in range(op.nparams))
    values = _derivative_values(op, args, result, needs)

    def adjoint(g):
        grads = op.derivative_fn(g, *values)
        if not isinstance(grads, tuple):
            grads = (grads,)
        return grads[i] if i < len(grads) else None

    one = R["ones"](shape, result.dtype)
    at_one = adjoint(one)
    if at_one is None:
        return None
    if tuple(at_one._data.shape) != shape:
        return NotImplemented       # the formula reduces this input itself: the general route
    if t.dtype._category < 2:
        t = R["to_dtype"](t, result.dtype.to_real())
    if tuple(t._data.shape) != shape:
        t = R["expand"](t, shape)
    if result._data.dtype.kind != "c":     # real f: df = 2 Re(a t), and at_one = 2 conj(a)
        return R["real"](R["mul"](R["conj"](at_one), t))
    at_i = adjoint(R["mul"](one, 1j))
    conj_a = R["mul"](R["sub"](at_one, R["mul"](at_i, 1j)), 0.5)
    b = R["mul"](R["add"](at_one, R["mul"](at_i, 1j)), 0.5)
    return R["add"](R["mul"](t, R["conj"](conj_a)), R["mul"](R["conj"](t), b))


def _zeros_like(t):
    return R["zeros"](tuple(t._data.shape), t.dtype)


def _jvp_by_double_vjp(op, args, tangents, result):
    """J t as d/du <J^T u, t>: the backward formula run on a cotangent u that requires
    grad, dotted with the tangents, differentiated with respect to u."""
    from . import grad as autograd_grad
    from .graph import reduce_grad
    outs = result if isinstance(result, (tuple, list)) else (result,)
    diff = [isinstance(o, Tensor) and o._data.dtype.kind in "fc" and k not in op.nondiff_outputs
            for k, o in enumerate(outs)]
    us = [R["zeros"](tuple(o._data.shape), o.dtype).requires_grad_(True) if d else None
          for o, d in zip(outs, diff)]
    needs = tuple(t is not None and (not isinstance(t, list) or any(x is not None for x in t))
                  for t in tangents)
    values = _derivative_values(op, args, result, needs)
    # reverse over forward: a tangent that depends on tensors requiring grad (through the
    # primals or the input tangents) keeps that history, as the other rules' ops do
    keep_history = _grad_state.enabled and any(
        x._requires_grad for x in _tensors_in(args) + _tensors_in(tangents))
    with enable_grad():
        if isinstance(result, (tuple, list)):
            g = [u if u is not None else _zeros_like(o) for u, o in zip(us, outs)]
        else:
            g = us[0]
        grads = op.derivative_fn(g, *values)
        if not isinstance(grads, tuple):
            grads = (grads,)
        # d/du <J^T u, t> is the vector-Jacobian product of u -> J^T u with t: backward
        # through the formula with the tangents as its output gradients (a batch of
        # tangents under vmap goes through as jacrev's cotangents do)
        formula_outs, tangent_grads = [], []
        for i, t in enumerate(tangents):
            if t is None or i >= len(grads) or grads[i] is None:
                continue
            pairs = zip(grads[i], t) if isinstance(t, list) else [(grads[i], t)]
            for gi, ti in pairs:
                if gi is None or ti is None:
                    continue
                gi = reduce_grad(gi, tuple(ti._data.shape), ti.dtype)
                if gi._requires_grad:
                    formula_outs.append(gi)
                    tangent_grads.append(ti)
        wanted = [u for u in us if u is not None]
        if not formula_outs:
            jv = [None] * len(wanted)
        else:
            jv = autograd_grad(formula_outs, wanted, tangent_grads, allow_unused=True,
                               create_graph=keep_history)
    it = iter(jv)
    per_out = [next(it) if u is not None else None for u in us]
    if not keep_history:
        per_out = [None if j is None else R["detach"](j) if not _outer_tangent(j) else j
                   for j in per_out]
    per_out = [j if j is not None or u is None else _zeros_like(u) for j, u in zip(per_out, us)]
    if isinstance(result, (tuple, list)):
        return per_out
    return per_out[0]


def _tensors_in(values):
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(x for x in v if isinstance(x, Tensor))
    return out


def _outer_tangent(t):
    return t._fw_grads is not None


# -- in-place ops ----------------------------------------------------------------------

def _inplace_with_tangents(level, op, args, tangents, found):
    self = args[0]
    if not found:
        return op(*args)
    fop = op.functional
    # the formula reads the values before the write: snapshot self and any argument that
    # shares its memory (x.mul_(x))
    old = R["clone"](self)
    fargs = [old] + [R["clone"](a) if isinstance(a, Tensor) and np.may_share_memory(a._data, self._data)
                     else a for a in args[1:]]
    op(*args)
    if fop.jvp_fn is None and fop.backward_cls is None:
        if fop.differentiable:
            raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not "
                                      "support it because it has no derivative formula.")
        new_tangent = None      # a non-differentiable result (floor_divide_): a zero tangent
    else:
        new_tangent = op_jvp(fop, tuple(fargs), tangents, self)
    _write_tangent(level, self, new_tangent)
    return self


def _write_tangent(level, self, new_tangent):
    """Update self's tangent in place with `new_tangent` (giving self, or its base, one when
    it has none)."""
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        return
    current = get_tangent(self, level)
    if current is None and self._base is not None and not self._fw_nondiff_view \
            and self._view_of is not None:
        base = _forward_base(self)
        if get_tangent(base, level) is None:
            set_tangent(base, _zeros_shaped_like(base, new_tangent), level)
        current = get_tangent(self, level)
    if new_tangent is None:
        new_tangent = _zeros_like(self)
    if current is None:
        set_tangent(self, R["clone"](_fit(new_tangent, self)), level)
        return
    if type(current) is Tensor and type(new_tangent) is not Tensor:
        # a batch of tangents (vmap over jvp) written into an unbatched one: replace it by
        # a batched copy (the view's base keeps its own)
        current_b = R["add"](current, _zeros_shaped_like(current, new_tangent))
        set_tangent(self, current_b, level)
        current = current_b
    with no_grad():
        R["copy_"](current, new_tangent)


def _zeros_shaped_like(t, tangent):
    """Zeros shaped like `t` for a tangent; batched like `tangent` when that is a batch of
    tangents (vmap over jvp), so that it can take it in place."""
    zeros = _zeros_like(t)
    if tangent is None or type(tangent) is Tensor:
        return zeros
    return R["add"](zeros, R["sum"](R["zero"](tangent)))


def _tangent_repr(t):
    """', tangent=...' for printing a tensor that has a tangent at the innermost level."""
    if t._fw_grads is None or not _levels:
        return None
    return t._fw_grads.get(_levels[-1].index)


# -- custom Functions ------------------------------------------------------------------

def _levels_with_tangents(args):
    """The active levels at which some tensor argument has a tangent, innermost first."""
    found = []
    for level in reversed(_levels):
        if any(isinstance(a, Tensor) and get_tangent(a, level) is not None for a in args):
            found.append(level)
    return found


class _below:
    """Run ops with `level` and the levels inside it removed from the dispatch-mode stack
    (a custom Function's jvp at `level` is seen by the outer levels only)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        modes = _dispatch._modes
        i = modes.index(self.level) if self.level in modes else len(modes)
        self.above = modes[i:]
        del modes[i:]

    def __exit__(self, *exc):
        _dispatch._modes.extend(self.above)
        return False


_NOT_INPLACE = ("An inplace custom Function is not modifying the forward mode gradients inplace. "
                "If the forward is modifying an input inplace, then the jvp function must modify "
                "the corresponding gradient inplace.")
_NOT_A_VIEW = ("A custom Function's forward is returning a view (or an input as-is) but the jvp is "
               "not returning a view.")
_NOT_SAME_BASE = ("A custom Function is returning a view but the jvp is not returning a view of the "
                  "same base as the given grad input.")
_NOT_VIEW_OF_INPUT = ("A custom Function is returning a view but the jvp is not returning a view of "
                      "the given grad input.")


def _custom_function_jvp(cls, ctx, args, raw_outputs, wrapped, levels):
    """Give the outputs of a custom Function call their tangents from `cls.jvp`, at each
    level where an input has one, checking the rules PyTorch checks (an input modified in
    place has its tangent modified in place; a view's tangent is a view of the input's)."""
    outs = wrapped if isinstance(wrapped, tuple) else (wrapped,)
    dirty = {id(t) for t in ctx.dirty_tensors}
    for level in levels:
        in_tangents = []
        for a in args:
            if isinstance(a, Tensor):
                t = get_tangent(a, level)
                if t is None and (a.dtype.is_floating_point or a.dtype.is_complex):
                    t = _zeros_like(a)
                in_tangents.append(t)
            else:
                in_tangents.append(None)
        versions = [t._version_counter[0] if isinstance(t, Tensor) else None for t in in_tangents]
        ctx._saved_override = tuple(getattr(ctx, "saved_for_forward", ()) or ())
        try:
            with _below(level):
                result = cls.jvp(ctx, *in_tangents)
        finally:
            ctx._saved_override = None
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(outs):
            raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                               f"(expected {len(outs)} but got {len(result)})")
        nondiff = {id(t) for t in ctx.non_differentiable}
        for k, (raw, out, rt) in enumerate(zip(raw_outputs, outs, result)):
            if rt is None:
                continue
            if not isinstance(out, Tensor) or id(raw) in nondiff or id(out) in nondiff \
                    or not (out.dtype.is_floating_point or out.dtype.is_complex):
                raise RuntimeError(f"Function's jvp returned a gradient at position {k}, but  the "
                                   "corresponding forward output is not a differentiable Tensor."
                                   "You should return None at that position instead.")
            source = next((j for j, a in enumerate(args) if a is raw), None)
            if source is not None and id(raw) in dirty:
                if rt is not in_tangents[source] or rt._version_counter[0] == versions[source]:
                    raise RuntimeError(_NOT_INPLACE)
                if get_tangent(out, level) is not rt:
                    set_tangent(out, rt, level)
                continue
            if source is None and out._base is not None:
                source = next((j for j, a in enumerate(args) if isinstance(a, Tensor)
                               and np.may_share_memory(a._data, out._data)), None)
            if source is not None:
                if rt._base is None:
                    raise RuntimeError(_NOT_A_VIEW)
                given = in_tangents[source]
                expected = given._base if given._base is not None else given
                if rt._base is not expected:
                    raise RuntimeError(_NOT_SAME_BASE if given._base is not None else _NOT_VIEW_OF_INPUT)
            if rt._data.shape != out._data.shape:
                raise RuntimeError(_size_message(out, rt))
            set_tangent(out, rt, level)


# -- out= variants ---------------------------------------------------------------------

def check_out_variant(name, args, out):
    """For the `out=` form of op `name`: PyTorch's error when forward AD would have to
    differentiate it (an argument or `out` carries a tangent at an active level). Callers
    that implement `out=` call this before writing."""
    if not _levels or not _fwd_grad_enabled[0]:
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in list(args) + list(outs):
        if isinstance(t, Tensor) and any(get_tangent(t, lv) is not None for lv in _levels):
            raise NotImplementedError(f"Trying to use forward AD with {name}_out that does not "
                                      "support it because it is an out= function")
