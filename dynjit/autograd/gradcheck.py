"""gradcheck / gradgradcheck: compare analytical gradients with finite differences (float64)."""
import numpy as np


class GradcheckError(RuntimeError):
    pass


def _tensor_cls():
    from ..tensor import Tensor
    return Tensor


def _flat_outputs(out):
    Tensor = _tensor_cls()
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _numerical_jacobian(fn, inputs, wrt, eps):
    """J[k][j][i] = d out_j / d input_k[i], by central differences.

    fn runs in the caller's grad mode, as it does for the analytical pass (a
    function may check, say, that an in-place op made a tensor require grad)."""
    jac = []
    for t in wrt:
        data = t._data
        cols = []
        flat = data.flat     # writes through for non-contiguous inputs too
        for i in range(data.size):
            orig = flat[i]
            flat[i] = orig + eps
            plus = [o._data.astype(np.float64).copy() for o in _flat_outputs(fn(*inputs))]
            flat[i] = orig - eps
            minus = [o._data.astype(np.float64).copy() for o in _flat_outputs(fn(*inputs))]
            flat[i] = orig
            cols.append([(p - m).reshape(-1) / (2 * eps) for p, m in zip(plus, minus)])
        # cols[i][j] -> per output j a matrix (out_size, in_size)
        n_out = len(cols[0]) if cols else len(_flat_outputs(fn(*inputs)))
        per_out = []
        for j in range(n_out):
            if cols:
                per_out.append(np.stack([c[j] for c in cols], axis=1))
            else:
                per_out.append(None)
        jac.append(per_out)
    return jac


def _analytical_jacobian(outputs, wrt):
    from . import grad as autograd_grad
    Tensor = _tensor_cls()
    jac = [[None] * len(outputs) for _ in wrt]
    for j, out in enumerate(outputs):
        size = out._data.size
        rows = [np.zeros((size, t._data.size)) for t in wrt]
        if out._requires_grad and out.dtype.is_floating_point:
            for r in range(size):
                g = np.zeros(out._data.shape, dtype=out.dtype.np)
                g.reshape(-1)[r] = 1
                grads = autograd_grad([out], wrt, [Tensor._make(g)], retain_graph=True, allow_unused=True)
                for k, gk in enumerate(grads):
                    if gk is not None:
                        rows[k][r] = gk._data.reshape(-1)
        for k in range(len(wrt)):
            jac[k][j] = rows[k]
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False, check_batched_grad=False,
              check_grad_dtypes=False, masked=None):
    """True if the analytical Jacobian of `func` at `inputs` matches finite differences."""
    Tensor = _tensor_cls()
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    wrt = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    if not wrt:
        msg = "gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True."
        if raise_exception:
            raise ValueError(msg)
        return False
    for t in wrt:
        if t.dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{inputs.index(t)} requires gradient and is not a double precision "
                          "floating point. This check will likely fail if all the inputs are not of "
                          "double precision floating point.", UserWarning, stacklevel=2)
    outputs = _flat_outputs(func(*inputs))
    analytical = _analytical_jacobian(outputs, wrt)
    numerical = _numerical_jacobian(func, inputs, wrt, eps)
    for k in range(len(wrt)):
        for j in range(len(outputs)):
            a, n = analytical[k][j], numerical[k][j]
            if n is None:
                continue
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                msg = (f"Jacobian mismatch for output {j} with respect to input {k},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_batched_grad=False, fast_mode=False, masked=False):
    """gradcheck of the gradient: checks that backward is itself differentiable."""
    from . import grad as autograd_grad
    Tensor = _tensor_cls()
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    outputs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor._make(rng.standard_normal(o._data.shape)).requires_grad_(True)
                             for o in outputs if o._requires_grad)
    else:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n_in = len(inputs)
    diff_in = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]

    def first_grad(*args):
        from .grad_mode import enable_grad
        with enable_grad():     # the numerical Jacobian calls this under no_grad
            ins, gos = args[:n_in], args[n_in:]
            outs = [o for o in _flat_outputs(func(*ins)) if o._requires_grad]
            wrt = [ins[i] for i in diff_in]
            grads = autograd_grad(outs, wrt, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
