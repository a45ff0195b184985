"""Adversarial programs: one piece of state reached two ways inside compiled
code (a global through sys.modules or setattr on the module, an attribute
through obj.__dict__ / vars(obj), setattr/getattr with computed names,
object.__setattr__, dict.__setitem__ called unbound, a list through a slice
view of itself), written one way and read the other."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["global_via_sys_modules_and_setattr"] = '''
import sys
import dynjit
VAL = 1
def main(x):
    mod = sys.modules[__name__]
    mod.VAL = VAL + 1
    a = x * VAL
    setattr(mod, "VAL", VAL * 10)
    return a, x * VAL
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["attr_via_instance_dict"] = '''
import dynjit
class O:
    def __init__(self):
        self.a = 1
def main(x, o):
    o.__dict__["a"] = 5
    b = x * o.a
    vars(o)["c"] = 7
    o.a = 2
    return b, o.c, o.__dict__["a"], sorted(vars(o))
def make_args(call):
    return dynjit.ones(2), O()
'''

PROGRAMS["dict_cleared_through_alias"] = '''
import dynjit
class O:
    pass
def main(x, o):
    o.t = x * 2
    d = o.__dict__
    d.clear()
    return hasattr(o, "t"), x + 1
def make_args(call):
    return dynjit.ones(2), O()
'''

PROGRAMS["computed_attr_names"] = '''
import dynjit
class O:
    pass
def main(x, names):
    o = O()
    for i, n in enumerate(names):
        setattr(o, n, x * i)
    return [getattr(o, n) for n in reversed(names)], sorted(vars(o))
def make_args(call):
    return dynjit.ones(2), [["a", "b"], ["a", "b"], ["b", "c", "a"]][call]
'''

PROGRAMS["unbound_dunder_calls"] = '''
import dynjit
class O:
    def __setattr__(self, k, v):
        raise AttributeError("read-only")
def main(x, d):
    o = O()
    object.__setattr__(o, "t", x)
    dict.__setitem__(d, "k", x * 2)
    list.append(d.setdefault("L", []), 3)
    return o.t + d["k"], d["L"]
def make_args(call):
    return dynjit.ones(2), {}
'''

PROGRAMS["list_through_slice_assignment_alias"] = '''
import dynjit
def main(L, x):
    M = L
    M[:] = [v * 2 for v in M]
    L += [x]
    N = L[:]
    N.append(0)
    return len(L), len(M), len(N), M is L
def make_args(call):
    return [1, 2, 3][: 2 + call % 2], dynjit.ones(2)
'''

PROGRAMS["nested_container_alias"] = '''
import dynjit
def main(x):
    inner = [x]
    outer = {"a": inner, "b": [inner, inner]}
    outer["b"][1].append(x * 2)
    inner[0] = inner[0] + 1
    return outer, outer["a"] is outer["b"][0]
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["default_dict_factory_side_effect"] = '''
import collections
import dynjit
LOG = []
def fac():
    LOG.append("made")
    return []
def main(x, keys):
    d = collections.defaultdict(fac)
    for k in keys:
        d[k].append(x)
    return len(d), len(LOG), "zz" in d, len(LOG)
def make_args(call):
    return dynjit.ones(2), ["a", "b", "a"][: 2 + call % 2]
'''

XFAIL = {
}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
