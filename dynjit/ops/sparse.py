"""Sparse tensors: layouts, their numpy storage (`SparseCOO`, `SparseCompressed`) and the
sparse ops.

A sparse tensor is a `Tensor` whose `_data` is a `SparseCOO` (or, for the 2-D CSR, CSC,
BSR and BSC layouts, a `SparseCompressed`) rather than a numpy array, as in PyTorch,
where the layout belongs to the tensor's storage and not to its Python class.
`SparseCOO` holds PyTorch's four parts: `indices` (int64, shape (sparse_dim, nnz)),
`values` (shape (nnz, *dense_shape)), the size, and whether it is coalesced (indices
sorted and unique).

Every sparse op is a registered op (kernel on `SparseCOO` values, derivative
written with registered ops). An op says what it does with sparse operands in
`op.sparse`, PyTorch's per-backend kernel table cut down to the one sparse
backend:

- None (every op not declared here): the dispatcher refuses sparse operands with
  PyTorch's error ("Could not run 'aten::exp' with arguments from the 'SparseCPU'
  backend"), never computing on them as if they were dense;
- the op itself: its kernel takes `SparseCOO` values (the ops declared here);
- another op with the same parameters: the dispatcher runs that one instead when
  an operand is sparse (`add` runs `_sparse_add`, `mm` runs `_sparse_mm`, ...).

Compressed operands are taken only by the sparse kernels declared with
`compressed=True` (`op.takes_compressed`); every other op refuses them with PyTorch's
'SparseCsrCPU' error. The dispatcher consults `route` only once a sparse tensor exists
(`dispatch.sparse_seen`), so dense programs pay nothing for the layout check; in-place
ops on a sparse tensor go through `inplace`. See docs/sparse.md.
"""
import numpy as np

from .. import _dtype
from . import dispatch as _dispatch
from .registry import register, registry, OTHER


class layout(str):
    """A tensor layout (PyTorch's torch.layout): `dynjit.strided` or `dynjit.sparse_coo`.
    It compares equal to its name ("strided"), which dynjit used before it had layouts."""

    def __repr__(self):
        return f"dynjit.{str.__str__(self)}"

    __str__ = __repr__

    def __reduce__(self):
        return (_layout_named, (str.__str__(self),))


