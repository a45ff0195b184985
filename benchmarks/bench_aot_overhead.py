"""Per-call overhead of an aot_function-compiled function against calling it eagerly.

A 10-op pointwise function on small tensors (so the cost is dispatch, not
arithmetic): eager, aot_function with the `nop` compiler (the same ops, run
from the generated graph code), and the cost of building the call's cache key
alone. Inference (no input requires grad) and training (inputs require grad:
eager records autograd per op, the compiled function records one node).

    python benchmarks/bench_aot_overhead.py
"""
import timeit

import dynjit
from dynjit.aot import aot_function, nop
from dynjit.aot.flat import call_key


def f(x, y):
    a = x * y
    b = a + x
    c = b.sin()
    d = c * 2.0
    e = d - y
    g = e.exp()
    h = g / 3.0
    i = h.tanh()
    j = i + a
    return j.cos()


def per_call(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    compiled = aot_function(f, nop)
    rows = []
    for label, requires_grad, number in (("inference", False, 5000), ("training", True, 2000)):
        x = dynjit.randn(16, requires_grad=requires_grad)
        y = dynjit.randn(16, requires_grad=requires_grad)
        compiled(x, y)          # compile outside the timing
        eager = per_call(lambda: f(x, y), number)
        aot = per_call(lambda: compiled(x, y), number)
        key = per_call(lambda: call_key((x, y), {}), number * 4)
        rows.append((label, eager, aot, key))
    print(f"{'mode':<10} {'eager us':>9} {'aot us':>9} {'aot-eager':>10} {'key us':>8}")
    for label, eager, aot, key in rows:
        print(f"{label:<10} {eager:9.1f} {aot:9.1f} {aot - eager:+10.1f} {key:8.2f}")


if __name__ == "__main__":
    main()
