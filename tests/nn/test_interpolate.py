"""F.interpolate / nn.Upsample against values computed by hand from PyTorch's
definitions: nearest takes source index floor(dst * in / out); linear modes take
source coordinate dst * (in - 1) / (out - 1) with align_corners, else
(dst + 0.5) * in / out - 0.5 clamped at 0, and mix the two neighbours; a
scale_factor (not recomputed) stands in for out / in in those formulas. Gradients
by gradcheck, and by hand for the sums of the interpolation weights."""
import numpy as np
import pytest

import dynjit
import dynjit.nn as nn
import dynjit.nn.functional as F
from dynjit.autograd import gradcheck, gradgradcheck
from dynjit.fx import make_fx


def _t(values):
    return dynjit.tensor(values, dtype=dynjit.float32)


def _row(values):
    """A (1, 1, L) input."""
    return _t([[values]])


def _close(t, expected):
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-6)


# -- nearest ------------------------------------------------------------------------

def test_nearest_doubles_each_element():
    out = F.interpolate(_row([1.0, 2.0, 3.0]), scale_factor=2)
    assert out.shape == (1, 1, 6)
    _close(out, [[[1, 1, 2, 2, 3, 3]]])


def test_nearest_to_a_size_that_is_not_a_multiple():
    # in 3, out 5: floor(d * 3 / 5) for d = 0..4 is 0, 0, 1, 1, 2
    _close(F.interpolate(_row([1.0, 2.0, 3.0]), size=5), [[[1, 1, 2, 2, 3]]])
    # down: in 4, out 2 -> 0, 2
    _close(F.interpolate(_row([1.0, 2.0, 3.0, 4.0]), size=2), [[[1, 3]]])


def test_nearest_2d_with_a_size_per_dim():
    x = _t([[[[1.0, 2.0], [3.0, 4.0]]]])
    out = F.interpolate(x, size=(3, 4))        # rows 0, 0, 1; columns 0, 0, 1, 1
    _close(out, [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4]]]])
    assert F.interpolate(x, size=3).shape == (1, 1, 3, 3)


def test_nearest_uses_the_given_scale_factor_unless_recomputed():
    x = _row([float(i) for i in range(10)])
    # out = floor(10 * 0.35) = 3; source floor(d / 0.35) = 0, 2, 5; from the sizes floor(d * 10 / 3) = 0, 3, 6
    _close(F.interpolate(x, scale_factor=0.35), [[[0, 2, 5]]])
    _close(F.interpolate(x, scale_factor=0.35, recompute_scale_factor=True), [[[0, 3, 6]]])


def test_nearest_3d():
    x = dynjit.arange(8.0).reshape(1, 1, 2, 2, 2)
    out = F.interpolate(x, scale_factor=(1, 2, 1))
    assert out.shape == (1, 1, 2, 4, 2)
    expected = np.repeat(np.arange(8.0).reshape(1, 1, 2, 2, 2), 2, axis=3)
    _close(out, expected)


def test_nearest_gradient_counts_the_uses_of_each_element():
    x = dynjit.ones(1, 1, 2, 3, requires_grad=True)
    F.interpolate(x, size=(4, 5)).sum().backward()
    # rows used 2, 2 times; columns floor(d * 3 / 5) = 0, 0, 1, 1, 2: used 2, 2, 1 times
    _close(x.grad, [[[[4, 4, 2], [4, 4, 2]]]])


# -- linear modes ------------------------------------------------------------------

def test_linear_align_corners():
    # in 3, out 6: sources d * 2 / 5
    _close(F.interpolate(_row([0.0, 1.0, 2.0]), scale_factor=2, mode="linear", align_corners=True),
           [[[0, 0.4, 0.8, 1.2, 1.6, 2.0]]])


def test_linear_half_pixel():
    # in 3, out 6: sources (d + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, ..., 2.25 (last element)
    _close(F.interpolate(_row([0.0, 10.0, 20.0]), scale_factor=2, mode="linear"),
           [[[0, 2.5, 7.5, 12.5, 17.5, 20]]])
    # align_corners=None means False for the linear modes
    _close(F.interpolate(_row([0.0, 10.0, 20.0]), size=6, mode="linear", align_corners=False),
           [[[0, 2.5, 7.5, 12.5, 17.5, 20]]])


def test_linear_downsampling_averages_neighbours():
    # in 4, out 2: sources 0.5 and 2.5
    _close(F.interpolate(_row([1.0, 3.0, 5.0, 9.0]), size=2, mode="linear"), [[[2, 7]]])


def test_linear_uses_the_given_scale_factor_unless_recomputed():
    x = _row([0.0, 10.0, 20.0])
    # scale 1.7: out 5; sources (d + 0.5) / 1.7 - 0.5; recomputed: (d + 0.5) * 3 / 5 - 0.5
    given = [10 * max((d + 0.5) / 1.7 - 0.5, 0) for d in range(5)]
    given[-1] = 20.0                                     # source 2.15: past the last element
    recomputed = [10 * max((d + 0.5) * 0.6 - 0.5, 0) for d in range(5)]
    recomputed[-1] = 20.0
    _close(F.interpolate(x, scale_factor=1.7, mode="linear"), [[given]])
    _close(F.interpolate(x, scale_factor=1.7, mode="linear", recompute_scale_factor=True), [[recomputed]])
    assert abs(given[1] - recomputed[1]) > 0.1


def test_linear_output_of_size_one_with_align_corners_is_the_first_element():
    _close(F.interpolate(_row([5.0, 1.0, 2.0]), size=1, mode="linear", align_corners=True), [[[5]]])


