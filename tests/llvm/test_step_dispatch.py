"""The compiled training step's dispatch: optimizer updates stored straight into the
parameters (lowering.try_store_into, runtime.store_target / stored) and the whole step
compiled == eager.

An optimizer's `p.add_(g, alpha=-lr)` reaches the llvm backend as
`copy_(p, p - lr * g)` (AOT functionalizes it, keeping the write as a copy_ into the
input); the kernel that computes the new value writes it into p's memory when that is
what eager gives, else into a buffer that the eager copy_ copies in.
"""
import numpy as np
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit import nn, optim
from dynjit.aot import aot_function
from dynjit.ops.registry import registry
from dynjit.tensor import Tensor

from backends.llvm import compile_graph
from backends.llvm import runtime as R

DTYPES = [np.float32, np.float64]


def recording_compiler(made):
    def compiler(gm, example_inputs):
        fn = compile_graph(gm, example_inputs)
        made.append(fn)
        return fn
    return compiler


def compiled_update(fn, made):
    """`fn` through AOT with the llvm compiler, input mutations kept in the graph (what the
    llvm backend does for an optimizer step on parameters that require grad)."""
    return aot_function(fn, fw_compiler=recording_compiler(made), keep_inference_input_mutations=True)


def sgd_like(p, g, buf):
    with dynjit.no_grad():
        buf.mul_(0.9).add_(g)
        p.add_(buf, alpha=-0.1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_update_writes_the_parameter_memory(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((33, 17)).astype(dtype) for _ in range(3)]
    made = []
    step = compiled_update(sgd_like, made)
    p, g, buf = (dynjit.tensor(a.copy()) for a in arrays)
    p.requires_grad_()
    p_mem, buf_mem = p._data, buf._data
    v_p, v_buf = p._version, buf._version
    for _ in range(3):
        step(p, g, buf)
    ref_p, ref_g, ref_buf = (a.copy() for a in arrays)
    for _ in range(3):
        ref_buf = ref_buf * dtype(0.9) + ref_g
        ref_p = ref_p - dtype(0.1) * ref_buf
    np.testing.assert_allclose(p._data, ref_p, rtol=1e-6 if dtype == np.float32 else 1e-13)
    np.testing.assert_allclose(buf._data, ref_buf, rtol=1e-6 if dtype == np.float32 else 1e-13)
    assert p._data is p_mem and buf._data is buf_mem
    # a write counts: p once per step; buf's two in-place ops are one copy_ after AOT
    # (as under aot_eager), so its version moves once or twice per step
    assert p._version - v_p == 3 and buf._version - v_buf >= 3
    assert sum(f.source.count("_store_target(") for f in made) == 2
    assert sum(f.stats["fallback"] for f in made) == 0


def test_versions_match_eager():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(40).astype(np.float32)

    def upd(p, g):
        with dynjit.no_grad():
            p.add_(g, alpha=-0.5)

    made = []
    step = compiled_update(upd, made)
    pe, pc = dynjit.tensor(a.copy(), requires_grad=True), dynjit.tensor(a.copy(), requires_grad=True)
    g = dynjit.ones(40)
    ve, vc = pe._version, pc._version
    for _ in range(4):
        upd(pe, g)
        step(pc, g)
    assert pe._version - ve == pc._version - vc == 4
    np.testing.assert_array_equal(pe._data, pc._data)
    assert "_store_target(" in made[0].source


def test_value_read_after_the_copy_is_the_new_value():
    """A value copied into an input and also used later (momentum's buffer feeds the
    parameter's update) is read back from the input's memory."""
    def upd(p, buf, g):
        with dynjit.no_grad():
            buf.mul_(0.5).add_(g)
            p.sub_(buf * 2)
            return (buf * 3).sum()

    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(64).astype(np.float64) for _ in range(3)]
    made = []
    step = compiled_update(upd, made)
    pe, be, ge = (dynjit.tensor(x.copy()) for x in arrays)
    pc, bc, gc = (dynjit.tensor(x.copy()) for x in arrays)
    pe.requires_grad_()
    pc.requires_grad_()
    for _ in range(3):
        re, rc = upd(pe, be, ge), step(pc, bc, gc)
        np.testing.assert_allclose(rc.item(), re.item(), rtol=1e-13)
    np.testing.assert_allclose(pc._data, pe._data, rtol=1e-13)
    np.testing.assert_allclose(bc._data, be._data, rtol=1e-13)


