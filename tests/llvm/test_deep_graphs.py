"""Graph size is not bounded by Python's recursion limit: lowering, fusion and code
generation walk kernels with explicit stacks, so a chain of thousands of ops (one
value feeding the next) compiles with the llvm backend and gives eager's result.

The walks are checked to be flat by compiling with little stack to spare (a recursion
limit a fixed number of frames above the caller's depth, whatever the graph's size).
Long chains are also split into kernels of bounded size (MAX_KERNEL_WEIGHT): LLVM's time
grows faster than linearly with the size of one function."""
import contextlib
import inspect
import sys

import numpy as np
import pytest

import dynjit
from dynjit.fx import make_fx

from backends.llvm import compile_graph
from backends.llvm.lowering import MAX_KERNEL_WEIGHT

HEADROOM = 120        # frames the compiler may use above its caller, whatever the graph's size


@contextlib.contextmanager
def little_stack(headroom=HEADROOM):
    depth = len(inspect.stack(0))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + headroom)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _chain(n, transcendental_every=0):
    def f(x):
        for i in range(n):
            k = i % 6
            if transcendental_every and i % transcendental_every == transcendental_every - 1:
                x = x.sin()
            elif k == 0:
                x = x * 0.75
            elif k == 1:
                x = x + 0.5
            elif k == 2:
                x = x.relu()
            elif k == 3:
                x = -x
            elif k == 4:
                x = x.abs() - 0.25
            else:
                x = dynjit.where(x > 1.0, x * 0.5, x)
        return x
    return f


def test_5000_op_pointwise_chain_compiles_and_matches_eager_bitwise():
    x = dynjit.randn(1000)
    gm = make_fx(_chain(5000))(x)
    assert sum(n.op == "call_function" for n in gm.graph.nodes) >= 5000
    with little_stack():
        fn = compile_graph(gm, [x])
    assert len(fn.kernels) > 1            # split into kernels of bounded size
    out, ref = fn(x), gm(x)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_chain_with_transcendentals_is_split_into_bounded_kernels():
    x = dynjit.randn(300)
    gm = make_fx(_chain(600, transcendental_every=3))(x)
    with little_stack():
        fn = compile_graph(gm, [x])
    assert len(fn.kernels) >= 600 // 3 * 16 // MAX_KERNEL_WEIGHT
    np.testing.assert_allclose(fn(x).numpy(), gm(x).numpy(), rtol=1e-4, atol=1e-5)


def test_deep_reduction_chain_and_many_outputs():
    """Reductions fed by long chains, and a kernel storing many values, walk flat too."""
    x = dynjit.randn(16, 40)

    def f(x):
        outs = []
        for i in range(600):
            x = x * 0.999 + 0.001
            if i % 100 == 99:
                outs.append(x.sum(1))
                outs.append(x.softmax(1))
        return x, outs
    gm = make_fx(f)(x)
    with little_stack():
        fn = compile_graph(gm, [x])
    out, ref = fn(x), gm(x)
    np.testing.assert_allclose(out[0].numpy(), ref[0].numpy(), rtol=1e-6)
    for o, r in zip(out[1], ref[1]):
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)


def test_2000_layer_sequential_compiles_with_the_llvm_backend():
    dynjit.manual_seed(0)
    layers = []
    for i in range(2000):
        layers.append(dynjit.nn.Linear(8, 8) if i % 100 == 0 else dynjit.nn.ReLU())
    model = dynjit.nn.Sequential(*layers)
    x = dynjit.randn(4, 8)
    with dynjit.no_grad():
        ref = model(x)
        out = dynjit.compile(model, backend="llvm")(x)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def _exec(src):
    ns = {"dynjit": dynjit}
    exec(src, ns)
    return ns["g"]


def test_2000_statement_body_compiles_with_the_llvm_backend():
    src = "def g(x):\n" + "".join(f"    x = x * 0.999 + {i % 7}\n" for i in range(2000)) + "    return x\n"
    g = _exec(src)
    x = dynjit.randn(50)
    out = dynjit.compile(g, backend="llvm")(x)
    np.testing.assert_allclose(out.numpy(), g(x).numpy(), rtol=1e-5)


def test_1500_term_expression_compiles_with_the_llvm_backend():
    g = _exec("def g(x):\n    return " + " + ".join(f"x * {i % 5}" for i in range(1500)) + "\n")
    x = dynjit.randn(50)
    out = dynjit.compile(g, backend="llvm")(x)
    np.testing.assert_allclose(out.numpy(), g(x).numpy(), rtol=1e-5)


def test_3000_views_deep_compile():
    """A view of a view of ... (the wrapper builds each from the one before)."""
    x = dynjit.randn(6, 5)

    def f(x):
        for i in range(3000):
            x = x.t() if i % 3 else x.unsqueeze(0).squeeze(0)
        return x, x * 2
    gm = make_fx(f)(x)
    with little_stack():
        fn = compile_graph(gm, [x])
    for o, r in zip(fn(x), gm(x)):
        np.testing.assert_array_equal(o.numpy(), r.numpy())


@pytest.mark.parametrize("threads", ["1", "2"])
def test_kernels_of_more_arrays_than_a_ctypes_call_takes(monkeypatch, threads):
    """ctypes calls take at most 1024 arguments: a kernel reading 1100 inputs (or writing
    1100 outputs) takes its arrays packed into one C array."""
    import backends.llvm.lowering as lowering
    monkeypatch.setenv("DYNJIT_NUM_THREADS", threads)
    monkeypatch.setattr(lowering, "PARALLEL_WORK", 64)        # small arrays, still split over threads
    xs = [dynjit.randn(256) for _ in range(1100)]

    def many_in(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = acc * 0.5 + x
        return acc
    gm = make_fx(many_in)(*xs)
    with little_stack():
        fn = compile_graph(gm, xs)
    assert any(k.packed for k in fn.kernels)
    assert ("_par(" in fn.source) == (threads == "2")
    np.testing.assert_array_equal(fn(*xs).numpy(), gm(*xs).numpy())

    x = xs[0]
    gm = make_fx(lambda x: tuple(x * i - 1 for i in range(1100)))(x)
    fn = compile_graph(gm, [x])
    assert any(k.packed for k in fn.kernels)
    for o, r in zip(fn(x), gm(x)):
        np.testing.assert_array_equal(o.numpy(), r.numpy())
