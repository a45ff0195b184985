"""Adversarial programs, round two: the edges of the lead's fixes for the
round-two findings (a9e50e5): sequence and dict equality with tensors inside
(identity first, then a data-dependent or ambiguous truth value), user __eq__
results of every kind, in-place shape and storage ops on inputs that require
grad or are views, out= into a view, out= tuples, and autograd's errors
(in-place on a leaf, saved tensors modified, backward twice)."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}


def _eq_prog(expr):
    return f'''
import dynjit
class E:
    def __init__(self, r):
        self.r = r
    def __eq__(self, o):
        return self.r
    __hash__ = object.__hash__
def main(x, y):
    return {expr}
def make_args(call):
    return dynjit.tensor([1.0, 2.0]) * (call + 1), dynjit.tensor([1.0, 3.0])
'''


PROGRAMS["seq_eq_distinct_tensors_ambiguous"] = _eq_prog("[x] == [y]")
PROGRAMS["seq_eq_same_tensor_identity"] = _eq_prog("[x] == [x], (x, 1) == (x, 1), [[x]] == [[x]]")
PROGRAMS["seq_eq_one_element_tensors_data_dependent"] = _eq_prog("[x[:1]] == [y[:1]], (x[:1],) != (y[:1],)")
PROGRAMS["dict_eq_tensor_values"] = _eq_prog("{'a': x} == {'a': x}, {'a': x} != {'a': x}")
PROGRAMS["dict_eq_distinct_tensor_values_ambiguous"] = _eq_prog("{'a': x} == {'a': y}")
PROGRAMS["seq_eq_user_eq_tensor_result"] = _eq_prog("[E(x.sum() > 0)] == [1]")
PROGRAMS["seq_eq_user_eq_falsy_results"] = _eq_prog("[E([])] == [E(0)], [E(None)] == [1], [E('')] != [1]")
PROGRAMS["seq_eq_list_vs_tuple_and_numbers"] = _eq_prog("[1, 2] == (1, 2), [1, 2] == [1, 2.0], (True,) == (1,), x * 2")
PROGRAMS["tensor_membership_and_index_in_lists"] = _eq_prog("x in [x, y], [x, y].index(y), [x, y].count(x)")


def _inplace_prog(body, make):
    return f'''
import dynjit
def main(x):
{body}
def make_args(call):
    return ({make},)
'''


PROGRAMS["t_inplace_on_leaf_requiring_grad"] = _inplace_prog(
    "    x.t_()\n    return x.shape, x.requires_grad, x.is_leaf", "dynjit.ones(2, 3 + call, requires_grad=True)")
PROGRAMS["unsqueeze_inplace_on_intermediate_then_backward"] = _inplace_prog(
    "    w = x * 1\n    w.unsqueeze_(0)\n    (w * w).sum().backward()\n    return w.shape, x.grad",
    "dynjit.ones(2 + call, requires_grad=True)")
PROGRAMS["t_inplace_on_input_then_backward"] = _inplace_prog(
    "    x.t_()\n    (x * 2).sum().backward()\n    return x.shape, x.grad", "dynjit.ones(2, 3, requires_grad=True)")
PROGRAMS["resize_then_fill_input"] = _inplace_prog(
    "    x.resize_(4 + x.shape[0])\n    x.fill_(1)\n    return x.sum(), x.shape", "dynjit.zeros(2 + call)")
PROGRAMS["set_then_inplace_input"] = _inplace_prog(
    "    x.set_(dynjit.ones(3))\n    x.add_(1)\n    return x", "dynjit.zeros(2)")
PROGRAMS["squeeze_inplace_on_view_of_input"] = _inplace_prog(
    "    v = x.view(1, -1)\n    v.squeeze_(0)\n    v.add_(1)\n    return x, v.shape", "dynjit.zeros(4 + call)")
PROGRAMS["transpose_inplace_then_matmul"] = _inplace_prog(
    "    x.transpose_(0, 1)\n    return x @ dynjit.ones(x.shape[1], 1)", "dynjit.arange(6.0).reshape(2, 3).clone() * (call + 1)")
PROGRAMS["as_strided_inplace_on_input"] = _inplace_prog(
    "    x.as_strided_((2,), (2,))\n    return x, x.shape, x.stride()", "dynjit.arange(4.0) + call")
PROGRAMS["out_into_view_of_new_tensor"] = _inplace_prog(
    "    o = dynjit.zeros(2, 2)\n    r = dynjit.add(x, 1, out=o[0])\n    return o, r.shape", "dynjit.ones(2) * call")
PROGRAMS["out_with_input_requiring_grad_raises"] = _inplace_prog(
    "    o = dynjit.empty(2)\n    r = dynjit.mul(x, 2, out=o)\n    return r is o, o", "dynjit.ones(2, requires_grad=True)")
PROGRAMS["out_tuple_max_dim"] = _inplace_prog(
    "    v = dynjit.empty(2)\n    i = dynjit.empty(2, dtype=dynjit.int64)\n    r = dynjit.max(x, 1, out=(v, i))\n"
    "    return r[0] is v, r[1] is i, v, i", "dynjit.tensor([[1.0, 3.0], [4.0, 2.0]]) * (call + 1)")
PROGRAMS["unsqueeze_inplace_input_recompiles"] = _inplace_prog(
    "    x.unsqueeze_(0)\n    return x.sum(), x.dim()", "dynjit.ones(2) if call < 2 else dynjit.ones(2, 2)")


def _grad_prog(body):
    return f'''
import dynjit
def main(w):
{body}
def make_args(call):
    return (dynjit.tensor([1.0, 2.0]) * (call + 1)).requires_grad_(),
'''


PROGRAMS["backward_error_saved_output_modified_via_view"] = _grad_prog(
    "    a = w * 1\n    y = a.sigmoid()\n    a[0] = 5\n    y.sum().backward()\n    return w.grad")
PROGRAMS["inplace_on_view_of_leaf_raises"] = _grad_prog("    w[0].add_(1)\n    return w")
PROGRAMS["inplace_on_view_of_leaf_under_no_grad"] = _grad_prog(
    "    with dynjit.no_grad():\n        w[0].add_(1)\n    return w")
PROGRAMS["backward_of_non_scalar_raises"] = _grad_prog("    (w * 2).backward()\n    return w.grad")
PROGRAMS["grad_assigned_wrong_shape_raises"] = _grad_prog("    w.grad = dynjit.ones(3)\n    return w.grad")
PROGRAMS["requires_grad_on_int_tensor_raises"] = _grad_prog(
    "    t = dynjit.ones(2, dtype=dynjit.int64)\n    t.requires_grad_()\n    return t")
PROGRAMS["autograd_grad_of_unrelated_input_raises"] = _grad_prog(
    "    return dynjit.autograd.grad((w * 2).sum(), dynjit.ones(2, requires_grad=True))")
PROGRAMS["data_swapped_then_backward"] = _grad_prog(
    "    y = w * 2\n    w.data = dynjit.zeros(2)\n    y.sum().backward()\n    return w.grad, w")

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])
