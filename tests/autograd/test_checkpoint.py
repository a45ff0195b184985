"""Activation checkpointing (dynjit.utils.checkpoint): both implementations give the
gradients of the plain run, really rerun the function in backward, do not keep the
activations, restore the RNG state for the rerun, nest, stop recomputing early; the seed
tests about checkpointing; selective checkpointing; checkpoint under dynjit.compile."""
import contextlib
import copy
import functools
import gc
import warnings
import weakref

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit.autograd import Function
from dynjit.ops.dispatch import DispatchMode
from dynjit.utils.checkpoint import (CheckpointError, CheckpointPolicy, checkpoint,
                                     checkpoint_sequential, create_selective_checkpoint_contexts,
                                     set_checkpoint_early_stop)

REENTRANT = pytest.mark.parametrize("use_reentrant", [True, False])


def close(a, b):
    return a.shape == b.shape and np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-6)


class OpRecorder(DispatchMode):
    """Records the name of every op dispatched while it is active."""

    def __init__(self):
        self.operators = []

    def __dispatch__(self, op, args, kwargs):
        self.operators.append(op.name)
        return op(*args, **(kwargs or {}))


# -- the basics --------------------------------------------------------------------------

@REENTRANT
def test_gradients_equal_the_plain_run_and_forward_is_rerun_once(use_reentrant):
    calls = [0]

    def block(x, w):
        calls[0] += 1
        return (x @ w).tanh().sin() * x.sum()

    x = dynjit.randn(4, 3, requires_grad=True)
    w = dynjit.randn(3, 3, requires_grad=True)
    expected = dynjit.autograd.grad(block(x, w).sum(), (x, w))
    calls[0] = 0
    out = checkpoint(block, x, w, use_reentrant=use_reentrant)
    assert calls[0] == 1
    assert close(out, block(x, w).detach())
    calls[0] = 0
    out.sum().backward()
    assert calls[0] == 1                 # the forward ran again in backward
    assert close(x.grad, expected[0]) and close(w.grad, expected[1])


def test_non_reentrant_saves_holders_not_activations():
    # the tensors the block's ops save are freed right after the forward: only the
    # checkpoint's inputs are kept
    refs = []

    def block(x):
        h = x.exp()
        refs.append(weakref.ref(h))
        g = h.sin()
        refs.append(weakref.ref(g))
        return g.cos()

    x = dynjit.randn(5, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert [r() for r in refs] == [None, None]
    # without checkpoint, the saved outputs of exp and sin stay alive with the graph
    refs.clear()
    plain = block(x)
    assert all(r() is not None for r in refs)
    out.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    plain.sum().backward()
    assert close(g1, x.grad)


def test_reentrant_keeps_no_graph_inside_the_block():
    refs = []

    def block(x):
        h = x.exp()
        refs.append(weakref.ref(h))
        return h.sin()

    x = dynjit.randn(5, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=True)
    gc.collect()
    assert refs[0]() is None
    assert out.grad_fn.name() == "CheckpointFunctionBackward"


@REENTRANT
def test_dropout_recomputes_the_same_mask(use_reentrant):
    drop = nn.Dropout(0.5)

    def block(x):
        return drop(x) * 3

    x = dynjit.randn(200, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=use_reentrant)
    dynjit.randn(7)                              # the generator moves on before backward
    out.sum().backward()
    # d(out)/dx is 3 * mask / (1 - p): nonzero exactly where the forward kept x
    kept = out.detach().numpy() != 0
    assert np.allclose(x.grad.numpy(), np.where(kept, 6.0, 0.0))
    assert 0 < kept.sum() < 200


@REENTRANT
def test_without_preserve_rng_state_the_rerun_draws_afresh(use_reentrant):
    drop = nn.Dropout(0.5)
    x = dynjit.randn(200, requires_grad=True)
    out = checkpoint(lambda t: drop(t), x, use_reentrant=use_reentrant, preserve_rng_state=False)
    out.sum().backward()
    kept = out.detach().numpy() != 0
    assert not np.array_equal(x.grad.numpy() != 0, kept)


@REENTRANT
def test_rerun_leaves_the_generator_where_backward_found_it(use_reentrant):
    x = dynjit.randn(3, requires_grad=True)
    out = checkpoint(lambda t: t * dynjit.rand(3), x, use_reentrant=use_reentrant)
    state = dynjit.get_rng_state()
    out.sum().backward()
    after = dynjit.rand(4)
    dynjit.set_rng_state(state)
    assert close(after, dynjit.rand(4))


def test_kwargs_only_for_non_reentrant():
    x = dynjit.randn(3, requires_grad=True)
    y = dynjit.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda a, scale: a * scale, x, scale=y, use_reentrant=True)
    out = checkpoint(lambda a, scale: a * scale, x, scale=y, use_reentrant=False)
    gx, gy = dynjit.autograd.grad(out.sum(), (x, y))
    assert close(gx, y) and close(gy, x)


def test_context_fn_and_debug_only_for_non_reentrant():
    x = dynjit.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda a: a.sin(), x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(lambda a: a.sin(), x, use_reentrant=False, determinism_check="bitwise")


def test_reentrant_warns_when_no_input_requires_grad():
    x = dynjit.randn(3)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda a: a.sin(), x, use_reentrant=True)


def test_non_reentrant_under_no_grad_records_nothing():
    x = dynjit.randn(3, requires_grad=True)
    with dynjit.no_grad():
        out = checkpoint(lambda a: a.sin(), x, use_reentrant=False)
    assert out.grad_fn is None and not out.requires_grad


