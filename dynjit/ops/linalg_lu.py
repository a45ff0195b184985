"""LU factorization with partial pivoting, as torch.linalg computes and differentiates it:
`linalg_lu` (A = P L U, with LAPACK's pivots too, which lu_factor returns) and
`lu_pivots_to_permutation` (LAPACK's row swaps as a permutation matrix, for lu_unpack and
lu_solve). The kernel is LAPACK getrf's algorithm in numpy, vectorized over the batch (the
pivot of a column is its first entry of largest |re| + |im|, as LAPACK's i?amax picks), so
P, L and U are PyTorch's. The derivative is PyTorch's linalg_lu_backward (square, wide and
tall), written with registered ops.
"""
import numpy as np

from .. import _dtype
from .registry import register, registry, EXTERN, OTHER, BATCHED_MATRICES
from .linalg_common import mH, tril, triu, first_failure, batch_prefix


def _getrf(a):
    """(LU packed, 1-based pivots) of each matrix of `a` (..., m, n)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lu = np.array(a, copy=True).reshape((-1, m, n))
    pivots = np.zeros((lu.shape[0], k), np.int32)
    rows = np.arange(lu.shape[0])
    for j in range(k):
        column = lu[:, j:, j]
        size = np.abs(column.real) + np.abs(column.imag) if np.iscomplexobj(column) else np.abs(column)
        p = j + np.argmax(size, axis=1)
        pivots[:, j] = p + 1
        swap = lu[rows, p].copy()
        lu[rows, p] = lu[:, j]
        lu[:, j] = swap
        pivot = lu[:, j, j]
        nonzero = pivot != 0
        factors = np.where(nonzero[:, None], lu[:, j + 1:, j] / np.where(nonzero, pivot, 1)[:, None], 0)
        lu[:, j + 1:, j] = np.where(nonzero[:, None], factors, lu[:, j + 1:, j])
        lu[:, j + 1:, j + 1:] -= factors[:, :, None] * lu[:, j, None, j + 1:]
    return lu.reshape(batch + (m, n)), pivots.reshape(batch + (k,))


def _permutation(pivots, m, dtype):
    """P with A = P L U from LAPACK's pivots (row j was swapped with row pivots[j] - 1)."""
    batch = pivots.shape[:-1]
    flat = pivots.reshape((-1, pivots.shape[-1])) if pivots.size else np.zeros((int(np.prod(batch)), 0), np.int32)
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j] - 1
        swap = perm[rows, p].copy()
        perm[rows, p] = perm[:, j]
        perm[:, j] = swap
    # row i of P A is row perm[i] of A, so P^T has ones at (i, perm[i]) and P at (perm[i], i)
    P = np.zeros((flat.shape[0], m, m), dtype)
    P[rows[:, None], perm, np.arange(m)[None, :]] = 1
    return P.reshape(batch + (m, m))


def _unpack(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    U = np.triu(lu[..., :k, :])
    return L, U


def _check_lu(A, pivot):
    if len(A.shape) < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    d = A.dtype if isinstance(A.dtype, _dtype.dtype) else _dtype.from_numpy_dtype(A.dtype)
    if d._category < 2 or d in (_dtype.float16, _dtype.bfloat16):
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


@register("linalg_lu", EXTERN, tags=(BATCHED_MATRICES,), complex_ok=True, nondiff_outputs=(3, 4))
def linalg_lu(A, pivot=True, check_errors=False):
    """(P, L, U, pivots, info): info is the 1-based index of U's first zero diagonal entry (0 if
    none); check_errors raises lu_factor's error there instead."""
    a = np.asarray(A)
    _check_lu(a, pivot)
    lu, pivots = _getrf(a)
    L, U = _unpack(lu)
    diag = np.diagonal(U, 0, -2, -1)
    info = np.where((diag == 0).any(-1), (diag == 0).argmax(-1) + 1, 0).astype(np.int32)
    failure = first_failure(info) if check_errors else None
    if failure is not None:
        index, order = failure
        raise RuntimeError(f"torch.linalg.lu_factor: {batch_prefix(a.shape, index)}U[{order - 1},{order - 1}] is "
                           "zero and using it on lu_solve would result in a division by zero. If you still want to "
                           "perform the factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")
    return np.ascontiguousarray(_permutation(pivots, a.shape[-2], a.dtype)), L, U, pivots, info


@linalg_lu.meta_fn
def _(A, pivot=True, check_errors=False):
    _check_lu(A, pivot)
    *batch, m, n = A.shape
    batch, k = tuple(batch), min(m, n)
    return [(batch + (m, m), A.dtype), (batch + (m, k), A.dtype), (batch + (k, n), A.dtype),
            (batch + (k,), _dtype.int32), (batch, _dtype.int32)]


@linalg_lu.derivative
def _(grads, result):
    gL, gU = grads[1], grads[2]
    P, L, U = result[0], result[1], result[2]
    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    solve_tri = registry["linalg_solve_triangular"]
    zeros = registry["zeros"]
    if gL is None:
        gL = zeros(tuple(L.shape), L.dtype)
    if gU is None:
        gU = zeros(tuple(U.shape), U.dtype)
    if m == n:
        gA = tril(mH(L) @ gL, -1) + triu(gU @ mH(U))
        gA = solve_tri(mH(U), gA, upper=False, left=False)
        gA = solve_tri(mH(L), gA, upper=True, left=True, unitriangular=True)
    elif m < n:
        U1 = U.narrow(-1, 0, k)
        gA = mH(L) @ gL - triu(gU) @ mH(U)
        gA = solve_tri(mH(U1), tril(gA, -1), upper=False, left=False)
        gA = registry["cat"]([gA + triu(gU.narrow(-1, 0, k)), gU.narrow(-1, k, n - k)], -1)
        gA = solve_tri(mH(L), gA, upper=True, left=True, unitriangular=True)
    else:
        L1 = L.narrow(-2, 0, k)
        gA = gU @ mH(U) - mH(L) @ tril(gL, -1)
        gA = solve_tri(mH(L1), triu(gA), upper=True, left=True, unitriangular=True)
        gA = registry["cat"]([gA + tril(gL.narrow(-2, 0, k), -1), gL.narrow(-2, k, m - k)], -2)
        gA = solve_tri(mH(U), gA, upper=False, left=False)
    return P @ gA


@register("lu_pivots_to_permutation", OTHER, differentiable=False, tags=(BATCHED_MATRICES,))
def lu_pivots_to_permutation(pivots, m, dtype):
    p = np.asarray(pivots)
    if p.dtype.kind not in "iu":
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. "
                           f"Got {_dtype.from_numpy_dtype(p.dtype).name}")
    if p.size and (p.min() < 1 or p.max() > m):
        raise RuntimeError(f"lu_unpack: the pivots must be between 1 and {m}, got {int(p.min())} to {int(p.max())}")
    return _permutation(p, m, _dtype.from_numpy_dtype(dtype).np if not isinstance(dtype, _dtype.dtype)
                        else dtype.np)


@lu_pivots_to_permutation.meta_fn
def _(pivots, m, dtype):
    return tuple(pivots.shape[:-1]) + (m, m), dtype
