"""Adversarial programs, round two: globals of other modules: a helper from
another module that rebinds its own global (global statement) and the caller
reading that module's attribute afterwards, module attributes set from the
caller and read by the helper, `from m import name` bindings that go stale,
and helpers whose global names shadow the caller's."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

_OTHER = '''
import sys
import types
import dynjit
other = types.ModuleType("adv2_other_" + __name__)
exec("""
N = 0
SCALE = 100
LOG = []
def bump():
    global N
    N += 1
    return N
def scaled(t):
    global SCALE
    LOG.append(SCALE)
    SCALE += 1
    return t * SCALE
def read():
    return N, SCALE
""", other.__dict__)
'''

PROGRAMS["helper_rebinds_own_global_caller_reads_module_attr"] = _OTHER + '''
def main(x):
    other.bump()
    a = other.N
    other.bump()
    return x * a, a, other.N, other.read()
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["helper_global_augmented_and_log"] = _OTHER + '''
SCALE = 2
def main(x):
    global SCALE
    SCALE += 10
    y = other.scaled(x)
    return y, SCALE, other.SCALE, list(other.LOG)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["caller_sets_module_attr_helper_reads_it"] = _OTHER + '''
def main(x, k):
    other.N = k
    other.SCALE = k * 2
    return x * other.read()[1], other.read(), other.bump()
def make_args(call):
    return dynjit.ones(2), call + 1
'''

PROGRAMS["from_import_binding_goes_stale"] = _OTHER + '''
N_AT_IMPORT = other.N
def main(x):
    before = N_AT_IMPORT
    other.bump()
    return x * other.N, before, other.N == before
def make_args(call):
    return (dynjit.ones(2),)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
