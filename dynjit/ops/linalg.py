"""Extern ops: matrix products, computed by numpy/BLAS (matmul, mm, bmm,
linear, addmm, dot, outer, einsum)."""
import string

import numpy as np

from .. import _dtype
from .registry import register, EXTERN, bilinear_jvp, AUTOCAST_LOWER_PRECISION
from .meta import broadcast_shapes
from .pointwise import scalar_to
from .complex_ops import conj_if_complex as _c


def _name(d):
    return d.name if isinstance(d, _dtype.dtype) else _dtype.from_numpy_dtype(d).name


def _promoted(*arrays):
    """The numpy dtype PyTorch's promotion gives these arrays (numpy's differs for int with float16)."""
    d = _dtype.from_numpy_dtype(arrays[0].dtype)
    for a in arrays[1:]:
        d = _dtype.promote_types(d, _dtype.from_numpy_dtype(a.dtype))
    return d.np


def check_same_dtype(da, db, name):
    if _name(da) != _name(db):
        raise RuntimeError(f"{name}: expected both operands to have the same dtype, but got: "
                           f"{_name(da)} != {_name(db)}; convert one with .to(dtype)")


def matmul_shape(a, b, name="matmul"):
    """matmul's output shape from its operands' shapes (1-D operands, batch broadcasting)."""
    a, b = tuple(a), tuple(b)
    if not a or not b:
        raise RuntimeError(f"both arguments to {name} need to be at least 1D, but they are "
                           f"{len(a)}D and {len(b)}D")
    ka = a[-1]
    kb = b[0] if len(b) == 1 else b[-2]
    if ka != kb:
        sa = "x".join(map(str, a if len(a) > 1 else (1,) + a))
        sb = "x".join(map(str, b))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return b[:-2] + b[-1:]
    if len(b) == 1:
        return a[:-1]
    return broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])


def _check_matmul(a, b, name):
    matmul_shape(a.shape, b.shape, name)
    check_same_dtype(a.dtype, b.dtype, name)


@register("matmul", EXTERN, variants="function, method", tags=(AUTOCAST_LOWER_PRECISION,))
def matmul(self, other):
    a, b = np.asarray(self), np.asarray(other)
    if a.dtype is not b.dtype or a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        _check_matmul(a, b, "matmul")       # (two matrices that fit, of one dtype, pass it)
    return np.matmul(a, b)


@matmul.meta_fn
def _(self, other):
    check_same_dtype(self.dtype, other.dtype, "matmul")
    return matmul_shape(self.shape, other.shape), self.dtype


matmul.jvp(bilinear_jvp(matmul))     # forward mode
@matmul.derivative
def _(grad, self, other, needs):
    a, b = _c(self), _c(other)      # complex: the conjugates (see complex_ops)
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        return (grad * b if needs[0] else None), (grad * a if needs[1] else None)
    if a.ndim == 1:
        if needs[0]:
            ga = (grad.unsqueeze(-2) @ b.mT).squeeze(-2)
        if needs[1]:
            gb = a.unsqueeze(-1) @ grad.unsqueeze(-2)
        return ga, gb
    if b.ndim == 1:
        if needs[0]:
            ga = grad.unsqueeze(-1) @ b.unsqueeze(-2)
        if needs[1]:
            gb = (a.mT @ grad.unsqueeze(-1)).squeeze(-1)
        return ga, gb
    if needs[0]:
        ga = grad @ b.mT
    if needs[1]:
        gb = a.mT @ grad
    return ga, gb


def _check_ndim(name, ndim, a, b):
    if len(a.shape) != ndim or len(b.shape) != ndim:
        raise RuntimeError(f"{name}: expected {ndim}D tensors, got {len(a.shape)}D and {len(b.shape)}D")


@register("mm", EXTERN, variants="function, method", tags=(AUTOCAST_LOWER_PRECISION,))
def mm(self, mat2):
    a, b = np.asarray(self), np.asarray(mat2)
    if a.dtype is not b.dtype or a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        _check_ndim("mm", 2, a, b)          # (two matrices that fit, of one dtype, pass both)
        _check_matmul(a, b, "mm")
    return a @ b


