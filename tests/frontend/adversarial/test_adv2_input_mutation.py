"""Adversarial programs, round two: in-place changes a compiled function makes
to its tensor inputs, where the input is itself a view (a slice, a transpose,
a strided view): value writes through the view, metadata in-place ops
(unsqueeze_, squeeze_, transpose_, t_), resize_, set_, detach_, and the
errors eager gives for the forbidden ones (detach_ of a view, set_ of a view).
The harness compares the arguments (and so the caller's view) afterwards; the
base is returned so its values are compared too."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}


def _prog(view_expr, op):
    return f'''
import dynjit
def main(x, base):
    r = {op}
    return base, tuple(x.shape), x.stride(), r is x
def make_args(call):
    base = dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) * (call + 1)
    return {view_expr}, base
'''


PROGRAMS["write_through_slice_view_input"] = _prog("base[:, 1:]", "x.add_(1)")
PROGRAMS["write_through_transposed_view_input"] = _prog("base.t()", "x.mul_(2)")
PROGRAMS["write_through_strided_view_input"] = _prog("base[:, ::2]", "x.fill_(-1)")
PROGRAMS["write_through_view_of_view_input"] = _prog("base.view(-1)[1:4]", "x.mul_(10)")
PROGRAMS["copy_into_view_input_with_dtype_change"] = _prog("base[0]", "x.copy_(dynjit.arange(3))")
PROGRAMS["unsqueeze_inplace_on_input"] = _prog("base.clone()", "x.unsqueeze_(1)")
PROGRAMS["squeeze_inplace_on_input"] = _prog("base.reshape(1, 6).clone()", "x.squeeze_(0)")
PROGRAMS["transpose_inplace_on_input"] = _prog("base.clone()", "x.transpose_(0, 1)")
PROGRAMS["t_inplace_on_view_input"] = _prog("base[:, :2]", "x.t_()")
PROGRAMS["zero_then_unsqueeze_inplace_on_input"] = _prog("base.clone()", "(x.zero_(), x.unsqueeze_(0))[1]")
PROGRAMS["resize_inplace_on_input"] = _prog("base.clone()", "x.resize_(3, 2)")
PROGRAMS["detach_inplace_on_view_input_raises"] = _prog("base[0]", "x.detach_()")
PROGRAMS["set_on_view_input_raises"] = _prog("base[0]", "x.set_(dynjit.zeros(2))")
PROGRAMS["set_on_base_input"] = _prog("base.clone()", "x.set_(dynjit.zeros(2))")
PROGRAMS["two_inputs_views_of_one_base"] = '''
import dynjit
def main(a, b, base):
    a.add_(100)
    b.mul_(2)
    return base, a, b
def make_args(call):
    base = dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) + call
    return base[0], base[:, 0], base
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
