"""Adversarial programs about state that lives across calls: module-level generators,
itertools counters and iterators advanced by every call, grad-mode context objects reused,
grad mode left off by the function, no_grad-decorated module methods."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["global_generator_and_counters_advance_each_call"] = '''
import itertools
import dynjit
def gen():
    i = 0
    while True:
        i += 1
        yield i
G = gen()
IDS = itertools.count(10)
IT = iter(range(100))
def main(x):
    return x * next(G), next(IDS), next(IT), next(IT)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["global_cycle_iterator"] = '''
import itertools
import dynjit
CYC = itertools.cycle([1.0, 2.0, 3.0])
def main(x):
    return x * next(CYC)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["grad_mode_context_objects_reused_and_left_off"] = '''
import dynjit
CTX = dynjit.no_grad()
def main(w, leave_off):
    with CTX:
        a = w * 2
    with CTX:
        b = w * 3
    with dynjit.inference_mode():
        c = w * 4
    if leave_off:
        dynjit.set_grad_enabled(False)
    d = w * 5
    return a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, dynjit.is_grad_enabled(), c.is_inference()
def make_args(call):
    return dynjit.ones(2, requires_grad=True), call == 2
'''

PROGRAMS["no_grad_decorated_module_method"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(dynjit.ones(2))
    @dynjit.no_grad()
    def predict(self, x):
        return self.forward(x)
    def forward(self, x):
        return x * self.w
NET = M()
def main(x):
    a = NET.predict(x)
    b = NET(x)
    return a.requires_grad, b.requires_grad, a, b
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=4)