def _layout_named(name):
    return LAYOUTS[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
# The compressed layouts exist as names (code may compare against them); no tensor has one.
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
LAYOUTS = {str.__str__(x): x for x in (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)}


class SparseCOO:
    """The storage of a sparse COO tensor: indices, values, size and the coalesced flag.
    Read-only after construction (ops make new ones); `indices` and `values` may be views
    of other arrays (PyTorch keeps the tensors it is given, without copying)."""
    __slots__ = ("indices", "values", "shape", "coalesced")
    _init_order = __slots__
    _is_tensor_data = True          # the dispatcher wraps a kernel's SparseCOO in a Tensor

    def __init__(self, indices, values, shape, coalesced=False):
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = bool(coalesced)
        if not _dispatch.sparse_seen:
            _dispatch.sparse_seen = True

    # the parts of numpy's array interface that Tensor's shape and dtype properties read
    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.values.itemsize

    @property
    def strides(self):
        raise RuntimeError("Sparse tensors do not have strides")

    class flags:        # what Tensor.is_contiguous reads: a sparse tensor is not contiguous
        c_contiguous = f_contiguous = writeable = False

    def copy(self):
        """A copy with parts of its own (Tensor's deepcopy and pickling use it)."""
        return type(self).__new__(type(self))._fill_from(self)

    def _fill_from(self, other):
        for name in self.__slots__:
            v = getattr(other, name)
            object.__setattr__(self, name, v.copy() if isinstance(v, np.ndarray) else v)
        return self

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __reduce__(self):       # unpickled through __init__, which tells the dispatcher
        return (type(self), tuple(getattr(self, name) for name in self._init_order))

    @property
    def __array_interface__(self):
        # numpy probes this when handed a SparseCOO: fail loudly, never build an object array
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    @property
    def sparse_dim(self):
        return self.indices.shape[0]

    @property
    def dense_dim(self):
        return self.values.ndim - 1

    @property
    def nnz(self):
        return self.indices.shape[1]

    def to_dense(self):
        out = np.zeros(self.shape, dtype=self.values.dtype)
        if self.nnz:
            if self.sparse_dim == 0:
                out += self.values.sum(0)
            else:
                np.add.at(out, tuple(self.indices), self.values)
        return out

    def coalesce(self):
        """The coalesced equal: indices sorted (row-major) and unique, duplicates summed."""
        if self.coalesced:
            return self
        sd, nnz = self.sparse_dim, self.nnz
        dense_shape = self.values.shape[1:]
        if nnz == 0:
            return SparseCOO(self.indices.copy(), self.values.copy(), self.shape, True)
        if sd == 0:
            return SparseCOO(np.zeros((0, 1), np.int64), self.values.sum(0, keepdims=True),
                             self.shape, True)
        lin = np.ravel_multi_index(tuple(self.indices), self.shape[:sd])
        uniq, inverse = np.unique(lin, return_inverse=True)
        values = np.zeros((len(uniq),) + dense_shape, dtype=self.values.dtype)
        np.add.at(values, inverse.reshape(-1), self.values)
        indices = np.array(np.unravel_index(uniq, self.shape[:sd]), dtype=np.int64).reshape(sd, -1)
        return SparseCOO(indices, values, self.shape, True)

    def linear_indices(self):
        """Each entry's row-major position among the sparse dimensions."""
        sd = self.sparse_dim
        if sd == 0:
            return np.zeros(self.nnz, np.int64)
        return np.ravel_multi_index(tuple(self.indices), self.shape[:sd])

    def pattern(self):
        """Which elements are specified (a bool array of the tensor's shape)."""
        sd = self.sparse_dim
        spec = np.zeros(self.shape[:sd], bool)
        if self.nnz:
            spec[tuple(self.indices)] = True
        return np.broadcast_to(spec.reshape(spec.shape + (1,) * self.dense_dim), self.shape)

    def value_positions(self):
        """For each element of `values` (row-major), its row-major position in the dense tensor."""
        inner = int(np.prod(self.values.shape[1:], dtype=np.int64))
        return (self.linear_indices()[:, None] * inner + np.arange(inner)[None, :]).reshape(-1)

    @staticmethod
    def from_dense(arr, sparse_dim=None, mask=None):
        """PyTorch's to_sparse(sparse_dim): the entries (slices, for hybrid tensors) of `arr`
        that are not all zero (or that `mask` specifies), coalesced."""
        arr = np.asarray(arr)
        if mask is not None and sparse_dim is None:
            sd = arr.ndim
            where = np.nonzero(mask)
            return SparseCOO(np.array(where, dtype=np.int64).reshape(sd, -1), arr[where], arr.shape, True)
        sd = arr.ndim if sparse_dim is None else sparse_dim
        if sd == 0:
            nz = bool(np.any(arr != 0))
            return SparseCOO(np.zeros((0, int(nz)), np.int64), arr[None].copy() if nz else
                             np.zeros((0,) + arr.shape, arr.dtype), arr.shape, True)
        mask = arr != 0
        if sd < arr.ndim:
            mask = mask.reshape(arr.shape[:sd] + (-1,)).any(-1)
        where = np.nonzero(mask)
        indices = np.array(where, dtype=np.int64).reshape(sd, -1)
        return SparseCOO(indices, arr[where], arr.shape, True)

    def with_values(self, values):
        """The same pattern holding other values."""
        return SparseCOO(self.indices, values, self.shape, self.coalesced)


class SparseCompressed:
    """The storage of a 2-D compressed sparse tensor (PyTorch's CSR, CSC, BSR, BSC layouts):
    compressed indices (one run per row, or column), plain indices (the column, or row, of
    each stored element or block), values ((nnz,) or, blocked, (nnz, *blocksize))."""
    __slots__ = ("layout", "compressed_indices", "plain_indices", "values", "shape", "blocksize")
    _init_order = __slots__
    _is_tensor_data = True

    def __init__(self, layout, compressed_indices, plain_indices, values, shape, blocksize):
        self.layout = layout
        self.compressed_indices = compressed_indices
        self.plain_indices = plain_indices
        self.values = values
        self.shape = tuple(int(n) for n in shape)
        self.blocksize = tuple(blocksize)
        if not _dispatch.sparse_seen:
            _dispatch.sparse_seen = True

    dtype = SparseCOO.dtype
    ndim = SparseCOO.ndim
    size = SparseCOO.size
    itemsize = SparseCOO.itemsize
    strides = SparseCOO.strides
    __array_interface__ = SparseCOO.__array_interface__
    flags = SparseCOO.flags
    copy = SparseCOO.copy
    _fill_from = SparseCOO._fill_from
    tolist = SparseCOO.tolist
    __reduce__ = SparseCOO.__reduce__

    @property
    def nnz(self):
        return self.plain_indices.shape[0]

    @property
    def row_major(self):
        return self.layout in (sparse_csr, sparse_bsr)

    def _block_coords(self):
        counts = np.diff(self.compressed_indices)
        compressed = np.repeat(np.arange(len(counts)), counts)
        return (compressed, self.plain_indices) if self.row_major else (self.plain_indices, compressed)

    def _blocked_view(self, arr):
        (bh, bw), (r, c) = self.blocksize, self.shape
        return arr.reshape(r // bh, bh, c // bw, bw)

    def to_dense(self):
        out = np.zeros(self.shape, dtype=self.values.dtype)
        rows, cols = self._block_coords()
        self._blocked_view(out)[rows, :, cols, :] = self.values.reshape((self.nnz,) + self.blocksize)
        return out

    def pattern(self):
        out = np.zeros(self.shape, bool)
        rows, cols = self._block_coords()
        self._blocked_view(out)[rows, :, cols, :] = True
        return out

    def value_positions(self):
        positions = np.arange(self.size).reshape(self.shape)
        rows, cols = self._block_coords()
        return self._blocked_view(positions)[rows, :, cols, :].reshape(-1)

    @staticmethod
    def from_dense(arr, layout, blocksize=None, mask=None):
        arr = np.asarray(arr)
        blocked = layout in (sparse_bsr, sparse_bsc)
        name = f"dense_to_{str.__str__(layout)}"
        if arr.ndim != 2:
            raise RuntimeError(f"{name}: dynjit's compressed sparse tensors are 2-D (no batch or dense "
                               f"dimensions), got a {arr.ndim}-D tensor")
        if blocked:
            if blocksize is None:
                raise RuntimeError(f"{name}: blocksize must be given for the {str.__str__(layout)} layout")
            blocksize = (blocksize, blocksize) if isinstance(blocksize, int) else tuple(blocksize)
            if arr.shape[0] % blocksize[0] or arr.shape[1] % blocksize[1]:
                raise RuntimeError(f"{name}: tensor sparse size ({arr.shape[0]},{arr.shape[1]}) must be "
                                   f"divisible by given blocksize ({blocksize[0]},{blocksize[1]})")
        else:
            blocksize = (1, 1)
        mask = arr != 0 if mask is None else np.asarray(mask, bool)
        bh, bw = blocksize
        nbr, nbc = arr.shape[0] // bh, arr.shape[1] // bw
        blocks = mask.reshape(nbr, bh, nbc, bw).any(axis=(1, 3))
        row_major = layout in (sparse_csr, sparse_bsr)
        if row_major:
            rows, cols = np.nonzero(blocks)
            compressed, plain, n = rows, cols, nbr
        else:
            cols, rows = np.nonzero(blocks.T)
            compressed, plain, n = cols, rows, nbc
        counts = np.bincount(compressed, minlength=n)
        ci = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        values = arr.reshape(nbr, bh, nbc, bw)[rows, :, cols, :]
        if not blocked:
            values = values.reshape(-1)
        return SparseCompressed(layout, ci, plain.astype(np.int64), values.copy(), arr.shape, blocksize)


def storage_parts(data):
    """(layout name, {part: array}, {flag: value}) of a sparse storage, for dynjit.save."""
    if type(data) is SparseCOO:
        return "sparse_coo", {"indices": data.indices, "values": data.values}, {"coalesced": data.coalesced}
    return (str.__str__(data.layout), {"compressed_indices": data.compressed_indices,
                                       "plain_indices": data.plain_indices, "values": data.values},
            {"blocksize": list(data.blocksize)})


def from_parts(layout_name, parts, shape, flags):
    """The sparse storage that storage_parts described (dynjit.load), checked like the
    constructors check their arguments (a RuntimeError for parts that do not fit)."""
    shape = tuple(int(n) for n in shape)
    if layout_name == "sparse_coo":
        coo = _sparse_coo_tensor.kernel(parts["indices"], parts["values"], shape, bool(flags.get("coalesced")))
        return coo
    target = LAYOUTS.get(layout_name)
    if target not in (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc):
        raise RuntimeError(f"unknown sparse layout {layout_name!r}")
    c = SparseCompressed(target, np.asarray(parts["compressed_indices"], np.int64),
                         np.asarray(parts["plain_indices"], np.int64), parts["values"], shape,
                         tuple(int(b) for b in flags["blocksize"]))
    # a consistent storage round-trips through its dense form unchanged
    check = SparseCompressed.from_dense(c.to_dense(), target, c.blocksize, c.pattern())
    if check.nnz != c.nnz or not np.array_equal(check.plain_indices, c.plain_indices) \
            or not np.array_equal(check.compressed_indices, c.compressed_indices):
        raise RuntimeError(f"inconsistent {layout_name} indices")
    return c


def is_sparse_data(x):
    """Whether `x` (a tensor's _data) is the storage of a sparse tensor, of any layout."""
    return type(x) is SparseCOO or type(x) is SparseCompressed


def layout_of(data):
    t = type(data)
    if t is SparseCOO:
        return sparse_coo
    return data.layout if t is SparseCompressed else strided


def densified(data):
    """The same sparse tensor with every element specified (zeros where it had none): PyTorch's
    non-masked semantics in gradcheck."""
    dense = data.to_dense()
    full = np.ones(dense.shape, bool)
    if type(data) is SparseCOO:
        f = SparseCOO.from_dense(full, data.sparse_dim)
        return SparseCOO(f.indices, _values_at(dense, f), dense.shape, True)
    return SparseCompressed.from_dense(dense, data.layout, data.blocksize, full)


# -- dispatch ------------------------------------------------------------------------------

def could_not_run(op, backend="SparseCPU"):
    return NotImplementedError(
        f"Could not run 'aten::{op.name}' with arguments from the '{backend}' backend. This could "
        "be because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build).")


def _sparse_kind(op, args):
    """None (no sparse operand), SparseCOO, or SparseCompressed (some operand is compressed)."""
    found = None
    for i, a in enumerate(args):
        items = a if op.tensor_lists and i in op.tensor_lists and isinstance(a, (list, tuple)) else (a,)
        for t in items:
            d = getattr(t, "_data", None)
            if type(d) is SparseCompressed:
                return SparseCompressed
            if type(d) is SparseCOO:
                found = SparseCOO
    return found


def route(op, args):
    """The op to run for `op(*args)` when an operand is sparse (see the module docstring);
    None when no operand is sparse. Raises PyTorch's error when `op` has no sparse kernel
    (for the compressed layouts: no kernel that takes them)."""
    kind = _sparse_kind(op, args)
    if kind is None:
        return None
    target = op.sparse
    if kind is SparseCompressed and (target is None or not target.takes_compressed):
        raise could_not_run(op, "SparseCsrCPU")
    if target is None:
        raise could_not_run(op)
    return target


def inplace(op, args):
    """The in-place op `op` (s.mul_(2), s.add_(t), s.zero_()) on a sparse `self`: the
    functional op's result becomes self's storage (layout and dtype kept), as PyTorch's sparse
    in-place kernels leave it. Autograd does not follow in-place changes of sparse tensors."""
    self = args[0]
    needs_grad = _dispatch.grad_state.enabled and any(getattr(a, "_requires_grad", False) for a in args)
    _dispatch.check_inplace_allowed(self, needs_grad, op.name)      # a leaf that requires grad ...
    if needs_grad:
        raise RuntimeError(f"{op.name}: dynjit does not record in-place ops on sparse tensors for autograd; "
                           "use the out-of-place op")
    if self._is_inference and not _dispatch.grad_state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed. "
                           "You can make a clone to get a normal tensor before doing inplace update.")
    result = op.functional(*args)._data
    if layout_of(result) is not layout_of(self._data):
        raise RuntimeError(f"{op.name}: the result's layout ({layout_of(result)!r}) differs from the "
                           f"sparse tensor's ({layout_of(self._data)!r})")
    if result.values.dtype != self._data.values.dtype:
        if _dtype.dtype_of_np(result.values.dtype)._category > _dtype.dtype_of_np(self._data.values.dtype)._category:
            raise RuntimeError(f"result type {_dtype.dtype_of_np(result.values.dtype).name} can't be cast to "
                               f"the desired output type {self.dtype.name}")
        result = result.with_values(result.values.astype(self._data.values.dtype))
    self._data = result
    self._version_counter[0] += 1
    return self


_dispatch.install_sparse_router(route, inplace)


def sparse_op(name, *, replaces=(), compressed=False, **options):
    """Declare an op whose kernel takes sparse COO values (and, with `compressed=True`, the
    compressed layouts' too); `replaces`: ops (with the same parameters) that run this one
    when one of their operands is sparse."""
    def deco(kernel):
        options.setdefault("complex_ok", True)
        if not compressed:
            kernel = _refusing_compressed(name, kernel)
        op = register(name, OTHER, **options)(kernel)
        op.sparse = op
        op.takes_compressed = compressed
        for other in replaces:
            registry[other].sparse = op
        return op
    return deco


def _refusing_compressed(name, kernel):
    import functools

    @functools.wraps(kernel)
    def checked(*args):
        if any(type(a) is SparseCompressed for a in args):
            raise could_not_run(registry[name], "SparseCsrCPU")
        return kernel(*args)
    return checked


# Ops whose kernel does not look at its operand's values: they work on sparse tensors as they are.
registry["detach"].sparse = registry["detach"]
registry["detach"].takes_compressed = True


# -- helpers for kernels -------------------------------------------------------------------

def _dense(x):
    return x.to_dense() if is_sparse_data(x) else x


def _values_at(dense, coo):
    """The entries (slices) of the dense array `dense` at the positions of `coo`."""
    if coo.sparse_dim == 0:
        return np.broadcast_to(dense, (coo.nnz,) + dense.shape).copy()
    return dense[tuple(coo.indices)]


def _lookup(source, target):
    """The values of the sparse `source` at each entry of `target` (zero where `source` has
    none), with `source`'s duplicates summed."""
    src = source.coalesce()
    out = np.zeros((target.nnz,) + src.values.shape[1:], dtype=src.values.dtype)
    if src.nnz == 0 or target.nnz == 0:
        return out
    keys, want = src.linear_indices(), target.linear_indices()
    pos = np.searchsorted(keys, want)
    pos_ok = np.minimum(pos, len(keys) - 1)
    hit = keys[pos_ok] == want
    out[hit] = src.values[pos_ok[hit]]
    return out


def _result_dtype(*operands):
    """PyTorch's promotion of the operands' dtypes (arrays with dims, 0-d arrays, Python
    numbers), as a numpy dtype."""
    dims, zero, scalars = [], [], []
    for a in operands:
        if isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
        else:
            (dims if a.ndim else zero).append(_dtype.dtype_of_np(a.dtype))
    return _dtype.result_type(dims, zero, scalars).np


# -- construction and conversion ------------------------------------------------------------

@sparse_op("_sparse_coo_tensor", differentiable=True)
def _sparse_coo_tensor(indices, values, size, is_coalesced=False):
    """A sparse tensor from its parts, as given (no copy, no check of coalescing)."""
    indices = np.asarray(indices)
    if indices.dtype.kind == "f":
        indices = indices.astype(np.int64)       # PyTorch converts floating indices
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if indices.dtype != np.int64:
        indices = indices.astype(np.int64)
    values = np.asarray(values)
    if values.ndim == 0 or values.shape[0] != indices.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0] if values.ndim else 1}")
    size = tuple(size)
    sd = indices.shape[0]
    if sd + values.ndim - 1 != len(size):
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {[indices.shape[1], *size[sd:]]}, "
                           f"got {list(values.shape)}")
    if indices.size:
        lo, hi = indices.min(1), indices.max(1)
        for d in range(sd):
            if lo[d] < 0:
                raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
            if hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {hi[d]}")
    return SparseCOO(indices, values, size, is_coalesced)


