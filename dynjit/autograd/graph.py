"""Autograd graph nodes: the backward half of every recorded op.

`Node` is the base (PyTorch's `torch.autograd.graph.Node`): `next_functions`,
`name()`, hooks, `metadata`. Each registered op gets a subclass named like
PyTorch's (`MulBackward0`) whose `apply` evaluates the op's derivative from
the registry. `AccumulateGrad` ends the graph at a leaf. `CopySlices` and the
view-replay node keep autograd right when a view is written in place.
Also PyTorch's torch.autograd.graph helpers: `GradientEdge`,
`get_gradient_edge`, `increment_version`, and the introspection of the
running backward (`_will_engine_execute_node`, ...). Saved tensors (and the
saved-tensor hooks: `saved_tensors_hooks`, `save_on_cpu`,
`disable_saved_tensors_hooks`) live in saved.py.
"""
import itertools
import sys
import weakref

import numpy as np

from .._dtype import round_to_bfloat16

from .grad_mode import state as _grad_state
from .anomaly_mode import state as _anomaly, record_forward as _record_forward
from .saved import FREED_MESSAGE, SavedTensor, save_conditions  # noqa: F401  (part of this module's API)
from .saved import (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,  # noqa: F401
                    saved_tensors_hooks_is_enabled, allow_mutation_on_saved_tensors)
from ..tensor import Tensor
from ..ops.memory_format import contiguous_format as _contiguous_format

_seq = itertools.count()



class RemovableHandle:
    """Returned by every register_*hook; `remove()` unregisters the hook."""
    _ids = itertools.count()

    def __init__(self, container):
        self.id = next(RemovableHandle._ids)
        self._container = weakref.ref(container) if _weakrefable(container) else (lambda c=container: c)

    def remove(self):
        c = self._container()
        if c is not None:
            c.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _weakrefable(obj):
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


class _HookDict(dict):
    """A dict of hooks that a RemovableHandle can weakly refer to."""


def add_hook(container, fn):
    h = RemovableHandle(container)
    container[h.id] = fn
    return h


_retaining = weakref.WeakValueDictionary()   # id -> non-leaf tensor whose .grad backward fills


def retain_grad(t):
    """Make backward fill non-leaf `t`'s .grad. The engine looks `t` up by its
    grad_fn *at backward time*, so this follows `t` through in-place ops (which
    give it a new grad_fn), and does not keep `t` alive."""
    if t.grad_fn is None:
        if not t._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return
    t._retains_grad = True
    _retaining[id(t)] = t


def retained_grad_targets():
    """{(grad_fn, output_nr): weakref to tensor} for every live tensor retaining grad."""
    targets = {}
    for t in list(_retaining.values()):
        fn = t.grad_fn
        if fn is not None:
            targets[(fn, t._output_nr)] = weakref.ref(t)
    return targets


def fill_retained_grad(t, grad):
    if t._grad is None:
        t._grad = grad.clone()      # keeps history only under create_graph (grad mode)
    else:
        t._grad = t._grad + grad


def edge_of(t):
    """The (node, input_nr) that a gradient for tensor `t` flows into, or None."""
    if t._grad_fn is not None or t._base is not None:
        fn = t.grad_fn
        if fn is not None:
            return (fn, t._output_nr)
    if t._requires_grad:
        return (t._get_accumulator(), 0)
    return None


_NO_EDGE = (None, 0)


