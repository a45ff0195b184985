"""`dynjit.linalg`: torch.linalg under its names, signatures, defaults and return types.

- Decompositions: `svd` (full_matrices), `svdvals`, `eigh`, `eigvalsh`, `eig`, `eigvals`
  (complex results), `qr` (mode 'reduced', 'complete', 'r'), `cholesky`, `cholesky_ex`, `lu`,
  `lu_factor`, `lu_factor_ex`.
- Solvers and inverses: `solve` (left=), `solve_ex`, `solve_triangular`, `lu_solve`, `lstsq`,
  `inv`, `inv_ex`, `pinv`, `tensorinv`, `tensorsolve`, `householder_product`.
- Scalars of a matrix: `det`, `slogdet`, `matrix_rank`, `cond`, and the norms `vector_norm`,
  `matrix_norm` (ord 'fro', 'nuc', 2, -2, 1, -1, inf, -inf) and `norm`.
- Functions of a matrix and products: `matrix_power`, `matrix_exp`, `multi_dot`, `cross`,
  `vecdot`, `matmul`, `diagonal`, `vander`.

Every function batches over leading dims and returns torch.return_types' named tuples
(`svd(A).U`, `.S`, `.Vh`). The decompositions and solvers are registry ops
(dynjit/ops/linalg_decomp.py, linalg_solve.py, linalg_lu.py: numpy kernels, meta functions,
PyTorch's derivatives written with registered ops, so gradients differentiate again and
everything traces under dynjit.compile); the rest are composites of them. A failure that
depends on the values (a singular matrix, one that is not positive-definite) raises
`dynjit.linalg.LinAlgError` with PyTorch's message. The torch.* aliases (`dynjit.det`,
`dynjit.svd` with V, `dynjit.triangular_solve`, ...) and Tensor methods are in _aliases.py.
"""
import math as _math

from .. import functional as _F
from .. import _dtype
from ..ops.registry import registry as _R
from ..tensor import tensor as _tensor
from ..ops.linalg_common import LinAlgError, check_input as _check_input, check_matrix as _check_matrix, \
    check_float as _check_float
from ..ops import linalg_common as _rt

__all__ = ["LinAlgError", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals", "qr", "cholesky",
           "cholesky_ex", "inv", "inv_ex", "solve", "solve_triangular", "lstsq", "pinv", "det", "slogdet",
           "matrix_rank", "cond", "vector_norm", "matrix_norm", "norm", "matrix_power", "matrix_exp",
           "multi_dot", "cross", "vecdot", "matmul", "diagonal", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "solve_ex", "tensorinv", "tensorsolve", "vander", "householder_product"]


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"dynjit.linalg.{name}: out= is not supported; use the returned value")


# -- decompositions ---------------------------------------------------------------------

def svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: A = U diag(S) Vh, singular values descending; (U, S, Vh)."""
    _no_out(out, "svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
                           "with cuSOLVER backend.")
    return _R["linalg_svd"](A, full_matrices)


def svdvals(A, *, driver=None, out=None):
    """torch.linalg.svdvals: the singular values, descending."""
    return svd(A, False, driver=driver, out=out).S


def eigh(A, UPLO="L", *, out=None):
    """torch.linalg.eigh: eigenvalues (ascending, real) and orthonormal eigenvectors of the
    Hermitian matrices whose `UPLO` triangle A holds."""
    _no_out(out, "eigh")
    return _R["linalg_eigh"](A, UPLO)


def eigvalsh(A, UPLO="L", *, out=None):
    return eigh(A, UPLO, out=out).eigenvalues


def eig(A, *, out=None):
    """torch.linalg.eig: complex eigenvalues and unit-norm eigenvectors of general matrices."""
    _no_out(out, "eig")
    return _R["linalg_eig"](A)


def eigvals(A, *, out=None):
    return eig(A, out=out).eigenvalues


def qr(A, mode="reduced", *, out=None):
    """torch.linalg.qr: A = QR; mode 'reduced', 'complete', or 'r' (Q empty)."""
    _no_out(out, "qr")
    return _R["linalg_qr"](A, mode)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """torch.linalg.cholesky_ex: (L, info), info the order of the first leading minor that is
    not positive-definite (0 when the factorization succeeded)."""
    _no_out(out, "cholesky_ex")
    try:
        return _R["linalg_cholesky_ex"](A, upper, check_errors)
    except LinAlgError as e:        # (the op's errors name linalg.cholesky, its usual caller)
        raise LinAlgError(str(e).replace("linalg.cholesky:", "linalg.cholesky_ex:", 1)) from None


def cholesky(A, *, upper=False, out=None):
    """torch.linalg.cholesky: L with A = L L^H (or U with A = U^H U when upper)."""
    _no_out(out, "cholesky")
    return _R["linalg_cholesky_ex"](A, upper, True).L


# -- solvers and inverses ---------------------------------------------------------------

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


# -- LU ------------------------------------------------------------------------------------

def lu(A, *, pivot=True, out=None):
    """torch.linalg.lu: A = P L U with partial pivoting (L unit lower triangular)."""
    _no_out(out, "lu")
    P, L, U, _, _ = _R["linalg_lu"](A, pivot, False)
    return _rt.linalg_lu(P, L, U)


def _pack_lu(L, U):
    """LAPACK's packed LU (L below the diagonal, U on and above it) from L and U."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    batch = tuple(L.shape[:-2])
    if n > k:
        L = _F.cat([L, _F.zeros(batch + (m, n - k), dtype=L.dtype)], -1)
    if m > k:
        U = _F.cat([U, _F.zeros(batch + (m - k, n), dtype=U.dtype)], -2)
    return L.tril(-1) + U.triu()


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """torch.linalg.lu_factor_ex: (LU, pivots, info), LU packed as LAPACK's getrf, pivots
    1-based int32, info the 1-based index of U's first zero diagonal entry (0 if none)."""
    _no_out(out, "lu_factor_ex")
    P, L, U, pivots, info = _R["linalg_lu"](A, pivot, check_errors)
    return _rt.linalg_lu_factor_ex(_pack_lu(L, U), pivots, info)


