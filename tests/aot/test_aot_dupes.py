"""Duplicate arguments, the assumptions aot_module_simplified makes about its example
inputs (checked when a call breaks them), and the compilation context compilers see."""
import itertools

import pytest

import dynjit
from dynjit.aot import aot_function, aot_module, aot_module_simplified, get_aot_compilation_context, nop
from dynjit.aot import aot_autograd
from dynjit.nn import Module

from aot_verify import verify_aot


@pytest.fixture
def counter(monkeypatch):
    """Number compiled functions from 0 in this test (as PyTorch's tests patch AOT_COUNTER)."""
    monkeypatch.setattr(aot_autograd, "AOT_COUNTER", itertools.count())


def _outs_and_grads(fn, args):
    args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    outs = fn(*args)
    sum(o.sum() for o in outs).backward()
    return [o.detach() for o in outs], [a.grad for a in args]


def _assert_same_outs_and_grads(f, compiled, args):
    (ref_out, ref_grads), (out, grads) = _outs_and_grads(f, args), _outs_and_grads(compiled, args)
    assert all(dynjit.allclose(a, b) for a, b in zip(ref_out, out))
    for a, b in zip(ref_grads, grads):
        assert (a is None) == (b is None) and (a is None or dynjit.allclose(a, b))


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_dupe_arg_torture
def test_dupe_arg_torture():
    def f(x, y):
        x.t_()
        y.unsqueeze_(0)          # the same tensor: transposed, then unsqueezed
        return x + y

    def make():
        leaf = dynjit.randn(3, 3, requires_grad=True)
        x = leaf.clone()
        return [leaf], [x, x]
    verify_aot(f, make)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_invalid_dupe_left_bias
def test_invalid_dupe_left_bias(counter):
    class F(Module):
        def forward(self, x, y):
            x.t_()
            return (x + y,)

    def make():
        leaf = dynjit.randn(3, 3, requires_grad=True)
        x = leaf.clone()
        return [leaf], [x, x]
    for keep in (True, False):      # graphs 0 and 1
        mod = F()
        verify_aot(mod, make, compiled_f=aot_module(mod, nop, keep_inference_input_mutations=keep))
    x = dynjit.randn(3, 3, requires_grad=True).clone()
    y = dynjit.randn(3, 3, requires_grad=True)
    fxx = aot_module_simplified(F(), (x, x), nop)       # graph 2
    with pytest.raises(AssertionError, match=(
            r"^At compilation time, graph 2 was compiled under the assumption that input 1 would be "
            r"a duplicate of input 0, but at runtime this was not the case\.")):
        fxx(x, y)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_invalid_dupe
def test_invalid_dupe(counter):
    class F(Module):
        def forward(self, x, y):
            x.unsqueeze_(0)
            y.unsqueeze_(0)
            return (x + y,)

    def fresh():
        return dynjit.randn(3, 3, requires_grad=True).clone()

    x, y = fresh(), fresh()
    fxy = aot_module_simplified(F(), (x, y), nop)       # graph 0
    fxy(x, y)
    x = fresh()
    x_ref = x.detach().clone()
    out = fxy(x, x)              # compiled for two tensors, called with one twice: traced again
    assert x.shape == (1, 1, 3, 3) and dynjit.allclose(out[0], (x_ref * 2).reshape(1, 1, 3, 3))
    fxx = aot_module_simplified(F(), (x, x), nop)       # graph 1
    x = fresh()
    fxx(x, x)
    x, y = fresh(), fresh()
    with pytest.raises(AssertionError, match=(
            r"^At compilation time, graph 1 was compiled under the assumption that input 1 would be "
            r"a duplicate of input 0, but at runtime this was not the case\.")):
        fxx(x, y)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_invalid_requires_grad
def test_invalid_requires_grad(counter):
    class F(Module):
        def forward(self, x, y):
            return (x + y,)

    x = dynjit.randn(3, 3, requires_grad=True)
    y = dynjit.randn(3, 3, requires_grad=True)
    z = dynjit.randn(3, 3, requires_grad=False)
    fxy = aot_module_simplified(F(), (x, y), nop)       # graph 0
    _assert_same_outs_and_grads(F(), fxy, (x, y))
    _assert_same_outs_and_grads(F(), fxy, (x, z))    # needs fewer gradients: fine
    fxz = aot_module_simplified(F(), (x, z), nop)       # graph 1
    _assert_same_outs_and_grads(F(), fxz, (x, z))
    with pytest.raises(AssertionError, match=(
            r"^At compilation time, graph 1 was compiled under the assumption that input 1 would not "
            r"require grad, but at runtime this was not the case\.")):
        fxz(x, y)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_compilation_context
def test_compilation_context(counter):
    def f(x):
        return x.sin().sin()
    seen = []

    def compiler(gm, _):
        seen.append((get_aot_compilation_context()[0], len(gm.graph.nodes)))
        return gm
    f = aot_function(f, compiler)
    out = f(dynjit.randn(5, requires_grad=True))
    f = aot_function(f, compiler)       # compiling the compiled function: its ops, one graph
    f(dynjit.randn(5))
    out.sum().backward()
    # forward: x, sin, sin, output; backward: x, sin(x) and the tangent in, two cos and
    # two mul, output
    assert seen == [(["0_forward"], 4), (["1_inference"], 4), (["0_backward"], 8)]
    assert get_aot_compilation_context()[0] == []    # only while a compiler runs
