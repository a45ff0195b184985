"""Adversarial programs for guards: between calls the program changes what the
compiled code may have baked in (globals, closure cells, class and instance
attributes, dict and list contents, default arguments, functions replaced,
module attributes monkeypatched, dtypes, ranks, Python scalars and types)."""
import sys

import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["global_scalar_changes"] = '''
import dynjit
SCALE = 1.0
def main(x):
    return x * SCALE
def make_args(call):
    global SCALE
    SCALE = [2.0, 2.0, 5.0, 5][call] if call < 4 else 1
    return (dynjit.ones(2),)
'''

PROGRAMS["global_function_replaced"] = '''
import dynjit
def act(t):
    return t.relu()
def main(x):
    return act(x - 0.5)
def make_args(call):
    global act
    if call == 2:
        act = lambda t: t * 100
    return (dynjit.arange(3, dtype=dynjit.float32),)
'''

PROGRAMS["closure_cell_changes_between_calls"] = '''
import dynjit
def make():
    k = [1.0]
    def f(x):
        return x * k[0]
    def set_k(v):
        k[0] = v
    return f, set_k
F, SET = make()
def main(x):
    return F(x)
def make_args(call):
    SET(float(call + 1))
    return (dynjit.ones(2),)
'''

PROGRAMS["closure_nonlocal_int_changes"] = '''
import dynjit
def make():
    k = 1
    def f(x):
        return x * k
    def bump():
        nonlocal k
        k += 1
    return f, bump
F, BUMP = make()
def main(x):
    r = F(x)
    BUMP()
    return r
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["compiled_closure_sees_cell_change"] = '''
import dynjit
def outer():
    scale = 1
    def inner(x):
        return x * scale
    return inner, lambda v: None
def main(x, s):
    def f(t):
        return t * s
    return f(x)
def make_args(call):
    return dynjit.ones(2), [2, 2, 3, 2.5][call]
'''

PROGRAMS["instance_attr_changes"] = '''
import dynjit
class Cfg:
    def __init__(self):
        self.mode = "add"
        self.k = 1
CFG = Cfg()
def main(x):
    if CFG.mode == "add":
        return x + CFG.k
    return x * CFG.k
def make_args(call):
    CFG.k = [1, 1, 2, 3][call]
    CFG.mode = ["add", "add", "add", "mul"][call]
    return (dynjit.ones(2),)
'''

PROGRAMS["class_attr_changes_and_shadowed"] = '''
import dynjit
class A:
    k = 2
O = A()
def main(x):
    return x * O.k
def make_args(call):
    if call == 1:
        A.k = 3
    if call == 2:
        O.k = 5
    if call == 3:
        del O.k
    return (dynjit.ones(2),)
'''

PROGRAMS["method_monkeypatched_on_class"] = '''
import dynjit
class A:
    def f(self, t):
        return t + 1
O = A()
def main(x):
    return O.f(x)
def make_args(call):
    if call == 2:
        A.f = lambda self, t: t * 10
    if call == 3:
        O.f = lambda t: t - 7
    return (dynjit.ones(2),)
'''

PROGRAMS["dict_contents_change"] = '''
import dynjit
CFG = {"act": "relu", "k": 2}
def main(x):
    y = x * CFG["k"]
    if CFG["act"] == "relu":
        y = y.relu()
    if "bias" in CFG:
        y = y + CFG["bias"]
    return y
def make_args(call):
    if call == 1:
        CFG["k"] = 3
    if call == 2:
        CFG["act"] = "none"
    if call == 3:
        CFG["bias"] = 1.5
    return (dynjit.tensor([-1.0, 2.0]),)
'''

PROGRAMS["list_length_and_item_change"] = '''
import dynjit
WS = [1.0, 2.0]
def main(x):
    for w in WS:
        x = x * w
    return x, len(WS)
def make_args(call):
    if call == 1:
        WS[0] = 3.0
    if call >= 2:
        WS.append(0.5)
    return (dynjit.ones(2),)
'''

PROGRAMS["default_arg_changed"] = '''
import dynjit
def helper(t, k=2):
    return t * k
def main(x):
    return helper(x)
def make_args(call):
    if call == 2:
        helper.__defaults__ = (7,)
    return (dynjit.ones(2),)
'''

PROGRAMS["module_attr_monkeypatched"] = '''
import math
import types
import dynjit
NS = types.SimpleNamespace(fn=math.sqrt, c=2.0)
def main(x):
    return x * NS.fn(NS.c)
def make_args(call):
    if call == 1:
        NS.c = 9.0
    if call == 2:
        NS.fn = math.log
    return (dynjit.ones(2),)
'''

PROGRAMS["dtype_and_rank_changes"] = '''
import dynjit
def main(x):
    y = x * 2
    if x.dim() == 2:
        y = y.sum(0)
    if x.dtype == dynjit.float64:
        y = y + 0.5
    return y, y.dtype