def test_non_reentrant_backward_twice_with_retain_graph_recomputes_each_time():
    calls = [0]

    def block(a):
        calls[0] += 1
        return a.sin().exp()

    x = dynjit.randn(3, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False)
    out.sum().backward(retain_graph=True)
    g = x.grad.clone()
    out.sum().backward()
    assert calls[0] == 3
    assert close(x.grad, 2 * g)


def test_recomputation_that_saves_differently_is_an_error():
    flip = [False]

    def block(a):
        if flip[0]:
            return a.sin()                 # saves one tensor
        return a.sin().exp()               # saves two

    x = dynjit.randn(3, requires_grad=True)
    with set_checkpoint_early_stop(False):
        out = checkpoint(block, x, use_reentrant=False)
    flip[0] = True
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        out.sum().backward()


def test_debug_lists_the_ops_of_the_forward_and_the_recomputation():
    flip = [False]

    def block(a):
        return a.sin() if flip[0] else a.sin().exp()

    x = dynjit.randn(3, requires_grad=True)
    with set_checkpoint_early_stop(False):
        out = checkpoint(block, x, use_reentrant=False, debug=True)
    flip[0] = True
    with pytest.raises(CheckpointError) as info:
        out.sum().backward()
    message = str(info.value)
    assert "A different number of tensors was saved" in message
    assert "original forward:\n  sin\n  exp\nOperations executed during recomputation:\n  sin" in message
    with pytest.raises(ValueError, match="debug=True is incompatible with non-default context_fn"):
        checkpoint(block, x, use_reentrant=False, debug=True,
                   context_fn=lambda: (contextlib.nullcontext(), contextlib.nullcontext()))


def test_recomputed_shape_mismatch_is_an_error():
    n = [3]

    def block(a):
        return a[:n[0]].exp().sum()

    x = dynjit.randn(4, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False)
    n[0] = 2
    with pytest.raises(CheckpointError, match="have different metadata than during the forward"):
        out.backward()


@REENTRANT
def test_checkpoint_sequential(use_reentrant):
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
    ref = copy.deepcopy(model)
    x = dynjit.randn(3, 4, requires_grad=True)
    out = checkpoint_sequential(model, 2, x, use_reentrant=use_reentrant)
    expected = ref(x)
    assert close(out, expected)
    out.sum().backward()
    gx = x.grad.clone()
    x.grad = None
    expected.sum().backward()
    assert close(gx, x.grad)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert close(p.grad, q.grad)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential(model, 2, x, use_reentrant=use_reentrant, foo=1)


def test_nested_non_reentrant_gradients_and_second_order():
    def f(x):
        return x.sin().exp().sin()

    def nested(x):
        return checkpoint(lambda y: checkpoint(f, y, use_reentrant=False).cos(), x,
                          use_reentrant=False)

    x = dynjit.randn(4, requires_grad=True)
    (g_ref,) = dynjit.autograd.grad(f(x).cos().sum(), x, create_graph=True)
    (gg_ref,) = dynjit.autograd.grad(g_ref.sum(), x)
    (g,) = dynjit.autograd.grad(nested(x).sum(), x, create_graph=True)
    (gg,) = dynjit.autograd.grad(g.sum(), x)
    assert close(g, g_ref) and close(gg, gg_ref)


@REENTRANT
def test_input_modified_in_place_after_checkpoint_is_an_error(use_reentrant):
    x = dynjit.randn(3, requires_grad=True)
    y = x * 1
    out = checkpoint(lambda t: t.sin(), y, use_reentrant=use_reentrant)
    y.add_(1)
    # (non-reentrant: named by the node that made the input)
    node = "MulBackward0" if not use_reentrant else "CheckpointFunctionBackward"
    with pytest.raises(RuntimeError, match=f"modified by an inplace operation.*{node}"):
        out.sum().backward()
    # a leaf input that does not require grad
    w = dynjit.randn(3, requires_grad=True)
    leaf = dynjit.randn(3)
    with (pytest.warns(UserWarning, match="None of the inputs have requires_grad=True")
          if use_reentrant else contextlib.nullcontext()):
        out = checkpoint(lambda t: (t * w).sin(), leaf, use_reentrant=use_reentrant)
    leaf.add_(1)
    # (the reentrant one, as in PyTorch, gives no gradient to tensors the function only
    # closes over: with no input requiring grad, its output does not either)
    message = ("does not require grad and does not have a grad_fn" if use_reentrant
               else "modified by an inplace operation")
    with pytest.raises(RuntimeError, match=message):
        out.sum().backward()


def test_custom_function_reading_saved_tensors_twice_is_an_error():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors
            ctx.saved_tensors
            return g * 2

    x = dynjit.randn(3, requires_grad=True)
    out = checkpoint(lambda a: Twice.apply(a.sin()), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="already unpacked once"):
        out.sum().backward()


# -- selective checkpointing ---------------------------------------------------------------

def test_selective_checkpoint_replays_saved_ops_and_reruns_the_rest():
    recorded = OpRecorder()

    def block(x, w):
        return (x @ w).sin().exp()

    def context_fn():
        save_mm, replay = create_selective_checkpoint_contexts([dynjit.ops.matmul])
        return save_mm, _stack(recorded, replay)

    x = dynjit.randn(3, 3, requires_grad=True)
    w = dynjit.randn(3, 3, requires_grad=True)
    expected = dynjit.autograd.grad(block(x, w).sum(), (x, w))
    out = checkpoint(block, x, w, use_reentrant=False, context_fn=context_fn)
    got = dynjit.autograd.grad(out.sum(), (x, w))
    assert all(close(a, b) for a, b in zip(got, expected))
    # the replaying mode is innermost: recorded sees only the ops that really ran
    # again: matmul's output came from the forward
    assert [name for name in recorded.operators if name != "detach"] == ["sin", "exp"]


