"""vjp, grad, grad_and_value and jacrev, on dynjit's autograd engine.

The function runs on aliases of the primals that require grad; the engine
(autograd.grad) computes the vector-Jacobian products. When a primal already
requires grad (an outer transform, or the caller's own autograd), the alias keeps
its history and the products are computed with create_graph, so transforms nest
(jacrev(jacrev(f)) is a Hessian) and compose with ordinary autograd. jacrev is
vmap over the vjp of the basis vectors of each output's space.
"""
import functools

from .. import autograd as _autograd
from ..autograd.grad_mode import enable_grad, state as _grad_state
from ..ops.registry import registry as R
from ..tensor import Tensor
from ._batching import BatchedTensor
from .._pytree import tree_flatten, tree_unflatten
from ._vmap import vmap


_INSIDE_VMAP = ("{}: differentiating batched tensors inside vmap (vmap(grad(f)), per-example "
                "gradients) is not supported yet; apply vmap inside the transform instead "
                "(jacrev(f) = vmap of vjp works)")


def _alias_for_grad(p):
    if isinstance(p, BatchedTensor):
        raise NotImplementedError(_INSIDE_VMAP.format("vjp/grad/jacrev"))
    if not isinstance(p, Tensor):
        raise TypeError(f"expected the differentiated inputs to be Tensors, got {type(p).__name__}")
    if not (p.dtype.is_floating_point or p.dtype.is_complex):
        raise RuntimeError(f"only floating point and complex Tensors can be differentiated, got {p.dtype.name}")
    if p._requires_grad and _grad_state.enabled:
        return R["view"](p, tuple(p._data.shape)), True     # keeps p's history
    alias = R["detach"](p).requires_grad_(True)
    if p._fw_grads:
        # inside jvp/jacfwd (hessian is jacfwd of jacrev): the alias keeps p's tangents, so
        # the reverse pass is differentiated forward
        from ..autograd import forward_ad
        for level in forward_ad._levels:
            tangent = forward_ad.get_tangent(p, level)
            if tangent is not None:
                forward_ad.set_tangent(alias, tangent, level)
    return alias, False


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives, per primal (nested
    structures allowed), the cotangents' product with func's Jacobian."""
    flat_primals, primals_spec = tree_flatten(primals)
    diff, nested = [], False
    for p in flat_primals:
        a, keeps = _alias_for_grad(p)
        diff.append(a)
        nested = nested or keeps
    args = tree_unflatten(primals_spec, iter(diff))
    with enable_grad():
        out = func(*args)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                               "(output, aux) if has_aux is True")
        out, aux = out
    flat_out, _ = tree_flatten(out)
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, "
                               f"got unsupported type {type(o).__name__}")
        if isinstance(o, BatchedTensor):
            raise NotImplementedError(_INSIDE_VMAP.format("vjp/grad/jacrev"))

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        """The products of `cotangents` (structured like func's output) with the Jacobian,
        structured like the primals."""
        if create_graph is None:
            create_graph = nested and _grad_state.enabled
        flat_cot, _ = tree_flatten(cotangents)
        if len(flat_cot) != len(flat_out):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function")
        pairs = [(o, c) for o, c in zip(flat_out, flat_cot) if o._requires_grad]
        if pairs:
            grads = _autograd.grad([o for o, _ in pairs], diff, [c for _, c in pairs],
                                   retain_graph=retain_graph, create_graph=create_graph,
                                   allow_unused=True)
        else:
            grads = [None] * len(diff)
        grads = [R["zeros"](tuple(p._data.shape), p.dtype) if g is None else g
                 for g, p in zip(grads, diff)]
        return tree_unflatten(primals_spec, iter(grads))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _select(argnums, args):
    if isinstance(argnums, int):
        return (args[argnums],)
    if not isinstance(argnums, tuple) or not argnums:
        raise RuntimeError(f"argnums must be int or a non-empty Tuple[int, ...], got {argnums!r}")
    return tuple(args[i] for i in argnums)


def _with_replaced(args, argnums, new):
    args = list(args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    for i, v in zip(nums, new):
        args[i] = v
    return args


def _vjp_of_chosen(func, argnums, args, kwargs, has_aux):
    """vjp of func with respect to args[argnums] only (the other arguments held fixed)."""
    chosen = _select(argnums, args)

    def f(*ps):
        return func(*_with_replaced(args, argnums, ps), **kwargs)
    return chosen, vjp(f, *chosen, has_aux=has_aux)


def grad_and_value(func, argnums=0, has_aux=False):
    """(gradient of func's scalar output w.r.t. args[argnums], the output[, aux])."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        chosen, result = _vjp_of_chosen(func, argnums, args, kwargs, has_aux)
        out, vjp_fn = result[0], result[1]
        if not isinstance(out, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, "
                               f"got {type(out).__name__}")
        if out.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                               f"Tensor, got tensor with {out.dim()} dims. Maybe you wanted to "
                               "use the vjp or jacrev APIs instead?")
        grads = vjp_fn(R["ones"]((), out.dtype))
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        value = out if _grad_state.enabled and any(
            isinstance(a, Tensor) and a._requires_grad for a in chosen) else R["detach"](out)
        return (g, (value, result[2])) if has_aux else (g, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of func's scalar output w.r.t. args[argnums] (an int or a tuple)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian of func w.r.t. args[argnums], by reverse mode: vmap of the vjp over
    the rows of an identity. Shape: output shape + input shape (per output and input
    when there are several)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        chosen, result = _vjp_of_chosen(func, argnums, args, kwargs, has_aux)
        out, vjp_fn = result[0], result[1]
        flat_out, out_spec = tree_flatten(out)
        per_output = []
        for k, o in enumerate(flat_out):
            n = o.numel()
            basis = R["reshape"](R["eye"](n, n, o.dtype), (n,) + tuple(o._data.shape))

            def one_row(row, k=k):
                cot = [row if j == k else R["zeros"](tuple(q._data.shape), q.dtype)
                       for j, q in enumerate(flat_out)]
                return vjp_fn(tree_unflatten(out_spec, iter(cot)))
            rows = vmap(one_row)(basis)        # per primal: (n, *primal.shape)
            jac = tuple(R["reshape"](r, tuple(o._data.shape) + tuple(p._data.shape))
                        for r, p in zip(rows, chosen))
            per_output.append(jac[0] if isinstance(argnums, int) else jac)
        jac = tree_unflatten(out_spec, iter(per_output))
        return (jac, result[2]) if has_aux else jac
    return wrapper