@mm.meta_fn
def _(self, mat2):
    _check_ndim("mm", 2, self, mat2)
    check_same_dtype(self.dtype, mat2.dtype, "mm")
    return matmul_shape(self.shape, mat2.shape, "mm"), self.dtype


mm.jvp(bilinear_jvp(mm))     # forward mode
@mm.derivative
def _(grad, self, mat2, needs):
    return (grad.mm(_c(mat2).t()) if needs[0] else None), (_c(self).t().mm(grad) if needs[1] else None)


def _check_bmm(a, b):
    _check_ndim("bmm", 3, a, b)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {a.shape[0]} and {b.shape[0]}")
    check_same_dtype(a.dtype, b.dtype, "bmm")
    return matmul_shape(a.shape, b.shape, "bmm")


def _check_mv(a, v):
    if len(a.shape) != 2 or len(v.shape) != 1:
        raise RuntimeError(f"mv: expected a 2D matrix and a 1D vector, got {len(a.shape)}D and {len(v.shape)}D")
    check_same_dtype(a.dtype, v.dtype, "mv")
    return matmul_shape(a.shape, v.shape, "mv")


@register("mv", EXTERN, variants="function, method")
def mv(self, vec):
    a, v = np.asarray(self), np.asarray(vec)
    _check_mv(a, v)
    return a @ v


mv.meta_fn(lambda self, vec: (_check_mv(self, vec), self.dtype))


mv.jvp(bilinear_jvp(mv))     # forward mode
@mv.derivative
def _(grad, self, vec, needs):
    return (grad.outer(_c(vec)) if needs[0] else None), (_c(self).t().mv(grad) if needs[1] else None)


@register("bmm", EXTERN, variants="function, method", tags=(AUTOCAST_LOWER_PRECISION,))
def bmm(self, mat2):
    a, b = np.asarray(self), np.asarray(mat2)
    _check_bmm(a, b)
    return np.matmul(a, b)


bmm.meta_fn(lambda self, mat2: (_check_bmm(self, mat2), self.dtype))


bmm.jvp(bilinear_jvp(bmm))     # forward mode
@bmm.derivative
def _(grad, self, mat2, needs):
    return (grad.bmm(_c(mat2).transpose(1, 2)) if needs[0] else None), \
           (_c(self).transpose(1, 2).bmm(grad) if needs[1] else None)


def linear_shape(x, w, b):
    if not x or len(w) != 2:
        raise RuntimeError(f"linear: expected an input of at least 1D and a 2D weight "
                           f"(out_features, in_features), got shapes {list(x)} and {list(w)}")
    if x[-1] != w[-1]:
        rows = int(np.prod(x[:-1]))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x[-1]} and "
                           f"{w[1]}x{w[0]})")
    out = tuple(x[:-1]) + tuple(w[:-1])
    if b is not None and broadcast_shapes(b, out) != out:
        raise RuntimeError(f"linear: the bias of shape {list(b)} does not broadcast to the output shape {list(out)}")
    return out


@register("linear", EXTERN, variants="function", tags=(AUTOCAST_LOWER_PRECISION,))
def linear(input, weight, bias=None):
    x, w = np.asarray(input), np.asarray(weight)
    b = None if bias is None else np.asarray(bias)
    common = (w.ndim == 2 and x.ndim >= 1 and x.shape[-1] == w.shape[1] and x.dtype == w.dtype
              and (b is None or (b.dtype == x.dtype and b.shape == w.shape[:1])))
    if not common:      # the checks (and their errors) only off the common path
        linear_shape(x.shape, w.shape, None if b is None else b.shape)
        check_same_dtype(x.dtype, w.dtype, "linear")
        if b is not None:
            check_same_dtype(x.dtype, b.dtype, "linear")
    out = x @ w.T
    if b is not None:
        out = out + b
    return out


@linear.meta_fn
def _(input, weight, bias):
    check_same_dtype(input.dtype, weight.dtype, "linear")
    if bias is not None:
        check_same_dtype(input.dtype, bias.dtype, "linear")
    return linear_shape(input.shape, weight.shape, None if bias is None else bias.shape), input.dtype


