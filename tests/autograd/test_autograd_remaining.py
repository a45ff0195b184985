"""Autograd behaviours from seed 002 that had no port yet: the edges of a node whose
op took a Python number, double backward through an in-place op on a view, gradcheck's
check of undefined output gradients, and "any" multi-grad hooks across modules."""
import warnings
from functools import partial

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.autograd import Function, gradcheck
from dynjit.autograd import graph as ag
from dynjit.autograd.gradcheck import GradcheckError


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_next_functions
def test_next_functions_list_an_empty_edge_for_a_python_number_operand():
    x = dynjit.randn(5, 5, requires_grad=True)
    y = dynjit.randn(5, 5, requires_grad=True)
    a = x + y
    nf = a.grad_fn.next_functions
    assert len(nf) == 2
    assert all(isinstance(fn, ag.AccumulateGrad) and nr == 0 for fn, nr in nf)

    # PyTorch wraps the 5 in a tensor that needs no grad: the node has an edge for it,
    # an empty one, (None, 0)
    b = a + 5
    nf = b.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0] is a.grad_fn and nf[0] == (a.grad_fn, 0)
    assert nf[1][0] is None and nf[1] == (None, 0)
    # the same for the other arithmetic ops, in place too, and backward still works
    for c in (a - 2, a * 3.0, a / 4, 2 * a, a.clone().add_(1)):
        assert len(c.grad_fn.next_functions) == 2 and c.grad_fn.next_functions[1] == (None, 0)
    (a * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((5, 5), 3.0))
    # ops whose PyTorch schema takes a Scalar there keep one edge
    assert len(a.pow(2).grad_fn.next_functions) == 1
    assert len((5 - a).grad_fn.next_functions) == 1


# port of 002_7f98adb56adba91b.txt TestProfiler.test_inplace_on_view_backward
# (partial: see the docstring)
def test_double_backward_through_an_in_place_op_on_a_view():
    """The seed's values; its last check, that the gradient's graph reaches
    ThresholdBackwardBackward0 under a CopySlices, waits on F.threshold as one op (dynjit
    composes it of where and copy_): the row is todo."""
    net = nn.Sequential(nn.InstanceNorm2d(2), nn.ReLU(True))
    x = dynjit.tensor([[[[1.0, 1.0]]]], requires_grad=True)
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        out = net(x)
    (g,) = dynjit.autograd.grad(out.pow(2), [x], grad_outputs=x.new_ones(x.shape), create_graph=True)
    dynjit.autograd.grad(g.sum(), [x])
    np.testing.assert_array_equal(x.detach().numpy(), [[[[1.0, 1.0]]]])

    inputs = dynjit.ones((1, 3, 256, 256), requires_grad=True)
    tmp1 = (inputs + 1).view_as(inputs)
    tmp2 = nn.functional.threshold(tmp1, 0.0, 0.0, True)     # in place on a view
    prob = dynjit.sigmoid(tmp2)
    (gradients,) = dynjit.autograd.grad(outputs=prob, inputs=inputs,
                                        grad_outputs=dynjit.ones(prob.size()),
                                        create_graph=True, retain_graph=True)
    penalty = gradients.sum()
    penalty.backward()
    s = 1 / (1 + np.exp(-2.0))           # d/dx of s(1-s) at x + 1 = 2
    np.testing.assert_allclose(inputs.grad.numpy(), np.full((1, 3, 256, 256), s * (1 - s) * (1 - 2 * s)),
                               rtol=1e-5)


class _NeedsDefinedGrad(Function):
    """A backward that cannot handle an undefined output gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        if g is None:
            raise RuntimeError("g is undefined")
        return g


class _GradFromNothing(Function):
    """A backward that makes a nonzero gradient out of an undefined one."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return dynjit.ones(1, dtype=dynjit.double) if g is None else g


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_undefined_grad
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_checks_backward_handles_undefined_output_grads(fast_mode):
    # the seed's case: a tensor hook, which an undefined gradient reaches as None (as in
    # PyTorch), raises on it
    def fn(x):
        def hook(g):
            if g is None:
                raise RuntimeError("x is undefined")

        y = x.clone()
        y.register_hook(hook)
        return y

    x = dynjit.ones(1, dtype=dynjit.double, requires_grad=True)
    with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient support "
                                         "checking feature"):
        with pytest.raises(RuntimeError, match="Expected backward function to handle undefined "
                                               "output grads"):
            gradcheck(fn, (x,), fast_mode=fast_mode)
        assert gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode) is False

    # the same for a custom Function's backward that needs a defined gradient
    with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient support "
                                         "checking feature"):
        with pytest.raises(RuntimeError, match="Expected backward function to handle undefined "
                                               "output grads") as info:
            gradcheck(_NeedsDefinedGrad.apply, (x,), fast_mode=fast_mode)
    assert isinstance(info.value, GradcheckError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(_NeedsDefinedGrad.apply, (x,), raise_exception=False, fast_mode=fast_mode) is False
    # the gradients themselves are right: without the check it passes
    assert gradcheck(_NeedsDefinedGrad.apply, (x,), check_undefined_grad=False, fast_mode=fast_mode)

    with pytest.warns(UserWarning, match="Backwards compatibility"):
        with pytest.raises(RuntimeError, match="Expected all input grads to be undefined or zero"):
            gradcheck(_GradFromNothing.apply, (x,), fast_mode=fast_mode)

    # one output at a time undefined: a backward that needs both fails, ops pass
    def two_outputs(t):
        a = _NeedsDefinedGrad.apply(t)
        return a * 2, a.sin()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(two_outputs, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: (t * 2, t.sin()), (x,), fast_mode=fast_mode)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_multi_grad_any_hooks
def test_any_multi_grad_hooks_of_nested_modules_run_once_before_tensor_hooks():
    order = []
    handles = []
    next_id = [0]

    def hook(hook_id, *unused):
        order.append(hook_id)

    class TwoOutputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            z = self.lin(x)
            out = dynjit.sin(z), dynjit.cos(z)
            z.register_hook(partial(hook, next_id[0]))
            handles.append(ag.register_multi_grad_hook(out, partial(hook, next_id[0] + 1), mode="any"))
            next_id[0] += 2
            return out

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mod1 = TwoOutputs()
            self.mod2 = TwoOutputs()

        def forward(self, x):
            y = self.mod1(x)
            return self.mod2(y[0] + y[1])

    model = Model()
    inp = dynjit.randn(2, 3)
    out = model(inp)
    (out[0] + out[1]).sum().backward()
    # "any" hooks (ids 1 and 3) fire once per pass each, and before the tensor hooks
    # (ids 0 and 2) of the same module
    assert len(handles) == 2
    assert order == [3, 2, 1, 0]

    next_id[0] = 0
    order.clear()
    handles.clear()
    out = model(inp)
    for h in handles:
        h.remove()
    (out[0] + out[1]).sum().backward()
    assert order == [2, 0]
