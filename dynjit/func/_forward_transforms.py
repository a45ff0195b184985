"""jvp, jacfwd, linearize and hessian: forward-mode transforms on dynjit.autograd.forward_ad.

Each call runs the function inside its own dual level (levels nest here, unlike the
public forward_ad API, so jvp(jvp(f)) and jacfwd(jacfwd(f)) work: the inner level's
tangent computations run through the outer one). jacfwd is one jvp per element of
the chosen inputs (a column of the Jacobian each); hessian is jacfwd of jacrev
(forward-over-reverse): the reverse pass is itself differentiated forward.
"""
import functools

from ..autograd import forward_ad as _fwAD
from ..ops.registry import registry as R
from ..tensor import Tensor
from .._pytree import tree_flatten, tree_unflatten
from ._eager_transforms import _select, _with_replaced, jacrev


def _check_primal(p, what):
    if not isinstance(p, Tensor):
        raise TypeError(f"{what}: Expected primals to be a tuple of Tensors, got {type(p).__name__}")
    if not (p.dtype.is_floating_point or p.dtype.is_complex):
        raise RuntimeError(f"{what}: only floating point Tensors can be differentiated, got "
                           f"{p.dtype.name}")


def _unpack_outputs(out, what):
    flat, spec = tree_flatten(out)
    primals, tangents = [], []
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{what}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o).__name__}")
        p, t = _fwAD.unpack_dual(o)
        primals.append(p)
        tangents.append(t if t is not None else R["zeros"](tuple(o._data.shape), o.dtype))
    return tree_unflatten(spec, iter(primals)), tree_unflatten(spec, iter(tangents))


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J @ tangents): the output and its directional derivative along
    `tangents` (structured like `primals`)."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if len(flat_p) != len(flat_t) or spec_p != spec_t:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be; got "
                           f"{len(flat_p)} primals and {len(flat_t)} tangents")
    for p, t in zip(flat_p, flat_t):
        _check_primal(p, "jvp(f, primals, tangents)")
        if not isinstance(t, Tensor) or t._data.shape != p._data.shape:
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                               "the same shape, got "
                               f"{tuple(p.shape)} and {tuple(t.shape) if isinstance(t, Tensor) else t!r}")
    with _fwAD._nested_level():
        duals = [_fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        out = func(*tree_unflatten(spec_p, iter(duals)))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a "
                                   "tuple: (output, aux) if has_aux is True")
            out, aux = out
        value, jv = _unpack_outputs(out, "jvp(f, primals, tangents)")
    return (value, jv, aux) if has_aux else (value, jv)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product at
    `primals` (computed by a forward-mode pass per call)."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func w.r.t. args[argnums] by forward mode: one jvp per element of
    the chosen inputs. Shape: output shape + input shape (per output and input when there
    are several)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        chosen = _select(argnums, args)
        for p in chosen:
            _check_primal(p, "jacfwd(f, argnums)")

        def f(*ps):
            return func(*_with_replaced(args, argnums, ps), **kwargs)

        columns = []        # per chosen input: per element, the flat output tangents
        value = aux = spec = None
        for k, p in enumerate(chosen):
            cols = []
            n = p.numel()
            for e in range(n):
                tangents = [R["zeros"](tuple(q._data.shape), q.dtype) for q in chosen]
                basis = R["zeros"]((n,), p.dtype)
                basis._data[e] = 1
                tangents[k] = R["reshape"](basis, tuple(p._data.shape))
                res = jvp(f, tuple(chosen), tuple(tangents), has_aux=has_aux)
                flat_v, spec = tree_flatten(res[0])
                value = res[0]
                if has_aux:
                    aux = res[2]
                cols.append(tree_flatten(res[1])[0])
            if n == 0:
                res = f(*chosen)
                value = res[0] if has_aux else res
                aux = res[1] if has_aux else None
                flat_v, spec = tree_flatten(value)
            columns.append(cols)
        flat_v, spec = tree_flatten(value)
        per_output = []
        for j, o in enumerate(flat_v):
            jac = []
            for p, cols in zip(chosen, columns):
                shape = tuple(o._data.shape) + tuple(p._data.shape)
                if cols:
                    stacked = R["stack"]([c[j] for c in cols], -1)
                    jac.append(R["reshape"](stacked, shape))
                else:
                    jac.append(R["zeros"](shape, o.dtype))
            per_output.append(jac[0] if isinstance(argnums, int) else tuple(jac))
        jac = tree_unflatten(spec, iter(per_output))
        return (jac, aux) if has_aux else jac
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar func w.r.t. args[argnums]: jacfwd of jacrev
    (forward-over-reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)