class Node:
    """Base of all backward nodes."""
    _is_accumulate = False
    # defaults at class level: most nodes never get hooks or metadata
    _edges = ()              # one per input: (node, input_nr), or None for no edge
    _pre_hooks = None        # node pre-hooks: fn(grad_outputs)
    _post_hooks = None       # fn(grad_inputs, grad_outputs)
    _tensor_pre_hooks = None  # {output_nr: _HookDict} from Tensor.register_hook
    _metadata = None
    _freed = False

    def __init__(self):
        self._seq = next(_seq)     # creation order: later nodes run first
        if _anomaly.enabled:
            _record_forward(self)

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> optional new grad_inputs, after the node runs."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> optional new grad_outputs, before the node runs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        return add_hook(self._pre_hooks, fn)

    def add_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        return add_hook(self._tensor_pre_hooks.setdefault(output_nr, _HookDict()), fn)

    def num_outputs(self):
        return 1

    @property
    def next_functions(self):
        """One (node, input_nr) per input, (None, 0) where the input has no gradient to take,
        as PyTorch lists them. The engine reads the edges directly (`_edges`, None for none)."""
        return tuple(_NO_EDGE if e is None else e for e in self._edges)

    @next_functions.setter
    def next_functions(self, edges):
        self._edges = tuple(None if e is None or e[0] is None else e for e in edges)

    def _sequence_nr(self):
        """The node's creation order: of two ready nodes, the later runs first."""
        return self._seq

    def _set_sequence_nr(self, n):
        self._seq = n

    def apply(self, grads):
        """Gradients w.r.t. inputs (aligned with next_functions) from grads w.r.t. outputs."""
        raise NotImplementedError

    def release(self):
        self._freed = True

    def __call__(self, *grads):
        """Call the backward function directly, one gradient per output of the forward."""
        n = self.num_outputs()
        if len(grads) != n:
            raise TypeError(f"{self.name()}: expected {n} arguments, got {len(grads)} instead")
        return tuple(self.apply(list(grads)))


_NO_SHAPES = {}


