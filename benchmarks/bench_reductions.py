"""Row reductions fused with their consumers: the llvm backend against numpy, numexpr,
numba and torch eager / inductor, at 1 thread and at all cores.

    python benchmarks/bench_reductions.py [--torch-python PY] [--threads 1,16] [--json OUT] [--budget S]
                                          [--cases softmax,...] [--shapes 64x100,4096x1024,...]

Workloads (float32): row softmax, log_softmax and layernorm (F.layer_norm), RMSnorm written
out, each on 4096 x 1024, and log_softmax + nll_loss (cross-entropy) on 4096 x 1000; or at
each of `--shapes` (rows x columns: short rows such as 64 x 100 end with a partial vector).
numexpr (pointwise parts; reductions in numpy) and numba (a row loop, `prange`
over rows) run when installed; torch runs in its own interpreter
(`--torch-python`, see benchmarks/llvm_torch_worker.py), never as a dependency.
Every candidate sees the same inputs (benchmarks/llvm_row_inputs.py). Times are
the best and the median over interleaved rounds (bench_llvm.interleaved); the
table prints each candidate's time as a ratio to the llvm backend's at the same
thread count (above 1: the llvm backend is faster).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import dynjit                                    # noqa: E402
import dynjit.nn.functional as F                # noqa: E402
from dynjit.fx import make_fx                   # noqa: E402

from backends.llvm import compile_graph         # noqa: E402
from bench_llvm import TorchWorker, fmt, interleaved, local   # noqa: E402
from llvm_row_inputs import CE_SHAPE, SHAPE, row_inputs          # noqa: E402

CASES = ("softmax", "layernorm", "rmsnorm", "cross_entropy")
MORE_CASES = ("log_softmax",)


# -- the workloads, once per library ---------------------------------------------------------
def dj_softmax(x):
    return x.softmax(1)


def dj_log_softmax(x):
    return x.log_softmax(1)


def dj_layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def dj_rmsnorm(x, w):
    return x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w


def dj_cross_entropy(x, t):
    return F.nll_loss(x.log_softmax(1), t)


DYNJIT = {"softmax": dj_softmax, "log_softmax": dj_log_softmax, "layernorm": dj_layernorm, "rmsnorm": dj_rmsnorm, "cross_entropy": dj_cross_entropy}


def np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def np_log_softmax(x):
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def np_layernorm(x, w, b):
    m = x.mean(1, keepdims=True)
    return (x - m) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b


def np_rmsnorm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def np_cross_entropy(x, t):
    m = x.max(1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(1)) + m[:, 0]
    return np.mean(lse - x[np.arange(len(t)), t])


NUMPY = {"softmax": np_softmax, "log_softmax": np_log_softmax, "layernorm": np_layernorm, "rmsnorm": np_rmsnorm, "cross_entropy": np_cross_entropy}


def numexpr_versions():
    try:
        import numexpr as ne
    except ImportError:
        return None

    def softmax(x):
        e = ne.evaluate("exp(x - m)", local_dict={"x": x, "m": x.max(1, keepdims=True)})
        return ne.evaluate("e / s", local_dict={"e": e, "s": e.sum(1, keepdims=True)})

    def log_softmax(x):
        m = x.max(1, keepdims=True)
        s = ne.evaluate("exp(x - m)").sum(1, keepdims=True)
        return ne.evaluate("x - m - log(s)")

    def layernorm(x, w, b):
        m = x.mean(1, keepdims=True)
        v = x.var(1, keepdims=True)
        return ne.evaluate("(x - m) / sqrt(v + 1e-5) * w + b")

    def rmsnorm(x, w):
        ms = ne.evaluate("x * x").mean(-1, keepdims=True)
        return ne.evaluate("x / sqrt(ms + 1e-6) * w")

    def cross_entropy(x, t):
        m = x.max(1, keepdims=True)
        lse = np.log(ne.evaluate("exp(x - m)").sum(1)) + m[:, 0]
        return np.mean(lse - x[np.arange(len(t)), t])
    return {"softmax": softmax, "log_softmax": log_softmax, "layernorm": layernorm, "rmsnorm": rmsnorm,
            "cross_entropy": cross_entropy}, ne


def numba_versions():
    try:
        import numba
    except ImportError:
        return None
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=False)
    def softmax(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            m = x[i].max()
            s = np.float32(0)
            for j in range(x.shape[1]):
                e = np.exp(x[i, j] - m)
                out[i, j] = e
                s += e
            out[i] /= s
        return out

    @njit(parallel=True)
    def log_softmax(x):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            m = x[i].max()
            s = np.float32(0)
            for j in range(x.shape[1]):
                s += np.exp(x[i, j] - m)
            out[i] = x[i] - m - np.log(s)
        return out

    @njit(parallel=True)
    def layernorm(x, w, b):
        out = np.empty_like(x)
        n = x.shape[1]
        for i in prange(x.shape[0]):
            m = x[i].sum() / n
            d = x[i] - m
            r = np.float32(1) / np.sqrt((d * d).sum() / n + np.float32(1e-5))
            out[i] = d * r * w + b
        return out

    @njit(parallel=True)
    def rmsnorm(x, w):
        out = np.empty_like(x)
        n = x.shape[1]
        for i in prange(x.shape[0]):
            out[i] = x[i] / np.sqrt((x[i] * x[i]).sum() / n + np.float32(1e-6)) * w
        return out

    @njit(parallel=True)
    def cross_entropy(x, t):
        loss = np.empty(x.shape[0], np.float32)
        for i in prange(x.shape[0]):
            m = x[i].max()
            loss[i] = np.log(np.exp(x[i] - m).sum()) + m - x[i, t[i]]
        return loss.mean()
    return {"softmax": softmax, "log_softmax": log_softmax, "layernorm": layernorm, "rmsnorm": rmsnorm,
            "cross_entropy": cross_entropy}, numba


def compiled(case, args, threads):
    """The llvm backend's function for `case`, compiled for `threads` threads."""
    old = os.environ.get("DYNJIT_NUM_THREADS")
    os.environ["DYNJIT_NUM_THREADS"] = str(threads)
    try:
        gm = make_fx(DYNJIT[case])(*args)
        return compile_graph(gm, list(args))
    finally:
        if old is None:
            del os.environ["DYNJIT_NUM_THREADS"]
        else:
            os.environ["DYNJIT_NUM_THREADS"] = old


