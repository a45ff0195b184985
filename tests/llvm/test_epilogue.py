"""Matmul epilogues: `linear(x, w, b)` lowers to numpy's `x @ w.T` and the bias add runs in
the kernel of what reads the result (an activation, a residual add, the loss's row pass),
so the product is written once and read once. For 1-D and 2-D inputs the product and the
bias add are eager's bit for bit (the same BLAS call, then the same float add); a batched
input's rows are multiplied as one matrix (one BLAS call where numpy loops over the batch),
which BLAS may round differently; what follows the product is the kernels' math (exp, erf
within their ulp bounds)."""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit import nn
from dynjit.fx import make_fx

from backends.llvm import compile_graph

DTYPES = [np.float32, np.float64]


def _compiled(f, *inputs):
    return compile_graph(make_fx(f)(*inputs), list(inputs))


def _inputs(dtype, x_shape, d_out, seed=0):
    rng = np.random.default_rng(seed)
    d_in = x_shape[-1]
    x = dynjit.tensor(rng.standard_normal(x_shape).astype(dtype))
    w = dynjit.tensor((rng.standard_normal((d_out, d_in)) / np.sqrt(d_in)).astype(dtype))
    b = dynjit.tensor(rng.standard_normal(d_out).astype(dtype))
    return x, w, b


EPILOGUES = {
    "relu": lambda x, w, b: F.relu(F.linear(x, w, b)),
    "gelu": lambda x, w, b: F.gelu(F.linear(x, w, b)),
    "tanh_gelu": lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"),
    "bias_only": lambda x, w, b: F.linear(x, w, b),
    "residual": lambda x, w, b: F.linear(x, w, b) + x[..., :w.shape[0]] * 0.5,
    "softmax": lambda x, w, b: F.linear(x, w, b).softmax(-1),
}


EXACT = ("relu", "bias_only", "residual")     # no math library call after the product


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(EPILOGUES))
@pytest.mark.parametrize("x_shape", [(33, 20), (3, 7, 20), (20,)])
def test_linear_epilogue_equals_eager(dtype, name, x_shape):
    f = EPILOGUES[name]
    x, w, b = _inputs(dtype, x_shape, 12)
    fn = _compiled(f, x, w, b)
    out, want = fn(x, w, b), f(x, w, b)
    assert out._data.dtype == want._data.dtype and out.shape == want.shape
    if name in EXACT and len(x_shape) <= 2:
        np.testing.assert_array_equal(out._data, want._data)
    else:
        tol = dict(rtol=4e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(out._data, want._data, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_and_activation_are_one_kernel_after_the_product(dtype):
    x, w, b = _inputs(dtype, (64, 48), 32)
    fn = _compiled(EPILOGUES["relu"], x, w, b)
    assert fn.stats["kernels"] == 1 and fn.stats["fallback"] == 0
    # one numpy product, then the kernel reads it and the bias: no `out + b` pass of its own
    assert fn.source.count("_ext") == 1
    x3 = dynjit.tensor(np.random.default_rng(1).standard_normal((4, 16, 48)).astype(dtype))
    fn3 = _compiled(EPILOGUES["relu"], x3, w, b)
    assert fn3.stats["kernels"] == 1 and fn3.source.count("_ext") == 1    # one 2-D product
    kernel = fn.kernels[0]
    assert len([o for o in kernel.operands if not o.is_output]) == 2


def test_linear_without_bias_and_mixed_dtypes_stay_eager():
    x, w, _ = _inputs(np.float32, (8, 5), 4)
    f = lambda x, w: F.relu(F.linear(x, w))      # noqa: E731
    fn = _compiled(f, x, w)
    np.testing.assert_array_equal(fn(x, w)._data, f(x, w)._data)
    b64 = dynjit.tensor(np.ones(4))
    with pytest.raises(RuntimeError):
        F.linear(x, w, b64)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_mlp_block_forward_and_gradients_compiled_equal_eager(backend, dtype):
    """A transformer MLP block, x + fc2(gelu(fc1(x))), then a mean: values and gradients of
    every parameter and of the input, compiled and eager."""
    def make():
        rng = np.random.default_rng(7)
        fc1, fc2 = nn.Linear(16, 64), nn.Linear(64, 16)
        if dtype == np.float64:
            fc1, fc2 = fc1.double(), fc2.double()
        with dynjit.no_grad():
            for p in (*fc1.parameters(), *fc2.parameters()):
                p.copy_(dynjit.tensor(rng.standard_normal(p.shape).astype(dtype) * 0.2))
        x = dynjit.tensor(rng.standard_normal((4, 6, 16)).astype(dtype), requires_grad=True)
        params = [*fc1.parameters(), *fc2.parameters()]

        def block(x):
            return (x + fc2(F.gelu(fc1(x)))).square().mean()
        return block, x, params

    f_e, x_e, p_e = make()
    f_c, x_c, p_c = make()
    f_c = dynjit.compile(f_c, backend=backend)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for _ in range(2):
        le, lc = f_e(x_e), f_c(x_c)
        np.testing.assert_allclose(lc.item(), le.item(), **tol)
        ge = dynjit.autograd.grad(le, [x_e, *p_e])
        gc = dynjit.autograd.grad(lc, [x_c, *p_c])
        for a, b in zip(gc, ge):
            np.testing.assert_allclose(a._data, b._data, **tol)