class OpBackward(Node):
    """Backward of a registered op; subclasses are made per op by make_backward_class."""
    op = None
    _wrapped_scalar = -1     # index of a parameter whose Python-number argument gets an edge
    _n_outputs = 1
    _result_meta = None
    _saved_out = None

    def __init__(self, op, args, tensors, result):
        # One pass over the arguments: the edges and metadata of tensor inputs, where
        # they sit among the op's parameters, and the arguments with tensors removed
        # (a tensor stays reachable only if it is saved, so an unneeded input is not
        # kept alive).
        self._seq = next(_seq)
        if _anomaly.enabled:
            _record_forward(self)
        edges, meta, positions = [], [], []
        plain = list(args)
        lists = op.tensor_lists
        wrapped = self._wrapped_scalar
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                edges.append(edge_of(a) if a._requires_grad else None)
                meta.append((a._data.shape, a.dtype))
                positions.append((i, None))
                plain[i] = None
            elif i == wrapped and isinstance(a, (int, float, complex)):
                # a Python number where PyTorch's schema takes a Tensor (x + 5): PyTorch wraps
                # it in a tensor that needs no grad, so the node has an edge for it, None
                edges.append(None)
                meta.append(((), None))
                positions.append((i, None))
            elif lists and i in lists:
                for j, t in enumerate(a):
                    if isinstance(t, Tensor):
                        edges.append(edge_of(t) if t._requires_grad else None)
                        meta.append((t._data.shape, t.dtype))
                        positions.append((i, j))
                plain[i] = [None if isinstance(t, Tensor) else t for t in a]
        self._edges = tuple(edges)
        self._inputs = meta
        self._positions = positions
        self.args = plain
        conditions = op.__dict__.get("_save_conditions")
        if conditions is None:
            conditions = op._save_conditions = save_conditions(op)
        needs = self._needs() if conditions else None
        saved = {}
        params = op.params
        for i in op.saved:
            if needs is not None and params[i] in conditions and \
                    not any(needs[k] for k in conditions[params[i]]):
                continue        # read only for gradients nobody wants
            a = args[i]
            if isinstance(a, Tensor):
                saved[i] = SavedTensor(a)
            elif i in lists:
                saved[i] = [SavedTensor(t) if isinstance(t, Tensor) else t for t in a]
        self._saved = saved
        self._shapes = {name: args[i]._data.shape for name, i in op.shape_params} if op.shape_params else _NO_SHAPES
        self._wants_result = needs is None or "result" not in conditions or \
            any(needs[k] for k in conditions["result"])
        if isinstance(result, (tuple, list)):
            self._n_outputs = len(result)
            self._result_meta = _result_meta(result)

    def num_outputs(self):
        return self._n_outputs

    def save_result(self, result):
        if not self._wants_result:
            return
        if isinstance(result, Tensor):
            self._saved_out = SavedTensor(result, is_output=True)
        else:
            self._saved_out = [SavedTensor(r, is_output=True) if isinstance(r, Tensor) else r
                                  for r in result]

    def release(self):
        # Only nodes that saved something become unusable, as in PyTorch.
        self._freed = True
        if self._saved or self._saved_out is not None:
            self._saved = None
            self._saved_out = None

    def _needs(self):
        """Per op parameter: does any tensor in it want a gradient?"""
        needs = [False] * self.op.nparams
        for (i, _), edge in zip(self._positions, self._edges):
            if edge is not None:
                needs[i] = True
        return needs

    def _unpack(self, name):
        shape = self._shapes.get(name)
        if shape is not None:
            return shape
        if name == "needs":
            return self._needs()
        if self._saved is None:
            raise RuntimeError(FREED_MESSAGE)
        if name == "result":
            s = self._saved_out
            if s is None:          # not saved: no wanted gradient reads it
                return None
            if isinstance(s, list):
                return [x.unpack(self, lazy=True) if isinstance(x, SavedTensor) else x for x in s]
            return s.unpack(self, lazy=True)
        i = self.op.index[name]
        s = self._saved.get(i)
        if s is None:
            return self.args[i]
        if isinstance(s, list):
            return [x.unpack(self, lazy=True) if isinstance(x, SavedTensor) else x for x in s]
        return s.unpack(self, lazy=True)

    def __getattr__(self, name):
        """PyTorch's introspection of what a node saved: `_saved_<param>` (the value, as
        backward would read it) and `_raw_saved_<param>` (the SavedTensor, to register
        pack/unpack hooks on), with `result` for the op's output."""
        raw = name.startswith("_raw_saved_")
        if not raw and not name.startswith("_saved_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        key = name[len("_raw_saved_" if raw else "_saved_"):]
        op = type(self).op
        if key == "result" and op.saves_result:
            if self._saved is None:
                raise RuntimeError(FREED_MESSAGE)
            s = self._saved_out
        elif key in op.index and op.index[key] in op.saved:
            if self._saved is None:
                raise RuntimeError(FREED_MESSAGE)
            s = self._saved.get(op.index[key])
            if s is None:
                s = self.args[op.index[key]]
        else:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r} "
                                 f"({op.name} saves no {key!r} for backward)")
        if raw or not isinstance(s, (SavedTensor, list)):
            return s
        if isinstance(s, list):
            return [x.unpack(self, original=False) if isinstance(x, SavedTensor) else x for x in s]
        return s.unpack(self, original=False)

    def apply(self, grads):
        if all(g is None for g in grads):     # no gradient flows in: none flows out
            return [None] * len(self._edges)
        return self.apply_with_saved(grads, self.saved_values())

    def saved_values(self):
        """What the backward formula reads (saved tensors, shapes, flags), in its order."""
        return [self._unpack(p) for p in self.op.derivative_params]

    def apply_with_saved(self, grads, values):
        """The backward formula on `values` (from saved_values): compiled autograd passes
        traced stand-ins of the saved tensors here."""
        op = self.op
        if all(g is None for g in grads):
            return [None] * len(self._edges)
        if self._n_outputs == 1:
            g = grads[0]
        else:
            g = [grads[i] if grads[i] is not None else _zeros_for(self._result_meta[i])
                 for i in range(self._n_outputs)]
        out = op.derivative_fn(g, *values)
        return _align_grads(self, out)


def _zeros_for(meta):
    if meta is None:
        return None
    shape, dtype = meta
    return Tensor._make(np.zeros(shape, dtype=dtype.np))


