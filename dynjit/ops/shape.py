"""Views (sharing storage with their input) and the other shape ops:
view, reshape, t, transpose, permute, unsqueeze, squeeze, expand, narrow,
select, unbind, split, chunk; cat, stack, flip, repeat, roll, tril/triu,
clone, contiguous copies, dtype conversion.
"""
import numpy as np

from .. import _dtype
from .registry import register, VIEW, OTHER, EXTERN
from .reductions import normalize_dims


def infer_shape(shape, numel):
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _dim(d, ndim):
    return normalize_dims(d, ndim)[0] if ndim else normalize_dims(d, 0) and 0


@register("view", VIEW)
def view(self, size):
    shape = infer_shape(size, self.size)
    try:
        return np.reshape(self, shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


view.derivative(lambda grad, self_shape: grad.reshape(self_shape))


@register("reshape", VIEW)
def reshape(self, shape):
    return np.reshape(self, infer_shape(shape, self.size))


reshape.derivative(lambda grad, self_shape: grad.reshape(self_shape))


@register("t", VIEW)
def t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


t.derivative(lambda grad: grad.t())


@register("transpose", VIEW)
def transpose(self, dim0, dim1):
    if self.ndim == 0:
        normalize_dims(dim0, 0), normalize_dims(dim1, 0)
        return self.view()
    return np.swapaxes(self, dim0 if -self.ndim <= dim0 < self.ndim else _bad(dim0, self.ndim),
                       dim1 if -self.ndim <= dim1 < self.ndim else _bad(dim1, self.ndim))


def _bad(d, ndim):
    normalize_dims(d, ndim)


transpose.derivative(lambda grad, dim0, dim1: grad.transpose(dim0, dim1))


@register("permute", VIEW)
def permute(self, dims):
    dims = normalize_dims(tuple(dims), self.ndim) if self.ndim else ()
    if len(dims) != self.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {self.ndim} is not equal to len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
    return np.transpose(self, dims)


@permute.derivative
def _(grad, self_shape, dims):
    n = len(self_shape)
    dims = [d % n for d in dims] if n else []
    inverse = [dims.index(i) for i in range(n)]
    return grad.permute(inverse)


@register("unsqueeze", VIEW)
def unsqueeze(self, dim):
    n = self.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return np.expand_dims(self, dim % n)


unsqueeze.derivative(lambda grad, dim: grad.squeeze(dim))


@register("squeeze", VIEW)
def squeeze(self, dim=None):
    if dim is None:
        return np.squeeze(self)
    if self.ndim == 0:
        normalize_dims(dim, 0)
        return self.view()
    dims = normalize_dims(dim, self.ndim)
    axes = tuple(d for d in dims if self.shape[d] == 1)
    return np.squeeze(self, axis=axes) if axes else self.view()


squeeze.derivative(lambda grad, self_shape: grad.reshape(self_shape))


@register("expand", VIEW)
def expand(self, size):
    size = tuple(int(s) for s in size)
    if len(size) < self.ndim:
        raise RuntimeError(f"expand(dynjit.FloatTensor{{{list(self.shape)}}}, size={list(size)}): the "
                           f"number of sizes provided ({len(size)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({self.ndim})")
    lead = len(size) - self.ndim
    target = []
    for i, s in enumerate(size):
        cur = self.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            s = cur
        elif cur is not None and cur != s and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size "
                               f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(size)}.  "
                               f"Tensor sizes: {list(self.shape)}")
        target.append(s)
    return np.broadcast_to(self, tuple(target))


expand.derivative(lambda grad, self_shape: grad.sum_to_size(self_shape))


def _index_tuple(dim, item, ndim):
    return (slice(None),) * dim + (item,)


@register("narrow", VIEW)
def narrow(self, dim, start, length):
    d = _dim(dim, self.ndim)
    size = self.shape[d]
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return self[_index_tuple(d, slice(start, start + length), self.ndim)]


@narrow.derivative
def _(grad, self_shape, dim, start, length):
    d = _dim(dim, len(self_shape))
    if start < 0:
        start += self_shape[d]
    return index_backward(grad, self_shape, _index_tuple(d, slice(start, start + length), len(self_shape)), False)


@register("select", VIEW)
def select(self, dim, index):
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, self.ndim)
    size = self.shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    return self[_index_tuple(d, index, self.ndim) + (Ellipsis,)]


@select.derivative
def _(grad, self_shape, dim, index):
    d = _dim(dim, len(self_shape))
    return index_backward(grad, self_shape, _index_tuple(d, index, len(self_shape)) + (Ellipsis,), False)


@register("getitem", VIEW)
def getitem(self, index):
    """Basic indexing (ints, slices, None, Ellipsis): always a view."""
    if not isinstance(index, tuple):
        index = (index,)
    if Ellipsis not in index:
        index = index + (Ellipsis,)
    try:
        return self[index]
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


getitem.derivative(lambda grad, self_shape, index: index_backward(grad, self_shape, index, False))


@register("index", OTHER, tensor_lists=("indices",))
def index(self, indices):
    """Advanced indexing (integer/bool tensors or lists among the indices): a copy."""
    try:
        return self[tuple(indices)]
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


