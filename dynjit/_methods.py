"""The Tensor methods that call into the layers above the tensor class:
ops (each a thin call into the dispatcher), Python operators, and autograd's.

Most op methods have the same name and arguments as their op and are
generated from the registry; the rest (varargs shapes, max/min overloads,
operators, composites like flatten) are written out here.
"""
import builtins

from . import _dtype
from .autograd import backward as _backward, graph as _graph
from .ops.registry import registry as R, with_variant, METHOD, BOOL
from .ops.dispatch import dispatch
from .ops import memory_format as _memory_format
from .ops.reductions import normalize_dims
from .tensor import Tensor, check_device


def _method(op):
    def method(self, *args, **kwargs):
        if kwargs and "axis" in kwargs:
            kwargs = numpy_names(op, kwargs)
        return dispatch(op, (self,) + args, kwargs)
    method.__name__ = op.name
    method.__qualname__ = f"Tensor.{op.name}"
    method.__doc__ = f"See dynjit.{op.name}."
    return method


def numpy_names(op, kwargs):
    """PyTorch accepts numpy's `axis` for `dim` (x.sum(axis=0))."""
    if "dim" in op.index and "dim" not in kwargs:
        kwargs = dict(kwargs)
        kwargs["dim"] = kwargs.pop("axis")
    return kwargs


