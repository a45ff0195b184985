"""Outputs of an aot_function that are views of an input made by one multi-output view op
(unbind): gradients, the in-place error and aliasing with a later input mutation match
eager (seed 001's multi-output-view aliasing test)."""
import pytest

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.testing import same


def unbind_all(a):
    return list(a.unbind(0))


def unbind_and_view(a):
    return *list(a.unbind(0)), a.view(a.shape)


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_output_aliases_input_multi_output_view
def test_outputs_from_one_multi_output_view_of_an_input():
    # PyTorch gives these outputs its compiled node as grad_fn (CompiledFunctionBackward);
    # dynjit replays the unbind on the caller's input, so they carry UnbindBackward0, as in
    # eager. What users see is the same: values, gradients, the in-place error.
    inp = dynjit.ones(3, 3, requires_grad=True)
    inp_ref = dynjit.ones(3, 3, requires_grad=True)
    out_ref = unbind_all(inp_ref)
    out_test = aot_function(unbind_all, nop)(inp)
    assert all(same(a, b) for a, b in zip(out_ref, out_test))
    assert all(o._base is inp for o in out_test)          # views of the input, not copies
    sum(out_ref).sum().backward()
    sum(out_test).sum().backward()
    assert same(inp.grad, inp_ref.grad)
    with pytest.raises(RuntimeError, match="Such functions do not allow the output views"):
        aot_function(unbind_all, nop)(dynjit.ones(3, 3, requires_grad=True).clone())[0].mul_(2)

    # some aliased outputs from the multi-output view, one from a plain view
    inp = dynjit.ones(3, 3, requires_grad=True)
    inp_ref = dynjit.ones(3, 3, requires_grad=True)
    inp_clone, inp_ref_clone = inp.clone(), inp_ref.clone()
    out_ref = unbind_and_view(inp_ref_clone)
    out_test = aot_function(unbind_and_view, nop)(inp_clone)
    assert all("UnbindBackward" in type(o.grad_fn).__name__ for o in out_test[:3])
    out_ref[-1].mul_(2)
    out_test[-1].mul_(2)
    inp_ref_clone.view(-1).mul_(3)       # writes through the input reach the aliased output
    inp_clone.view(-1).mul_(3)
    assert same(out_test[-1], out_ref[-1])
    (inp_ref + out_ref[-1]).sum().backward()
    (inp + out_test[-1]).sum().backward()
    assert same(inp.grad, inp_ref.grad)
