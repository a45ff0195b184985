"""dynjit.library.custom_op: Python functions as ops of the one registry (torch.library)."""
from typing import List, Optional, Tuple

import numpy as np
import pytest

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.fx import make_fx
from dynjit.library import _scoped_library, custom_op
from dynjit.ops.dispatch import DispatchMode
from dynjit.ops.registry import registry


@pytest.fixture
def lib():
    with _scoped_library("dj_test", "FRAGMENT") as lib:
        yield lib


def _numpy_sin(lib):
    """A custom op computed by numpy outside dynjit's ops, with its derivative and shape."""
    @custom_op("dj_test::numpy_sin", mutates_args=())
    def numpy_sin(x: dynjit.Tensor) -> dynjit.Tensor:
        return dynjit.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return dynjit.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def test_custom_op_runs_its_function_and_is_a_registry_op(lib):
    numpy_sin = _numpy_sin(lib)
    x = dynjit.randn(5)
    np.testing.assert_allclose(numpy_sin(x).numpy(), np.sin(x.numpy()))
    op = dynjit.ops.dj_test.numpy_sin
    assert op is dynjit.ops.dj_test.numpy_sin.default
    assert registry["dj_test::numpy_sin"] is op
    np.testing.assert_allclose(op(x).numpy(), np.sin(x.numpy()))
    assert op.meta([dynjit.empty(2, 3, dtype=dynjit.float64)]) == ((2, 3), dynjit.float64)


def test_register_autograd_gives_the_gradient_and_a_named_node(lib):
    numpy_sin = _numpy_sin(lib)
    x = dynjit.randn(4, dtype=dynjit.float64, requires_grad=True)
    y = numpy_sin(x)
    assert y.grad_fn.name() == "GeneratedBackwardFor_dj_test_numpy_sin_defaultBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()))
    assert dynjit.autograd.gradcheck(numpy_sin, (dynjit.randn(3, dtype=dynjit.float64, requires_grad=True),))


def test_kernel_runs_below_autograd_and_below_dispatch_modes(lib):
    numpy_sin = _numpy_sin(lib)
    seen = []

    class Recorder(DispatchMode):
        def __dispatch__(self, op, args, kwargs):
            seen.append(op.name)
            return op(*args, **(kwargs or {}))

    @custom_op("dj_test::sin_cos", mutates_args=())
    def sin_cos(x: dynjit.Tensor) -> dynjit.Tensor:
        inner = x.sin()
        assert inner.grad_fn is None        # no history inside the kernel
        return inner.cos()

    x = dynjit.randn(3, requires_grad=True)
    with Recorder():
        sin_cos(x)
        numpy_sin(x)
    assert seen == ["dj_test::sin_cos", "dj_test::numpy_sin"]


def test_backward_without_a_registered_formula_is_an_error(lib):
    @custom_op("dj_test::no_grad_formula", mutates_args=())
    def f(x: dynjit.Tensor) -> dynjit.Tensor:
        return x * 2

    y = f(dynjit.randn(3, requires_grad=True))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="Trying to backward through dj_test.no_grad_formula.default but "
                                           "no autograd formula was registered"):
        y.sum().backward()


def test_returning_an_input_is_an_error(lib):
    @custom_op("dj_test::identity", mutates_args=())
    def identity(x: dynjit.Tensor) -> dynjit.Tensor:
        return x

    @custom_op("dj_test::view_of_input", mutates_args=())
    def view_of_input(x: dynjit.Tensor) -> dynjit.Tensor:
        return x[1:]

    for op in (identity, view_of_input):
        with pytest.raises(RuntimeError, match="may not alias any inputs to this custom operator"):
            op(dynjit.randn(3))


