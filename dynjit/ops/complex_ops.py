"""Complex-number ops: real/imag views, view_as_real/view_as_complex, conj, sgn,
angle, complex and polar, and `conj_if_complex`, the helper the shared derivative
formulas use to follow PyTorch's convention for complex gradients.

PyTorch's convention (Wirtinger calculus): the gradient that flows into an op's
input z is `grad * conj(df/dz) + conj(grad) * df/d(conj z)`, which for a
holomorphic op (mul, exp, sin, matmul ...) is the real formula with its factor
conjugated: `grad * conj(f'(z))`. The real formulas in the registry therefore
conjugate their factors with `conj_if_complex`, which is the identity on real
tensors (no op is recorded, so real graphs stay as they were). Where a real input
meets a complex gradient (x.to(complex64), complex(re, im)) the engine keeps the
gradient's real part (autograd.graph.reduce_grad), as PyTorch does.
"""
import math

import numpy as np

from .. import _dtype
from .registry import register, registry, POINTWISE, VIEW, OTHER, REAL_FLOAT, linear_jvp
from .meta import broadcast_shapes, same_as


def conj_if_complex(x):
    """x conjugated if it is a complex tensor or number; anything else as it is."""
    if isinstance(x, complex):
        return x.conjugate()
    d = getattr(x, "dtype", None)
    if isinstance(d, _dtype.dtype) and d._category == 3:
        return registry["conj"](x)
    return x


def is_complex_value(x):
    d = getattr(x, "dtype", None)
    return isinstance(x, complex) or (isinstance(d, _dtype.dtype) and d._category == 3)


def _name(d):
    return _dtype.scalar_type_name(d if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d))


# -- real and imag: views of the parts --------------------------------------------------

@register("real", VIEW, variants="function")
def real(self):
    return np.real(self)


real.derivative(lambda grad: grad)     # a real gradient: the engine makes it complex
real.jvp(linear_jvp(real))


def _check_imag(dtype):
    if not (dtype._category == 3 if isinstance(dtype, _dtype.dtype) else dtype.kind == "c"):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


@register("imag", VIEW, variants="function")
def imag(self):
    _check_imag(np.asarray(self).dtype)
    return np.imag(self)


@imag.meta_fn
def _(self):
    _check_imag(self.dtype)
    return same_as(self, self.dtype.to_real())


imag.derivative(lambda grad: grad * 1j)
imag.jvp(linear_jvp(imag))


# -- view_as_real / view_as_complex --------------------------------------------------------

def _check_view_as_real(dtype):
    if not (dtype._category == 3 if isinstance(dtype, _dtype.dtype) else dtype.kind == "c"):
        raise RuntimeError("view_as_real is only supported for complex tensors")


@register("view_as_real", VIEW, variants="function")
def view_as_real(self):
    self = np.asarray(self)
    _check_view_as_real(self.dtype)
    part = np.float32 if self.dtype == np.complex64 else np.float64
    return self[..., np.newaxis].view(part)


@view_as_real.meta_fn
def _(self):
    _check_view_as_real(self.dtype)
    return tuple(self.shape) + (2,), self.dtype.to_real()


view_as_real.derivative(lambda grad: view_as_complex(grad.contiguous()))
view_as_real.jvp(linear_jvp(view_as_real))


def _check_view_as_complex(dtype, shape, strides=None):
    d = dtype if isinstance(dtype, _dtype.dtype) else _dtype.from_numpy_dtype(dtype)
    if d not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got "
                           f"a tensor of scalar type: {_name(d)}")
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides is not None:
        if strides[-1] != 1:
            raise RuntimeError("Tensor must have a last dimension with stride 1")
        if any(s % 2 for s in strides[:-1]):
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")


