"""Extern ops: matrix products, computed by numpy/BLAS (matmul, mm, bmm,
linear, addmm, dot, outer, einsum)."""
import numpy as np

from .registry import register, EXTERN


def _check_matmul(a, b, name):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to {name} need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
        sb = "x".join(map(str, b.shape))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")


@register("matmul", EXTERN)
def matmul(self, other):
    a, b = np.asarray(self), np.asarray(other)
    _check_matmul(a, b, "matmul")
    return np.matmul(a, b)


@matmul.derivative
def _(grad, self, other, needs):
    a, b = self, other
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


@register("mm", EXTERN)
def mm(self, mat2):
    a, b = np.asarray(self), np.asarray(mat2)
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {a.ndim}D and {b.ndim}D")
    _check_matmul(a, b, "mm")
    return a @ b


@mm.derivative
def _(grad, self, mat2, needs):
    return (grad.mm(mat2.t()) if needs[0] else None), (self.t().mm(grad) if needs[1] else None)


@register("bmm", EXTERN)
def bmm(self, mat2):
    a, b = np.asarray(self), np.asarray(mat2)
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got {a.ndim}D and {b.ndim}D)")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {a.shape[0]} and {b.shape[0]}")
    _check_matmul(a, b, "bmm")
    return np.matmul(a, b)


@bmm.derivative
def _(grad, self, mat2, needs):
    return (grad.bmm(mat2.transpose(1, 2)) if needs[0] else None), \
           (self.transpose(1, 2).bmm(grad) if needs[1] else None)


@register("linear", EXTERN)
def linear(input, weight, bias=None):
    x, w = np.asarray(input), np.asarray(weight)
    if x.shape[-1] != w.shape[-1]:
        rows = int(np.prod(x.shape[:-1]))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    out = x @ w.T
    if bias is not None:
        out += bias
    return out


@linear.derivative
def _(grad, input, weight, bias, needs):
    g_in = grad @ weight if needs[0] else None
    g_w = None
    if needs[1]:
        g2 = grad.reshape([-1, grad.shape[-1]])
        x2 = input.reshape([-1, input.shape[-1]])
        g_w = g2.t().mm(x2)
    g_b = grad if needs[2] else None
    return g_in, g_w, g_b


@register("addmm", EXTERN)
def addmm(self, mat1, mat2, beta=1, alpha=1):
    prod = np.asarray(mat1) @ np.asarray(mat2)
    return (self if beta == 1 else np.multiply(self, beta)) + (prod if alpha == 1 else prod * alpha)


@addmm.derivative
def _(grad, mat1, mat2, beta, alpha, needs):
    return ((grad * beta) if needs[0] else None,
            (grad.mm(mat2.t()) * alpha) if needs[1] else None,
            (mat1.t().mm(grad) * alpha) if needs[2] else None)


@register("dot", EXTERN)
def dot(self, other):
    a, b = np.asarray(self), np.asarray(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape != b.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    return np.dot(a, b)


dot.derivative(lambda grad, self, other: (grad * other, grad * self))


@register("outer", EXTERN)
def outer(self, vec2):
    return np.outer(self, vec2)


outer.derivative(lambda grad, self, vec2: (grad @ vec2, grad.t() @ self))


@register("einsum", EXTERN, tensor_lists=("operands",))
def einsum(equation, operands):
    return np.einsum(equation, *operands, optimize=True)


@einsum.derivative
def _(grad, equation, operands):
    eq = equation.replace(" ", "")
    if "..." in eq:
        raise NotImplementedError("einsum backward with '...' is not supported yet")
    lhs, _, out = eq.partition("->")
    ins = lhs.split(",")
    if not _:
        letters = sorted(c for c in set(lhs.replace(",", "")) if lhs.replace(",", "").count(c) == 1)
        out = "".join(letters)
    grads = []
    for i, spec in enumerate(ins):
        others = [ins[j] for j in range(len(ins)) if j != i]
        sub = ",".join([out] + others) + "->" + spec
        if len(set(spec)) != len(spec):
            raise NotImplementedError("einsum backward with a repeated index in one operand is not supported yet")
        # indices of spec that appear nowhere else are summed in forward: broadcast them back
        missing = [c for c in spec if c not in out and all(c not in o for o in others)]
        if missing:
            shape = operands[i].shape
            sub_spec = "".join(c for c in spec if c not in missing)
            sub = ",".join([out] + others) + "->" + sub_spec
            g = einsum(sub, [grad] + [operands[j] for j in range(len(ins)) if j != i])
            view_shape = [1 if c in missing else s for c, s in zip(spec, shape)]
            grads.append(g.reshape(view_shape).expand(shape))
        else:
            grads.append(einsum(sub, [grad] + [operands[j] for j in range(len(ins)) if j != i]))
    return None, grads
