"""Random graphs of pointwise ops, broadcasting, Python scalars and reductions (traced
with make_fx from random compositions) compiled with the llvm backend and compared
with eager. The quick test replays a fixed set of examples (their kernels come from
the disk cache after the first run); the slow one explores."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dynjit

from llvm_helpers import assert_same, compiled

UNARY = {
    "exp": lambda x: x.clamp(-20, 20).exp(),
    "log": lambda x: (x.abs() + 0.5).log(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "abs": lambda x: x.abs(),
    "neg": lambda x: -x,
    "relu": lambda x: x.relu(),
    "sqrt": lambda x: x.abs().sqrt(),
    "square": lambda x: x * x,
    "pow": lambda x: (x.abs() + 0.1).pow(1.7),
}
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y.abs() + 1),
    "maximum": lambda x, y: dynjit.maximum(x, y),
    "minimum": lambda x, y: dynjit.minimum(x, y),
    "where": lambda x, y: dynjit.where(x > y, x, y * 0.5),
}
SCALAR = {
    "add_scalar": lambda x, s: x + s,
    "mul_scalar": lambda x, s: x * s,
    "rsub_scalar": lambda x, s: s - x,
}
REDUCE = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "softmax": lambda x, d, k: x.softmax(d),
}


def _broadcastable(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


@st.composite
def programs(draw):
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 9))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shapes = st.sampled_from([(rows, cols), (rows, cols), (cols,), (rows, 1), (), "t"])
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(shapes)
        data = draw(st.integers(0, 2 ** 16)) 
        arr = np.random.default_rng(data).uniform(-3, 3, (cols, rows) if shape == "t" else shape)
        arr = arr.astype(dtype)
        inputs.append(arr.T if shape == "t" else arr)
    steps = []
    shapes_now = [a.shape for a in inputs]
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "scalar", "reduce", "reduce"]))
        i = draw(st.integers(0, len(shapes_now) - 1))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))), i))
            shapes_now.append(shapes_now[i])
        elif kind == "scalar":
            s = draw(st.sampled_from([2, -1, 0.5, 1.25, 3]))
            steps.append(("scalar", draw(st.sampled_from(sorted(SCALAR))), i, s))
            shapes_now.append(shapes_now[i])
        elif kind == "binary":
            j = draw(st.integers(0, len(shapes_now) - 1))
            if not _broadcastable(shapes_now[i], shapes_now[j]):
                continue
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY))), i, j))
            shapes_now.append(np.broadcast_shapes(shapes_now[i], shapes_now[j]))
        else:
            shape = shapes_now[i]
            if not shape:
                continue
            name = draw(st.sampled_from(sorted(REDUCE)))
            dim = draw(st.integers(-len(shape), len(shape) - 1))
            keep = draw(st.booleans())
            steps.append(("reduce", name, i, dim, keep))
            if name == "softmax":
                shapes_now.append(shape)
            else:
                d = dim % len(shape)
                shapes_now.append(tuple(1 if k == d else s for k, s in enumerate(shape)) if keep
                                  else tuple(s for k, s in enumerate(shape) if k != d))
    return inputs, steps


def build(steps):
    def fn(*xs):
        vals = list(xs)
        for step in steps:
            kind, name, i = step[:3]
            if kind == "unary":
                vals.append(UNARY[name](vals[i]))
            elif kind == "scalar":
                vals.append(SCALAR[name](vals[i], step[3]))
            elif kind == "binary":
                vals.append(BINARY[name](vals[i], vals[step[3]]))
            else:
                vals.append(REDUCE[name](vals[i], step[3], step[4]))
        # every value no later step used is an output, so nothing computed is dead
        used = {i for step in steps for i in (step[2:4] if step[0] == "binary" else step[2:3])}
        first = len(xs)
        return tuple(v for k, v in enumerate(vals[first:], first) if k not in used) or (vals[-1],)
    return fn


def run_program(program):
    inputs, steps = program
    tensors = [dynjit.tensor(a) for a in inputs]
    gm, fn = compiled(build(steps), *tensors)
    out, ref = fn(*tensors), gm(*tensors)
    scale = 1 + max((float(np.nanmax(np.abs(r.numpy()[np.isfinite(r.numpy())]), initial=0)) for r in ref),
                    default=0)
    tol = 2e-4 if inputs[0].dtype == np.float32 else 1e-9
    assert_same(out, ref, rtol=tol, atol=tol * scale)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_graphs_match_eager(program):
    run_program(program)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_graphs_match_eager_long(program):
    run_program(program)
