"""`dynjit.linalg`, PyTorch's `torch.linalg` names for the norms: `vector_norm`, `norm`
and `matrix_norm` (Frobenius), composites of the registered `norm` reduction, so they are
differentiable (a zero vector's gradient is zero, as in PyTorch) and trace under compile.
Decompositions and solvers (`svd`, `eigh`, `qr`, `solve`, `inv`, ...) are not here yet."""
from .. import functional as _F


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: the `ord`-norm over `dim` (all elements when None)."""
    if not x.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.name.capitalize() if hasattr(x.dtype, 'name') else x.dtype}")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if ord == 0:
        nonzero = (x != 0).to(x.dtype)
        return nonzero.sum() if dim is None else nonzero.sum(dim=dim, keepdim=keepdim)
    if dim is None:
        out = _F.norm(x.reshape(-1), p=ord, dim=0)
        return out.reshape((1,) * x.dim()) if keepdim else out
    return _F.norm(x, p=ord, dim=tuple(dim), keepdim=keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm for ord='fro' (the other orders need singular values)."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord != "fro":
        raise NotImplementedError(f"dynjit.linalg.matrix_norm: ord={ord!r} is not supported (only 'fro'); "
                                  "it needs singular values, which dynjit.linalg does not compute yet")
    return vector_norm(A, 2, dim=dim, keepdim=keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm (dim an int, or A 1-D) or a matrix norm (dim a pair,
    or A 2-D); with ord=None and dim=None, the 2-norm of all elements."""
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


__all__ = ["vector_norm", "matrix_norm", "norm"]
