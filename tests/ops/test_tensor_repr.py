"""Tensor repr follows PyTorch's printed format (torch/_tensor_str.py), with
`dynjit.` in place of `torch.` in dtype suffixes."""
import pytest

import dynjit


@pytest.mark.parametrize("make,expected", [
    (lambda: dynjit.tensor([1.0, 2.5]), "tensor([1.0000, 2.5000])"),
    (lambda: dynjit.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda: dynjit.tensor([0.0, -1.5]), "tensor([ 0.0000, -1.5000])"),
    (lambda: dynjit.tensor([0.0, 10.0]), "tensor([ 0., 10.])"),
    (lambda: dynjit.tensor([-0.0, 1.0]), "tensor([-0., 1.])"),
    (lambda: dynjit.zeros(3), "tensor([0., 0., 0.])"),
    (lambda: dynjit.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: dynjit.tensor([1, -10]), "tensor([  1, -10])"),
    (lambda: dynjit.tensor([True, False]), "tensor([ True, False])"),
    (lambda: dynjit.tensor([True, True]), "tensor([True, True])"),
    (lambda: dynjit.tensor(3.5), "tensor(3.5000)"),
    (lambda: dynjit.tensor(3.0), "tensor(3.)"),
    (lambda: dynjit.tensor(3), "tensor(3)"),
    (lambda: dynjit.tensor(True), "tensor(True)"),
    (lambda: dynjit.tensor([1.0, 10000.0]), "tensor([1.0000e+00, 1.0000e+04])"),
    (lambda: dynjit.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: dynjit.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: dynjit.tensor([float("nan"), 1.0, float("inf")]), "tensor([nan, 1., inf])"),
    (lambda: dynjit.tensor([float("nan"), -float("inf")]), "tensor([nan, -inf])"),
    (lambda: dynjit.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda: dynjit.arange(8.0).reshape(2, 2, 2),
     "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"),
    (lambda: dynjit.tensor([1.0, 2.0], dtype=dynjit.float64), "tensor([1., 2.], dtype=dynjit.float64)"),
    (lambda: dynjit.tensor([1, 2], dtype=dynjit.int32), "tensor([1, 2], dtype=dynjit.int32)"),
    (lambda: dynjit.tensor([1.5, 2.0], dtype=dynjit.float16), "tensor([1.5000, 2.0000], dtype=dynjit.float16)"),
    (lambda: dynjit.zeros(0), "tensor([])"),
    (lambda: dynjit.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: dynjit.zeros(0, dtype=dynjit.int64), "tensor([], dtype=dynjit.int64)"),
    (lambda: dynjit.zeros(2, 0, dtype=dynjit.bool), "tensor([], size=(2, 0), dtype=dynjit.bool)"),
    (lambda: dynjit.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: dynjit.tensor([1.0, 2.0], requires_grad=True) * 2, "tensor([2., 4.], grad_fn=<MulBackward0>)"),
    (lambda: dynjit.tensor([1.0, 2.0], dtype=dynjit.float64, requires_grad=True),
     "tensor([1., 2.], dtype=dynjit.float64, requires_grad=True)"),
    (lambda: dynjit.tensor([1.0, 2.0], requires_grad=True).sum(), "tensor(3., grad_fn=<SumBackward0>)"),
])
def test_repr_matches_pytorch(make, expected):
    assert repr(make()) == expected
    assert str(make()) == expected


def test_long_rows_wrap_at_80_columns():
    assert repr(dynjit.arange(30.0)) == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])")


def test_large_tensors_are_summarised_with_three_edge_items():
    assert repr(dynjit.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    text = repr(dynjit.zeros(100, 100))
    lines = text.split("\n")
    assert lines[0] == "tensor([[0., 0., 0.,  ..., 0., 0., 0.],"
    assert lines[3] == "        ...,"
    assert len(lines) == 7


def test_suffix_moves_to_a_new_line_when_the_last_line_is_full():
    x = (dynjit.arange(54.0, dtype=dynjit.float64) / 7).reshape(2, 27).requires_grad_()
    assert repr(x).endswith("7.5714]],\n       dtype=dynjit.float64, requires_grad=True)")


def test_non_default_float_gets_a_suffix_after_set_default_dtype():
    old = dynjit.get_default_dtype()
    dynjit.set_default_dtype(dynjit.float64)
    try:
        assert repr(dynjit.tensor([1.5])) == "tensor([1.5000])"
        assert repr(dynjit.tensor([1.5], dtype=dynjit.float32)) == "tensor([1.5000], dtype=dynjit.float32)"
    finally:
        dynjit.set_default_dtype(old)


def test_dtype_and_size_reprs():
    assert repr(dynjit.float64) == "dynjit.float64"
    assert repr(dynjit.ones(2, 3).shape) == "dynjit.Size([2, 3])"
