"""Solvers and functions of a matrix, as torch.linalg computes and differentiates them:
`linalg_inv_ex`, `linalg_solve`, `linalg_solve_triangular`, `linalg_det`, `linalg_slogdet`,
`linalg_pinv` and `linalg_matrix_exp`.

Kernels are numpy over the leading (batch) dims; a singular matrix is reported with
PyTorch's LAPACK-derived message (the index of LU's first zero pivot, see
linalg_common.lu_zero_pivot). Derivatives are PyTorch's, written with registered ops:
det's is the SVD formula PyTorch uses for singular inputs and double backward
(linalg_det_backward), so the gradient of a singular matrix's determinant is its
(finite) cofactor matrix; pinv's is pinv_backward; matrix_exp's is the upper-right block of
the exponential of [[A^H, G], [0, A^H]].
"""
import numpy as np

from .. import _dtype
from .registry import register, registry, EXTERN, BATCHED_MATRICES
from .linalg_common import (LinAlgError, check_input, check_matrix, as_dtype, real_of, batch_prefix,
                            first_failure, lu_zero_pivot, mH, tril, triu)
from . import linalg_common as _rt


# -- inverse --------------------------------------------------------------------------------

def _singular_message(name, shape, info):
    index, pivot = first_failure(info)
    return (f"{name}: {batch_prefix(shape, index)}The diagonal element {pivot} is zero, the inversion "
            "could not be completed because the input matrix is singular.")


@register("linalg_inv_ex", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True, nondiff_outputs=(1,))
def linalg_inv_ex(A, check_errors=False):
    a = np.asarray(A)
    check_input("linalg.inv", a)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size == 0:
        return _rt.linalg_inv_ex(np.zeros(a.shape, a.dtype), info)
    try:
        inverse = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        info = lu_zero_pivot(a)
        if check_errors:
            raise LinAlgError(_singular_message("linalg.inv", a.shape, info)) from None
        ok = info == 0
        inverse = np.full(a.shape, np.nan, a.dtype)
        if ok.any():
            inverse[ok] = np.linalg.inv(a[ok])
    return _rt.linalg_inv_ex(inverse.astype(a.dtype, copy=False), info)


@linalg_inv_ex.meta_fn
def _(A, check_errors=False):
    check_input("linalg.inv", A)
    return [(tuple(A.shape), A.dtype), (tuple(A.shape[:-2]), _dtype.int32)]


@linalg_inv_ex.derivative
def _(grads, result):
    g, inverse = grads[0], result[0]
    if g is None:
        return None
    inv_h = mH(inverse)
    return -(inv_h @ g @ inv_h)


def inv(A):
    """The inverse, raising for a singular matrix (torch.linalg.inv)."""
    return registry["linalg_inv_ex"](A, True)[0]


# -- solve -------------------------------------------------------------------------------

def _check_same_dtype(name, a, b):
    da, db = as_dtype(a.dtype), as_dtype(b.dtype)
    if da is not db:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                           f"{_dtype.scalar_type_name(da)} and B of type {_dtype.scalar_type_name(db)} instead")


def _solve_shapes(name, a_shape, b_shape, left):
    """The broadcast output shape of the matrix equation AX = B (left) or XA = B."""
    check_matrix(name, b_shape, square=False, arg="B")
    n = a_shape[-1]
    fits = b_shape[-2] == n if left else b_shape[-1] == n
    if not fits:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({a_shape[-2]}x{a_shape[-1]} and {b_shape[-2]}x{b_shape[-1]})")
    try:
        batch = np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    except ValueError:
        raise RuntimeError(f"{name}: The batch dimensions of A {list(a_shape[:-2])} and B "
                           f"{list(b_shape[:-2])} are not broadcastable") from None
    return tuple(batch) + tuple(b_shape[-2:])


