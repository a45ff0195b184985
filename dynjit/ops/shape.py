"""Views (sharing storage with their input) and the other shape ops:
view, reshape, t, transpose, permute, unsqueeze, squeeze, expand, narrow,
select, unbind, split, chunk; cat, stack, flip, repeat, roll, tril/triu,
clone, contiguous copies, dtype conversion.
"""
import numpy as np

from .. import _dtype
from .registry import register, VIEW, OTHER, linear_jvp
from .pointwise import scalar_to
from .meta import (normalize_dims, wrap_dim, same_as, describe, dummy, is_tensor_like,
                   DataDependentOutputError)


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


_dim = wrap_dim


@register("view", VIEW, variants="method", varargs="size")
def view(self, size):
    shape = infer_shape(size, self.size)
    try:
        return np.reshape(self, shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


view.derivative(lambda grad, self_shape: grad.reshape(self_shape))


@register("reshape", VIEW, variants="method", varargs="shape")
def reshape(self, shape):
    return np.reshape(self, infer_shape(shape, self.size))


reshape.derivative(lambda grad, self_shape: grad.reshape(self_shape))


@register("t", VIEW, variants="function, method", inplace_views=("t_",))
def t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


t.derivative(lambda grad: grad.t())


@register("transpose", VIEW, variants="function, method",
          inplace_views=("transpose_", "swapdims_", "swapaxes_"))
def transpose(self, dim0, dim1):
    if self.ndim == 0:
        normalize_dims(dim0, 0), normalize_dims(dim1, 0)
        return self.view()
    return np.swapaxes(self, dim0 if -self.ndim <= dim0 < self.ndim else _bad(dim0, self.ndim),
                       dim1 if -self.ndim <= dim1 < self.ndim else _bad(dim1, self.ndim))


def _bad(d, ndim):
    normalize_dims(d, ndim)


transpose.derivative(lambda grad, dim0, dim1: grad.transpose(dim0, dim1))


@register("permute", VIEW, variants="method", varargs="dims")
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


@register("unsqueeze", VIEW, variants="function, method", inplace_views=("unsqueeze_",))
def unsqueeze(self, dim):
    n = self.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return np.expand_dims(self, dim % n)


unsqueeze.derivative(lambda grad, dim: grad.squeeze(dim))


@register("squeeze", VIEW, variants="function, method", inplace_views=("squeeze_",))
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


@register("expand", VIEW, variants="method", varargs="size")
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


@register("narrow", VIEW, variants="function, method")
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


@register("select", VIEW, variants="function, method")
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
        raise _index_error(e, self.ndim) from None


def _index_error(e, ndim):
    """numpy's IndexError in tensor terms."""
    message = str(e)
    if message.startswith("too many indices"):
        return IndexError(f"too many indices for tensor of dimension {ndim}")
    return IndexError(message.replace("axis", "dimension"))


getitem.derivative(lambda grad, self_shape, index: index_backward(grad, self_shape, index, False))


@register("index", OTHER, complex_ok=True, tensor_lists=("indices",))
def index(self, indices):
    """Advanced indexing (integer/bool tensors or lists among the indices): a copy."""
    try:
        return self[tuple(indices)]
    except IndexError as e:
        raise _index_error(e, self.ndim) from None


index.jvp(linear_jvp(index))     # forward mode
index.derivative(lambda grad, self_shape, indices: index_backward(grad, self_shape, tuple(indices), True))


@index.meta_fn
def _(self, indices):
    idx = []
    for i in indices:
        if is_tensor_like(i):
            if i.dtype.name == "bool":
                raise DataDependentOutputError("indexing with a bool mask: the output's shape depends "
                                               "on how many elements of the mask are True")
            i = dummy(i)
        elif isinstance(i, (list, tuple)) and np.asarray(i).dtype == np.bool_:
            i = np.asarray(i)
        idx.append(i)
    return describe(dummy(self)[tuple(idx)])


@register("index_backward", OTHER, complex_ok=True, tensor_lists=("index",))
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


@index_backward.meta_fn
def _(grad, shape, index, accumulate):
    return tuple(shape), grad.dtype


@register("index_put", OTHER, complex_ok=True, tensor_lists=("indices",), variants="function, method", inplace=True)
def index_put(self, indices, values, accumulate=False):
    out = np.array(self, copy=True)
    idx = tuple(indices)
    try:
        if accumulate:
            np.add.at(out, idx, values)
        else:
            out[idx] = values
    except IndexError as e:
        raise _index_error(e, out.ndim) from None
    except ValueError:
        target = out[idx].shape
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(values))} cannot be "
                           f"broadcast to indexing result of shape {list(target)}") from None
    return out