def check(case, out, ref):
    out = np.asarray(out._data if hasattr(out, "_data") else out, np.float64)
    if not np.allclose(out, ref, rtol=1e-4, atol=1e-5):
        raise AssertionError(f"{case}: result differs from numpy's by {np.abs(out - ref).max()}")


def bench_case(case, threads, torch_worker, budget, ne, nb, shape=None):
    arrays = row_inputs(case, shape)
    tensors = [dynjit.tensor(a) for a in arrays]
    fn = compiled(case, tensors, threads)
    ref = np.asarray(NUMPY[case](*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]))
    check(case, fn(*tensors), ref)
    cands = [("llvm backend", local(lambda: fn(*tensors))), ("numpy", local(lambda: NUMPY[case](*arrays)))]
    if ne is not None:
        versions, mod = ne
        mod.set_num_threads(threads)
        check(case, versions[case](*arrays), ref)
        cands.append(("numexpr", local(lambda: versions[case](*arrays))))
    if nb is not None:
        versions, mod = nb
        mod.set_num_threads(min(threads, mod.config.NUMBA_NUM_THREADS))
        check(case, versions[case](*arrays), ref)
        cands.append(("numba", local(lambda: versions[case](*arrays))))
    if torch_worker is not None:
        torch_worker.ask(cmd="threads", n=threads)
        n = list(shape) if shape is not None else None
        cands.append(("torch eager", torch_worker.candidate(case, "eager", n)))
        cands.append(("torch inductor", torch_worker.candidate(case, "inductor", n)))
    return interleaved(cands, budget=budget)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch-python", help="an interpreter with torch, for torch eager / inductor")
    ap.add_argument("--threads", default=f"1,{os.cpu_count() or 1}", help="thread counts, comma-separated")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per table")
    ap.add_argument("--cases", default=",".join(CASES), help="of " + ", ".join(CASES + MORE_CASES))
    ap.add_argument("--shapes", default=None, help="rows x columns, comma-separated (default: the fixed shapes)")
    ap.add_argument("--json", help="write the results here")
    opts = ap.parse_args()
    threads = [int(t) for t in opts.threads.split(",")]
    torch_worker = TorchWorker(opts.torch_python) if opts.torch_python else None
    ne, nb = numexpr_versions(), numba_versions()
    results = {"threads": threads, "cpu_count": os.cpu_count(), "numpy": np.__version__,
               "torch": torch_worker.info["torch"] if torch_worker else None, "tables": []}
    shapes = ([tuple(int(v) for v in s.split("x")) for s in opts.shapes.split(",")] if opts.shapes else [None])
    try:
        for case, shape in [(c, sh) for c in opts.cases.split(",") for sh in shapes]:
            for t in threads:
                timed = bench_case(case, t, torch_worker, opts.budget, ne, nb, shape)
                size = shape_name(case, shape)
                results["tables"].append({"case": case, "shape": size, "threads": t, "times": timed})
                base = timed["llvm backend"][0]
                print(f"\n{case}  ({size} float32, {t} thread{'s' if t > 1 else ''})")
                print(f"  {'':16s} {'best':>12s} {'median':>12s}  {'time / llvm':>12s}")
                for name, (best, med) in timed.items():
                    print(f"  {name:16s} {fmt(best):>12s} {fmt(med):>12s}  {best / base:11.2f}x")
    finally:
        if torch_worker is not None:
            torch_worker.close()
    print("\n" + markdown(results))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)


def shape_name(case, shape):
    if shape is None:
        shape = CE_SHAPE if case == "cross_entropy" else SHAPE
    return f"{shape[0]} x {shape[1]}"


def markdown(results):
    """One table: a row per workload and thread count, best times, and each peer's time over
    the llvm backend's."""
    names = []
    for t in results["tables"]:
        names += [n for n in t["times"] if n not in names]
    head = "| workload | shape | threads | " + " | ".join(names) + " | " + " | ".join(
        f"{n} / llvm" for n in names if n != "llvm backend") + " |"
    lines = [head, "|" + " --- |" * (3 + 2 * len(names) - 1)]
    for t in results["tables"]:
        times = t["times"]
        base = times["llvm backend"][0]
        cells = [fmt(times[n][0]).strip() if n in times else "" for n in names]
        ratios = [f"{times[n][0] / base:.2f}" if n in times else "" for n in names if n != "llvm backend"]
        lines.append(f"| {t['case']} | {t.get('shape', '')} | {t['threads']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
