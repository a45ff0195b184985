"""torch.sparse for dynjit: sparse COO tensors' public functions and Tensor methods.

The storage and the ops live in dynjit/ops/sparse.py (registered ops, one dispatcher);
this module is the API over them: `dynjit.sparse_coo_tensor`, `dynjit.sparse.mm`,
`dynjit.sparse.sum`, and the Tensor methods PyTorch gives sparse tensors
(`to_sparse`, `to_dense`, `coalesce`, `is_coalesced`, `_nnz`, `sparse_dim`,
`dense_dim`, `_indices`/`_values`, `indices`/`values`, `sparse_mask`), and the 2-D
compressed layouts' conversions (`to_sparse_csr`, `_csc`, `_bsr`, `_bsc`, `to_sparse(layout=)`)
and parts (`crow_indices`, ...). See docs/sparse.md.
"""
from ..ops.registry import registry as _ops
from ..ops.sparse import (SparseCOO, layout, strided, sparse_coo, sparse_csr, sparse_csc,  # noqa: F401
                          sparse_bsr, sparse_bsc, is_sparse_data,
                          _COMPRESSED_NAMES)
from ..tensor import Tensor, as_tensor
from .. import _dtype

__all__ = ["mm", "sum", "addmm", "sparse_coo_tensor", "layout", "strided", "sparse_coo"]


def _is_sparse(t):
    return isinstance(t, Tensor) and type(t._data) is SparseCOO


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with `values` at `indices` (sparse_dim x nnz). The values keep
    their autograd history: the result's gradient flows back into them."""
    if not isinstance(indices, Tensor):
        indices = as_tensor(indices)
    if indices.dtype.is_floating_point:
        indices = indices.long()
    if not isinstance(values, Tensor):
        values = as_tensor(values, dtype=dtype)
    if dtype is not None and values.dtype is not _dtype.to_dtype(dtype):
        values = values.to(dtype)
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if size is None:
        idx = indices._data
        sparse_size = tuple(int(m) + 1 for m in idx.max(1)) if idx.shape[1] else (0,) * idx.shape[0]
        size = sparse_size + tuple(values.shape[1:])
    t = _ops["_sparse_coo_tensor"](indices, values, tuple(size), bool(is_coalesced))
    if requires_grad:
        t.requires_grad_(True)
    return t


def mm(mat1, mat2):
    """Matrix product with a sparse operand (torch.sparse.mm): dense unless both are sparse."""
    return _ops["mm"](mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse and mat2 dense (torch.sparse.addmm)."""
    prod = mm(mat1, mat2)
    return mat * beta + prod * alpha if beta != 1.0 or alpha != 1.0 else mat + prod


def sum(input, dim=None, dtype=None):   # noqa: A001  (PyTorch's name)
    """Sum of a sparse tensor over `dim` (all dims: a dense number; else a sparse tensor)."""
    if not _is_sparse(input):
        return _ops["sum"](input, dim, False, dtype)
    return _ops["_sparse_sum"](input, dim, False, dtype)


# -- Tensor methods ------------------------------------------------------------------------

def _to_dense(self, dtype=None, *, masked_grad=True):
    if not is_sparse_data(self._data):
        return self if dtype is None else self.to(dtype)     # a strided tensor is its own dense form
    return _ops["_to_dense"](self, dtype, masked_grad)


def _to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
    sparse_dim = args[0] if args else None
    if layout is not None and layout != sparse_coo:
        if sparse_dim is not None or dense_dim:
            raise RuntimeError("to_sparse: sparse_dim and dense_dim are for the sparse_coo layout")
        return _ops["_to_layout"](self, layout, blocksize, True)
    if blocksize is not None:
        raise RuntimeError("to_sparse: blocksize is for the block layouts (sparse_bsr, sparse_bsc)")
    if dense_dim is not None:
        sparse_dim = self.dim() - dense_dim
    if _is_sparse(self) and sparse_dim is None:
        return self
    if is_sparse_data(self._data):           # a compressed tensor
        return _ops["_to_layout"](self, sparse_coo, None, True)
    return _ops["_to_sparse"](self, sparse_dim)


def _compressed(layout):
    def method(self, *args, dense_dim=None):
        if dense_dim:
            raise RuntimeError("dynjit's compressed sparse tensors have no dense dimensions")
        return _ops["_to_layout"](self, layout, args[0] if args else None, True)
    method.__name__ = f"to_{str.__str__(layout)}"
    return method


def _part(name):
    def method(self):
        return _ops["_compressed_part"](self, name)
    method.__name__ = name
    return method


def _need_sparse(self, what):
    if not _is_sparse(self):
        got = "Strided" if not is_sparse_data(self._data) else _COMPRESSED_NAMES[self.layout]
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {got}")


def _coalesce(self):
    _need_sparse(self, "coalesce")
    if self._data.coalesced:
        return self
    return _ops["_coalesce"](self)


def _is_coalesced(self):
    _need_sparse(self, "is_coalesced")
    return self._data.coalesced


def _coalesced_(self, coalesced):
    _need_sparse(self, "_coalesced_")
    self._data.coalesced = bool(coalesced)
    return self


def _nnz(self):
    if not is_sparse_data(self._data):
        _need_sparse(self, "_nnz")
    return self._data.nnz


def _sparse_dim(self):
    return self._data.sparse_dim if _is_sparse(self) else 0


def _dense_dim(self):
    return self._data.dense_dim if _is_sparse(self) else self.dim()


def _sparse_mask(self, mask):
    if _is_sparse(self):
        raise RuntimeError("sparse_mask: dynjit masks strided tensors only")
    return _ops["_sparse_mask"](self, mask)


def _values_method(self):
    if is_sparse_data(self._data) and not _is_sparse(self):      # compressed: the stored values
        return _ops["_compressed_part"](self, "values")
    return _ops["_sparse_values"](self)


def _method(op_name):
    def method(self):
        return _ops[op_name](self)
    method.__name__ = op_name
    return method


for _name, _fn in {
        "to_dense": _to_dense, "to_sparse": _to_sparse,
        "to_sparse_coo": lambda self: _to_sparse(self),
        "to_sparse_csr": _compressed(sparse_csr), "to_sparse_csc": _compressed(sparse_csc),
        "to_sparse_bsr": _compressed(sparse_bsr), "to_sparse_bsc": _compressed(sparse_bsc),
        "crow_indices": _part("crow_indices"), "col_indices": _part("col_indices"),
        "ccol_indices": _part("ccol_indices"), "row_indices": _part("row_indices"),
        "coalesce": _coalesce, "is_coalesced": _is_coalesced, "_coalesced_": _coalesced_,
        "_nnz": _nnz, "sparse_dim": _sparse_dim, "dense_dim": _dense_dim,
        "_values": _method("_values"), "_indices": _method("_indices"),
        "values": _values_method, "indices": _method("_sparse_indices"),
        "sparse_mask": _sparse_mask}.items():
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)
del _name, _fn
