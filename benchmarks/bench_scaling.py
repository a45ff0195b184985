"""Thread scaling of the llvm backend: the pointwise chain and row softmax at each thread count.

    python benchmarks/bench_scaling.py [--threads 1,2,4,8,16] [--calls 15]

`((a*b + c).sin() * 0.5).exp() - a*c` on 1e7 float32 elements and row softmax on
4096 x 1024 float32, each compiled once per thread count (DYNJIT_NUM_THREADS is read
when a graph is compiled), best of `--calls` calls after a warm-up, checked against
the 1-thread result. Prints a markdown table, one row per workload.
(The training step's scaling: benchmarks/bench_train_step.py --threads N, one process
per count, since BLAS reads its thread count once.)
"""
import argparse
import os
import sys
import time


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--calls", type=int, default=15)
    args = p.parse_args(argv)
    counts = [int(t) for t in args.threads.split(",")]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import numpy as np
    import dynjit
    from dynjit.fx import make_fx
    from backends.llvm import compile_graph

    rng = np.random.default_rng(0)
    a, b, c = (dynjit.tensor(rng.standard_normal(10_000_000).astype(np.float32)) for _ in range(3))
    x = dynjit.tensor(rng.standard_normal((4096, 1024)).astype(np.float32))
    workloads = {
        "`((a*b + c).sin() * 0.5).exp() - a*c`, 1e7": (lambda a, b, c: ((a * b + c).sin() * 0.5).exp() - a * c,
                                                       [a, b, c]),
        "softmax 4096 x 1024": (lambda x: x.softmax(1), [x]),
    }
    rows = {}
    for name, (f, inputs) in workloads.items():
        gm = make_fx(f)(*inputs)
        ref = None
        for n in counts:
            os.environ["DYNJIT_NUM_THREADS"] = str(n)
            fn = compile_graph(gm, inputs)
            out = fn(*inputs)._data
            if ref is None:
                ref = out.copy()
            np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7)
            best = float("inf")
            for _ in range(args.calls):
                t = time.perf_counter()
                fn(*inputs)
                best = min(best, time.perf_counter() - t)
            rows.setdefault(name, []).append(best)
            del out
    print("| workload | " + " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in counts) + " |")
    print("| --- |" + " --- |" * len(counts))
    for name, times in rows.items():
        print(f"| {name} | " + " | ".join(f"{t * 1e3:.2f} ms" for t in times) + " |")


if __name__ == "__main__":
    main()
