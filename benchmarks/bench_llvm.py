"""Benchmarks of the llvm backend against numpy, numexpr, numba and (optionally) torch.

    python benchmarks/bench_llvm.py [--quick] [--torch-python PY] [--json OUT] [--plot OUT.png] [--ulp]
    python benchmarks/bench_llvm.py --replot RESULTS.json --plot OUT.png
    python benchmarks/bench_llvm.py --markdown RESULTS.json

1. `((a*b + c).sin() * 0.5).exp() - a*c` on 1e6 and 1e7 float32 elements:
   numpy eager, numexpr, numba (parallel prange loop), dynjit eager, llvm;
   torch eager and inductor when a torch interpreter is given; and the
   memory-bandwidth floor (3 arrays read + 1 written, at the bandwidth
   np.copyto measures).
2. Row softmax of a 4096 x 1024 float32 matrix, `(a*b).sum()` on 1e7 elements.
3. An MLP training step (batch 64, 784 -> 256 -> 10, cross entropy written with
   log_softmax): `dynjit.compile(step, backend="llvm")` (AOT: forward and
   backward kernels) against dynjit eager and torch eager.
4. The cost of one call of a compiled one-kernel graph on 8 elements, against
   the bare ctypes call of its kernel.

The machine may be shared, so the candidates of one table are timed
round-robin (one call each, repeated), and a table's ratios come from the
same rounds. Reported: the best and the median time; ratios use the best.
torch runs in its own interpreter (`--torch-python`, e.g. a separate venv
with torch installed; torch is never a dependency of dynjit), driven by
benchmarks/llvm_torch_worker.py and timed in a block of as many calls right
after the round-robin ones.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dynjit                                    # noqa: E402
from dynjit.fx import make_fx                   # noqa: E402

from backends.llvm import compile_graph         # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


# -- timing --------------------------------------------------------------------------
def local(fn):
    """A candidate timed in this process: returns the seconds of one call."""
    def run():
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    return run


def interleaved(candidates, budget=3.0, min_rounds=5, max_rounds=200):
    """{name: (best, median)} over rounds of one call per candidate, in turn.

    Candidates in another process (torch) are timed in one block of as many
    calls right after the rounds: interleaving them with this process's calls
    would let each side's idle-spinning thread pools (OpenMP, OpenBLAS) eat
    the other's CPU time on a 2-core machine."""
    here = [(name, run) for name, run in candidates if not hasattr(run, "batch")]
    remote = [(name, run) for name, run in candidates if hasattr(run, "batch")]
    for _, run in here:
        run()                                   # warm up (first-touch, caches)
    one_round = sum(run() for _, run in candidates)
    rounds = int(min(max_rounds, max(min_rounds, budget / max(one_round, 1e-9))))
    times = {name: [] for name, _ in candidates}
    for _ in range(rounds):
        for name, run in here:
            times[name].append(run())
    for name, run in remote:
        times[name] = run.batch(rounds)
    return {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}


