"""The `dynjit.<fn>` functions: factories, and the function forms of tensor ops."""
import builtins

from . import _dtype
from ._methods import _sizes, numpy_names
from .ops.registry import registry as R, with_variant, FUNCTION
from .ops.dispatch import dispatch
from .ops.out import call_with_out
from .autograd.forward_ad import check_out_variant
from .tensor import Tensor, check_device

__all__ = []


def _function(op):
    def fn(*args, **kwargs):
        if "input" in kwargs:
            kwargs["self"] = kwargs.pop("input")
        if "axis" in kwargs:
            kwargs = numpy_names(op, kwargs)
        out = kwargs.pop("out", None)
        if out is not None:
            return _with_out(op, args, kwargs, out)
        return dispatch(op, args, kwargs)
    fn.__name__ = op.name
    fn.__qualname__ = op.name
    return fn


def _with_out(op, args, kwargs, out):
    """`op(*args, **kwargs)` written into `out` (dynjit/ops/out.py has PyTorch's rules)."""
    check_out_variant(op.name, list(args) + list(kwargs.values()), out)
    return call_with_out(op, args, kwargs, out)


def _no_out():
    raise NotImplementedError("out= arguments are not supported by dynjit; use the returned tensor")


# Every op that declares a function variant becomes `dynjit.<name>`; some are refined
# by hand below (overloads, extra keyword arguments).
for _name in with_variant(FUNCTION):
    globals()[_name] = _function(R[_name])
    __all__.append(_name)


def div(input, other, *, rounding_mode=None, out=None):
    if out is not None:
        if rounding_mode is None:
            return _with_out(R["div"], (input, other), {}, out)
        return _with_out(R["div_mode"], (input, other, rounding_mode), {}, out)
    if rounding_mode is None:
        return dispatch(R["div"], (input, other), {})
    return dispatch(R["div_mode"], (input, other, rounding_mode), {})


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """torch.gather. sparse_grad=True gives input a sparse COO gradient, as PyTorch does."""
    if out is not None:
        return _with_out(R["gather"], (input, dim, index), {}, out)
    return dispatch(R["_gather_sparse_grad" if sparse_grad else "gather"], (input, dim, index), {})


def unsafe_split(input, split_size, dim=0):
    return input.unsafe_split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.unsafe_split_with_sizes(split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.unsafe_chunk(chunks, dim)


__all__ += ["unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"]

from .ops.memory_format import (memory_format, contiguous_format, preserve_format,  # noqa: E402
                                channels_last, channels_last_3d)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A tensor with the given sizes and strides (dynjit fills it with zeros)."""
    check_device(device)
    t = dispatch(R["empty_strided"], (tuple(size), tuple(stride), dtype), {})
    return t.requires_grad_(True) if requires_grad else t


__all__ += ["memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
            "empty_strided"]


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """torch.lobpcg: the k largest (or smallest) eigenpairs of the symmetric matrices A
    (values descending for the largest, ascending for the smallest). dynjit computes them
    from a full symmetric eigendecomposition (the pairs LOBPCG converges to), so the
    iteration's parameters (X's values, n, iK, niter, tol, method, ...) only set k, and
    the gradient is the exact one of those eigenpairs, as PyTorch's lobpcg backward gives."""
    if B is not None:
        raise NotImplementedError("lobpcg with B (a generalized eigenproblem) is not supported by dynjit")
    if k is None:
        k = 1 if X is None else X.shape[-1]
    rows = A.shape[-1]
    if rows < 3 * k:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={rows}) is smaller "
                         f"than 3 x the number of requested eigenpairs (={k})")
    values, vectors = dispatch(R["symmetric_eigh"], (A,), {})
    if largest is None or largest:
        return values.narrow(-1, rows - k, k).flip(-1), vectors.narrow(-1, rows - k, k).flip(-1)
    return values.narrow(-1, 0, k), vectors.narrow(-1, 0, k)


__all__.append("lobpcg")


concat = concatenate = globals()["cat"]
true_divide = divide = globals()["div"]
multiply = globals()["mul"]
subtract = globals()["sub"]
negative = globals()["neg"]
absolute = globals()["abs"]
clip = globals()["clamp"]


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return dispatch(R["einsum"], (equation, list(operands)), {})


