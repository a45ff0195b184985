"""Kernels generic in sizes, and number inputs as kernel arguments.

The llvm backend compiles a kernel once per layout pattern (op structure, rank, dtypes,
which dims are broadcast or of size 0 / 1, which strides are 0 or 1): sizes, strides and
offsets are read from a sizes array the wrapper passes, so a new size of a pattern already
seen loads no new LLVM module. Counted here by the distinct modules `jit.load` is asked
for, across 20 sizes of pointwise chains and fused row reductions, on contiguous,
transposed, sliced and broadcast inputs, size-0 and size-1 dims, float and integer dtypes,
each result against numpy. Number inputs (a learning rate, a step, `x.shape[0]`) used in
pointwise math are kernel arguments: 100 values compile once.
"""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit.fx import make_fx
from dynjit.testing import CompileCounterWithBackend

from backends.llvm import compile_graph, compiler, jit


@pytest.fixture
def modules(monkeypatch):
    """The hash of every LLVM module the backend generates and loads (compiled, or from the
    disk cache), from an empty in-process module cache."""
    seen = []
    real = jit.load

    def load(ir_text, names):
        seen.append(jit.module_hash(ir_text))
        return real(ir_text, names)
    monkeypatch.setattr(jit, "load", load)
    monkeypatch.setattr(compiler, "_MODULES", {})
    return seen


def chain(x):
    return ((x * 2 + 1).sin() * 0.5).exp() - x


def np_chain(x):
    return np.exp(np.sin(x * 2 + 1) * 0.5) - x


def _graph_fn(fn, example):
    gm = make_fx(fn)(*example)
    return compile_graph(gm, list(example))


def test_pointwise_chain_compiles_one_module_for_20_sizes(modules):
    fn = _graph_fn(chain, [dynjit.randn(2, 3)])
    for n in range(2, 22):
        x = dynjit.randn(n, 3)
        np.testing.assert_allclose(fn(x).numpy(), np_chain(x.numpy()), rtol=1e-5, atol=1e-6)
    # one module, generated once: its kernel takes the sizes, and the other sizes' wrappers
    # find it by the kernel's structure
    assert len(modules) == 1
    assert len(fn.patterns) == 1 and len(fn.specializations) == 20


def test_the_ir_has_no_sizes_in_it():
    a = _graph_fn(chain, [dynjit.randn(7, 3)])
    b = _graph_fn(chain, [dynjit.randn(1000, 33)])
    assert a.ir == b.ir
    assert a.kernels[0].size_values != b.kernels[0].size_values


def test_dynjit_compile_of_a_pointwise_chain_compiles_one_module_for_20_sizes(modules):
    cc = CompileCounterWithBackend("llvm")
    f = dynjit.compile(chain, backend=cc)
    for n in range(2, 22):
        x = dynjit.randn(n, 3)
        np.testing.assert_allclose(f(x).numpy(), np_chain(x.numpy()), rtol=1e-5, atol=1e-6)
    assert cc.frame_count <= 2
    assert len(set(modules)) == 1


