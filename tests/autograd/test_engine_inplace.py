"""requires_grad propagation, in-place ops and version counters, detach, and
assignment through indexing, as the engine sees them."""
import pickle

import numpy as np
import pytest

import dynjit
from dynjit.autograd import gradcheck, gradgradcheck
from dynjit.autograd import graph as ag


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_requires_grad
def test_requires_grad_propagates_and_constant_branches_do_not_run():
    x, y = dynjit.randn(5, 5), dynjit.randn(5, 5)
    z = dynjit.randn(5, 5, requires_grad=True)
    a = x + y
    assert not a.requires_grad
    b = a + z
    assert b.requires_grad
    assert b.grad_fn.next_functions[0] == (None, 0)     # nothing to run for the constant branch
    b.backward(dynjit.ones(5, 5))
    close(z.grad, np.ones((5, 5)))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_requires_grad_
def test_requires_grad_underscore_returns_self_and_guards_non_leaves():
    x = dynjit.randn(5, 5)
    y = dynjit.randn(5, 5, requires_grad=True)
    for t in (x, y):
        assert t.requires_grad_() is t
        assert t.requires_grad
        assert t.requires_grad_(True) is t
        assert t.requires_grad
    z = x * y
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert z.requires_grad_(True) is z and z.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert y.requires_grad_(False) is y and not y.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_requires_grad_inplace
def test_in_place_op_with_a_grad_input_makes_the_target_require_grad():
    a = dynjit.randn(5, 5)
    b = dynjit.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad
    a.sum().backward()
    close(b.grad, np.ones((5, 5)))

    a = dynjit.randn(5, 5) + 0
    b = dynjit.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_requires_grad_inplace
