"""`Tensor.unfold(dimension, size, step)`: the sliding windows of length `size`, `step`
apart, along one dimension, as a view (that dimension becomes the window count and a last
dimension of length `size` is added); time-series and patch-extraction code slice with it.
Its derivative, `unfold_backward`, sums each window's gradient back where it came from."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .meta import wrap_dim
from .registry import register, VIEW, OTHER, linear_jvp


def _check_unfold(shape, dimension, size, step):
    d = wrap_dim(dimension, max(len(shape), 1))
    length = shape[d] if shape else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return d


@register("unfold", VIEW, variants="method")
def unfold(self, dimension, size, step):
    d = _check_unfold(self.shape, dimension, size, step)
    if self.ndim == 0:
        return self.reshape(1)
    windows = sliding_window_view(self, size, axis=d, writeable=self.flags.writeable)
    return windows[(slice(None),) * d + (slice(None, None, step),)]


@unfold.derivative
def _(grad, self_shape, dimension, size, step):
    return unfold_backward(grad, tuple(self_shape), dimension, size, step)


unfold.jvp(linear_jvp(unfold))     # forward mode


@register("unfold_backward", OTHER)
def unfold_backward(grad_in, input_sizes, dim, size, step):
    g = np.asarray(grad_in)
    out = np.zeros(input_sizes, dtype=g.dtype)
    if not input_sizes:
        return g.reshape(()).copy()
    d = wrap_dim(dim, len(input_sizes))
    target = np.moveaxis(out, d, -1)                  # views of `out` and `g` with the
    windows = np.moveaxis(g, d, -2)                   # windowed dimension last
    n = windows.shape[-2]
    for k in range(size):                             # element k of every window
        target[..., k:k + step * (n - 1) + 1:step] += windows[..., k]
    return out


unfold_backward.meta_fn(lambda grad_in, input_sizes, dim, size, step: (tuple(input_sizes), grad_in.dtype))
unfold_backward.derivative(lambda grad, dim, size, step: (grad.unfold(dim, size, step),))
