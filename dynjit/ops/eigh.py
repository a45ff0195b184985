"""`symmetric_eigh`: eigenvalues (ascending) and orthonormal eigenvectors of the symmetric
part (A + A^T) / 2 of a batch of square matrices, with the symmetric-eigenproblem
derivative PyTorch uses (linalg_eigh_backward):

    gA = V (diag(gL) + skew(V^T gV) / E) V^T,   E_ij = L_j - L_i,

written with registered ops, so it differentiates again. Because the forward reads the
symmetric part, this gradient is the exact derivative for any perturbation of A, which is
what torch.lobpcg's gradient is (dynjit.lobpcg selects k eigenpairs of this op).
"""
import collections

import numpy as np

from .registry import register, OTHER

EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def _check_square(shape):
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise RuntimeError(f"symmetric_eigh: A must be batches of square matrices, but they are "
                           f"{shape[-2] if len(shape) > 1 else 1} by {shape[-1] if shape else 1} matrices")


@register("symmetric_eigh", OTHER)
def symmetric_eigh(self):
    a = np.asarray(self)
    _check_square(a.shape)
    if a.dtype.kind != "f":
        raise RuntimeError(f"symmetric_eigh: Expected a floating point tensor, got {a.dtype.name}")
    sym = (a + np.swapaxes(a, -1, -2)) * 0.5
    values, vectors = np.linalg.eigh(sym.astype(np.float64) if a.dtype.metadata is not None else sym)
    return EighResult(values.astype(a.dtype), vectors.astype(a.dtype))


@symmetric_eigh.meta_fn
def _(self):
    _check_square(self.shape)
    return [(tuple(self.shape[:-1]), self.dtype), (tuple(self.shape), self.dtype)]


@symmetric_eigh.derivative
def _(grads, result):
    from .factories import eye
    from .linalg_common import safe_div
    g_values, g_vectors = grads
    values, vectors = result
    n = values.shape[-1]
    identity = eye(n, None, values.dtype)
    vt = vectors.transpose(-2, -1)
    inner = None
    if g_vectors is not None:
        vt_g = vt.matmul(g_vectors)
        skew = (vt_g - vt_g.transpose(-2, -1)) * 0.5
        gaps = values.unsqueeze(-2) - values.unsqueeze(-1) + identity     # L_j - L_i, 1 on the diagonal
        inner = safe_div(skew, gaps) * (1.0 - identity)     # (unused outputs get zero grads: see safe_div)
    if g_values is not None:
        diag = g_values.unsqueeze(-1) * identity
        inner = diag if inner is None else inner + diag
    if inner is None:
        return None
    return vectors.matmul(inner).matmul(vt)