@index_put.derivative
def _(grad, indices, values, accumulate):
    idx = list(indices)
    g_self = grad if accumulate else index_put(grad, idx, 0.0)
    g_values = None
    if hasattr(values, "_data"):
        g_values = index(grad, idx)
    return g_self, None, g_values


index_put.meta_fn(lambda self, indices, values, accumulate=False: same_as(self))


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


@register("unbind", VIEW, variants="function, method")
def unbind(self, dim=0):
    if self.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _dim(dim, self.ndim)
    return tuple(self[_index_tuple(d, i, self.ndim) + (Ellipsis,)] for i in range(self.shape[d]))


@unbind.derivative
def _(grads, dim):
    if not grads:
        return None
    return stack(list(grads), dim)


def _is_legacy_empty(shape):
    return len(shape) == 1 and shape[0] == 0


def cat_shape(shapes, dim):
    """cat's output shape; like PyTorch, 1-D empty tensors are skipped."""
    if not shapes:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    nonempty = [(i, s) for i, s in enumerate(shapes) if not _is_legacy_empty(s)] or [(0, shapes[0])]
    ref = nonempty[0][1]
    if not ref:
        raise RuntimeError(f"zero-dimensional tensor (at position {nonempty[0][0]}) cannot be concatenated")
    d = _dim(dim, len(ref))
    for i, s in nonempty:
        if len(s) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)} "
                               f"(tensor number {i} in the list)")
        if any(s[k] != ref[k] for k in range(len(s)) if k != d):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                               f"{list(ref)} but got size {list(s)} for tensor number {i} in the list.")
    return ref[:d] + (sum(s[d] for _, s in nonempty),) + ref[d + 1:]


def _promote_all(dtypes):
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _dtype.promote_types(out, d)
    return out


@register("cat", OTHER, complex_ok=True, tensor_lists=("tensors",), variants="function")
def cat(tensors, dim=0):
    arrays = [np.asarray(a) for a in tensors]
    shape = cat_shape([a.shape for a in arrays], dim)
    dt = _promote_all([_dtype.from_numpy_dtype(a.dtype) for a in arrays]).np
    # each input converted to the result dtype (numpy would join int64 and float32 in float64)
    nonempty = [a.astype(dt, copy=False) for a in arrays if not _is_legacy_empty(a.shape)]
    if not nonempty:
        return np.zeros(shape, dtype=dt)
    return np.concatenate(nonempty, axis=_dim(dim, len(shape)))


@cat.meta_fn
def _(tensors, dim):
    shape = cat_shape([tuple(t.shape) for t in tensors], dim)
    return shape, _promote_all([t.dtype for t in tensors])


cat.jvp(linear_jvp(cat))     # forward mode
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


def stack_shape(shapes, dim):
    if not shapes:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shapes[0])} "
                               f"at entry 0 and {list(s)} at entry {i}")
    n = len(shapes[0]) + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim % n
    return shapes[0][:d] + (len(shapes),) + shapes[0][d:]


@register("stack", OTHER, complex_ok=True, tensor_lists=("tensors",), variants="function")
def stack(tensors, dim=0):
    arrays = [np.asarray(a) for a in tensors]
    shape = stack_shape([a.shape for a in arrays], dim)
    dt = _promote_all([_dtype.from_numpy_dtype(a.dtype) for a in arrays]).np
    return np.stack([a.astype(dt, copy=False) for a in arrays], axis=dim % len(shape))


@stack.meta_fn
def _(tensors, dim):
    return stack_shape([tuple(t.shape) for t in tensors], dim), _promote_all([t.dtype for t in tensors])


stack.jvp(linear_jvp(stack))     # forward mode
@stack.derivative
def _(grad, tensors, dim):
    return (list(grad.unbind(dim)),)