@_sparse_coo_tensor.derivative
def _(grad, indices, size):
    return None, _sparse_values_at(grad, indices, size)


@sparse_op("_sparse_values_at", differentiable=False)
def _sparse_values_at(self, indices, size):
    """The gradient of a sparse tensor's values: `self` (dense or sparse, of shape `size`)
    read at each given index (every duplicate gets the whole entry)."""
    indices = np.asarray(indices).astype(np.int64)
    target = SparseCOO(indices, np.zeros((indices.shape[1],) + tuple(size[indices.shape[0]:])), size)
    if type(self) is SparseCOO:
        return _lookup(self, target)
    return _values_at(self, target)


@sparse_op("_to_dense", compressed=True)
def to_dense(self, dtype=None, masked_grad=True):
    out = _dense(self)
    if dtype is not None:
        out = out.astype(_dtype.to_dtype(dtype).np)
    return out


@to_dense.derivative
def _(grad, self, masked_grad):
    if self.layout is strided:
        return grad
    if self.layout is not sparse_coo:       # compressed: through COO, back to self's layout
        if masked_grad:
            grad = sparse_mask(grad, to_layout(self, sparse_coo, None, False))
        return to_layout(grad, self.layout, self._data.blocksize, False)
    if masked_grad:
        return sparse_mask(grad, self)
    return to_sparse(grad, self.sparse_dim())


