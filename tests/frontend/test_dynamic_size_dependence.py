"""Sizes and output counts that follow a dynamic number stay right for every new value.

Once a size or an int argument is dynamic (the automatic-dynamic recompile, or
dynamic=True), an op can take it where it decides a size (repeat(k), view(k, -1),
zeros(k), unfold(0, k, 1)) or a number of outputs (chunk, split, unbind). A trace that
then reads such a computed size, or counts such outputs, has seen the value of one call
only: it specializes the numbers behind it (a guard on each), so a call with another
value recompiles instead of returning the old size. Numbers that only enter arithmetic
(x * k, p.add_(g, alpha=-lr)) stay dynamic even when the trace reads sizes.
"""
import pytest

import dynjit
import dynjit.nn.functional as F
from dynjit.testing import CompileCounterWithBackend as CompileCounter, same

BACKENDS = ["eager", "aot_eager", "llvm"]


def _run(fn, backend, make, values, dynamic=None):
    """Compiled and plain results for each value; returns the compile count."""
    counter = CompileCounter(backend)
    compiled = dynjit.compile(fn, backend=counter, dynamic=dynamic)
    for v in values:
        expected, got = fn(*make(v)), compiled(*make(v))
        assert _same(expected, got), (fn.__name__, backend, v, expected, got)
    return counter.frame_count


def _same(a, b):
    if isinstance(a, dynjit.Tensor):
        return isinstance(b, dynjit.Tensor) and same(a, b)
    if isinstance(a, (list, tuple)) and type(a) is not dynjit.Size:
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _counts_from_size(x):
    return len(x.chunk(x.shape[0])), len(x.split(2)), len(x.unbind(0)), x.split(2)[-1], x.chunk(3)[-1]


def _counts_from_int(x, k):
    pieces = x.split(k)
    return len(x.chunk(k)), len(pieces), pieces[-1] * 2, dynjit.chunk(x, k)[-1]


def _size_from_int(x, k):
    y = x.repeat(k)
    z = dynjit.zeros(k)
    return ("big" if y.shape[0] > 7 else "small", y.shape, len(y), y.numel(), z.shape,
            x.new_zeros(k, 2).shape, [i for i in range(y.shape[0] // 2)])


def _view_and_unfold_by_int(x, k):
    v = x.view(k, -1)
    u = x.unfold(0, k, 1)
    p = F.pad(x, (k, 0))
    return v.shape, u.shape, p.shape, u.sum(), p, x.unsqueeze(k % 2).shape


CASES = [
    (_counts_from_size, lambda n: (dynjit.arange(float(2 * n)).reshape(n, 2),)),
    (_counts_from_int, lambda k: (dynjit.arange(12.0), k)),
    (_size_from_int, lambda k: (dynjit.ones(2), k)),
    (_view_and_unfold_by_int, lambda k: (dynjit.arange(float(3 * k)), k)),
]
VALUES = (2, 2, 3, 4, 5, 6, 3, 4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_equals_plain_for_every_value(fn, make, backend):
    _run(fn, backend, make, VALUES)


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_equals_plain_with_dynamic_true(fn, make):
    _run(fn, "eager", make, VALUES, dynamic=True)


def test_a_count_that_follows_the_size_recompiles_per_size_not_per_call():
    frames = _run(_counts_from_size, "eager", CASES[0][1], (2, 3, 3, 4, 4, 4, 5))
    assert frames == 4          # one per distinct size; repeated sizes hit the cache


@pytest.mark.parametrize("backend", BACKENDS)
def test_numbers_only_in_arithmetic_stay_dynamic_when_sizes_are_read(backend):
    def step(x, k, lr):
        y = (x * k).add(x, alpha=-lr)
        return y.shape[0] + 1, y.sum()
    counter = CompileCounter(backend)
    compiled = dynjit.compile(step, backend=counter)
    x = dynjit.arange(6.0)
    for i in range(20):
        assert _same(step(x, i + 2, 0.1 * i), compiled(x, i + 2, 0.1 * i))
    assert counter.frame_count <= 2


def test_an_lr_read_by_an_inplace_update_stays_dynamic_beside_a_size_read():
    def update(p, g, lr):
        p.add_(g, alpha=-lr)
        return p.view(p.shape[0], -1).sum(1)
    counter = CompileCounter("eager")
    compiled = dynjit.compile(update, backend=counter)
    p_plain, p_compiled, g = dynjit.ones(4, 3), dynjit.ones(4, 3), dynjit.full((4, 3), 0.5)
    for i in range(10):
        assert same(update(p_plain, g, 0.01 * (i + 1)), compiled(p_compiled, g, 0.01 * (i + 1)))
    assert same(p_plain, p_compiled)
    assert counter.frame_count <= 2


def _pieces_of_a_concatenation(x, y):
    joined = dynjit.cat([x, y])
    return len(joined.chunk(4)), joined.chunk(4)[-1] * 2, len(joined.unbind(0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_count_along_a_computed_size_follows_it(backend):
    _run(_pieces_of_a_concatenation, backend, lambda n: (dynjit.arange(float(n)), dynjit.ones(n + 3)),
         (2, 2, 3, 4, 5, 6, 3))


class Gated(dynjit.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = dynjit.nn.Linear(4, 8)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)      # the layer's width: the same every call
        return value * gate.sigmoid()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_count_along_a_layers_width_does_not_recompile_per_batch_size(backend):
    dynjit.manual_seed(0)
    model = Gated()
    counter = CompileCounter(backend)
    compiled = dynjit.compile(model, backend=counter)
    for n in range(2, 12):
        x = dynjit.randn(n, 4)
        assert same(compiled(x), model(x))
    assert counter.frame_count <= 2


def test_a_number_in_a_dict_the_trace_walks_but_never_reads_is_not_guarded():
    model = dynjit.nn.Linear(2, 1)
    opt = dynjit.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()               # walks param_groups; never reads 'lr'
        loss = model(x).sum()
        loss.backward()
        return loss
    counter = CompileCounter("eager")
    compiled = dynjit.compile(step, backend=counter)
    for _ in range(2):                   # the first step, then the one where every .grad exists
        compiled(dynjit.ones(4, 2))
        opt.step()
    counter.clear()
    for i in range(6):
        opt.param_groups[0]["lr"] = 0.1 / (i + 1)      # a scheduler's change
        compiled(dynjit.ones(4, 2))
        opt.step()
    assert counter.frame_count == 0


def test_a_number_read_from_a_dict_and_returned_after_the_dict_changes_keeps_its_old_value():
    def swap(group):
        old = group["lr"]
        group["lr"] = 0.5
        return old, dynjit.ones(1) * 2
    for backend in BACKENDS:
        plain_group, compiled_group = {"lr": 0.1}, {"lr": 0.1}
        compiled = dynjit.compile(swap, backend=backend)
        assert compiled(compiled_group)[0] == swap(plain_group)[0] == 0.1
        assert compiled_group == plain_group
        compiled_group["lr"] = 0.25
        assert compiled(compiled_group)[0] == 0.25
