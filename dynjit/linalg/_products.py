"""Functions of a matrix and products: matrix_power, matrix_exp, multi_dot, cross, vecdot,
matmul, diagonal, vander."""
from .. import functional as _F
from .. import _dtype
from ..ops.registry import registry as _R
from ..ops.linalg_common import check_matrix as _check_matrix, check_float as _check_float
from ..tensor import tensor as _tensor
from ._common import _no_out
from ._solvers import inv


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


def vander(x, *, N=None):
    """torch.linalg.vander: columns x^0, x^1, ..., x^(N-1) (increasing powers)."""
    if N is None:
        N = x.shape[-1] if x.dim() else 1
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = _F.cat([_F.ones(tuple(x.shape) + (1,), dtype=x.dtype), x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,))],
                    -1)
    return powers.cumprod(-1)