def lu_factor(A, *, pivot=True, out=None):
    """torch.linalg.lu_factor: (LU, pivots); raises where U has a zero on its diagonal."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot, check_errors=True, out=out)
    return _rt.linalg_lu_factor(LU, pivots)


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


def vander(x, *, N=None):
    """torch.linalg.vander: columns x^0, x^1, ..., x^(N-1) (increasing powers)."""
    if N is None:
        N = x.shape[-1] if x.dim() else 1
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = _F.cat([_F.ones(tuple(x.shape) + (1,), dtype=x.dtype), x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,))],
                    -1)
    return powers.cumprod(-1)


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


# -- scalars of a matrix ----------------------------------------------------------------

def det(A, *, out=None):
    """torch.linalg.det (differentiable also where A is singular)."""
    _no_out(out, "det")
    return _R["linalg_det"](A)


def slogdet(A, *, out=None):
    """torch.linalg.slogdet: (sign, log|det|); sign 0 and -inf for a singular matrix."""
    _no_out(out, "slogdet")
    return _R["linalg_slogdet"](A)


def _matrix_rank_from(S, atol, rtol):
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = _F.clamp_min(smax * rtol, atol) if not hasattr(atol, "shape") else _F.maximum(smax * rtol, atol)
    return (S > tol).sum(-1)


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


# -- functions of a matrix and products -----------------------------------------------------

def matrix_power(A, n, *, out=None):
    """torch.linalg.matrix_power: A^n by repeated squaring (n < 0: of the inverse)."""
    _no_out(out, "matrix_power")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    _check_matrix("linalg.matrix_power", tuple(A.shape))
    if n == 0:
        eye = _F.eye(A.shape[-1], dtype=A.dtype)
        return eye.expand(tuple(A.shape)).clone()
    if n < 0:
        A, n = inv(A), -n
    result, power = None, A
    while n:
        if n & 1:
            result = power if result is None else result @ power
        n >>= 1
        if n:
            power = power @ power
    return result


def matrix_exp(A):
    """torch.linalg.matrix_exp: e^A (scaling and squaring with a [13/13] Pade approximant)."""
    return _R["linalg_matrix_exp"](A)


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the product of 2-D matrices; the first may be a row vector and
    the last a column vector (1-D), which are squeezed from the result."""
    _no_out(out, "multi_dot")
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0].dim(), tensors[-1].dim()
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    dtype = mats[0].dtype
    for i, t in enumerate(mats):
        if t.dtype != dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{dtype} and tensor {i} {t.dtype}")
    for i in range(n - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} "
                               f"and {list(tensors[i + 1].shape)} cannot be multiplied")
    result = mats[0]
    for t in mats[1:]:
        result = result @ t
    if first == 1 and last == 1:
        return result.reshape(())
    if first == 1:
        return result.squeeze(0)
    if last == 1:
        return result.squeeze(-1)
    return result


def cross(input, other, *, dim=-1, out=None):
    """torch.linalg.cross: the cross product of 3-vectors along `dim` (inputs broadcast)."""
    _no_out(out, "cross")
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(input.dtype)} but found "
                           f"{_dtype.scalar_type_name(other.dtype)}")
    if input.dim() != other.dim() and min(input.dim(), other.dim()) == 0:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    size_a = input.shape[dim] if input.dim() else 0
    size_b = other.shape[dim] if other.dim() else 0
    if size_a != 3 or size_b != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {size_a} and {size_b}")
    input, other = _F.broadcast_tensors(input, other)
    i120 = _tensor([1, 2, 0])
    i201 = _tensor([2, 0, 1])
    return (input.index_select(dim, i120) * other.index_select(dim, i201)
            - input.index_select(dim, i201) * other.index_select(dim, i120))


def vecdot(x, y, *, dim=-1, out=None):
    """torch.linalg.vecdot: sum(conj(x) * y) along `dim` (inputs broadcast)."""
    _no_out(out, "vecdot")
    if not (x.is_floating_point() or x.is_complex()):
        _check_float("linalg.vecdot", x.dtype)
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_dtype.scalar_type_name(x.dtype)} and y of type "
                           f"{_dtype.scalar_type_name(y.dtype)} instead")
    if x.is_complex():
        x = x.conj()
    return (x * y).sum(dim)


def matmul(input, other, *, out=None):
    _no_out(out, "matmul")
    return input @ other


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: torch.diagonal with the last two dims as default."""
    return A.diagonal(offset, dim1, dim2)


from . import _aliases  # noqa: E402,F401  (the torch.* aliases and Tensor methods)