_COMPRESSED_NAMES = {sparse_csr: "SparseCsr", sparse_csc: "SparseCsc", sparse_bsr: "SparseBsr",
                     sparse_bsc: "SparseBsc"}


@sparse_op("_to_layout", compressed=True)
def to_layout(self, layout, blocksize=None, check=True):
    """Conversion between layouts (to_dense, to_sparse, to_sparse_csr, ..., to_sparse_bsc),
    keeping which elements are specified. `check=False` (backward) lifts PyTorch's refusal
    to turn a block layout into CSR or CSC."""
    target = LAYOUTS[str.__str__(layout)] if isinstance(layout, str) else layout
    source = layout_of(self)
    if target is strided:
        return _dense(self)
    if check and source in (sparse_bsr, sparse_bsc) and target in (sparse_csr, sparse_csc):
        name = str.__str__(target)
        raise RuntimeError(f"sparse_compressed_to_{name}: expected SparseCsr or SparseCsc layout but "
                           f"got {_COMPRESSED_NAMES[source]}")
    if type(self) is SparseCompressed and blocksize is None:
        blocksize = self.blocksize if target in (sparse_bsr, sparse_bsc) else None
    if source is target and (blocksize is None or type(self) is not SparseCompressed
                             or tuple(self.blocksize) == _pair(blocksize)):
        return self
    if type(self) is SparseCOO and self.dense_dim and target is not sparse_coo:
        raise RuntimeError("to_sparse: dynjit converts COO tensors without dense dimensions only "
                           "to compressed layouts")
    dense = _dense(self)
    mask = None if type(self) is np.ndarray else self.pattern()
    if target is sparse_coo:
        return SparseCOO.from_dense(dense, None, mask)
    return SparseCompressed.from_dense(dense, target, blocksize, mask)


