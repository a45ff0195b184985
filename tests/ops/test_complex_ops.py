"""Complex tensors: dtypes and promotion, printing, the real/imag views, the complex
ops, the ops numpy computes on complex values (checked against numpy), and PyTorch's
errors for the ops it refuses on complex tensors."""
import numpy as np
import pytest

import dynjit
from dynjit import complex64, complex128, float32, float64


def c128(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# -- dtypes and promotion ----------------------------------------------------------------

def test_dtype_names_and_properties():
    assert dynjit.cfloat is complex64 and dynjit.cdouble is complex128
    assert complex64.is_complex and not complex64.is_floating_point and complex64.is_signed
    assert complex64.itemsize == 8 and complex128.itemsize == 16
    assert repr(complex128) == "dynjit.complex128"
    x = dynjit.zeros(2, dtype=complex64)
    assert x.is_complex() and dynjit.is_complex(x) and not x.is_floating_point()
    assert x.element_size() == 8 and x.type() == "dynjit.ComplexFloatTensor"


def test_python_complex_numbers_make_the_default_complex_dtype():
    assert dynjit.tensor([1 + 2j]).dtype is complex64
    assert dynjit.tensor(1 + 2j).dtype is complex64
    assert dynjit.tensor([1, 2.5j]).dtype is complex64
    dynjit.set_default_dtype(float64)
    try:
        assert dynjit.tensor([1j]).dtype is complex128
    finally:
        dynjit.set_default_dtype(float32)
    assert dynjit.tensor(np.array([1j])).dtype is complex128      # numpy's dtype is kept


@pytest.mark.parametrize("a,b,want", [
    (dict(shape=(2,), dtype=float64), dict(shape=(), dtype=complex64), complex128),
    (dict(shape=(2,), dtype=float32), dict(shape=(), dtype=complex128), complex64),
    (dict(shape=(2,), dtype=dynjit.int32), dict(shape=(), dtype=complex128), complex128),
    (dict(shape=(2,), dtype=complex64), dict(shape=(2,), dtype=float64), complex128),
    (dict(shape=(2,), dtype=complex64), dict(shape=(2,), dtype=dynjit.float16), complex64),
    (dict(shape=(), dtype=complex64), dict(shape=(), dtype=float64), complex128),
])
def test_tensor_promotion_follows_pytorch(a, b, want):
    x = dynjit.ones(*a["shape"], dtype=a["dtype"])
    y = dynjit.ones(*b["shape"], dtype=b["dtype"])
    assert (x + y).dtype is want and (y * x).dtype is want


def test_python_complex_scalar_promotion():
    assert (dynjit.ones(2, dtype=float64) * 1j).dtype is complex128
    assert (dynjit.ones(2) * 1j).dtype is complex64
    assert (dynjit.ones(2, dtype=dynjit.int64) + 1j).dtype is complex64
    assert (1j - dynjit.ones(2, dtype=float64)).dtype is complex128
    assert dynjit.promote_types(complex64, float64) is complex128
    assert dynjit.result_type(dynjit.ones(2, dtype=dynjit.int32), 2j) is complex64
    with pytest.raises(TypeError, match="complex32"):
        dynjit.ones(2, dtype=dynjit.float16) * 1j        # PyTorch would make complex32


def test_in_place_ops_cannot_make_a_real_tensor_complex():
    x = dynjit.ones(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.mul_(1j)
    z = dynjit.ones(2, dtype=complex64)
    z.mul_(2j)
    np.testing.assert_array_equal(z.numpy(), [2j, 2j])


# -- printing ------------------------------------------------------------------------------

def test_repr_matches_pytorch():
    x = dynjit.tensor([1 + 2j, -3.5 + 0.25j, 0j])
    assert repr(x) == "tensor([ 1.0000+2.0000j, -3.5000+0.2500j,  0.0000+0.0000j])"
    assert repr(x.to(complex128)) == ("tensor([ 1.0000+2.0000j, -3.5000+0.2500j,  0.0000+0.0000j],\n"
                                      "       dtype=dynjit.complex128)")
    assert repr(dynjit.tensor([[1.5 + 2j, 3j], [1e-5j, 4]])) == (
        "tensor([[1.5000+2.0000e+00j, 0.0000+3.0000e+00j],\n"
        "        [0.0000+1.0000e-05j, 4.0000+0.0000e+00j]])")
    assert repr(dynjit.tensor([1 + 2j], requires_grad=True)) == "tensor([1.+2.j], requires_grad=True)"
    assert repr(dynjit.tensor(1 - 2j)) == "tensor(1.-2.j)"
    assert repr(dynjit.tensor([], dtype=complex64)) == "tensor([], dtype=dynjit.complex64)"
    assert repr(dynjit.tensor([float("nan") + 1j, float("inf") - 2j])) == "tensor([nan+1.j, inf-2.j])"


# -- real / imag views ------------------------------------------------------------------------

def test_real_and_imag_are_writable_views():
    z = dynjit.tensor(c128(2, 3))
    re, im = z.real, z.imag
    assert re.dtype is float64 and im.dtype is float64 and re._base is z
    re[0, 0] = 7.0
    im.mul_(0)
    np.testing.assert_array_equal(z.numpy()[0, 0], 7.0 + 0j)
    assert (z.imag == 0).all()
    z.real = dynjit.zeros(2, 3, dtype=float64)
    z.imag = 1.5
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3), 1.5j))
    assert dynjit.real(z).dtype is float64


