"""torch.linalg's decompositions: svd, svdvals, eigh, eigvalsh, eig, eigvals, qr, cholesky,
cholesky_ex, lu, lu_factor, lu_factor_ex (calls of the registry ops in dynjit/ops/linalg_decomp.py
and linalg_lu.py, with PyTorch's signatures and return types)."""
from .. import functional as _F
from ..ops.registry import registry as _R
from ..ops.linalg_common import LinAlgError
from ..ops import linalg_common as _rt
from ._common import _no_out


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
