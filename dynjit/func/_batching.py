"""vmap's machinery: batched tensors and the batching rules of the registered ops.

Inside `vmap`, a function sees `BatchedTensor`s: tensors whose shape is one
example's shape (the *logical* shape) and which stand for a real tensor, their
`value`, that holds the whole batch in dimension 0. A `VmapMode` (a dispatch
mode, one per vmap level) sees every op; when an argument is a batched tensor
of its level it rewrites the call with the op's batching rule into ops on the
values (dimension arguments shifted by one, ranks aligned for broadcasting,
...), runs them one level down (an outer vmap, a tracer such as make_fx, or
eager execution with autograd) and wraps the result. So a vmapped function runs
as a few ops on whole batches, and make_fx records exactly those ops.

An op without a rule raises NotImplementedError naming it.
"""
import numpy as np

from ..ops.dispatch import DispatchMode
from ..ops.registry import (POINTWISE, REDUCTION, INPLACE, FACTORY, NONE_DIM_REDUCES_ALL, RANDOM, BATCHED_MATRICES,
                            registry)
from ..tensor import Tensor

R = registry


class BatchedTensor(Tensor):
    """A tensor inside vmap: one example's view of `_bt_value`, whose dimension 0 is the
    batch. Its own `_data` only carries the logical shape, dtype and strides; values
    are read through ops, never from Python (item(), tolist() ... raise)."""

    def __repr__(self):
        return (f"BatchedTensor(lvl={self._bt_level.depth}, bdim=0, "
                f"value={self._bt_value!r})")

    __str__ = __repr__

    def _no_python_read(self, *args, **kwargs):
        raise RuntimeError("vmap: reading a batched tensor's values in Python (item, tolist, bool, "
                           "numpy) is not supported: the value differs per example. Write it with "
                           "tensor ops instead.")

    item = tolist = numpy = __bool__ = __float__ = __int__ = __index__ = _no_python_read


def wrap(value, level):
    """A BatchedTensor of `level` standing for `value` (batch in dimension 0)."""
    data = value._data
    logical = data[0] if data.shape[0] else np.empty(data.shape[1:], dtype=data.dtype)
    t = object.__new__(BatchedTensor)
    t._data = logical
    t._version_counter = value._version_counter
    t._bt_value = value
    t._bt_level = level
    return t


class VmapLevel:
    """One vmap call: its batch size and nesting depth."""

    def __init__(self, batch_size, depth):
        self.batch_size = batch_size
        self.depth = depth


class VmapMode(DispatchMode):
    """Applies the batching rules of one vmap level."""

    def __init__(self, level, randomness="same"):
        self.level = level
        self.randomness = randomness

    def is_batched(self, x):
        return isinstance(x, BatchedTensor) and x._bt_level is self.level

    def __dispatch__(self, op, args, kwargs):
        if self.randomness != "same" and RANDOM in op.tags:
            _refuse_random(self.randomness)
        if not _any_batched(self, args, kwargs):
            return op(*args, **kwargs)
        args = op.normalize(tuple(args), kwargs)
        rule = _RULES.get(op.name)
        if rule is None and BATCHED_MATRICES in op.tags:
            rule = _batched_matrices
        if rule is None:
            rule = _KIND_RULES.get(op.kind)
        if rule is None:
            raise NotImplementedError(
                f"vmap: no batching rule for dynjit.ops.{op.name} (kind {op.kind}); it cannot be "
                "applied to a batched tensor yet")
        return rule(self, op, args)


RANDOM_OP_IN_VMAP = ("vmap: called random operation while in randomness error mode. Please either "
                     "use the 'same' or 'different' randomness flags on vmap or perform the "
                     "randomness operation out of vmap")


def _refuse_random(randomness):
    if randomness == "error":
        raise RuntimeError(RANDOM_OP_IN_VMAP)
    raise NotImplementedError("vmap: randomness='different' (independent random values per "
                              "example) is not supported yet; use randomness='same' or draw the "
                              "random values outside vmap")