@register("linalg_solve", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_solve(A, B):
    a, b = np.asarray(A), np.asarray(B)
    check_input("linalg.solve", a, "lu")
    _check_same_dtype("linalg.solve", a, b)
    out = _solve_shapes("linalg.solve", a.shape, b.shape, True)
    a = np.broadcast_to(a, out[:-2] + a.shape[-2:])
    b = np.broadcast_to(b, out)
    if b.size == 0 or a.size == 0:
        return np.zeros(out, a.dtype)
    try:
        return np.linalg.solve(a, b).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        index = first_failure(lu_zero_pivot(a))[0]
        raise LinAlgError(f"torch.linalg.solve: {batch_prefix(a.shape, index)}The solver failed because "
                          "the input matrix is singular.") from None


@linalg_solve.meta_fn
def _(A, B):
    check_input("linalg.solve", A, "lu")
    _check_same_dtype("linalg.solve", A, B)
    return _solve_shapes("linalg.solve", A.shape, B.shape, True), A.dtype


@linalg_solve.derivative
def _(grad, A, result, needs):
    gB = registry["linalg_solve"](mH(A), grad)
    gA = -(gB @ mH(result)) if needs[0] else None
    return gA, (gB if needs[1] else None)


# -- triangular solve -------------------------------------------------------------------

@register("linalg_solve_triangular", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_solve_triangular(A, B, upper, left=True, unitriangular=False):
    a, b = np.asarray(A), np.asarray(B)
    _check_triangular_dtypes(a, b)
    b = b.astype(a.dtype, copy=False)       # PyTorch computes in A's dtype
    out = _solve_shapes("linalg.solve_triangular", a.shape, b.shape, left)
    n = a.shape[-1]
    tri = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        tri = tri * (1 - np.eye(n, dtype=a.dtype)) + np.eye(n, dtype=a.dtype)
    tri = np.broadcast_to(tri, out[:-2] + (n, n))
    b = np.broadcast_to(b, out)
    if b.size == 0 or n == 0:
        return np.zeros(out, a.dtype)
    if not left:        # X A = B  <=>  A^T X^T = B^T
        tri, b = np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2)
        upper = not upper
    x = _back_substitute(tri, b, upper)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return np.ascontiguousarray(x).astype(a.dtype, copy=False)


def _check_triangular_dtypes(a, b):
    check_matrix("linalg.solve_triangular", tuple(a.shape))
    da = as_dtype(a.dtype)
    if da._category < 2 or da in (_dtype.float16, _dtype.bfloat16):
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_dtype.scalar_type_name(da)}'")
    check_input("linalg.solve_triangular", a)
    if as_dtype(b.dtype)._category == 3 and da._category != 3:
        raise RuntimeError(f"linalg.solve_triangular: B is complex ({as_dtype(b.dtype).name}) but A is real "
                           f"({da.name}): PyTorch would drop B's imaginary part; convert A with .to(B.dtype)")


def _back_substitute(tri, b, upper):
    """X with tri X = b for triangular `tri` (LAPACK trtrs: a zero diagonal gives inf/nan)."""
    n = tri.shape[-1]
    x = np.zeros(np.broadcast_shapes(b.shape, b.shape), np.result_type(tri, b))
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in order:
            rest = tri[..., i, i + 1:] if upper else tri[..., i, :i]
            done = x[..., i + 1:, :] if upper else x[..., :i, :]
            acc = b[..., i, :] - np.einsum("...k,...kj->...j", rest, done)
            x[..., i, :] = acc / tri[..., i, i][..., None]
    return x


@linalg_solve_triangular.meta_fn
def _(A, B, upper, left=True, unitriangular=False):
    _check_triangular_dtypes(A, B)
    return _solve_shapes("linalg.solve_triangular", A.shape, B.shape, left), A.dtype


@linalg_solve_triangular.derivative
def _(grad, A, result, upper, left, unitriangular, needs):
    gB = registry["linalg_solve_triangular"](mH(A), grad, upper=not upper, left=left,
                                            unitriangular=unitriangular)
    gA = None
    if needs[0]:
        gA = -(gB @ mH(result)) if left else -(mH(result) @ gB)
        gA = triu(gA, 1 if unitriangular else 0) if upper else tril(gA, -1 if unitriangular else 0)
    return gA, (gB if needs[1] else None)


# -- determinants -----------------------------------------------------------------------

