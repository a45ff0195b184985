"""Ops for aliasing: `detach` (a new tensor sharing storage and version
counter, outside autograd) and `view_scatter` (the functional form of writing
into a view: a copy of the base with the view's region replaced), which
functionalization (dynjit.aot) emits for in-place ops on views."""
import numpy as np

from .registry import register, OTHER


@register("detach", OTHER, complex_ok=True, differentiable=False, aliases_input=True)
def detach(self):
    return self   # the same numpy array: the result aliases its input


def replay_view_kernels(arr, chain):
    """Apply a view chain ((view op, other args, output index), ...) to a numpy array."""
    for op, rest, index in chain:
        arr = op.kernel(arr, *rest)
        if index is not None:
            arr = arr[index]
    return arr


@register("view_scatter", OTHER, complex_ok=True)
def view_scatter(base, src, chain):
    out = np.array(base, copy=True)
    region = replay_view_kernels(out, chain)
    region[...] = src
    return out


@view_scatter.jvp
def _(tangents, result, base, src, chain):     # linear in base and src together
    from .factories import zeros
    t_base, t_src = tangents[0], tangents[1]
    if t_base is None:
        t_base = zeros(tuple(base.shape), dtype=result.dtype)
    if t_src is None:
        t_src = zeros(tuple(src.shape), dtype=result.dtype)
    return view_scatter(t_base, t_src, chain)


@view_scatter.derivative
def _(grad, src_shape, chain):
    from .factories import zeros
    g_base = view_scatter(grad, zeros(src_shape, dtype=grad.dtype), chain)
    g_src = grad
    for op, rest, index in chain:
        g_src = op(g_src, *rest)
        if index is not None:
            g_src = g_src[index]
    return g_base, g_src