LAYOUTS = {
    # name: (make input of size n, its numpy value)
    "contiguous": lambda n: dynjit.randn(n, 5),
    "transposed": lambda n: dynjit.randn(5, n).t(),
    "sliced": lambda n: dynjit.randn(n, 10)[:, ::2],
    "negative_offset_slice": lambda n: dynjit.randn(n + 3, 5)[2:-1],
    "3d_permuted": lambda n: dynjit.randn(n, 3, 4).permute(2, 0, 1),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_compiles_once_for_all_sizes(modules, layout):
    make = LAYOUTS[layout]
    fn = _graph_fn(chain, [make(2)])
    for n in range(2, 14):
        x = make(n)
        np.testing.assert_allclose(fn(x).numpy(), np_chain(x.numpy()), rtol=1e-5, atol=1e-6)
    assert len(set(modules)) == 1


def test_broadcast_inputs_and_size_1_dims(modules):
    def f(a, b):
        return (a * b + a).tanh()
    fn = _graph_fn(f, [dynjit.randn(3, 1), dynjit.randn(1, 4)])
    for n in range(2, 12):
        for m in (2, 5, 17):
            a, b = dynjit.randn(n, 1), dynjit.randn(1, m)
            np.testing.assert_allclose(fn(a, b).numpy(), np.tanh(a.numpy() * b.numpy() + a.numpy()),
                                       rtol=1e-5, atol=1e-6)
    assert len(set(modules)) == 1
    # a size-1 dim where there was none is another pattern, and still right
    for a, b in ((dynjit.randn(1, 1), dynjit.randn(1, 6)), (dynjit.randn(5, 1), dynjit.randn(1, 1))):
        np.testing.assert_allclose(fn(a, b).numpy(), np.tanh(a.numpy() * b.numpy() + a.numpy()),
                                   rtol=1e-5, atol=1e-6)


def test_size_0_dims():
    fn = _graph_fn(chain, [dynjit.randn(4, 3)])
    for shape in ((0, 3), (5, 0), (0, 0)):
        x = dynjit.randn(*shape)
        out = fn(x)
        assert tuple(out.shape) == shape and out.dtype == dynjit.float32
    x = dynjit.randn(9, 3)
    np.testing.assert_allclose(fn(x).numpy(), np_chain(x.numpy()), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [dynjit.float32, dynjit.float64, dynjit.int32, dynjit.int64])
def test_dtypes(modules, dtype):
    def f(x, y):
        return (x * 3 + y) * (x - y) + 7
    fn = _graph_fn(f, [dynjit.ones(2, 3, dtype=dtype), dynjit.ones(2, 3, dtype=dtype)])
    rng = np.random.default_rng(0)
    for n in range(2, 12):
        xs = [rng.integers(-50, 50, (n, 3)).astype(dtype.np) for _ in range(2)]
        out = fn(dynjit.tensor(xs[0]), dynjit.tensor(xs[1]))
        x, y = xs
        ref = (x * 3 + y) * (x - y) + 7
        assert out.dtype == dtype
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    assert len(set(modules)) == 1


def _np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _np_layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _np_cross_entropy(x, t):
    lse = x.max(1) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1))
    return float(np.mean(lse - x[np.arange(len(t)), t]))


def test_softmax_rows_and_row_length_are_arguments(modules):
    fn = _graph_fn(lambda x: x.softmax(1), [dynjit.randn(2, 3)])
    for rows, cols in [(n, 3 + 5 * n) for n in range(2, 22)]:
        x = dynjit.randn(rows, cols)
        np.testing.assert_allclose(fn(x).numpy(), _np_softmax(x.numpy().astype(np.float64)),
                                   rtol=2e-5, atol=1e-7)
    assert len(set(modules)) == 1


def test_layer_norm_and_var_take_the_count_at_run_time(modules):
    def f(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b), x.var(1)
    x0 = dynjit.randn(2, 4)
    fn = _graph_fn(f, [x0, dynjit.randn(4), dynjit.randn(4)])
    for n in range(2, 22):
        cols = 4 + n                          # layer_norm's shape is a constant of each graph:
        x, w, b = dynjit.randn(n, cols), dynjit.randn(cols), dynjit.randn(cols)
        gm = make_fx(f)(x, w, b)              # a graph per row length, compiled anew
        out, var = compile_graph(gm, [x, w, b])(x, w, b)
        xd = x.numpy().astype(np.float64)
        np.testing.assert_allclose(out.numpy(), _np_layer_norm(xd, w.numpy(), b.numpy()), rtol=2e-4, atol=2e-5)
        np.testing.assert_allclose(var.numpy(), xd.var(1, ddof=1), rtol=2e-5, atol=1e-6)
    assert len(set(modules)) == 1


def test_cross_entropy_rows_and_classes(modules, nll_form):
    def f(x, t):
        return F.nll_loss(x.log_softmax(1), t)
    for n in range(2, 22):
        x = dynjit.randn(n, 3 + n)
        t = dynjit.tensor(np.arange(n) % (3 + n))
        gm = make_fx(f)(x, t)
        out = compile_graph(gm, [x, t])(x, t)
        np.testing.assert_allclose(out.item(), _np_cross_entropy(x.numpy().astype(np.float64), t.numpy()),
                                   rtol=1e-5)
    assert len(set(modules)) == 1