@register("linalg_det", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_det(A):
    a = np.asarray(A)
    check_input("linalg.det", a, "lu")
    if a.shape[-1] == 0:
        return np.ones(a.shape[:-2], a.dtype)
    return np.asarray(np.linalg.det(a)).astype(a.dtype, copy=False)


@linalg_det.meta_fn
def _(A):
    check_input("linalg.det", A, "lu")
    return tuple(A.shape[:-2]), A.dtype


@linalg_det.derivative
def _(grad, A):
    # the cofactor matrix det(A) A^{-H}, as U diag(prod_{j != i} S_j) Vh conj(det(U) det(Vh)):
    # finite for singular A, and differentiable again (PyTorch's singular-case formula)
    if A.shape[-1] == 0:
        return A * 0
    U, S, Vh = registry["linalg_svd"](A, False)
    det = registry["linalg_det"]
    alpha = det(U) * det(Vh)
    if _rt.is_complex(alpha):
        alpha = registry["conj"](alpha)
    D = _prod_others(S) * (alpha * grad).unsqueeze(-1)
    return (U * D.unsqueeze(-2)) @ Vh


def _prod_others(S):
    """prod_{j != i} S_j along the last dim, without dividing (zeros allowed)."""
    n = S.shape[-1]
    ones = registry["ones"](tuple(S.shape[:-1]) + (1,), S.dtype)
    cat, cumprod = registry["cat"], registry["cumprod"]
    before = cumprod(cat([ones, S.narrow(-1, 0, n - 1)], -1), -1)
    after = cumprod(cat([ones, S.narrow(-1, 1, n - 1).flip(-1)], -1), -1).flip(-1)
    return before * after


@register("linalg_slogdet", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_slogdet(A):
    a = np.asarray(A)
    check_input("linalg.slogdet", a, "lu")
    if a.shape[-1] == 0:
        return _rt.linalg_slogdet(np.ones(a.shape[:-2], a.dtype), np.zeros(a.shape[:-2], real_of(a.dtype).np))
    sign, logabsdet = np.linalg.slogdet(a)
    return _rt.linalg_slogdet(np.asarray(sign).astype(a.dtype, copy=False),
                              np.asarray(logabsdet).astype(real_of(a.dtype).np, copy=False))


@linalg_slogdet.meta_fn
def _(A):
    check_input("linalg.slogdet", A, "lu")
    batch = tuple(A.shape[:-2])
    return [(batch, A.dtype), (batch, real_of(A.dtype))]


@linalg_slogdet.derivative
def _(grads, result, A):
    g_sign, g_logabsdet = grads
    sign = result[0]
    complex_ = _rt.is_complex(A)
    if g_logabsdet is None and (g_sign is None or not complex_):
        return None         # a real sign is piecewise constant
    g = g_logabsdet if g_logabsdet is not None else registry["zeros"](tuple(sign.shape), real_of(A.dtype))
    if complex_ and g_sign is not None:
        g = g + registry["imag"](registry["conj"](sign) * g_sign) * 1j
    return g.unsqueeze(-1).unsqueeze(-1) * mH(inv(A))


# -- pseudoinverse -----------------------------------------------------------------------

def _pinv_check(A):
    d = as_dtype(A.dtype)
    if len(A.shape) < 2 or d._category < 2 or d in (_dtype.float16, _dtype.bfloat16):
        name = _dtype.scalar_type_name(d)
        raise RuntimeError(f"linalg.pinv({name}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")


@register("linalg_pinv", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_pinv(A, atol=None, rtol=None, hermitian=False):
    a = np.asarray(A)
    _pinv_check(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        values, V = np.linalg.eigh(a)
        S = np.abs(values)
    else:
        U, S, Vh = np.linalg.svd(a, full_matrices=False)
    if rtol is None:
        rtol = 0.0 if atol is not None and np.any(np.asarray(atol) > 0) else \
            np.finfo(real_of(a.dtype).np).eps * max(m, n)
    atol = 0.0 if atol is None else np.asarray(atol)
    tol = np.maximum(np.asarray(atol)[..., None], np.asarray(rtol)[..., None] * S.max(-1, keepdims=True))
    keep = S > tol
    if hermitian:
        inv_values = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
        out = (V * inv_values[..., None, :]) @ np.conj(np.swapaxes(V, -1, -2))
    else:
        inv_s = np.where(keep, 1.0 / np.where(keep, S, 1.0), 0.0)
        out = (np.conj(np.swapaxes(Vh, -1, -2)) * inv_s[..., None, :]) @ np.conj(np.swapaxes(U, -1, -2))
    return out.astype(a.dtype, copy=False)


@linalg_pinv.meta_fn
def _(A, atol=None, rtol=None, hermitian=False):
    _pinv_check(A)
    return tuple(A.shape[:-2]) + (A.shape[-1], A.shape[-2]), A.dtype


@linalg_pinv.derivative
def _(grad, A, result):
    # PyTorch's pinv_backward, arranged to form the smallest matrices
    m, n = A.shape[-2], A.shape[-1]
    pinvA, pinvAh, gradh = result, mH(result), mH(grad)
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        gA = -mH(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gradh - K @ A)
    else:
        K = pinvA @ gradh
        pinvAhK = pinvAh @ K
        gA = -mH(K @ pinvA) + (gradh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A
    return gA


# -- matrix exponential --------------------------------------------------------------------

_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _expm(a):
    """exp of each matrix of `a` by scaling and squaring with the [13/13] Pade approximant
    (Higham 2005), in double precision."""
    n = a.shape[-1]
    work = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    norm1 = np.abs(work).sum(-2).max(-1) if n else np.zeros(a.shape[:-2])
    with np.errstate(divide="ignore"):
        squarings = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, 1e-300) / _THETA13))).astype(int)
    if not np.isfinite(norm1).all():
        return np.full(a.shape, np.nan, a.dtype)
    work = work / (2.0 ** squarings)[..., None, None]
    b = _PADE13
    eye = np.eye(n, dtype=work.dtype)
    A2 = work @ work
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = work @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = np.linalg.solve(V - U, V + U)
    for step in range(int(squarings.max()) if squarings.size else 0):
        R = np.where((squarings > step)[..., None, None], R @ R, R)
    return R.astype(a.dtype)


@register("linalg_matrix_exp", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True)
def linalg_matrix_exp(A):
    a = np.asarray(A)
    check_input("linalg.matrix_exp", a, "linalg_matrix_exp")
    return _expm(a)


@linalg_matrix_exp.meta_fn
def _(A):
    check_input("linalg.matrix_exp", A, "linalg_matrix_exp")
    return tuple(A.shape), A.dtype


@linalg_matrix_exp.derivative
def _(grad, A):
    n = A.shape[-1]
    Ah = mH(A)
    cat = registry["cat"]
    zeros = registry["zeros"](tuple(A.shape), A.dtype)
    block = cat([cat([Ah, grad], -1), cat([zeros, Ah], -1)], -2)
    return registry["linalg_matrix_exp"](block).narrow(-2, 0, n).narrow(-1, n, n)