def test_input_read_at_another_index_goes_through_a_buffer():
    """A kernel that reads the input it writes at another index (here reversed) must not
    write it in place: the new values go to a buffer and copy_ copies them in."""
    def upd(p, g):
        with dynjit.no_grad():
            p.copy_(p.flip(0) + g)

    a = np.arange(10, dtype=np.float32)
    made = []
    step = compiled_update(upd, made)
    pe, pc = dynjit.tensor(a.copy(), requires_grad=True), dynjit.tensor(a.copy(), requires_grad=True)
    g = dynjit.ones(10)
    for _ in range(2):
        upd(pe, g)
        step(pc, g)
    np.testing.assert_array_equal(pc._data, pe._data)


def test_store_target_falls_back_on_overlap_and_read_only_memory():
    base = np.arange(16, dtype=np.float32)
    t = Tensor._make(base)
    assert R.store_target(t, base, (np.ones(16, np.float32),)) is base
    other = base[::2]                       # the kernel would read memory it writes elsewhere
    buf = R.store_target(t, base, (other,))
    assert buf is not base and buf.shape == base.shape
    buf[...] = 7
    v = t._version
    R.stored(t, base, buf, registry["copy_"])
    assert (base == 7).all() and t._version == v + 1
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    tro = Tensor._make(ro)
    buf = R.store_target(tro, ro, ())
    assert buf is not ro
    with pytest.raises(RuntimeError, match="read-only"):
        R.stored(tro, ro, buf, registry["copy_"])


def _mlp_step_fns(dtype, momentum, compile_backend=None, compile_what="step"):
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    if dtype == np.float64:
        model = model.double()
    with dynjit.no_grad():
        for p in model.parameters():
            p.copy_(dynjit.tensor(rng.standard_normal(p.shape).astype(dtype) * 0.3))
    x = dynjit.tensor(rng.standard_normal((8, 12)).astype(dtype))
    y = dynjit.tensor(rng.integers(0, 5, 8))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=momentum, weight_decay=0.01)

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)
    if compile_backend and compile_what == "loss":
        loss_fn = dynjit.compile(loss_fn, backend=compile_backend)

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        return loss
    if compile_backend and compile_what == "step":
        step = dynjit.compile(step, backend=compile_backend)
    return model, lambda: step(x, y)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "llvm"])
@pytest.mark.parametrize("what", ["step", "loss"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_mlp_training_step_compiled_equals_eager(backend, what, dtype, momentum):
    model_e, run_e = _mlp_step_fns(dtype, momentum)
    model_c, run_c = _mlp_step_fns(dtype, momentum, backend, what)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    for _ in range(4):
        le, lc = run_e(), run_c()
        np.testing.assert_allclose(lc.item(), le.item(), **tol)
    for pe, pc in zip(model_e.parameters(), model_c.parameters()):
        np.testing.assert_allclose(pc._data, pe._data, **tol)
        np.testing.assert_allclose(pc.grad._data, pe.grad._data, **tol)
        assert pc._data.dtype == dtype


# -- ops the wrapper calls on arrays (op_lowerings.DIRECT_KERNELS) -----------------------------
from backends.llvm.op_lowerings import DIRECT_KERNELS, direct_kernel      # noqa: E402


def _registry_call(name, *args):
    return registry[name].kernel(*args)


def _same_outcome(fast, slow):
    """Both calls give the same array bit for bit (dtype included), or raise the same error."""
    try:
        want = slow()
    except Exception as e:          # noqa: BLE001 - the error itself is what is compared
        with pytest.raises(type(e)) as got:
            fast()
        assert str(got.value) == str(e)
        return
    out = fast()
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["plain", "ignored_hit", "ignored_in_range_unused", "out_of_range", "negative",
                                  "weight", "sum", "none", "one_row", "empty", "one_d", "broadcast"])
def test_nll_loss_direct_is_the_registry_kernel(dtype, case):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 11)).astype(dtype)
    t = rng.integers(0, 11, 37)
    weight, reduction, ignore = None, "mean", -100
    if case == "ignored_hit":
        ignore = int(t[3])
    elif case == "ignored_in_range_unused":
        ignore = 11 + 5
    elif case == "out_of_range":
        t[5] = 11
    elif case == "negative":
        t[2] = -3
    elif case == "weight":
        weight = rng.random(11).astype(dtype)
    elif case in ("sum", "none"):
        reduction = case
    elif case == "one_row":
        x, t = x[:1], t[:1]
    elif case == "empty":
        x, t = x[:0], t[:0]
    elif case == "one_d":
        x, t = x[0], np.asarray(t[0])
    elif case == "broadcast":
        x = np.broadcast_to(x[:, :1], x.shape)
    fast = DIRECT_KERNELS["nll_loss"]
    _same_outcome(lambda: fast(x, t, weight, reduction, ignore),
                  lambda: _registry_call("nll_loss", x, t, weight, reduction, ignore))