def test_bilinear_reproduces_a_plane():
    # bilinear interpolation of f(i, j) = 10 i + j is 10 * src_i + src_j
    x = (10 * dynjit.arange(3.0).reshape(3, 1) + dynjit.arange(4.0)).reshape(1, 1, 3, 4).expand(2, 3, 3, 4)
    out = F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True)
    si = np.arange(5) * 2 / 4
    sj = np.arange(7) * 3 / 6
    _close(out, np.broadcast_to(10 * si[:, None] + sj, (2, 3, 5, 7)))
    out = F.interpolate(x, scale_factor=2, mode="bilinear")
    si = np.clip((np.arange(6) + 0.5) / 2 - 0.5, 0, 2)
    sj = np.clip((np.arange(8) + 0.5) / 2 - 0.5, 0, 3)
    _close(out, np.broadcast_to(10 * si[:, None] + sj, (2, 3, 6, 8)))


def test_trilinear_reproduces_a_linear_function():
    i, j, k = np.meshgrid(np.arange(2.0), np.arange(3.0), np.arange(2.0), indexing="ij")
    x = dynjit.tensor((100 * i + 10 * j + k).reshape(1, 1, 2, 3, 2))
    out = F.interpolate(x, size=(3, 5, 4), mode="trilinear", align_corners=True)
    si, sj, sk = np.linspace(0, 1, 3), np.linspace(0, 2, 5), np.linspace(0, 1, 4)
    _close(out, (100 * si[:, None, None] + 10 * sj[None, :, None] + sk[None, None, :])[None, None])


def test_bilinear_gradient_is_the_sum_of_the_weights():
    x = dynjit.zeros(1, 1, 2, 3, requires_grad=True)
    F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).sum().backward()
    # columns: the weights on in[0..2] of sources 0, .4, .8, 1.2, 1.6, 2 sum to 1.8, 2.4, 1.8;
    # rows: sources 0, 1/3, 2/3, 1 give each input row a total weight of 2
    _close(x.grad, [[[[3.6, 4.8, 3.6], [3.6, 4.8, 3.6]]]])


def test_dtype_and_shape_are_kept():
    x = dynjit.randn(2, 3, 4, 5, dtype=dynjit.float64)
    out = F.interpolate(x, size=(2, 9), mode="bilinear")
    assert out.dtype is dynjit.float64 and out.shape == (2, 3, 2, 9)
    assert out.is_contiguous()


@pytest.mark.parametrize("shape, kwargs", [
    ((2, 2, 3), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 5), dict(size=3, mode="nearest")),
    ((1, 2, 3, 4), dict(size=(5, 3), mode="nearest")),
    ((1, 1, 2, 2, 3), dict(scale_factor=(2, 1, 1.5), mode="nearest")),
    ((2, 2, 4), dict(size=7, mode="linear", align_corners=True)),
    ((1, 2, 5), dict(scale_factor=0.6, mode="linear")),
    ((1, 2, 3, 4), dict(scale_factor=2, mode="bilinear", align_corners=True)),
    ((1, 2, 3, 4), dict(size=(5, 3), mode="bilinear", align_corners=False)),
    ((1, 1, 2, 3, 2), dict(size=(3, 4, 3), mode="trilinear")),
])
def test_gradcheck(shape, kwargs):
    x = dynjit.randn(*shape, dtype=dynjit.float64, requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, **kwargs), (x,))
    assert gradgradcheck(lambda a: F.interpolate(a, **kwargs), (x,))


def test_traced_as_one_op_each_way():
    x = dynjit.randn(1, 2, 3, 4, requires_grad=True)

    def f(a):
        out = F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=True)
        return out, dynjit.autograd.grad((out * out).sum(), a, create_graph=True)[0]
    gm = make_fx(f)(x)
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count("dynjit.ops.upsample_bilinear2d") == 1
    assert targets.count("dynjit.ops.upsample_bilinear2d_backward") == 1
    for a, b in zip(gm(x), f(x)):
        assert dynjit.allclose(a, b)


# -- argument checks (PyTorch's messages) --------------------------------------------

def test_argument_errors():
    x = dynjit.randn(1, 1, 3)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(4, 4))
    with pytest.raises(ValueError, match="Input and scale_factor must have the same number of spatial"):
        F.interpolate(x, scale_factor=(2, 2))
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x, size=4, recompute_scale_factor=True)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(x, size=4, mode="bilinear")
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(dynjit.randn(1, 1, 2, 2), size=4, mode="linear")
    with pytest.raises(NotImplementedError, match="Only 3D, 4D and 5D input Tensors supported"):
        F.interpolate(dynjit.randn(2, 3), size=4)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.2)


# -- modules ---------------------------------------------------------------------------

def test_upsample_module():
    m = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    assert repr(m) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.Upsample(size=(3, 4))) == "Upsample(size=(3, 4), mode='nearest')"
    assert list(m.parameters()) == [] and list(m.buffers()) == []
    x = dynjit.randn(2, 3, 4, 5)
    assert dynjit.equal(m(x), F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True))
    assert dynjit.equal(nn.UpsamplingBilinear2d(size=(7, 3))(x),
                        F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=True))
    assert dynjit.equal(nn.UpsamplingNearest2d(scale_factor=3)(x), F.interpolate(x, scale_factor=3))
    near = nn.Upsample(scale_factor=0.35, recompute_scale_factor=True)
    assert dynjit.equal(near(_row([float(i) for i in range(10)])), _row([0.0, 3.0, 6.0]))