def test_schema_is_inferred_from_annotations(lib):
    @custom_op("dj_test::scale", mutates_args=())
    def scale(x: dynjit.Tensor, factor: float, others: List[dynjit.Tensor],
              bias: Optional[dynjit.Tensor] = None) -> Tuple[dynjit.Tensor, int]:
        out = x * factor + sum(others)
        return (out if bias is None else out + bias), len(others)

    assert scale._schema == "(Tensor x, float factor, Tensor[] others, Tensor? bias=None) -> (Tensor, SymInt)"
    x = dynjit.ones(2)
    out, n = scale(x, 3.0, [x, x], bias=x)
    assert n == 2
    np.testing.assert_allclose(out.numpy(), [6.0, 6.0])

    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        custom_op("dj_test::unannotated", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match=r"\{'y'\} in mutates_args were not found in the custom op's signature"):
        @custom_op("dj_test::bad_mutates", mutates_args=("y",))
        def bad(x: dynjit.Tensor) -> dynjit.Tensor:
            return x.clone()
    with pytest.raises(ValueError, match="should look something like ns::foo"):
        custom_op("no_namespace", mutates_args=())
    with pytest.raises(TypeError):
        custom_op("dj_test::missing_mutates_args")


def test_mutating_op_bumps_the_version_and_refuses_an_autograd_formula(lib):
    @custom_op("dj_test::fill_numpy", mutates_args=("x",))
    def fill_numpy(x: dynjit.Tensor, value: float) -> None:
        x.numpy()[...] = value          # written behind dynjit's back: the op still counts it

    t = dynjit.zeros(3)
    before = t._version
    assert fill_numpy(t, 2.5) is None
    np.testing.assert_allclose(t.numpy(), [2.5, 2.5, 2.5])
    assert t._version > before
    assert fill_numpy._schema == "(Tensor(a0!) x, float value) -> ()"
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        fill_numpy.register_autograd(lambda ctx, g: g)


def test_register_kernel_replaces_the_cpu_implementation(lib):
    @custom_op("dj_test::plus_one", mutates_args=())
    def plus_one(x: dynjit.Tensor) -> dynjit.Tensor:
        return x + 1

    @plus_one.register_kernel("cpu")
    def _(x):
        return x + 10

    np.testing.assert_allclose(plus_one(dynjit.zeros(2)).numpy(), [10.0, 10.0])
    dynjit.library.register_kernel("dj_test::plus_one", "cpu", lambda x: x + 100)
    np.testing.assert_allclose(plus_one(dynjit.zeros(2)).numpy(), [100.0, 100.0])


def test_scoped_library_removes_its_ops():
    with _scoped_library("dj_scoped", "FRAGMENT"):
        @custom_op("dj_scoped::double", mutates_args=())
        def double(x: dynjit.Tensor) -> dynjit.Tensor:
            return x * 2
        assert "dj_scoped::double" in registry
        assert hasattr(dynjit.ops, "dj_scoped")
    assert "dj_scoped::double" not in registry
    assert not hasattr(dynjit.ops, "dj_scoped")


def test_make_fx_records_one_node(lib):
    _numpy_sin(lib)

    def fn(x):
        return dynjit.ops.dj_test.numpy_sin(x * 2) + 1

    gm = make_fx(fn)(dynjit.randn(3))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert dynjit.ops.dj_test.numpy_sin in targets
    assert len(targets) == 3
    x = dynjit.randn(3)
    np.testing.assert_allclose(gm(x).numpy(), fn(x).numpy())


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_equals_eager_with_gradients(lib, backend):
    _numpy_sin(lib)

    def fn(x):
        return dynjit.ops.dj_test.numpy_sin(x * 2).exp() + 1

    x = dynjit.randn(4, requires_grad=True)
    expected = fn(x)
    expected.sum().backward()
    expected_grad = x.grad
    x.grad = None
    compiled = dynjit.compile(fn, backend=backend)
    got = compiled(x)
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), expected_grad.numpy(), rtol=1e-6)
    # independent formula: d/dx exp(sin 2x) = exp(sin 2x) cos(2x) 2
    xs = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.sin(2 * xs)) * np.cos(2 * xs) * 2, rtol=1e-5)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_backward_mutation_forward_inputs_create_graph