@pytest.mark.parametrize("name,make,size", [
    ("view", lambda: np.arange(24.0).reshape(4, 6), (-1, 3)),
    ("view", lambda: np.arange(24.0).reshape(4, 6), (2, 12)),
    ("view", lambda: np.arange(24.0).reshape(4, 6).T, (24,)),          # not a view: the error
    ("view", lambda: np.arange(24.0).reshape(4, 6), (5, -1)),           # wrong size: the error
    ("view", lambda: np.arange(24.0).reshape(4, 6), (-1, -1)),
    ("view", lambda: np.zeros((0, 3)), (-1, 3)),
    ("reshape", lambda: np.arange(24.0).reshape(4, 6).T, (24,)),       # copies
    ("reshape", lambda: np.arange(24.0).reshape(4, 6), (7, -1)),
    ("expand", lambda: np.arange(4.0).reshape(4, 1), (4, 5)),
    ("expand", lambda: np.arange(4.0).reshape(4, 1), (2, 4, 5)),
    ("expand", lambda: np.arange(4.0).reshape(4, 1), (-1, 5)),
    ("expand", lambda: np.arange(4.0).reshape(4, 1), (3, 5)),           # the error
    ("expand", lambda: np.arange(4.0).reshape(4, 1), (5,)),             # too few sizes: the error
])
def test_direct_views_are_the_registry_kernels(name, make, size):
    fast = direct_kernel(registry[name])
    _same_outcome(lambda: fast(make(), size), lambda: _registry_call(name, make(), size))
    try:
        out, src = fast(make(), size), None
    except RuntimeError:
        return
    if name in ("view", "expand"):
        src = make()
        out = fast(src, size)
        assert out.size == 0 or np.may_share_memory(out, src)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_compiled_uses_no_dispatcher_call_and_equals_eager(dtype, nll_form):
    def f(x, t):
        return F.cross_entropy(x, t)
    rng = np.random.default_rng(5)
    x = dynjit.tensor(rng.standard_normal((16, 7)).astype(dtype))
    t = dynjit.tensor(rng.integers(0, 7, 16))
    from dynjit.fx import make_fx
    fn = compile_graph(make_fx(f)(x, t), [x, t])
    assert fn.stats["fallback"] == 0
    out = fn(x, t)
    np.testing.assert_array_equal(out._data, f(x, t)._data)
    bad = dynjit.tensor(np.full(16, 9))
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, bad)
    with pytest.raises(IndexError, match="out of bounds"):
        fn(x, bad)


@pytest.mark.parametrize("ignore", [-100, 2])
def test_cross_entropy_with_ignore_index_compiled_equals_eager(ignore):
    def f(x, t):
        return F.cross_entropy(x, t, ignore_index=ignore)
    rng = np.random.default_rng(6)
    x = dynjit.tensor(rng.standard_normal((16, 7)).astype(np.float32), requires_grad=True)
    t = dynjit.tensor(rng.integers(0, 7, 16))
    for backend in ("eager", "aot_eager", "llvm"):
        xc = dynjit.tensor(x._data.copy(), requires_grad=True)
        le, lc = f(x, t), dynjit.compile(f, backend=backend)(xc, t)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-6)
        ge, = dynjit.autograd.grad(le, [x])
        gc, = dynjit.autograd.grad(lc, [xc])
        np.testing.assert_allclose(gc._data, ge._data, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("idx,n", [
    (np.array([3, 0, 9, 9, 1]), 10), (np.array([[1, 2], [0, 4]]), 5), (np.array([3, 10]), 10),
    (np.array([-1, 2]), 5), (np.array([2, 4]), -1), (np.zeros(0, np.int64), 3),
    (np.array([1, 2], np.int32), 4)])
def test_one_hot_direct_is_the_registry_kernel(idx, n):
    fast = direct_kernel(registry["one_hot"])
    _same_outcome(lambda: fast(idx, n), lambda: _registry_call("one_hot", idx, n))
