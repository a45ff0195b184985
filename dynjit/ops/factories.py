"""Factory ops: tensors made from sizes and values (zeros, ones, full, empty,
arange, eye, linspace) and from the random generator (rand, randn, randint,
randperm, bernoulli, normal). Their kernels take plain Python values."""
import math

import numpy as np

from .. import _dtype
from ..random import default_generator
from .registry import register, FACTORY, RANDOM
from .meta import same_as
from .pointwise import scalar_to


def _np_dtype(dtype, default=None):
    if dtype is None:
        return (default or _dtype.get_default_dtype()).np
    return _dtype.to_dtype(dtype).np


def _size(size):
    size = tuple(int(s) for s in size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


def _dt(dtype, default=None):
    return _dtype.to_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())


def _sized_meta(size, dtype=None):
    return _size(size), _dt(dtype)


@register("zeros", FACTORY, differentiable=False)
def zeros(size, dtype=None):
    return np.zeros(_size(size), dtype=_np_dtype(dtype))


@register("ones", FACTORY, differentiable=False)
def ones(size, dtype=None):
    return np.ones(_size(size), dtype=_np_dtype(dtype))


@register("empty", FACTORY, differentiable=False)
def empty(size, dtype=None):
    # zero-filled: uninitialised memory would make results irreproducible
    return np.zeros(_size(size), dtype=_np_dtype(dtype))


zeros.meta_fn(_sized_meta)
ones.meta_fn(_sized_meta)
empty.meta_fn(_sized_meta)


def _full_dtype(fill_value, dtype):
    """The dtype of full(size, fill_value, dtype), after PyTorch's check that the value
    fits it (numpy would wrap 2**63 or raise its own OverflowError)."""
    dtype = _dt(dtype, _dtype.scalar_dtype(fill_value))
    scalar_to(fill_value, dtype.np)
    return dtype


@register("full", FACTORY, differentiable=False)
def full(size, fill_value, dtype=None):
    dtype = _full_dtype(fill_value, dtype)
    return np.full(_size(size), scalar_to(fill_value, dtype.np), dtype=dtype.np)


full.meta_fn(lambda size, fill_value, dtype: (_size(size), _full_dtype(fill_value, dtype)))


def _arange_args(start, end, step, dtype):
    """(start, end, step, dtype, length) after PyTorch's checks."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound ({end}) and lower bound ({start}) inconsistent with "
                           f"step sign ({step})")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dtype = _dtype.int64 if is_int else _dtype.get_default_dtype()
    dtype = _dtype.to_dtype(dtype)
    if not dtype.is_floating_point:
        for v in (start, end, step):
            if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
                # PyTorch reads integer bounds as int64 (numpy would wrap the values)
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
    length = max(0, math.ceil((end - start) / step))
    return start, end, step, dtype, length


@register("arange", FACTORY, differentiable=False)
def arange(start, end=None, step=1, dtype=None):
    start, end, step, dtype, length = _arange_args(start, end, step, dtype)
    return (start + np.arange(length) * step).astype(dtype.np)


@arange.meta_fn
def _(start, end, step, dtype):
    *_, dtype, length = _arange_args(start, end, step, dtype)
    return (length,), dtype


def _check_steps(steps):
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    return int(steps)


@register("linspace", FACTORY, differentiable=False)
def linspace(start, end, steps, dtype=None):
    return np.linspace(start, end, _check_steps(steps)).astype(_np_dtype(dtype))


linspace.meta_fn(lambda start, end, steps, dtype: ((_check_steps(steps),), _dt(dtype)))


def _eye_shape(n, m):
    shape = (n, n if m is None else m)
    _size(shape)
    return shape


@register("eye", FACTORY, differentiable=False)
def eye(n, m=None, dtype=None):
    return np.eye(*_eye_shape(n, m), dtype=_np_dtype(dtype))


eye.meta_fn(lambda n, m, dtype: (_eye_shape(n, m), _dt(dtype)))


def check_floating_random(kernel_name, dtype):
    """PyTorch draws continuous distributions (uniform, normal) for floating point dtypes
    only; an integer or bool dtype is its "not implemented" error (a cast of the floats
    would silently give zeros). Returns the dtype."""
    if dtype._category < 2:
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{_dtype.scalar_type_name(dtype)}'")
    return dtype


def draw_parts(draw, shape, dtype, scale=1.0):
    """Random values of a dtype: a complex one gets its real and imaginary parts drawn
    independently (in that order), each times `scale`, as PyTorch draws them."""
    if dtype._category != 3:
        return draw(shape).astype(dtype.np)
    parts = draw(tuple(shape) + (2,)) * scale
    return (parts[..., 0] + 1j * parts[..., 1]).astype(dtype.np)


def _rand_dtype(dtype):
    return check_floating_random("check_uniform_bounds", _dt(dtype))


def _randn_dtype(dtype):
    return check_floating_random("normal_kernel_cpu", _dt(dtype))


@register("rand", FACTORY, differentiable=False, tags=(RANDOM,))
def rand(size, dtype=None):
    dtype = _rand_dtype(dtype)
    return draw_parts(default_generator.np.random, _size(size), dtype)


@register("randn", FACTORY, differentiable=False, tags=(RANDOM,))
def randn(size, dtype=None):
    dtype = _randn_dtype(dtype)
    # complex: each part N(0, 1/2), so that E|z|^2 = 1 (PyTorch's)
    return draw_parts(default_generator.np.standard_normal, _size(size), dtype, 0.5 ** 0.5)


rand.meta_fn(lambda size, dtype: (_size(size), _rand_dtype(dtype)))
randn.meta_fn(lambda size, dtype: (_size(size), _randn_dtype(dtype)))


def _check_range(low, high):
    if low >= high:
        raise RuntimeError(f"randint expects low to be less than high, but got low={low} >= high={high}")


@register("randint", FACTORY, differentiable=False, tags=(RANDOM,))
def randint(low, high, size, dtype=None):
    _check_range(low, high)
    return default_generator.np.integers(low, high, _size(size)).astype(_np_dtype(dtype, _dtype.int64))


@randint.meta_fn
def _(low, high, size, dtype):
    _check_range(low, high)
    return _size(size), _dt(dtype, _dtype.int64)


def _randperm_dtype(dtype):
    dtype = _dt(dtype, _dtype.int64)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    return dtype


@register("randperm", FACTORY, differentiable=False, tags=(RANDOM,))
def randperm(n, dtype=None):
    return default_generator.np.permutation(n).astype(_randperm_dtype(dtype).np)


randperm.meta_fn(lambda n, dtype: (_size((n,)), _randperm_dtype(dtype)))


def _check_bernoulli(dtype, p):
    # the probabilities are read from `self` only when no p is given: they must be floats
    if p is None and dtype.kind != "f":
        raise NotImplementedError("\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_dtype.scalar_type_name(_dtype.from_numpy_dtype(dtype))}'")


@register("bernoulli", FACTORY, differentiable=False, tags=(RANDOM,))
def bernoulli(self, p=None):
    _check_bernoulli(np.asarray(self).dtype, p)
    prob = self if p is None else np.full(np.shape(self), p)
    return (default_generator.np.random(np.shape(self)) < prob).astype(np.asarray(self).dtype)


@bernoulli.meta_fn
def _(self, p):
    _check_bernoulli(self.dtype.np, p)
    return same_as(self)