def _result_meta(result):
    if isinstance(result, Tensor):
        return None
    return [(r._data.shape, r.dtype) if isinstance(r, Tensor) else None for r in result]


def _align_grads(node, out):
    """Map the derivative's return (one entry per op parameter, trailing ones
    optional) onto next_functions,
    reducing broadcast dimensions and casting to each input's dtype."""
    if not isinstance(out, tuple):
        out = (out,)
    grads = []
    n = len(out)
    for (i, j), (shape, dtype), edge in zip(node._positions, node._inputs, node._edges):
        g = out[i] if i < n else None
        if j is not None and g is not None:
            g = g[j]
        if g is None or edge is None:
            grads.append(None)
            continue
        if g._data.shape != shape and not _sums_to(g._data.shape, shape):
            # (a tensor whose shape an untracked in-place op changed, as under inference_mode)
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {len(grads)} - "
                               f"got {list(g._data.shape)} but expected shape compatible with {list(shape)}")
        grads.append(reduce_grad(g, shape, dtype))
    return grads


def _sums_to(grad_shape, shape):
    """Whether a gradient of grad_shape reduces to shape (shape broadcasts to grad_shape)."""
    try:
        return np.broadcast_shapes(grad_shape, shape) == tuple(grad_shape)
    except ValueError:
        return False


def reduce_grad(g, shape, dtype):
    """Sum a gradient down to `shape` (undo broadcasting) and cast to `dtype`."""
    if g._data.shape != shape:
        g = g.sum_to_size(shape)
    if g.dtype is not dtype and dtype._category >= 2:
        if g._data.dtype.kind == "c" and dtype._category == 2:
            g = g.real          # a real input's gradient is the real part (PyTorch's handle_r_to_c)
        g = g.to(dtype)
    return g


def make_backward_class(op):
    camel = "".join(p[:1].upper() + p[1:] for p in op.name.split("_"))
    attrs = {"op": op}
    if op.wraps_scalar is not None:
        # PyTorch's schema takes `Tensor other` and wraps a Python number passed there
        # (add.Tensor): the node lists a None edge for the number, as PyTorch's does
        attrs["_wrapped_scalar"] = op.index[op.wraps_scalar]
    return type(_NODE_NAMES.get(op.name, f"{camel}Backward0"), (OpBackward,), attrs)


# ops whose backward node PyTorch names by hand rather than by the generated <Op>Backward0
# (Tensor.copy_ runs the registry op "copy" in place)
_NODE_NAMES = {"copy": "CopyBackwards"}


_UNSHARED_REFS = None


def _refs(grads):
    return sys.getrefcount(grads[0]), sys.getrefcount(grads[0]._data)


def _is_dense(array):
    """Whether the array is non-overlapping and dense (numpy's order="K" copy keeps its strides)."""
    return np.empty_like(array, order="K").strides == array.strides


def _obeys_layout_contract(grad, leaf):
    """Whether the array `grad` may be the .grad of a leaf holding `leaf` as it is: it has
    the leaf's strides when the leaf is dense and non-overlapping (numpy's order="K" copy
    keeps those strides exactly then), else it is row-major."""
    dense = np.empty_like(leaf, order="K").strides
    if dense == leaf.strides:
        return grad.strides == leaf.strides
    return grad.flags.c_contiguous


def _can_steal(grads, variable):
    """Can the gradient grads[0] become variable.grad as it is?

    Only if no one but the engine's buffer refers to the tensor or its memory
    (as PyTorch checks the use count): later gradients are added into .grad in
    place, which must not change a tensor the user, a hook or another leaf holds.
    The reference counts of an unshared tensor are measured once, on this very
    code path, so they hold on every Python version."""
    global _UNSHARED_REFS
    if _UNSHARED_REFS is None:
        _UNSHARED_REFS = _refs([Tensor._make(np.zeros(1))])
    g = grads[0]
    d = g._data
    if (g._requires_grad or g._base is not None or d.base is not None or not d.flags.writeable
            or d.shape != variable._data.shape or d.dtype != variable._data.dtype
            or type(g) is not Tensor):
        return False
    del g, d
    refs = _refs(grads)
    return refs[0] <= _UNSHARED_REFS[0] and refs[1] <= _UNSHARED_REFS[1]


