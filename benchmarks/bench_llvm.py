"""Benchmarks of the llvm backend against numpy, numexpr and numba.

    python benchmarks/bench_llvm.py [--quick] [--ulp]

1. `((a*b + c).sin() * 0.5).exp() - a*c` on 1e6 and 1e7 float32 elements:
   numpy eager, numexpr, numba (parallel prange loop), dynjit eager, llvm; and
   the memory-bandwidth floor (3 arrays read + 1 written, at the bandwidth
   np.copyto measures).
2. Row softmax of a 4096 x 1024 float32 matrix, `(a*b).sum()` on 1e7 elements.
3. An MLP training step (batch 64, 784 -> 256 -> 10, cross entropy written with
   log_softmax) compiled with the llvm backend (AOT: forward and backward
   kernels) against dynjit eager.
Times are the best of several runs; ratios are numpy (or eager) time / llvm time.
`--ulp` also prints the float32 math library's error in ulps.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dynjit                                    # noqa: E402
from dynjit.fx import make_fx                   # noqa: E402

from backends.llvm import compile_graph         # noqa: E402


def best_time(fn, repeat=7, min_time=0.2):
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeat or (time.perf_counter() - start < min_time and len(times) < 1000):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def copy_bandwidth(nbytes=400_000_000):
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    t = best_time(lambda: np.copyto(dst, src), repeat=5)
    return 2 * nbytes / t        # bytes read + written per second


def fmt(t):
    return f"{t * 1e3:9.2f} ms" if t >= 1e-3 else f"{t * 1e6:9.1f} us"


def table(title, rows, base):
    print(f"\n{title}")
    print(f"  {'':28s} {'time':>12s}  {'speed vs ' + base:>16s}")
    ref = dict(rows)[base]
    for name, t in rows:
        if t is None:
            print(f"  {name:28s} {'n/a':>12s}")
            continue
        print(f"  {name:28s} {fmt(t):>12s}  {ref / t:15.2f}x")


def expr_numpy(a, b, c):
    return np.exp(np.sin(a * b + c) * np.float32(0.5)) - a * c


def expr_dynjit(a, b, c):
    return ((a * b + c).sin() * 0.5).exp() - a * c


def numba_expr():
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(parallel=True, cache=False)
    def f(a, b, c, out):
        for i in numba.prange(a.shape[0]):
            out[i] = np.exp(np.sin(a[i] * b[i] + c[i]) * np.float32(0.5)) - a[i] * c[i]
    return f


def bench_expression(n, bandwidth, numba_fn):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ta, tb, tc = (dynjit.tensor(x) for x in (a, b, c))
    fn = compile_graph(make_fx(expr_dynjit)(ta, tb, tc), [ta, tb, tc])
    np.testing.assert_allclose(fn(ta, tb, tc).numpy(), expr_numpy(a, b, c), rtol=1e-5, atol=1e-5)
    rows = [("numpy eager", best_time(lambda: expr_numpy(a, b, c)))]
    try:
        import numexpr
        env = {"a": a, "b": b, "c": c}
        rows.append((f"numexpr ({numexpr.get_num_threads()} threads)",
                     best_time(lambda: numexpr.evaluate("exp(sin(a*b + c) * 0.5) - a*c", local_dict=env))))
    except ImportError:
        rows.append(("numexpr", None))
    if numba_fn is not None:
        out = np.empty_like(a)
        rows.append(("numba parallel", best_time(lambda: numba_fn(a, b, c, out))))
    else:
        rows.append(("numba", None))
    rows.append(("dynjit eager", best_time(lambda: expr_dynjit(ta, tb, tc), repeat=3)))
    rows.append(("llvm backend", best_time(lambda: fn(ta, tb, tc))))
    rows.append(("memory-bandwidth floor", 4 * 4 * n / bandwidth))
    table(f"((a*b + c).sin() * 0.5).exp() - a*c   n = {n:.0e} float32", rows, "numpy eager")
    return rows


def bench_softmax():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4096, 1024)).astype(np.float32)

    def np_softmax(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    t = dynjit.tensor(x)
    fn = compile_graph(make_fx(lambda t: t.softmax(1))(t), [t])
    np.testing.assert_allclose(fn(t).numpy(), np_softmax(x), rtol=1e-5, atol=1e-7)
    rows = [("numpy eager", best_time(lambda: np_softmax(x))),
            ("dynjit eager", best_time(lambda: t.softmax(1))),
            ("llvm backend", best_time(lambda: fn(t)))]
    table("row softmax 4096 x 1024 float32", rows, "numpy eager")
    return rows


def bench_dot_sum(n=10_000_000):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    ta, tb = dynjit.tensor(a), dynjit.tensor(b)
    fn = compile_graph(make_fx(lambda x, y: (x * y).sum())(ta, tb), [ta, tb])
    ref = np.dot(a.astype(np.float64), b.astype(np.float64))
    assert abs(fn(ta, tb).item() - ref) <= 1e-5 * np.abs(a * b).sum()
    rows = [("numpy eager (a*b).sum()", best_time(lambda: (a * b).sum())),
            ("llvm backend", best_time(lambda: fn(ta, tb)))]
    table(f"(a*b).sum()   n = {n:.0e} float32", rows, "numpy eager (a*b).sum()")
    return rows


def mlp_step(x, y, w1, b1, w2, b2):
    h = (x @ w1.t() + b1).relu()
    logits = h @ w2.t() + b2
    return -(logits.log_softmax(1) * y).sum() / x.shape[0]


def bench_mlp():
    dynjit.manual_seed(0)
    x = dynjit.randn(64, 784)
    y = dynjit.tensor(np.eye(10, dtype=np.float32)[np.arange(64) % 10])
    params = [(dynjit.randn(256, 784) * 0.05).requires_grad_(), dynjit.zeros(256).requires_grad_(),
              (dynjit.randn(10, 256) * 0.05).requires_grad_(), dynjit.zeros(10).requires_grad_()]
    step = dynjit.compile(mlp_step, backend="llvm")

    def run(f):
        def go():
            for p in params:
                p.grad = None
            f(x, y, *params).backward()
        return go
    rows = [("dynjit eager", best_time(run(mlp_step))), ("llvm backend (AOT)", best_time(run(step)))]
    table("MLP training step (64 x 784 -> 256 -> 10, forward + backward)", rows, "dynjit eager")
    return rows


def ulp_report():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "llvm"))
    import test_mathlib as T
    print("\nfloat32 math: max ulp error (vs float64 rounded, vs numpy float32)")
    for name in sorted(T.CASES):
        ref_fn, x = T.CASES[name]
        x = np.concatenate([x, T.SPECIALS])
        out = T.run(name, x)
        with np.errstate(all="ignore"):
            rounded = (T.sigmoid64(x.astype(np.float64)) if name == "sigmoid"
                       else ref_fn(x.astype(np.float64))).astype(np.float32)
            numpy32 = rounded if name == "sigmoid" else ref_fn(x)
        print(f"  {name:8s} {T.ulp_distance(out, rounded).max():3d} {T.ulp_distance(out, numpy32).max():3d}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only n = 1e6 and no 1e7 runs")
    parser.add_argument("--ulp", action="store_true", help="also print the math library's ulp errors")
    args = parser.parse_args()
    from backends.llvm.threads import num_threads
    bw = copy_bandwidth(40_000_000 if args.quick else 400_000_000)
    print(f"threads: {num_threads()}   copy bandwidth (read + write): {bw / 1e9:.1f} GB/s")
    numba_fn = numba_expr()
    for n in ((10 ** 6,) if args.quick else (10 ** 6, 10 ** 7)):
        bench_expression(n, bw, numba_fn)
    bench_softmax()
    bench_dot_sum(10 ** 6 if args.quick else 10 ** 7)
    bench_mlp()
    if args.ulp:
        ulp_report()


if __name__ == "__main__":
    main()