def test_aot_backward_writing_a_forward_input_refuses_create_graph():
    with _scoped_library("_test", "FRAGMENT"):
        @custom_op("_test::_clone_create_graph", mutates_args={})
        def f(x: dynjit.Tensor, x1: dynjit.Tensor) -> dynjit.Tensor:
            return x.clone()

        def backward(ctx, grad):
            with dynjit.no_grad():
                ctx.x1.zero_()      # the backward writes the forward's second input
            return grad * 2, None

        def setup_context(ctx, inputs, output):
            ctx.x, ctx.x1 = inputs

        f.register_fake(lambda x, x1: dynjit.empty_like(x))
        f.register_autograd(backward, setup_context=setup_context)

        def fn(x, x1):
            return dynjit.ops._test._clone_create_graph(x, x1)

        inp_x, inp_x1 = dynjit.randn(3, requires_grad=True), dynjit.randn(3, requires_grad=True)
        ref_x, ref_x1 = inp_x.clone(), inp_x1.clone()
        ref_y = f(ref_x, ref_x1)
        ref_y.sum().backward()
        np.testing.assert_array_equal(ref_x1.detach().numpy(), np.zeros(3))
        np.testing.assert_allclose(inp_x.grad.numpy(), [2.0, 2.0, 2.0])

        x, x1 = inp_x.clone(), inp_x1.clone()
        y = aot_function(fn, nop)(x, x1)
        with pytest.raises(RuntimeError, match="aot_autograd does not support input mutations with "
                                               "requires_grad in backward for create_graph=True"):
            dynjit.autograd.grad(y.sum(), inp_x, create_graph=True)
        # the backward ran before the refusal: its write landed as eager's did
        for ref, got in ((ref_x, x), (ref_x1, x1), (ref_y, y)):
            np.testing.assert_array_equal(ref.detach().numpy(), got.detach().numpy())


def test_tensor_list_inputs_get_their_gradients(lib):
    @custom_op("dj_test::weighted_sum", mutates_args=())
    def weighted_sum(xs: List[dynjit.Tensor], w: float) -> dynjit.Tensor:
        return dynjit.from_numpy(sum(x.numpy() for x in xs) * w)

    def setup_context(ctx, inputs, output):
        xs, ctx.w = inputs
        ctx.n = len(xs)
        ctx.wanted = ctx.needs_input_grad

    def backward(ctx, grad):
        return [grad * ctx.w] * ctx.n, None

    weighted_sum.register_autograd(backward, setup_context=setup_context)
    p = dynjit.randn(3, dtype=dynjit.float64, requires_grad=True)
    q = dynjit.randn(3, dtype=dynjit.float64, requires_grad=True)
    out = weighted_sum([p, q], 3.0)
    assert out.grad_fn.wanted == (True, False)
    out.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(q.grad.numpy(), [3.0, 3.0, 3.0])
    assert dynjit.autograd.gradcheck(lambda a, b: weighted_sum([a, b], 0.5),
                                     (dynjit.randn(2, dtype=dynjit.float64, requires_grad=True),
                                      dynjit.randn(2, dtype=dynjit.float64, requires_grad=True)))


def test_several_outputs_and_keyword_only_arguments(lib):
    @custom_op("dj_test::sin_cos_scaled", mutates_args=())
    def sin_cos_scaled(x: dynjit.Tensor, *, scale: float = 2.0) -> Tuple[dynjit.Tensor, dynjit.Tensor]:
        return x.sin() * scale, x.cos() * scale

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]

    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return (g_sin * x.cos() - g_cos * x.sin()) * ctx.scale, None

    sin_cos_scaled.register_autograd(backward, setup_context=setup_context)
    assert sin_cos_scaled._schema == "(Tensor x, *, float scale=2.0) -> (Tensor, Tensor)"
    x = dynjit.randn(4, dtype=dynjit.float64, requires_grad=True)
    s, c = sin_cos_scaled(x, scale=3.0)
    xs = x.detach().numpy()
    np.testing.assert_allclose(s.detach().numpy(), 3 * np.sin(xs))
    s.sum().backward()          # the cosine output gets no gradient: a zero one stands for it
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos(xs))
    assert dynjit.autograd.gradcheck(lambda t: sin_cos_scaled(t, scale=0.5),
                                     (dynjit.randn(3, dtype=dynjit.float64, requires_grad=True),))


def test_returning_what_the_schema_does_not_say_is_an_error(lib):
    @custom_op("dj_test::returns_int", mutates_args=())
    def returns_int(x: dynjit.Tensor) -> dynjit.Tensor:
        return 3

    with pytest.raises(RuntimeError, match="Unable to cast 3 to Tensor"):
        returns_int(dynjit.randn(2))