class AccumulateGrad(Node):
    """Graph sink for a leaf tensor: accumulates into `variable.grad`."""
    _is_accumulate = True

    def __init__(self, variable):
        super().__init__()
        self._seq = float("inf")   # like PyTorch: run as soon as ready
        self.variable = variable
        self._post_acc_hooks = None

    def apply(self, grads):
        v = self.variable
        if grads[0] is None:
            return []
        if (type(grads[0]._data) is not np.ndarray or type(v._data) is not np.ndarray
                or (v._grad is not None and type(v._grad._data) is not np.ndarray)):
            from .sparse_grad import accumulate_sparse     # a sparse gradient or .grad
            accumulate_sparse(v, grads)
            return self._after_accumulate(v)
        # decided before this function takes a reference of its own to the gradient
        steal = v._grad is None and not _grad_state.enabled and _can_steal(grads, v)
        g = grads[0]
        if v._grad is None:
            if _grad_state.enabled:
                # create_graph: a copy that keeps history, made as PyTorch's
                # clone_obey_contract makes it: copied into a new tensor with the strides of
                # a dense leaf (a CopyBackwards node), else cloned row-major
                if _is_dense(v._data):
                    v._grad = Tensor._make(np.empty_like(v._data, dtype=v.dtype.np, order="K")).copy_(g)
                else:
                    v._grad = (g if g._data.shape == v._data.shape else g.expand(v.shape)).clone(
                        memory_format=_contiguous_format)
            elif steal and _obeys_layout_contract(g._data, v._data):
                v._grad = g             # nobody else sees it: no copy
            else:
                # PyTorch's layout contract: the gradient of a dense leaf has the leaf's strides
                # (channels_last, transposed ...), any other leaf's gradient is row-major
                d = np.empty_like(v._data, dtype=v.dtype.np, order="K")
                d[...] = np.broadcast_to(g._data, v._data.shape)
                v._grad = Tensor._make(d)
        elif _grad_state.enabled:
            v._grad = v._grad + g
        else:
            gd = v._grad
            if gd._requires_grad or not gd._data.flags.writeable:
                total = gd._data + g._data
                v._grad = Tensor._make(round_to_bfloat16(total) if total.dtype.metadata is not None else total)
            else:
                np.add(gd._data, g._data, out=gd._data, casting="unsafe")
                if gd._data.dtype.metadata is not None:     # bfloat16: round the sum in place
                    gd._data[...] = round_to_bfloat16(gd._data)
                gd._version_counter[0] += 1
        return self._after_accumulate(v)

    def _after_accumulate(self, v):
        if self._post_acc_hooks:
            for h in list(self._post_acc_hooks.values()):
                if h(v) is not None:
                    raise RuntimeError("post accumulate grad hooks should return None.")
        return []

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


class GraphRoot(Node):
    """The start of a backward pass from several roots: passes each root's gradient on."""

    def __init__(self, root_edges):
        super().__init__()
        self._edges = tuple(root_edges)

    def num_outputs(self):
        return len(self._edges)

    def apply(self, grads):
        return list(grads)


def _no_grad_unless_create_graph():
    from .grad_mode import no_grad, enable_grad
    return enable_grad() if _grad_state.enabled else no_grad()