@contextlib.contextmanager
def _stack(*modes):
    with contextlib.ExitStack() as stack:
        for m in modes:
            stack.enter_context(m)
        yield


def test_selective_checkpoint_bool_policy_and_policy_context():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append((ctx.is_recompute, op.name))
        return op.name == "exp"

    x = dynjit.randn(3, requires_grad=True)
    fn = lambda a: a.exp().sin()          # noqa: E731
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy)
    out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
    (g,) = dynjit.autograd.grad(out.sum(), x)
    assert close(g, (x.exp().cos() * x.exp()))
    assert (False, "exp") in seen and (True, "exp") in seen


# -- ports of the seed tests -------------------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing
def test_checkpointing():
    num_inp, nz_inp, nz_bottleneck = 2000, 10, 1000
    module = nn.Sequential(nn.Linear(nz_inp, nz_bottleneck), nn.ReLU(),
                           nn.Linear(nz_bottleneck, nz_inp))
    feats = []
    for _ in range(num_inp):
        data_r = dynjit.rand(1, nz_inp)      # (the seed: empty, then uniform_())
        data_r.requires_grad = True
        feats.append(checkpoint(module, data_r, use_reentrant=True))
    dynjit.stack(feats).mean().backward()
    for p in module.parameters():
        assert p.grad is not None and p.grad.shape == p.shape


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_memory_savings
# (the seed reads CUDA's peak allocation; dynjit's tensors are numpy arrays, whose
# allocations tracemalloc traces)
def test_checkpointing_without_reentrant_memory_savings():
    import tracemalloc

    class MyModel(nn.Module):
        def __init__(self, n, use_checkpoint, use_reentrant):
            super().__init__()
            self.n = n
            self.use_checkpoint = use_checkpoint
            self.use_reentrant = use_reentrant
            self.layers = nn.ModuleList()
            for _ in range(self.n):
                self.layers.append(nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256),
                                                 nn.Linear(256, 256)))
            # gradients allocated up front: what grows is the activations
            for layer in self.layers:
                for lin in layer:
                    lin.weight.grad = dynjit.ones_like(lin.weight)
                    lin.bias.grad = dynjit.ones_like(lin.bias)

        def forward(self, x):
            for i in range(self.n):
                if not self.use_checkpoint:
                    x = self.layers[i](x)
                else:
                    x = checkpoint(self.layers[i], x, use_reentrant=self.use_reentrant)
            return x

    def peak_memory(model, x):
        tracemalloc.start()
        try:
            model(x.clone()).sum().backward()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    x = dynjit.randn(100, 256, requires_grad=True)
    mem_no_checkpoint = peak_memory(MyModel(8, use_checkpoint=False, use_reentrant=False), x)
    mem_reentrant_checkpoint = peak_memory(MyModel(8, use_checkpoint=True, use_reentrant=True), x)
    mem_no_reentrant_checkpoint = peak_memory(MyModel(8, use_checkpoint=True, use_reentrant=False), x)
    assert mem_reentrant_checkpoint < mem_no_checkpoint
    assert mem_no_reentrant_checkpoint < mem_no_checkpoint


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_custom_function_works
def test_checkpointing_without_reentrant_custom_function_works():
    msg = "Unpack is being triggered for a tensor that was already unpacked once"
    checked = []

    class MyFunc(Function):
        @staticmethod
        def forward(ctx, x, y, z):
            w = x * y * z
            out = w + w
            ctx.save_for_backward(x, y, z, w, out)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            x, y, z, w, out = ctx.saved_tensors
            with pytest.raises(RuntimeError, match=msg):
                x_2, y_2, z_2, w_2, out_2 = ctx.saved_tensors
            checked.append(True)
            return x, y, z

    x = dynjit.tensor(1.0, requires_grad=True)
    y = dynjit.tensor(2.0, requires_grad=True)
    z = dynjit.tensor(3.0, requires_grad=True)

    def foo(x, y, z):
        x = x * y * z
        y = y * y * z
        z = z * z
        return MyFunc.apply(x, y, z)

    out = checkpoint(foo, x, y, z, use_reentrant=False)
    out.sum().backward()
    assert checked == [True]


# port of 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_with_context_fn
# (partial: the detaches, see below)
def test_checkpointing_without_reentrant_with_context_fn():
    x = dynjit.tensor(1.0, requires_grad=True)
    verbose_mode = OpRecorder()

    def context_fn():
        return verbose_mode, contextlib.nullcontext()

    checkpoint(lambda x: x.exp(), x, use_reentrant=False, context_fn=context_fn)
    assert verbose_mode.operators == ["exp"]

    verbose_mode.operators = []

    def context_fn():
        return contextlib.nullcontext(), verbose_mode

    out = checkpoint(lambda x: x.exp(), x, use_reentrant=False, context_fn=context_fn)
    out.backward()
    # PyTorch also lists the recomputation hook's two detaches here ("exp", "detach",
    # "detach"): its dispatch modes sit below autograd, where the pack hook runs. dynjit's
    # modes sit above it, and the pack hook runs inside exp's dispatch, where the mode is
    # popped: the mode sees the recomputed exp only
    assert verbose_mode.operators == ["exp"]

    with pytest.raises(Exception, match="only supported when use_reentrant=False"):
        checkpoint(lambda x: x.sin(), x, use_reentrant=True, context_fn=context_fn)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpoint_warns_if_use_reentrant_not_passed_explcitly