class TorchWorker:
    """benchmarks/llvm_torch_worker.py in another interpreter, one JSON line per request."""

    def __init__(self, python):
        self.proc = subprocess.Popen([python, os.path.join(HERE, "llvm_torch_worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.info = self.ask(cmd="info")

    def ask(self, **msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the torch worker exited (see its error above)")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def candidate(self, case, mode, n=None):
        name = f"{case}-{mode}-{n}"
        self.ask(cmd="setup", name=name, case=case, mode=mode, n=n)

        def run():
            return self.ask(cmd="run", name=name)["seconds"][0]
        run.batch = lambda repeat: self.ask(cmd="run", name=name, repeat=repeat)["seconds"]
        return run

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# -- report ----------------------------------------------------------------------------
def fmt(t):
    return f"{t * 1e3:9.2f} ms" if t >= 1e-3 else f"{t * 1e6:9.1f} us"


def section(title, base, timed, extra=()):
    """A table: rows (name, best, median) with the speed of each against `base`."""
    rows = [(name, best, med) for name, (best, med) in timed.items()] + list(extra)
    ref = dict((name, best) for name, best, _ in rows)[base]
    print(f"\n{title}")
    print(f"  {'':30s} {'best':>12s} {'median':>12s}  {'speed vs ' + base:>18s}")
    for name, best, med in rows:
        med_s = fmt(med) if med is not None else "(computed)"
        print(f"  {name:30s} {fmt(best):>12s} {med_s:>12s}  {ref / best:17.2f}x")
    return {"title": title, "base": base, "rows": rows}


# -- the cases -------------------------------------------------------------------------
def copy_bandwidth(nbytes):
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    best, _ = interleaved([("copy", local(lambda: np.copyto(dst, src)))], budget=1.0)["copy"]
    return 2 * nbytes / best        # bytes read + written per second


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


def bench_expression(n, bandwidth, numba_fn, torch_worker, budget):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ta, tb, tc = (dynjit.tensor(x) for x in (a, b, c))
    fn = compile_graph(make_fx(expr_dynjit)(ta, tb, tc), [ta, tb, tc])
    np.testing.assert_allclose(fn(ta, tb, tc).numpy(), expr_numpy(a, b, c), rtol=1e-5, atol=1e-5)
    cands = [("numpy eager", local(lambda: expr_numpy(a, b, c)))]
    try:
        import numexpr
        env = {"a": a, "b": b, "c": c}
        cands.append((f"numexpr ({numexpr.get_num_threads()} threads)",
                      local(lambda: numexpr.evaluate("exp(sin(a*b + c) * 0.5) - a*c", local_dict=env))))
    except ImportError:
        pass
    if numba_fn is not None:
        out = np.empty_like(a)
        numba_fn(a, b, c, out)
        cands.append(("numba parallel", local(lambda: numba_fn(a, b, c, out))))
    if torch_worker is not None:
        cands.append(("torch eager", torch_worker.candidate("expr", "eager", n)))
        cands.append(("torch inductor", torch_worker.candidate("expr", "inductor", n)))
    cands.append(("dynjit eager", local(lambda: expr_dynjit(ta, tb, tc))))
    cands.append(("llvm backend", local(lambda: fn(ta, tb, tc))))
    floor = 4 * 4 * n / bandwidth
    return section(f"((a*b + c).sin() * 0.5).exp() - a*c   n = {n:.0e} float32", "numpy eager",
                   interleaved(cands, budget), extra=[("memory-bandwidth floor", floor, None)])


def bench_softmax(torch_worker, budget):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4096, 1024)).astype(np.float32)

    def np_softmax(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    t = dynjit.tensor(x)
    fn = compile_graph(make_fx(lambda t: t.softmax(1))(t), [t])
    np.testing.assert_allclose(fn(t).numpy(), np_softmax(x), rtol=1e-5, atol=1e-7)
    cands = [("numpy eager", local(lambda: np_softmax(x)))]
    if torch_worker is not None:
        cands.append(("torch eager", torch_worker.candidate("softmax", "eager")))
        cands.append(("torch inductor", torch_worker.candidate("softmax", "inductor")))
    cands += [("dynjit eager", local(lambda: t.softmax(1))), ("llvm backend", local(lambda: fn(t)))]
    return section("row softmax 4096 x 1024 float32", "numpy eager", interleaved(cands, budget))


def bench_dot_sum(n, torch_worker, budget):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    ta, tb = dynjit.tensor(a), dynjit.tensor(b)
    fn = compile_graph(make_fx(lambda x, y: (x * y).sum())(ta, tb), [ta, tb])
    ref = np.dot(a.astype(np.float64), b.astype(np.float64))
    assert abs(fn(ta, tb).item() - ref) <= 1e-5 * np.abs(a * b).sum()
    cands = [("numpy eager", local(lambda: (a * b).sum())), ("numpy dot (BLAS)", local(lambda: np.dot(a, b)))]
    if torch_worker is not None:
        cands.append(("torch eager", torch_worker.candidate("dot_sum", "eager", n)))
        cands.append(("torch inductor", torch_worker.candidate("dot_sum", "inductor", n)))
    cands.append(("llvm backend", local(lambda: fn(ta, tb))))
    return section(f"(a*b).sum()   n = {n:.0e} float32", "numpy eager", interleaved(cands, budget))


def mlp_step(x, y, w1, b1, w2, b2):
    h = (x @ w1.t() + b1).relu()
    logits = h @ w2.t() + b2
    return -(logits.log_softmax(1) * y).sum() / x.shape[0]


def bench_mlp(torch_worker, budget):
    rng = np.random.default_rng(3)
    x = dynjit.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = dynjit.tensor(np.eye(10, dtype=np.float32)[np.arange(64) % 10])
    params = [dynjit.tensor((rng.standard_normal((256, 784)) * 0.05).astype(np.float32)), dynjit.zeros(256),
              dynjit.tensor((rng.standard_normal((10, 256)) * 0.05).astype(np.float32)), dynjit.zeros(10)]
    for p in params:
        p.requires_grad_()
    step = dynjit.compile(mlp_step, backend="llvm")

    def run(f):
        def go():
            for p in params:
                p.grad = None
            f(x, y, *params).backward()
        return go
    run(step)()
    compiled_grads = [p.grad.numpy().copy() for p in params]
    run(mlp_step)()
    for g, p in zip(compiled_grads, params):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-6)
    cands = [("dynjit eager", local(run(mlp_step)))]
    if torch_worker is not None:
        cands.append(("torch eager", torch_worker.candidate("mlp", "eager")))
    cands.append(("llvm backend (AOT)", local(run(step))))
    return section("MLP training step (64 x 784 -> 256 -> 10, forward + backward)", "dynjit eager",
                   interleaved(cands, budget))


def bench_call_cost(budget):
    """One call of a compiled graph on 8 elements: guards, allocation, ctypes call, Tensor wrap."""
    a = dynjit.randn(8)
    fn = compile_graph(make_fx(lambda a: (a * 2).exp() + 1)(a), [a])
    kernel, sizes = fn.__globals__["_k0"], fn.__globals__["_sz0"]
    data, out = a._data, np.empty(8, np.float32)

    def many(f, k=1000):
        def go():
            for _ in range(k):
                f()
        return go
    timed = interleaved([("llvm compiled call", local(many(lambda: fn(a)))),
                         ("bare ctypes kernel call", local(many(lambda: kernel(data, out, sizes, 0, 8, 0)))),
                         ("dynjit eager (3 ops)", local(many(lambda: (a * 2).exp() + 1))),
                         ("numpy (3 ops)", local(many(lambda: np.exp(data * 2) + 1)))], budget)
    timed = {name: (best / 1000, med / 1000) for name, (best, med) in timed.items()}
    return section("call cost of a one-kernel graph, 8 float32 elements (per call)", "llvm compiled call", timed)


def markdown(results):
    """The tables as Markdown (for docs/llvm.md)."""
    h = results["header"]
    lines = [f"{h['threads']} threads, copy bandwidth {h['copy_bandwidth_GBps']:.1f} GB/s, numpy {h['numpy']}"
             + (f", torch {h['torch']}" if h.get("torch") else "") + "; ratios use the best times.", ""]
    for sec in results["sections"]:
        ref = next(best for name, best, _ in sec["rows"] if name == sec["base"])
        lines += [f"**{sec['title'].strip()}**", "",
                  f"| | best | median | speed vs {sec['base']} |", "| --- | --- | --- | --- |"]
        for name, best, med in sec["rows"]:
            med_s = fmt(med).strip() if med is not None else "(computed)"
            lines.append(f"| {name} | {fmt(best).strip()} | {med_s} | {ref / best:.2f}x |")
        lines.append("")
    return "\n".join(lines)


def ulp_report():
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "llvm"))
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
    parser.add_argument("--quick", action="store_true", help="only n = 1e6, short timing budgets")
    parser.add_argument("--torch-python", default=os.environ.get("DYNJIT_BENCH_TORCH_PYTHON"),
                        help="a Python interpreter with torch installed (also $DYNJIT_BENCH_TORCH_PYTHON)")
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--plot", help="draw the results into this image (matplotlib)")
    parser.add_argument("--replot", metavar="RESULTS.json", help="only draw --plot from saved results")
    parser.add_argument("--markdown", metavar="RESULTS.json", help="only print saved results as Markdown tables")
    parser.add_argument("--ulp", action="store_true", help="also print the math library's ulp errors")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    if args.markdown:
        with open(args.markdown) as f:
            print(markdown(json.load(f)))
        return
    if args.replot:
        from llvm_plot import plot
        with open(args.replot) as f:
            plot(json.load(f), args.plot or "llvm_bench.png")
        return
    from backends.llvm.threads import num_threads
    budget = 1.0 if args.quick else 4.0
    bw = copy_bandwidth(40_000_000 if args.quick else 400_000_000)
    worker = TorchWorker(args.torch_python) if args.torch_python else None
    header = {"threads": num_threads(), "copy_bandwidth_GBps": bw / 1e9, "numpy": np.__version__,
              "torch": worker.info["torch"] if worker else None}
    print(f"threads: {header['threads']}   copy bandwidth (read + write): {bw / 1e9:.1f} GB/s   "
          f"numpy {np.__version__}" + (f"   torch {header['torch']}" if worker else ""))
    numba_fn = numba_expr()
    sections = []
    try:
        for n in ((10 ** 6,) if args.quick else (10 ** 6, 10 ** 7)):
            sections.append(bench_expression(n, bw, numba_fn, worker, budget))
        sections.append(bench_softmax(worker, budget))
        sections.append(bench_dot_sum(10 ** 6 if args.quick else 10 ** 7, worker, budget))
        sections.append(bench_mlp(worker, budget))
        sections.append(bench_call_cost(budget / 4))
    finally:
        if worker is not None:
            worker.close()
    results = {"header": header, "sections": sections}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        from llvm_plot import plot
        plot(results, args.plot)
        print(f"\nplot written to {args.plot}")
    if args.ulp:
        ulp_report()


if __name__ == "__main__":
    main()