def test_written_input_that_requires_grad(lib):
    @custom_op("dj_test::double_in_place", mutates_args=("x",))
    def double_in_place(x: dynjit.Tensor) -> None:
        x.mul_(2)

    leaf = dynjit.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        double_in_place(leaf)
    with dynjit.no_grad():
        double_in_place(leaf)       # allowed without grad recording, as in-place ops are
    # a written non-leaf (or view) no longer has a history its backward could use: the
    # backward is an error, not a gradient that ignores the write
    for make in (lambda t: t.clone(), lambda t: t.clone()[1:]):
        x = make(leaf)
        double_in_place(x)
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            (x._base if x._base is not None else x).sum().backward()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_tensor_list_and_non_tensor_output(lib, backend):
    @custom_op("dj_test::sin_and_two", mutates_args=())
    def sin_and_two(x: dynjit.Tensor) -> Tuple[dynjit.Tensor, int]:
        return x.sin(), 2

    @custom_op("dj_test::list_sum", mutates_args=())
    def list_sum(xs: List[dynjit.Tensor]) -> dynjit.Tensor:
        return dynjit.from_numpy(sum(x.numpy() for x in xs))

    sin_and_two.register_autograd(lambda ctx, g, _: g * ctx.saved_tensors[0].cos(),
                                  setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    list_sum.register_autograd(lambda ctx, g: [g] * ctx.n,
                               setup_context=lambda ctx, inputs, output: setattr(ctx, "n", len(inputs[0])))

    def fn(x):
        s, k = dynjit.ops.dj_test.sin_and_two(x)
        return dynjit.ops.dj_test.list_sum([s * k, x]).exp()

    x = dynjit.randn(5, requires_grad=True)
    expected = fn(x)
    expected.sum().backward()
    expected_grad, x.grad = x.grad, None
    got = dynjit.compile(fn, backend=backend)(x)
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), expected_grad.numpy(), rtol=1e-6)
    xs = x.detach().numpy()     # d/dx exp(2 sin x + x) = exp(...) (2 cos x + 1)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(2 * np.sin(xs) + xs) * (2 * np.cos(xs) + 1), rtol=1e-5)


def test_profiler_names_the_custom_op_by_its_qualified_name(lib):
    from dynjit.autograd.profiler import profile
    numpy_sin = _numpy_sin(lib)
    x = dynjit.randn(3)
    with profile() as p:
        numpy_sin(x)
        x.sin()
    assert [e.name for e in p.function_events] == ["dj_test::numpy_sin", "aten::sin"]


def test_fake_function_gives_the_meta_without_running_the_kernel(lib):
    ran = []

    @custom_op("dj_test::stack_rows", mutates_args=())
    def stack_rows(xs: List[dynjit.Tensor]) -> dynjit.Tensor:
        ran.append(True)
        return dynjit.stack(xs)

    @stack_rows.register_fake
    def _(xs):
        return xs[0].new_empty((len(xs),) + tuple(xs[0].shape))

    from dynjit.ops.meta import TensorMeta
    seen = []

    class Recorder(DispatchMode):
        def __dispatch__(self, op, args, kwargs):
            seen.append(op.name)
            return op(*args, **(kwargs or {}))

    with Recorder():
        meta = dynjit.ops.dj_test.stack_rows.meta([[TensorMeta((2, 3), dynjit.float64)] * 4])
    assert meta == ((4, 2, 3), dynjit.float64)
    assert ran == [] and seen == []

    @custom_op("dj_test::no_fake", mutates_args=())
    def no_fake(x: dynjit.Tensor) -> dynjit.Tensor:
        return x * 2

    with pytest.raises(RuntimeError, match="There was no fake impl registered for dj_test::no_fake"):
        dynjit.ops.dj_test.no_fake.meta([TensorMeta((2,), dynjit.float32)])


def test_aot_partitioner_saves_a_custom_op_output_instead_of_recomputing_it(lib):
    from dynjit.aot import min_cut_rematerialization_partition
    calls = []

    @custom_op("dj_test::counted_sin", mutates_args=())
    def counted_sin(x: dynjit.Tensor) -> dynjit.Tensor:
        calls.append(1)
        return x.sin()

    counted_sin.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
                                  setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))

    def fn(x):
        return (dynjit.ops.dj_test.counted_sin(x) * 2).exp()

    compiled = aot_function(fn, nop, partition_fn=min_cut_rematerialization_partition)
    x = dynjit.randn(4, requires_grad=True)
    compiled(x).sum().backward()        # the first call traces: it runs the kernel too
    calls.clear()
    x.grad = None
    compiled(x).sum().backward()
    assert len(calls) == 1              # the forward's call only: backward reads the saved output
    xs = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(2 * np.sin(xs)) * 2 * np.cos(xs), rtol=1e-5)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
