"""Compile a pure-Python tape autograd (tests/frontend/tape_autograd.py) and
check results, side effects, frame counts and op counts against eager."""
import pytest

import dynjit
from dynjit.testing import CompileCounter, same

import tape_autograd as ta


def _compare(fn, expected_ops):
    inputs_1 = [dynjit.randn(10), dynjit.randn(10)]
    inputs_2 = [dynjit.randn(10), dynjit.randn(10)]
    counter = CompileCounter()
    compiled = dynjit.optimize_assert(counter)(fn)
    results = []
    for inputs in (inputs_1, inputs_2):
        ta.clear_tape()
        got = compiled(*inputs)
        tape_after_compiled = [(r.inputs, r.outputs) for r in ta.tape]
        ta.clear_tape()
        want = fn(*inputs)
        tape_after_eager = [(r.inputs, r.outputs) for r in ta.tape]
        assert same(got, want)
        assert tape_after_compiled == tape_after_eager      # same side effects
        results.append(got)
    ta.clear_tape()
    assert counter.frame_count == 1
    assert counter.op_count == expected_ops


def _forward(a, b):
    a = ta.Var.leaf(a, name="a")
    b = ta.Var.leaf(b, name="b")
    return ta.add_then_mul(a, b).sum()


# ports: 004_8d68c47f98fbe277.txt TestPythonAutograd.test_forwards1
def test_forward_pass_is_one_graph_of_three_ops():
    _compare(_forward, 3)


# ports: 004_8d68c47f98fbe277.txt TestPythonAutograd.test_forwards2
def test_forward_pass_that_clears_the_tape_inside():
    def fn(a, b):
        ta.clear_tape()
        loss = _forward(a, b)
        ta.clear_tape()
        return loss
    _compare(fn, 3)


# ports: 004_8d68c47f98fbe277.txt TestPythonAutograd.test_backwards1
def test_forward_and_backward_is_one_graph_of_eight_ops():
    def fn(a, b):
        a = ta.Var.leaf(a, name="a")
        b = ta.Var.leaf(b, name="b")
        loss = ta.add_then_mul(a, b).sum()
        return ta.gradients(loss, [a, b])
    _compare(fn, 8)


# ports: 004_8d68c47f98fbe277.txt TestPythonAutograd.test_backwards2
def test_forward_and_backward_clearing_the_tape_inside():
    def fn(a, b):
        ta.clear_tape()
        a = ta.Var.leaf(a, name="a")
        b = ta.Var.leaf(b, name="b")
        loss = ta.add_then_mul(a, b).sum()
        grads = ta.gradients(loss, [a, b])
        ta.clear_tape()
        return grads
    _compare(fn, 8)


# ports: 004_8d68c47f98fbe277.txt TestPythonAutograd.test_split
def test_forward_and_backward_compiled_separately_give_two_frames():
    v1 = ta.Var.leaf(dynjit.randn(10), name="a")
    v2 = ta.Var.leaf(dynjit.randn(10), name="b")

    def forward(a, b):
        return ta.add_then_mul(a, b).sum()

    ta.clear_tape()
    loss_eager = forward(v1, v2)
    grads_eager = ta.gradients(loss_eager, [v1, v2])

    ta.clear_tape()
    counter = CompileCounter()
    compiled_forward = dynjit.optimize_assert(counter)(forward)
    compiled_grad = dynjit.optimize_assert(counter)(ta.gradients)
    loss = compiled_forward(v1, v2)
    grads = compiled_grad(loss, [v1, v2])
    ta.clear_tape()
    assert same(loss_eager, loss)
    assert same(grads_eager, grads)
    assert counter.frame_count == 2
    assert counter.op_count == 8