@linear.derivative
def _(grad, input, weight, bias, needs):
    g_in = grad @ _c(weight) if needs[0] else None
    g_w = None
    if needs[1]:
        g2 = grad.reshape([-1, grad.shape[-1]])
        x2 = _c(input).reshape([-1, input.shape[-1]])
        g_w = g2.t().mm(x2)
    g_b = grad if needs[2] else None
    return g_in, g_w, g_b


def _check_addmm(self, mat1, mat2):
    _check_ndim("addmm", 2, mat1, mat2)
    check_same_dtype(mat1.dtype, mat2.dtype, "addmm")
    check_same_dtype(self.dtype, mat1.dtype, "addmm")
    out = matmul_shape(mat1.shape, mat2.shape, "addmm")
    if broadcast_shapes(self.shape, out) != out:
        raise RuntimeError(f"addmm: the input of shape {list(self.shape)} does not broadcast to the "
                           f"product's shape {list(out)}")
    return out


@register("addmm", EXTERN, variants="function", tags=(AUTOCAST_LOWER_PRECISION,))
def addmm(self, mat1, mat2, beta=1, alpha=1):
    _check_addmm(np.asarray(self), np.asarray(mat1), np.asarray(mat2))
    prod = np.asarray(mat1) @ np.asarray(mat2)
    # beta and alpha in the operands' dtype, as PyTorch converts them (0.5 is 0 for integers)
    if not (type(alpha) is int and alpha == 1):
        prod = prod * scalar_to(alpha, prod.dtype)
    if type(beta) is int and beta == 1:
        return self + prod
    beta = scalar_to(beta, prod.dtype)
    if beta == 0:           # as in PyTorch, self is then ignored: its NaN and inf do not propagate
        return np.broadcast_to(prod, np.broadcast_shapes(np.shape(self), prod.shape)).copy()
    return np.multiply(self, beta) + prod


@addmm.meta_fn
def _(self, mat1, mat2, beta, alpha):
    shape = _check_addmm(self, mat1, mat2)
    scalar_to(beta, mat1.dtype.np)
    scalar_to(alpha, mat1.dtype.np)
    return shape, mat1.dtype


@addmm.derivative
def _(grad, mat1, mat2, beta, alpha, needs):
    return ((grad * _c(beta)) if needs[0] else None,
            (grad.mm(_c(mat2).t()) * _c(alpha)) if needs[1] else None,
            (_c(mat1).t().mm(grad) * _c(alpha)) if needs[2] else None)


def _check_dot(a, b):
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(a.shape)}D and {len(b.shape)}D tensors")
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    check_same_dtype(a.dtype, b.dtype, "dot")
    return ()


@register("dot", EXTERN, variants="function, method")
def dot(self, other):
    a, b = np.asarray(self), np.asarray(other)
    _check_dot(a, b)
    return np.dot(a, b)


dot.meta_fn(lambda self, other: (_check_dot(self, other), self.dtype))


dot.jvp(bilinear_jvp(dot))     # forward mode
dot.derivative(lambda grad, self, other: (grad * _c(other), grad * _c(self)))


def _check_outer(a, b):
    for name, v in (("self", a), ("vec2", b)):
        if len(v.shape) != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {len(v.shape)}-D")
    return (a.shape[0], b.shape[0])


@register("outer", EXTERN, variants="function, method")
def outer(self, vec2):
    a, b = np.asarray(self), np.asarray(vec2)
    _check_outer(a, b)
    dt = _promoted(a, b)        # the operands in the result dtype first, as PyTorch computes
    return np.outer(a.astype(dt, copy=False), b.astype(dt, copy=False))


outer.meta_fn(lambda self, vec2: (_check_outer(self, vec2), _dtype.promote_types(self.dtype, vec2.dtype)))


outer.jvp(bilinear_jvp(outer))     # forward mode
@outer.derivative
def _(grad, self, vec2, needs):
    return ((grad * _c(vec2)).sum(1) if needs[0] else None,
            (grad * _c(self).unsqueeze(1)).sum(0) if needs[1] else None)


