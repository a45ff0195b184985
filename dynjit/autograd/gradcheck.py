"""gradcheck / gradgradcheck: compare analytical gradients with finite differences (float64).

Also checks, as PyTorch's does, that backward is reentrant (two runs agree within
`nondet_tol`), that outputs which do not require grad really do not depend on the
inputs, and that perturbing the inputs leaves output shapes and dtypes alone.
`get_numerical_jacobian` / `get_analytical_jacobian` are PyTorch's deprecated helpers.

Complex numbers are checked as PyTorch checks them: a function with complex outputs is
checked twice, on the imaginary and then the real part of those outputs ("While
considering the imaginary part of complex outputs only, ..."); the derivative with
respect to a complex input z = x + iy is compared as d/dx + i d/dy, which is what
backward gives under PyTorch's convention for a real output. Forward AD splits complex
inputs instead: once varying their imaginary parts, once their real parts.
"""
import warnings

import numpy as np

from ..ops import sparse as _sparse
from ..tensor import Tensor


class GradcheckError(RuntimeError):
    """A gradient check failed (raised unless raise_exception=False)."""


def _flat_outputs(out):
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _numerical_jacobian(fn, inputs, wrt, eps, reference=None):
    """J[k][j] = d out_j / d input_k (out_size x in_size), by central differences.

    fn runs in the caller's grad mode, as it does for the analytical pass (a
    function may check, say, that an in-place op made a tensor require grad).
    With `reference` outputs, a perturbed call must give the same shapes and dtypes."""
    jac = []
    for t in wrt:
        data = t._data
        cols = []
        positions = None
        if _sparse.is_sparse_data(data):     # a sparse input: its specified values vary
            positions = data.value_positions()
            data = data.values
        flat = data.flat     # writes through for non-contiguous inputs too
        steps = (eps, eps * 1j) if data.dtype.kind == "c" else (eps,)
        for i in range(data.size):
            orig = flat[i]
            col = None
            for step, weight in zip(steps, (1, 1j)):
                flat[i] = orig + step
                plus = _values(fn(*inputs), reference)
                flat[i] = orig - step
                minus = _values(fn(*inputs), reference)
                flat[i] = orig
                part = [(p - m).reshape(-1) / (2 * eps) * weight for p, m in zip(plus, minus)]
                col = part if col is None else [a + b for a, b in zip(col, part)]
            cols.append(col)
        n_out = len(cols[0]) if cols else len(_flat_outputs(fn(*inputs)))
        if positions is not None:
            jac.append([_scatter_columns(cols, j, positions, t._data.size) for j in range(n_out)])
            continue
        jac.append([np.stack([c[j] for c in cols], axis=1) if cols else None for j in range(n_out)])
    return jac


def _scatter_columns(cols, j, positions, numel):
    """The Jacobian of output j over every element of a sparse input: the columns of its
    specified values at their dense positions, zero elsewhere (masked semantics)."""
    if not cols:
        return None
    out = np.zeros((cols[0][j].shape[0], numel), dtype=cols[0][j].dtype)
    for c, p in zip(cols, positions):
        out[:, p] = c[j]
    return out


def _values(out, reference):
    """The outputs' values, copied now (an output may alias a perturbed input)."""
    outs = _flat_outputs(out)
    if reference is not None:
        _check_same_meta(reference, outs)
    return [o._data.astype(np.complex128 if o._data.dtype.kind == "c" else np.float64, copy=True)
            for o in outs]


def _check_same_meta(reference, perturbed):
    for a, b in zip(reference, perturbed):
        if a._data.shape != b._data.shape:
            raise AssertionError("Expected `func` to return outputs with the same shape when inputs "
                                 f"are perturbed by `eps`, but got: shapes {tuple(a.shape)} and "
                                 f"{tuple(b.shape)}.")
        if a.dtype is not b.dtype:
            raise AssertionError("Expected `func` to return outputs with the same dtype when inputs "
                                 f"are perturbed by `eps`, but got: dtypes {a.dtype.name} and "
                                 f"{b.dtype.name}.")


