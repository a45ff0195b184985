"""In-place variants: the functional op's result written into `self` (cast to
self's dtype when the category allows it), a version bump, and clear errors
when the result cannot fit. (Every in-place op is compared with its functional
op on the sample table in test_op_reference.py.)"""
import numpy as np
import pytest

import dynjit


def test_inplace_add_equals_out_of_place_and_bumps_the_version():
    x = dynjit.tensor([1.0, 2.0, 3.0])
    y = dynjit.tensor([0.5, 0.5, 0.5])
    expected = x + y * 2
    v = x._version
    out = x.add_(y, alpha=2)
    assert out is x
    assert x._version == v + 1
    assert x.tolist() == expected.tolist()


def test_augmented_assignment_is_in_place():
    x = dynjit.tensor([1.0, 2.0])
    alias = x
    v = x._version
    x += 1
    x *= dynjit.tensor([2.0, 3.0])
    x -= 0.5
    x /= 2
    assert alias is x
    assert x._version == v + 4
    assert x.tolist() == [1.75, 4.25]


def test_int_tensor_add_float_raises_a_clear_error_and_leaves_the_tensor_alone():
    x = dynjit.tensor([1, 2])
    v = x._version
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(dynjit.tensor([0.5, 0.5]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        x /= 2                                   # true division makes floats
    assert x.tolist() == [1, 2] and x._version == v


def test_bool_tensor_cannot_take_an_integer_result_in_place():
    with pytest.raises(RuntimeError, match="result type int64 can't be cast to the desired output type bool"):
        dynjit.tensor([True, False]).add_(1)


def test_results_are_cast_down_within_a_category():
    x = dynjit.tensor([1.0, 2.0])
    x.add_(dynjit.tensor([0.25, 0.25], dtype=dynjit.float64))
    assert x.dtype is dynjit.float32 and x.tolist() == [1.25, 2.25]
    i = dynjit.tensor([1, 2], dtype=dynjit.int32)
    i.mul_(dynjit.tensor([3, 4]))
    assert i.dtype is dynjit.int32 and i.tolist() == [3, 8]


def test_integer_division_in_place_with_a_rounding_mode():
    x = dynjit.tensor([7, -7])
    x.div_(2, rounding_mode="floor")
    assert x.dtype is dynjit.int64 and x.tolist() == [3, -4]


def test_inplace_other_may_broadcast_but_self_may_not():
    x = dynjit.zeros(2, 3)
    x.add_(dynjit.tensor([1.0, 2.0, 3.0]))
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        dynjit.zeros(3).add_(dynjit.ones(2, 3))


def test_inplace_on_a_view_writes_the_base_and_shares_its_version():
    base = dynjit.zeros(2, 3)
    row = base[1]
    v = base._version
    row.add_(5.0)
    assert base.tolist() == [[0.0] * 3, [5.0] * 3]
    assert base._version == row._version == v + 1


def test_inplace_on_an_expanded_tensor_asks_for_a_clone():
    x = dynjit.ones(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only.*call .clone\\(\\) first"):
        x.mul_(2)


@pytest.mark.parametrize("name,args,expected", [
    ("clamp_", (0.0, 1.0), [0.0, 0.5, 1.0]),
    ("clamp_min_", (0.0,), [0.0, 0.5, 2.0]),
    ("clamp_max_", (1.0,), [-1.0, 0.5, 1.0]),
    ("fill_", (7.0,), [7.0, 7.0, 7.0]),
    ("zero_", (), [0.0, 0.0, 0.0]),
    ("neg_", (), [1.0, -0.5, -2.0]),
    ("pow_", (2,), [1.0, 0.25, 4.0]),
    ("masked_fill_", (dynjit.tensor([True, False, True]), 9.0), [9.0, 0.5, 9.0]),
    ("copy_", (dynjit.tensor([1, 2, 3]),), [1.0, 2.0, 3.0]),
    ("lerp_", (dynjit.tensor([1.0, 1.0, 1.0]), 0.5), [0.0, 0.75, 1.5]),
])
def test_named_inplace_methods(name, args, expected):
    x = dynjit.tensor([-1.0, 0.5, 2.0])
    v = x._version
    assert getattr(x, name)(*args) is x
    assert x._version == v + 1
    np.testing.assert_allclose(x.numpy(), expected)
    assert x.dtype is dynjit.float32


def test_index_put_and_scatter_add_in_place_accumulate():
    x = dynjit.zeros(4)
    x.index_put_((dynjit.tensor([0, 2, 0]),), dynjit.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert x.tolist() == [4.0, 0.0, 2.0, 0.0]
    y = dynjit.zeros(2, 3)
    y.scatter_add_(1, dynjit.tensor([[0, 0], [2, 1]]), dynjit.ones(2, 2))
    assert y.tolist() == [[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