def _factory(op_name):
    op = R[op_name]

    def fn(*size, dtype=None, requires_grad=False, device=None, out=None, layout=None,
           generator=None, pin_memory=False, memory_format=None):
        if out is not None:
            _no_out()
        check_device(device)
        t = dispatch(op, (_sizes(size), dtype), {})
        if requires_grad:
            t.requires_grad_(True)
        return t
    fn.__name__ = op_name
    return fn


zeros = _factory("zeros")
ones = _factory("ones")
empty = _factory("empty")
rand = _factory("rand")
randn = _factory("randn")


def full(size, fill_value, *, dtype=None, requires_grad=False, device=None):
    check_device(device)
    t = dispatch(R["full"], (tuple(size), fill_value, dtype), {})
    return t.requires_grad_(True) if requires_grad else t


def arange(start, end=None, step=1, *, dtype=None, requires_grad=False, device=None):
    check_device(device)
    t = dispatch(R["arange"], (start, end, step, dtype), {})
    return t.requires_grad_(True) if requires_grad else t


def linspace(start, end, steps, *, dtype=None, requires_grad=False, device=None):
    check_device(device)
    t = dispatch(R["linspace"], (start, end, steps, dtype), {})
    return t.requires_grad_(True) if requires_grad else t


def eye(n, m=None, *, dtype=None, requires_grad=False, device=None):
    check_device(device)
    t = dispatch(R["eye"], (n, m, dtype), {})
    return t.requires_grad_(True) if requires_grad else t


def randint(low, high=None, size=None, *, dtype=None, requires_grad=False, device=None, generator=None):
    check_device(device)
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    return dispatch(R["randint"], (low, high, tuple(size), dtype), {})


def randperm(n, *, dtype=None, device=None, generator=None, requires_grad=False):
    check_device(device)
    return dispatch(R["randperm"], (n, dtype), {})


def _like(op_name):
    op = R[op_name]

    def fn(input, dtype=None, *, requires_grad=False, device=None, memory_format=None, layout=None):
        check_device(device)
        t = dispatch(op, (tuple(input.shape), dtype or input.dtype), {})
        return t.requires_grad_(True) if requires_grad else t
    fn.__name__ = op_name + "_like"
    return fn


zeros_like = _like("zeros")
ones_like = _like("ones")
empty_like = _like("empty")
rand_like = _like("rand")
randn_like = _like("randn")


def full_like(input, fill_value, *, dtype=None, requires_grad=False, device=None):
    check_device(device)
    t = dispatch(R["full"], (tuple(input.shape), fill_value, dtype or input.dtype), {})
    return t.requires_grad_(True) if requires_grad else t


def bernoulli(input, p=None, *, generator=None):
    return dispatch(R["bernoulli"], (input, p), {})


def max(input, dim=None, keepdim=False):
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


def median(input, dim=None, keepdim=False):
    return input.median(dim, keepdim)


def nanmedian(input, dim=None, keepdim=False):
    return input.nanmedian(dim, keepdim)


