"""The torch.* linear-algebra functions outside torch.linalg that programs still use, with
their old signatures and return types (`svd` returns V, not Vh, and takes `some`;
`triangular_solve(b, A)` returns a copy of A too), and the Tensor methods PyTorch has for
them (`A.det()`, `A.inverse()`, `A.svd()`, ...). All are composites of dynjit.linalg.
dynjit/__init__.py exports the functions as `dynjit.<name>`."""
import math

from . import (det, slogdet as _linalg_slogdet, inv, cholesky as _linalg_cholesky, solve_triangular, svd as
               _linalg_svd, qr as _linalg_qr, pinv, matrix_exp, matrix_power, cross as _linalg_cross)
from .. import functional as _F
from ..ops import linalg_common as _rt
from ..ops.registry import registry as _R
from ..tensor import Tensor

__all__ = ["det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_solve", "cholesky_inverse",
           "triangular_solve", "svd", "qr", "pinverse", "matrix_exp", "matrix_power", "cross", "lu_unpack"]


def slogdet(input):
    """torch.slogdet: (sign, logabsdet) as torch.return_types.slogdet."""
    return _rt.slogdet(*_linalg_slogdet(input))


def logdet(input):
    """torch.logdet: log det(A); nan where a real det is negative, -inf where it is 0."""
    sign, logabsdet = _linalg_slogdet(input)
    if _rt.is_complex(input):
        return logabsdet + sign.log()
    return _F.where(sign < 0, math.nan, logabsdet)


def inverse(input, *, out=None):
    return inv(input, out=out)


def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in PyTorch for torch.linalg.cholesky)."""
    return _linalg_cholesky(input, upper=upper, out=out)


def _check_rhs(B):
    if B.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead")


def cholesky_solve(input, input2, upper=False, *, out=None):
    """torch.cholesky_solve(B, L): X with A X = B, A = L L^H (or U^H U when upper)."""
    _check_rhs(input)
    if out is not None:
        raise NotImplementedError("dynjit.cholesky_solve: out= is not supported; use the returned value")
    factor = input2
    if upper:
        y = solve_triangular(_rt.mH(factor), input, upper=False)
        return solve_triangular(factor, y, upper=True)
    y = solve_triangular(factor, input, upper=False)
    return solve_triangular(_rt.mH(factor), y, upper=True)


def cholesky_inverse(input, upper=False, *, out=None):
    """torch.cholesky_inverse(L): A^{-1} from A's Cholesky factor."""
    if out is not None:
        raise NotImplementedError("dynjit.cholesky_inverse: out= is not supported; use the returned value")
    eye = _F.eye(input.shape[-1], dtype=input.dtype).expand(tuple(input.shape)).clone()
    return cholesky_solve(eye, input, upper)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve(b, A): (solution of A X = b, or A^T X = b when transpose, and a
    copy of A) as torch.return_types.triangular_solve."""
    if input.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{input.dim()} dimensions instead")
    if out is not None:
        raise NotImplementedError("dynjit.triangular_solve: out= is not supported; use the returned value")
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    return _rt.triangular_solve(solution, A.clone())


def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with A = U diag(S) V^H; `some` gives the reduced factors;
    compute_uv=False gives zero U and V (full size), as PyTorch does."""
    if out is not None:
        raise NotImplementedError("dynjit.svd: out= is not supported; use the returned value")
    if not compute_uv:
        S = _linalg_svd(input, False).S
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return _rt.svd(_F.zeros(batch + (m, m), dtype=input.dtype), S, _F.zeros(batch + (n, n), dtype=input.dtype))
    U, S, Vh = _linalg_svd(input, not some)
    return _rt.svd(U, S, _rt.mH(Vh))


def qr(input, some=True, *, out=None):
    """torch.qr: (Q, R), reduced when `some`."""
    if out is not None:
        raise NotImplementedError("dynjit.qr: out= is not supported; use the returned value")
    return _rt.qr(*_linalg_qr(input, "reduced" if some else "complete"))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """torch.lu_unpack: (P, L, U) from lu_factor's packed LU and pivots (empty tensors for the
    parts not unpacked)."""
    if out is not None:
        raise NotImplementedError("dynjit.lu_unpack: out= is not supported; use the returned value")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = _F.zeros(0, dtype=LU_data.dtype)
    P = _R["lu_pivots_to_permutation"](LU_pivots, m, LU_data.dtype) if unpack_pivots else empty
    if not unpack_data:
        return _rt.lu_unpack(P, empty, empty)
    L = LU_data.narrow(-1, 0, k).tril(-1) + _F.eye(m, k, dtype=LU_data.dtype)
    U = LU_data.narrow(-2, 0, k).triu()
    return _rt.lu_unpack(P, L, U)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with singular values below rcond * S_max taken as zero."""
    return pinv(input, rtol=rcond)


def cross(input, other, dim=None, *, out=None):
    """torch.cross: with dim=None, along the first dim of size 3 (PyTorch's deprecated default)."""
    if dim is None:
        shape = _F.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    return _linalg_cross(input, other, dim=dim, out=out)


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__qualname__ = f"Tensor.{fn.__name__}"
    method.__doc__ = f"dynjit.{fn.__name__}(self, ...), a composite of dynjit.linalg."
    return method


for _fn in (det, logdet, slogdet, inverse, cholesky, cholesky_solve, cholesky_inverse, triangular_solve, svd,
            qr, pinverse, matrix_exp, matrix_power, cross):
    if not hasattr(Tensor, _fn.__name__):
        setattr(Tensor, _fn.__name__, _method(_fn))
if not hasattr(Tensor, "mH"):
    Tensor.mH = property(_rt.mH, doc="The conjugate transpose of a batch of matrices (torch.Tensor.mH).")
    Tensor.adjoint = _rt.mH