def _pair(b):
    return (b, b) if isinstance(b, int) else tuple(b)


@to_layout.derivative
def _(grad, self):
    blocksize = self._data.blocksize if type(self._data) is SparseCompressed else None
    return to_layout(grad, self.layout, blocksize, False)


@sparse_op("_to_sparse")
def to_sparse(self, sparse_dim=None):
    if type(self) is SparseCOO:
        if sparse_dim is not None and sparse_dim != self.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self
    if sparse_dim is not None and not 0 <= sparse_dim <= self.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0,{self.ndim}] range, but {sparse_dim} is given")
    return SparseCOO.from_dense(self, sparse_dim)


@to_sparse.derivative
def _(grad, self):
    if self.layout is strided:
        return to_dense(grad)
    return grad


@sparse_op("_coalesce")
def coalesce(self):
    return self.coalesce() if type(self) is SparseCOO else self


coalesce.derivative(lambda grad: grad)


@sparse_op("_compressed_part", differentiable=False, compressed=True)
def _compressed_part(self, name):
    """crow_indices / col_indices / ccol_indices / row_indices / values of a compressed tensor."""
    if type(self) is not SparseCompressed:
        raise RuntimeError(f"{name} expected sparse compressed tensor layout but got {_layout_word(self)}")
    rows = self.row_major
    if name in ("crow_indices", "ccol_indices"):
        if rows != (name == "crow_indices"):
            raise RuntimeError(f"{name} expected sparse {'row' if name[0] == 'c' and name[1] == 'r' else 'column'} "
                               f"compressed tensor layout but got {_COMPRESSED_NAMES[self.layout]}")
        return self.compressed_indices
    if name in ("col_indices", "row_indices"):
        if rows != (name == "col_indices"):
            raise RuntimeError(f"{name} expected sparse {'row' if name == 'col_indices' else 'column'} "
                               f"compressed tensor layout but got {_COMPRESSED_NAMES[self.layout]}")
        return self.plain_indices
    return self.values


def _layout_word(x):
    if type(x) is SparseCompressed:
        return _COMPRESSED_NAMES[x.layout]
    return "Sparse" if type(x) is SparseCOO else "Strided"


@sparse_op("_values", differentiable=False)
def _values(self):
    _need_sparse(self, "_values")
    return self.values


@sparse_op("_indices", differentiable=False)
def _indices(self):
    _need_sparse(self, "_indices")
    return self.indices


def _need_sparse(x, what):
    if type(x) is not SparseCOO:
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {_layout_word(x)}")


def _need_coalesced(x, what):
    _need_sparse(x, what)
    if not x.coalesced:
        raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call .coalesce() first")


@sparse_op("_sparse_values")
def values(self):
    _need_coalesced(self, "values")
    return self.values


@values.derivative
def _(grad, self):
    return _sparse_coo_tensor(_indices(self), grad, tuple(self.shape), True)


@sparse_op("_sparse_indices", differentiable=False)
def indices(self):
    _need_coalesced(self, "indices")
    return self.indices


@sparse_op("_sparse_mask")
def sparse_mask(self, mask):
    """The entries of `self` at the positions of the sparse `mask` (coalesced), as a sparse
    tensor with `mask`'s pattern."""
    if type(mask) is not SparseCOO:
        raise RuntimeError("sparse_mask expects mask to be sparse")
    if tuple(self.shape) != mask.shape:
        raise RuntimeError("sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    m = mask.coalesce()
    if type(self) is SparseCOO:
        return SparseCOO(m.indices, _lookup(self, m), m.shape, True)
    return SparseCOO(m.indices, _values_at(np.asarray(self), m), m.shape, True)


@sparse_mask.derivative
def _(grad, self, mask):
    grad = sparse_mask(grad, mask)      # only the mask's entries came from self
    if self.layout is strided:
        return to_dense(grad), None
    return grad, None


# -- arithmetic ------------------------------------------------------------------------------

def _concat(a, b, scale):
    """a + scale * b for two sparse operands: coalesced when both are (a merge), else their
    entries side by side, as PyTorch keeps them."""
    dtype = _result_dtype(a.values, b.values, scale)
    if a.shape != b.shape:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(a.shape)} != "
                           f"{list(b.shape)}")
    if a.sparse_dim != b.sparse_dim:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse_dim, but got "
                           f"{a.sparse_dim} and {b.sparse_dim}")
    joined = SparseCOO(np.concatenate([a.indices, b.indices], axis=1),
                       np.concatenate([a.values.astype(dtype), (b.values * scale).astype(dtype)]),
                       a.shape)
    if a.coalesced and b.coalesced:
        return joined.coalesce()
    return joined


@sparse_op("_sparse_add", replaces=("add",))
def _sparse_add(self, other, alpha=1):
    """add with a sparse operand: sparse + sparse is sparse, dense + sparse is dense."""
    if type(self) is SparseCOO and type(other) is SparseCOO:
        return _concat(self, other, alpha)
    if type(self) is SparseCOO:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    self = np.asarray(self)
    if tuple(self.shape) != other.shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(self.shape)} while other has size {list(other.shape)} (FYI: "
                           "dense-sparse addition does not currently support broadcasting)")
    out = self.astype(_result_dtype(self, other.values), copy=True)
    if other.nnz:
        vals = other.values * alpha
        if other.sparse_dim == 0:
            out += vals.sum(0)
        else:
            np.add.at(out, tuple(other.indices), vals)
    return out


@_sparse_add.derivative
def _(grad, alpha):
    return grad, grad if alpha == 1 else grad * alpha


