"""Adversarial programs, round two: control flow that Python defines precisely
and a tracer easily gets wrong: return/break/continue inside finally, finally
around graph breaks, except* with nested groups and re-raise, exceptions
raised and swallowed in loops, while/else and for/else with breaks in try,
exceptions carrying tensors, __context__ chains built across frames."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["return_in_finally_swallows_exception"] = '''
import dynjit
def inner(x, bad):
    try:
        if bad:
            raise ValueError("boom")
        return x + 1
    finally:
        return x * 10
def main(x, bad):
    return inner(x, bad), inner(x, not bad)
def make_args(call):
    return dynjit.ones(2) * call, bool(call % 2)
'''

PROGRAMS["break_in_finally_swallows_exception"] = '''
import dynjit
def main(x, n):
    log = []
    for i in range(n):
        try:
            if i == 1:
                raise KeyError(i)
            x = x + i
        finally:
            log.append(i)
            if i == 1:
                break
    return x, log
def make_args(call):
    return dynjit.zeros(2), 3 + call
'''

PROGRAMS["continue_in_finally"] = '''
import dynjit
def main(x, n):
    log = []
    for i in range(n):
        try:
            if i % 2:
                raise RuntimeError(i)
            x = x * 2
        finally:
            log.append(i)
            continue
    return x, log
def make_args(call):
    return dynjit.ones(2), 3 + call
'''

PROGRAMS["finally_runs_on_return_with_graph_break"] = '''
import dynjit
LOG = []
def main(x, early):
    try:
        y = x * 2
        if early:
            return y
        dynjit.graph_break()
        y = y + 1
        return y
    finally:
        LOG.append(("fin", early))
        x.add_(1)
def make_args(call):
    return dynjit.ones(2), call == 1
'''

PROGRAMS["nested_finally_order_with_exceptions"] = '''
import dynjit
def main(x, mode):
    log = []
    try:
        try:
            try:
                log.append("a")
                if mode == 0:
                    raise ValueError("v")
                x = x + 1
            finally:
                log.append("f1")
                if mode == 1:
                    raise KeyError("k")
        except ValueError as e:
            log.append(("caught", str(e)))
            raise TypeError("t") from e
        finally:
            log.append("f2")
    except (TypeError, KeyError) as e:
        log.append((type(e).__name__, type(e.__cause__).__name__, type(e.__context__).__name__))
    return x, log
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["except_star_split_and_reraise"] = '''
import dynjit
def main(x, n):
    log = []
    try:
        try:
            raise ExceptionGroup("g", [ValueError(i) for i in range(n)] + [KeyError("k"), TypeError("t")])
        except* ValueError as eg:
            log.append(sorted(e.args[0] for e in eg.exceptions))
            x = x + len(eg.exceptions)
        except* KeyError:
            log.append("k")
    except* TypeError as eg:
        log.append(("outer", [str(e) for e in eg.exceptions]))
    return x, log
def make_args(call):
    return dynjit.zeros(2), 1 + call
'''

PROGRAMS["except_star_nested_groups_and_raise_new"] = '''
import dynjit
def main(x, k):
    try:
        try:
            raise ExceptionGroup("outer", [ValueError(1), ExceptionGroup("inner", [ValueError(2), OSError(k)])])
        except* ValueError as eg:
            x = x * len(eg.exceptions)
            raise RuntimeError("replaced")
    except ExceptionGroup as eg:
        names = sorted(type(e).__name__ for e in eg.exceptions)
        return x, names, str(eg)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["exception_group_subgroup_and_derive"] = '''
import dynjit
def main(x, n):
    eg = ExceptionGroup("m", [ValueError(i) for i in range(n)] + [TypeError("t")])
    vs = eg.subgroup(lambda e: isinstance(e, ValueError) and e.args[0] % 2 == 0)
    match_, rest = eg.split(TypeError)
    return (x * len(vs.exceptions), str(vs), len(match_.exceptions), len(rest.exceptions),
            [e.args for e in rest.exceptions])
def make_args(call):
    return dynjit.ones(2), 2 + call
'''

PROGRAMS["while_else_with_break_in_try"] = '''
import dynjit
def main(x, limit):
    i = 0
    while i < 5:
        try:
            if i == limit:
                break
            x = x + 1
        except Exception:
            pass
        finally:
            i += 1
    else:
        x = x * 100
    return x, i
def make_args(call):
    return dynjit.zeros(1), [2, 2, 9, 0][call]
'''

PROGRAMS["for_else_exception_inside_iterable"] = '''
import dynjit
def gen(n):
    for i in range(n):
        if i == 2:
            raise ValueError("at 2")
        yield i
def main(x, n):
    try:
        for v in gen(n):
            x = x + v
        else:
            x = x * -1
    except ValueError as e:
        return x, str(e)
    return x, None
def make_args(call):
    return dynjit.zeros(2), [2, 2, 5][call]
'''

PROGRAMS["exception_carrying_tensor_payload"] = '''
import dynjit
class Found(Exception):
    def __init__(self, t, where):
        super().__init__(where)
        self.t = t
def search(x, thr):
    for i in range(x.shape[0]):
        if x[i].item() > thr:
            raise Found(x[i] * 2, i)
    return None
def main(x, thr):
    try:
        search(x, thr)
    except Found as f:
        return f.t, f.args, f.t.requires_grad
    return "none"
def make_args(call):
    return dynjit.tensor([0.5, 2.0, 3.0], requires_grad=True), [1.0, 1.0, 2.5, 9.0][call]
'''

PROGRAMS["exception_context_chain_implicit"] = '''
import dynjit
def main(x, k):
    try:
        try:
            {}[k]
        except KeyError:
            try:
                1 / 0
            except ZeroDivisionError:
                x[10]
    except IndexError as e:
        ctx = e.__context__
        return (type(e).__name__, type(ctx).__name__, type(ctx.__context__).__name__,
                e.__suppress_context__, x + 1)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["raise_in_except_with_graph_break_before"] = '''
import dynjit
def main(x, n):
    try:
        y = x * n
        dynjit.graph_break()
        if n > 1:
            raise ValueError(n)
        return y
    except ValueError as e:
        y = y + 100
        raise RuntimeError("wrapped " + str(e)) from None
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["exception_variable_unbound_after_handler"] = '''
import dynjit
def main(x, bad):
    e = "before"
    try:
        if bad:
            raise ValueError("v")
    except ValueError as e:
        x = x + 1
    try:
        return x, e
    except UnboundLocalError as u:
        return x, "unbound"
def make_args(call):
    return dynjit.ones(2), call % 2 == 1
'''

PROGRAMS["try_except_else_finally_all_paths"] = '''
import dynjit
def step(x, mode):
    log = []
    try:
        log.append("try")
        if mode == "raise":
            raise ValueError
        if mode == "return":
            return x, log
    except ValueError:
        log.append("except")
        x = x - 1
    else:
        log.append("else")
        x = x + 1
    finally:
        log.append("finally")
    log.append("after")
    return x, log
def main(x, modes):
    return [step(x, m) for m in modes]
def make_args(call):
    return dynjit.ones(2), ["raise", "return", "none"][call:] + ["raise"]
'''

PROGRAMS["generator_return_in_finally_overrides"] = '''
import dynjit
def g(x):
    try:
        yield x
        yield x * 2
    finally:
        return "done"
def main(x, take):
    it = g(x)
    out = [next(it) for _ in range(take)]
    try:
        next(it)
    except StopIteration as s:
        out.append(("stop", s.value))
    return out
def make_args(call):
    return dynjit.ones(2), [1, 1, 2][call]
'''

PROGRAMS["assert_with_tensor_message_and_condition"] = '''
import dynjit
def main(x, lim):
    try:
        assert x.max() < lim, f"max {x.max().item():.2f} over {lim}"
        return x * 2
    except AssertionError as e:
        return str(e)
def make_args(call):
    return dynjit.tensor([1.0, 2.0]) * (call + 1), 3.5
'''

PROGRAMS["loop_retry_on_exception_counts"] = '''
import dynjit
class Flaky:
    def __init__(self, fails):
        self.fails = fails
    def __call__(self, t):
        if self.fails:
            self.fails -= 1
            raise ConnectionError("again")
        return t * 3
def main(x, f):
    attempts = 0
    while True:
        attempts += 1
        try:
            y = f(x)
            break
        except ConnectionError:
            if attempts > 5:
                raise
            continue
    return y, attempts, f.fails
def make_args(call):
    return dynjit.ones(2), Flaky([0, 0, 2, 9][call])
'''

PROGRAMS["stopiteration_escaping_user_next"] = '''
import dynjit
def main(x, items):
    it = iter(items)
    first = next(it)
    second = next(it, None)
    try:
        third = next(it)
    except StopIteration:
        third = "stop"
    return x * first, second, third
def make_args(call):
    return dynjit.ones(2), [[1, 2, 3], [1, 2, 3], [4], [5, 6]][call]
'''

PROGRAMS["exception_in_with_exit_and_finally_order"] = '''
import dynjit
LOG = []
class CM:
    def __init__(self, name, swallow):
        self.name = name
        self.swallow = swallow
    def __enter__(self):
        LOG.append(("enter", self.name))
        return self
    def __exit__(self, et, ev, tb):
        LOG.append(("exit", self.name, et.__name__ if et else None))
        return self.swallow
def main(x, swallow):
    try:
        with CM("a", False), CM("b", swallow):
            x = x + 1
            raise ValueError("in body")
        LOG.append("after with")
    except ValueError:
        LOG.append("caught")
    finally:
        LOG.append("finally")
    return x
def make_args(call):
    return dynjit.ones(2), call % 2 == 1
'''

PROGRAMS["base_exception_subclass_not_caught_by_exception"] = '''
import dynjit
class Stop(BaseException):
    pass
def work(x, n):
    try:
        if n > 1:
            raise Stop(n)
        return x
    except Exception:
        return "caught by Exception"
def main(x, n):
    try:
        return work(x, n)
    except Stop as s:
        return x * s.args[0]
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["exception_notes_and_traceback_free_attrs"] = '''
import dynjit
def main(x, n):
    try:
        try:
            raise ValueError("base")
        except ValueError as e:
            e.add_note(f"n={n}")
            e.add_note("second")
            raise
    except ValueError as e:
        return x * n, e.__notes__, e.args
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["return_value_saved_before_finally_mutates"] = '''
import dynjit
def main(x, lst):
    try:
        return lst, len(lst), x
    finally:
        lst.append("finally")
        x.mul_(2)
def make_args(call):
    return dynjit.ones(2), [call]
'''

PROGRAMS["deep_nested_loops_break_from_try_inside_with"] = '''
import contextlib
import dynjit
LOG = []
@contextlib.contextmanager
def scope(n):
    LOG.append(("in", n))
    try:
        yield n
    finally:
        LOG.append(("out", n))
def main(x, stop):
    for i in range(3):
        with scope(i):
            for j in range(3):
                try:
                    if (i, j) == stop:
                        break
                    x = x + 1
                finally:
                    LOG.append((i, j))
            else:
                continue
        break
    return x
def make_args(call):
    return dynjit.zeros(1), [(1, 1), (1, 1), (0, 0), (9, 9)][call]
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
