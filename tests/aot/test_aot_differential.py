"""Differential tests: aot_function(f, nop) against f, over a table of functions.

Each case is checked by verify_aot (outputs, aliasing, input mutations,
gradients, writes through outputs), compiled first on other values so a value
wrongly baked into the graph shows, under both partitioners."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop, default_partition, min_cut_rematerialization_partition
from dynjit.ops import registry as R

from aot_verify import verify_aot, run


def leaves(*shapes, requires_grad=True, dtype=None):
    def make():
        ts = [dynjit.randn(*s, dtype=dtype, requires_grad=requires_grad) for s in shapes]
        return ts, ts
    return make


def mixed(*specs):
    """Arguments from (shape, requires_grad) specs and plain Python values."""
    def make():
        args = [dynjit.randn(*s[0], requires_grad=s[1]) if isinstance(s, tuple) and isinstance(s[0], tuple)
                else s for s in specs]
        return [a for a in args if isinstance(a, dynjit.Tensor) and a.requires_grad], args
    return make


def non_leaves(*shapes):
    def make():
        bases = [dynjit.randn(*s, requires_grad=True) for s in shapes]
        return bases, [b * 1 for b in bases]
    return make


class Cube(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x * x * g


def _mlp_loss(x, w1, b1, w2, target):
    h = R["linear"](x, w1, b1).relu()
    logits = h @ w2
    return R["nll_loss"](logits.log_softmax(-1), target)


def _inplace_on_intermediates(x):
    y = x * 2
    y.add_(1)
    y.mul_(x)
    y.sigmoid_()
    return y


def _inplace_on_views_of_intermediates(x):
    y = x * 2
    y[0].zero_()
    y.t()[1].mul_(3)
    r = y[1:, 1:]
    r.add_(x[:2, :2])
    return y, r


def _setitem(x, y):
    z = x.clone()
    z[1:] = y[:-1]
    z[0, 0] = 3.0
    z[:, 1] += y[:, 0]
    return z


def _mutates_input(a, b):
    a.mul_(b)
    a[0].add_(1)
    return a.sum() + b


CASES = {
    "broadcasting": (lambda x, y, s: x + y * s - x.exp() / (y + 2) ** 2,
                     leaves((3, 1), (4,), ())),
    "scalars_and_type_promotion": (lambda x, y: (x * 2.5 + 1) * y.double(), leaves((3,), (3,))),
    "reductions": (lambda x: (x.sum(1, keepdim=True) + x.mean() + x.amax(0) - x.var(1, keepdim=True)
                              + x.logsumexp(1, keepdim=True) + x.norm()), leaves((3, 4))),
    "max_along_dim": (lambda x: x.max(1), leaves((3, 5))),
    "views": (lambda x: (x.t().reshape(12) * 2, x.permute(1, 0).unsqueeze(0).expand(2, 4, 3),
                         x.narrow(1, 1, 2).select(0, 2), x[1:, ::2].squeeze()), leaves((3, 4))),
    "view_outputs_of_input": (lambda x: (x.view(-1), x[0], x.t(), x.unsqueeze(1)), leaves((2, 3))),
    "matmul_chain": (lambda a, b, c: (a @ b).tanh() @ c, leaves((2, 3), (3, 4), (4, 2))),
    "mlp_loss": (lambda x, w1, b1, w2, t: _mlp_loss(x, w1, b1, w2, t),
                 mixed(((4, 5), False), ((6, 5), True), ((6,), True), ((6, 3), True),
                       dynjit.tensor([0, 2, 1, 2]))),
    "softmax_and_where": (lambda x, y: dynjit.where(x > 0, x.softmax(-1), y.clamp(-0.5, 0.5)),
                          leaves((3, 4), (3, 4))),
    "cat_stack_split": (lambda x, y: [p * i for i, p in enumerate(dynjit.cat([x, y], 0).split(2))]
                        + [dynjit.stack([x, y]).sum(0)], leaves((3, 2), (3, 2))),
    "gather_and_index": (lambda x, i: (x.gather(1, i), x[i[:, 0]], x.index_select(0, i[:, 1])),
                         mixed(((3, 4), True), dynjit.tensor([[0, 1], [2, 2], [1, 0]]))),
    "masked_fill": (lambda x: x.masked_fill(x < 0, 0.0) * 3, leaves((4, 4))),
    "inplace_on_intermediates": (_inplace_on_intermediates, leaves((3, 3))),
    "inplace_on_views_of_intermediates": (_inplace_on_views_of_intermediates, leaves((3, 3))),
    "setitem": (_setitem, leaves((3, 3), (3, 3))),
    "input_mutation": (_mutates_input, non_leaves((2, 3), (2, 3))),
    "multiple_outputs": (lambda x, y: (x * y, x - y, (x * y).sum()), leaves((3,), (3,))),
    "int_outputs": (lambda x: (x * 2, x.shape[0], x.numel(), x.dim()), leaves((2, 5))),
    "integer_tensor_inputs": (lambda x, n: x * n + n.sum(), mixed(((3,), True), dynjit.tensor([1, 2, 3]))),
    "non_tensor_args": (lambda x, k, flag: (x * k if flag else x) + k, mixed(((3,), True), 3, True)),
    "unused_inputs": (lambda x, y, z: x * 2, leaves((3,), (3,), (3,))),
    "inputs_not_requiring_grad": (lambda x, y: x * y + y, mixed(((3,), True), ((3,), False))),
    "nothing_requires_grad": (lambda x, y: x * y + y, leaves((3,), (3,), requires_grad=False)),
    "float64": (lambda x, y: (x * y).sin(), leaves((3,), (3,), dtype=dynjit.float64)),
    "custom_function": (lambda x: Cube.apply(x * 2).sum(), leaves((4,))),
    "grad_inside": (lambda x: dynjit.autograd.grad((x.sin() * x).sum(), x, create_graph=True)[0], leaves((3,))),
    "dropout": (lambda x: dynjit.dropout(x, 0.3) * x, leaves((8,))),
    "detach_and_no_grad": (lambda x: _detached(x), leaves((3,))),
    "returns_input_and_none": (lambda x, y: (x, None, y + 1), leaves((2,), (2,))),
    "same_tensor_twice": (lambda x, y: x * y + y, lambda: ([x := dynjit.randn(3, requires_grad=True)], [x, x])),
}


def _detached(x):
    y = x * 2
    with dynjit.no_grad():
        z = y * 3
    return y + z, y.detach()


@pytest.mark.parametrize("partition", [default_partition, min_cut_rematerialization_partition],
                         ids=["default", "min_cut"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name, partition):
    f, make = CASES[name]
    verify_aot(f, make, compiled_f=aot_function(f, nop, partition_fn=partition))


NEED_GRAD = {"grad_inside"}


@pytest.mark.parametrize("name", sorted(set(CASES) - NEED_GRAD))
def test_matches_eager_without_grad(name):
    f, make = CASES[name]
    compiled = aot_function(f, nop)
    with dynjit.no_grad():
        verify_aot(f, make, compiled_f=compiled, backward=False)


def test_second_call_reuses_the_graph():
    calls = []
    f = aot_function(lambda x: x.sin(), lambda gm, ex: calls.append(gm) or gm)
    for _ in range(3):
        x = dynjit.randn(3, requires_grad=True)
        f(x).sum().backward()
        assert dynjit.allclose(x.grad, x.cos())
    assert len(calls) == 2          # one forward, one backward


# -- the checker itself catches what it is meant to catch ---------------------

def test_verifier_catches_a_lost_alias():
    def f(x):
        return x.view(-1)
    with pytest.raises(AssertionError, match="alias"):
        run(f, leaves((2, 2)), compiled_f=lambda x: x.view(-1).clone())


def test_verifier_catches_a_lost_input_write():
    def f(x):
        x.add_(1)
        return x * 2
    with pytest.raises(AssertionError, match="inputs after the call"):
        run(f, leaves((2,), requires_grad=False), compiled_f=lambda x: (x + 1) * 2)


def test_verifier_catches_wrong_gradients():
    class WrongGrad(dynjit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    with pytest.raises(AssertionError, match="gradient of leaf 0"):
        run(lambda x: x * 2, leaves((3,)), compiled_f=WrongGrad.apply)


def test_verifier_catches_a_value_baked_into_the_graph():
    state = {}

    def baked(x):            # remembers the first call's input, like a graph holding a constant
        state.setdefault("x", x.detach().clone())
        return state["x"] * 2
    with pytest.raises(AssertionError, match="output"):
        run(lambda x: x * 2, leaves((3,), requires_grad=False), compiled_f=baked)
