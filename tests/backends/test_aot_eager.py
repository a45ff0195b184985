"""The aot_eager backend behind dynjit.compile: whole programs (graph breaks,
no_grad regions, input mutation, training steps) give eager's results and
gradients, and their forward/backward graphs can be seen."""
import numpy as np
import pytest

import dynjit
from dynjit.testing import AotEagerAndRecordGraphs


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dynjit.Tensor):
        assert a.requires_grad == b.requires_grad
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    else:
        assert a == b


def _check(fn, make_args, backend="aot_eager"):
    compiled = dynjit.compile(fn, backend=backend)
    for _ in range(2):                        # the second call runs the cached graphs
        dynjit.manual_seed(3)
        ref_args = make_args()
        dynjit.manual_seed(3)
        args = make_args()
        ref, res = fn(*ref_args), compiled(*args)
        _same(ref, res)
        _same(ref_args, args)                 # inputs written alike
        leaves = [a for a in args if isinstance(a, dynjit.Tensor) and a.requires_grad and a.is_leaf]
        ref_leaves = [a for a in ref_args if isinstance(a, dynjit.Tensor) and a.requires_grad and a.is_leaf]
        outs = [o for o in (res if isinstance(res, tuple) else (res,)) if o.requires_grad]
        ref_outs = [o for o in (ref if isinstance(ref, tuple) else (ref,)) if o.requires_grad]
        if outs:
            sum(o.sum() for o in outs).backward()
            sum(o.sum() for o in ref_outs).backward()
            for a, b in zip(ref_leaves, leaves):
                _same(a.grad, b.grad)


def test_graph_break_inside_no_grad():
    def fn(x):
        with dynjit.no_grad():
            y = x * 2
            print("inside no_grad")
            z = y * x
        return z, x * 3
    _check(fn, lambda: [dynjit.randn(3, requires_grad=True)])


def test_input_written_in_place():
    def fn(x, buf):
        buf.add_(x.detach())
        return (x * buf).sum()
    _check(fn, lambda: [dynjit.randn(4, requires_grad=True), dynjit.zeros(4)])


def test_data_dependent_branch():
    def fn(x, w):
        h = x @ w
        if h.sum() > 0:
            return h.relu().sum()
        return (h * h).sum()
    _check(fn, lambda: [dynjit.randn(5, 3), dynjit.randn(3, 4, requires_grad=True)])


def test_training_steps_match_eager():
    def step(w, x, y):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with dynjit.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad = None
        return loss.detach()
    dynjit.manual_seed(0)
    w_ref, x, y = dynjit.randn(3, 1, requires_grad=True), dynjit.randn(8, 3), dynjit.randn(8, 1)
    w = w_ref.detach().clone().requires_grad_()
    compiled = dynjit.compile(step, backend="aot_eager")
    for _ in range(3):
        _same(step(w_ref, x, y), compiled(w, x, y))
    _same(w_ref, w)


def test_forward_and_backward_graphs_are_recorded():
    backend = AotEagerAndRecordGraphs()

    @dynjit.compile(backend=backend)
    def f(x):
        return (x.sin() * 2).sum()
    x = dynjit.randn(3, requires_grad=True)
    f(x).backward()
    assert len(backend.graphs) == 1 and len(backend.fw_graphs) == 1 and len(backend.bw_graphs) == 1
    assert dynjit.allclose(x.grad, 2 * x.cos())
    fw_targets = [n.target.name for n in backend.fw_graphs[0].graph.nodes if n.op == "call_function"]
    assert fw_targets == ["sin", "mul", "sum"]


@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_default_partitioner"])
def test_both_aot_backends(backend):
    def fn(a, b):
        c = a * b
        c[0] = 0.0
        return c.exp().sum(), c.view(-1)
    _check(fn, lambda: [dynjit.randn(2, 3, requires_grad=True), dynjit.randn(2, 3)], backend=backend)
