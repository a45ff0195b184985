"""Shared checks for the llvm backend tests: compile a function's graph with the
llvm backend and compare every output with the eager graph."""
import numpy as np

import dynjit
from dynjit.fx import make_fx

from backends.llvm import compile_graph


def compiled(fn, *inputs):
    gm = make_fx(fn)(*inputs)
    return gm, compile_graph(gm, list(inputs))


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def assert_same(out, ref, rtol=1e-5, atol=1e-6):
    out, ref = as_tuple(out), as_tuple(ref)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert isinstance(o, dynjit.Tensor), type(o)
        assert o.dtype == r.dtype, (o.dtype, r.dtype)
        assert tuple(o.shape) == tuple(r.shape), (o.shape, r.shape)
        if r.dtype.is_floating_point:
            np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(o.numpy(), r.numpy())


def check(fn, *inputs, rtol=1e-5, atol=1e-6):
    """fn's graph compiled with the llvm backend gives eager's results; returns the compiled fn."""
    gm, cfn = compiled(fn, *inputs)
    assert_same(cfn(*inputs), gm(*inputs), rtol, atol)
    return cfn
