"""`out=` arguments and `Tensor.resize_`, with PyTorch's rules.

`call_with_out(op, args, kwargs, out)` runs `op` and writes its result into the given
tensor(s) (`dynjit.mul(a, b, out=x)`), as PyTorch's out= overloads do:
- with grad mode on, no argument and no output may require grad (out= functions are
  not differentiable); under no_grad they may;
- the result's dtype must be castable to the output's (a float result does not go into
  an integer tensor; an integer one goes into a float tensor);
- an output of another shape is resized to the result's shape (with PyTorch's
  deprecation warning when it had elements);
- the write is an in-place `copy_`, so it bumps the output's version and is seen by
  allow_mutation_on_saved_tensors like any other in-place write.
Forward AD's own refusal (dynjit.autograd.forward_ad.check_out_variant) is the caller's,
since forward AD sits above ops.

`resize_(t, size)` gives `t` a new shape, contiguous over its storage from its storage
offset: the values that fit keep their place in memory, and the storage grows (with
zeros) when it must. Like PyTorch it refuses tensors that require grad, and a resize to
the current shape changes nothing (not even the version).
"""
import math
import warnings

import numpy as np

from .. import _dtype
from . import dispatch as _dispatch
from .dispatch import dispatch, grad_state
from .registry import registry

RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does not "
    "match the required output shape {new}. This behavior is deprecated, and in a future PyTorch "
    "release outputs will not be resized unless they have zero elements. You can explicitly "
    "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).")


def _tensors(values):
    for v in values:
        if isinstance(v, _dispatch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, _dispatch.Tensor))


def _outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def check_out_grad(name, args, kwargs, out):
    """PyTorch's error for an out= call that autograd would have to record."""
    for o in _outputs(out):
        if not isinstance(o, _dispatch.Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    if not grad_state.enabled:
        return
    if any(t._requires_grad for t in _tensors(list(args) + list(kwargs.values()) + list(_outputs(out)))):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def write_out(result, out):
    """Write `result` (a tensor, or a tuple of them for `out` a tuple) into `out`, resizing
    it to the result's shape where they differ; returns `out`."""
    results, outs = _outputs(result), _outputs(out)
    if len(results) != len(outs):
        raise RuntimeError(f"expected {len(results)} output tensors in out=, got {len(outs)}")
    for r, o in zip(results, outs):
        if r.dtype._category > o.dtype._category:
            raise RuntimeError(f"result type {_dtype.scalar_type_name(r.dtype)} can't be cast to the "
                               f"desired output type {_dtype.scalar_type_name(o.dtype)}")
        if tuple(o._data.shape) != tuple(r._data.shape):
            if o._data.size:
                warnings.warn(RESIZE_WARNING.format(old=list(o._data.shape), new=list(r._data.shape)),
                              UserWarning, stacklevel=5)
            resize_(o, tuple(r._data.shape))
        dispatch(registry["copy_"], (o, r), {})
    return out


def call_with_out(op, args, kwargs, out):
    """`op(*args, **kwargs, out=out)` (see the module docstring)."""
    check_out_grad(op.name, args, kwargs, out)
    return write_out(dispatch(op, args, kwargs), out)


# -- resize_ ---------------------------------------------------------------------------

def _root(arr):
    """The array that owns `arr`'s memory, and `arr`'s offset into it in elements."""
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    offset = (arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // arr.itemsize
    return root, offset


def _new_shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return shape


def resize_(self, *size, memory_format=None):
    """Tensor.resize_ (see the module docstring)."""
    if memory_format is not None and memory_format is not getattr(_dtype, "contiguous_format", None):
        raise NotImplementedError("resize_(memory_format=...) is not supported by dynjit")
    shape = _new_shape(size)
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(hasattr(m, "__metadata_mutation__") for m in _dispatch._modes):
        for m in _dispatch._modes:
            if hasattr(m, "check_metadata_mutation"):     # make_fx's fake/symbolic trace
                m.check_metadata_mutation("resize_", self, (shape,))
        raise NotImplementedError("resize_() while tracing (make_fx, AOT, dynjit.compile, forward AD) is "
                                  "not supported by dynjit; resize the tensor outside the traced code")
    if tuple(self._data.shape) == shape:
        return self
    n = math.prod(shape)
    root, offset = _root(self._data)
    flat = root.ravel(order="K") if (root.flags.c_contiguous or root.flags.f_contiguous) else None
    if flat is not None and np.shares_memory(flat, root) and offset + n <= flat.size:
        data = flat[offset:offset + n].reshape(shape)       # the same memory, reinterpreted
    elif self._base is not None:
        raise RuntimeError("resize_() would grow the memory this view shares with its base; dynjit cannot "
                           "grow shared memory in place: resize the base, or clone the view first")
    else:
        data = np.zeros(shape, dtype=self._data.dtype)
        old = flat[offset:] if flat is not None else self._data.reshape(-1)
        k = min(old.size, n)
        data.reshape(-1)[:k] = old[:k]
    for observer in _dispatch._mutation_observers:
        observer(self)
    self._data = data
    self._meta_ops = ()
    self._version_counter[0] += 1
    return self


def resize_as_(self, the_template, memory_format=None):
    """Tensor.resize_as_: resize_ to `the_template`'s shape."""
    return resize_(self, tuple(the_template._data.shape), memory_format=memory_format)
