"""Scalars of a matrix: det, slogdet, matrix_rank, cond and the norms (vector_norm, matrix_norm,
norm)."""
import math as _math

from .. import functional as _F
from .. import _dtype
from ..ops.registry import registry as _R
from ..ops.linalg_common import check_matrix as _check_matrix, check_float as _check_float
from ..ops import linalg_common as _rt
from ._common import _no_out
from ._decompositions import svdvals, eigvalsh
from ._solvers import inv_ex, _matrix_rank_from


def det(A, *, out=None):
    """torch.linalg.det (differentiable also where A is singular)."""
    _no_out(out, "det")
    return _R["linalg_det"](A)


def slogdet(A, *, out=None):
    """torch.linalg.slogdet: (sign, log|det|); sign 0 and -inf for a singular matrix."""
    _no_out(out, "slogdet")
    return _R["linalg_slogdet"](A)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """torch.linalg.matrix_rank: the number of singular values above max(atol, rtol * S_max)
    (`tol` is the old name of atol)."""
    _no_out(out, "matrix_rank")
    if not A.is_floating_point() and not A.is_complex():
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _dtype.finfo(_rt.real_of(A.dtype)).eps * max(m, n)
    atol = 0.0 if atol is None else atol
    with _no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        return _matrix_rank_from(S, atol, rtol)


def _no_grad():
    from ..autograd import no_grad
    return no_grad()


_MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, _math.inf, -_math.inf)


def _norm_dims(dim, ndim):
    d0, d1 = (d % ndim if ndim else d for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """torch.linalg.matrix_norm: ord 'fro', 'nuc' (sum of singular values), 2 / -2 (largest /
    smallest singular value), 1 / -1 (max / min column abs-sum), inf / -inf (rows)."""
    _no_out(out, "matrix_norm")
    _check_matrix("linalg.matrix_norm", tuple(A.shape), square=False)
    if not (A.is_floating_point() or A.is_complex()):
        _check_float("linalg.matrix_norm", A.dtype)
    if not any(ord == o and type(ord) is type(o) or (isinstance(ord, (int, float)) and not isinstance(o, str)
                                                     and ord == o) for o in _MATRIX_ORDS):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _norm_dims(tuple(dim), A.dim())
    if ord == "fro":
        return vector_norm(A, 2, dim=(d0, d1), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        out_ = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            out_ = out_.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return out_
    # 1 / -1: over columns (sum over d0, extreme over d1); inf / -inf: over rows
    summed, other = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = A.abs().sum(summed, keepdim=True)
    out_ = sums.amax(other, keepdim=True) if ord > 0 else sums.amin(other, keepdim=True)
    return out_ if keepdim else out_.squeeze((d0, d1))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.vector_norm: the `ord`-norm over `dim` (all elements when None)."""
    _no_out(out, "vector_norm")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype.scalar_type_name(x.dtype)}")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if ord == 0:
        nonzero = (x != 0).to(_rt.real_of(x.dtype))
        return nonzero.sum() if dim is None else nonzero.sum(dim=dim, keepdim=keepdim)
    if dim is None:
        out_ = _F.norm(x.reshape(-1), p=ord, dim=0)
        return out_.reshape((1,) * x.dim()) if keepdim else out_
    return _F.norm(x, p=ord, dim=tuple(dim), keepdim=keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm (dim an int, or A 1-D) or a matrix norm (dim a pair,
    or A 2-D); with ord=None and dim=None, the 2-norm of all elements."""
    _no_out(out, "norm")
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A, p=None, *, out=None):
    """torch.linalg.cond: the condition number in the `p` norm (None or 2: S_max / S_min;
    -2: S_min / S_max; 'fro', 'nuc', 1, -1, inf, -inf: norm(A) norm(A^-1), inf where A is
    singular)."""
    _no_out(out, "cond")
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        S = svdvals(A)
        if p == -2:
            return S.amin(-1) / S.amax(-1)
        return S.amax(-1) / S.amin(-1)
    if p not in _MATRIX_ORDS or isinstance(p, bool):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_float("linalg.cond", A.dtype)
    _check_matrix(f"linalg.cond(ord={p})", tuple(A.shape))
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return _F.where(info > 0, _math.inf, value)
