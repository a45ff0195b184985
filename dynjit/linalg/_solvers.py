"""torch.linalg's solvers and inverses: inv, inv_ex, solve, solve_ex, solve_triangular,
lu_solve, lstsq, pinv, tensorinv, tensorsolve, householder_product."""
import math as _math

from .. import functional as _F
from .. import _dtype
from ..ops.registry import registry as _R
from ..ops.linalg_common import LinAlgError, check_input as _check_input, check_matrix as _check_matrix, \
    check_float as _check_float
from ..ops import linalg_common as _rt
from ._common import _no_out
from ._decompositions import svdvals, lu_factor_ex


def inv_ex(A, *, check_errors=False, out=None):
    _no_out(out, "inv_ex")
    try:
        return _R["linalg_inv_ex"](A, check_errors)
    except LinAlgError as e:        # (the op's errors name linalg.inv, its usual caller)
        raise LinAlgError(str(e).replace("linalg.inv:", "linalg.inv_ex:", 1)) from None


def inv(A, *, out=None):
    """torch.linalg.inv: raises LinAlgError for a singular matrix."""
    _no_out(out, "inv")
    return _R["linalg_inv_ex"](A, True).inverse


def _is_vector_rhs(A, B):
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True, out=None):
    """torch.linalg.solve: X with AX = B (left) or XA = B; B may be a (batch of) vector(s)."""
    _no_out(out, "solve")
    _check_input("linalg.solve", A, "lu")
    if left and _is_vector_rhs(A, B):
        return _R["linalg_solve"](A, B.unsqueeze(-1)).squeeze(-1)
    if B.dim() == 1:
        B = B.unsqueeze(-1)
    if left:
        return _R["linalg_solve"](A, B)
    # X A = B  <=>  A^T X^T = B^T
    if B.dim() >= 2 and B.shape[-1] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    return _R["linalg_solve"](A.mT, B.mT).mT


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """torch.linalg.solve_triangular: X with AX = B (left) or XA = B, A triangular (only its
    `upper` or lower triangle is read; its diagonal is taken as ones when unitriangular)."""
    _no_out(out, "solve_triangular")
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    return _R["linalg_solve_triangular"](A, B, upper, left, unitriangular)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """torch.linalg.lu_solve: X with AX = B (left) or XA = B, or with A^H (adjoint), from
    lu_factor's (LU, pivots); differentiable in LU and B."""
    _no_out(out, "lu_solve")
    _check_matrix("torch.linalg.lu_solve", tuple(LU.shape))
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    P = _R["lu_pivots_to_permutation"](pivots, n, LU.dtype)
    tri = _R["linalg_solve_triangular"]
    LUh = _rt.mH(LU)
    if left and not adjoint:        # X = U^-1 L^-1 P^T B
        y = tri(LU, P.mT @ B, False, True, True)
        return tri(LU, y, True, True, False)
    if left:                        # A^H = U^H L^H P^T: X = P L^-H U^-H B
        y = tri(LUh, B, False, True, False)
        return P @ tri(LUh, y, True, True, True)
    if not adjoint:                 # X P L U = B: X = B U^-1 L^-1 P^T
        y = tri(LU, B, True, False, False)
        return tri(LU, y, False, False, True) @ P.mT
    y = tri(LUh, B @ P, True, False, True)    # X U^H L^H P^T = B
    return tri(LUh, y, False, False, False)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """torch.linalg.solve_ex: (result, info) of solve; info is LU's first zero pivot (1-based)
    where A is singular (the result there is inf/nan), 0 elsewhere."""
    _no_out(out, "solve_ex")
    _check_input("linalg.solve", A, "lu")
    LU, pivots, info = lu_factor_ex(A)
    if check_errors:
        result = solve(A, B, left=left)
    elif left and _is_vector_rhs(A, B):
        result = lu_solve(LU, pivots, B.unsqueeze(-1)).squeeze(-1)
    else:
        result = lu_solve(LU, pivots, B.unsqueeze(-1) if B.dim() == 1 else B, left=left)
    return _rt.linalg_solve_ex(result, info)