@sparse_op("_sparse_sub", replaces=("sub",))
def _sparse_sub(self, other, alpha=1):
    return _sparse_add.kernel(self, other, -alpha)


@_sparse_sub.derivative
def _(grad, alpha):
    return grad, grad * -alpha


@sparse_op("_sparse_mul", replaces=("mul",))
def _sparse_mul(self, other):
    """mul with a sparse operand: the result is sparse (zeros stay zeros)."""
    if type(self) is not SparseCOO:
        self, other = other, self          # mul commutes: the sparse operand first
    if type(other) is SparseCOO:
        if self.shape != other.shape:
            raise RuntimeError(f"mul operands have incompatible sizes: {list(self.shape)} and {list(other.shape)}")
        a = self.coalesce()
        vals = a.values * _lookup(other, a)
        return SparseCOO(a.indices, vals, a.shape, True)
    dtype = _result_dtype(self.values, other)
    if isinstance(other, (bool, int, float, complex)) or np.ndim(other) == 0:
        return self.with_values((self.values * other).astype(dtype, copy=False))
    other = np.asarray(other)
    try:
        full = np.broadcast_to(other, self.shape)
    except ValueError:
        raise RuntimeError(f"The size of the dense operand {list(other.shape)} of mul does not broadcast "
                           f"to the sparse operand's size {list(self.shape)}") from None
    return self.with_values((self.values * _values_at(full, self)).astype(dtype, copy=False))


@_sparse_mul.derivative
def _(grad, self, other, needs):
    def grad_of(x, y):      # x's gradient: grad * y; a dense x gets it dense (summed if broadcast)
        g = grad * y
        if isinstance(x, _dispatch.Tensor) and x.layout is strided and g.layout is not strided:
            g = to_dense(g)
        return g
    return (grad_of(self, other) if needs[0] else None,
            grad_of(other, self) if needs[1] else None)


@sparse_op("_sparse_div", replaces=("div",))
def _sparse_div(self, other):
    if type(self) is not SparseCOO or type(other) is SparseCOO or np.ndim(other) != 0:
        shape = list(np.shape(other)) if type(other) is not SparseCOO else list(other.shape)
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {shape} for divisor)")
    dtype = _result_dtype(self.values, other)
    if dtype.kind not in "fc":
        dtype = _dtype.get_default_dtype().np
    return self.with_values((self.values / other).astype(dtype, copy=False))


@_sparse_div.derivative
def _(grad, other):
    return grad / other, None


@sparse_op("_sparse_zero", replaces=("zero",))
def _sparse_zero(self):
    """zero of a sparse tensor: no entries (PyTorch's sparse zero_ leaves nnz 0)."""
    return SparseCOO(np.zeros((self.sparse_dim, 0), np.int64),
                     np.zeros((0,) + self.values.shape[1:], self.values.dtype), self.shape, True)


_sparse_zero.derivative(lambda grad: None)


@sparse_op("_sparse_neg", replaces=("neg",))
def _sparse_neg(self):
    return self.with_values(-self.values)


_sparse_neg.derivative(lambda grad: -grad)


@sparse_op("_sparse_clone", replaces=("clone",), compressed=True)
def _sparse_clone(self, memory_format=None):
    if type(self) is SparseCompressed:
        return SparseCompressed(self.layout, self.compressed_indices.copy(), self.plain_indices.copy(),
                                self.values.copy(), self.shape, self.blocksize)
    return SparseCOO(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)


_sparse_clone.derivative(lambda grad: grad)


@sparse_op("_sparse_to_dtype", replaces=("to_dtype",))
def _sparse_to_dtype(self, dtype):
    target = _dtype.to_dtype(dtype).np
    values = self.values
    if values.dtype.kind == "c" and target.kind != "c":
        values = values.real
    return self.with_values(values.astype(target))


_sparse_to_dtype.derivative(lambda grad: grad)


def _zero_preserving(name):
    """The sparse variant of the unary pointwise op `name`, which maps zero to zero (sin,
    tanh, relu, sqrt, ...): the op on the coalesced values, PyTorch's dtype rule included.
    Its gradient is the dense op's derivative on the values, at the input's entries."""
    dense = registry[name]

    def kernel(self):
        c = self.coalesce()
        make = _dispatch.Tensor._make
        compute, result = _dispatch.pointwise_dtypes(dense, (make(c.values),))
        with np.errstate(all="ignore"):
            out = dense.kernel(c.values.astype(compute.np, copy=False))
        return SparseCOO(c.indices, np.asarray(out).astype(result.np, copy=False), c.shape, True)

    kernel.__name__ = f"_sparse_{name}"
    op = sparse_op(f"_sparse_{name}", replaces=(name,))(kernel)
    if dense.derivative_fn is None:
        return op

    @op.derivative
    def _(grad, self, result):
        indices = _indices(result)
        size = tuple(self.shape)
        saved = {"self": _sparse_values_at(self, indices, size), "result": _values(result),
                 "grad": None}
        saved["self_shape"] = tuple(saved["self"].shape)
        got = dense.derivative_fn(_sparse_values_at(grad, indices, size),
                                  *[saved[p] if p != "needs" else (True,) for p in dense.derivative_params])
        if isinstance(got, tuple):
            got = got[0]
        return None if got is None else _sparse_coo_tensor(indices, got, size, True)
    return op


# The unary ops PyTorch has SparseCPU kernels for, one declaration each (as native_functions.yaml
# names a SparseCPU kernel per op)
_zero_preserving("abs")
_zero_preserving("sin")
_zero_preserving("sinh")
_zero_preserving("tan")
_zero_preserving("tanh")
_zero_preserving("asin")
_zero_preserving("atan")
_zero_preserving("sqrt")
_zero_preserving("square")
_zero_preserving("expm1")
_zero_preserving("log1p")
_zero_preserving("erf")
_zero_preserving("relu")
_zero_preserving("sign")
_zero_preserving("sgn")
_zero_preserving("trunc")
_zero_preserving("floor")
_zero_preserving("ceil")
_zero_preserving("frac")
_zero_preserving("signbit")
_zero_preserving("isnan")
_zero_preserving("isinf")
_zero_preserving("conj")