class CopySlices(Node):
    """The base's new grad_fn after an in-place op wrote through one of its views.

    Backward: the view's region of the incoming gradient goes through the
    in-place op's own backward; the rest of the gradient passes to the base's
    old history unchanged.
    """

    def __init__(self, base, view_fn, fn, base_edge, self_index=0):
        super().__init__()
        self.fn = fn
        self.view_fn = view_fn
        self.self_index = self_index    # which input of fn is the view written in place
        self.base_meta = (base._data.shape, base.dtype)
        edges = list(fn._edges)
        edges[self_index] = base_edge
        self._edges = tuple(edges)

    def apply(self, grads):
        return self._apply(grads, self.fn.apply)

    def saved_values(self):
        return self.fn.saved_values()

    def apply_with_saved(self, grads, values):
        return self._apply(grads, lambda fn_grads: self.fn.apply_with_saved(fn_grads, values))

    def _apply(self, grads, fn_apply):
        if grads[0] is None:
            return [None] * len(self._edges)
        # Written with dispatched ops so that tracing (make_fx, AOT) records it.
        res = grads[0].clone()
        region = self.view_fn(res)
        region._creation_meta = None    # our own buffer: writing it in place is not ambiguous
        fn_grads = list(fn_apply([region.clone()]))
        g_self = fn_grads[self.self_index]
        with _no_grad_unless_create_graph():
            if g_self is None:
                region.zero_()
            else:
                region.copy_(g_self)
        fn_grads[self.self_index] = res
        return fn_grads

    def release(self):
        self.fn.release()

    def name(self):
        return "CopySlices"


class AsStridedBackward0(Node):
    """A view's grad_fn regenerated after its base changed in place: the view's
    gradient lands in the view's region of a zero gradient for the base."""

    def __init__(self, base, view_fn, base_edge):
        super().__init__()
        self.view_fn = view_fn
        self.base_meta = (base._data.shape, base.dtype)
        self._edges = (base_edge,)

    def apply(self, grads):
        from ..ops import registry
        if grads[0] is None:
            return [None]
        shape, dtype = self.base_meta
        res = registry["zeros"](shape, dtype)
        region = self.view_fn(res)
        region._creation_meta = None    # our own buffer: writing it in place is not ambiguous
        region.copy_(grads[0])
        return [res]


def view_chain(view):
    """The (view op, other args, output index or None) steps that make `view` from its base.

    A source whose shape or strides changed in place since the view was made from it
    (`x.t_()`, see ops.metadata) has those changes undone first."""
    chain = []
    t = view
    while t._view_of is not None:
        src, op, rest, multi, index = t._view_of
        chain.append((op, rest, index if multi else None))
        for inverse in src._meta_ops[t._src_meta:]:
            for inv_op, inv_args in reversed(inverse):
                chain.append((inv_op, inv_args, None))
        if src._base is None:
            break
        t = src
    chain.reverse()
    return chain


def replay_view_chain(x, chain):
    for op, rest, index in chain:
        x = op(x, *rest)
        if index is not None:
            x = x[index]
    return x


def view_replay_fn(view, differentiable=False):
    """A function that re-applies to a tensor the chain of view ops that made `view` from its base.

    A `differentiable` replay records the view ops when grad mode is on (a backward
    with create_graph), so that what flows through the view keeps its history."""
    chain = view_chain(view)

    def replay(x):
        if differentiable:
            return replay_view_chain(x, chain)
        from .grad_mode import no_grad
        with no_grad():
            return replay_view_chain(x, chain)
    replay.chain = chain      # what it replays (compiled autograd keys its cache on it)
    return replay


def rebase_view(view, fn, self_index=0):
    """An in-place op `fn` wrote through `view` (its input `self_index`): give the base
    a CopySlices grad_fn."""
    base = view._base
    base_edge = edge_of(base) if base._requires_grad else None
    view_fn = view_replay_fn(view, differentiable=True)
    base._grad_fn = CopySlices(base, view_fn, fn, base_edge, self_index)
    base._output_nr = 0
    base._requires_grad = True
    view._requires_grad = True
    view._grad_fn = None
    view._view_version = -1   # regenerate lazily from the base