def make_args(call):
    return ([dynjit.ones(3), dynjit.ones(3), dynjit.ones(2, 3), dynjit.ones(3, dtype=dynjit.float64),
             dynjit.arange(3)][call],)
'''

PROGRAMS["python_scalar_type_changes"] = '''
import dynjit
def main(x, s):
    r = x * s
    return r, type(s).__name__, s / 2, s // 1
def make_args(call):
    return dynjit.ones(2), [2, 2, 2.5, True, -3][call]
'''

PROGRAMS["argument_kind_changes"] = '''
import dynjit
def main(v):
    if isinstance(v, list):
        return sum(v)
    if isinstance(v, dict):
        return sorted(v)
    if isinstance(v, dynjit.Tensor):
        return v * 2
    return v
def make_args(call):
    return ([[dynjit.ones(2), dynjit.ones(2)], [dynjit.ones(2)], {"b": 1, "a": 2}, dynjit.ones(3), None][call],)
'''

PROGRAMS["tuple_length_and_none_changes"] = '''
import dynjit
def main(x, opts):
    out = x
    for o in opts:
        if o is None:
            continue
        out = out + o
    return out
def make_args(call):
    return dynjit.ones(2), [(1, None), (1, None), (None, 2, 3), (), (dynjit.ones(2),)][call]
'''

PROGRAMS["requires_grad_changes"] = '''
import dynjit
def main(x):
    y = x * 3
    return y.requires_grad, y.grad_fn is None, y
def make_args(call):
    return (dynjit.ones(2, requires_grad=call in (2, 3)),)
'''

PROGRAMS["grad_mode_at_call_changes"] = '''
import dynjit
def main(x):
    return (x * 2).requires_grad, dynjit.is_grad_enabled()
def make_args(call):
    dynjit.set_grad_enabled(call != 2)
    return (dynjit.ones(2, requires_grad=True),)
'''

PROGRAMS["tensor_values_used_as_python"] = '''
import dynjit
def main(x):
    n = int(x.sum().item())
    out = []
    for i in range(n):
        out.append(i)
    return out, x * n
def make_args(call):
    return (dynjit.ones(2) * [1, 1, 2, 0, 3][call],)
'''

PROGRAMS["shape_specialization_then_dynamic"] = '''
import dynjit
def main(x):
    n = x.shape[0]
    if n > 3:
        return x[:3] * n
    return x * n, list(range(n))
def make_args(call):
    return (dynjit.ones([2, 2, 3, 5, 7][call]),)
'''

PROGRAMS["object_identity_changes"] = '''
import dynjit
class M:
    def __init__(self, k):
        self.k = k
OBJS = [M(1), M(2)]
CUR = OBJS[0]
def main(x):
    return x * CUR.k, CUR is OBJS[0]
def make_args(call):
    global CUR
    CUR = OBJS[call % 2]
    return (dynjit.ones(2),)
'''

PROGRAMS["enum_and_string_args"] = '''
import enum
import dynjit
class Op(enum.Enum):
    A = 1
    B = 2
def main(x, op, name):
    y = x + 1 if op is Op.A else x - 1
    return y, name.upper(), getattr(dynjit, name)(x).sum()
def make_args(call):
    return dynjit.ones(2), [Op.A, Op.A, Op.B, Op.A][call], ["sin", "sin", "cos", "exp"][call]
'''

PROGRAMS["global_list_replaced_vs_mutated"] = '''
import dynjit
BUF = []
def main(x):
    BUF.append(x * len(BUF))
    return len(BUF), BUF[-1]
def make_args(call):
    global BUF
    if call == 2:
        BUF = [0, 0, 0]
    return (dynjit.ones(2),)
'''

PROGRAMS["nn_module_training_toggled"] = '''
import dynjit
import dynjit.nn as nn
NET = nn.Dropout(0.5)
def main(x):
    return NET(x)
def make_args(call):
    NET.train(call in (0, 1, 3))
    return (dynjit.ones(8),)
'''

PROGRAMS["frozen_set_contains_changes"] = '''
import dynjit
ALLOWED = {"a", "b"}
def main(x, k):
    if k in ALLOWED:
        return x * 2
    return x
def make_args(call):
    if call == 2:
        ALLOWED.add("c")
    return dynjit.ones(2), ["a", "a", "c", "d"][call]
'''

PROGRAMS["builtin_shadowed_by_global"] = '''
import dynjit
def main(x):
    return x * len([1, 2])
def make_args(call):
    if call == 2:
        globals()["len"] = lambda v: 10
    return (dynjit.ones(2),)
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))


CALLS = {name: 4 for name in PROGRAMS}
CALLS.update({"dtype_and_rank_changes": 5, "python_scalar_type_changes": 5, "argument_kind_changes": 5,
              "tuple_length_and_none_changes": 5, "tensor_values_used_as_python": 5,
              "shape_specialization_then_dynamic": 5, "global_scalar_changes": 5})
