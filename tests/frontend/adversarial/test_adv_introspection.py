"""Adversarial programs: introspection and dynamic definition inside compiled
code (tracebacks and line numbers, frames, imports inside the function,
globals() writes, type() with three arguments, exec-defined functions,
monkeypatching classes and functions from inside), and TypeError messages for
bad calls."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["traceback_text_and_lineno"] = '''
import sys
import traceback
import dynjit
def fail(t):
    raise ValueError("bad " + str(t.shape[0]))
def main(x):
    y = x * 2
    try:
        fail(y)
    except ValueError as e:
        tb = traceback.format_exc()
        lines = [ln.strip() for ln in tb.splitlines() if ln.strip().startswith("File")]
        last = e.__traceback__
        while last.tb_next:
            last = last.tb_next
        return y, len(lines), [l.split(", in ")[-1] for l in lines], last.tb_lineno, last.tb_frame.f_code.co_name
def make_args(call):
    return (dynjit.ones(2 + call),)
'''

PROGRAMS["frame_introspection"] = '''
import sys
import inspect
import dynjit
def who():
    f = sys._getframe(1)
    return f.f_code.co_name, f.f_lineno
def main(x):
    a = who()
    b = inspect.currentframe().f_code.co_name
    c = inspect.stack()[0].function
    return x + 1, a, b, c
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["import_inside_function"] = '''
import dynjit
def main(x):
    import math
    from collections import OrderedDict as OD
    import dynjit.nn.functional as F
    d = OD(a=math.pi)
    return F.relu(x - 1) * d["a"], type(d).__name__
def make_args(call):
    return (dynjit.arange(3, dtype=dynjit.float32),)
'''

PROGRAMS["globals_dict_write_then_read"] = '''
import dynjit
def main(x):
    globals()["DYN"] = x.shape[0]
    g = globals()
    g.setdefault("COUNT", 0)
    g["COUNT"] += 1
    return x * DYN, COUNT
def make_args(call):
    return (dynjit.ones(2 + call),)
'''

PROGRAMS["type_three_args_and_exec_def"] = '''
import dynjit
def main(x):
    Point = type("Point", (), {"scale": 3, "f": lambda self, t: t * self.scale})
    ns = {}
    exec("def g(t):\\n    return t + 10", ns)
    p = Point()
    return p.f(x), ns["g"](x), Point.__name__
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["monkeypatch_class_inside"] = '''
import dynjit
class A:
    def f(self, t):
        return t + 1
def main(x, patch):
    a = A()
    r1 = a.f(x)
    if patch:
        A.f = lambda self, t: t * 100
    r2 = a.f(x)
    return r1, r2
def make_args(call):
    A.f = lambda self, t: t + 1
    return dynjit.ones(2), call == 2
'''

PROGRAMS["function_defaults_and_code_mutated_inside"] = '''
import dynjit
def helper(t, k=2):
    return t * k
def other(t, k=2):
    return t - k
def main(x, swap):
    a = helper(x)
    helper.__defaults__ = (5,)
    b = helper(x)
    if swap:
        helper.__code__ = other.__code__
    c = helper(x)
    helper.__defaults__ = (2,)
    helper.__code__ = _ORIG
    return a, b, c
_ORIG = helper.__code__
def make_args(call):
    return dynjit.ones(2), call == 2
'''

PROGRAMS["bad_call_type_errors"] = '''
import dynjit
def f(a, b, *, c=1):
    return a + b + c
def main(x, which):
    try:
        if which == 0:
            return f(x)
        if which == 1:
            return f(x, 1, 2)
        return f(x, 1, b=2)
    except TypeError as e:
        return str(e)
def make_args(call):
    return dynjit.ones(2), call
'''

PROGRAMS["tensor_method_bad_args_errors"] = '''
import dynjit
def main(x, which):
    try:
        if which == 0:
            return x.sum(dim=5)
        if which == 1:
            return x.view(3, 3)
        return x.permute(0)
    except (IndexError, RuntimeError, TypeError, ValueError) as e:
        return type(e).__name__, str(e)
def make_args(call):
    return dynjit.ones(2, 2), call
'''

PROGRAMS["star_args_from_dict_and_generator"] = '''
import dynjit
def f(*args, **kw):
    return len(args), sorted(kw), args[0] if args else None
def main(x, d):
    return f(*d), f(*(v * 2 for v in [1, 2])), f(**d), f(*d.values(), x=x)
def make_args(call):
    return dynjit.ones(2), {"a": 1, "b": 2} if call != 2 else {"z": 0}
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
