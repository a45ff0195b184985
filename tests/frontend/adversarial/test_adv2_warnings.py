"""Adversarial programs, round two: warnings must be given on every call, as
often as in eager: warnings from the tensor library's functions (implicit
softmax dim, loss size mismatch, dropout2d on 3-D input, deprecated upsample,
out= resized), warnings from Python operations folded at trace time, and the
user's own warnings.warn with the default once-per-location filter."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}


def _lib(expr):
    return f'''
import dynjit
F = dynjit.nn.functional
def main(x):
    return {expr}
def make_args(call):
    return (dynjit.ones(2, 3) * (call + 1),)
'''


PROGRAMS["warning_softmax_implicit_dim"] = _lib("F.softmax(x)")
PROGRAMS["warning_log_softmax_implicit_dim"] = _lib("F.log_softmax(x * 2)")
PROGRAMS["warning_mse_loss_size_mismatch"] = _lib("F.mse_loss(x, x[:, :1])")
PROGRAMS["warning_dropout2d_on_3d_input"] = _lib("F.dropout2d(x.unsqueeze(0), 0.0)")
PROGRAMS["warning_upsample_deprecated"] = _lib("F.upsample(x.unsqueeze(0), scale_factor=2)")
PROGRAMS["warning_out_argument_resized"] = _lib("dynjit.add(x, 1, out=dynjit.empty(1))")

PROGRAMS["warning_user_warn_in_helper_every_call"] = '''
import warnings
import dynjit
def check(t):
    if t.shape[0] > 1:
        warnings.warn(f"big input {t.shape[0]}", RuntimeWarning)
    return t * 2
def main(x):
    return check(x) + check(x[:1])
def make_args(call):
    return (dynjit.ones(2 + call),)
'''

PROGRAMS["warning_python_folding_invert_bool"] = '''
import dynjit
def main(x, b):
    return x * (~b), x + (~True)
def make_args(call):
    return dynjit.ones(2), [True, True, False][call]
'''

PROGRAMS["warning_from_module_forward_every_call"] = '''
import warnings
import dynjit
class M(dynjit.nn.Module):
    def forward(self, t):
        warnings.warn("forward called", UserWarning)
        return t * 2
M_INST = M()
def main(x):
    return M_INST(x)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["warning_numpy_scalar_divide_by_zero"] = '''
import numpy as np
import dynjit
def main(x, v):
    r = np.float64(1.0) / v
    return x * float(np.isinf(r)), float(r)
def make_args(call):
    return dynjit.ones(2), [0.0, 0.0, 2.0, 0.0][call]
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