index.derivative(lambda grad, self_shape, indices: index_backward(grad, self_shape, tuple(indices), True))


@register("index_backward", OTHER, tensor_lists=("index",))
def index_backward(grad, shape, index, accumulate):
    """Scatter `grad` into zeros of `shape` at `index` (the gradient of indexing)."""
    out = np.zeros(tuple(shape), dtype=np.asarray(grad).dtype)
    idx = tuple(index) if isinstance(index, (tuple, list)) else index
    if accumulate:
        np.add.at(out, idx, grad)
    else:
        out[idx] = grad
    return out


@index_backward.derivative
def _(grad, index, accumulate):
    idx = tuple(index) if isinstance(index, (tuple, list)) else (index,)
    basic = all(isinstance(i, (int, slice, type(None), type(Ellipsis))) and not isinstance(i, bool) for i in idx)
    return getitem(grad, idx) if basic else globals()["index"](grad, list(idx))


@register("index_put", OTHER, tensor_lists=("indices",))
def index_put(self, indices, values, accumulate=False):
    out = np.array(self, copy=True)
    idx = tuple(indices)
    if accumulate:
        np.add.at(out, idx, values)
    else:
        out[idx] = values
    return out


@index_put.derivative
def _(grad, indices, values, accumulate):
    idx = list(indices)
    g_self = grad if accumulate else index_put(grad, idx, 0.0)
    g_values = None
    if hasattr(values, "_data"):
        g_values = index(grad, idx)
    return g_self, None, g_values


def _split_sizes(size, split_size):
    if split_size <= 0:
        if size == 0 and split_size == 0:
            return [0]
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    sizes = [split_size] * (size // split_size)
    if size % split_size or not sizes:
        sizes.append(size % split_size)
    return sizes


@register("split_with_sizes", VIEW)
def split_with_sizes(self, split_sizes, dim=0):
    d = _dim(dim, self.ndim)
    if sum(split_sizes) != self.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {self.shape[d]} "
                           f"(input tensor's size at dimension {d}), but got split_sizes={list(split_sizes)}")
    out, start = [], 0
    for s in split_sizes:
        out.append(self[_index_tuple(d, slice(start, start + s), self.ndim)])
        start += s
    return tuple(out)


@split_with_sizes.derivative
def _(grads, dim):
    return cat(list(grads), dim)


@register("unbind", VIEW)
def unbind(self, dim=0):
    d = _dim(dim, self.ndim)
    return tuple(self[_index_tuple(d, i, self.ndim) + (Ellipsis,)] for i in range(self.shape[d]))


@unbind.derivative
def _(grads, dim):
    if not grads:
        return None
    return stack(list(grads), dim)


@register("cat", OTHER, tensor_lists=("tensors",))
def cat(tensors, dim=0):
    arrays = [np.asarray(a) for a in tensors]
    if not arrays:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    # like PyTorch, 1-D empty tensors are skipped
    nonempty = [a for a in arrays if not (a.ndim == 1 and a.shape[0] == 0)] or arrays[:1]
    ref = nonempty[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _dim(dim, ref.ndim)
    dt = np.result_type(*arrays)
    for i, a in enumerate(nonempty):
        if a.ndim != ref.ndim or any(a.shape[k] != ref.shape[k] for k in range(a.ndim) if k != d):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                               f"{list(ref.shape)} but got size {list(a.shape)} for tensor number {i} in the list.")
    return np.concatenate(nonempty, axis=d).astype(dt, copy=False)


@cat.derivative
def _(grad, tensors, dim):
    grads, start = [], 0
    ref = next((t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)), tensors[0])
    d = _dim(dim, ref.ndim)
    for t in tensors:
        if t.ndim == 1 and t.shape[0] == 0 and ref.ndim != 1:
            grads.append(None)
            continue
        n = t.shape[d]
        grads.append(grad.narrow(d, start, n))
        start += n
    return (grads,)


@register("stack", OTHER, tensor_lists=("tensors",))
def stack(tensors, dim=0):
    arrays = [np.asarray(a) for a in tensors]
    if not arrays:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(arrays[0].shape)} "
                               f"at entry 0 and {list(a.shape)} at entry {i}")
    n = arrays[0].ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return np.stack(arrays, axis=dim % n).astype(np.result_type(*arrays), copy=False)


@stack.derivative
def _(grad, tensors, dim):
    return (list(grad.unbind(dim)),)


@register("clone", OTHER)
def clone(self, memory_format=None):
    return np.array(self, copy=True)


clone.derivative(lambda grad: grad)


@register("to_dtype", OTHER)
def to_dtype(self, dtype):
    return np.asarray(self).astype(_dtype.to_dtype(dtype).np)


to_dtype.derivative(lambda grad: grad)


@register("contiguous_copy", OTHER)
def contiguous_copy(self):
    return np.ascontiguousarray(self)


contiguous_copy.derivative(lambda grad: grad)


@register("flip", OTHER)
def flip(self, dims):
    axes = normalize_dims(tuple(dims), self.ndim) if self.ndim else ()
    return np.flip(self, axis=axes).copy() if axes else np.array(self, copy=True)