@register("clone", OTHER, complex_ok=True, variants="function, method")
def clone(self, memory_format=None):
    return np.array(self, copy=True)


clone.jvp(linear_jvp(clone))     # forward mode
clone.derivative(lambda grad: grad)
clone.meta_fn(lambda self, memory_format=None: same_as(self))


@register("to_dtype", OTHER, complex_ok=True)
def to_dtype(self, dtype):
    self = np.asarray(self)
    target = _dtype.to_dtype(dtype).np
    if self.dtype.kind == "c" and target.kind == "b":
        return self != 0            # true where either part is nonzero
    if self.dtype.kind == "c" and target.kind != "c":
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=2)
        self = self.real
    return self.astype(target)


to_dtype.jvp(linear_jvp(to_dtype))     # forward mode
to_dtype.derivative(lambda grad: grad)
to_dtype.meta_fn(lambda self, dtype: same_as(self, _dtype.to_dtype(dtype)))


@register("contiguous_copy", OTHER, complex_ok=True)
def contiguous_copy(self):
    return np.array(self, copy=True, order="C")


contiguous_copy.jvp(linear_jvp(contiguous_copy))     # forward mode
contiguous_copy.derivative(lambda grad: grad)
contiguous_copy.meta_fn(same_as)


@register("flip", OTHER, complex_ok=True, variants="method", varargs="dims")
def flip(self, dims):
    axes = normalize_dims(tuple(dims), self.ndim) if self.ndim else ()
    return np.flip(self, axis=axes).copy() if axes else np.array(self, copy=True)


flip.jvp(linear_jvp(flip))     # forward mode
flip.derivative(lambda grad, dims: grad.flip(dims))


@flip.meta_fn
def _(self, dims):
    if self.shape:
        normalize_dims(tuple(dims), len(self.shape))
    return same_as(self)


def _check_roll(shifts, dims, ndim):
    if dims is None:
        if isinstance(shifts, (tuple, list)) and len(shifts) != 1:
            raise RuntimeError(f"roll: with dims=None, shifts must be a single int, got {list(shifts)}")
        return
    n_shifts = len(shifts) if isinstance(shifts, (tuple, list)) else 1
    n_dims = len(dims) if isinstance(dims, (tuple, list)) else 1
    if n_shifts != n_dims:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {n_shifts}, dims:{n_dims}")
    normalize_dims(dims, ndim)


@register("roll", OTHER, complex_ok=True, variants="function, method")
def roll(self, shifts, dims=None):
    _check_roll(shifts, dims, self.ndim)
    if dims is None:
        shifts = shifts[0] if isinstance(shifts, (tuple, list)) else shifts
    return np.roll(self, shifts, axis=dims)


@roll.meta_fn
def _(self, shifts, dims):
    _check_roll(shifts, dims, len(self.shape))
    return same_as(self)


roll.jvp(linear_jvp(roll))     # forward mode
@roll.derivative
def _(grad, shifts, dims):
    neg = tuple(-s for s in shifts) if isinstance(shifts, (tuple, list)) else -shifts
    return grad.roll(neg, dims)


def repeat_shape(shape, repeats):
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           f"dimensions of tensor (repeats {list(repeats)} for a tensor of shape {list(shape)})")
    if any(r < 0 for r in repeats):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats {list(repeats)}")
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    return tuple(s * r for s, r in zip(padded, repeats))


@register("repeat", OTHER, complex_ok=True, variants="method", varargs="repeats")
def repeat(self, repeats):
    shape = repeat_shape(self.shape, repeats)
    return np.tile(self, tuple(repeats)).reshape(shape)


repeat.meta_fn(lambda self, repeats: (repeat_shape(self.shape, repeats), self.dtype))


repeat.jvp(linear_jvp(repeat))     # forward mode
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


def _check_matrix(name, ndim):
    if ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got {ndim}")


@register("tril", OTHER, complex_ok=True, variants="function, method", inplace=True)
def tril(self, diagonal=0):
    _check_matrix("tril", self.ndim)
    return np.tril(self, diagonal)


@tril.meta_fn
def _(self, diagonal):
    _check_matrix("tril", len(self.shape))
    return same_as(self)