def einsum_shape(equation, shapes):
    """einsum's output shape; checks the equation against the operands' shapes."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(shapes):
        raise ValueError(f"einsum(): the equation {equation!r} names {len(specs)} operands but "
                         f"{len(shapes)} were given")
    sizes, ellipsis = {}, ()
    for k, (spec, shape) in enumerate(zip(specs, shapes)):
        shape = tuple(shape)
        pre, dots, post = spec.partition("...")
        n_ell = len(shape) - len(pre) - len(post)
        if n_ell < 0 or (not dots and n_ell):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(pre) + len(post)}) "
                               f"does not match the number of dimensions ({len(shape)}) for operand {k}"
                               + ("" if dots else " and no ellipsis was given"))
        if dots:
            ellipsis = broadcast_shapes(ellipsis, shape[len(pre):len(pre) + n_ell])
        for c, n in list(zip(pre, shape)) + list(zip(post, shape[len(pre) + n_ell:])):
            seen = sizes.get(c, n)
            if seen != n and 1 not in (seen, n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not "
                                   f"broadcast with previously seen size {seen}")
            sizes[c] = max(seen, n) if 1 in (seen, n) else n
    if not arrow:
        letters = lhs.replace(",", "").replace("...", "")
        out = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    pre, dots, post = out.partition("...")
    for c in pre + post:
        if c not in sizes:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    return tuple(sizes[c] for c in pre) + (ellipsis if dots else ()) + tuple(sizes[c] for c in post)


@register("einsum", EXTERN, tensor_lists=("operands",))
def einsum(equation, operands):
    arrays = [np.asarray(o) for o in operands]
    einsum_shape(equation, [a.shape for a in arrays])
    dt = _promoted(*arrays)     # the operands in the result dtype first, as PyTorch computes
    arrays = [a.astype(dt, copy=False) for a in arrays]
    return np.asarray(np.einsum(equation, *arrays, optimize=True)).astype(dt, copy=False)


@einsum.meta_fn
def _(equation, operands):
    dtype = operands[0].dtype
    for o in operands[1:]:
        dtype = _dtype.promote_types(dtype, o.dtype)
    return einsum_shape(equation, [o.shape for o in operands]), dtype


def explicit_einsum(equation, ndims):
    """(operand specs, output spec, unused letters) with '...' spelled out as letters
    and the implicit output (no '->') made explicit, as numpy defines it."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    specs = lhs.split(",")
    free = [c for c in string.ascii_letters if c not in eq]
    n_ell = max([n - len(s.replace("...", "")) for s, n in zip(specs, ndims) if "..." in s] or [0])
    ell, free = "".join(free[:n_ell]), free[n_ell:]
    specs = [s.replace("...", ell[n_ell - (n - len(s) + 3):]) if "..." in s else s for s, n in zip(specs, ndims)]
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(specs)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return specs, out, free


@einsum.derivative
def _(grad, equation, operands):
    from .factories import eye
    specs, out, free = explicit_einsum(equation, [o.ndim for o in operands])
    grads = []
    for i, spec in enumerate(specs):
        shape = operands[i].shape
        # a letter repeated within this operand (a diagonal): its later occurrences get
        # fresh letters tied to the first by an identity matrix
        target, extra_specs, extra_ops = [], [], []
        for c, size in zip(spec, shape):
            if c in target:
                new = free.pop(0)
                extra_specs.append(c + new)
                extra_ops.append(eye(size, dtype=grad.dtype))
                target.append(new)
            else:
                target.append(c)
        others = [specs[j] for j in range(len(specs)) if j != i]
        available = set(out).union(*others, *extra_specs)
        kept = "".join(c for c in target if c in available)
        sub = ",".join([out] + others + extra_specs) + "->" + kept
        g = einsum(sub, [grad] + [_c(operands[j]) for j in range(len(specs)) if j != i] + extra_ops)
        if len(kept) != len(target):
            # letters only in this operand were summed away in forward: broadcast back along them
            g = g.reshape([s if c in available else 1 for c, s in zip(target, shape)]).expand(shape)
        grads.append(g)
    return None, grads
