"""Differential checking of AOT-compiled functions against eager.

`verify_aot(f, make_inputs)` runs `f` eagerly and through `aot_function` on two
identical, independent sets of inputs and checks that everything eager does
is done by the compiled function too: output values, dtypes and
requires_grad; which outputs are (views of) inputs or of each other; the new
values of inputs written in place; gradients of every leaf; and that an
in-place write through an output reaches the same tensors.

`make_inputs()` returns `(leaves, args)`: the leaves gradients are checked on
(often bases the args are made from, so that args are non-leaves that may be
written in place) and the arguments of `f`. It must build fresh tensors
on each call (the global seed is reset before each call).
"""
import numpy as np

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.fx.graph_module import GraphModule


def _tensors(values):
    out = []

    def rec(v):
        if isinstance(v, dynjit.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                rec(x)
        elif isinstance(v, dict):
            for x in v.values():
                rec(x)
    rec(values)
    return out


def _root(t):
    return t._base if t._base is not None else t


def _same_value(a, b, what):
    if isinstance(a, dynjit.Tensor):
        assert isinstance(b, dynjit.Tensor), f"{what}: eager gave a tensor, compiled gave {type(b).__name__}"
        assert a.shape == b.shape, f"{what}: shape {list(a.shape)} != {list(b.shape)}"
        assert a.dtype is b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
        np.testing.assert_allclose(b.numpy(force=True), a.numpy(force=True), rtol=1e-5, atol=1e-6,
                                   err_msg=what)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{what}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same_value(x, y, f"{what}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{what}: keys {list(a)} != {list(b)}"
        for k in a:
            _same_value(a[k], b[k], f"{what}[{k!r}]")
    else:
        assert a == b, f"{what}: {a!r} != {b!r}"


def _aliasing(outs, args):
    """For each output tensor: (same object as arg i?, same object as output j?,
    shares its root with arg i / output j?) -- a picture of eager's aliasing."""
    picture = []
    for o in outs:
        picture.append((
            [o is a for a in args],
            [o is p for p in outs],
            [_root(o) is _root(a) for a in args],
            [_root(o) is _root(p) for p in outs],
            o.requires_grad,
            o.grad_fn is None,
        ))
    return picture


def run(f, make_inputs, compiled_f=None, backward=True, mutate_outputs=True, warmup=True):
    """Run eager and compiled side by side; return (eager results, compiled results) for
    further checks. Each result is a dict with leaves, args, out."""
    compiled_f = compiled_f or aot_function(f, nop)
    if warmup:
        # Compile on other values first: a value wrongly baked into the graph shows.
        dynjit.manual_seed(4321)
        _, args = make_inputs()
        with dynjit.no_grad():
            for a in _tensors(args):
                if a.dtype.is_floating_point and a._data.flags.writeable:
                    a.add_(dynjit.rand(a.shape, dtype=a.dtype) + 0.5)
        compiled_f(*args)
    results = []
    for fn in (f, compiled_f):
        dynjit.manual_seed(1234)        # both runs get the same random inputs
        leaves, args = make_inputs()
        out = fn(*args)
        results.append({"leaves": leaves, "args": args, "out": out})
    ref, res = results
    _same_value(ref["out"], res["out"], "output")
    ref_outs, res_outs = _tensors(ref["out"]), _tensors(res["out"])
    ref_args, res_args = _tensors(ref["args"]), _tensors(res["args"])
    assert _aliasing(ref_outs, ref_args) == _aliasing(res_outs, res_args), \
        "outputs alias inputs / each other differently from eager"
    _same_value(ref["args"], res["args"], "inputs after the call")
    if backward:
        for r in results:
            diff = [o for o in _tensors(r["out"]) if o.requires_grad]
            diff += [a for a in _tensors(r["args"]) if a.requires_grad and a.grad_fn is not None
                     and not any(a is leaf for leaf in r["leaves"])]
            if diff:
                total = sum((o.float() * (k + 1)).sum() for k, o in enumerate(diff))
                total.backward()
        for i, (a, b) in enumerate(zip(ref["leaves"], res["leaves"])):
            if a.grad is None:
                assert b.grad is None, f"leaf {i}: eager gave no gradient, compiled gave one"
            else:
                assert b.grad is not None, f"leaf {i}: compiled gave no gradient"
                _same_value(a.grad, b.grad, f"gradient of leaf {i}")
    if mutate_outputs:
        for r in results:
            with dynjit.no_grad():
                for o in _tensors(r["out"]):
                    if o.dtype.is_floating_point and o._data.flags.writeable:
                        o.mul_(2)
        _same_value(ref["args"], res["args"], "inputs after writing into the outputs")
        _same_value(ref["out"], res["out"], "outputs after writing into the outputs")
    return ref, res


def verify_aot(f, make_inputs, **kwargs):
    run(f, make_inputs, **kwargs)


class GraphRecorder:
    """A compiler that keeps each graph it is given (and runs it as is)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, GraphModule)
        self.graphs.append(gm)
        return gm