def test_reductions_over_outer_and_all_dims(modules):
    def f(x):
        return x.sum(0), x.mean(0), (x * x).sum(), x.amax(1)
    fn = _graph_fn(f, [dynjit.randn(3, 4)])
    for n in range(2, 22):
        x = dynjit.randn(n, 2 * n + 1)
        xd = x.numpy().astype(np.float64)
        s0, m0, ss, mx = fn(x)
        np.testing.assert_allclose(s0.numpy(), xd.sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m0.numpy(), xd.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ss.numpy(), (xd * xd).sum(), rtol=1e-5)
        np.testing.assert_allclose(mx.numpy(), xd.max(1), rtol=0)
    assert len(set(modules)) == 1


# -- number inputs ----------------------------------------------------------------------------

def test_number_inputs_are_kernel_arguments(modules):
    def f(x, lr, k):
        return (x * lr + k).sin() * (lr * 2)
    x = dynjit.randn(5, 3)
    fn = _graph_fn(f, [x, 0.5, 3])
    for i in range(100):
        lr, k = 0.013 * i - 0.4, i - 50
        np.testing.assert_allclose(fn(x, lr, k).numpy(), f(x, lr, k).numpy(), rtol=1e-6, atol=1e-7)
    assert len(set(modules)) == 1
    assert len(fn.specializations) == 1


def test_number_input_rounding_follows_eager():
    """A float number in float32 math is rounded to float32 first (a weak scalar), as eager."""
    def f(x, t):
        return (x < t) * 1.0 + x * t
    x = dynjit.tensor(np.float32([0.1, 0.2, 0.3]))
    fn = _graph_fn(f, [x, 0.5])
    for t in (0.1, 0.10000000075, 0.2, 1 / 3, 1e-40, float("inf"), float("nan")):
        np.testing.assert_array_equal(fn(x, t).numpy(), f(x, t).numpy())


def _view_by(x, n):
    return x.view(n, -1) * 2


def test_a_number_deciding_a_shape_is_guarded_by_value():
    x = dynjit.randn(6, 4)
    gm = make_fx(_view_by)(x, 6)
    fn = compile_graph(gm, [x, 6])
    np.testing.assert_allclose(fn(x, 6).numpy(), x.numpy().reshape(6, -1) * 2)
    assert "n_1 != 6" in fn.source
    # make_fx's graph holds for n = 6 only, and says so for another value: so does the compiled one
    with pytest.raises(RuntimeError, match="traced with n_1 = 6") as eager_error:
        gm(x, 3)
    with pytest.raises(RuntimeError, match="traced with n_1 = 6") as compiled_error:
        fn(x, 3)
    assert str(compiled_error.value) == str(eager_error.value)


def test_a_number_deciding_a_shape_through_dynjit_compile():
    cc = CompileCounterWithBackend("llvm")
    cf = dynjit.compile(_view_by, backend=cc)
    x = dynjit.randn(6, 4)
    for n in (6, 3, 2, 12, 6, 3):
        out = cf(x, n)
        assert tuple(out.shape) == (n, 24 // n)
        np.testing.assert_allclose(out.numpy(), x.numpy().reshape(n, -1) * 2)


def test_dynjit_compile_int_and_float_arguments_100_values(modules):
    def f(x, step, lr):
        return (x * lr - step).cos() + step * 0.5
    cc = CompileCounterWithBackend("llvm")
    cf = dynjit.compile(f, backend=cc)
    x = dynjit.randn(4, 8)
    for i in range(100):
        step, lr = i, 0.01 * i + 0.001
        np.testing.assert_allclose(cf(x, step, lr).numpy(), f(x, step, lr).numpy(), rtol=1e-6, atol=1e-7)
    assert cc.frame_count <= 2
    assert 1 <= len(set(modules)) <= 2


def test_dynjit_compile_view_of_batch_size_over_20_sizes(modules):
    def f(x):
        return x.view(x.shape[0], -1) * 2
    cc = CompileCounterWithBackend("llvm")
    cf = dynjit.compile(f, backend=cc)
    for n in range(2, 22):
        x = dynjit.randn(n, 3, 4)
        out = cf(x)
        assert tuple(out.shape) == (n, 12)
        np.testing.assert_allclose(out.numpy(), x.numpy().reshape(n, -1) * 2)
    assert cc.frame_count <= 2
    assert len(set(modules)) <= 2


# -- training graphs (AOT autograd with the llvm kernels) ---------------------------------------

def _train_step(w, x, lr):
    loss = ((x @ w).tanh() * lr).sum() / x.shape[0]
    loss.backward()
    return loss


def _fresh_w():
    return dynjit.tensor(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32), requires_grad=True)