tril.jvp(linear_jvp(tril))     # forward mode
tril.derivative(lambda grad, diagonal: grad.tril(diagonal))


@register("triu", OTHER, complex_ok=True, variants="function, method", inplace=True)
def triu(self, diagonal=0):
    _check_matrix("triu", self.ndim)
    return np.triu(self, diagonal)


@triu.meta_fn
def _(self, diagonal):
    _check_matrix("triu", len(self.shape))
    return same_as(self)


triu.jvp(linear_jvp(triu))     # forward mode
triu.derivative(lambda grad, diagonal: grad.triu(diagonal))


def _check_index_tensor(name, self_shape, dim, index_shape, index_dtype):
    """gather/scatter's rules: an integer index with self's number of dims, no larger than
    self in the other dims. Returns the wrapped dim."""
    d = _dim(dim, len(self_shape))
    if _as_dtype(index_dtype).is_floating_point or _as_dtype(index_dtype) is _dtype.bool_:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {_as_dtype(index_dtype).name}")
    if len(index_shape) != len(self_shape) and (len(index_shape) > 1 or len(self_shape) > 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as input tensor "
                           f"({name}: index has {len(index_shape)}, input has {len(self_shape)})")
    for k, (i, s) in enumerate(zip(index_shape, self_shape)):
        if k != d and i > s:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index_shape)} "
                               f"to be smaller than self {list(self_shape)} apart from dimension {d}")
    return d


def _as_dtype(d):
    """A dynjit dtype from a dynjit or numpy dtype."""
    return d if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d)


def _index_grids(idx, d):
    grids = list(np.indices(idx.shape, sparse=True))
    grids[d] = idx
    return tuple(grids)


def _bounds_checked(fn, *args):
    try:
        return fn(*args)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


@register("gather", OTHER, complex_ok=True, variants="function, method")
def gather(self, dim, index):
    x, idx = np.asarray(self), np.asarray(index)
    d = _check_index_tensor("gather", x.shape, dim, idx.shape, idx.dtype)
    if x.ndim == 0 or idx.ndim == 0:     # (at most one dim each: the ndim check allows only that)
        return _bounds_checked(lambda: x.reshape(-1)[idx.reshape(-1)].reshape(idx.shape))
    return _bounds_checked(lambda: x[_index_grids(idx, d)])


@gather.meta_fn
def _(self, dim, index):
    _check_index_tensor("gather", self.shape, dim, index.shape, index.dtype)
    return tuple(index.shape), self.dtype


gather.jvp(linear_jvp(gather))     # forward mode
@gather.derivative
def _(grad, self_shape, dim, index):
    from .factories import zeros
    return scatter_add(zeros(self_shape, dtype=grad.dtype), dim, index, grad)


def _scatter_source(src, idx):
    if isinstance(src, np.ndarray) and src.ndim:
        return src[tuple(slice(0, s) for s in idx.shape)]
    return src


def _scatter_into(name, self, dim, index, src, accumulate):
    out = np.array(self, copy=True)
    idx = np.asarray(index)
    d = _check_index_tensor(name, out.shape, dim, idx.shape, idx.dtype)
    target = out.reshape(1) if out.ndim == 0 else out    # a view: writes land in `out`
    if out.ndim == 0 or idx.ndim == 0:
        idx = idx.reshape(-1)
        src = np.reshape(src, -1) if np.ndim(src) else src
    grids, values = _index_grids(idx, d), _scatter_source(src, idx)
    if accumulate:
        _bounds_checked(np.add.at, target, grids, values)
    else:
        _bounds_checked(target.__setitem__, grids, values)
    return out


@register("scatter_add", OTHER, complex_ok=True, variants="function, method", inplace=True)
def scatter_add(self, dim, index, src):
    return _scatter_into("scatter_add", self, dim, index, np.asarray(src), True)


def _pad_to(g, shape):
    """`g` in the leading corner of zeros of `shape` (for sources larger than the index)."""
    if tuple(g.shape) == tuple(shape):
        return g
    return index_backward(g, tuple(shape), tuple(slice(0, s) for s in g.shape), False)


@scatter_add.derivative
def _(grad, dim, index, src_shape):
    return grad, None, None, _pad_to(grad.gather(dim, index), src_shape)


