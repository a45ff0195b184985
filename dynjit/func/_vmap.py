"""vmap: run a function written for one example on a batch of them."""
import functools

from ..ops.registry import registry as R
from ..tensor import Tensor
from ._batching import BatchedTensor, VmapLevel, VmapMode, wrap
from .._pytree import tree_flatten, tree_unflatten

_depth = [0]


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """vmap(func)(*args): func applied to every slice of the args along `in_dims`, the
    results stacked along `out_dims` (PyTorch's torch.func.vmap).

    `in_dims` is an int (every argument), or a tuple with one entry per argument: an
    int, None (the argument is the same for every example), or a nested structure
    matching the argument's. `out_dims` is an int or one per output. The function runs
    once, on batched tensors: each op goes through its batching rule (see _batching),
    so tracing a vmapped function (make_fx) records ops on whole batches.
    `randomness`: "error" (a random op inside is an error, as PyTorch), "same" (one draw
    shared by every example); "different" is not supported yet (a random op raises)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, args, kwargs, randomness)
    return wrapped


def _broadcast_in_dims(in_dims, args):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)):
        raise ValueError(f"vmap(in_dims={in_dims!r}): in_dims must be an int, None or a tuple")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap(in_dims={tuple(in_dims)!r}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`: expected one in_dim per "
                         f"argument, got {len(in_dims)} for {len(args)} arguments")
    return list(in_dims)


def _leaf_dims(in_dim, arg):
    """One in_dim per leaf of `arg`."""
    leaves, _ = tree_flatten(arg)
    if isinstance(in_dim, int) or in_dim is None:
        return leaves, [in_dim] * len(leaves)
    dims, _ = tree_flatten(in_dim)
    if len(dims) != len(leaves):
        raise ValueError(f"vmap: in_dim {in_dim!r} does not match the structure of its argument")
    return leaves, dims


def _vmap_call(func, in_dims, out_dims, args, kwargs, randomness="error"):
    per_arg = _broadcast_in_dims(in_dims, args)
    flat, dims = [], []
    for in_dim, arg in zip(per_arg, args):
        leaves, leaf_dims = _leaf_dims(in_dim, arg)
        flat.extend(leaves)
        dims.extend(leaf_dims)
    batch_size = None
    for x, d in zip(flat, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type "
                             f"{type(x).__name__}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"vmap: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {x.dim()} so expected in_dim to satisfy "
                             f"-{x.dim()} <= in_dim < {x.dim()}.")
        n = x.shape[d]
        if batch_size is None:
            batch_size = n
        elif n != batch_size:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {batch_size} and {n} for the mapped dimension")
    if batch_size is None:
        raise ValueError("vmap: at least one input must be a Tensor with a non-None in_dim")

    level = VmapLevel(batch_size, _depth[0] + 1)
    mode = VmapMode(level, randomness)
    # move each mapped dim to the front (one level down: traced if make_fx is tracing)
    wrapped_leaves = [x if d is None else wrap(_to_front(x, d), level) for x, d in zip(flat, dims)]
    it = iter(wrapped_leaves)
    new_args = [tree_unflatten(tree_flatten(a)[1], it) for a in args]
    _depth[0] += 1
    try:
        with mode:
            out = func(*new_args, **kwargs)
    finally:
        _depth[0] -= 1
    return _unwrap_outputs(mode, out, out_dims)


def _to_front(x, d):
    d %= x.dim()
    if d == 0:
        return x
    order = (d,) + tuple(i for i in range(x.dim()) if i != d)
    return R["permute"](x, order)


def _from_front(value, d):
    """Move dimension 0 of `value` to `d`."""
    rank = value.dim()
    d = d % rank
    if d == 0:
        return value
    order = list(range(1, rank))
    order.insert(d, 0)
    return R["permute"](value, tuple(order))


def _unwrap_outputs(mode, out, out_dims):
    leaves, spec = tree_flatten(out)
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(leaves)
    else:
        dims, _ = tree_flatten(out_dims)
        if len(dims) != len(leaves):
            if isinstance(out, tuple) and len(out_dims) == len(out):
                dims = []
                for o, d in zip(out, out_dims):
                    dims.extend([d] * len(tree_flatten(o)[0]))
            else:
                raise ValueError(f"vmap(out_dims={out_dims!r}): out_dims is not compatible with "
                                 "the structure of the outputs")
    results = []
    for x, d in zip(leaves, dims):
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap: the function must return Tensors, got {type(x).__name__} "
                             "as an output")
        if mode.is_batched(x):
            value = x._bt_value
        elif isinstance(x, BatchedTensor) and x._bt_level.depth > mode.level.depth:
            raise RuntimeError("vmap: a batched tensor of an inner vmap escaped it")
        else:           # the same for every example
            if d is None:
                results.append(x)
                continue
            value = R["expand"](R["unsqueeze"](x, 0), (mode.level.batch_size,) + tuple(x.shape))
        if d is None:
            raise ValueError("vmap: out_dim=None was given for an output that is batched")
        results.append(_from_front(value, d))
    return tree_unflatten(spec, iter(results))