def test_checkpoint_warns_if_use_reentrant_not_passed_explcitly():
    a = dynjit.randn(1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda x: x, a, use_reentrant=False)
    with pytest.warns(UserWarning, match=".*the use_reentrant parameter should be passed explicitly.*") as rec:
        checkpoint(lambda x: x, a)
    assert sum("use_reentrant" in str(w.message) for w in rec) == 1


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpoint_sequential_warns_if_use_reentrant_not_passed_explcitly
def test_checkpoint_sequential_warns_if_use_reentrant_not_passed_explcitly():
    a = dynjit.randn(3, requires_grad=True)
    modules_list = [nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint_sequential(modules_list, 3, a, use_reentrant=False)
    with pytest.warns(UserWarning, match=".*the use_reentrant parameter should be passed explicitly.*") as rec:
        checkpoint_sequential(modules_list, 3, a)
    assert sum("use_reentrant" in str(w.message) for w in rec) == 1


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_access_saved_tensor_twice_without_recomputation_works
def test_access_saved_tensor_twice_without_recomputation_works():
    count = [0]

    def foo(a):
        count[0] += 1
        b = a * a
        c = a * b
        d = dynjit.exp(a)
        return d

    a = dynjit.randn(5, requires_grad=True)
    d = checkpoint(foo, a, use_reentrant=False)
    assert count[0] == 1
    # outside backward, each access recomputes, and the recomputed value is not kept
    d.grad_fn._saved_result
    assert count[0] == 2
    d.grad_fn._saved_result
    assert count[0] == 3
    d.sum().backward()
    assert count[0] == 4
    with pytest.raises(RuntimeError,
                       match="or directly access saved tensors after they have already been freed"):
        d.grad_fn._saved_result


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant
@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_checkpointing_without_reentrant(input_requires_grad):
    num_inp, nz_inp, nz_bottleneck = 2000, 10, 1000
    module = nn.Sequential(nn.Linear(nz_inp, nz_bottleneck), nn.ReLU(),
                           nn.Linear(nz_bottleneck, nz_inp))

    class MyModule(nn.Module):
        def __init__(self, mod):
            super().__init__()
            self.module = mod

        def forward(self, data):
            return self.module(data)

    module = MyModule(mod=module)
    module_copy = copy.deepcopy(module)
    feat_combined, feat_combined_no_checkpoint = [], []
    for _ in range(num_inp):
        data_r = dynjit.rand(1, nz_inp)      # (the seed: empty, then uniform_())
        data_r.requires_grad = input_requires_grad
        feat_combined.append(checkpoint(module, data=data_r, use_reentrant=False))
        feat_combined_no_checkpoint.append(module_copy(data_r))
    dynjit.stack(feat_combined).mean().backward()
    dynjit.stack(feat_combined_no_checkpoint).mean().backward()
    for checkpoint_param, param in zip(module.parameters(), module_copy.parameters()):
        assert np.allclose(checkpoint_param.grad.numpy(), param.grad.numpy(), rtol=1.3e-6, atol=1e-5)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpoint_valid_reset_on_error
def test_checkpoint_valid_reset_on_error():
    a = dynjit.randn(2, 2, requires_grad=True)
    with pytest.raises(Exception, match="torch.utils.checkpoint is incompatible"):
        b = checkpoint(dynjit.exp, a, use_reentrant=True).sum()
        dynjit.autograd.grad(b, (a,))
    c = checkpoint(dynjit.exp, a, use_reentrant=True).sum()
    c.backward()
    assert close(a.grad, a.exp())


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_detached_tensor
@REENTRANT
def test_checkpointing_without_reentrant_detached_tensor(use_reentrant):
    class NoGradModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2, bias=False)
            self.lin2 = nn.Linear(2, 2, bias=False)

        def forward(self, x):
            with dynjit.no_grad():
                return self.lin2(self.linear(x))

    module = NoGradModule()
    a = dynjit.randn(2, 2, requires_grad=True)
    for _ in range(3):
        err_ctx = (pytest.raises(RuntimeError, match="none of output has requires_grad=True")
                   if use_reentrant else contextlib.nullcontext())
        with err_ctx:
            out = checkpoint(module, a, use_reentrant=use_reentrant)
            out += a
            out.sum().backward()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_correct_grad
def test_checkpointing_without_reentrant_correct_grad():
    a = dynjit.randn(2, 2, requires_grad=True)
    b = dynjit.exp(a).sum()
    b.backward()
    b_grad = a.grad
    a.grad = None
    c = checkpoint(dynjit.exp, a, use_reentrant=False).sum()
    c.backward()
    c_grad = a.grad
    a.grad = None
    d = checkpoint(dynjit.exp, a, use_reentrant=False).sum()
    (d_grad,) = dynjit.autograd.grad(d, (a,))
    assert close(b_grad, c_grad) and close(b_grad, d_grad)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_parameter_used_in_an_out
