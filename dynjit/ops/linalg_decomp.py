"""Matrix decompositions, as torch.linalg computes and differentiates them: `linalg_svd`,
`linalg_eigh`, `linalg_eig`, `linalg_qr` and `linalg_cholesky_ex`.

Kernels are numpy.linalg over the leading (batch) dims; derivatives are PyTorch's
(FunctionsManual.cpp: svd_backward, linalg_eig_backward, linalg_qr_backward,
cholesky_backward), written with registered ops so that they differentiate again. As in
PyTorch, the gradients of singular or eigen vectors are infinite where singular values or
eigenvalues repeat, and a complex loss that depends on the arbitrary phase of a singular or
eigen vector is refused.
"""
import numpy as np

from .registry import register, registry, EXTERN, BATCHED_MATRICES
from .._dtype import scalar_type_name
from .linalg_common import (LinAlgError, check_input, check_matrix, as_dtype, real_of, batch_prefix, first_failure,
                            mH, identity, diag_embed, tril, is_complex, safe_div)
from . import linalg_common as _rt


def _narrow_cols(t, k):
    return t if t.shape[-1] == k else t.narrow(-1, 0, k)


def _narrow_rows(t, k):
    return t if t.shape[-2] == k else t.narrow(-2, 0, k)


def _phase_check(diag, message):
    """PyTorch refuses a complex loss that depends on the phase of the vectors: the imaginary
    part of diag(V^H gV) must vanish (checked on the values, like PyTorch's allclose)."""
    data = getattr(diag, "_data", None)
    if isinstance(data, np.ndarray) and not np.allclose(data, 0, rtol=1e-2, atol=1e-2):
        raise RuntimeError(message)


_SVD_PHASE = ("svd_backward: The singular vectors in the complex case are specified up to multiplication by "
              "e^{i phi}. The specified loss function depends on this phase term, making it ill-defined.")
_EIG_PHASE = (": The eigenvectors in the complex case are specified up to multiplication by e^{i phi}. "
              "The specified loss function depends on this quantity, so it is ill-defined.")


# -- SVD ------------------------------------------------------------------------------