def test_compiled_op_that_writes_its_input(lib, backend):
    @custom_op("dj_test::add_one_numpy", mutates_args=("x",))
    def add_one_numpy(x: dynjit.Tensor) -> None:
        x.numpy()[...] += 1

    def fn(x, y):
        z = y * 2
        dynjit.ops.dj_test.add_one_numpy(x)     # an input of the compiled function
        dynjit.ops.dj_test.add_one_numpy(z)     # an intermediate
        return x * 3 + z

    compiled = dynjit.compile(fn, backend=backend)
    y = dynjit.ones(3)
    for _ in range(2):
        x_eager, x_compiled = dynjit.zeros(3), dynjit.zeros(3)
        expected = fn(x_eager, y)
        got = compiled(x_compiled, y)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        np.testing.assert_array_equal(x_compiled.numpy(), x_eager.numpy())
    np.testing.assert_array_equal(expected.numpy(), [6.0, 6.0, 6.0])


def test_vmap_calls_the_op_per_example_without_a_batching_rule(lib):
    calls = []

    @custom_op("dj_test::row_norm_and_rank", mutates_args=())
    def row_norm_and_rank(x: dynjit.Tensor, scale: float) -> Tuple[dynjit.Tensor, int]:
        calls.append(tuple(x.shape))
        return dynjit.from_numpy(np.linalg.norm(x.numpy(), axis=-1) * scale), x.dim()

    ranks = []

    def fn(x):
        norm, rank = row_norm_and_rank(x, 2.0)
        ranks.append(rank)
        return norm

    xs = dynjit.randn(4, 3, 2)
    norms = dynjit.func.vmap(fn)(xs)
    assert calls == [(3, 2)] * 4 and ranks == [2]
    np.testing.assert_allclose(norms.numpy(), np.linalg.norm(xs.numpy(), axis=-1) * 2, rtol=1e-6)


def test_register_vmap_batches_in_one_call(lib):
    calls = []

    @custom_op("dj_test::scaled_cumsum", mutates_args=())
    def scaled_cumsum(x: dynjit.Tensor, w: dynjit.Tensor) -> dynjit.Tensor:
        calls.append("kernel")
        return dynjit.from_numpy(np.cumsum(x.numpy(), axis=-1) * w.numpy())

    @scaled_cumsum.register_vmap
    def _(info, in_dims, x, w):
        calls.append(("rule", info.batch_size, in_dims))
        # the whole batch in one numpy call, returned with its batch in dim 1
        return dynjit.from_numpy(np.cumsum(x.numpy(), axis=-1) * w.numpy()).transpose(0, 1), 1

    xs, w = dynjit.randn(5, 3), dynjit.randn(3)
    out = dynjit.func.vmap(scaled_cumsum, in_dims=(0, None))(xs, w)
    assert calls == [("rule", 5, (0, None))]
    assert out.shape == (5, 3)
    np.testing.assert_allclose(out.numpy(), np.cumsum(xs.numpy(), axis=-1) * w.numpy(), rtol=1e-6)


def test_vmap_refuses_a_writing_op_without_a_rule(lib):
    @custom_op("dj_test::zero_numpy", mutates_args=("x",))
    def zero_numpy(x: dynjit.Tensor) -> None:
        x.numpy()[...] = 0

    with pytest.raises(NotImplementedError, match="writes its inputs.*register_vmap"):
        dynjit.func.vmap(zero_numpy)(dynjit.randn(2, 3))


@pytest.mark.parametrize("ns", ["add", "profiler", "registry"])
def test_a_namespace_may_not_hide_dynjits_own_ops(ns):
    with pytest.raises(RuntimeError, match="namespace|dynjit's own op namespaces"):
        custom_op(f"{ns}::mine", mutates_args=())(_clone_fn)
    assert dynjit.ops.add is registry["add"]
    assert f"{ns}::mine" not in registry


def _clone_fn(x: dynjit.Tensor) -> dynjit.Tensor:
    return x.clone()