@register("scatter", OTHER, complex_ok=True, variants="function, method", inplace=True)
def scatter(self, dim, index, src):
    return _scatter_into("scatter", self, dim, index, src, False)


def _scatter_meta(name):
    def meta(self, dim, index, src):
        _check_index_tensor(name, self.shape, dim, index.shape, index.dtype)
        return same_as(self)
    return meta


scatter.meta_fn(_scatter_meta("scatter"))
scatter_add.meta_fn(_scatter_meta("scatter_add"))


@scatter.derivative
def _(grad, dim, index, src):
    g_self = scatter(grad, dim, index, 0.0)
    g_src = _pad_to(grad.gather(dim, index), src.shape) if hasattr(src, "_data") else None
    return g_self, None, None, g_src


def _index_select_shape(shape, dim, index_shape, index_dtype):
    if _as_dtype(index_dtype).is_floating_point or _as_dtype(index_dtype) is _dtype.bool_:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index_shape) > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {list(index_shape)}")
    if not shape:
        return ()
    d = _dim(dim, len(shape))
    n = index_shape[0] if index_shape else 1
    return tuple(shape[:d]) + (n,) + tuple(shape[d + 1:])


@register("index_select", OTHER, complex_ok=True, variants="function, method")
def index_select(self, dim, index):
    idx = np.asarray(index)
    shape = _index_select_shape(np.shape(self), dim, idx.shape, idx.dtype)
    if not shape:
        return _bounds_checked(lambda: np.asarray(self).reshape(1)[idx.reshape(-1)].reshape(()))
    return _bounds_checked(np.take, self, idx.reshape(-1), _dim(dim, len(shape)))


index_select.meta_fn(lambda self, dim, index: (_index_select_shape(self.shape, dim, index.shape, index.dtype),
                                                self.dtype))


index_select.jvp(linear_jvp(index_select))     # forward mode
@index_select.derivative
def _(grad, self_shape, dim, index):
    if not self_shape:
        return grad
    d = _dim(dim, len(self_shape))
    return index_backward(grad, self_shape, (slice(None),) * d + (index.reshape(-1),), True)


def _check_one_hot_input(dtype):
    if _as_dtype(dtype).is_floating_point or _as_dtype(dtype) is _dtype.bool_:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")


@register("one_hot", OTHER, differentiable=False, variants="function")
def one_hot(self, num_classes=-1):
    idx = np.asarray(self)
    _check_one_hot_input(idx.dtype)
    if num_classes == -1:
        if not idx.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        n = int(idx.max()) + 1
    else:
        n = num_classes
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (idx[..., None] == np.arange(n)).astype(np.int64)


@one_hot.meta_fn
def _(self, num_classes):
    _check_one_hot_input(self.dtype)
    if num_classes == -1:
        raise DataDependentOutputError("one_hot with num_classes=-1: the number of classes is the "
                                       "largest value in the input plus one; pass num_classes")
    return tuple(self.shape) + (num_classes,), _dtype.int64


@register("nonzero", OTHER, complex_ok=True, differentiable=False, variants="function, method")
def nonzero(self):
    """Indices of the nonzero elements, one row per element: shape (count, ndim)."""
    return np.argwhere(np.asarray(self)).astype(np.int64)


@nonzero.meta_fn
def _(self):
    raise DataDependentOutputError("nonzero: the number of rows is the number of nonzero elements")


@register("masked_select", OTHER, complex_ok=True, variants="function, method")
def masked_select(self, mask):
    _check_bool(np.asarray(mask).dtype, "masked_select")
    x, m = np.broadcast_arrays(np.asarray(self), np.asarray(mask))
    return x[m]


@masked_select.meta_fn
def _(self, mask):
    _check_bool(mask.dtype, "masked_select")
    raise DataDependentOutputError("masked_select: the output's length is the number of True elements in the mask")


masked_select.jvp(linear_jvp(masked_select))     # forward mode
@masked_select.derivative
def _(grad, self_shape, mask):
    from .meta import broadcast_shapes
    shape = broadcast_shapes(self_shape, mask.shape)
    return index_backward(grad, shape, (mask.expand(shape),), False)


