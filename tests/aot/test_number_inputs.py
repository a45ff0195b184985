"""AOT autograd and make_fx with int and float inputs (dynjit.fx.traced_number).

A number input is a graph input: one trace serves every value of it where the graph only
computes with it (ops, arithmetic), in the forward and in the backward. Where the trace needs
its value (a branch, range(), math.sqrt, a size or an index, a returned number), the number
is specialized and a new value traces again. Every case compares the compiled function with
eager for several values (outputs and gradients) and counts the traces."""
import math

import numpy as np
import pytest

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.fx import make_fx
from dynjit.fx.traced_number import TracedNumber


class Recorder:
    """A compiler that records the graphs and the example inputs it is given."""

    def __init__(self):
        self.graphs, self.inputs = [], []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.inputs.append(list(example_inputs))
        return gm.forward


def _close(a, b, what):
    if isinstance(a, dynjit.Tensor):
        assert isinstance(b, dynjit.Tensor) and a.dtype is b.dtype and a.shape == b.shape, what
        np.testing.assert_allclose(b.numpy(force=True), a.numpy(force=True), rtol=1e-6, atol=1e-6,
                                   err_msg=what)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), what
        for x, y in zip(a, b):
            _close(x, y, what)
    else:
        assert type(a) is type(b) and a == b, f"{what}: {a!r} != {b!r}"


def run_both(fn, values, make_tensors, grads=True):
    """Call fn eagerly and through aot_function for each value tuple; compare outputs and
    the gradients of the tensors that require grad. Returns (compiled function, recorder)."""
    fw, bw = Recorder(), Recorder()
    compiled = aot_function(fn, fw, bw)
    for numbers in values:
        results = []
        for f in (fn, compiled):
            dynjit.manual_seed(0)
            tensors = make_tensors()
            out = f(*tensors, *numbers)
            leaves = [t for t in tensors if t.requires_grad]
            if grads and leaves:
                first = out[0] if isinstance(out, tuple) else out
                got = dynjit.autograd.grad(first.sum(), leaves, allow_unused=True)
                results.append((out, got))
            else:
                results.append((out, None))
        (e_out, e_grads), (c_out, c_grads) = results
        _close(e_out, c_out, f"output for {numbers}")
        if e_grads is not None:
            for e, c in zip(e_grads, c_grads):
                assert (e is None) == (c is None)
                if e is not None:
                    _close(e, c, f"gradient for {numbers}")
    return compiled, fw, bw


def _x(shape=(4, 6)):
    return lambda: (dynjit.randn(*shape, requires_grad=True),)


# -- numbers that stay dynamic: one trace ----------------------------------------------------

def test_a_learning_rate_multiplying_a_tensor_is_traced_once_with_the_right_gradient_per_value():
    def f(x, lr):
        return (x * lr).sin() * (lr + 1)

    lrs = [(0.1 * i - 0.7,) for i in range(20)]
    compiled, fw, bw = run_both(f, lrs, _x())
    assert len(compiled._cache) == 1 and len(fw.graphs) == 1
    # the derivative of x * lr uses lr: the backward graph takes it as an input
    bw_inputs = [n for n in bw.graphs[0].graph.nodes if n.op == "placeholder"]
    assert any(isinstance(n.meta.get("val"), float) for n in bw_inputs)


def test_number_arithmetic_is_recorded_and_replayed():
    def f(x, n, lr):
        k = (n * 2 + 1) // 3 - n % 4
        return x * k + x / (lr * -n - 1) + abs(lr - n) ** 2

    values = [(n, 0.25 * n) for n in range(1, 15)]
    compiled, fw, _ = run_both(f, values, _x())
    assert len(compiled._cache) == 1
    code = fw.graphs[0].code
    assert "operator.floordiv" in code and "operator.mod" in code and "operator.pow" in code


def test_reflected_arithmetic_and_tensor_operators_on_either_side():
    def f(x, n, lr):
        return (2 - x) * lr + lr / (x.abs() + 1) + n * x - (1 + n) / (3 - lr) + (lr < x).float()

    compiled, _, _ = run_both(f, [(n, 0.3 * n) for n in range(6)], _x())
    assert len(compiled._cache) == 1