@register("view_as_complex", VIEW, variants="function")
def view_as_complex(self):
    self = np.asarray(self)
    _check_view_as_complex(self.dtype, self.shape, tuple(s // self.itemsize for s in self.strides))
    whole = np.complex64 if self.dtype == np.float32 else np.complex128
    return self.view(whole)[..., 0]


@view_as_complex.meta_fn
def _(self):
    _check_view_as_complex(self.dtype, tuple(self.shape))
    return tuple(self.shape[:-1]), self.dtype.to_complex()


view_as_complex.derivative(lambda grad: view_as_real(grad))
view_as_complex.jvp(linear_jvp(view_as_complex))


# -- conj, sgn, angle ----------------------------------------------------------------

@register("conj", POINTWISE, variants="function, method", complex_ok=True)
def conj(self):
    return np.conjugate(self)


conj.derivative(lambda grad: conj_if_complex(grad))
conj.jvp(linear_jvp(conj))


@register("sgn", POINTWISE, variants="function, method", inplace=True, complex_ok=True)
def sgn(self):
    self = np.asarray(self)
    if self.dtype.kind != "c":
        return np.sign(self)
    with np.errstate(all="ignore"):
        mag = np.abs(self)
        return np.where(mag == 0, np.zeros((), self.dtype), self / np.where(mag == 0, 1, mag))


@sgn.derivative
def _(grad, self, result):
    if not is_complex_value(self):
        return grad * 0
    # (grad - sgn^2 conj(grad)) / (2|z|), 0 where z == 0 (PyTorch's sgn_backward)
    mag = self.abs()
    g = (grad - result * result * conj_if_complex(grad)) / (mag * 2)
    return registry["masked_fill"](g, mag == 0, 0.0)


@register("angle", POINTWISE, dtype_rule=REAL_FLOAT, variants="function, method", complex_ok=True)
def angle(self):
    self = np.asarray(self)
    if self.dtype.kind != "c":      # pi for negative numbers, 0 otherwise, NaN kept
        return np.where(np.isnan(self), self, np.where(self < 0, math.pi, 0.0).astype(self.dtype))
    return np.angle(self)


@angle.derivative
def _(grad, self):
    if not is_complex_value(self):
        return grad * 0
    # i * grad * z / |z|^2, 0 where z == 0
    mag2 = self.abs().square()
    g = grad * self / registry["masked_fill"](mag2, mag2 == 0, 1.0) * 1j
    return registry["masked_fill"](g, mag2 == 0, 0.0)


# -- building complex tensors from real ones ---------------------------------------------------

def _complex_parts_dtype(real_dtype, imag_dtype):
    names = []
    for d in (real_dtype, imag_dtype):
        d = d if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d)
        names.append(d)
    a, b = names
    if a not in (_dtype.float16, _dtype.float32, _dtype.float64) or \
            b not in (_dtype.float16, _dtype.float32, _dtype.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_name(a)} and {_name(b)}")
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {_name(a)} but got scalar type "
                           f"{_name(b)} for second argument")
    return a.to_complex()


@register("complex", OTHER, variants="function")
def complex_op(real, imag):
    real, imag = np.asarray(real), np.asarray(imag)
    d = _complex_parts_dtype(real.dtype, imag.dtype)
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), dtype=d.np)
    out.real = real
    out.imag = imag
    return out


@complex_op.meta_fn
def _(real, imag):
    return broadcast_shapes(real.shape, imag.shape), _complex_parts_dtype(real.dtype, imag.dtype)


complex_op.derivative(lambda grad: (registry["real"](grad), registry["imag"](grad)))
complex_op.jvp(lambda tangents, result, real_, imag_: _complex_jvp(tangents, real_, imag_))


def _complex_jvp(tangents, real_, imag_):
    tr, ti = tangents
    if tr is None:
        tr = registry["zeros"](tuple(real_.shape), real_.dtype)
    if ti is None:
        ti = registry["zeros"](tuple(imag_.shape), imag_.dtype)
    return complex_op(tr, ti)


@register("polar", OTHER, variants="function")
def polar(abs, angle):
    abs, angle = np.asarray(abs), np.asarray(angle)
    d = _complex_parts_dtype(abs.dtype, angle.dtype)
    out = np.empty(np.broadcast_shapes(abs.shape, angle.shape), dtype=d.np)
    out.real = abs * np.cos(angle)
    out.imag = abs * np.sin(angle)
    return out


@polar.meta_fn
def _(abs, angle):
    return broadcast_shapes(abs.shape, angle.shape), _complex_parts_dtype(abs.dtype, angle.dtype)


@polar.derivative
def _(grad, abs, angle, result):
    unit = complex_op(angle.cos(), -angle.sin())       # conj(e^{i angle})
    return registry["real"](grad * unit), registry["imag"](grad * conj_if_complex(result))
