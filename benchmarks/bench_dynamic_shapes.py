"""Compile counts and times for 50 calls with 50 batch sizes: dynjit against torch.compile.

    python benchmarks/bench_dynamic_shapes.py [--torch-python PY] [--calls 50] [--passes 3]
                                              [--only NAME,...] [--threads 1] [--json OUT]

Each workload is called `--calls` times with batch sizes 2, 3, ..., 51 (each once, in that
order): the first pass, compiles included, is the "50 calls" time. Then `--passes` more passes
over the same sizes (every one already seen) give the steady-state time per call (the mean
over one pass, the median over passes). Workloads (float32):

- shape_fn: `x.view(x.shape[0], -1) * 2 + 1` on x of shape (b, 4, 8), a function that reads
  the batch size;
- mlp: an nn.Sequential MLP 32 -> 64 -> ReLU -> 10 called as a module (its parameters
  require grad, so compiled backends trace for training);
- attention: a transformer-style block: LayerNorm, q/k/v Linear,
  `.view(b, t, h, d).transpose(1, 2)`, softmax attention, back to (b, t, c), projection and a
  residual (t = 16, c = 32, 4 heads);
- train_step: the MLP, cross_entropy, loss.backward() and an SGD step, the whole step
  compiled.

Candidates: dynjit plain (uncompiled) and `dynjit.compile(backend=...)` for eager, aot_eager
and llvm; torch eager and `torch.compile(backend=...)` for eager and aot_eager, and inductor
with `--inductor` (its cold C++ compiles take over a minute per workload on a busy 2-core
machine), with torch's default dynamic behaviour (automatic dynamic: the first call specializes every size,
a size that changes recompiles once as dynamic). Counted per candidate:

- graphs: graphs the frontend (dynjit's or torch's dynamo) handed to the backend, counted by a
  CompileCounterWithBackend wrapping it (dynjit.testing / torch._dynamo.testing);
- traces: for dynjit, AOT autograd traces (dynjit.aot traces each graph once per new set of
  input sizes, since sizes are specialized inside AOT); for torch, AOT compilations
  (torch._dynamo.utils.counters["aot_autograd"]["total"]);
- kernels (llvm): graph lowerings (one per new exact signature) / LLVM modules compiled
  (kernels are size-generic: a new batch size lowers again but reuses compiled modules).
  The LLVM disk cache and inductor's caches point to fresh temporary folders, so
  compiles are cold;
- 50 calls: wall time of the first pass; steady: time per call afterwards, wall and CPU
  (process time: less disturbed by other processes on a shared machine; with one thread it is
  the work done).

Every candidate's outputs on the first pass (the train step: its losses) are checked
against its library's uncompiled run. torch is never a dependency: it is used when it can
be imported here, or through `--torch-python PY` (an interpreter with torch; this script runs
there as a worker that imports torch only, never dynjit). The thread count is set for numpy,
dynjit's kernels and torch before anything is imported (default 1: the numbers measure
compile and per-call overhead, not BLAS threading).
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ("shape_fn", "mlp", "attention", "train_step")
DYNJIT_BACKENDS = ("eager", "aot_eager", "llvm")
TORCH_BACKENDS = ("eager", "aot_eager")


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--torch-python", default=None, help="an interpreter with torch (run as a worker)")
    p.add_argument("--calls", type=int, default=50, help="calls in the first pass (batch sizes 2..calls+1)")
    p.add_argument("--passes", type=int, default=7, help="steady-state passes over the same sizes")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--only", default=None,
                   help="comma-separated substrings of 'workload/candidate' names to run")
    p.add_argument("--no-torch", action="store_true", help="leave torch out even when importable")
    p.add_argument("--inductor", action="store_true",
                   help="also torch.compile(backend='inductor'): its cold C++ compiles take minutes here")
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _set_threads(n):
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "DYNJIT_NUM_THREADS"):
        os.environ[var] = str(n)


# -- workloads, written once for either library (dynjit keeps PyTorch's names) -----------------
def _init_params(lib, module, seed):
    """The same deterministic weights in either library."""
    import numpy as np
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, p in sorted(module.named_parameters(), key=lambda kv: kv[0]):
            scale = 1.0 / np.sqrt(p.shape[-1])
            p.copy_(lib.tensor(rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def _mlp(lib):
    nn = lib.nn
    return _init_params(lib, nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), 0)


def _attention_block(lib, c=32, heads=4):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = heads
            self.ln = nn.LayerNorm(c)
            self.q, self.k, self.v = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
            self.proj = nn.Linear(c, c)

        def forward(self, x):
            b, t, c = x.shape
            h, d = self.heads, c // self.heads
            y = self.ln(x)
            q = self.q(y).view(b, t, h, d).transpose(1, 2)
            k = self.k(y).view(b, t, h, d).transpose(1, 2)
            v = self.v(y).view(b, t, h, d).transpose(1, 2)
            att = F.softmax((q @ k.transpose(-2, -1)) * (d ** -0.5), dim=-1)
            out = (att @ v).transpose(1, 2).reshape(b, t, c)
            return x + self.proj(out)
    return _init_params(lib, Block(), 1)


def make_workload(lib, name):
    """(function to compile, inputs for batch size b, output -> numpy)."""
    import numpy as np

    def arr(b, *shape, seed=0):
        return lib.tensor(np.random.default_rng(1000 * seed + b).standard_normal((b,) + shape).astype(np.float32))

    def out_np(t):
        return t.detach().numpy().copy()

    if name == "shape_fn":
        def shape_fn(x):
            return x.view(x.shape[0], -1) * 2 + 1
        return shape_fn, lambda b: (arr(b, 4, 8),), out_np
    if name == "mlp":
        return _mlp(lib), lambda b: (arr(b, 32),), out_np
    if name == "attention":
        return _attention_block(lib), lambda b: (arr(b, 16, 32),), out_np
    if name == "train_step":
        model = _mlp(lib)
        opt = lib.optim.SGD(model.parameters(), lr=0.05)
        F = lib.nn.functional

        def train_step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        def inputs(b):
            labels = np.random.default_rng(b).integers(0, 10, b).astype(np.int64)
            return arr(b, 32), lib.tensor(labels)
        return train_step, inputs, out_np
    raise ValueError(name)


# -- the measurement (library-neutral) ------------------------------------------------------------
def measure(lib, workload, compile_fn, calls, passes, counts=None):
    """Run the first pass (timed), then `passes` steady passes. Returns a row and the outputs."""
    fn, make_inputs, out_np = make_workload(lib, workload)
    sizes = range(2, calls + 2)
    inputs = [make_inputs(b) for b in sizes]
    compiled = compile_fn(fn)
    outs = []
    t0 = time.perf_counter()
    for args in inputs:
        outs.append(compiled(*args))
    first = time.perf_counter() - t0
    outs = [out_np(o) for o in outs]
    row = dict(counts() if counts else {})      # compile counts after the first pass
    per_call, cpu_per_call = [], []
    for _ in range(passes):
        t0, c0 = time.perf_counter(), time.process_time()
        for args in inputs:
            compiled(*args)
        per_call.append((time.perf_counter() - t0) / len(inputs))
        cpu_per_call.append((time.process_time() - c0) / len(inputs))
    after = counts() if counts else {}
    row["more_graphs"] = after.get("graphs", 0) - row.get("graphs", 0)
    row.update(first_s=first, steady_us=statistics.median(per_call) * 1e6,
               steady_cpu_us=statistics.median(cpu_per_call) * 1e6)
    return row, outs


def check_same(reference, outs, what):
    import numpy as np
    for i, (a, b) in enumerate(zip(reference, outs)):
        if a.shape != b.shape or not np.allclose(a, b, rtol=2e-4, atol=2e-5):
            raise AssertionError(f"{what}: call {i} (batch {i + 2}) differs from the uncompiled run "
                                 f"(max abs diff {np.max(np.abs(a - b)) if a.shape == b.shape else 'shape'})")


def _wanted(only, workload, candidate):
    return only is None or any(s in f"{workload}/{candidate}" for s in only)


# -- dynjit -----------------------------------------------------------------------------------------
def run_dynjit(args, only):
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import dynjit.aot.aot_autograd as aot

    tally = {"traces": 0, "lowerings": 0}
    try:
        import backends.llvm.compiler as llvm_compiler
        from backends.llvm import jit as llvm_jit
    except ImportError:
        llvm_compiler = llvm_jit = None
    with _counting(aot, "trace_function", tally, "traces"), \
            _counting(llvm_compiler, "_compile_one", tally, "lowerings"):
        return _run_dynjit(args, only, tally, llvm_jit)


@contextlib.contextmanager
def _counting(module, name, tally, key):
    """Count the calls of module.name in tally[key] (restored afterwards)."""
    if module is None:
        yield
        return
    original = getattr(module, name)

    def counted(*a, **kw):
        tally[key] += 1
        return original(*a, **kw)
    setattr(module, name, counted)
    try:
        yield
    finally:
        setattr(module, name, original)


def _run_dynjit(args, only, tally, llvm_jit):
    import dynjit
    from dynjit.testing import CompileCounterWithBackend
    from dynjit.utils import counters
    rows = []
    for workload in WORKLOADS:
        if not any(_wanted(only, workload, c) for c in ("dynjit plain",) + tuple(f"dynjit {b}" for b in DYNJIT_BACKENDS)):
            continue
        dynjit.manual_seed(0)
        reference = None
        for backend in (None,) + DYNJIT_BACKENDS:
            name = "dynjit plain" if backend is None else f"dynjit {backend}"
            if not _wanted(only, workload, name) and backend is not None:
                continue
            if backend == "llvm" and llvm_jit is None:
                continue
            dynjit.reset()
            counters.clear()
            tally.update(traces=0, lowerings=0)
            llvm_before = dict(llvm_jit.stats) if llvm_jit else {}
            counter = CompileCounterWithBackend(backend) if backend else None

            def counts():
                c = {"graphs": counter.frame_count, "breaks": sum(counters["graph_break"].values())}
                if backend in ("aot_eager", "llvm"):
                    c["traces"] = tally["traces"]
                if backend == "llvm":
                    c["kernels"] = f"{tally['lowerings']} / {llvm_jit.stats['compiled'] - llvm_before['compiled']}"
                return c
            compile_fn = (lambda f: f) if backend is None else (lambda f: dynjit.compile(f, backend=counter))
            row, outs = measure(dynjit, workload, compile_fn, args.calls, args.passes,
                                counts if backend else None)
            if reference is None:
                reference = outs
            else:
                check_same(reference, outs, f"{workload} {name}")
            row.update(workload=workload, candidate=name)
            rows.append(row)
            print(_line(row), file=sys.stderr, flush=True)
    return rows


# -- torch ------------------------------------------------------------------------------------------
def run_torch(args, only):
    import torch
    import torch._dynamo
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import counters
    torch.set_num_threads(args.threads)
    rows = []
    backends = TORCH_BACKENDS + (("inductor",) if args.inductor else ())
    for workload in WORKLOADS:
        if not any(_wanted(only, workload, c) for c in ("torch eager",) + tuple(f"torch.compile {b}" for b in backends)):
            continue
        reference = None
        for backend in (None,) + backends:
            name = "torch eager" if backend is None else f"torch.compile {backend}"
            if not _wanted(only, workload, name) and backend is not None:
                continue
            torch._dynamo.reset()
            counters.clear()
            counter = CompileCounterWithBackend(backend) if backend else None

            def counts():
                c = {"graphs": counter.frame_count,
                     "breaks": sum(counters["graph_break"].values())}
                if backend in ("aot_eager", "inductor"):
                    c["traces"] = counters["aot_autograd"]["total"]
                return c
            compile_fn = (lambda f: f) if backend is None else (lambda f: torch.compile(f, backend=counter))
            torch.manual_seed(0)
            try:
                row, outs = measure(torch, workload, compile_fn, args.calls, args.passes,
                                    counts if backend else None)
            except Exception as e:   # a torch backend that does not work here is reported, not fatal
                rows.append(dict(workload=workload, candidate=name, error=f"{type(e).__name__}: {e}"[:200]))
                continue
            if reference is None:
                reference = outs
            else:
                check_same(reference, outs, f"{workload} {name}")
            row.update(workload=workload, candidate=name)
            rows.append(row)
            print(_line(row), file=sys.stderr, flush=True)
    return rows


def _torch_importable():
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def _run_torch_worker(args):
    cmd = [args.torch_python, os.path.abspath(__file__), "--torch-worker", "--calls", str(args.calls),
           "--passes", str(args.passes), "--threads", str(args.threads)] + (["--inductor"] if args.inductor else [])
    if args.only:
        cmd += ["--only", args.only]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, env=os.environ.copy())
    return json.loads(out.stdout)


# -- the table --------------------------------------------------------------------------------------
def _line(row):
    if "error" in row:
        return f"{row['workload']:11s} {row['candidate']:24s} failed: {row['error']}"
    return (f"{row['workload']:11s} {row['candidate']:24s} graphs {row.get('graphs', '-')!s:>3} "
            f"traces {row.get('traces', '-')!s:>3} 50 calls {row['first_s']:7.2f} s "
            f"steady {row['steady_us']:8.1f} us")


def table(rows, calls):
    head = ["workload", "candidate", "graphs", "graph breaks", "backend traces", "llvm lowerings / modules",
            f"{calls} calls (s)", "steady (us/call)", "steady CPU (us/call)", "graphs after"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['candidate']} | failed: {r['error']} |" + " |" * (len(head) - 3))
            continue
        compiled = "graphs" in r
        cells = [r["workload"], r["candidate"],
                 str(r["graphs"]) if compiled else "-",
                 str(r["breaks"]) if compiled else "-",
                 str(r.get("traces", "-")), str(r.get("kernels", "-")),
                 f"{r['first_s']:.3f}", f"{r['steady_us']:.1f}", f"{r['steady_cpu_us']:.1f}",
                 str(r["more_graphs"]) if compiled else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    args = _parse(argv)
    _set_threads(args.threads)
    only = args.only.split(",") if args.only else None
    scratch = tempfile.TemporaryDirectory(prefix="bench_dynamic_shapes_")
    # cold compiles: no LLVM objects or inductor artifacts from earlier runs
    os.environ["DYNJIT_CACHE_DIR"] = os.path.join(scratch.name, "llvm")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch.name, "inductor")
    if args.torch_worker:
        json.dump(run_torch(args, only), sys.stdout)
        return
    rows = run_dynjit(args, only)
    if not args.no_torch:
        if args.torch_python:
            rows += _run_torch_worker(args)
        elif _torch_importable():
            rows += run_torch(args, only)
    order = {w: i for i, w in enumerate(WORKLOADS)}
    rows.sort(key=lambda r: order[r["workload"]])      # stable: dynjit rows, then torch rows
    print(table(rows, args.calls))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