def test_full_fill_value_and_division_by_a_count_stay_dynamic():
    def f(x, v, n):
        return x.sum() / n + dynjit.full((2,), v).sum() + dynjit.full_like(x, v).mean()

    compiled, _, _ = run_both(f, [(0.5 * i, i + 1) for i in range(10)], _x())
    assert len(compiled._cache) == 1


def _xy():
    return dynjit.randn(3, 4, requires_grad=True), dynjit.randn(3, 4, requires_grad=True)


def test_pointwise_ops_with_number_arguments_stay_dynamic():
    def f(x, y, lo, alpha, v):
        a = x.clamp(min=-lo, max=lo) + dynjit.where(x > 0, x, v) + x.masked_fill(y > 0, v)
        return a + x.pow(2) * alpha + dynjit.lerp(x, y, alpha)

    values = [(0.2 + 0.1 * i, 0.3 * i - 1, -0.5 * i) for i in range(8)]
    compiled, _, _ = run_both(f, values, _xy)
    assert len(compiled._cache) == 1


def test_a_derivative_formula_that_compares_a_number_specializes_it():
    # add's derivative tests `alpha == 1`, pow's the exponent: traced again per value, right
    def f(x, y, alpha, e):
        return x.add(y, alpha=alpha) + x.abs().pow(e)

    values = [(1, 2.0), (2, 2.0), (1, 0.5), (1, 2.0)]
    compiled, _, _ = run_both(f, values, _xy)
    assert len(compiled._cache) == 3


def test_bias_correction_powers_of_a_step_count_stay_dynamic():
    # Adam's 1 - beta ** step: a float base to a traced int power is a float for every step
    def f(x, step, n):
        return x / (1 - 0.9 ** step) * (1 - 0.999 ** step) + x * n ** 2

    compiled, _, _ = run_both(f, [(s, s + 1) for s in range(1, 12)], _x())
    assert len(compiled._cache) == 1


def test_a_power_whose_type_may_change_specializes():
    # int ** -1 is a float and (-8.0) ** 0.5 a complex: the graph must not replay them typed
    # as the trace saw them
    def f(x, n, v):
        return x * (2 ** n) + x * (v ** 0.5)

    compiled, _, _ = run_both(f, [(1, 4.0), (2, 4.0), (1, 9.0)], _x())
    assert len(compiled._cache) == 3


def test_an_in_place_update_with_a_changing_learning_rate_is_traced_once():
    def sgd(p, g, lr):
        with dynjit.no_grad():
            p.add_(g, alpha=-lr)
            p.mul_(1 - lr * 0.01)
        return p

    compiled = aot_function(sgd, nop)
    for i in range(10):
        lr = 0.05 * (i + 1)
        p1, p2 = dynjit.randn(5), None
        p2 = p1.clone()
        g = dynjit.randn(5)
        sgd(p1, g, lr)
        compiled(p2, g, lr)
        assert dynjit.equal(p1, p2)
    assert len(compiled._cache) == 1