@register("linalg_svd", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_svd(A, full_matrices=True):
    a = np.asarray(A)
    check_input("linalg.svd", a, "linalg_svd", square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    real = real_of(a.dtype).np
    if a.size == 0:
        batch = a.shape[:-2]
        u_cols, vh_rows = (m, n) if full_matrices else (k, k)
        U = np.broadcast_to(np.eye(m, u_cols, dtype=a.dtype), batch + (m, u_cols)).copy()
        Vh = np.broadcast_to(np.eye(vh_rows, n, dtype=a.dtype), batch + (vh_rows, n)).copy()
        return _rt.linalg_svd(U, np.zeros(batch + (k,), real), Vh)
    if not np.isfinite(a).all():
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix "
                          "contained non-finite values.")
    U, S, Vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _rt.linalg_svd(U.astype(a.dtype, copy=False), S.astype(real, copy=False),
                          Vh.astype(a.dtype, copy=False))


@linalg_svd.meta_fn
def _(A, full_matrices=True):
    check_input("linalg.svd", A, "linalg_svd", square=False)
    *batch, m, n = A.shape
    batch, k = tuple(batch), min(m, n)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return [(batch + (m, u_cols), A.dtype), (batch + (k,), real_of(A.dtype)), (batch + (vh_rows, n), A.dtype)]


@linalg_svd.derivative
def _(grads, result, full_matrices):
    gU, gS, gVh = grads
    U, S, Vh = result
    k = S.shape[-1]
    if full_matrices:
        U, Vh = _narrow_cols(U, k), _narrow_rows(Vh, k)
        gU = None if gU is None else _narrow_cols(gU, k)
        gVh = None if gVh is None else _narrow_rows(gVh, k)
    return svd_backward(gU, gS, gVh, U, S, Vh)


def svd_backward(gU, gS, gVh, U, S, Vh):
    """The gradient of A = U diag(S) Vh (reduced) from those of U, S and Vh (PyTorch's
    svd_backward)."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return (U * gS.unsqueeze(-2)) @ Vh
    complex_ = is_complex(U)
    eye = identity(k, S.dtype)
    UhgU = VhgV = None
    if gU is not None:
        UhgU = mH(U) @ gU
        UhgU = UhgU - mH(UhgU)
    if gVh is not None:
        VhgV = Vh @ mH(gVh)
        VhgV = VhgV - mH(VhgV)
    if complex_:
        im_u = registry["imag"](UhgU.diagonal(0, -2, -1)) if UhgU is not None else None
        im_v = registry["imag"](VhgV.diagonal(0, -2, -1)) if VhgV is not None else None
        _phase_check(im_u if im_v is None else im_v if im_u is None else im_u + im_v, _SVD_PHASE)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye       # S_j^2 - S_i^2, 1 on the diagonal
    if UhgU is not None and VhgV is not None:
        inner = safe_div(UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV, E)
    elif UhgU is not None:
        inner = safe_div(UhgU * S.unsqueeze(-2), E)
    else:
        inner = safe_div(S.unsqueeze(-1) * VhgV, E)
    inner = inner * (1.0 - eye)
    if gS is not None:
        inner = inner + diag_embed(gS)
    if complex_ and UhgU is not None:
        inner = inner + diag_embed(safe_div(UhgU.diagonal(0, -2, -1), 2.0 * S))
    if m > n and gU is not None:
        gUSinv = safe_div(gU, S.unsqueeze(-2))
        gA = U @ inner + gUSinv - U @ (mH(U) @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        SinvgVh = safe_div(gVh, S.unsqueeze(-1))
        gA = inner @ Vh + SinvgVh - (SinvgVh @ mH(Vh)) @ Vh
        return U @ gA
    return U @ (inner @ Vh)


# -- Hermitian eigendecomposition -------------------------------------------------------

def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@register("linalg_eigh", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_eigh(A, UPLO="L"):
    a = np.asarray(A)
    _check_eigh_input(a)
    _check_uplo(UPLO)
    real = real_of(a.dtype).np
    if a.size and not np.isfinite(a).all():
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated eigenvalues (error code: "
                          f"{a.shape[-1] - 1}).")
    if a.size == 0:
        return _rt.linalg_eigh(np.zeros(a.shape[:-1], real), np.zeros(a.shape, a.dtype))
    values, vectors = np.linalg.eigh(a, UPLO=UPLO)
    return _rt.linalg_eigh(values.astype(real, copy=False), vectors.astype(a.dtype, copy=False))


def _check_eigh_input(a):
    check_matrix("linalg.eigh", tuple(a.shape))
    if as_dtype(a.dtype)._category < 2:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{scalar_type_name(as_dtype(a.dtype))}'")
    check_input("linalg.eigh", a, "linalg_eigh")


@linalg_eigh.meta_fn
def _(A, UPLO="L"):
    _check_eigh_input(A)
    _check_uplo(UPLO)
    return [(tuple(A.shape[:-1]), real_of(A.dtype)), (tuple(A.shape), A.dtype)]


@linalg_eigh.derivative
def _(grads, result):
    return eig_backward(grads[0], grads[1], result[0], result[1], hermitian=True)


def eig_backward(gL, gV, L, V, hermitian):
    """The gradient of an eigendecomposition A = V diag(L) V^{-1} (PyTorch's
    linalg_eig_backward; `hermitian` for eigh, where V is unitary)."""
    if gV is None:
        if gL is None:
            return None
        if hermitian:
            return V @ (gL.unsqueeze(-1) * mH(V))
        return registry["linalg_solve"](mH(V), diag_embed(gL) @ mH(V))
    n = L.shape[-1]
    eye = identity(n, L.dtype)
    VhgV = mH(V) @ gV
    diag = VhgV.diagonal(0, -2, -1)
    if is_complex(V):
        _phase_check(registry["imag"](diag),
                     ("linalg_eigh_backward" if hermitian else "linalg_eig_backward") + _EIG_PHASE)
    if hermitian:
        VhgV = (VhgV - mH(VhgV)) * 0.5
    else:
        VhgV = VhgV - mH(V) @ (V * registry["real"](diag).unsqueeze(-2))
    Lc = registry["conj"](L) if is_complex(L) else L
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye       # conj(L_j - L_i), 1 on the diagonal
    inner = safe_div(VhgV, E) * (1.0 - eye)
    if gL is not None:
        inner = inner + diag_embed(gL)
    if hermitian:
        return V @ (inner @ mH(V))
    return registry["linalg_solve"](mH(V), inner @ mH(V))


# -- general eigendecomposition -------------------------------------------------------------

@register("linalg_eig", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_eig(A):
    a = np.asarray(A)
    _check_eig_input(a)
    cplx = as_dtype(a.dtype).to_complex().np if a.dtype.kind != "c" else a.dtype
    if a.size == 0:
        return _rt.linalg_eig(np.zeros(a.shape[:-1], cplx), np.zeros(a.shape, cplx))
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    values, vectors = np.linalg.eig(a)
    return _rt.linalg_eig(values.astype(cplx), vectors.astype(cplx))


def _check_eig_input(a):
    check_matrix("linalg.eig", tuple(a.shape))
    if as_dtype(a.dtype)._category < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(as_dtype(a.dtype))}")
    check_input("linalg.eig", a, "linalg_eig")


@linalg_eig.meta_fn
def _(A):
    _check_eig_input(A)
    d = as_dtype(A.dtype)
    c = d if d._category == 3 else d.to_complex()
    return [(tuple(A.shape[:-1]), c), (tuple(A.shape), c)]


@linalg_eig.derivative
def _(grads, result):
    return eig_backward(grads[0], grads[1], result[0], result[1], hermitian=False)


# -- QR ---------------------------------------------------------------------------------------

def _parse_qr_mode(mode):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    return mode != "r", mode != "complete"      # compute_q, reduced


@register("linalg_qr", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_qr(A, mode="reduced"):
    a = np.asarray(A)
    check_input("linalg.qr", a, "geqrf", square=False)
    compute_q, reduced = _parse_qr_mode(mode)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if a.size == 0:
        q_cols = k if reduced else m
        Q = np.broadcast_to(np.eye(m, q_cols, dtype=a.dtype), batch + (m, q_cols)).copy()
        R = np.zeros(batch + ((k if reduced else m), n), a.dtype)
    else:
        Q, R = np.linalg.qr(a, mode="reduced" if reduced else "complete")
    if not compute_q:
        Q = np.zeros((0,), a.dtype)
    return _rt.linalg_qr(Q.astype(a.dtype, copy=False), R.astype(a.dtype, copy=False))


@linalg_qr.meta_fn
def _(A, mode="reduced"):
    check_input("linalg.qr", A, "geqrf", square=False)
    compute_q, reduced = _parse_qr_mode(mode)
    *batch, m, n = A.shape
    batch, k = tuple(batch), min(m, n)
    rows = k if reduced else m
    q = (batch + (m, rows)) if compute_q else (0,)
    return [(q, A.dtype), (batch + (rows, n), A.dtype)]


@linalg_qr.derivative
def _(grads, result, A, mode):
    gQ, gR = grads
    Q, R = result
    compute_q, reduced = _parse_qr_mode(mode)
    if not compute_q:
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                           "through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if not reduced and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_backward_tall(gQ, gR, Q, R)
    # A = Q [R1 | R2] with R1 square: A1 = Q R1 is a square QR, and R2 = Q^H A2
    R1 = R.narrow(-1, 0, m)
    A2 = A.narrow(-1, m, n - m)
    gR1 = gR2 = None
    if gR is not None:
        gR1, gR2 = gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
        extra = A2 @ mH(gR2)
        gQ = extra if gQ is None else gQ + extra
    gA1 = _qr_backward_tall(gQ, gR1, Q, R1)
    gA2 = Q @ gR2 if gR2 is not None else registry["zeros"](tuple(A2.shape), A2.dtype)
    return registry["cat"]([gA1, gA2], -1)


def _qr_backward_tall(gQ, gR, Q, R):
    """gA = (gQ + Q copyltu(M)) R^{-H}, M = R gR^H - gQ^H Q, for A = QR with m >= n."""
    M = None
    if gR is not None:
        M = R @ mH(gR)
    if gQ is not None:
        M = -(mH(gQ) @ Q) if M is None else M - mH(gQ) @ Q
    M = tril(M)
    M = M + mH(M)
    eye = identity(M.shape[-1], M.dtype)
    M = M - M * eye * 0.5                   # the diagonal halved
    rhs = Q @ M if gQ is None else gQ + Q @ M
    # rhs R^{-H}: X with X R^H = rhs
    return registry["linalg_solve_triangular"](mH(R), rhs, upper=False, left=False)


# -- Cholesky ---------------------------------------------------------------------------

def _cholesky_info(a):
    """The unblocked Cholesky (LAPACK potf2) of each matrix of `a`: the lower factor (zero
    from the failing column on) and the order of the first leading minor that is not
    positive-definite (0 where none)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    work = a.reshape((-1, n, n))
    L = np.zeros_like(work)
    info = np.zeros(work.shape[0], np.int32)
    for j in range(n):
        row = L[:, j, :j]
        d = work[:, j, j] - np.einsum("bk,bk->b", row, np.conj(row))
        d = np.real(d)
        bad = (info == 0) & ~(d > 0)
        info[bad] = j + 1
        ok = info == 0
        root = np.sqrt(np.where(ok, d, 1.0))
        L[:, j, j] = np.where(ok, root, 0)
        below = (work[:, j + 1:, j] - np.einsum("bik,bk->bi", L[:, j + 1:, :j], np.conj(row))) / root[:, None]
        L[:, j + 1:, j] = np.where(ok[:, None], below, 0)
    return L.reshape(a.shape), info.reshape(batch)


def _cholesky_error(shape, info):
    failure = first_failure(info)
    if failure is None:
        return
    index, order = failure
    raise LinAlgError(f"linalg.cholesky: {batch_prefix(shape, index)}The factorization could not be "
                      "completed because the input is not positive-definite (the leading minor of order "
                      f"{order} is not positive-definite).")


@register("linalg_cholesky_ex", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True,
          nondiff_outputs=(1,))
def linalg_cholesky_ex(A, upper=False, check_errors=False):
    a = np.asarray(A)
    check_input("linalg.cholesky", a, "cholesky")
    batch = a.shape[:-2]
    info = np.zeros(batch, np.int32)
    try:
        L = np.linalg.cholesky(a) if a.size else np.zeros(a.shape, a.dtype)
    except np.linalg.LinAlgError:
        L, info = _cholesky_info(a)
        if check_errors:
            _cholesky_error(a.shape, info)
    L = L.astype(a.dtype, copy=False)
    if upper:
        L = np.conj(np.swapaxes(L, -1, -2)).copy()
    return _rt.linalg_cholesky_ex(L, info)


@linalg_cholesky_ex.meta_fn
def _(A, upper=False, check_errors=False):
    from .. import _dtype
    check_input("linalg.cholesky", A, "cholesky")
    return [(tuple(A.shape), A.dtype), (tuple(A.shape[:-2]), _dtype.int32)]


@linalg_cholesky_ex.derivative
def _(grads, result, upper):
    gL, L = grads[0], result[0]
    if gL is None:
        return None
    if upper:
        L, gL = mH(L), mH(gL)
    # Iain Murray (2016), arXiv 1602.07527: Phi(L^H gL), then L^{-H} . L^{-1}
    gA = tril(mH(L) @ gL)
    gA = (gA + mH(tril(gA, -1))) * 0.5
    solve_tri = registry["linalg_solve_triangular"]
    gA = solve_tri(mH(L), gA, upper=True, left=True)
    return solve_tri(L, gA, upper=False, left=False)