def test_in_place_before_requires_grad_is_fine_after_is_an_error():
    a = dynjit.randn(2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    close(a.grad, np.ones((2, 3)))

    a = dynjit.randn(2, 3)
    b = a[:]
    b.add_(5)
    a.requires_grad = True
    a.sum().backward()
    close(a.grad, np.ones((2, 3)))

    a = dynjit.randn(2, 3)
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.add_(5)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place operation"):
        b.add_(5)


def test_next_functions_point_at_inputs_nodes():
    # TestAutograd.test_next_functions's first half, with the leaves behind the edges
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5, requires_grad=True)
    a = x + y
    nf = a.grad_fn.next_functions
    assert len(nf) == 2
    assert isinstance(nf[0][0], ag.AccumulateGrad) and nf[0][1] == 0
    assert isinstance(nf[1][0], ag.AccumulateGrad) and nf[1][1] == 0
    assert nf[0][0].variable is x and nf[1][0].variable is y
    assert isinstance(a.grad_fn, ag.Node)

    b = a + 5
    nf = b.grad_fn.next_functions
    assert nf[0][0] is a.grad_fn


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_inplace
def test_in_place_ops_invalidate_saved_values():
    x = dynjit.ones(5, 5, requires_grad=True)
    y = (dynjit.ones(5, 5) * 4).requires_grad_(True)

    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(dynjit.ones(5, 5), retain_graph=True)   # add saved nothing
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward(dynjit.ones(5, 5))                   # mul saved z

    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(dynjit.ones(5, 5), retain_graph=True)
    r.backward(dynjit.ones(5, 5), retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(dynjit.ones(5, 5))

    with dynjit.no_grad():
        x.grad.zero_()
    m = x / 2
    z = m + y / 8
    q = z * y
    r = z + y
    prev = z._version
    w = z.exp_()
    assert z._version != prev
    r.backward(dynjit.ones(5, 5), retain_graph=True)
    close(x.grad, np.ones((5, 5)) / 2)
    w.backward(dynjit.ones(5, 5), retain_graph=True)
    close(x.grad, np.full((5, 5), (1 + np.e) / 2))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(dynjit.ones(5, 5))

    leaf = dynjit.ones(5, 5, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    close(x, np.full((5, 5), 11.0))
    y = x + 2
    y.backward(dynjit.ones(5, 5))
    close(leaf.grad, np.ones((5, 5)))
    z = x * y
    x.add_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(dynjit.ones(5, 5))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_grad_modifies_version
def test_in_place_under_no_grad_still_bumps_the_version():
    x = dynjit.randn(5, requires_grad=True)
    y = dynjit.randn(5, requires_grad=True)
    z = (x * y).sum()
    with dynjit.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_increment_version
def test_increment_version():
    a = dynjit.rand(5, requires_grad=True)
    v = a._version
    ag.increment_version(a)
    assert a._version == v + 1

    a = dynjit.zeros(5, dtype=dynjit.int32)
    v = a._version
    ag.increment_version(a)
    assert a._version == v + 1

    with dynjit.inference_mode():
        a = dynjit.rand(5)
    with pytest.raises(RuntimeError, match="update to inference tensor outside InferenceMode"):
        ag.increment_version(a)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_detach
def test_detach_cuts_the_graph():
    x = dynjit.randn(10, 10, requires_grad=True)
    y = (x + 2).detach()
    z = y * 4 + 2
    assert not y.requires_grad
    assert not z.requires_grad

    x = dynjit.randn(10, 10, requires_grad=True)
    y = (x * 2).detach()
    assert not y.requires_grad
    assert y.grad_fn is None
    (x + y).sum().backward()
    close(x.grad, np.ones((10, 10)))     # no gradient through y

    x = dynjit.randn(10, 10, requires_grad=True)
    y = dynjit.randn(10, 10, requires_grad=True)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    a.detach_()
    assert not a.requires_grad
    (y + a).sum().backward()              # does not reach x any more
    close(x.grad, np.full((10, 10), 2.0))
    close(y.grad, np.full((10, 10), 2.0))

    view = x.narrow(0, 1, 4)
    with pytest.raises(RuntimeError, match="view"):
        view.detach_()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_detach_base
def test_detaching_the_base_does_not_detach_its_view():
    x = dynjit.randn(10, 10, requires_grad=True)
    view = x.narrow(0, 1, 4)
    x.detach_()
    assert not x.requires_grad
    assert view.requires_grad
    assert view.grad_fn is not None
    assert view._base is x


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_detach_then_inplace_raises_in_autograd
def test_in_place_on_a_detached_alias_is_caught_by_backward():
    x = dynjit.randn([], requires_grad=True)
    y = x ** 2            # saves x
    z = x.detach()
    z.zero_()
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        y.backward()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_leaf_assignment
def test_assigning_grad_tensors_into_a_constant():
    x = dynjit.randn(5, 5)
    y = dynjit.randn(5, requires_grad=True)
    z = dynjit.randn(5, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad
    assert x.grad_fn is not None
    x.sum().backward()
    close(y.grad, np.ones(5))
    close(z.grad, np.full(5, 2.0))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_grad_assignment
def test_assignment_into_a_leaf_under_no_grad_keeps_it_a_leaf():
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5)
    with dynjit.no_grad():
        x[0] = y
    assert x.requires_grad
    assert x.grad_fn is None
    close(x[0], y)


def _check_setitem(size, index):
    x = dynjit.ones(*size, requires_grad=True)
    y = x + 2
    v = y._version
    y[index] = 2
    assert y._version != v
    y.backward(dynjit.ones(*size))
    expected = np.ones(size, dtype=np.float32)
    expected[_np_index(index)] = 0
    close(x.grad, expected)


def _check_setitem_tensor(size, index):
    x = dynjit.ones(*size, requires_grad=True)
    y = x + 2
    v = y._version
    value = dynjit.full(x[index].shape, 7.0).requires_grad_(True)
    y[index] = value
    assert y._version != v
    y.backward(dynjit.ones(*size))
    expected = np.ones(size, dtype=np.float32)
    expected[_np_index(index)] = 0
    close(x.grad, expected)
    close(value.grad, np.ones(value.shape))


def _np_index(index):
    if isinstance(index, dynjit.Tensor):
        return index.numpy()
    if isinstance(index, list):
        return tuple(i.numpy() if isinstance(i, dynjit.Tensor) else i for i in index)
    return index


SETITEM_INDICES = [
    ((5, 5), 1), ((5,), 1), ((1,), 0), ((10,), [[0, 4, 2]]), ((5, 5), [[0, 4], [2, 2]]),
    ((5, 5, 5), [slice(None), slice(None), [1, 3]]), ((5, 5, 5), [slice(None), [1, 3], slice(None)]),
    ((5, 5, 5), [[1, 3], slice(None), slice(None)]), ((5, 5, 5), [slice(None), [2, 4], [1, 3]]),
    ((5, 5, 5), [[1, 3], [2, 4], slice(None)]),
]

SETITEM_TENSOR_INDICES = [
    ((5, 5), 3), ((5, 5), [[0, 1], [1, 0]]), ((5,), 3), ((5,), dynjit.tensor([3]).sum()),
    ((5,), [[0, 1, 2, 3]]), ((5, 5, 5), [slice(None), slice(None), [1, 3]]),
    ((5, 5, 5), [slice(None), [1, 3], slice(None)]), ((5, 5, 5), [[1, 3], slice(None), slice(None)]),
    ((5, 5, 5), [slice(None), [2, 4], [1, 3]]), ((5, 5, 5), [[1, 3], [2, 4], slice(None)]),
    ((5, 5, 5), [dynjit.tensor([1, 3]), [2, 4], slice(None)]),
]


def _as_index(index):
    # PyTorch treats a list holding slices or lists like a tuple of indices
    if isinstance(index, list) and any(isinstance(i, (slice, list, dynjit.Tensor)) for i in index):
        return tuple(index)
    return index


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_setitem
@pytest.mark.parametrize("size, index", SETITEM_INDICES)
def test_setitem_with_a_constant(size, index):
    _check_setitem(size, _as_index(index))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_setitem
@pytest.mark.parametrize("size, index", SETITEM_TENSOR_INDICES)
def test_setitem_with_a_tensor_that_requires_grad(size, index):
    _check_setitem_tensor(size, _as_index(index))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_setitem
def test_setitem_broadcasts_the_value_and_reduces_its_grad():
    x = dynjit.randn(4, requires_grad=True)
    y = dynjit.zeros(2, 3, 4)
    y[1] = x
    y.backward(dynjit.randn(2, 3, 4))
    assert x.grad.shape == x.shape


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_setitem_mask
def test_setitem_with_a_boolean_mask():
    mask = dynjit.rand(5, 5) > 0.5
    _check_setitem((5, 5), mask)
    _check_setitem((5,), mask[0])
    _check_setitem((1,), mask[0, 0:1])
    _check_setitem_tensor((5, 5), mask)
    _check_setitem_tensor((5,), mask[0])


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_indexing_duplicates
def test_gradient_of_repeated_indices_accumulates():
    y = dynjit.arange(1.0, 17).view(4, 4).requires_grad_()
    idx = dynjit.tensor([1, 1, 3, 2, 1, 2])
    y[idx].sum().backward()
    expected = np.zeros((4, 4))
    for i in idx.tolist():
        expected[i] += 1
    close(y.grad, expected)

    y = dynjit.arange(1.0, 17).view(4, 4).requires_grad_()
    y[[1, 1, 3, 2, 1, 2], [0]].sum().backward()
    expected = np.zeros((4, 4))
    for i in [1, 1, 3, 2, 1, 2]:
        expected[i][0] += 1
    close(y.grad, expected)

    y = dynjit.arange(1.0, 17).view(4, 4).requires_grad_()
    y[[[1, 2], [0, 0]], [[0, 1], [1, 1]]].sum().backward()
    close(y.grad, [[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])

    y = dynjit.arange(1.0, 65).view(4, 4, 4).requires_grad_()
    y[[1, 1, 1], :, :].sum().backward()
    expected = np.zeros((4, 4, 4))
    expected[1] = 3
    close(y.grad, expected)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_index_backward_does_not_save_tensor
def test_advanced_index_does_not_save_its_source():
    a = dynjit.tensor([1.0, 0, 0])
    b = dynjit.zeros(3, requires_grad=True)
    t = b + 0
    t[a != 0] = t[a != 0]     # the read must not save t, which the write then modifies
    t.backward(dynjit.zeros_like(t))


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_shape
def test_shape_is_a_tuple_of_sizes():
    x = dynjit.randn(3, 4)
    assert len(x.shape) == 2
    assert x.shape[0] == 3
    assert x.shape[1] == 4


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_numpy_requires_grad
def test_numpy_refuses_tensors_that_require_grad():
    x = dynjit.randn(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad. "
                                           r"Use tensor.detach\(\).numpy\(\) instead."):
        x.numpy()
    x.detach().numpy()
    with dynjit.no_grad():          # as in PyTorch, allowed while gradients are off
        arr = x.numpy()
    np.testing.assert_array_equal(arr, x.detach().numpy())
    x = dynjit.randn(2, 2)
    x.numpy()
    with dynjit.no_grad():
        x.numpy()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_pickle
def test_pickle_keeps_values_and_requires_grad():
    x = dynjit.randn(10, 10, requires_grad=True)
    y = dynjit.randn(10, 10)
    for protocol in range(3):
        xc, yc = pickle.loads(pickle.dumps([x, y], protocol=protocol))
        close(xc, x)
        close(yc, y)
        assert xc.requires_grad and not yc.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_pow_zero_tensor_gradient
@pytest.mark.parametrize("size, exponent", [((10,), dynjit.zeros(10)), ((10, 10), dynjit.zeros(10, 10)),
                                            ((10,), 0)])
def test_gradient_of_zero_to_the_zero_is_zero(size, exponent):
    x = dynjit.zeros(*size, requires_grad=True)
    x.pow(exponent).sum().backward()
    assert x.grad.abs().sum().item() == 0


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_unrelated_inputs
def test_gradcheck_with_an_input_the_function_ignores():
    x = dynjit.rand(10, dtype=dynjit.double, requires_grad=True)
    y = dynjit.rand(10, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(lambda x, y: x * x, (x, y))
    assert gradgradcheck(lambda x, y: x * x, (x, y))


def _add_one_through_a_view(x):
    out = x.clone().view(-1)
    out.add_(1)
    return out


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_view_replay_enabled
def test_view_replay_switches_how_a_views_grad_fn_is_regenerated():
    x = dynjit.ones(2, 2, requires_grad=True)
    with dynjit.autograd._force_original_view_tracking(False):
        assert "AsStridedBackward" in str(_add_one_through_a_view(x).grad_fn)
        assert not dynjit.autograd.is_view_replay_enabled()
    assert not dynjit.autograd.is_view_replay_enabled()

    with dynjit.autograd._force_original_view_tracking(True):
        out = _add_one_through_a_view(x)
        assert "ViewBackward" in str(out.grad_fn)
        assert dynjit.autograd.is_view_replay_enabled()
    out.sum().backward()
    close(x.grad, np.ones((2, 2)))     # the replayed nodes compute the same gradient
    assert "AsStridedBackward" in str(_add_one_through_a_view(x).grad_fn)
    assert not dynjit.autograd.is_view_replay_enabled()

    with dynjit.autograd._force_original_view_tracking(False):
        dynjit.autograd._force_original_view_tracking(True)     # a plain call takes effect
        assert "ViewBackward" in str(_add_one_through_a_view(x).grad_fn)
        assert dynjit.autograd.is_view_replay_enabled()
    assert not dynjit.autograd.is_view_replay_enabled()

    try:
        dynjit.autograd._force_original_view_tracking(False)
        assert "AsStridedBackward" in str(_add_one_through_a_view(x).grad_fn)
        assert not dynjit.autograd.is_view_replay_enabled()
        dynjit.autograd._force_original_view_tracking(True)
        assert "ViewBackward" in str(_add_one_through_a_view(x).grad_fn)
        assert dynjit.autograd.is_view_replay_enabled()
    finally:
        dynjit.autograd._force_original_view_tracking(False)     # leave the default for other tests
    assert "AsStridedBackward" in str(_add_one_through_a_view(x).grad_fn)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_unsafe_set_version_counter
def test_version_counter_can_be_preserved_or_set():
    x = dynjit.ones(2, requires_grad=True).clone()
    x.add_(1)
    x.add_(2)
    assert x._version == 2
    with dynjit.autograd._unsafe_preserve_version_counter(x):
        x.mul_(2)
        x.mul_(3)
    assert x._version == 2
    ag._unsafe_set_version_counter(x, 0)
    assert x._version == 0
    with pytest.raises(RuntimeError, match="Cannot set"):
        ag._unsafe_set_version_counter(x, -1)


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_attribute_deletion
def test_only_grad_can_be_deleted():
    x = dynjit.randn(5, 5, requires_grad=True)
    x.sum().backward()
    del x.grad
    assert x.grad is None
    with pytest.raises(RuntimeError):
        del x.data
    with pytest.raises(TypeError):
        x.data = None
    with pytest.raises(RuntimeError):
        del x.requires_grad
    with pytest.raises(RuntimeError):
        del x._grad_fn
    with pytest.raises(RuntimeError):
        del x._backward_hooks
    assert x.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_volatile_deprecated
def test_volatile_is_always_false_and_warns():
    v = dynjit.randn(3, 3)
    with pytest.warns(UserWarning, match="volatile"):
        assert v.volatile is False