def test_real_of_a_real_tensor_is_itself_and_imag_is_an_error():
    x = dynjit.ones(3)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag


def test_view_as_real_and_view_as_complex_share_memory():
    z = dynjit.tensor(c128(2, 3))
    r = dynjit.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.dtype is float64
    np.testing.assert_array_equal(r.numpy(), np.stack([z.numpy().real, z.numpy().imag], -1))
    r[1, 2, 1] = -9.0
    assert z[1, 2].item() == pytest.approx(z.numpy()[1, 2].real - 9j)
    back = dynjit.view_as_complex(r)
    assert back.dtype is complex128 and np.shares_memory(back.numpy(), z.numpy())
    np.testing.assert_array_equal(back.numpy(), z.numpy())
    # view_as_real of a transposed tensor, too
    np.testing.assert_array_equal(dynjit.view_as_real(z.t()).numpy()[..., 1], z.numpy().T.imag)


def test_view_as_real_and_view_as_complex_errors():
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        dynjit.view_as_real(dynjit.ones(2))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        dynjit.view_as_complex(dynjit.ones(2, 3))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension with stride 1"):
        dynjit.view_as_complex(dynjit.ones(2, 4).t())
    with pytest.raises(RuntimeError, match="only supported for float and double tensors, but got a "
                                           "tensor of scalar type: Long"):
        dynjit.view_as_complex(dynjit.ones(3, 2, dtype=dynjit.int64))


# -- the complex ops against numpy ------------------------------------------------------------

def test_complex_polar_angle_sgn_conj_abs_against_numpy():
    rng = np.random.default_rng(1)
    re, im = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    z = dynjit.complex(dynjit.tensor(re), dynjit.tensor(im))
    assert z.dtype is complex128
    np.testing.assert_array_equal(z.numpy(), re + 1j * im)
    zn = z.numpy()
    np.testing.assert_allclose(dynjit.angle(z).numpy(), np.angle(zn), rtol=1e-15)
    np.testing.assert_allclose(z.abs().numpy(), np.abs(zn), rtol=1e-15)
    assert z.abs().dtype is float64 and dynjit.angle(z).dtype is float64
    np.testing.assert_allclose(z.sgn().numpy(), zn / np.abs(zn), rtol=1e-15)
    np.testing.assert_array_equal(z.conj().numpy(), np.conj(zn))
    np.testing.assert_array_equal(dynjit.conj_physical(z).numpy(), np.conj(zn))
    mag, ang = np.abs(re), im
    p = dynjit.polar(dynjit.tensor(mag), dynjit.tensor(ang))
    np.testing.assert_allclose(p.numpy(), mag * np.exp(1j * ang), rtol=1e-14)
    assert dynjit.sgn(dynjit.tensor([0j])).item() == 0
    # angle of real numbers: pi for negatives, 0 otherwise, NaN stays NaN; int -> float
    np.testing.assert_array_equal(dynjit.angle(dynjit.tensor([-2.0, 0.0, 3.0])).numpy(),
                                  np.array([np.pi, 0, 0], dtype=np.float32))
    assert dynjit.angle(dynjit.tensor([-1, 1])).dtype is float32
    assert np.isnan(dynjit.angle(dynjit.tensor([float("nan")])).item())