@sparse_op("_sparse_transpose", replaces=("transpose",))
def _sparse_transpose(self, dim0, dim1):
    n = len(self.shape)
    d0, d1 = dim0 % n if n else 0, dim1 % n if n else 0
    if d0 == d1:
        return self
    sd = self.sparse_dim
    if (d0 < sd) != (d1 < sd):
        raise RuntimeError("transpose(): can't transpose a sparse dimension with a dense dimension")
    shape = list(self.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 < sd:
        idx = self.indices.copy()
        idx[[d0, d1]] = idx[[d1, d0]]
        return SparseCOO(idx, self.values, shape)
    return SparseCOO(self.indices, np.swapaxes(self.values, d0 - sd + 1, d1 - sd + 1), shape, self.coalesced)


@_sparse_transpose.derivative
def _(grad, dim0, dim1):
    return registry["transpose"](grad, dim0, dim1)


@sparse_op("_sparse_permute", replaces=("permute",))
def _sparse_permute(self, dims):
    """permute of a sparse tensor: the sparse dims among themselves, the dense ones likewise."""
    n = len(self.shape)
    dims = [d % n for d in dims] if n else []
    if sorted(dims) != list(range(n)):
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                           f"equal to len(dims) = {len(dims)}")
    sd = self.sparse_dim
    if sorted(dims[:sd]) != list(range(sd)):
        raise RuntimeError("permute(sparse_coo): transpositions between sparse and dense dimensions are "
                           "not allowed. Only transpositions within sparse and dense dimensions are supported.")
    shape = [self.shape[d] for d in dims]
    values = np.transpose(self.values, [0] + [d - sd + 1 for d in dims[sd:]])
    return SparseCOO(self.indices[dims[:sd]], values, shape, self.coalesced and dims[:sd] == list(range(sd)))


@_sparse_permute.derivative
def _(grad, dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d % len(dims)] = i
    return registry["permute"](grad, inverse)


@sparse_op("_sparse_t", replaces=("t",))
def _sparse_t(self):
    if len(self.shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"self is {self.sparse_dim} sparse and {self.dense_dim} dense dimensions")
    return _sparse_transpose.kernel(self, 0, 1) if len(self.shape) == 2 else self


_sparse_t.derivative(lambda grad: registry["t"](grad))


def _check_2d(x, name):
    if len(x.shape) != 2:
        raise RuntimeError(f"{name} must be a matrix")


def _spmm(coo, dense):
    """sparse (n, m) @ dense (m, k) -> dense (n, k)."""
    if coo.dense_dim:
        raise RuntimeError("mm: hybrid sparse tensors (with dense dimensions) are not supported")
    dtype = _result_dtype(coo.values, dense)
    out = np.zeros((coo.shape[0], dense.shape[1]), dtype=dtype)
    if coo.nnz:
        np.add.at(out, coo.indices[0], coo.values[:, None] * dense[coo.indices[1]])
    return out


@sparse_op("_sparse_mm", replaces=("mm", "matmul"))
def _sparse_mm(self, mat2):
    """mm with a sparse operand: sparse @ dense and dense @ sparse are dense, sparse @ sparse
    is sparse."""
    _check_2d(self, "self")
    _check_2d(mat2, "mat2")
    if self.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} "
                           f"and {mat2.shape[0]}x{mat2.shape[1]})")
    if type(self) is SparseCOO and type(mat2) is SparseCOO:
        return SparseCOO.from_dense(_spmm(self, mat2.to_dense()))
    if type(self) is SparseCOO:
        return _spmm(self, np.asarray(mat2))
    t = SparseCOO(mat2.indices[::-1], mat2.values, mat2.shape[::-1])
    return _spmm(t, np.asarray(self).T).T.copy()


@_sparse_mm.derivative
def _(grad, self, mat2, needs):
    mm = registry["mm"]
    t = registry["t"]
    return (mm(grad, t(mat2)) if needs[0] else None,
            mm(t(self), grad) if needs[1] else None)


@sparse_op("_sparse_sum", replaces=("sum",), compressed=True)
def _sparse_sum(self, dim=None, keepdim=False, dtype=None):
    """sum of a sparse tensor: a dense number over every dimension, else a sparse tensor
    (PyTorch's torch.sparse.sum)."""
    values = self.values if dtype is None else self.values.astype(_dtype.to_dtype(dtype).np)
    if values.dtype.kind in "biu" and dtype is None:
        values = values.astype(np.int64)
    if type(self) is SparseCompressed:
        if dim is not None:
            raise RuntimeError("sum: dynjit sums compressed sparse tensors over every dimension only")
        return np.asarray(values.sum())
    n = len(self.shape)
    dims = range(n) if dim is None or dim == () or dim == [] else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = sorted({d % n for d in dims}) if n else []
    if keepdim and dim is not None:
        raise RuntimeError("sum: keepdim is not supported for sparse tensors")
    if len(dims) == n:
        return np.asarray(values.sum())
    sd = self.sparse_dim
    keep_sparse = [d for d in range(sd) if d not in dims]
    dense_axes = tuple(d - sd + 1 for d in dims if d >= sd)
    vals = values.sum(axis=dense_axes) if dense_axes else values
    shape = [s for d, s in enumerate(self.shape) if d not in dims]
    reduced = SparseCOO(self.indices[keep_sparse], vals, shape)
    return reduced.coalesce()


@_sparse_sum.derivative
def _(grad, self, dim):
    if dim is None:
        return registry["expand"](grad, tuple(self.shape))
    return _sparse_sum_backward(grad, self, dim)


