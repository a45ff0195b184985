"""Exceptions leaving a compiled function: the same exception, and a traceback with the
user's frames (names, line numbers) as a plain run gives, without the frontend's machinery;
calls with arguments the function does not accept raise Python's own TypeError."""
import os
import traceback

import pytest

import dynjit
from dynjit import config

FRONTEND = os.path.dirname(dynjit.frontend.__file__)


def _helper(v):
    if v.sum().item() > 100:
        raise KeyError("big")
    return v


def after_break_in_callee(x):
    y = x * 2
    print("a", end="")
    y = _helper(y * 100)
    return y


def in_loop_after_break(x):
    for i in range(3):
        x = x + 1
        if i == 2:
            dynjit.graph_break()
            raise RuntimeError("loop")
    return x


class _Model(dynjit.nn.Module):
    def forward(self, x):
        x = x + 1
        dynjit.graph_break()
        return self.inner(x)

    def inner(self, x):
        return x[dynjit.tensor([7])]


def in_submodule_method(x):
    return _Model()(x)


def in_try_finally(x):
    z = [x]
    try:
        print("b", end="")
        return z[3]
    finally:
        z.append(1)


def at_first_graph(x):
    y = x + 1
    raise ValueError(f"bad {y.shape}")


def raised(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.value


def user_frames(exc):
    return [(f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)
            if f.filename == __file__]


@pytest.mark.parametrize("fn", [after_break_in_callee, in_loop_after_break, in_submodule_method,
                                in_try_finally, at_first_graph])
def test_traceback_reads_as_plain(fn, capsys):
    plain = raised(fn, dynjit.ones(2))
    compiled_fn = dynjit.compile(fn)
    for _ in range(2):                  # the compiling call and a cached call
        compiled = raised(compiled_fn, dynjit.ones(2))
        assert type(compiled) is type(plain) and str(compiled) == str(plain)
        assert user_frames(compiled) == user_frames(plain)
        files = [f.filename for f in traceback.extract_tb(compiled.__traceback__)]
        assert not any(name.startswith("<dynjit-") for name in files), files
        machinery = [name for name in files if name.startswith(FRONTEND)]
        assert len(machinery) == 1, files           # the compiled wrapper that re-raised it


def user_frames_names(fn):
    """How often `fn`'s name appears in the traceback of its plain run."""
    return [f.name for f in traceback.extract_tb(raised(fn, dynjit.ones(2)).__traceback__)].count(fn.__name__)


def test_verbose_tracebacks_keep_every_frame(monkeypatch):
    monkeypatch.setattr(config, "verbose_tracebacks", True)
    exc = raised(dynjit.compile(after_break_in_callee), dynjit.ones(2))
    entries = traceback.extract_tb(exc.__traceback__)
    assert len([f for f in entries if f.filename.startswith(FRONTEND)]) > 1
    # the transformed function's frame too: it carries the user's name, beside its break code's
    names = [f.name for f in entries]
    assert names.count("after_break_in_callee") > user_frames_names(after_break_in_callee)


def two_args(x, n):
    return x + n


@pytest.mark.parametrize("args, kwargs", [((dynjit.ones(2),), {}), ((1, 2, 3), {}),
                                          ((1,), {"m": 2}), ((1,), {"x": 2}), ((), {})])
def test_wrong_arguments_raise_pythons_own_error(args, kwargs):
    plain = raised(two_args, *args, **kwargs)
    compiled_fn = dynjit.compile(two_args)
    first = raised(compiled_fn, *args, **kwargs)            # no cache entry yet
    assert compiled_fn(dynjit.ones(2), 1).tolist() == [2.0, 2.0]
    cached = raised(compiled_fn, *args, **kwargs)           # checked against a cache entry's guard
    for exc in (first, cached):
        assert type(exc) is TypeError and str(exc) == str(plain)
        assert exc.__context__ is None


def test_wrong_arguments_to_compiled_method():
    class Scale(dynjit.nn.Module):
        def forward(self, x, k):
            return x * k
    m = Scale()
    plain = raised(m, dynjit.ones(2))
    compiled = dynjit.compile(m)
    compiled(dynjit.ones(2), 2)
    exc = raised(compiled, dynjit.ones(2))
    assert type(exc) is TypeError and str(exc) == str(plain)
