"""`dynjit bench`: a quick table of a few workloads run with numpy, dynjit eager and
dynjit compiled with the llvm backend, timed in one run (best of several), as ratios to
numpy. The full benchmarks (numexpr, numba, torch, plots) are in benchmarks/."""
import time

import numpy as np

import dynjit


def _best(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _expr_np(a, b, c):
    return np.exp(np.sin(a * b + c) * 0.5) - a * c


def _expr(a, b, c):
    return ((a * b + c).sin() * 0.5).exp() - a * c


def _softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax(x):
    return dynjit.softmax(x, dim=1)


def _dot_sum(a, b):
    return (a * b).sum()


def workloads(size):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(size, dtype=np.float32) for _ in range(3))
    rows = max(1, size // 1024)
    m = rng.standard_normal((rows, 1024), dtype=np.float32)
    ta, tb, tc, tm = (dynjit.from_numpy(v) for v in (a, b, c, m))
    return [
        (f"((a*b + c).sin() * 0.5).exp() - a*c, {size:.0e} float32",
         lambda: _expr_np(a, b, c), _expr, (ta, tb, tc)),
        (f"softmax over rows, {rows}x1024", lambda: _softmax_np(m), _softmax, (tm,)),
        (f"(a*b).sum(), {size:.0e} float32", lambda: (a * b).sum(), _dot_sum, (ta, tb)),
    ]


def run(size=1_000_000, repeat=5, backend="llvm", out=print):
    out(f"{'workload':48} {'numpy':>10} {'eager':>10} {backend:>10}  {backend} vs numpy")
    for name, numpy_fn, fn, args in workloads(size):
        compiled = dynjit.compile(fn, backend=backend)
        t_np = _best(numpy_fn, repeat)
        t_eager = _best(lambda: fn(*args), repeat)
        t_comp = _best(lambda: compiled(*args), repeat)
        out(f"{name:48} {t_np * 1e3:8.2f}ms {t_eager * 1e3:8.2f}ms {t_comp * 1e3:8.2f}ms  "
            f"{t_np / t_comp:5.2f}x")