def test_checkpointing_without_reentrant_parameter_used_in_an_out():
    w = dynjit.randn(10, 10, requires_grad=True)
    count = 0

    def hook(grad):
        nonlocal count
        count += 1

    w.register_hook(hook)
    x = dynjit.rand(10, 10, requires_grad=True)
    h = w * x
    out = checkpoint(lambda x: w * x, h, use_reentrant=False)
    out.sum().backward()
    assert count == 1


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_without_reentrant_arbitrary_input_output
def test_checkpointing_without_reentrant_arbitrary_input_output():
    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(5, 5, bias=False)

        def forward(self, dict_input):
            return {"result": self.layer(dict_input["tensor"])}

    model_no_checkpoint = MyModel()
    model_checkpoint_without_reentrant = copy.deepcopy(model_no_checkpoint)
    inp = {"tensor": dynjit.randn(5, 5)}
    out_no_checkpoint = model_no_checkpoint(inp)["result"].sum()
    out_checkpoint = checkpoint(model_checkpoint_without_reentrant, inp, use_reentrant=False)["result"].sum()
    assert close(out_checkpoint, out_no_checkpoint)
    out_no_checkpoint.backward()
    out_checkpoint.backward()
    for param, checkpoint_param in zip(model_no_checkpoint.parameters(),
                                       model_checkpoint_without_reentrant.parameters()):
        assert close(param.grad, checkpoint_param.grad)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_save_on_cpu_and_checkpoint
def test_save_on_cpu_and_checkpoint():
    a = dynjit.randn(2, 2, requires_grad=True)
    b = a.pow(2).pow(2).pow(2).pow(2)
    b.sum().backward()
    b_grad = a.grad.clone()
    a.grad.zero_()

    with dynjit.autograd.graph.save_on_cpu():
        h = a.pow(2)
        h = checkpoint(lambda x: x.pow(2).pow(2), h, use_reentrant=False)
        c = h.pow(2)
    c.sum().backward()
    c_grad = a.grad.clone()
    a.grad.zero_()

    def f(a):
        h = a.pow(2)
        with dynjit.autograd.graph.save_on_cpu():
            h = h.pow(2).pow(2)
        return h.pow(2)

    d = checkpoint(f, a, use_reentrant=False)
    d.sum().backward()
    d_grad = a.grad.clone()
    assert close(b_grad, c_grad) and close(b_grad, d_grad)


# -- TestNestedCheckpoint ------------------------------------------------------------------

def _grad(fn):
    def wrapper(x):
        with dynjit.enable_grad():
            out = fn(x)
            (grad_input,) = dynjit.autograd.grad(out, inputs=(x,), create_graph=True)
        return grad_input
    return wrapper


def _sum(fn):
    def wrapped(x):
        return fn(x).sum()
    return wrapped


def _c(fn):
    def wrapped(*args, **kwargs):
        return checkpoint(fn, *args, use_reentrant=False, **kwargs)
    return wrapped


def _get_tests(fn):
    grad, c = _grad, _c
    return (
        (fn, (c(fn), c(c(fn)))),
        (grad(fn), (grad(c(fn)), grad(c(c(fn))))),
        (grad(grad(fn)), (grad(c(grad(fn))), c(grad(grad(c(fn)))), grad(c(grad(c(fn)))))),
        (grad(grad(grad(fn))), (grad(c(grad(grad(c(fn))))), grad(c(grad(c(grad(c(fn)))))))),
    )


def _check_graph_dies(fn):
    def iter_graph(roots):
        seen = set()
        queue = [n for n in roots if n is not None]
        seen.update(queue)
        while queue:
            node = queue.pop(0)
            for child, _idx in node.next_functions:
                if child is None or child in seen:
                    continue
                seen.add(child)
                queue.append(child)
            yield node

    class Handle:
        def __init__(self, node_name):
            self.node_name = node_name

    def scope():
        a = dynjit.randn((), requires_grad=True)
        out = fn(a)
        refs = []
        for node in iter_graph([out.grad_fn]):
            handle = Handle(node.name())
            refs.append(weakref.ref(handle))
            node.metadata["blah"] = handle
        return refs

    refs = scope()
    alive = [r().node_name for r in refs if r() is not None]
    # (the leaf's AccumulateGrad is left out: dynjit's leaf tensor and its AccumulateGrad
    # refer to each other, so they wait for the cycle collector even without checkpoint;
    # every other node must be freed as soon as the output is)
    assert [name for name in alive if name != "AccumulateGrad"] == []