def test_double_backward_through_a_number():
    def f(x, lr):
        (g,) = dynjit.autograd.grad((x * x * x * lr).sum(), x, create_graph=True)
        return (g * lr).sum()      # d/dx = 6 * x * lr ** 2

    compiled = aot_function(f, nop)
    for lr in (0.5, -1.5, 3.0):
        x1 = dynjit.randn(4, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_(True)
        f(x1, lr).backward()
        compiled(x2, lr).backward()
        np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(x2.grad.numpy(), 6 * x1.detach().numpy() * lr ** 2, rtol=1e-5)
    assert len(compiled._cache) == 1


def test_the_compilers_receive_number_placeholders_and_example_numbers():
    fw, bw = Recorder(), Recorder()
    compiled = aot_function(lambda x, lr: (x * lr).sum(), fw, bw)
    x = dynjit.randn(3, requires_grad=True)
    compiled(x, 0.25).backward()
    placeholders = [n for n in fw.graphs[0].graph.nodes if n.op == "placeholder"]
    assert [type(n.meta["val"]) for n in placeholders][1] is float
    assert fw.inputs[0][1] == 0.25 and type(fw.inputs[0][1]) is float
    assert any(v == 0.25 for v in bw.inputs[0] if isinstance(v, float))


# -- numbers the trace needs: specialized, traced again for a new value ---------------------

@pytest.mark.parametrize("case", ["view", "slice", "branch", "range", "sqrt", "arange", "repeat"])
def test_a_number_whose_value_the_trace_needs_is_specialized(case):
    def f(x, n):
        if case == "view":
            return x.view(n, -1) * 2
        if case == "slice":
            return x[:n] * 2
        if case == "branch":
            return x * 2 if n > 3 else x - 1
        if case == "range":
            y = x
            for _ in range(n):
                y = y * 0.5 + 1
            return y
        if case == "sqrt":
            return x / math.sqrt(n)
        if case == "arange":
            return x.sum(0)[:n] + dynjit.arange(n)
        return x.repeat(n, 1)

    ns = [1, 2, 3, 4, 2, 1]
    compiled, _, _ = run_both(f, [(n,) for n in ns], _x())
    assert len(compiled._cache) == len(set(ns))


def test_attention_scaled_by_the_square_root_of_the_head_size():
    def f(q, k, v, d):
        scores = q @ k.transpose(-2, -1) / math.sqrt(d) * d ** -0.5
        return scores.softmax(-1) @ v

    make = lambda: tuple(dynjit.randn(2, 3, 4, requires_grad=True) for _ in range(3))  # noqa: E731
    compiled, _, _ = run_both(f, [(4,), (9,), (4,)], make)
    assert len(compiled._cache) == 2


def test_uses_outside_ops_specialize():
    table = {1: 0.5, 2: 2.0}

    def f(x, n, lr):
        scale = float(np.float32(lr)) + int(n) + table.get(n, 0.0) + len(f"{n}")
        return x * scale + dynjit.tensor(lr) + round(lr, 1) + math.floor(lr)

    values = [(1, 0.5), (2, 0.5), (1, 0.75), (1, 0.5)]
    compiled, _, _ = run_both(f, values, _x())
    assert len(compiled._cache) == 3


def test_a_returned_number_is_the_value_of_the_call():
    def f(x, n, lr):
        return x * lr, n * 2, lr - 1

    compiled, _, _ = run_both(f, [(n, 0.5 * n) for n in range(4)], _x(), grads=False)
    assert len(compiled._cache) == 4


def test_int_and_float_values_of_one_argument_are_traced_apart():
    def f(x, v):
        return dynjit.full((2,), v) + x.sum()

    compiled, _, _ = run_both(f, [(1,), (2,), (1.5,), (2.5,), (3,)], _x(), grads=False)
    assert len(compiled._cache) == 2
    out = compiled(dynjit.zeros(2), 7)
    assert out.dtype is dynjit.float32 and out.tolist() == [7.0, 7.0]


def test_negative_zero_and_nan_of_a_specialized_number_are_told_apart():
    def f(x, v):
        return x * 0 + (1.0 if math.copysign(1.0, v) > 0 else -1.0)

    compiled = aot_function(f, nop)
    x = dynjit.ones(2)
    assert compiled(x, 0.0).tolist() == [1.0, 1.0]
    assert compiled(x, -0.0).tolist() == [-1.0, -1.0]
    assert compiled(x, float("nan")).tolist() == [1.0, 1.0]
    assert compiled(x, float("nan")).tolist() == [1.0, 1.0]
    assert len(compiled._cache) == 3


def test_a_number_that_python_code_cannot_take_traces_again_with_plain_numbers():
    import json

    def f(x, n):
        return x * len(json.dumps({"n": n}))      # the json encoder needs an int

    compiled, _, _ = run_both(f, [(5,), (50,), (5,)], _x())
    assert len(compiled._cache) == 2
    trace = next(iter(compiled._cache.values())).t
    assert "raised TypeError" in trace.specialized[1]


def test_a_traced_number_stands_for_its_type():
    seen = []

    def f(x, n, lr):
        seen.append((isinstance(n, int), isinstance(lr, float), isinstance(n, bool), type(n) is TracedNumber))
        return x * n * lr

    aot_function(f, nop)(dynjit.ones(2), 3, 0.5)
    assert seen == [(True, True, False, True)]


# -- make_fx -----------------------------------------------------------------------------------

def test_make_fx_graph_computes_with_the_number_it_is_called_with():
    def f(x, n, lr):
        return x.sum() / n + dynjit.full((2,), lr) * (lr + 1) - n % 3

    x = dynjit.randn(4, 3)
    gm = make_fx(f)(x, 2, 0.5)
    assert "check_specialized" not in gm.code
    for n, lr in [(2, 0.5), (5, -1.25), (7, 3.0)]:
        assert dynjit.allclose(gm(x, n, lr), f(x, n, lr))


def test_make_fx_graph_refuses_another_value_of_a_specialized_number():
    def f(x, n):
        return x * 2 if n > 3 else x.view(n, -1)

    x = dynjit.randn(4, 3)
    gm = make_fx(f)(x, 2)
    assert dynjit.equal(gm(x, 2), f(x, 2))
    with pytest.raises(RuntimeError, match=r"traced with n_1 = 2 .* cannot run with n_1 = 4"):
        gm(x, 4)


def test_make_fx_records_the_backward_use_of_a_number():
    def f(x, lr):
        (g,) = dynjit.autograd.grad((x * lr).sin().sum(), x)
        return g

    x = dynjit.randn(5, requires_grad=True)
    gm = make_fx(f)(x, 0.5)
    for lr in (0.5, 2.0, -3.0):
        np.testing.assert_allclose(gm(x, lr).detach().numpy(), (lr * (x.detach() * lr).cos()).numpy(), rtol=1e-6)


def test_make_fx_traces_again_with_plain_numbers_where_python_code_cannot_take_them():
    import json

    def f(x, n):
        return x * len(json.dumps([n])) + n

    x = dynjit.randn(3)
    gm = make_fx(f)(x, 5)
    assert dynjit.equal(gm(x, 5), f(x, 5))
    with pytest.raises(RuntimeError, match="raised TypeError"):
        gm(x, 50)


def test_an_update_kept_in_the_inference_graph_reads_the_learning_rate_it_is_called_with():
    def sgd(p, g, lr, momentum):
        with dynjit.no_grad():
            p.mul_(momentum).add_(g, alpha=-lr)

    fw = Recorder()
    compiled = aot_function(sgd, fw, keep_inference_input_mutations=True)
    for i in range(6):
        p1 = dynjit.randn(4)
        p2, g = p1.clone(), dynjit.randn(4)
        sgd(p1, g, 0.1 * i, 0.9 - 0.1 * i)
        compiled(p2, g, 0.1 * i, 0.9 - 0.1 * i)
        assert dynjit.equal(p1, p2)
    assert len(fw.graphs) == 1 and "copy_" in fw.graphs[0].code


def test_make_fx_specializes_the_numbers_when_a_traced_tensors_value_is_read():
    # the branch is baked into the graph and depends on n through y
    def f(x, n, k):
        y = x * n
        return y * 2 if y.sum().item() > 0 else y - 1

    x = dynjit.ones(3)
    gm = make_fx(f)(x, 2, 5)
    assert dynjit.equal(gm(x, 2, 5), f(x, 2, 5))
    with pytest.raises(RuntimeError, match=r"cannot run with n_1 = -2"):
        gm(x, -2, 5)
    with pytest.raises(RuntimeError, match=r"cannot run with k_1 = 6"):
        gm(x, 2, 6)


def test_a_decomposition_computing_with_a_number_stays_dynamic_and_one_branching_on_it_specializes():
    leaky_relu = dynjit.ops.leaky_relu

    def computing(x, negative_slope=0.01):
        return dynjit.where(x > 0, x, x * negative_slope)

    def branching(x, negative_slope=0.01):
        return x.relu() if negative_slope == 0 else dynjit.where(x > 0, x, x * negative_slope)

    f = lambda x, s: leaky_relu(x, s) * 2      # noqa: E731
    for decomposition, traces in ((computing, 1), (branching, 3)):
        compiled = aot_function(f, nop, decompositions={leaky_relu: decomposition})
        for s in (0.0, 0.1, 0.2, 0.0):
            x1 = dynjit.randn(6, requires_grad=True)
            x2 = x1.detach().clone().requires_grad_(True)
            f(x1, s).sum().backward()
            out = compiled(x2, s)
            out.sum().backward()
            assert dynjit.allclose(out, f(x1, s)) and dynjit.allclose(x2.grad, x1.grad)
        assert len(compiled._cache) == traces
        assert "leaky_relu" not in next(iter(compiled._cache.values())).fw_gm.code
