"""Code that reads the call stack sees what plain Python shows: a frame that reads the stack
itself (sys._getframe, inspect.currentframe, inspect.stack) runs plain; a function inlined
into a compiled frame that reads it (a caller's name and line, logging's %(funcName)s and
%(lineno)d, warnings.warn with stacklevel=2) is called plain from the break code, which
carries the caller's name and line numbers; and the transformed function's own frame reads
as the user's function. Each test compares plain with compiled on every backend."""
import inspect
import io
import logging
import sys
import warnings

import pytest

import dynjit
from dynjit.testing import same

BACKENDS = ["eager", "aot_eager", "llvm"]


def caller():
    frame = sys._getframe(1)
    return frame.f_code.co_name, frame.f_lineno


def reads_its_caller(x):
    y = x * 2
    who = caller()
    return y + 1, who


def reads_itself(x):
    y = x * 2
    here = inspect.currentframe()
    # (the frame above it is the compiled function's wrapper: that one frame is dynjit's)
    return y + 1, here.f_code.co_name, here.f_lineno, inspect.stack()[0].function, \
        inspect.stack()[0].lineno


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [reads_its_caller, reads_itself])
def test_frames_read_as_plain(fn, backend):
    x = dynjit.ones(2)
    want = fn(x)
    compiled = dynjit.compile(fn, backend=backend)
    for _ in range(2):
        got = compiled(x)
        assert got[1:] == want[1:]
        assert same(got[0], want[0])


log = logging.getLogger("dynjit.tests.frame_introspection")


def warn_for_the_caller(t):
    warnings.warn("look at your call", UserWarning, stacklevel=2)
    return t * 3


def logs_and_warns(x):
    y = x * 2
    log.warning("step %d", 3)
    z = warn_for_the_caller(y)
    return z + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_logging_and_warnings_name_the_users_line(backend):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(funcName)s:%(lineno)d:%(message)s"))
    log.addHandler(handler)
    try:
        seen = []
        for fn in (logs_and_warns, dynjit.compile(logs_and_warns, backend=backend)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn(dynjit.ones(2))
                fn(dynjit.ones(2))
            seen.append(([(w.filename, w.lineno) for w in caught], stream.getvalue().splitlines()))
            stream.seek(0)
            stream.truncate()
    finally:
        log.removeHandler(handler)
    (want_warn, want_log), (got_warn, got_log) = seen
    assert want_warn == [(__file__, inspect.getsourcelines(logs_and_warns)[1] + 3)] * 2
    assert got_warn == want_warn
    assert got_log == want_log and want_log[0].startswith("logs_and_warns:")


def test_the_transformed_frame_carries_the_users_name():
    seen = []

    def outer_name():
        seen.append(sys._getframe(2).f_code.co_name)   # the caller's caller

    def middle(t):
        outer_name()
        return t

    def top(x):
        y = x + 1
        return middle(y) * 2

    top(dynjit.ones(1))
    dynjit.compile(top)(dynjit.ones(1))
    assert seen == ["top", "top"]
