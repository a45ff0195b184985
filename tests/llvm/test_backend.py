"""The llvm backend as dynjit sees it: found through the `dynjit.backends` entry point
(without dynjit importing llvmlite), usable by `dynjit.compile`, and as forward and
backward compiler under AOT autograd."""
import subprocess
import sys

import numpy as np

import dynjit
from dynjit.backends import list_backends, lookup_backend
from dynjit.fx import make_fx

from backends.llvm import compile_graph, llvm_backend


def test_registered_through_the_entry_point():
    assert "llvm" in list_backends()
    backend = lookup_backend("llvm")
    x = dynjit.randn(3, 4)
    gm = make_fx(lambda x: (x.exp() + 1).sum(1))(x)
    out = backend(gm, [x])(x)
    np.testing.assert_allclose(out.numpy(), gm(x).numpy(), rtol=1e-6)


def test_importing_dynjit_does_not_import_llvmlite():
    code = ("import sys, dynjit; from dynjit.backends import list_backends; "
            "assert 'llvm' in list_backends(); "
            "print(sorted(m for m in sys.modules if m.startswith(('llvmlite', 'backends'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_dynjit_compile_with_llvm_backend():
    def f(a, b):
        return (a * b).sin().sum(1) + a.t()[0:1].sum()
    a, b = dynjit.randn(4, 5), dynjit.randn(4, 5)
    cf = dynjit.compile(f, backend="llvm")
    np.testing.assert_allclose(cf(a, b).numpy(), f(a, b).numpy(), rtol=1e-5)


def _mlp_step(x, y, w1, b1, w2, b2):
    h = (x @ w1.t() + b1).relu()
    logits = h @ w2.t() + b2
    return -(logits.log_softmax(1) * y).sum() / x.shape[0]


def _params():
    dynjit.manual_seed(0)
    return [(dynjit.randn(32, 20) * 0.2).requires_grad_(), dynjit.zeros(32).requires_grad_(),
            (dynjit.randn(10, 32) * 0.2).requires_grad_(), dynjit.zeros(10).requires_grad_()]


def test_training_graphs_run_forward_and_backward_as_kernels():
    x = dynjit.randn(16, 20)
    y = dynjit.tensor(np.eye(10, dtype=np.float32)[np.arange(16) % 10])
    params = _params()
    gm = make_fx(_mlp_step)(x, y, *params)
    compiled = llvm_backend(gm, [x, y, *params])
    loss = compiled(x, y, *params)
    loss = loss[0] if isinstance(loss, (tuple, list)) else loss
    loss.backward()
    grads = [p.grad.numpy().copy() for p in params]

    ref_params = _params()
    ref = _mlp_step(x, y, *ref_params)
    ref.backward()
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
    for g, p in zip(grads, ref_params):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-6)

    (entry,) = compiled._cache.values()
    assert entry.fw.kernels and entry.backward_fn().kernels       # both halves are llvm kernels


def test_dynjit_compile_trains_with_llvm_by_default_through_aot():
    params = _params()
    step = dynjit.compile(_mlp_step, backend="llvm")
    x = dynjit.randn(16, 20)
    y = dynjit.tensor(np.eye(10, dtype=np.float32)[np.arange(16) % 10])
    step(x, y, *params).backward()
    ref_params = _params()
    _mlp_step(x, y, *ref_params).backward()
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_inputs_with_other_layouts_compile_again():
    a = dynjit.randn(6, 4)
    gm = make_fx(lambda a: (a * 2).exp())(a)
    fn = compile_graph(gm, [a])
    for other in (dynjit.randn(4, 6).t(),
                  dynjit.randn(6, 4, dtype=dynjit.float64), dynjit.randn(6, 8)[:, ::2], dynjit.randn(3, 5)):
        out = fn(other)
        assert out.dtype == other.dtype and out.shape == other.shape
        np.testing.assert_allclose(out.numpy(), (other * 2).exp().numpy(), rtol=1e-6)
    assert len(fn.specializations) == 5


def test_grad_requiring_inputs_run_eagerly_for_autograd():
    a = dynjit.randn(3)
    gm = make_fx(lambda a: a.sin() * 2)(a)
    fn = compile_graph(gm, [a])
    b = dynjit.randn(3, requires_grad=True)
    fn(b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * np.cos(b.detach().numpy()), rtol=1e-6)


def test_graph_outputs_none_and_python_values():
    x = dynjit.randn(5)
    gm = make_fx(lambda x: (x.exp(), None, 3, (None, x * 2)))(x)
    out = compile_graph(gm, [x])(x)
    assert out[1] is None and out[2] == 3 and out[3][0] is None
    np.testing.assert_allclose(out[0].numpy(), np.exp(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(out[3][1].numpy(), 2 * x.numpy())


def test_backward_graph_returns_gradients_only_for_inputs_that_get_one():
    from dynjit.aot import aot_function
    results = []

    def bw_compiler(gm, example_inputs):
        fn = compile_graph(gm, example_inputs)

        def run(*args):
            out = fn(*args)
            results.append(out)
            return out
        return run

    def f(a, b, c):
        return ((a * b).sin() * 2).sum(), c.detach() * 2
    a, c = dynjit.randn(4, 3, requires_grad=True), dynjit.randn(3, requires_grad=True)
    b = dynjit.randn(4, 3)
    aot_function(f, fw_compiler=compile_graph, bw_compiler=bw_compiler)(a, b, c)[0].backward()
    (grads,) = results
    # only a gets a gradient: b does not require one and c is detached inside f, so the
    # backward graph has no output for them (and no autograd edge to c)
    assert len(grads) == 1 and grads[0].shape == (4, 3)
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.cos(a.detach().numpy() * b.numpy()) * b.numpy(), rtol=1e-5)
    assert c.grad is None and b.grad is None


def test_dynjit_compile_compiles_forward_and_backward_with_llvm(monkeypatch):
    import backends.llvm as llvm_pkg
    compiled_graphs = []

    def spy(gm, example_inputs):
        fn = compile_graph(gm, example_inputs)
        compiled_graphs.append(fn)
        return fn
    monkeypatch.setattr(llvm_pkg, "compile_graph", spy)
    params = _params()
    x = dynjit.randn(16, 20)
    y = dynjit.tensor(np.eye(10, dtype=np.float32)[np.arange(16) % 10])
    dynjit.compile(_mlp_step, backend="llvm")(x, y, *params).backward()
    assert len(compiled_graphs) == 2                   # the forward and the backward graph
    assert all(fn.kernels for fn in compiled_graphs)
    assert all(p.grad is not None for p in params)