def regenerate_view_grad_fn(view):
    """Give `view` a grad_fn that reads from its base's current history: one
    AsStridedBackward0 node, or, with view replay on, the view ops' own nodes
    recorded by replaying them on the base."""
    base = view._base
    meta = view._creation_meta
    if meta is not None and view._requires_grad and not _grad_state.inference:
        # like PyTorch: a view that may not be written in place cannot follow its base's
        # in-place history either
        from ..ops.dispatch import view_rebase_message
        raise RuntimeError(view_rebase_message(view, meta, indirect=True))
    if base._requires_grad:
        if _grad_state.view_replay:
            from .grad_mode import enable_grad
            with enable_grad():
                replayed = replay_view_chain(base, view_chain(view))
            view._grad_fn = replayed._grad_fn
            view._output_nr = replayed._output_nr
        else:
            view._grad_fn = AsStridedBackward0(base, view_replay_fn(view), edge_of(base))
            view._output_nr = 0
        view._requires_grad = True
    view._view_version = view._version_counter[0]


# -- gradient edges, versions, and engine introspection (torch.autograd.graph) --

class GradientEdge(tuple):
    """Where a gradient flows: (node, output_nr). autograd.grad and backward accept
    one in place of a tensor, to get the gradient flowing into that edge."""
    __slots__ = ()

    def __new__(cls, node, output_nr):
        return tuple.__new__(cls, (node, output_nr))

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])

    def __repr__(self):
        return f"GradientEdge(node={self[0]!r}, output_nr={self[1]})"


class _MultiHandle:
    """Removes every hook that register_multi_grad_hook installed."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call `fn` once per backward pass that computes gradients for some of `tensors`:
    mode "all": fn(grads), one entry per tensor (None for those not computed), once
    all the gradients the pass computes for them are known; mode "any": fn(grad) with
    the first of them to be computed."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    n = len(tensors)
    edges = [edge_of(t) if t._requires_grad else None for t in tensors]
    state = {"task": None}

    def start(task_id):
        from .engine import will_compute_grad
        state.update(task=task_id, grads=[None] * n, seen=0, fired=False,
                     expected=sum(1 for e in edges if e is not None and will_compute_grad(e)))

    def make_hook(i):
        def hook(grad):
            from .engine import current_graph_task_id
            task_id = current_graph_task_id()
            if state["task"] != task_id:
                start(task_id)
            if mode == "any":
                if not state["fired"]:
                    state["fired"] = True
                    fn(grad)
                return None
            state["grads"][i] = grad
            state["seen"] += 1
            if state["seen"] == state["expected"]:
                grads, state["grads"] = state["grads"], [None] * n
                fn(grads)
            return None
        return hook

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)
                         if t._requires_grad])


def get_gradient_edge(tensor):
    """The GradientEdge of `tensor`: its grad_fn (or, for a leaf, its AccumulateGrad)
    and its output number. It stays valid after `tensor` is modified in place."""
    if not tensor._requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump `tensor`'s version counter, as an in-place op would (so saved copies of it
    are detected as stale)."""
    if tensor._is_inference and not _grad_state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed. "
                           "You can make a clone to get a normal tensor before doing inplace update.")
    tensor._version_counter[0] += 1


class _unsafe_preserve_version_counter:
    """Context manager: in-place changes to `tensor` inside it leave its version
    counter as it was (so saved copies are not flagged). Unsafe: use only when the
    change provably does not affect what backward reads."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.prev = tensor._version

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _unsafe_set_version_counter(self.tensor, self.prev)
        return False


def _unsafe_set_version_counter(tensor, version):
    if version < 0:
        raise RuntimeError(f"Cannot set a version counter to a value below 0: {version}")
    tensor._version_counter[0] = version


def _will_engine_execute_node(node):
    from .engine import will_engine_execute_node
    return will_engine_execute_node(node)


def _current_graph_task_id():
    from .engine import current_graph_task_id
    return current_graph_task_id()


def _current_graph_task_execution_order():
    from .engine import current_graph_task_execution_order
    return current_graph_task_execution_order()


def _current_autograd_node():
    from .engine import current_autograd_node
    return current_autograd_node()