def test_complex_requires_matching_floating_parts():
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        dynjit.complex(dynjit.ones(2), dynjit.ones(2, dtype=float64))
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double tensors but "
                                           "got Long and Long"):
        dynjit.complex(dynjit.ones(2, dtype=dynjit.int64), dynjit.ones(2, dtype=dynjit.int64))


UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "expm1": np.expm1, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
    "reciprocal": np.reciprocal, "square": np.square, "neg": np.negative,
    "rsqrt": lambda a: 1 / np.sqrt(a), "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [complex64, complex128])
def test_unary_math_matches_numpy(name, dtype):
    values = c128(3, 4, seed=2)
    x = dynjit.tensor(values, dtype=dtype)
    out = getattr(x, name)()
    assert out.dtype is dtype
    expected = UNARY[name](values.astype(dtype.np))
    tol = 1e-5 if dtype is complex64 else 1e-12
    np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)


def test_arithmetic_reductions_and_products_match_numpy():
    a, b = c128(3, 4, seed=3), c128(4, 2, seed=4)
    x, y = dynjit.tensor(a), dynjit.tensor(b)
    np.testing.assert_allclose((x + 1.5 - 2j).numpy(), a + 1.5 - 2j)
    np.testing.assert_allclose((x * x / (x - 3j)).numpy(), a * a / (a - 3j))
    np.testing.assert_allclose((x ** 2.5).numpy(), a ** 2.5, rtol=1e-12)
    np.testing.assert_allclose((x ** (1 + 1j)).numpy(), a ** (1 + 1j), rtol=1e-12)
    np.testing.assert_allclose((x @ y).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(dynjit.einsum("ij,jk->ik", x, y).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(x.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(x.mean().numpy(), a.mean())
    np.testing.assert_allclose(x.prod(0).numpy(), a.prod(0))
    np.testing.assert_allclose(x.cumsum(1).numpy(), a.cumsum(1))
    np.testing.assert_allclose(x.cumprod(1).numpy(), a.cumprod(1))
    np.testing.assert_array_equal(dynjit.cat([x, x.conj()], 0).numpy(), np.concatenate([a, a.conj()]))
    np.testing.assert_array_equal(dynjit.stack([x, x], -1).numpy(), np.stack([a, a], -1))
    mask = dynjit.tensor(a.real > 0)
    np.testing.assert_array_equal(dynjit.where(mask, x, 0j).numpy(), np.where(a.real > 0, a, 0))
    np.testing.assert_array_equal(x.masked_fill(mask, 1 + 1j).numpy(), np.where(a.real > 0, 1 + 1j, a))
    np.testing.assert_array_equal(x.reshape(2, 6).t().numpy(), a.reshape(2, 6).T)
    assert (x == dynjit.tensor(a)).all() and not (x != x).any()
    cat = dynjit.cat([dynjit.ones(2, dtype=float64), dynjit.ones(2, dtype=complex64)])
    assert cat.dtype is complex128


def test_var_std_norm_of_complex_tensors_are_real():
    a = c128(3, 4, seed=5)
    x = dynjit.tensor(a)
    assert x.var().dtype is float64 and x.to(complex64).norm().dtype is float32
    np.testing.assert_allclose(x.var(1).numpy(), np.var(a, axis=1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(x.std(0, correction=0).numpy(), np.std(a, axis=0), rtol=1e-12)
    np.testing.assert_allclose(x.norm().numpy(), np.sqrt((np.abs(a) ** 2).sum()), rtol=1e-12)
    np.testing.assert_allclose(x.norm(p=1, dim=1).numpy(), np.abs(a).sum(1), rtol=1e-12)
    np.testing.assert_allclose(x.norm(p=3).numpy(), (np.abs(a) ** 3).sum() ** (1 / 3), rtol=1e-12)
    np.testing.assert_allclose(x.norm(p=float("inf")).numpy(), np.abs(a).max(), rtol=1e-12)
    assert x.norm(p=0).dtype is float64 and x.norm(p=0).item() == 12


def test_conversions():
    x = dynjit.tensor([1.5, -2.0])
    assert x.cfloat().dtype is complex64 and x.cdouble().dtype is complex128
    np.testing.assert_array_equal(x.to(complex64).numpy(), [1.5 + 0j, -2 + 0j])
    z = dynjit.tensor([1 + 2j])
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        assert z.float().item() == 1.0
    assert z.item() == 1 + 2j and isinstance(z.item(), complex)
    # to bool: true where either part is nonzero (no warning: nothing is discarded)
    assert dynjit.tensor([1j, 0j, 2]).bool().tolist() == [True, False, True]
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        dynjit.ones(2).fill_(1j)
    assert dynjit.ones(2, dtype=float64).fill_(3 + 0j).tolist() == [3.0, 3.0]
    assert dynjit.full((2,), 1j).dtype is complex64
    assert z.tolist() == [1 + 2j]


def test_random_complex_factories_draw_both_parts():
    dynjit.manual_seed(0)
    u = dynjit.rand(20000, dtype=complex64)
    n = dynjit.randn(20000, dtype=complex128)
    for part in (u.real, u.imag):
        assert 0 <= part.min().item() and part.max().item() < 1 and abs(part.mean().item() - 0.5) < 0.02
    for part in (n.real, n.imag):     # each part N(0, 1/2), as PyTorch's
        assert abs(part.var().item() - 0.5) < 0.03
    w = dynjit.empty(20000, dtype=complex64)
    dynjit.nn.init.uniform_(w, -1, 1)
    assert w.real.min().item() >= -1 and w.imag.min().item() >= -1 and w.imag.min().item() < -0.99
    assert dynjit.nn.Linear(3, 2, dtype=complex64).weight.dtype is complex64


# -- ops PyTorch refuses on complex tensors ---------------------------------------------------

REFUSED = [
    (lambda z: z < z, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z >= 0, NotImplementedError, "\"ge_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.clamp(0, 1), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: z.relu(), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: dynjit.maximum(z, z), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda z: z.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    (lambda z: z.sign(), NotImplementedError, "torch.sign is not intended to support complex numbers"),
    (lambda z: z.max(), NotImplementedError, "not implemented for 'ComplexFloat'"),
    (lambda z: z.argmax(), NotImplementedError, "not implemented for 'ComplexFloat'"),
    (lambda z: z.sort(), NotImplementedError, "not implemented for 'ComplexFloat'"),
    (lambda z: z.topk(1), NotImplementedError, "not implemented for 'ComplexFloat'"),
    (lambda z: dynjit.remainder(z, z), NotImplementedError, "\"remainder_cpu\" not implemented"),
    (lambda z: z.softmax(0), NotImplementedError, "not implemented for 'ComplexFloat'"),
    (lambda z: dynjit.atan2(z, z), NotImplementedError, "\"atan2_cpu\" not implemented"),
    (lambda z: z.erf(), NotImplementedError, "not implemented for 'ComplexFloat'"),
]


@pytest.mark.parametrize("fn,error,message", REFUSED, ids=[m[:30] for _, _, m in REFUSED])
def test_ops_pytorch_refuses_on_complex_raise_its_error(fn, error, message):
    z = dynjit.tensor([1 + 2j, -1 - 1j])
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        fn(z)


def test_refusal_also_in_meta():
    from dynjit.ops.meta import TensorMeta
    from dynjit.ops.registry import registry
    z = TensorMeta((2,), complex64)
    with pytest.raises(NotImplementedError, match="lt_cpu"):
        registry["lt"].meta((z, z))
    with pytest.raises(NotImplementedError, match="ComplexFloat"):
        registry["argmax"].meta((z,))
    assert registry["mul"].meta((z, 2.0)) == ((2,), complex64)
    assert registry["abs"].meta((z,)) == ((2,), float32)


def test_losses_pytorch_computes_for_real_tensors_only_refuse_complex():
    a, b = dynjit.tensor([1j, 2]), dynjit.tensor([2j, 1])
    F = dynjit.nn.functional
    for fn, kernel in ((F.mse_loss, "mse_cpu"), (F.smooth_l1_loss, "smooth_l1_cpu"), (F.huber_loss, "huber_cpu")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'ComplexFloat'"):
            fn(a, b)
    assert F.l1_loss(a, b).item() == pytest.approx(np.abs(np.array([1j, 2]) - np.array([2j, 1])).mean())
