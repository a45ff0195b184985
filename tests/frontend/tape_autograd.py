"""A tiny tape-based autograd written in plain Python over dynjit tensors.

It exercises the JIT's Python support hard: user classes with operator
overloading, a global list mutated by every op, a global counter, closures
stored in named tuples, dicts, generator expressions, and f-strings.
"""
from typing import Callable, List, NamedTuple

import dynjit

_counter = 0


def new_name():
    global _counter
    name = f"t{_counter}"
    _counter += 1
    return name


class Var:
    def __init__(self, value, name=None):
        self.value = value
        self.name = name or new_name()

    @staticmethod
    def leaf(value, name=None):
        return Var(value, name)

    def __mul__(self, other):
        return mul(self, other)

    def __add__(self, other):
        return add(self, other)

    def sum(self, name=None):
        return total(self, name)

    def expand(self, sizes):
        return broadcast(self, sizes)


class Record(NamedTuple):
    inputs: List[str]
    outputs: List[str]
    backward: Callable


tape: List[Record] = []


def clear_tape():
    tape.clear()
    global _counter
    _counter = 0


def gradients(loss, wrt):
    grads = {loss.name: Var(dynjit.ones(()))}

    def lookup(names):
        return [grads[n] if n in grads else None for n in names]

    for rec in reversed(tape):
        outs = lookup(rec.outputs)
        if all(g is None for g in outs):
            continue
        for name, g in zip(rec.inputs, rec.backward(outs)):
            if name in grads:
                grads[name].value += g.value
            else:
                grads[name] = g
    return lookup(v.name for v in wrt)


def mul(a, b):
    if isinstance(b, float) and b == 1.0:
        return a
    out = Var(a.value * b.value)

    def backward(douts):
        (d,) = douts
        return [d * b, d * a]
    tape.append(Record(inputs=[a.name, b.name], outputs=[out.name], backward=backward))
    return out


def add(a, b):
    out = Var(a.value + b.value)

    def backward(douts):
        (d,) = douts
        return [d * 1.0, d * 1.0]
    tape.append(Record(inputs=[a.name, b.name], outputs=[out.name], backward=backward))
    return out


def total(a, name):
    out = Var(dynjit.sum(a.value), name=name)

    def backward(douts):
        (d,) = douts
        return [d.expand(*a.value.size())]
    tape.append(Record(inputs=[a.name], outputs=[out.name], backward=backward))
    return out


def broadcast(a, sizes):
    assert a.value.dim() == 0
    out = Var(a.value.expand(sizes))

    def backward(douts):
        (d,) = douts
        return [d.sum()]
    tape.append(Record(inputs=[a.name], outputs=[out.name], backward=backward))
    return out


def add_then_mul(a, b):
    t = a + b
    return t * b