flip.derivative(lambda grad, dims: grad.flip(dims))


@register("roll", OTHER)
def roll(self, shifts, dims=None):
    return np.roll(self, shifts, axis=dims)


@roll.derivative
def _(grad, shifts, dims):
    neg = tuple(-s for s in shifts) if isinstance(shifts, (tuple, list)) else -shifts
    return grad.roll(neg, dims)


@register("repeat", OTHER)
def repeat(self, repeats):
    repeats = tuple(repeats)
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return np.tile(self, repeats)


@repeat.derivative
def _(grad, self_shape, repeats):
    repeats = tuple(repeats)
    lead = len(repeats) - len(self_shape)
    shape = (1,) * lead + tuple(self_shape)
    split = []
    for r, s in zip(repeats, shape):
        split += [r, s]
    g = grad.reshape(split)
    g = g.sum(tuple(range(0, len(split), 2)))
    return g.reshape(self_shape)


@register("tril", OTHER)
def tril(self, diagonal=0):
    return np.tril(self, diagonal)


tril.derivative(lambda grad, diagonal: grad.tril(diagonal))


@register("triu", OTHER)
def triu(self, diagonal=0):
    return np.triu(self, diagonal)


triu.derivative(lambda grad, diagonal: grad.triu(diagonal))


@register("gather", OTHER)
def gather(self, dim, index):
    d = _dim(dim, np.ndim(self))
    return np.take_along_axis(self, np.asarray(index), axis=d)


@gather.derivative
def _(grad, self_shape, dim, index):
    from .factories import zeros
    return scatter_add(zeros(self_shape, dtype=grad.dtype), dim, index, grad)


@register("scatter_add", OTHER)
def scatter_add(self, dim, index, src):
    out = np.array(self, copy=True)
    idx = np.asarray(index)
    d = _dim(dim, out.ndim)
    src = np.asarray(src)
    grids = list(np.indices(idx.shape, sparse=True))
    grids[d] = idx
    np.add.at(out, tuple(grids), src[tuple(slice(0, s) for s in idx.shape)])
    return out


@scatter_add.derivative
def _(grad, dim, index):
    return grad, None, None, grad.gather(dim, index)


@register("scatter", OTHER)
def scatter(self, dim, index, src):
    out = np.array(self, copy=True)
    idx = np.asarray(index)
    d = _dim(dim, out.ndim)
    if isinstance(src, np.ndarray) and src.ndim:
        src = src[tuple(slice(0, s) for s in idx.shape)]
    np.put_along_axis(out, idx, src, axis=d)
    return out


@scatter.derivative
def _(grad, dim, index, src):
    g_self = scatter(grad, dim, index, 0.0)
    g_src = grad.gather(dim, index) if hasattr(src, "_data") else None
    return g_self, None, None, g_src


@register("index_select", OTHER)
def index_select(self, dim, index):
    d = _dim(dim, np.ndim(self))
    return np.take(self, np.asarray(index).reshape(-1), axis=d)


@index_select.derivative
def _(grad, self_shape, dim, index):
    d = _dim(dim, len(self_shape))
    return index_backward(grad, self_shape, (slice(None),) * d + (index.reshape(-1),), True)


@register("one_hot", OTHER, differentiable=False)
def one_hot(self, num_classes=-1):
    idx = np.asarray(self)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = int(idx.max()) + 1 if num_classes == -1 else num_classes
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (idx[..., None] == np.arange(n)).astype(np.int64)


@register("copy", OTHER)
def copy(self, src):
    """The functional form of copy_: `src` broadcast to self's shape in self's dtype."""
    return np.broadcast_to(np.asarray(src).astype(np.asarray(self).dtype, copy=False), np.shape(self)).copy()


copy.derivative(lambda grad: (None, grad))


@register("fill", OTHER)
def fill(self, value):
    if isinstance(value, np.ndarray) and value.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return np.full(np.shape(self), value, dtype=np.asarray(self).dtype)


fill.derivative(lambda grad: (None, grad.sum()))


@register("zero", OTHER)
def zero(self):
    return np.zeros_like(self)


zero.derivative(lambda grad: grad * 0)


@register("diagonal", VIEW)
def diagonal(self, offset=0, dim1=0, dim2=1):
    return np.diagonal(self, offset, dim1, dim2)


@diagonal.derivative
def _(grad, self_shape, offset, dim1, dim2):
    return diagonal_backward(grad, self_shape, offset, dim1, dim2)


@register("diagonal_backward", OTHER)
def diagonal_backward(grad, shape, offset, dim1, dim2):
    out = np.zeros(shape, dtype=np.asarray(grad).dtype)
    d1, d2 = dim1 % len(shape), dim2 % len(shape)
    n = np.asarray(grad).shape[-1]
    for k in range(n):
        i, j = (k, k + offset) if offset >= 0 else (k - offset, k)
        idx = [slice(None)] * len(shape)
        idx[d1], idx[d2] = i, j
        out[tuple(idx)] = np.asarray(grad)[..., k]
    return out


diagonal_backward.derivative(lambda grad, offset, dim1, dim2: grad.diagonal(offset, dim1, dim2))
