"""Frontend costs, measured in one run: the cache-hit overhead of a compiled
call over the plain call, compile latency of a first call, and a small MLP
forward compiled vs eager vs numpy. Run: python benchmarks/bench_frontend.py"""
import time

import numpy as np

import dynjit
from dynjit import nn


def best_of(fn, repeat=7, number=2000):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def tiny(x, y):
    return x + y


def mlp_forward(model, x):
    return model(x).relu().sum()


def main():
    x, y = dynjit.ones(1), dynjit.ones(1)
    compiled = dynjit.compile(tiny)
    compiled(x, y)
    plain_t = best_of(lambda: tiny(x, y))
    comp_t = best_of(lambda: compiled(x, y))
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)
    numpy_t = best_of(lambda: a + b)
    print(f"1-element add: numpy {numpy_t * 1e6:.2f} us, dynjit eager {plain_t * 1e6:.2f} us, "
          f"compiled {comp_t * 1e6:.2f} us -> hit overhead {(comp_t - plain_t) * 1e6:.2f} us")

    latencies = []
    for _ in range(5):
        dynjit.reset()
        fresh = dynjit.compile(lambda p, q: ((p * q).sin() + p).relu().sum())
        t0 = time.perf_counter()
        fresh(x, y)
        latencies.append(time.perf_counter() - t0)
    print(f"compile latency (5 ops, first call): {min(latencies) * 1e3:.2f} ms")

    # the check every generated code object passes (frontend/bytecode_check.py), on a long function
    from dynjit.frontend.bytecode_check import verify
    src = "def big(a, b, c):\n    acc = []\n" + "".join(
        f"    v{i} = a.m{i}(b, {i}) if c else [y + {i} for y in b]\n    if v{i} is None: acc.append(v{i})\n"
        for i in range(25)) + "    return acc\n"
    big = compile(src, "<big>", "exec").co_consts[0]
    n_instr = sum(1 for _ in big.co_code[::2])
    verify_t = best_of(lambda: verify(big), repeat=5, number=20)
    print(f"bytecode verify: {verify_t * 1e3:.2f} ms for a {n_instr}-instruction function "
          f"({verify_t / min(latencies):.2f}x the 5-op compile latency)")

    dynjit.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    inp = dynjit.randn(32, 64)
    cmlp = dynjit.compile(mlp_forward)
    cmlp(model, inp)
    w1, b1 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    w2, b2 = model[2].weight.detach().numpy(), model[2].bias.detach().numpy()
    xn = inp.numpy()
    np_t = best_of(lambda: np.maximum(np.maximum(xn @ w1.T + b1, 0) @ w2.T + b2, 0).sum(), number=500)
    eager_t = best_of(lambda: mlp_forward(model, inp), number=500)
    comp_t = best_of(lambda: cmlp(model, inp), number=500)
    print(f"MLP 64-128-10 forward, batch 32: numpy {np_t * 1e6:.1f} us, dynjit eager {eager_t * 1e6:.1f} us "
          f"({eager_t / np_t:.2f}x numpy), compiled eager-backend {comp_t * 1e6:.1f} us ({comp_t / np_t:.2f}x numpy)")


if __name__ == "__main__":
    main()