def _check_bool(dtype, name):
    if _as_dtype(dtype) is not _dtype.bool_:
        raise RuntimeError(f"{name}: expected a bool mask, got {_as_dtype(dtype).name}")


@register("isin", OTHER, differentiable=False)
def isin(elements, test_elements, invert=False):
    # compared in the promoted dtype, as PyTorch does (numpy compares int64 with float32 in float64)
    dims, zero, scalars = [], [], []
    for x in (elements, test_elements):
        if isinstance(x, np.ndarray):
            (dims if x.ndim else zero).append(_dtype.from_numpy_dtype(x.dtype))
        else:
            scalars.append(x)
    dt = _dtype.result_type(dims, zero, scalars).np
    return np.isin(np.asarray(elements, dtype=dt), np.asarray(test_elements, dtype=dt), invert=invert)


isin.meta_fn(lambda elements, test_elements, invert: (tuple(np.shape(elements) if not is_tensor_like(elements)
                                                           else elements.shape), _dtype.bool_))


def _check_broadcast_to(src_shape, shape):
    from .meta import broadcast_shapes
    if tuple(src_shape) != tuple(shape) and broadcast_shapes(src_shape, shape) != tuple(shape):
        raise RuntimeError(f"copy_: the source of shape {list(src_shape)} can't be broadcast to the "
                           f"destination's shape {list(shape)}")


@register("copy", OTHER, complex_ok=True, variants="function", inplace=True)
def copy(self, src):
    """The functional form of copy_: `src` broadcast to self's shape in self's dtype."""
    _check_broadcast_to(np.shape(src), np.shape(self))
    return np.broadcast_to(np.asarray(src).astype(np.asarray(self).dtype, copy=False), np.shape(self)).copy()


@copy.meta_fn
def _(self, src):
    _check_broadcast_to(src.shape if is_tensor_like(src) else (), self.shape)
    return same_as(self)


copy.derivative(lambda grad: (None, grad))
copy.jvp(lambda tangents, result, self, src: tangents[1])     # src's tangent (expanded)


def _check_fill_value(value):
    ndim = len(value.shape) if hasattr(value, "shape") else 0
    if ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {ndim} dimensions.")


@register("fill", OTHER, complex_ok=True, variants="function", inplace=True)
def fill(self, value):
    _check_fill_value(value)
    dtype = np.asarray(self).dtype
    if isinstance(value, complex) and dtype.kind != "c":
        value = scalar_to(value, dtype)     # an imaginary part does not fit: PyTorch's error
    if isinstance(value, (bool, int, float)) and (dtype.kind in "iub" or (
            dtype == np.float32 and dtype.metadata is None)):
        # checked, as PyTorch converts a Scalar fill value (its half-precision fills saturate)
        value = scalar_to(value, dtype)
    return np.full(np.shape(self), value, dtype=dtype)


@fill.meta_fn
def _(self, value):
    _check_fill_value(value)
    return same_as(self)


fill.derivative(lambda grad: (None, grad.sum()))
fill.jvp(lambda tangents, result, self, value: tangents[1])   # a 0-d value's tangent, expanded


@register("zero", OTHER, complex_ok=True, variants="function", inplace=True)
def zero(self):
    return np.zeros_like(self)


zero.meta_fn(same_as)
zero.derivative(lambda grad: grad * 0)
zero.jvp(lambda tangents, result, self: None)                 # constant


@register("diagonal", VIEW, variants="function, method")
def diagonal(self, offset=0, dim1=0, dim2=1):
    d1, d2 = _diagonal_dims(self.ndim, dim1, dim2)
    return np.diagonal(self, offset, d1, d2)


def _diagonal_dims(ndim, dim1, dim2):
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if ndim < 2:
        raise RuntimeError(f"diagonal() needs a tensor of at least 2 dimensions, got {ndim}")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions requested must be distinct (got {dim1} and {dim2})")
    return d1, d2


@diagonal.derivative
def _(grad, self_shape, offset, dim1, dim2):
    return diagonal_backward(grad, self_shape, offset, dim1, dim2)


@register("diagonal_backward", OTHER, complex_ok=True)
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
diagonal_backward.meta_fn(lambda grad, shape, offset, dim1, dim2: (tuple(shape), grad.dtype))
