"""Adversarial programs about when things happen at run time: a generator's
finally when it is dropped unfinished, __del__ timing, weakref callbacks,
ExitStack and redirect_stdout inside compiled code, sys.stdout.write,
logging, locks as context managers, os.environ reads."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["generator_dropped_unfinished_runs_finally"] = '''
import dynjit
LOG = []
def gen(t):
    try:
        yield t
        yield t * 2
    finally:
        LOG.append("gen closed")
def main(x):
    g = gen(x)
    a = next(g)
    LOG.append("before return")
    return a + 1, list(LOG)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["generator_dropped_then_log_read"] = '''
import dynjit
LOG = []
def gen(t):
    try:
        yield t
    finally:
        LOG.append("closed")
def use(t):
    g = gen(t)
    return next(g)
def main(x):
    a = use(x)
    n = len(LOG)
    return a, n
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["del_timing"] = '''
import dynjit
LOG = []
class R:
    def __init__(self, name):
        self.name = name
    def __del__(self):
        LOG.append("del " + self.name)
def main(x):
    r = R("a")
    y = x * 2
    del r
    LOG.append("after del")
    tmp = R("b")
    tmp = None
    return y, list(LOG)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["weakref_callback"] = '''
import weakref
import dynjit
LOG = []
class Obj:
    pass
def main(x):
    o = Obj()
    w = weakref.ref(o, lambda ref: LOG.append("dead"))
    alive = w() is not None
    del o
    return x + 1, alive, w() is None, list(LOG)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["exitstack_and_redirect_stdout"] = '''
import contextlib
import io
import dynjit
LOG = []
@contextlib.contextmanager
def step(name):
    LOG.append("enter " + name)
    yield
    LOG.append("exit " + name)
def main(x):
    buf = io.StringIO()
    with contextlib.ExitStack() as stack:
        for n in ("a", "b"):
            stack.enter_context(step(n))
        stack.callback(LOG.append, "callback")
        with contextlib.redirect_stdout(buf):
            print("captured", x.shape)
        y = x * 2
    print("visible")
    with contextlib.nullcontext(5) as five:
        y = y + five
    return y, buf.getvalue(), list(LOG)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["sys_stdout_write_and_stderr"] = '''
import sys
import dynjit
def main(x):
    sys.stdout.write("w1 ")
    y = x + 1
    sys.stdout.write(f"{y.sum().item()}\\n")
    print("to stdout", file=sys.stdout)
    return y
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["logging_calls"] = '''
import logging
import io
import dynjit
STREAM = io.StringIO()
_LOGGER = logging.getLogger("adv_prog_logger")
_LOGGER.handlers[:] = [logging.StreamHandler(STREAM)]
_LOGGER.setLevel(logging.INFO)
_LOGGER.propagate = False
def main(x):
    _LOGGER.info("start %s", tuple(x.shape))
    y = x * 3
    _LOGGER.debug("hidden")
    _LOGGER.warning("sum=%.1f", y.sum().item())
    return y, STREAM.getvalue()
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["lock_as_context_manager"] = '''
import threading
import dynjit
LOCK = threading.Lock()
STATE = {"n": 0}
def main(x):
    with LOCK:
        STATE["n"] += 1
        y = x * STATE["n"]
    return y, LOCK.locked()
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["environ_and_time_reads"] = '''
import os
import dynjit
def main(x):
    k = int(os.environ.get("ADV_PROG_K", "3"))
    return x * k
def make_args(call):
    if call == 2:
        os.environ["ADV_PROG_K"] = "5"
    else:
        os.environ.pop("ADV_PROG_K", None)
    return (dynjit.ones(2),)
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
