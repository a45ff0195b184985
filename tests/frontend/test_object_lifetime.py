"""Objects die when plain Python says: the trace keeps none of the user's objects alive
after the compile (its structures are released, not left for the garbage collector), and a
frame whose objects' death is observable (`__del__`, weak references, a generator with
cleanup) runs plain. Each test runs the same code plain and compiled, with the garbage
collector off so that only reference counts decide when objects die."""
import gc
import weakref

import pytest

import dynjit
from dynjit.testing import same

BACKENDS = ["eager", "aot_eager", "llvm"]


@pytest.fixture(autouse=True)
def no_gc():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def both(program, backend):
    """program() -> (fn, log): the log plain and compiled, after one call each."""
    fn, log = program()
    fn(dynjit.ones(2))
    plain = list(log)
    fn, log = program()
    dynjit.compile(fn, backend=backend)(dynjit.ones(2))
    return plain, list(log)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_generator_dropped_unfinished_runs_its_finally_when_the_frame_ends(backend):
    def program():
        log = []

        def gen(t):
            try:
                yield t
                yield t * 2
            finally:
                log.append("closed")

        def f(x):
            g = gen(x)
            a = next(g)
            log.append("returning")
            return a + 1
        return f, log

    plain, compiled = both(program, backend)
    assert plain == ["returning", "closed"]
    assert compiled == plain


@pytest.mark.parametrize("backend", BACKENDS)
def test_del_runs_at_the_users_del_and_at_rebinding(backend):
    def program():
        log = []

        class Resource:
            def __init__(self, name):
                self.name = name

            def __del__(self):
                log.append("del " + self.name)

        def f(x):
            r = Resource("a")
            y = x * 2
            del r
            log.append("after del")
            tmp = Resource("b")
            tmp = None
            log.append("after rebind")
            return y + 1, tmp
        return f, log

    plain, compiled = both(program, backend)
    assert plain == ["del a", "after del", "del b", "after rebind"]
    assert compiled == plain


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_weak_reference_dies_and_calls_back_at_the_users_del(backend):
    def program():
        log = []

        class Obj:
            pass

        def f(x):
            o = Obj()
            w = weakref.ref(o, lambda ref: log.append("dead"))
            log.append(w() is not None)
            del o
            log.append(w() is None)
            return x + 1
        return f, log

    plain, compiled = both(program, backend)
    assert plain == [True, "dead", True]
    assert compiled == plain


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_compile_keeps_no_argument_alive(backend):
    class Box:
        def __init__(self, t):
            self.t = t

    def f(box, x):
        return box.t * x + 1

    compiled = dynjit.compile(f, backend=backend)
    box, x = Box(dynjit.ones(3)), dynjit.ones(3)
    compiled(box, x)
    dead = []
    weakref.finalize(box, dead.append, "box")
    weakref.finalize(x, dead.append, "x")
    del box, x
    assert sorted(dead) == ["box", "x"]      # without the garbage collector


def test_an_entry_dropped_because_its_object_died_says_so_in_the_recompile_reason():
    class M:
        def f(self, x):
            return x + 1

    m = M()

    def fn(x):
        return m.f(x)

    compiled = dynjit.compile(fn)
    x = dynjit.ones(2)
    assert same(compiled(x), fn(x))
    M.f = lambda self, x: x - 1          # the old M.f dies: the entry compiled for it goes
    assert same(compiled(x), fn(x))
    assert compiled.recompile_reasons[-1].startswith(f"{fn.__qualname__[:-3]}.M.f died")