def test_training_step_with_a_changing_learning_rate(modules):
    cc = CompileCounterWithBackend("llvm")
    step = dynjit.compile(_train_step, backend=cc)
    x = dynjit.randn(5, 4)
    for i in range(30):
        lr = 0.05 * i + 0.01
        w, w_ref = _fresh_w(), _fresh_w()
        loss, ref = step(w, x, lr), _train_step(w_ref, x, lr)
        np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert cc.frame_count <= 2
    assert len(set(modules)) <= 4            # forward and backward, static and dynamic


def test_training_step_over_20_batch_sizes(modules):
    cc = CompileCounterWithBackend("llvm")
    step = dynjit.compile(_train_step, backend=cc)
    for n in range(2, 22):
        x = dynjit.randn(n, 4)
        w, w_ref = _fresh_w(), _fresh_w()
        loss, ref = step(w, x, 0.3), _train_step(w_ref, x, 0.3)
        np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert cc.frame_count <= 2
    assert len(set(modules)) <= 4


def test_comparisons_with_a_float_number_input_fuse_and_round_as_eager():
    def f(x, t):
        return (x > t).to(dynjit.float32) * 2 + (x <= t) * x
    x = dynjit.tensor(np.float32([0.1, 0.2, 0.3, np.nan, -np.inf]))
    fn = _graph_fn(f, [x, 0.2])
    assert fn.stats["fallback"] == 0          # the comparisons are in the kernel
    for t in (0.1, 0.10000000075, 0.2, 0.30000001, -1e300, float("inf"), float("nan")):
        np.testing.assert_array_equal(fn(x, t).numpy(), f(x, t).numpy())
    # an integer tensor against an int number runs the comparison eagerly (numpy compares
    # an int its dtype cannot hold by value)
    xi = dynjit.tensor(np.uint8([0, 5, 200]))
    fi = _graph_fn(lambda x, t: (x < t) & (x > 1), [xi, 3])
    for t in (3, -1, 300, 2 ** 62):
        np.testing.assert_array_equal(fi(xi, t).numpy(), ((xi < t) & (xi > 1)).numpy())


def test_an_int_number_input_beyond_int64_runs_eagerly():
    def f(x, k):
        return x * k + 1
    x = dynjit.randn(3)
    fn = _graph_fn(f, [x, 5])
    for k in (7, 2 ** 70, -2 ** 64, 9):
        try:
            ref = f(x, k)
        except Exception as e:          # eager's answer for an int no tensor op takes
            with pytest.raises(type(e), match=str(e)):
                fn(x, k)
        else:
            np.testing.assert_allclose(fn(x, k).numpy(), ref.numpy(), rtol=1e-6)


def test_module_inference_and_training_over_20_batch_sizes(modules):
    """The backward of a mean divides by the batch size, a constant of each AOT trace: float
    constants other than 0, +-1, +-0.5, +-2 and infinities are read at run time too, so the
    kernels are the same code for every size."""
    import dynjit.nn as nn
    dynjit.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    infer = CompileCounterWithBackend("llvm")
    cm = dynjit.compile(m, backend=infer)
    with dynjit.no_grad():
        for n in range(2, 22):
            x = dynjit.randn(n, 8)
            np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
    assert infer.frame_count <= 2 and len(set(modules)) == 1
    del modules[:]

    def step(x):
        loss = m(x).pow(2).mean()
        loss.backward()
        return loss
    train = CompileCounterWithBackend("llvm")
    cs = dynjit.compile(step, backend=train)
    for n in range(2, 22):
        x = dynjit.randn(n, 8)
        m.zero_grad()
        loss = cs(x).item()
        grads = [p.grad.numpy().copy() for p in m.parameters()]
        m.zero_grad()
        assert loss == pytest.approx(step(x).item(), rel=1e-5)
        for g, p in zip(grads, m.parameters()):
            np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert train.frame_count <= 2
    assert len(set(modules)) <= 4           # forward and backward (static and dynamic traces)
