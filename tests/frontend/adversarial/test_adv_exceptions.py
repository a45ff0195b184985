"""Adversarial programs: exceptions from tensor ops and user code, re-raise,
raise-from, exception attributes, finally ordering, context managers that
suppress, assert, arithmetic errors."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["shape_mismatch_caught"] = '''
import dynjit
def main(a, b):
    try:
        c = a + b
    except RuntimeError as e:
        c = a.sum() + b.sum()
        msg = "caught"
    else:
        msg = "ok"
    return c, msg
def make_args(call):
    return dynjit.ones(2), dynjit.ones(2 + call)
'''

PROGRAMS["matmul_mismatch_message"] = '''
import dynjit
def main(a, b):
    y = a * 2
    try:
        return y @ b
    except RuntimeError as e:
        return type(e).__name__, str(e), y
def make_args(call):
    return dynjit.ones(2, 3), dynjit.ones(3 + (call == 2), 2)
'''

PROGRAMS["shape_mismatch_uncaught"] = '''
import dynjit
LOG = []
def main(a, b):
    LOG.append(1)
    c = a * 3
    LOG.append(2)
    return c + b
def make_args(call):
    return dynjit.ones(3), dynjit.ones(3 if call == 1 else 2)
'''

PROGRAMS["reraise_bare"] = '''
import dynjit
LOG = []
def main(x):
    try:
        try:
            if x.sum() > 1:
                raise KeyError("big")
            return x
        except KeyError:
            LOG.append("inner")
            raise
    except KeyError as e:
        LOG.append(repr(e))
        return x * 2
def make_args(call):
    return (dynjit.tensor([float(call), 1.0]),)
'''

PROGRAMS["raise_from"] = '''
import dynjit
class AppError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code
def main(x):
    try:
        x.view(5)
    except RuntimeError as e:
        raise AppError("bad view", code=x.numel()) from e
def make_args(call):
    return (dynjit.ones(2 + call),)
'''

PROGRAMS["raise_from_none"] = '''
import dynjit
def main(x, d):
    try:
        return x * d["k"]
    except KeyError:
        raise ValueError("missing k") from None
def make_args(call):
    return dynjit.ones(2), ({"k": 2.0} if call == 1 else {})
'''

PROGRAMS["exception_attrs_used"] = '''
import dynjit
class Err(Exception):
    def __init__(self, t, n):
        super().__init__(n)
        self.t = t
        self.n = n
def f(t, n):
    if n > 1:
        raise Err(t * n, n)
    return t
def main(x, n):
    try:
        return f(x, n)
    except Err as e:
        return e.t + e.n, e.args
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["finally_order_with_return"] = '''
import dynjit
LOG = []
def main(x):
    try:
        LOG.append("try")
        if x.sum() > 0:
            return x + 1
        LOG.append("after")
    finally:
        LOG.append("finally")
        x.add_(10)
    return x
def make_args(call):
    return (dynjit.tensor([1.0, -2.0 + 2 * call]),)
'''

PROGRAMS["finally_overrides_return"] = '''
import dynjit
def main(x):
    for i in range(3):
        try:
            if i == 1:
                return x * i
        finally:
            if i == 1:
                x = x + 100
                continue
    return x
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["exception_in_finally_replaces"] = '''
import dynjit
def main(x):
    try:
        try:
            raise ValueError("first")
        finally:
            y = x + 1
            raise KeyError("second")
    except KeyError as e:
        return y, str(e), type(e.__context__).__name__
def make_args(call):
    return (dynjit.ones(2) + call,)
'''

PROGRAMS["suppressing_context_manager"] = '''
import dynjit
class Suppress:
    def __init__(self, *types):
        self.types = types
        self.seen = []
    def __enter__(self):
        self.seen.append("enter")
        return self
    def __exit__(self, et, ev, tb):
        self.seen.append(et.__name__ if et else None)
        return et is not None and issubclass(et, self.types)
def main(x, s):
    y = x
    with s:
        y = x * 2
        if x.sum() > 2:
            raise ValueError("x")
        y = y + 1
    return y, s.seen
def make_args(call):
    return dynjit.ones(2) * (call + 1), Suppress(ValueError)
'''

PROGRAMS["contextlib_suppress_and_cm"] = '''
import contextlib
import dynjit
EVENTS = []
@contextlib.contextmanager
def tag(name):
    EVENTS.append("in " + name)
    try:
        yield name.upper()
    finally:
        EVENTS.append("out " + name)
def main(x, d):
    with contextlib.suppress(KeyError):
        x = x * d["a"]
    with tag("t") as T:
        x = x + len(T)
    return x
def make_args(call):
    return dynjit.ones(2), ({} if call == 1 else {"a": 3.0})
'''

PROGRAMS["cm_exit_sees_tensor_error"] = '''
import dynjit
class Rec:
    def __init__(self):
        self.exc = None
    def __enter__(self):
        return self
    def __exit__(self, et, ev, tb):
        self.exc = (et.__name__, str(ev)) if et else None
        return True
def main(a, b):
    r = Rec()
    out = a
    with r:
        out = a @ b
    return out, r.exc
def make_args(call):
    return dynjit.ones(2, 3), dynjit.ones(3 - (call == 1), 1)
'''

PROGRAMS["assert_fails_with_message"] = '''
import dynjit
def main(x):
    y = x * 2
    assert y.sum() < 5, f"too big: {y.sum().item():.1f}"
    return y
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["zero_division_and_overflow"] = '''
import dynjit
def main(x, n):
    out = []
    try:
        out.append(x / 0)
    except ZeroDivisionError as e:
        out.append("tensor-zdiv")
    try:
        out.append(10 // n)
    except ZeroDivisionError as e:
        out.append(str(e))
    try:
        out.append(1.0 / n)
    except ZeroDivisionError as e:
        out.append(str(e))
    out.append(2 ** 100 + n)
    out.append(x * (2 ** 70))
    try:
        out.append(float(10 ** 400))
    except OverflowError as e:
        out.append(str(e))
    return out
def make_args(call):
    return dynjit.ones(2), call - 1
'''

PROGRAMS["exception_var_deleted_after_except"] = '''
import dynjit
def main(x):
    e = "before"
    try:
        raise ValueError("v")
    except ValueError as e:
        x = x + 1
    try:
        return e
    except NameError as ne:
        return str(ne), x
def make_args(call):
    return (dynjit.ones(1) * call,)
'''

PROGRAMS["except_tuple_and_order"] = '''
import dynjit
def risky(x, k):
    if k == 0:
        return x[5]
    if k == 1:
        return {"a": x}["b"]
    return x.reshape(7)
def main(x, k):
    try:
        return risky(x, k)
    except (IndexError, KeyError) as e:
        return type(e).__name__, str(e)
    except RuntimeError as e:
        return "rt", str(e)
def make_args(call):
    return dynjit.ones(3), call
'''

PROGRAMS["exception_group_like_nesting"] = '''
import dynjit
def main(x):
    errs = []
    for i in range(4):
        try:
            if i % 2:
                raise ValueError(i)
            x = x + i
        except ValueError as e:
            errs.append(e.args[0])
            continue
        finally:
            x = x * 1.5
    return x, errs
def make_args(call):
    return (dynjit.ones(2) + call,)
'''

PROGRAMS["raise_in_generator_propagates"] = '''
import dynjit
def gen(t):
    yield t
    raise RuntimeError("gen died")
def main(x):
    out = []
    try:
        for v in gen(x):
            out.append(v * 2)
    except RuntimeError as e:
        out.append(str(e))
    return out
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["sys_exc_info_and_traceback"] = '''
import sys
import dynjit
def main(x):
    try:
        x.view(-1, 7)
    except RuntimeError:
        et, ev, tb = sys.exc_info()
        return et.__name__, tb is not None, x * 2
    return None
def make_args(call):
    return (dynjit.ones(3 + call),)
'''

PROGRAMS["user_exception_str_repr"] = '''
import dynjit
class E(Exception):
    def __str__(self):
        return "E<" + ",".join(map(str, self.args)) + ">"
def main(x):
    try:
        raise E(1, "two", 3.0)
    except E as e:
        return str(e), repr(e), x + len(e.args)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["stopiteration_from_next_in_fn"] = '''
import dynjit
def main(x, items):
    it = iter(items)
    try:
        a = next(it)
        b = next(it)
        return a * b * x
    except StopIteration:
        return "short"
def make_args(call):
    return dynjit.ones(2), [2.0, 3.0][: 2 - call % 2]
'''

PROGRAMS["exit_raises_new_exception_inside_suppressor"] = '''
import dynjit
LOG = []
class Raising:
    def __enter__(self):
        return self
    def __exit__(self, et, ev, tb):
        LOG.append(("exit", et.__name__ if et else None))
        if et is KeyError:
            raise ValueError("from exit") from ev
        return False
class Sup:
    def __enter__(self): return self
    def __exit__(self, *a):
        LOG.append("sup")
        return True
def f(x, k):
    with Sup():
        with Raising():
            if k == 1:
                raise KeyError("k")
            if k == 2:
                return x * 2
            y = x + 1
    return x - 1
def main(x, k):
    try:
        return f(x, k), list(LOG)
    except ValueError as e:
        return "VE", str(e), type(e.__cause__).__name__, list(LOG)
def make_args(call):
    return dynjit.ones(2), call
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
