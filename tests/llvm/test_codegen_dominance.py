"""Values the llvm codegen emits for one loop scope dominate their uses.

Since kernels read float constants from the sizes array at run time, a constant used in a
vectorized loop is a splat of a loaded value: an instruction, no longer an LLVM constant.
Such splats (and splats of loop invariants) were emitted wherever the builder stood when a
value was first asked for, often inside a nested or a sibling loop, and memoized for the
scope that needed them; a use in that scope's own block was then not dominated and LLVM's
verifier refused the module ("Instruction does not dominate all uses"). BatchNorm's
backward (a reduction over the batch dim, then broadcasting back, with 1/N and eps as
run-time constants) hit it. Each case here runs the same code eagerly and under
`dynjit.compile(backend="llvm")` for several sizes and compares values, gradients and
BatchNorm's running statistics.
"""
import numpy as np
import pytest

import dynjit
from dynjit import nn
from llvm_helpers import check


def _assert_close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=what)


def _step(bn, x, weights):
    """BatchNorm forward and backward of a non-uniform weighting of the output (a plain
    sum's gradient through batch norm is zero)."""
    out = bn(x)
    (out * weights).sum().backward()
    return out


def _run_both(make_bn, shape, seed):
    dynjit.manual_seed(seed)
    bn_eager = make_bn()
    with dynjit.no_grad():
        bn_eager.weight.copy_(dynjit.randn(*bn_eager.weight.shape))
        bn_eager.bias.copy_(dynjit.randn(*bn_eager.bias.shape))
    bn_comp = make_bn()
    bn_comp.load_state_dict(bn_eager.state_dict())
    x_np = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3 + 1
    w = dynjit.tensor(np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32))
    xe = dynjit.tensor(x_np, requires_grad=True)
    xc = dynjit.tensor(x_np, requires_grad=True)
    oe = _step(bn_eager, xe, w)
    oc = dynjit.compile(lambda x: _step(bn_comp, x, w), backend="llvm")(xc)
    _assert_close(oc.detach().numpy(), oe.detach().numpy(), "output")
    _assert_close(xc.grad.numpy(), xe.grad.numpy(), "x.grad")
    _assert_close(bn_comp.weight.grad.numpy(), bn_eager.weight.grad.numpy(), "weight.grad")
    _assert_close(bn_comp.bias.grad.numpy(), bn_eager.bias.grad.numpy(), "bias.grad")
    _assert_close(bn_comp.running_mean.numpy(), bn_eager.running_mean.numpy(), "running_mean")
    _assert_close(bn_comp.running_var.numpy(), bn_eager.running_var.numpy(), "running_var")


@pytest.mark.parametrize("shape", [(4, 8), (2, 8), (7, 8), (33, 8), (5, 3), (64, 20)])
def test_batchnorm1d_2d_forward_and_backward(shape):
    _run_both(lambda: nn.BatchNorm1d(shape[1]), shape, seed=shape[0])


@pytest.mark.parametrize("shape", [(4, 8, 5), (2, 3, 17), (9, 8, 1), (16, 4, 33)])
def test_batchnorm1d_3d_forward_and_backward(shape):
    _run_both(lambda: nn.BatchNorm1d(shape[1]), shape, seed=shape[0] + shape[2])


@pytest.mark.parametrize("shape", [(4, 3, 5, 5), (2, 8, 4, 7), (3, 2, 1, 19), (8, 16, 6, 6)])
def test_batchnorm2d_forward_and_backward(shape):
    _run_both(lambda: nn.BatchNorm2d(shape[1]), shape, seed=shape[0] * shape[3])


def test_batchnorm1d_training_steps_over_several_batch_sizes():
    """One compiled function over changing batch sizes (the kernels are reused across sizes,
    the constants 1/N and N/(N-1) change) keeps matching eager, running stats included."""
    dynjit.manual_seed(0)
    bn_eager, bn_comp = nn.BatchNorm1d(6), nn.BatchNorm1d(6)
    bn_comp.load_state_dict(bn_eager.state_dict())
    comp = dynjit.compile(lambda x, w: _step(bn_comp, x, w), backend="llvm")
    for n in (3, 5, 8, 13, 21, 4):
        x_np = np.random.default_rng(n).standard_normal((n, 6)).astype(np.float32)
        w = dynjit.randn(n, 6)
        xe, xc = dynjit.tensor(x_np, requires_grad=True), dynjit.tensor(x_np, requires_grad=True)
        for bn in (bn_eager, bn_comp):
            bn.zero_grad()
        oe = _step(bn_eager, xe, w)
        oc = comp(xc, w)
        _assert_close(oc.detach().numpy(), oe.detach().numpy(), f"output, n={n}")
        _assert_close(xc.grad.numpy(), xe.grad.numpy(), f"x.grad, n={n}")
        _assert_close(bn_comp.weight.grad.numpy(), bn_eager.weight.grad.numpy(), f"weight.grad, n={n}")
        _assert_close(bn_comp.running_var.numpy(), bn_eager.running_var.numpy(), f"running_var, n={n}")


def _batch_centered_scaled(x, g):
    # reductions over the batch dim, then their results and run-time float constants
    # (0.3, 1e-5, 1/N from mean) broadcast back over the batch, in vector loops
    m = x.mean(0)
    v = ((x - m) ** 2).mean(0)
    return (g - g.mean(0) * 0.3) * (x - m) / (v + 1e-5).sqrt() + 0.7 * g.sum(0)


@pytest.mark.parametrize("shape", [(4, 8), (3, 37), (17, 16), (2, 5, 33)])
def test_graph_reduction_over_batch_then_broadcast_with_float_constants(shape):
    rng = np.random.default_rng(sum(shape))
    x = dynjit.tensor(rng.standard_normal(shape).astype(np.float32))
    g = dynjit.tensor(rng.standard_normal(shape).astype(np.float32))
    check(_batch_centered_scaled, x, g, rtol=1e-5, atol=1e-5)
