"""Factory ops: tensors made from sizes and values (zeros, ones, full, empty,
arange, eye, linspace) and from the random generator (rand, randn, randint,
randperm, bernoulli, normal). Their kernels take plain Python values."""
import numpy as np

from .. import _dtype
from ..random import default_generator
from .registry import register, FACTORY


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


@register("full", FACTORY, differentiable=False)
def full(size, fill_value, dtype=None):
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value)
    return np.full(_size(size), fill_value, dtype=_np_dtype(dtype))


@register("arange", FACTORY, differentiable=False)
def arange(start, end=None, step=1, dtype=None):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = _dtype.int64 if is_int else _dtype.get_default_dtype()
    return np.arange(start, end, step).astype(_np_dtype(dtype))


@register("linspace", FACTORY, differentiable=False)
def linspace(start, end, steps, dtype=None):
    return np.linspace(start, end, int(steps)).astype(_np_dtype(dtype))


@register("eye", FACTORY, differentiable=False)
def eye(n, m=None, dtype=None):
    return np.eye(n, m, dtype=_np_dtype(dtype))


@register("rand", FACTORY, differentiable=False)
def rand(size, dtype=None):
    return default_generator.np.random(_size(size)).astype(_np_dtype(dtype))


@register("randn", FACTORY, differentiable=False)
def randn(size, dtype=None):
    return default_generator.np.standard_normal(_size(size)).astype(_np_dtype(dtype))


@register("randint", FACTORY, differentiable=False)
def randint(low, high, size, dtype=None):
    return default_generator.np.integers(low, high, _size(size)).astype(_np_dtype(dtype, _dtype.int64))


@register("randperm", FACTORY, differentiable=False)
def randperm(n, dtype=None):
    return default_generator.np.permutation(n).astype(_np_dtype(dtype, _dtype.int64))


@register("bernoulli", FACTORY, differentiable=False)
def bernoulli(self, p=None):
    prob = self if p is None else np.full(np.shape(self), p)
    return (default_generator.np.random(np.shape(self)) < prob).astype(np.asarray(self).dtype)