EARLY_STOP = pytest.mark.parametrize("early_stop", [True, False])


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint
@EARLY_STOP
def test_nested_checkpoint(early_stop):
    with set_checkpoint_early_stop(early_stop):
        x = dynjit.randn((), requires_grad=True)

        def f(x):
            return x.sin().exp().sin()

        def g(x):
            a = x.sin().exp().sin()
            b = x.sin().exp().sin()
            (ga,) = dynjit.autograd.grad(a, x)
            (gb,) = dynjit.autograd.grad(b, x)
            return x.sin()

        for fn in (f, g):
            for expected_fn, actual_fns in _get_tests(fn):
                expected = expected_fn(x)
                for actual_fn in actual_fns:
                    actual = actual_fn(x)
                    assert dynjit.allclose(expected, actual)
                    _check_graph_dies(actual_fn)


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_two_children
@EARLY_STOP
def test_nested_checkpoint_two_children(early_stop):
    with set_checkpoint_early_stop(early_stop):
        grad, sum, c = _grad, _sum, _c

        def f(x):
            return x.sin().exp().sin()

        def g(x):
            return x.cos().sin().exp()

        def hc(x):
            return c(g)(c(f)(x))

        def h(x):
            return g(f(x))

        a = dynjit.randn(3, 3, requires_grad=True)
        expected = grad(sum(grad(sum(h))))(a)
        actual = grad(sum(grad(sum(c(hc)))))(a)
        assert dynjit.allclose(expected, actual)
        actual = grad(sum(c(grad(sum(c(hc))))))(a)
        assert dynjit.allclose(expected, actual)
        _check_graph_dies(grad(c(hc)))
        _check_graph_dies(grad(sum(grad(sum(c(hc))))))
        _check_graph_dies(grad(sum(c(grad(sum(c(hc)))))))


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_non_tensor_inputs_and_outputs
@EARLY_STOP
def test_nested_checkpoint_non_tensor_inputs_and_outputs(early_stop):
    def fn(k, a, b, f):
        return f(k * a * b.exp()), 1, "abcd"

    k = 3
    a = dynjit.tensor(2.0, requires_grad=True)
    b = dynjit.tensor(3.0, requires_grad=True)

    def f(x):
        return x.sin()

    with set_checkpoint_early_stop(early_stop):
        out, _unused1, _unused2 = checkpoint(fn, k, a, b, f, use_reentrant=False)
    actual_grads = dynjit.autograd.grad(out, (a, b))
    out, _unused1, _unused2 = fn(k, a, b, f)
    expected_grads = dynjit.autograd.grad(out, (a, b))
    for actual, expected in zip(actual_grads, expected_grads):
        assert dynjit.allclose(actual, expected)


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_kwargs
@EARLY_STOP
def test_nested_checkpoint_kwargs(early_stop):
    def fn(a, blah=None):
        out = a.sin().exp()
        if blah is not None:
            out = out * blah
        return out.sin().exp()

    a = dynjit.tensor(2.0, requires_grad=True)
    b = dynjit.tensor(3.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out = checkpoint(fn, a, blah=b, use_reentrant=False)
        actual_grads = dynjit.autograd.grad(out, (a, b))
        out = fn(a, blah=b)
        expected_grads = dynjit.autograd.grad(out, (a, b))
        for actual, expected in zip(actual_grads, expected_grads):
            assert dynjit.allclose(actual, expected)


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_same_graph
@EARLY_STOP
def test_nested_checkpoint_same_graph(early_stop):
    counter = [0]

    def hook(*_unused_args):
        counter[0] += 1

    def fn(a):
        return a.sin().cos().sin()

    a = dynjit.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out = checkpoint(fn, a, use_reentrant=False)
    # the hook goes on the original graph's node: the recomputation makes a graph of its own
    out.grad_fn.next_functions[0][0].register_hook(hook)
    out.backward()
    assert counter[0] == 1


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_reentrant_backwards
@EARLY_STOP
def test_nested_checkpoint_reentrant_backwards(early_stop):
    def fn(a):
        x = a.sin().cos()
        out = x.sin()
        return x, out

    def hook(*_unused_args):
        x.backward(retain_graph=True)

    a = dynjit.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        x, out = checkpoint(fn, a, use_reentrant=False)
    out.grad_fn.register_hook(hook)
    out.backward(retain_graph=True)
    # (the seed checks only that this runs; the gradients add up as they should)
    expected = (a.sin().cos().cos() + 1) * (-a.sin().sin()) * a.cos()
    assert close(a.grad, expected)


# ports: 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_set_early_stop
def test_nested_checkpoint_set_early_stop():
    counter = [0]

    def clone(x):
        counter[0] += 1
        return x.clone()

    def fn(x):
        # clone saves nothing: with early stop, the recomputation stops before it
        return clone(x.sin().cos())

    a = dynjit.tensor(1.0, requires_grad=True)
    out = checkpoint(fn, a, use_reentrant=False)
    out.backward()
    assert counter[0] == 1

    counter = [0]
    a = dynjit.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(False):
        out = checkpoint(fn, a, use_reentrant=False)
    out.backward()
    assert counter[0] == 2


# port of 002_7f98adb56adba91b.txt TestNestedCheckpoint.test_nested_checkpoint_set_early_stop_no_recompution_needed
# (partial: the seed's dispatch-mode count of sin with early stop is 1 because PyTorch's
# autograd layer saves sin's input before the op reaches a Python dispatch mode; dynjit's
# dispatch modes sit above autograd, so the mode sees the recomputed sin either way)
def test_nested_checkpoint_set_early_stop_no_recompution_needed():
    class SinCounterMode(DispatchMode):
        def __init__(self):
            self.count = 0

        def __dispatch__(self, op, args, kwargs):
            if op.name == "sin":
                self.count += 1
            return op(*args, **(kwargs or {}))

    counter = [0]

    def fn(x):
        counter[0] += 1
        return x.sin()

    a = dynjit.tensor(1.0, requires_grad=True)
    with SinCounterMode() as sin_counter:
        out = checkpoint(fn, a, use_reentrant=False)
        out.backward()
    assert counter[0] == 2
    assert sin_counter.count == 2            # PyTorch: 1 (see above)

    counter = [0]
    a = dynjit.tensor(1.0, requires_grad=True)
    with SinCounterMode() as sin_counter:
        with set_checkpoint_early_stop(False):
            out = checkpoint(fn, a, use_reentrant=False)
        out.backward()
    assert counter[0] == 2
    assert sin_counter.count == 2

    # the forward saves no tensor: unpack never runs, so there is no recomputation at all
    counter = [0]

    def fn2(x):
        counter[0] += 1
        return x.clone()

    a = dynjit.tensor(1.0, requires_grad=True)
    out = checkpoint(fn2, a, use_reentrant=False)
    out.backward()
    assert counter[0] == 1

    counter = [0]
    a = dynjit.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(False):
        out = checkpoint(fn2, a, use_reentrant=False)
    out.backward()
    assert counter[0] == 1


# -- TestSelectiveActivationCheckpoint -----------------------------------------------------

# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_output_already_has_autograd_meta
def test_output_already_has_autograd_meta():
    def fn(x, y):
        return x.view(-1), y.sin().cos()

    x = dynjit.tensor([1, 2, 3], dtype=dynjit.int64)
    y = dynjit.randn(3, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, [dynjit.ops.view])
    out = checkpoint(fn, x, y, use_reentrant=False, context_fn=context_fn)
    out[1].sum().backward()
    assert close(y.grad, -(y.sin().sin()) * y.cos())


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_bad_inputs
def test_bad_inputs():
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload"):
        create_selective_checkpoint_contexts([2])
    # dynjit's counterpart of an overload packet: the public function instead of the op
    with pytest.raises(ValueError, match="update the OpOverloadPacket to a specific OpOverload"):
        create_selective_checkpoint_contexts([dynjit.sin])
    with pytest.raises(TypeError, match="either a function or a list of ops."):
        create_selective_checkpoint_contexts(2)


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_storage_lifetime
def test_storage_lifetime():
    from dynjit.ops.dispatch import current_modes
    from dynjit.utils.checkpoint import _CachedTorchDispatchMode, _CachingTorchDispatchMode

    def policy_fn(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE

    ref = None

    def fn(x):
        nonlocal ref
        mode = current_modes()[-1]
        assert isinstance(mode, (_CachingTorchDispatchMode, _CachedTorchDispatchMode))
        out = x.cos().exp()
        if isinstance(mode, _CachingTorchDispatchMode):
            raw_val = mode.storage[dynjit.ops.exp][0].val
            # detached: no cycle graph -> saved hooks -> recompute context -> storage -> graph
            assert not raw_val.requires_grad
            ref = weakref.ref(raw_val)
        return out.sin()

    gc.disable()
    try:
        x = dynjit.randn(3, requires_grad=True)
        context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
        out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
        assert ref() is not None
        del out
        assert ref() is None

        x = dynjit.randn(3, requires_grad=True)
        context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
        out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
        assert ref() is not None
        out.sum().backward(retain_graph=True)
        assert ref() is None
    finally:
        gc.enable()


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_version_counter
def test_version_counter():
    def policy_fn(ctx, op, *args, **kwargs):
        if op is dynjit.ops.sin:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        return x.sin().mul_(2).cos().exp()

    x = dynjit.randn(3, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
    out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
    with pytest.raises(RuntimeError, match="has been mutated"):
        out.sum().backward()

    x = dynjit.randn(3, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn,
                                   allow_cache_entry_mutation=True)
    out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
    out.sum().backward()


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_function_with_more_than_one_output
def test_function_with_more_than_one_output():
    counter = [0]

    def policy_fn(ctx, op, *args, **kwargs):
        if op is dynjit.ops.var_mean:
            counter[0] += 1
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        a, b = dynjit.var_mean(x)
        return a * b

    x = dynjit.randn(3, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
    out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
    x_grad = dynjit.autograd.grad(out.sum(), (x,))
    x_grad_ref = dynjit.autograd.grad(fn(x).sum(), (x,))
    assert counter[0] == 2
    assert close(x_grad[0], x_grad_ref[0])


# -- under dynjit.compile ----------------------------------------------------------------

BACKENDS = ["eager", "aot_eager", "llvm"]


@pytest.mark.parametrize("backend", BACKENDS)
@REENTRANT
def test_checkpoint_under_compile_gives_eager_gradients(backend, use_reentrant):
    def block(x, w):
        return (x @ w).tanh().sin()

    def fn(x, w):
        return checkpoint(block, x, w, use_reentrant=use_reentrant).sum()

    x = dynjit.randn(4, 3, requires_grad=True)
    w = dynjit.randn(3, 3, requires_grad=True)
    fn(x, w).backward()          # (backward, not autograd.grad: the reentrant one refuses it)
    expected = x.grad, w.grad
    x.grad = w.grad = None
    compiled = dynjit.compile(fn, backend=backend)
    out = compiled(x, w)
    assert close(out, fn(x, w))
    out.backward()
    assert close(x.grad, expected[0]) and close(w.grad, expected[1])


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_can_only_trigger_recompute_once
def test_can_only_trigger_recompute_once():
    def policy_fn(ctx, op, *args, **kwargs):
        if op is dynjit.ops.sin:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        return x.sin().cos().exp()

    x = dynjit.randn(3, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy_fn)
    out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
    out.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
        out.sum().backward(retain_graph=True)


def test_selective_checkpoint_gradients_match_for_every_policy():
    def fn(x, w):
        return (x @ w).sin().mul(x.sum()).exp().sum()

    x = dynjit.randn(3, 3, requires_grad=True)
    w = dynjit.randn(3, 3, requires_grad=True)
    expected = dynjit.autograd.grad(fn(x, w), (x, w))
    for policy in CheckpointPolicy:
        context_fn = functools.partial(create_selective_checkpoint_contexts,
                                       lambda ctx, op, *a, **k: policy)
        out = checkpoint(fn, x, w, use_reentrant=False, context_fn=context_fn)
        got = dynjit.autograd.grad(out, (x, w))
        assert all(close(a, b) for a, b in zip(got, expected)), policy


@pytest.mark.parametrize("use_checkpoint", [False, True])
def test_aot_puts_the_recomputation_in_the_backward_graph(use_checkpoint):
    from dynjit.aot import aot_function
    graphs = {}

    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = gm
            return gm
        return compiler

    def block(x, w):
        return (x @ w).tanh().sin()

    def fn(x, w):
        out = checkpoint(block, x, w, use_reentrant=False) if use_checkpoint else block(x, w)
        return out.sum()

    x = dynjit.randn(4, 3, requires_grad=True)
    w = dynjit.randn(3, 3, requires_grad=True)
    fn(x, w).backward()
    expected = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    aot_function(fn, fw_compiler=keep("fw"), bw_compiler=keep("bw"))(x, w).backward()
    assert close(x.grad, expected[0]) and close(w.grad, expected[1])
    bw = graphs["bw"]
    bw_inputs = [n for n in bw.graph.nodes if n.op == "placeholder"]
    bw_ops = [str(n.target) for n in bw.graph.nodes if n.op == "call_function"]
    if use_checkpoint:
        # only the inputs and the incoming gradient go to the backward, which reruns the block
        assert [n.name for n in bw_inputs] == ["primals_1", "primals_2", "tangents_1"]
        assert "dynjit.ops.tanh" in bw_ops and bw_ops.count("dynjit.ops.matmul") == 3
    else:
        # without checkpoint, tanh's output is saved for the backward
        assert len(bw_inputs) == 4 and "dynjit.ops.tanh" not in bw_ops


def test_checkpoint_compiles_without_graph_break():
    from dynjit import utils

    def block(x):
        return x.sin().exp()

    def fn(x):
        return checkpoint(block, x, use_reentrant=False).sum()

    utils.reset_counters()
    dynjit.compile(fn, backend="aot_eager")(dynjit.randn(3, requires_grad=True))
    assert not utils.counters["graph_break"]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("use_reentrant", [True, False, None])
def test_compiled_checkpoint_gives_the_plain_values_and_gradients(backend, use_reentrant):
    from dynjit import utils

    def block(x, w, scale=1.0):
        return (x @ w).tanh() * scale

    def fn(x, w):
        options = {} if use_reentrant is None else {"use_reentrant": use_reentrant}
        extra = {"scale": 2.0} if use_reentrant is False else {}
        return checkpoint(block, x, w, **options, **extra).pow(2).sum()

    x, w = dynjit.randn(4, 3), dynjit.randn(3, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # use_reentrant not passed: the plain call warns
        expected = fn(x, w)
        expected.backward()
        grad, w.grad = w.grad.clone(), None
        utils.reset_counters()
        got = dynjit.compile(fn, backend=backend)(x, w)
    got.backward()
    assert dynjit.allclose(got, expected) and dynjit.allclose(w.grad, grad)
    # without use_reentrant the call runs natively (it warns each time, as plain code does)
    assert bool(utils.counters["graph_break"]) == (use_reentrant is None)


# ports: 002_7f98adb56adba91b.txt TestSelectiveActivationCheckpoint.test_function_with_non_tensor_output
def test_saved_custom_op_with_a_non_tensor_output_is_not_recomputed():
    from typing import Tuple
    from dynjit.library import _scoped_library, custom_op, register_autograd

    with _scoped_library("mylib", "FRAGMENT"):
        counter = [0]

        @custom_op("mylib::sin_with_extra", mutates_args=())
        def sin_with_extra(x: dynjit.Tensor) -> Tuple[dynjit.Tensor, int]:
            counter[0] += 1
            return x.sin(), 2

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, grad, _unused):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        register_autograd("mylib::sin_with_extra", backward, setup_context=setup_context)

        def fn(x):
            return (dynjit.ops.mylib.sin_with_extra(x)[0] * x.sin().exp()).sin()

        x = dynjit.randn(3, requires_grad=True)
        context_fn = functools.partial(create_selective_checkpoint_contexts,
                                       [dynjit.ops.mylib.sin_with_extra.default])
        out = checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
        x_grad = dynjit.autograd.grad(out.sum(), (x,))
        assert counter[0] == 1          # saved in the forward, replayed in the recomputation
        x_grad_ref = dynjit.autograd.grad(fn(x).sum(), (x,))
        assert dynjit.allclose(x_grad[0], x_grad_ref[0])
        # independent formula: d/dx sin(sin x * e^{sin x}) = cos(u) * cos x * e^{sin x} (1 + sin x)
        xs = x.detach().numpy()
        u = np.sin(xs) * np.exp(np.sin(xs))
        np.testing.assert_allclose(x_grad[0].numpy(), np.cos(u) * np.cos(xs) * np.exp(np.sin(xs)) * (1 + np.sin(xs)),
                                   rtol=1e-5)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_checkpointing_non_reentrant_autocast_cpu
@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("enabled", [True, False])
def test_recomputation_runs_under_the_forward_autocast_state(enabled, use_reentrant):
    def foo(x, y, z):
        x = dynjit.mm(x, y)
        y = dynjit.mm(x, z)
        z = dynjit.mm(z, z)
        assert z.dtype == (dynjit.bfloat16 if enabled else dynjit.float32)
        return z

    x, y, z = (dynjit.randn(3, 3, requires_grad=True) for _ in range(3))
    with dynjit.autocast(enabled=enabled, device_type="cpu", dtype=dynjit.bfloat16):
        loss = checkpoint(foo, x, y, z, use_reentrant=use_reentrant).sum()
    # the recomputation casts as the forward did: no dtype mismatch with what was saved
    loss.backward()
    with dynjit.autocast(enabled=enabled, device_type="cpu", dtype=dynjit.bfloat16):
        plain = foo(*(t.detach().requires_grad_() for t in (x, y, z)))
    assert plain.dtype == (dynjit.bfloat16 if enabled else dynjit.float32)
    z_ref = z.detach().requires_grad_()
    with dynjit.autocast(enabled=enabled, device_type="cpu", dtype=dynjit.bfloat16):
        ref = dynjit.mm(z_ref, z_ref).sum()
    ref.backward()
    np.testing.assert_array_equal(z.grad.numpy(), z_ref.grad.numpy())