def _sizes(args):
    """Accept both f(2, 3) and f((2, 3)) / f([2, 3]) / f(dynjit.Size)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _vararg_method(op):
    """The method of an op whose list parameter (op.varargs) may also come spread out:
    x.view(2, 3) as x.view((2, 3))."""
    key = op.varargs

    def method(self, *shape, **kwargs):
        if key in kwargs:
            shape = (kwargs.pop(key),)
        if op.name == "view" and len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
            raise NotImplementedError("view(dtype) reinterpretation is not supported; use .to(dtype)")
        return dispatch(op, (self, _sizes(shape)), kwargs)
    method.__name__ = op.name
    return method


# Every op that declares a method variant (in-place variants all do) becomes a method;
# some are refined by hand below (overloads, extra keyword arguments).
for _name in with_variant(METHOD):
    _op = R[_name]
    setattr(Tensor, _name, _vararg_method(_op) if _op.varargs else _method(_op))


def _max_min(full, dim_op, binary):
    def method(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return dispatch(binary, (self, dim), {})
        if dim is None:
            return dispatch(full, (self,), {})
        return dispatch(dim_op, (self, dim, keepdim), {})
    return method


def _div(op, mode_op):
    def method(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return dispatch(op, (self, other), {})
        return dispatch(mode_op, (self, other, rounding_mode), {})
    return method


Tensor.div = _div(R["div"], R["div_mode"])
Tensor.div_ = _div(R["div_"], R["div_mode_"])

Tensor.max = _max_min(R["max"], R["max_dim"], R["maximum"])
Tensor.min = _max_min(R["min"], R["min_dim"], R["minimum"])


def _median(full, dim_op):
    def method(self, dim=None, keepdim=False):
        if dim is None:
            return dispatch(full, (self,), {})
        return dispatch(dim_op, (self, dim, keepdim), {})
    return method


def _nonzero(self, *, as_tuple=False):
    idx = dispatch(R["nonzero"], (self,), {})
    if not as_tuple:
        return idx
    if self.ndim == 0:
        return (idx.reshape(-1),)
    return tuple(idx.unbind(1))


def _diag(self, diagonal=0):
    """The diagonal of a matrix, or a square matrix with a vector on its diagonal."""
    if self.ndim == 1:
        n = self.shape[0] + (diagonal if diagonal >= 0 else -diagonal)
        return dispatch(R["diagonal_backward"], (self, (n, n), diagonal, 0, 1), {})
    if self.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
    return self.diagonal(diagonal)


def _diff(self, n=1, dim=-1):
    out = self
    for _ in range(n):
        size = out.shape[normalize_dims(dim, out.ndim)[0]]
        length = size - 1 if size else 0
        out = out.narrow(dim, 1 if size else 0, length) - out.narrow(dim, 0, length)
    return out


def _tile(self, *dims):
    dims = _sizes(dims)
    return self.repeat((1,) * (self.ndim - len(dims)) + tuple(dims))


Tensor.nonzero = _nonzero
Tensor.diag = _diag
Tensor.trace = lambda self: self.diagonal().sum()
Tensor.diff = _diff
Tensor.count_nonzero = lambda self, dim=None: (self != 0).sum(dim)
Tensor.tile = _tile
Tensor.median = _median(R["median"], R["median_dim"])
Tensor.nanmedian = _median(R["nanmedian"], R["nanmedian_dim"])
Tensor.isin = lambda self, test_elements, *, invert=False: dispatch(R["isin"], (self, test_elements, invert), {})


def _var_std(op):
    def method(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):      # x.var(False): the old positional `unbiased`
            dim, unbiased = None, dim
        if correction is None:
            correction = 0 if unbiased is False else 1
        return dispatch(op, (self, dim, correction, keepdim), {})
    return method


Tensor.var = _var_std(R["var"])
Tensor.std = _var_std(R["std"])


def _norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("nuclear norm is not supported by dynjit")
    return dispatch(R["norm"], (self, p, dim, keepdim), {})


Tensor.norm = _norm


def _split(self, split_size_or_sections, dim=0):
    size = self.shape[normalize_dims(dim, self.ndim)[0]]
    if isinstance(split_size_or_sections, int):
        from .ops.shape import _split_sizes
        sizes = _split_sizes(size, split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
    return dispatch(R["split_with_sizes"], (self, sizes, dim), {})


def _chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0")
    size = self.shape[normalize_dims(dim, self.ndim)[0]]
    step = -(-size // chunks) if size else 1
    return _split(self, step, dim)


Tensor.split = _split
Tensor.chunk = _chunk
Tensor.split_with_sizes = lambda self, split_sizes, dim=0: dispatch(R["split_with_sizes"], (self, list(split_sizes), dim), {})


def _flatten(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return self.reshape(1)
    s, e = normalize_dims((start_dim, end_dim), self.ndim) if start_dim % self.ndim != end_dim % self.ndim \
        else (start_dim % self.ndim,) * 2
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape
    n = 1
    for d in range(s, e + 1):
        n *= shape[d]
    return self.reshape(tuple(shape[:s]) + (n,) + tuple(shape[e + 1:]))


def _unflatten(self, dim, sizes):
    d = normalize_dims(dim, self.ndim)[0]
    return self.reshape(tuple(self.shape[:d]) + tuple(sizes) + tuple(self.shape[d + 1:]))


def _movedim(self, source, destination):
    src = normalize_dims(source, self.ndim)
    dst = normalize_dims(destination, self.ndim)
    order = [d for d in range(self.ndim) if d not in src]
    for s_, d_ in sorted(zip(dst, src)):
        order.insert(s_, d_)
    return self.permute(order)


Tensor.flatten = _flatten
Tensor.unflatten = _unflatten
Tensor.movedim = _movedim
Tensor.swapaxes = Tensor.swapdims = lambda self, a, b: self.transpose(a, b)
Tensor.view_as = lambda self, other: self.view(other.shape)
Tensor.reshape_as = lambda self, other: self.reshape(other.shape)
Tensor.expand_as = lambda self, other: self.expand(other.shape)
def _contiguous(self, memory_format=None):
    """self if laid out in `memory_format` (default: row-major), else a copy that is."""
    if memory_format is None or memory_format is _memory_format.contiguous_format:
        return self if self._data.flags.c_contiguous else dispatch(R["contiguous_copy"], (self,), {})
    if self.is_contiguous(memory_format=memory_format):
        return self
    return dispatch(R["to_memory_format"], (self, memory_format), {})


Tensor.contiguous = _contiguous
Tensor.clamp_min = lambda self, min: dispatch(R["clamp"], (self, min, None), {})
Tensor.clamp_max = lambda self, max: dispatch(R["clamp"], (self, None, max), {})
Tensor.clamp_min_ = lambda self, min: dispatch(R["clamp_"], (self, min, None), {})
Tensor.clamp_max_ = lambda self, max: dispatch(R["clamp_"], (self, None, max), {})
Tensor.clip = Tensor.clamp
Tensor.clip_ = Tensor.clamp_
Tensor.true_divide = Tensor.div
Tensor.multiply = Tensor.mul
Tensor.subtract = Tensor.sub
Tensor.negative = Tensor.neg
Tensor.absolute = Tensor.abs
Tensor.greater = Tensor.gt
Tensor.less = Tensor.lt
Tensor.where = lambda self, condition, other: dispatch(R["where"], (condition, self, other), {})
Tensor.fill_ = lambda self, value: dispatch(R["fill_"], (self, value), {})
Tensor.zero_ = lambda self: dispatch(R["zero_"], (self,), {})
Tensor.copy_ = lambda self, src, non_blocking=False: dispatch(R["copy_"], (self, src), {})
Tensor.dropout = lambda self, p=0.5, train=True: dispatch(R["native_dropout"], (self, p, train), {})[0]
Tensor.bernoulli = lambda self, p=None: dispatch(R["bernoulli"], (self, p), {})


def _uniform_(self, *args, generator=None, **kwargs):
    """Tensor.uniform_(from=0, to=1, *, generator=None): fill in place from U(from, to)
    (nn.init.uniform_'s draw; `from` is a keyword Python cannot name as a parameter)."""
    from .functional import _uniform_fill_
    bounds = dict(zip(("from", "to"), args), **kwargs)
    return _uniform_fill_(self, float(bounds.get("from", 0.0)), float(bounds.get("to", 1.0)), generator)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Tensor.normal_(mean=0, std=1, *, generator=None): fill in place from N(mean, std^2)."""
    from .functional import _normal_fill_
    return _normal_fill_(self, mean, std, generator)


def _fill_diagonal_(self, fill_value, wrap=False):
    """Tensor.fill_diagonal_: write fill_value on the main diagonal in place (a 2-D matrix,
    or a tensor whose dims are all equal); with wrap, a tall matrix's diagonal restarts every
    columns + 1 rows. A masked_fill_ (so autograd sees an in-place write)."""
    from . import functional as _fn
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.ndim > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    import math
    step = sum(math.prod(shape[d + 1:]) for d in range(self.ndim))   # flat distance between diagonal entries
    total = math.prod(shape)
    limit = total if (wrap and self.ndim == 2) else min(shape) * step
    flat = _fn.arange(total).reshape(shape)
    return self.masked_fill_((flat % step == 0) & (flat < limit), fill_value)


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.fill_diagonal_ = _fill_diagonal_
Tensor.index_put_ = lambda self, indices, values, accumulate=False: dispatch(
    R["index_put_"], (self, list(indices), values, accumulate), {})
Tensor.index_put = lambda self, indices, values, accumulate=False: dispatch(
    R["index_put"], (self, list(indices), values, accumulate), {})


def _new_factory(op_name):
    op = R[op_name]

    def method(self, *args, dtype=None, requires_grad=False, device=None, **kwargs):
        check_device(device)
        if op_name == "full":
            size, value = args if len(args) == 2 else (args[0], kwargs.pop("fill_value"))
            out = dispatch(op, (tuple(size), value, dtype or self.dtype), {})
        else:
            out = dispatch(op, (_sizes(args), dtype or self.dtype), {})
        if requires_grad:
            out.requires_grad_(True)
        return out
    return method


Tensor.new_zeros = _new_factory("zeros")
Tensor.new_ones = _new_factory("ones")
Tensor.new_empty = _new_factory("empty")
Tensor.new_full = _new_factory("full")


# -- operators ---------------------------------------------------------------

def _binary(op_name, reflected=False):
    op = R[op_name]
    if reflected:
        def method(self, other):
            if not isinstance(other, (Tensor, int, float, bool, complex)):
                return NotImplemented
            return dispatch(op, (other, self), {})
    else:
        tail = op.defaults[2:]   # pass defaults so the dispatcher need not fill them in

        def method(self, other):
            if not isinstance(other, (Tensor, int, float, bool, complex)) and not hasattr(other, "__index__") \
                    and not hasattr(other, "__float__"):
                return NotImplemented
            return dispatch(op, (self, other) + tail, {})
    return method


Tensor.__add__ = Tensor.__radd__ = _binary("add")
Tensor.__sub__ = _binary("sub")
Tensor.__rsub__ = lambda self, other: dispatch(R["rsub"], (self, other), {})
Tensor.__mul__ = Tensor.__rmul__ = _binary("mul")
Tensor.__truediv__ = _binary("div")
Tensor.__rtruediv__ = lambda self, other: dispatch(R["mul"], (dispatch(R["reciprocal"], (self,), {}), other), {})
Tensor.__floordiv__ = _binary("floor_divide")
Tensor.__rfloordiv__ = _binary("floor_divide", reflected=True)
Tensor.__mod__ = _binary("remainder")
Tensor.__rmod__ = _binary("remainder", reflected=True)
Tensor.__pow__ = _binary("pow")
Tensor.__rpow__ = _binary("pow", reflected=True)
Tensor.__matmul__ = _binary("matmul")
Tensor.__rmatmul__ = _binary("matmul", reflected=True)
Tensor.__and__ = Tensor.__rand__ = _binary("bitwise_and")
Tensor.__or__ = Tensor.__ror__ = _binary("bitwise_or")
Tensor.__xor__ = Tensor.__rxor__ = _binary("bitwise_xor")
Tensor.__eq__ = _binary("eq")
Tensor.__ne__ = _binary("ne")
Tensor.__lt__ = _binary("lt")
Tensor.__le__ = _binary("le")
Tensor.__gt__ = _binary("gt")
Tensor.__ge__ = _binary("ge")
Tensor.__neg__ = lambda self: dispatch(R["neg"], (self,), {})
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: dispatch(R["abs"], (self,), {})
Tensor.__invert__ = lambda self: dispatch(R["bitwise_not"], (self,), {})


def _inplace_operator(op_name):
    op = R[op_name]

    def method(self, other):
        dispatch(op, (self, other), {})
        return self
    return method


Tensor.__iadd__ = _inplace_operator("add_")
Tensor.__isub__ = _inplace_operator("sub_")
Tensor.__imul__ = _inplace_operator("mul_")
Tensor.__itruediv__ = _inplace_operator("div_")
Tensor.__ipow__ = _inplace_operator("pow_")
Tensor.__ifloordiv__ = _inplace_operator("floor_divide_")
Tensor.__imod__ = _inplace_operator("remainder_")
Tensor.__hash__ = lambda self: id(self)


# -- autograd ----------------------------------------------------------------

def grad_fn(self):
    if self._base is not None and self._view_version != self._version_counter[0]:
        _graph.regenerate_view_grad_fn(self)
    return self._grad_fn


def _get_accumulator(self):
    acc = self._accumulator
    if acc is None:
        acc = self._accumulator = _graph.AccumulateGrad(self)
        if self._post_acc_hooks is not None:
            acc._post_acc_hooks = self._post_acc_hooks
    return acc


def retain_grad(self):
    """Fill this non-leaf's .grad during backward (no-op on leaves)."""
    _graph.retain_grad(self)


def register_hook(self, hook):
    """hook(grad) -> optional new grad, called when this tensor's gradient is computed."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = self.grad_fn
    if fn is not None:
        return fn.add_tensor_pre_hook(self._output_nr, hook)
    if self._hooks is None:
        self._hooks = _graph._HookDict()
    return _graph.add_hook(self._hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """hook(tensor), called after the gradient is accumulated into this leaf's .grad."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = _graph._HookDict()
        if self._accumulator is not None:
            self._accumulator._post_acc_hooks = self._post_acc_hooks
    return _graph.add_hook(self._post_acc_hooks, hook)


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    _backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


for _fn in (grad_fn, _get_accumulator, retain_grad, register_hook, register_post_accumulate_grad_hook,
            backward):
    _fn.__qualname__ = f"Tensor.{_fn.__name__}"
    setattr(Tensor, _fn.__name__, property(_fn) if _fn is grad_fn else _fn)
del builtins


# -- resize_, in-place comparisons, sparse-layout stand-ins ------------------------------

from .ops.out import resize_ as _resize_, resize_as_ as _resize_as_   # noqa: E402

Tensor.resize_ = _resize_
Tensor.resize_as_ = _resize_as_


def _comparison_inplace(name):
    """x.eq_(y): x holds the comparison's result in its own dtype (1 where true, 0 where
    false); it carries no gradient, as the comparison has none."""
    def method(self, other):
        return self.copy_(getattr(self, name)(other))
    method.__name__ = method.__qualname__ = name + "_"
    return method


# the binary comparisons and logical ops (a bool result from self and other) without an
# in-place op of their own
for _name in with_variant(METHOD):
    _op = R[_name]
    if _op.dtype_rule is BOOL and _op.params == ("self", "other") and _op.inplace is None:
        setattr(Tensor, _name + "_", _comparison_inplace(_name))
Tensor.greater_ = Tensor.gt_
Tensor.greater_equal_ = Tensor.ge_
Tensor.less_ = Tensor.lt_
Tensor.less_equal_ = Tensor.le_
Tensor.not_equal_ = Tensor.ne_


def _gather(self, dim, index, *, sparse_grad=False):
    """sparse_grad=True gives self a sparse COO gradient, as PyTorch does."""
    return dispatch(R["_gather_sparse_grad" if sparse_grad else "gather"], (self, dim, index), {})


Tensor.gather = _gather


def _unsafe_split_with_sizes(self, split_sizes, dim=0):
    """PyTorch's unsafe_split_with_sizes: pieces that share self's memory but are not its
    multi-output views, so each may be written in place. dynjit makes each piece a narrow
    (a single-output view), whose in-place writes autograd follows correctly."""
    d = dim % max(self.dim(), 1)
    n = self.shape[d]
    if sum(split_sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                           f"size at dimension {dim}), but got split_sizes={list(split_sizes)}")
    pieces, start = [], 0
    for size in split_sizes:
        pieces.append(self.narrow(d, start, size))
        start += size
    return tuple(pieces)


def _unsafe_split(self, split_size, dim=0):
    n = self.shape[dim % max(self.dim(), 1)]
    if split_size <= 0 and n:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else []) if n else [0]
    return _unsafe_split_with_sizes(self, sizes, dim)


def _unsafe_chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = self.shape[dim % max(self.dim(), 1)]
    return _unsafe_split(self, max(-(-n // chunks), 1), dim)


Tensor.unsafe_split = _unsafe_split
Tensor.unsafe_split_with_sizes = _unsafe_split_with_sizes
Tensor.unsafe_chunk = _unsafe_chunk



class TypedStorage:
    """Tensor.storage(): the memory a tensor views, as elements of its dtype (PyTorch's
    TypedStorage; len() is the number of elements, not bytes)."""

    def __init__(self, tensor):
        from .ops.as_strided import storage_of
        self._flat, _ = storage_of(tensor._data)
        self.dtype = tensor.dtype

    def __len__(self):
        return self._flat.size

    def size(self):
        return self._flat.size

    def nbytes(self):
        return self._flat.nbytes

    def data_ptr(self):
        return self._flat.__array_interface__["data"][0]

    def tolist(self):
        return self._flat.tolist()


Tensor.storage = lambda self: TypedStorage(self)