def _analytical_jacobian(outputs, wrt):
    from . import grad as autograd_grad
    jac = [[None] * len(outputs) for _ in wrt]
    for j, out in enumerate(outputs):
        size = out._data.size
        rows = [np.zeros((size, t._data.size), dtype=np.complex128 if t._data.dtype.kind == "c" else np.float64)
                for t in wrt]
        if out._requires_grad and out._data.dtype.kind in "fc":
            for r in range(size):
                g = np.zeros(out._data.shape, dtype=out.dtype.np)
                g.reshape(-1)[r] = 1
                grads = autograd_grad([out], wrt, [Tensor._make(g)], retain_graph=True, allow_unused=True)
                for k, gk in enumerate(grads):
                    if gk is not None:
                        rows[k][r] = _dense_data(gk).reshape(-1)
        for k in range(len(wrt)):
            jac[k][j] = rows[k]
    return jac


def _validate_inputs(inputs):
    wrt = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of the them have requires_grad=True.")
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t._requires_grad):
            continue
        if t.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point "
                          "or complex. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point.", UserWarning, stacklevel=3)
        if _sparse.is_sparse_data(t._data):
            continue
        if t._data.size and any(st == 0 and n > 1 for st, n in zip(t._data.strides, t._data.shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports "
                               "inputs that are non-overlapping to be able to compute the numerical "
                               "gradients correctly. You should call .contiguous on the input before "
                               "passing it to gradcheck.")
    return wrt


def _dense_data(t):
    return t._data.to_dense() if _sparse.is_sparse_data(t._data) else t._data


def _check_outputs(outputs):
    if any(_sparse.is_sparse_data(o._data) for o in outputs):
        raise ValueError("Sparse output is not supported at gradcheck yet. Please call "
                         "to_dense(masked_grad=...) on the output of fn for gradcheck.")


def _densify(inputs):
    """PyTorch's non-masked semantics: each sparse input with every element specified
    (zeros where it had none), so that finite differences vary all of them."""
    out = []
    for t in inputs:
        if isinstance(t, Tensor) and _sparse.is_sparse_data(t._data):
            t = Tensor._make(_sparse.densified(t._data)).requires_grad_(t._requires_grad)
        out.append(t)
    return tuple(out)


def _check_batched_grad_of_sparse(inputs):
    """check_batched_grad runs the backward under vmap, which has no sparse tensors (as in
    PyTorch): a sparse input fails it."""
    if any(isinstance(t, Tensor) and _sparse.is_sparse_data(t._data) for t in inputs):
        raise GradcheckError("While computing batched gradients, got: vmap: dynjit's vmap does not "
                             "support sparse tensors\n\n" + FAILED_BATCHED_GRAD_MSG)


FAILED_BATCHED_GRAD_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_grad=False` as a keyword argument.
"""


def _check(func, inputs, wrt, eps, atol, rtol, nondet_tol, check_forward_ad=False,
           check_backward_ad=True, numerical_inputs=None):
    """`numerical_inputs`: the inputs finite differences vary (sparse ones densified under
    non-masked semantics); backward runs on `inputs` themselves, as in PyTorch."""
    outputs = _flat_outputs(func(*inputs))
    _check_outputs(outputs)
    num_inputs = inputs if numerical_inputs is None else numerical_inputs
    num_wrt = wrt if numerical_inputs is None else [t for t in num_inputs
                                                    if isinstance(t, Tensor) and t._requires_grad]
    complex_out = [j for j, o in enumerate(outputs) if o._data.dtype.kind == "c"]
    complex_in = [i for i, t in enumerate(inputs)
                  if isinstance(t, Tensor) and t._requires_grad and t._data.dtype.kind == "c"]
    numerical = None
    if not (complex_out and check_backward_ad) and not (complex_in and check_forward_ad):
        numerical = _numerical_jacobian(func, num_inputs, num_wrt, eps, reference=outputs)
    if check_backward_ad:
        if complex_out:
            for part in ("imaginary", "real"):
                fn = _output_part(func, part)
                outs = _flat_outputs(fn(*inputs))
                num = _numerical_jacobian(fn, num_inputs, num_wrt, eps, reference=outs)
                prefix = f"While considering the {part} part of complex outputs only, "
                _check_backward_ad(fn, inputs, wrt, outs, num, atol, rtol, nondet_tol,
                                   {j: prefix for j in complex_out})
        else:
            if numerical is None:
                numerical = _numerical_jacobian(func, num_inputs, num_wrt, eps, reference=outputs)
            _check_backward_ad(func, inputs, wrt, outputs, numerical, atol, rtol, nondet_tol)
    if check_forward_ad:        # (after backward, as PyTorch checks them)
        if complex_in:
            for part in ("imaginary", "real"):
                fn, ins = _input_part(func, inputs, complex_in, part)
                outs = _flat_outputs(fn(*ins))
                wrt_part = [t for t in ins if isinstance(t, Tensor) and t._requires_grad]
                num = _numerical_jacobian(fn, ins, wrt_part, eps, reference=outs)
                prefix = f"While considering the {part} part of complex inputs only, "
                _check_forward_ad(fn, ins, num, outs, atol, rtol, {i: prefix for i in complex_in})
        else:
            if numerical is None:
                numerical = _numerical_jacobian(func, num_inputs, num_wrt, eps, reference=outputs)
            _check_forward_ad(func, inputs, numerical, outputs, atol, rtol)


def _output_part(func, part):
    """func with its complex outputs replaced by their real or imaginary part."""
    def fn(*inputs):
        out = func(*inputs)
        pick = (lambda o: o.imag) if part == "imaginary" else (lambda o: o.real)
        if isinstance(out, Tensor):
            return pick(out) if out._data.dtype.kind == "c" else out
        return type(out)(pick(o) if isinstance(o, Tensor) and o._data.dtype.kind == "c" else o
                         for o in out)
    return fn


def _input_part(func, inputs, positions, part):
    """(fn, ins): the complex inputs at `positions` replaced by real tensors holding their
    real or imaginary part (the part that varies); fn rebuilds each complex input from it
    and the other, fixed, part and calls func."""
    from ..ops.registry import registry
    fixed, ins = {}, list(inputs)
    for i in positions:
        t = inputs[i]
        re, im = (Tensor._make(np.ascontiguousarray(t._data.real)),
                  Tensor._make(np.ascontiguousarray(t._data.imag)))
        varying, fixed[i] = (im, re) if part == "imaginary" else (re, im)
        ins[i] = varying.requires_grad_(True)

    def fn(*args):
        args = list(args)
        for i, other in fixed.items():
            pair = (other, args[i]) if part == "imaginary" else (args[i], other)
            args[i] = registry["complex"](*pair)
        return func(*args)
    return fn, ins


def _check_backward_ad(func, inputs, wrt, outputs, numerical, atol, rtol, nondet_tol, prefixes=None):
    for j, out in enumerate(outputs):
        if out._requires_grad:
            continue
        # an output that does not require grad must not depend on the inputs
        for k in range(len(wrt)):
            n = numerical[k][j]
            if n is not None and not np.allclose(n, 0, rtol=rtol, atol=atol):
                raise GradcheckError("Numerical gradient for function expected to be zero")
    analytical = _analytical_jacobian(outputs, wrt)
    for k in range(len(wrt)):
        for j in range(len(outputs)):
            a, n = analytical[k][j], numerical[k][j]
            if n is None or not outputs[j]._requires_grad:
                continue
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                prefix = (prefixes or {}).get(j, "")
                raise GradcheckError(f"{prefix}Jacobian mismatch for output {j} with respect to input {k},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
    again = _analytical_jacobian(outputs, wrt)
    for k in range(len(wrt)):
        for j in range(len(outputs)):
            if np.abs(analytical[k][j] - again[k][j]).max(initial=0.0) > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and grad_output "
                    "multiple times gives different values, although analytical gradient matches "
                    f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}.")


def _forward_inputs(inputs):
    """The inputs as forward AD's check passes them: tensors detached (not requiring grad)."""
    return [t.detach() if isinstance(t, Tensor) else t for t in inputs]


def _diff_positions(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]


def _forward_jacobian(func, inputs):
    """J[k][j] = d out_j / d input_k (out_size x in_size), one forward-mode pass per
    element of each differentiable input (its one-hot tangent, the others' zero)."""
    from . import forward_ad as fwAD
    jac = []
    for i in _diff_positions(inputs):
        size = inputs[i]._data.size
        cols = []
        for e in range(size):
            with fwAD.dual_level():
                ins = _forward_inputs(inputs)
                for p in _diff_positions(inputs):    # every differentiable input is dual
                    tangent = np.zeros(inputs[p]._data.shape, dtype=inputs[p].dtype.np)
                    if p == i:
                        tangent.reshape(-1)[e] = 1
                    ins[p] = fwAD.make_dual(ins[p], Tensor._make(tangent))
                outs = _flat_outputs(func(*ins))
                col = []
                for o in outs:
                    t = fwAD.unpack_dual(o).tangent
                    col.append(np.zeros(o._data.size) if t is None
                               else t._data.astype(np.complex128 if t._data.dtype.kind == "c"
                                                   else np.float64).reshape(-1))
            cols.append(col)
        jac.append(cols)
    return jac


def _check_forward_ad(func, inputs, numerical, outputs, atol, rtol, prefixes=None):
    forward = _forward_jacobian(func, inputs)
    for k, (i, cols) in enumerate(zip(_diff_positions(inputs), forward)):
        for j in range(len(outputs)):
            n = numerical[k][j]
            if n is None or not cols:
                continue
            a = np.stack([c[j] for c in cols], axis=1)
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                prefix = (prefixes or {}).get(i, "")
                raise GradcheckError(f"{prefix}Jacobian computed with forward mode mismatch for output {j} "
                                     f"with respect to input {i},\nnumerical:{n}\nanalytical:{a}\n")


def _dual_call(func, inputs, tangents):
    """The output tangents (zeros where none) of func at `inputs`, the inputs with a
    tangent in `tangents` (position -> tensor) made dual, inside one dual level."""
    from . import forward_ad as fwAD
    with fwAD.dual_level():
        ins = _forward_inputs(inputs)
        for p, t in tangents.items():
            ins[p] = fwAD.make_dual(ins[p], t)
        res = []
        for o in _flat_outputs(func(*ins)):
            tan = fwAD.unpack_dual(o).tangent
            res.append(tan if tan is not None else o * 0)
        return tuple(res)


_vmap = None    # dynjit.func.vmap: func sits above autograd and installs it (install_vmap)


def install_vmap(vmap):
    global _vmap
    _vmap = vmap


def _check_batched_forward_grad(func, inputs, atol, rtol, batch_size=2):
    """Forward AD under vmap: per differentiable input, a batch of random tangents through
    one dual level (vmap) must give what each tangent gives alone (PyTorch's check: one
    vmapped call and one call per tangent)."""
    vmap = _vmap
    rng = np.random.default_rng(0)
    for i in _diff_positions(inputs):
        shape = inputs[i]._data.shape
        batch = Tensor._make(rng.standard_normal((batch_size,) + shape).astype(inputs[i].dtype.np))
        try:
            batched = vmap(lambda t: _dual_call(func, inputs, {i: t}))(batch)
        except Exception as e:     # (an op without a batching rule, ...)
            if "random operation" in str(e):
                raise RuntimeError("vmap: We do not yet support calling random operations inside "
                                   "of vmap. Please perform random operations outside of vmap as "
                                   "a workaround") from e
            raise GradcheckError(f"While computing batched forward gradients, got: {e}") from e
        for b in range(batch_size):
            alone = _dual_call(func, inputs, {i: Tensor._make(batch._data[b].copy())})
            for j, (got, want) in enumerate(zip(batched, alone)):
                if not np.allclose(got._data[b], want._data, rtol=rtol, atol=atol, equal_nan=True):
                    raise GradcheckError(f"Batched forward grad mismatch for output {j} with respect "
                                         f"to input {i},\nbatched:{got._data[b]}\nalone:{want._data}\n")


def _check_undefined_forward(func, inputs):
    """Forward AD must cope with an input without a tangent: per differentiable input, the
    others get random tangents and this one a zero tangent ("regular zero") or none at all
    ("efficient zero", as PyTorch's undefined tangent); both must give the same output
    tangents."""
    rng = np.random.default_rng(0)
    positions = _diff_positions(inputs)
    tangents = {p: Tensor._make(rng.standard_normal(inputs[p]._data.shape).astype(inputs[p].dtype.np))
                for p in positions}
    for i in positions:
        others = {p: t for p, t in tangents.items() if p != i}
        zero = Tensor._make(np.zeros(inputs[i]._data.shape, dtype=inputs[i].dtype.np))
        regular = _dual_call(func, inputs, {**others, i: zero})
        undefined = _dual_call(func, inputs, others)
        for k, (a, b) in enumerate(zip(regular, undefined)):
            if not np.allclose(a._data, b._data, equal_nan=True):
                raise GradcheckError(f"Mismatch in tangent values for output with index: {k} when "
                                     f"input: {i} has an undefined tangent value.  Got: {b._data} but "
                                     f"expected: {a._data}")


def _warn_undefined_grad_check():
    warnings.warn("Backwards compatibility: New undefined gradient support checking feature is "
                  "enabled by default, but it may break existing callers of this function. If this "
                  "is true for you, you can call this function with \"check_undefined_grad=False\" "
                  "to disable the feature", UserWarning, stacklevel=4)


_UNDEFINED_NOTE = ('Please look at "Notes about undefined output gradients" in '
                   '"tools/autograd/derivatives.yaml"')


def _check_undefined_grad(func, inputs, wrt):
    """Backward must cope with undefined (None) output gradients: with all of them
    undefined, and (several outputs) with one at a time undefined, it must run and give
    input gradients that are None or zero."""
    from . import grad as autograd_grad
    from ._functions import UndefinedGrad

    def differentiable():
        return [o for o in _flat_outputs(func(*inputs)) if o._requires_grad]

    def run(outputs):
        grad_outputs = [Tensor._make(np.zeros(o._data.shape, dtype=o.dtype.np)) for o in outputs]
        try:
            grads = autograd_grad(outputs, wrt, grad_outputs, allow_unused=True)
        except RuntimeError as e:
            _warn_undefined_grad_check()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 + _UNDEFINED_NOTE) from e
        for g in grads:
            if g is not None and np.any(_dense_data(g) != 0):
                _warn_undefined_grad_check()
                raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                     "output grads are undefined or zero. " + _UNDEFINED_NOTE)

    undefined = UndefinedGrad()
    outputs = differentiable()
    if not outputs:
        return
    run([undefined(o) for o in outputs])
    if len(outputs) > 1:
        for k in range(len(outputs)):
            run([undefined(o) if i == k else o for i, o in enumerate(differentiable())])


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False, check_batched_grad=False,
              check_grad_dtypes=False, masked=None, check_forward_ad=False, check_backward_ad=True,
              check_batched_forward_grad=False):
    """True if the analytical Jacobian of `func` at `inputs` matches finite differences.

    A failed check raises GradcheckError, or returns False with raise_exception=False;
    invalid inputs, and errors raised by `func` itself, always raise. (`fast_mode`
    is accepted and runs the full check.) With `check_undefined_grad`, backward must
    also cope with undefined (None) output gradients. `check_forward_ad` also compares
    the Jacobian forward-mode AD gives (dynjit.autograd.forward_ad), a column per input
    element; `check_backward_ad=False` skips the reverse-mode comparison;
    `check_batched_forward_grad` (with check_forward_ad) also runs a batch of tangents per
    input under vmap and compares with each alone. Sparse inputs: with `masked=True` only
    their specified values vary, else (PyTorch's default) every element, as if specified;
    a sparse output is an error (call to_dense on it)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be "
                             "True")
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = _validate_inputs(inputs)
    numerical_inputs = None if masked else _densify(inputs)
    try:
        _check(func, inputs, wrt, eps, atol, rtol, nondet_tol, check_forward_ad, check_backward_ad,
               numerical_inputs)
        if check_batched_grad and check_backward_ad:
            _check_batched_grad_of_sparse(inputs)
        if check_undefined_grad and check_backward_ad:
            _check_undefined_grad(func, inputs, wrt)
        if check_undefined_grad and check_forward_ad:
            _check_undefined_forward(func, inputs)
        if check_batched_forward_grad and check_forward_ad:
            _check_batched_forward_grad(func, inputs, atol, rtol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_batched_grad=False, fast_mode=False, masked=False):
    """gradcheck of the gradient: checks that backward is itself differentiable."""
    from . import grad as autograd_grad
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    outputs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor._make(_random_like(rng, o)).requires_grad_(True)
                             for o in outputs if o._requires_grad)
    else:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n_in = len(inputs)
    diff_in = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]

    def first_grad(*args):
        from .grad_mode import enable_grad
        with enable_grad():     # the numerical Jacobian may call this under no_grad
            ins, gos = args[:n_in], args[n_in:]
            outs = [o for o in _flat_outputs(func(*ins)) if o._requires_grad]
            wrt = [ins[i] for i in diff_in]
            grads = autograd_grad(outs, wrt, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad)


def _random_like(rng, t):
    """Standard normal values of t's shape, float64 or (for a complex t) complex128."""
    values = rng.standard_normal(t._data.shape)
    if t._data.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(t._data.shape)
    return values


_PRIVATE_API = ("`{}` was part of PyTorch's private API and not meant to be exposed. We are "
                "deprecating it and it will be removed in a future version of PyTorch. If you have "
                "a specific use for this or feature request for this to be a stable API, please "
                "file us an issue at https://github.com/pytorch/pytorch/issues/new")


def _jacobian_tensor(matrix):
    """Our (out_size, in_size) matrix as PyTorch's (in_size, out_size) tensor."""
    return Tensor._make(np.ascontiguousarray(matrix.T))


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Deprecated: per differentiable input (or just `target`), the Jacobian of fn's first
    output, shaped (input numel, output numel). fn takes the tuple of inputs."""
    warnings.warn(_PRIVATE_API.format("get_numerical_jacobian"), FutureWarning, stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_numerical_jacobian no longer supports "
                         "values of grad_out != 1.0.")
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [target] if target is not None else [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    jac = _numerical_jacobian(lambda *ins: fn(ins), inputs, wrt, eps)
    return tuple(_jacobian_tensor(per_out[0]) for per_out in jac)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Deprecated: (Jacobians of `output` per differentiable input, shaped (input numel,
    output numel); whether backward is reentrant; sizes ok; types ok)."""
    warnings.warn(_PRIVATE_API.format("get_analytical_jacobian"), FutureWarning, stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_analytical_jacobian no longer supports "
                         "values of grad_out != 1.0.")
    wrt = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    first = _analytical_jacobian([output], wrt)
    second = _analytical_jacobian([output], wrt)
    reentrant = all(np.abs(a[0] - b[0]).max(initial=0.0) <= nondet_tol for a, b in zip(first, second))
    return tuple(_jacobian_tensor(per_out[0]) for per_out in first), reentrant, True, True