def isin(elements, test_elements, *, invert=False):
    return dispatch(R["isin"], (elements, test_elements, invert), {})


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim=keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) of `input`, computed by one op (one backward node)."""
    if isinstance(dim, bool):      # var_mean(x, False): the old positional `unbiased`
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dispatch(R["var_mean"], (input, dim, correction, keepdim), {})


__all__.append("var_mean")


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    return input.norm(p, dim, keepdim)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def reshape(input, shape):
    return input.reshape(shape)


def permute(input, dims):
    return input.permute(dims)


def flip(input, dims):
    return input.flip(dims)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def movedim(input, source, destination):
    return input.movedim(source, destination)


def swapaxes(input, a, b):
    return input.transpose(a, b)


def clamp_min(input, min):
    return input.clamp_min(min)


def clamp_max(input, max):
    return input.clamp_max(max)


def numel(input):
    return input.numel()


def _refuse_sparse(name, *tensors):
    from .ops.sparse import is_sparse_data, could_not_run
    for t in tensors:       # (this module's `any` is dynjit.any)
        if isinstance(t, Tensor) and is_sparse_data(t._data):
            raise could_not_run(type("op", (), {"name": name}))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import numpy as np
    _refuse_sparse("eq", input, other)
    a = input._data if isinstance(input, Tensor) else input
    b = other._data if isinstance(other, Tensor) else other
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import numpy as np
    b = other._data if isinstance(other, Tensor) else other
    return Tensor._make(np.isclose(input._data, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    _refuse_sparse("equal", input, other)
    if input.shape != other.shape:
        return False
    a, b = input._data, other._data
    if a.dtype != b.dtype:      # compared in the promoted dtype, as PyTorch does
        dt = _dtype.promote_types(input.dtype, other.dtype).np
        a, b = a.astype(dt), b.astype(dt)
    return bool((a == b).all())


def broadcast_tensors(*tensors):
    import numpy as np
    shape = np.broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def broadcast_shapes(*shapes):
    import numpy as np
    from .tensor import Size
    return Size(np.broadcast_shapes(*shapes))


def result_type(a, b):
    from .ops.dispatch import pointwise_dtype
    return pointwise_dtype(R["add"], (a, b))


def promote_types(a, b):
    return _dtype.promote_types(a, b)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def is_conj(input):
    return input.is_conj()


def resolve_conj(input):
    return input.resolve_conj()


def resolve_neg(input):
    return input.resolve_neg()


conj_physical = globals()["conj"]      # conj() already makes a conjugated copy
__all__ += ["is_complex", "is_conj", "resolve_conj", "resolve_neg", "conj_physical"]


def is_nonzero(input):
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def dropout(input, p=0.5, train=True):
    return dispatch(R["native_dropout"], (input, p, train), {})[0]


def clone(input, *, memory_format=None):
    return input.clone()


def detach(input):
    return input.detach()


__all__ += ["median", "nanmedian", "isin", "std_mean"]


def where(condition, input=None, other=None):
    """where(cond, x, y) picks elementwise; where(cond) alone is nonzero(cond, as_tuple=True)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    return dispatch(R["where"], (condition, input, other), {})


def nonzero(input, *, as_tuple=False):
    return input.nonzero(as_tuple=as_tuple)


def diag(input, diagonal=0):
    return input.diag(diagonal)


def trace(input):
    return input.trace()


def diff(input, n=1, dim=-1):
    return input.diff(n, dim)


def count_nonzero(input, dim=None):
    return input.count_nonzero(dim)


def tile(input, dims):
    return input.tile(dims)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids (as expanded views) from 1-D tensors; indexing 'ij' or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid expects 0-D or 1-D tensors, got a {t.ndim}-D tensor")
    swap = indexing == "xy" and len(tensors) >= 2
    order = [1, 0] + list(range(2, len(tensors))) if swap else list(range(len(tensors)))
    shape = [tensors[i].numel() for i in order]
    grids = []
    for i, t in enumerate(tensors):
        axis = order.index(i)
        view = [1] * len(tensors)
        view[axis] = -1
        grids.append(t.reshape(view).expand(shape))
    return tuple(grids)


__all__ += ["where", "nonzero", "diag", "trace", "diff", "count_nonzero", "tile", "meshgrid"]


def _uniform_values(like, generator=None):
    """U(0, 1) values of `like`'s shape and dtype, from `generator` (a dynjit.Generator) if given."""
    from .ops.factories import check_floating_random, draw_parts
    from .tensor import tensor
    check_floating_random("check_uniform_bounds", like.dtype)
    if generator is None:
        return rand(tuple(like.shape), dtype=like.dtype)
    return tensor(draw_parts(generator.np.random, tuple(like.shape), like.dtype), dtype=like.dtype)


def _normal_values(like, generator=None):
    """N(0, 1) values of `like`'s shape and dtype, from `generator` if given."""
    from .ops.factories import check_floating_random, draw_parts
    from .tensor import tensor
    check_floating_random("normal_kernel_cpu", like.dtype)
    if generator is None:
        return randn(tuple(like.shape), dtype=like.dtype)
    return tensor(draw_parts(generator.np.standard_normal, tuple(like.shape), like.dtype, 0.5 ** 0.5),
                  dtype=like.dtype)


def _fill_no_grad_(tensor, values):
    """Copy `values` into `tensor` in place, unseen by autograd (what initializers do)."""
    from .autograd.grad_mode import no_grad
    with no_grad():
        tensor.copy_(values)
    return tensor


def _uniform_fill_(tensor, a, b, generator=None):
    low = builtins.complex(a, a) if tensor.is_complex() else a     # both parts from U(a, b)
    return _fill_no_grad_(tensor, _uniform_values(tensor, generator) * (b - a) + low)


def _normal_fill_(tensor, mean, std, generator=None):
    return _fill_no_grad_(tensor, _normal_values(tensor, generator) * std + mean)
