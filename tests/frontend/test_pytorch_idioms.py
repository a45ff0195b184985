"""Idioms every PyTorch model and training script has, compiled without a graph break:
iterating and indexing container modules, `with` over Python context managers
(nullcontext), attributes stored on a module in forward, clip_grad_norm_ over
model.parameters(), and Tensor(data). Each runs plain and compiled on every backend
and must give the same results and side effects; the frame count says the program
stayed one graph."""
import contextlib

import pytest

import dynjit
from dynjit import nn
from dynjit.testing import CompileCounter, same
from dynjit.utils import counters

BACKENDS = ["eager", "aot_eager", "llvm"]


def _breaks():
    return sum(counters["graph_break"].values())


def _one_graph(fn, *args):
    """Compile `fn` with a counting backend; return (result, frames, graph breaks)."""
    dynjit.reset()
    counters.clear()
    cnt = CompileCounter()
    out = dynjit.compile(fn, backend=cnt)(*args)
    return out, cnt.frame_count, _breaks()


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return dynjit.tanh(self.lin(x))


class Containers(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        dynjit.manual_seed(0)
        self.blocks = nn.ModuleList([Block(n) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(n, n), "b": nn.Linear(n, n)})
        self.seq = nn.Sequential(nn.Linear(n, n), nn.ReLU(), nn.Linear(n, n))
        self.scales = nn.ParameterList([nn.Parameter(dynjit.full((n,), 0.5 + i)) for i in range(2)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        for i, block in enumerate(self.blocks):
            x = x + i * block(x)
        for block, (name, head) in zip(self.blocks, self.heads.items()):
            x = block(x) + head(x)
        for name in self.heads:
            x = self.heads[name](x)
        for head in self.heads.values():
            x = head(x)
        for layer in self.seq:
            x = layer(x)
        for block in self.blocks[:-1]:          # a slice
            x = block(x)
        x = self.seq[:2](x) + self.seq[-1](x)   # a Sequential slice is callable
        x = x * len(self.blocks) + self.blocks[-1](x)
        if "a" in self.heads and "z" not in self.heads:
            x = x + 1
        for scale in self.scales:
            x = x * scale
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_container_modules_iterate_index_and_slice_inside_one_graph(backend):
    model = Containers()
    x = dynjit.randn(2, 4)
    expected = model(x)
    out, frames, breaks = _one_graph(model, x)
    assert same(out, expected)
    assert (frames, breaks) == (1, 0)
    dynjit.reset()
    compiled = dynjit.compile(model, backend=backend)
    assert same(compiled(x), expected)
    expected.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    compiled(x).sum().backward()
    assert all(same(p.grad, g) for p, g in zip(model.parameters(), grads))


def test_a_container_changed_after_compiling_recompiles():
    model = Containers()
    compiled = dynjit.compile(model, backend="eager")
    x = dynjit.randn(2, 4)
    assert same(compiled(x), model(x))
    model.blocks.append(Block(4))            # the trace unrolled three blocks
    assert same(compiled(x), model(x))
    del model.heads["b"]
    assert same(compiled(x), model(x))


class CountingList(nn.Module):
    """A user container with its own __iter__ / __len__ / __getitem__ / __contains__."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)

    def __iter__(self):
        return iter([self.b, self.a])

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return self.a if i == 0 else self.b

    def __contains__(self, item):
        return item == "a"


def test_a_users_own_container_protocol_is_traced():
    m = CountingList()

    def f(x):
        for layer in m:
            x = layer(x)
        x = m[0](x) * len(m) + m[1](x)
        return x + ("a" in m) - int("q" in m)     # tensor - bool is an error in PyTorch

    x = dynjit.randn(2, 3)
    out, frames, breaks = _one_graph(f, x)
    assert same(out, f(x))
    assert (frames, breaks) == (1, 0)


def test_iterating_a_module_that_is_not_iterable_raises_pythons_error():
    lin = nn.Linear(2, 2)

    def f(x):
        for layer in lin:
            x = layer(x)
        return x

    with pytest.raises(TypeError, match="not iterable"):
        f(dynjit.ones(2))
    with pytest.raises(TypeError, match="not iterable"):
        dynjit.compile(f, backend="eager")(dynjit.ones(2))


# -- with blocks over context managers written in Python ----------------------------------------
class Recorder:
    """A context manager written in Python, with side effects in enter and exit."""

    def __init__(self, log, tag):
        self.log = log
        self.tag = tag

    def __enter__(self):
        self.log.append(("enter", self.tag))
        return self.tag * 2

    def __exit__(self, kind, value, tb):
        self.log.append(("exit", self.tag, kind is not None))
        return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_nullcontext_and_python_context_managers_are_traced(backend):
    def f(x, log, amp):
        ctx = contextlib.nullcontext() if not amp else dynjit.no_grad()
        with ctx:
            x = x * 2
        with contextlib.nullcontext(3) as three:
            x = x + three
        with Recorder(log, 5) as ten:
            x = x * ten
        return x

    x = dynjit.randn(3)
    log_plain, log_compiled = [], []
    expected = f(x, log_plain, False)
    out, frames, breaks = _one_graph(f, x, log_compiled, False)
    assert same(out, expected) and log_compiled == log_plain
    assert (frames, breaks) == (1, 0)
    dynjit.reset()
    log_compiled.clear()
    assert same(dynjit.compile(f, backend=backend)(x, log_compiled, False), expected)
    assert log_compiled == log_plain


def test_an_exception_inside_a_traced_with_block_reaches_exit_as_in_python():
    def f(x, log, fail):
        with Recorder(log, 1):
            x = x + 1
            if fail:
                raise ValueError("inside")
            x = x * 3
        return x

    for fail in (False, True):
        log_plain, log_compiled = [], []
        compiled = dynjit.compile(f, backend="eager")
        try:
            expected = f(dynjit.ones(2), log_plain, fail)
        except ValueError as e:
            expected = e
        try:
            got = compiled(dynjit.ones(2), log_compiled, fail)
        except ValueError as e:
            got = e
        assert log_compiled == log_plain
        if fail:
            assert type(got) is ValueError and str(got) == "inside"
        else:
            assert same(got, expected)


def test_a_graph_break_inside_a_python_with_block_keeps_enter_and_exit_once():
    def f(x, log):
        with Recorder(log, 2) as four:
            x = x * four
            log.append(("printed", float(x.sum())))     # .item()-like read: a graph break
            x = x + 1
        return x

    log_plain, log_compiled = [], []
    expected = f(dynjit.ones(2), log_plain)
    got = dynjit.compile(f, backend="eager")(dynjit.ones(2), log_compiled)
    assert same(got, expected)
    assert log_compiled == log_plain


# -- attributes stored on a module in forward ------------------------------------------------------
class Stores(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("last_mean", dynjit.zeros(3))
        self.calls = 0

    def forward(self, x):
        y = self.lin(x)
        self.last_output = y.detach()              # a plain attribute
        self.last_mean = y.mean(0).detach()        # a buffer replaced
        self.calls = self.calls + 1
        return y * self.last_mean.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_attributes_written_in_forward_are_stored_as_plain_python_stores_them(backend):
    plain, compiled_model = Stores(), Stores()
    compiled_model.load_state_dict(plain.state_dict())
    compiled = dynjit.compile(compiled_model, backend=backend)
    for _ in range(3):
        x = dynjit.randn(2, 3)
        assert same(compiled(x), plain(x))
        assert same(compiled_model.last_output, plain.last_output)
        assert same(compiled_model.last_mean, plain.last_mean)
        assert "last_mean" in compiled_model._buffers and "last_mean" not in compiled_model.__dict__
        assert compiled_model.calls == plain.calls
    _, frames, breaks = _one_graph(Stores(), dynjit.randn(2, 3))
    assert (frames, breaks) == (1, 0)


def test_registering_a_module_or_parameter_in_forward_is_still_correct():
    class Grows(nn.Module):
        def forward(self, x):
            self.extra = nn.Linear(2, 2)
            self.p = nn.Parameter(dynjit.ones(2))
            return x * 2

    plain, compiled_model = Grows(), Grows()
    x = dynjit.ones(2)
    assert same(dynjit.compile(compiled_model, backend="eager")(x), plain(x))
    assert isinstance(compiled_model._modules["extra"], nn.Linear)
    assert "p" in compiled_model._parameters


# -- training-step idioms --------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_grad_norm_over_model_parameters_in_a_compiled_step(backend):
    def step(model, opt, x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        nn.utils.clip_grad_value_(model.parameters(), 0.05)
        opt.step()
        return loss, norm

    dynjit.manual_seed(0)
    plain = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    other = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    other.load_state_dict(plain.state_dict())
    opt_plain = dynjit.optim.SGD(plain.parameters(), lr=0.1)
    opt_other = dynjit.optim.SGD(other.parameters(), lr=0.1)
    compiled = dynjit.compile(step, backend=backend)
    counters.clear()
    for _ in range(3):
        x = dynjit.randn(5, 4)
        (l1, n1), (l2, n2) = step(plain, opt_plain, x), compiled(other, opt_other, x)
        assert same(l1, l2) and same(n1, n2)
    for p, q in zip(plain.parameters(), other.parameters()):
        assert same(p, q)
    reasons = [r for r in counters["graph_break"] if "iterator" in r or "passing" in r]
    assert reasons == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_constructor_with_data_is_a_constant_in_the_graph(backend):
    def f(x):
        return dynjit.Tensor([1.0, 2.0, 3.0]) * x

    x = dynjit.randn(3)
    out, frames, breaks = _one_graph(f, x)
    assert same(out, f(x)) and (frames, breaks) == (1, 0)
    dynjit.reset()
    assert same(dynjit.compile(f, backend=backend)(x), f(x))


def test_saved_tensor_hooks_see_the_compiled_program_not_its_trace():
    from dynjit.autograd.graph import saved_tensors_hooks
    log = []

    def pack(t):
        log.append("pack")
        return t

    def unpack(t):
        log.append("unpack")
        return t

    def f(x):
        with saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        return y

    x = dynjit.randn(3, requires_grad=True)
    f(x).backward()
    expected, grad = list(log), x.grad.clone()
    log.clear()
    x.grad = None
    dynjit.compile(f, backend="eager")(x).backward()
    assert log == expected and same(x.grad, grad)


def test_methods_of_strings_and_numbers_fold_at_trace_time():
    def f(x, name):
        if name.startswith("RNN") and name.split("_")[1].upper() == "A" and "q".join(["a", "b"]) == "aqb":
            return x * len(name.replace("_", "")) + float("1.5") + (3).bit_length()
        return x - 1

    for name in ["RNN_a", "LSTM_b"]:
        x = dynjit.randn(2)
        out, frames, breaks = _one_graph(f, x, name)
        assert same(out, f(x, name)) and (frames, breaks) == (1, 0)


PROBE = None


def test_a_numpy_array_global_is_read_when_the_function_runs():
    import numpy as np
    global PROBE
    PROBE = np.ones((3, 2))

    def f(x):
        return (x * dynjit.tensor(PROBE)).sum()

    compiled = dynjit.compile(f, backend="eager")
    x = dynjit.ones(3, 2)
    assert same(compiled(x), f(x))
    PROBE[0, 0] = 5.0                 # mutated in place: the next call must see it
    assert same(compiled(x), f(x))


def test_explain_takes_a_module_as_its_message_says():
    class Breaks(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            y = self.lin(x)
            print("logged")                     # a graph break
            return y.relu()

    model = Breaks()
    x = dynjit.randn(2, 3)
    out = dynjit.explain(model)(x)
    assert same(out.result, model(x))
    assert len(out.graphs) == 2 and [b.reason for b in out.break_reasons] == ["builtin: print"]
    assert dynjit.explain(dynjit.compile(model))(x).break_reasons == out.break_reasons
