"""What the linear-algebra ops (linalg_decomp.py, linalg_solve.py) share: PyTorch's input
checks and error messages, `LinAlgError`, the named tuples they return (torch.return_types'
names and fields), and small helpers their derivatives are written with (conjugate
transpose, identity, skew)."""
import collections

import numpy as np

from .. import _dtype
from .registry import registry


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a decomposition or solve failed on the values of its input
    (a singular matrix, one that is not positive-definite, ...). A RuntimeError, as in PyTorch."""


LinAlgError.__module__ = "dynjit.linalg"


def _result_type(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "dynjit.return_types"
    return cls


linalg_svd = _result_type("linalg_svd", ["U", "S", "Vh"])
svd = _result_type("svd", ["U", "S", "V"])
linalg_eigh = _result_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = _result_type("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_qr = _result_type("linalg_qr", ["Q", "R"])
qr = _result_type("qr", ["Q", "R"])
linalg_cholesky_ex = _result_type("linalg_cholesky_ex", ["L", "info"])
linalg_inv_ex = _result_type("linalg_inv_ex", ["inverse", "info"])
linalg_slogdet = _result_type("linalg_slogdet", ["sign", "logabsdet"])
slogdet = _result_type("slogdet", ["sign", "logabsdet"])
linalg_lstsq = _result_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
triangular_solve = _result_type("triangular_solve", ["solution", "cloned_coefficient"])
linalg_lu = _result_type("linalg_lu", ["P", "L", "U"])
linalg_lu_factor = _result_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _result_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_unpack = _result_type("lu_unpack", ["P", "L", "U"])
linalg_solve_ex = _result_type("linalg_solve_ex", ["result", "info"])


def as_dtype(d):
    """A dynjit dtype from a dynjit or numpy dtype."""
    return d if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d)


def real_of(d):
    d = as_dtype(d)
    return d.to_real() if d._category == 3 else d


def check_float(name, d, lapack=None):
    """PyTorch's errors for an integer or low-precision input to a linalg function."""
    d = as_dtype(d)
    if d._category < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype.scalar_type_name(d)}")
    if d in (_dtype.float16, _dtype.bfloat16):
        if lapack is None:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_dtype.scalar_type_name(d)}")
        raise NotImplementedError(f"\"{lapack}_cpu\" not implemented for '{_dtype.scalar_type_name(d)}'")


def check_matrix(name, shape, square=True, arg="A"):
    """PyTorch's errors for an input that is not a (batch of square) matrix."""
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")


def check_input(name, t, lapack=None, square=True):
    """The checks every linalg function makes of its matrix argument (a tensor, an array or a
    TensorMeta)."""
    check_matrix(name, tuple(t.shape), square)
    check_float(name, t.dtype, lapack)


def batch_prefix(shape, index):
    """'(Batch element i): ' for a batched input, as PyTorch's LAPACK error messages start."""
    return f"(Batch element {index}): " if len(shape) > 2 else ""


def first_failure(info):
    """(flat batch index, info value) of the first nonzero entry of `info`, or None."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    return None if bad.size == 0 else (int(bad[0]), int(flat[bad[0]]))


def lu_zero_pivot(a):
    """LAPACK getrf's info for each matrix of `a` (..., n, n): the 1-based index of the first
    zero pivot of its LU factorization with partial pivoting, 0 where there is none."""
    lu = np.array(a, dtype=a.dtype, copy=True)
    n = lu.shape[-1]
    batch = lu.shape[:-2]
    lu = lu.reshape((-1, n, n))
    info = np.zeros(lu.shape[0], dtype=np.int32)
    rows = np.arange(lu.shape[0])
    for k in range(n):
        p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
        swap = lu[rows, p].copy()
        lu[rows, p] = lu[:, k]
        lu[:, k] = swap
        pivot = lu[:, k, k]
        zero = pivot == 0
        info[(info == 0) & zero] = k + 1
        safe = np.where(zero, 1, pivot)
        factors = np.where(zero[:, None], 0, lu[:, k + 1:, k] / safe[:, None])
        lu[:, k + 1:, k + 1:] -= factors[:, :, None] * lu[:, k, None, k + 1:]
        lu[:, k + 1:, k] = factors
    return info.reshape(batch)


# -- helpers for derivatives, written with registered ops ---------------------------------

def is_complex(t):
    return as_dtype(t.dtype)._category == 3


def mH(t):
    """The conjugate transpose of a batch of matrices."""
    t = t.transpose(-2, -1)
    return registry["conj"](t) if is_complex(t) else t


def identity(n, dtype):
    return registry["eye"](n, None, real_of(dtype))


def diag_embed(v):
    """A batch of diagonal matrices with the last dim of `v` on the diagonal."""
    return v.unsqueeze(-1) * identity(v.shape[-1], v.dtype)


def safe_div(num, den):
    """num / den, but 0 where both are 0. The autograd engine hands a multi-output op's
    derivative zeros for the outputs the loss does not use, and 0 / 0 there (repeated
    singular values or eigenvalues, a zero singular value) must add nothing, as PyTorch's
    undefined gradients do; a nonzero num over 0 stays inf. Where den != 0 this is exactly
    num / den, linear in num (forward mode linearizes derivatives in their gradients)."""
    where = registry["where"]
    zero_den = den == 0
    finite = num / where(zero_den, 1.0, den)
    return where(zero_den & (num != 0), num / den, finite)


def tril(t, k=0):
    return registry["tril"](t, k)


def triu(t, k=0):
    return registry["triu"](t, k)