def householder_product(A, tau, *, out=None):
    """torch.linalg.householder_product: the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H,
    v_i the i-th column of A below the diagonal with a 1 on it (LAPACK's orgqr)."""
    _no_out(out, "householder_product")
    name = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1] if tau.dim() else 1
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau dtype {_dtype.scalar_type_name(tau.dtype)} does not match input dtype "
                           f"{_dtype.scalar_type_name(A.dtype)}")
    _check_float(name, A.dtype)
    Q = _F.eye(m, n, dtype=A.dtype).expand(tuple(A.shape)).clone()
    rows = _F.arange(m)
    for i in reversed(range(k)):        # Q = H_i Q, innermost first
        below = (rows > i).to(A.dtype)
        v = A[..., :, i] * below + (rows == i).to(A.dtype)
        vh = v.conj() if v.is_complex() else v
        Q = Q - (tau[..., i].unsqueeze(-1) * v).unsqueeze(-1) * (vh.unsqueeze(-2) @ Q)
    return Q


def tensorinv(A, ind=2, *, out=None):
    """torch.linalg.tensorinv: the inverse of A seen as a matrix of its first `ind` dims by the
    rest, shaped A.shape[ind:] + A.shape[:ind]."""
    _no_out(out, "tensorinv")
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = _math.prod(A.shape[:ind]), _math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(A, B, dims=None, *, out=None):
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) = B (`dims` of A moved to the end
    first)."""
    _no_out(out, "tensorsolve")
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.movedim(tuple(dims), tuple(range(A.dim() - len(dims), A.dim())))
    result_shape = tuple(A.shape[B.dim():])
    rows = B.numel()
    return solve(A.reshape(rows, _math.prod(result_shape)), B.reshape(rows)).reshape(result_shape)


def _matrix_rank_from(S, atol, rtol):
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = _F.clamp_min(smax * rtol, atol) if not hasattr(atol, "shape") else _F.maximum(smax * rtol, atol)
    return (S > tol).sum(-1)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq: the least-squares (minimum-norm where rank-deficient) solution of
    AX = B. `solution` is pinv(A) B, with pinv's cutoff `rcond` (default eps * max(m, n));
    `rank`, `residuals` and `singular_values` follow the driver as on PyTorch's CPU."""
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    _check_input("linalg.lstsq", A, square=False)
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None:
        rcond = _dtype.finfo(_rt.real_of(A.dtype)).eps * max(m, n)
    S = svdvals(A)
    solution = pinv(A, rtol=rcond) @ Bm
    empty_real = _F.zeros(0, dtype=_rt.real_of(A.dtype))
    if driver == "gels":
        rank = _F.zeros(0, dtype=_dtype.int64)
    else:
        rank = _matrix_rank_from(S, 0.0, rcond)
    singular_values = S.detach() if driver in ("gelsd", "gelss") else empty_real
    residuals = empty_real
    # (whether the residuals exist depends on the rank's value: only the drivers that report them read it)
    if m > n and driver != "gelsy" and (driver == "gels" or bool((rank == min(m, n)).all())):
        residuals = ((A @ solution - Bm).abs() ** 2).sum(-2)
    if vector:
        solution = solution.squeeze(-1)
        if residuals.numel():
            residuals = residuals.squeeze(-1)
    return _rt.linalg_lstsq(solution, residuals, rank, singular_values)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """torch.linalg.pinv: the pseudoinverse, singular values at most max(atol, rtol * S_max)
    taken as zero (rtol's default eps * max(m, n), or 0 when atol > 0; the old `rcond` is rtol)."""
    _no_out(out, "pinv")
    if rcond is not None:
        rtol, atol = rcond, 0.0 if atol is None else atol
    return _R["linalg_pinv"](A, atol, rtol, hermitian)
