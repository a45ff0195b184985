"""Compiled == eager for complex and bfloat16 tensors: the same functions run plain and
under dynjit.compile on eager, aot_eager and llvm give the same values, dtypes and
gradients. (The llvm backend fuses only the dtypes it has kernels for: complex and
bfloat16 nodes, matrix products included, run as the registry's eager ops.)"""
import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
from tests.aot.aot_verify import verify_aot

BACKENDS = ("eager", "aot_eager", "llvm")


def _complex(shape, seed, dtype=dynjit.complex64):
    rng = np.random.default_rng(seed)
    return dynjit.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype=dtype)


def complex_pointwise(z, w):
    y = (z * w + 1j).exp() * z.conj() / (w.abs() + 1)
    return (y.abs() * 2 + dynjit.real(y)).sum(), dynjit.imag(y) * 3


def complex_views_and_products(z, w):
    r = dynjit.view_as_real(z @ w.t())
    back = dynjit.view_as_complex(r * 2)
    return back.sum(0), dynjit.angle(back), dynjit.cat([z, w]).mean(1)


def complex_from_real(x, y):
    z = dynjit.complex(x, y * 2)
    p = dynjit.polar(x.abs() + 0.5, y)
    return (z * p).sgn(), (z.log() + p).abs().sum()


def bf16_pointwise(x, b):
    return ((x * b + 1.5).tanh() * x).sum(1), (x - b).exp().mean()


def bf16_matmul(x, b):
    return (x @ b.t()).relu(), dynjit.nn.functional.linear(x, b, b[0]).softmax(-1)


CASES = [
    (complex_pointwise, lambda: (_complex((3, 4), 0), _complex((3, 4), 1))),
    (complex_views_and_products, lambda: (_complex((3, 4), 2, dynjit.complex128),
                                          _complex((3, 4), 3, dynjit.complex128))),
    (complex_from_real, lambda: (dynjit.randn(3, 4, dtype=dynjit.float64),
                                 dynjit.randn(3, 4, dtype=dynjit.float64))),
    (bf16_pointwise, lambda: (dynjit.randn(3, 4).bfloat16(), dynjit.randn(3, 4).bfloat16())),
    (bf16_matmul, lambda: (dynjit.randn(3, 4).bfloat16(), dynjit.randn(4, 4).bfloat16())),
]


def _run(fn, inputs, compiled):
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = (dynjit.compile(fn, backend=compiled, fullgraph=True) if compiled else fn)(*leaves)
    loss = sum(o.abs().sum().float() for o in out)
    loss.backward()
    return out, [t.grad for t in leaves]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_equals_plain(fn, make, backend):
    dynjit.manual_seed(0)
    inputs = make()
    plain_out, plain_grads = _run(fn, inputs, None)
    out, grads = _run(fn, inputs, backend)
    for a, b in zip(out, plain_out):
        assert a.dtype is b.dtype
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(grads, plain_grads):
        assert a.dtype is b.dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_autocast_region_compiled_equals_plain(backend):
    def step(x, w):
        with dynjit.autocast("cpu", enabled=False):
            return (x @ w).sum()

    x, w = dynjit.randn(3, 4), dynjit.randn(4, 2)
    assert dynjit.compile(step, backend=backend)(x, w).item() == pytest.approx(step(x, w).item(), rel=1e-6)


def test_real_and_imag_attributes_under_compile():
    z = _complex((2, 2), 4)
    f = dynjit.compile(lambda z: z.real + z.imag, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(f(z).numpy(), z.numpy().real + z.numpy().imag)


def test_complex_linear_through_aot():
    # ports: 001_fdd911346beae147.txt TestAOTAutograd.test_complex_linear
    # (the module's parameters are passed in, as AOT lifts them: verify_aot checks their
    # gradients against eager)
    def make_inputs():
        dynjit.manual_seed(0)
        linear = nn.Linear(10, 10, dtype=dynjit.complex64)
        x = dynjit.randn(1, 10, 10, dtype=dynjit.complex64)
        params = [p.detach().requires_grad_() for p in linear.parameters()]
        return params, [x] + params

    def f(x, weight, bias):
        return nn.functional.linear(x, weight, bias).sum().abs()

    verify_aot(f, make_inputs)
    # and the module itself, compiled with aot_eager
    dynjit.manual_seed(0)
    model = nn.Linear(10, 10, dtype=dynjit.complex64)
    x = dynjit.randn(1, 10, 10, dtype=dynjit.complex64)
    compiled = dynjit.compile(lambda x: model(x).sum().abs(), backend="aot_eager", fullgraph=True)
    out = compiled(x)
    out.backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad()
    plain = model(x).sum().abs()
    plain.backward()
    assert out.dtype is dynjit.float32 and out.item() == pytest.approx(plain.item(), rel=1e-6)
    for g, p in zip(grads, model.parameters()):
        assert g.dtype is dynjit.complex64
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