@sparse_op("_sparse_norm", replaces=("norm",))
def _sparse_norm(self, p=2, dim=None, keepdim=False):
    """The p-norm of a sparse tensor over every element (its unspecified ones are zeros, which
    no p > 0 norm counts), from its coalesced values."""
    if dim is not None:
        raise RuntimeError("norm: dynjit takes the norm of a sparse tensor over every dimension only")
    if not (p == float("inf") or (isinstance(p, (int, float)) and p > 0)):
        raise RuntimeError(f"norm: dynjit takes p > 0 or inf norms of sparse tensors, got p={p!r}")
    return registry["norm"].kernel(self.coalesce().values.reshape(-1), p, None, False)


@_sparse_norm.derivative
def _(grad, self, p, result):
    c = coalesce(self)
    values = _values(c)
    flat = values.reshape(-1)
    g = registry["norm"].derivative_fn(grad, flat, p, None, False, result)
    return _sparse_coo_tensor(_indices(c), g.reshape(tuple(values.shape)), tuple(self.shape), True)


@sparse_op("_sparse_sum_backward", differentiable=False)
def _sparse_sum_backward(grad, self, dim):
    """The gradient of a sparse sum over `dim`: the incoming gradient spread back over the
    reduced dimensions, at the input's entries."""
    n = len(self.shape)
    dims = sorted({d % n for d in ([dim] if isinstance(dim, int) else dim)})
    g = _dense(grad)
    for d in dims:
        g = np.expand_dims(g, d)
    full = np.broadcast_to(g, self.shape)
    c = self.coalesce()
    return SparseCOO(c.indices, _values_at(full, c).astype(self.values.dtype, copy=False), c.shape, True)


@sparse_op("_gather_sparse_grad")
def _gather_sparse_grad(self, dim, index):
    """gather(self, dim, index, sparse_grad=True): gather, with a sparse COO gradient."""
    return registry["gather"].kernel(self, dim, index)


@_gather_sparse_grad.derivative
def _(grad, self_shape, dim, index):
    return _gather_sparse_backward(grad, dim, index, self_shape), None, None


@sparse_op("_gather_sparse_backward", differentiable=False)
def _gather_sparse_backward(grad, dim, index, size):
    """PyTorch's _gather_sparse_backward: one entry per element of `index`, at the position it
    gathered from, holding that element's gradient (uncoalesced)."""
    idx = np.asarray(index).astype(np.int64)
    g = np.asarray(_dense(grad)).reshape(-1)
    size = tuple(size)
    if len(size) == 0:
        return SparseCOO(np.zeros((0, g.size), np.int64), g.copy(), size)
    d = dim % len(size)
    grids = list(np.indices(idx.shape).reshape(idx.ndim, -1)) if idx.ndim else [np.zeros(1, np.int64)]
    grids[d] = idx.reshape(-1)
    return SparseCOO(np.array(grids, dtype=np.int64).reshape(len(size), -1), g.copy(), size)


@sparse_op("_embedding_sparse_rows")
def _embedding_sparse_rows(weight, indices, padding_idx=None):
    """Rows of the dense `weight` at `indices` (flat), whose gradient is sparse, as
    PyTorch's embedding(sparse=True) gives it: one entry per index, uncoalesced, none for
    padding_idx."""
    return np.asarray(weight)[np.asarray(indices).reshape(-1)]


@_embedding_sparse_rows.derivative
def _(grad, weight_shape, indices, padding_idx):
    return _embedding_sparse_grad(grad, indices, weight_shape, padding_idx), None


@sparse_op("_embedding_sparse_grad")
def _embedding_sparse_grad(rows_grad, indices, size, padding_idx=None):
    """embedding's sparse weight gradient: the rows' gradient at the rows' indices."""
    idx = np.asarray(indices).reshape(-1).astype(np.int64)
    g = np.asarray(_dense(rows_grad)).reshape(len(idx), -1)
    if padding_idx is not None:
        keep = idx != padding_idx
        idx, g = idx[keep], g[keep]
    return SparseCOO(idx[None, :], g, tuple(size))


@_embedding_sparse_grad.derivative
def _(grad, rows_grad_shape, indices, size, padding_idx):
    # each row's gradient went to its index: it gets back what flows into that entry
    rows = _embedding_sparse_rows(to_dense(grad), indices, None)
    if padding_idx is not None:
        rows = rows * registry["ne"](indices.reshape(-1), padding_idx).unsqueeze(1).to(rows.dtype)
    return rows.reshape(rows_grad_shape), None


def sparse_repr(t):
    """PyTorch's repr of a sparse tensor: its indices, values, size, nnz and layout."""
    from .._printing import tensor_repr
    make = _dispatch.Tensor._make
    coo = t._data
    pad = " " * len("tensor(")

    def part(name, arr):
        lines = tensor_repr(make(arr)).split("\n")
        return "\n".join([f"{name}={lines[0]}"] + [" " * (len(name) + 1) + ln for ln in lines[1:]])

    suffix = [f"size={tuple(coo.shape)}", f"nnz={coo.nnz}"]
    if coo.values.dtype != _dtype.get_default_dtype().np and coo.values.dtype.kind not in "iub" \
            and coo.values.dtype.kind != "c":
        suffix.append(f"dtype=dynjit.{_dtype.dtype_of_np(coo.values.dtype).name}")
    suffix.append(f"layout={layout_of(coo)!r}")
    fn = t._grad_fn
    if fn is not None:
        suffix.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    if type(coo) is SparseCompressed:
        c, p_ = (("crow_indices", "col_indices") if coo.row_major else ("ccol_indices", "row_indices"))
        parts = [(c, coo.compressed_indices), (p_, coo.plain_indices), ("values", coo.values)]
    else:
        parts = [("indices", coo.indices), ("values", coo.values)]
    body = (",\n" + pad).join(part(name, arr).replace("\n", "\n" + pad) for name, arr in parts)
    body = "\n".join(line if line.strip() else "" for line in body.split("\n"))
    return "tensor(" + body + ",\n" + pad + ", ".join(suffix) + ")"