def _any_batched(mode, args, kwargs):
    for a in args:
        if mode.is_batched(a):
            return True
        if isinstance(a, (list, tuple)) and any(mode.is_batched(t) for t in a):
            return True
    return any(mode.is_batched(v) for v in kwargs.values())


# -- helpers ------------------------------------------------------------------------

def _value(mode, x):
    return x._bt_value if mode.is_batched(x) else x


def _out(mode, result):
    """Wrap an op's result computed on values (batch in dimension 0)."""
    if isinstance(result, Tensor):
        return wrap(result, mode.level)
    if isinstance(result, (tuple, list)):
        items = [_out(mode, r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def _pad_to(value, logical_rank, rank):
    """A batched value of `logical_rank` with size-1 dims after the batch dim up to `rank`."""
    if logical_rank >= rank:
        return value
    shape = (value._data.shape[0],) + (1,) * (rank - logical_rank) + value._data.shape[1:]
    return R["reshape"](value, shape)


def _batched_full(mode, x):
    """A value of `x` with a batch dimension, expanded if `x` is not batched."""
    if mode.is_batched(x):
        return x._bt_value
    b = mode.level.batch_size
    return R["expand"](R["unsqueeze"](x, 0), (b,) + tuple(x._data.shape))


def _wrap_dim(d, rank):
    if not -rank <= d < max(rank, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {d})")
    return d % rank if rank else 0


def _shift_dims(dim, rank):
    """A logical dim argument (int, or tuple/list of ints) as a dim of the value."""
    if isinstance(dim, (tuple, list)):
        return type(dim)(_wrap_dim(d, rank) + 1 for d in dim)
    return _wrap_dim(dim, rank) + 1


# -- rules by kind -------------------------------------------------------------------

def _pointwise(mode, op, args):
    """Broadcasting ops: batched operands get size-1 dims after the batch dim so that
    their logical dims line up with the other operands'."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    rank = max(t._data.ndim for t in tensors)
    new = [(_pad_to(a._bt_value, a._data.ndim, rank) if mode.is_batched(a) else a)
           for a in args]
    return _out(mode, op(*new))


def _batched_matrices(mode, op, args):
    """Ops over batches of matrices whose leading dims broadcast (linalg): the operands'
    logical dims are lined up as for pointwise ops, and every output has the vmap batch in
    front."""
    result = _pointwise(mode, op, args)
    size = mode.level.batch_size
    for out in (result if isinstance(result, (tuple, list)) else (result,)):
        value = out._bt_value if isinstance(out, Tensor) and mode.is_batched(out) else None
        if value is not None and (value._data.ndim == 0 or value._data.shape[0] != size):
            raise NotImplementedError(f"vmap: dynjit.ops.{op.name} gives an output without the batch "
                                      f"dimension here (shape {list(value._data.shape)})")
    return result


def _inplace(mode, op, args):
    self = args[0]
    if not mode.is_batched(self):
        raise RuntimeError(
            f"vmap: {op.name}(self, *extra_args) is not possible because self is not batched but "
            "an extra argument is: an in-place op cannot write a batch of values into one tensor. "
            "Use the out-of-place version of the op instead.")
    fop = op.functional
    if fop.kind is not POINTWISE and fop.name not in _RULES:
        # the rule below lines up pointwise operands; an op with a rule of its own
        # (tril, copy, ...) is fine with that too, the others (index_put, scatter) are not
        raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name}")
    rank = self._data.ndim
    new = [self._bt_value] + [
        (_pad_to(a._bt_value, a._data.ndim, rank) if mode.is_batched(a) else a) for a in args[1:]]
    op(*new)
    return self


def _self_only(mode, op, args):
    """Ops that work elementwise on `self` alone (clone, detach, to_dtype, fill ...)."""
    if any(mode.is_batched(a) for a in args[1:]):
        return _pointwise(mode, op, args)
    return _out(mode, op(args[0]._bt_value, *args[1:]))


def _reduction(mode, op, args):
    """Ops with a `dim` parameter: the dim is shifted past the batch dim; dim=None
    (all dims) becomes every logical dim, reduced from a (batch, -1) reshape."""
    self = args[0]
    if not mode.is_batched(self) or any(mode.is_batched(a) for a in args[1:]):
        raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name} with a "
                                  "batched argument other than self")
    if "dim" not in op.index:
        full = op.dim_overload
        if full is None:
            raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name}")
        value = R["reshape"](self._bt_value, (mode.level.batch_size, -1))
        return _out(mode, R[full](value, 1)[0])
    i = op.index["dim"]
    dim = args[i]
    rank = self._data.ndim
    value = self._bt_value
    new = list(args)
    new[0] = value
    if dim is None:
        if NONE_DIM_REDUCES_ALL not in op.tags:
            raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name} with dim=None")
        new[0] = R["reshape"](value, (mode.level.batch_size, -1))
        new[i] = 1
        out = op(*new)
        keepdim = "keepdim" in op.index and args[op.index["keepdim"]]
        if keepdim:         # (batch, 1) -> (batch, 1, ..., 1) with the logical rank
            out = R["reshape"](out, (mode.level.batch_size,) + (1,) * rank)
        return _out(mode, out)
    new[i] = _shift_dims(dim, rank)
    return _out(mode, op(*new))


def _factory(mode, op, args):
    raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name} on a batched "
                              "tensor (random or factory op)")


_KIND_RULES = {POINTWISE: _pointwise, INPLACE: _inplace, REDUCTION: _reduction, FACTORY: _factory}


# -- rules by op ---------------------------------------------------------------------

def _only_self_batched(mode, op, args):
    if not mode.is_batched(args[0]) or any(mode.is_batched(a) for a in args[1:]):
        raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name} with a "
                                  "batched argument other than self")
    return args[0]._bt_value, args[0]._data.ndim


def _dim_rule(*dim_params, rank_extra=0):
    """A rule for ops whose only batched argument is self, with dims to shift."""
    def rule(mode, op, args):
        value, rank = _only_self_batched(mode, op, args)
        new = list(args)
        new[0] = value
        for p in dim_params:
            i = op.index[p]
            if new[i] is not None:
                new[i] = _shift_dims(new[i], rank + rank_extra)
        return _out(mode, op(*new))
    return rule


def _view_rule(mode, op, args):        # view / reshape
    value, _ = _only_self_batched(mode, op, args)
    shape = args[1]
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _out(mode, op(value, (mode.level.batch_size,) + shape))


def _expand_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    size = tuple(args[1])
    value = _pad_to(value, rank, len(size))
    return _out(mode, op(value, (mode.level.batch_size,) + size))


def _permute_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    dims = (0,) + tuple(_wrap_dim(d, rank) + 1 for d in args[1])
    return _out(mode, op(value, dims))


def _t_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    if rank < 2:
        return _out(mode, R["view"](value, tuple(value._data.shape)))
    return _out(mode, R["transpose"](value, 1, 2))


def _squeeze_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    dim = args[1]
    if dim is None:
        dim = tuple(i for i, s in enumerate(args[0]._data.shape) if s == 1)
        if not dim:
            return _out(mode, R["view"](value, tuple(value._data.shape)))
    return _out(mode, op(value, _shift_dims(dim, rank)))


def _getitem_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    index = args[1]
    index = index if isinstance(index, tuple) else (index,)
    positions = [i for i, x in enumerate(index) if isinstance(x, (Tensor, list))]
    if any(mode.is_batched(x) for x in index if isinstance(x, Tensor)):
        raise NotImplementedError("vmap: indexing with a batched index tensor is not supported")
    if positions and (positions[-1] - positions[0] + 1 != len(positions)):
        raise NotImplementedError("vmap: advanced indices separated by slices are not supported")
    return _out(mode, op(value, (slice(None),) + index))


def _matmul_rule(mode, op, args):
    """matmul, mm, mv, bmm, dot: 1-d operands become matrices, the operands' logical
    batch dims are aligned, then one matmul over the values."""
    a, b = args[0], args[1]
    la, lb = a._data.ndim, b._data.ndim
    if op.name == "dot":
        out = R["sum"](_pointwise(mode, R["mul"], (a, b))._bt_value, -1)
        return _out(mode, out)
    va, vb = _value(mode, a), _value(mode, b)
    ba, bb = mode.is_batched(a), mode.is_batched(b)
    if la == 1:
        va = R["unsqueeze"](va, -2)
    if lb == 1:
        vb = R["unsqueeze"](vb, -1)
    ra, rb = max(la, 2), max(lb, 2)
    rank = max(ra, rb)
    if ba:
        va = _pad_to(va, ra, rank)
    if bb:
        vb = _pad_to(vb, rb, rank)
    out = R["matmul"](va, vb)
    if lb == 1:
        out = R["squeeze"](out, -1)
    if la == 1:
        out = R["squeeze"](out, -2 if lb != 1 else -1)
    return _out(mode, out)


def _linear_rule(mode, op, args):
    x, weight, bias = args
    if mode.is_batched(weight) or mode.is_batched(bias):
        out = _matmul_rule(mode, R["matmul"], (x, R["t"](weight)))
        return out if bias is None else R["add"](out, bias)
    return _out(mode, op(x._bt_value, weight, bias))


def _list_rule(mode, op, args):        # cat / stack
    tensors, dim = args[0], args[1]
    rank = tensors[0]._data.ndim + (1 if op.name == "stack" else 0)
    values = [_batched_full(mode, t) for t in tensors]
    return _out(mode, op(values, _wrap_dim(dim, rank) + 1))


def _copy_rule(mode, op, args):        # copy(self, src): src broadcast into self's shape
    self, src = args
    value = _batched_full(mode, self)
    if mode.is_batched(src):
        src = _pad_to(src._bt_value, src._data.ndim, self._data.ndim)
    return _out(mode, op(value, src))


def _sum_to_size_rule(mode, op, args):
    value, rank = _only_self_batched(mode, op, args)
    size = tuple(args[1])
    extra = rank - len(size)
    if extra > 0:
        value = R["sum"](value, tuple(range(1, extra + 1)))
    return _out(mode, op(value, (mode.level.batch_size,) + size))


def _split_rule(mode, op, args):       # split_with_sizes(self, sizes, dim) / unbind(self, dim)
    value, rank = _only_self_batched(mode, op, args)
    new = list(args)
    new[0] = value
    new[-1] = _wrap_dim(new[-1], rank) + 1
    return _out(mode, op(*new))


_RULES = {
    "view": _view_rule, "reshape": _view_rule, "expand": _expand_rule,
    "permute": _permute_rule, "t": _t_rule, "squeeze": _squeeze_rule, "getitem": _getitem_rule,
    "transpose": _dim_rule("dim0", "dim1"), "select": _dim_rule("dim"),
    "narrow": _dim_rule("dim"), "diagonal": _dim_rule("dim1", "dim2"),
    "unsqueeze": _dim_rule("dim", rank_extra=1),
    "unbind": _split_rule, "split_with_sizes": _split_rule,
    "softmax": _dim_rule("dim"), "log_softmax": _dim_rule("dim"), "flip": _dim_rule("dims"),
    "cumsum": _dim_rule("dim"), "cumprod": _dim_rule("dim"),
    "sum_to_size": _sum_to_size_rule,
    "matmul": _matmul_rule, "mm": _matmul_rule, "mv": _matmul_rule, "bmm": _matmul_rule,
    "dot": _matmul_rule, "linear": _linear_rule,
    "cat": _list_rule, "stack": _list_rule,
    "clone": _self_only, "contiguous_copy": _self_only, "detach": _self_only,
    "to_dtype": _self_only, "fill": _self_only, "zero": _self_only, "tril": _self_only,
    "triu": _self_only,
    "copy": _copy_rule,
}


def _unsupported(mode, op, args):
    raise NotImplementedError(f"vmap: no batching rule for dynjit.ops.{op.name}")


# ops that the rule of their kind would get wrong
_RULES["value_selecting_backward"] = _unsupported
