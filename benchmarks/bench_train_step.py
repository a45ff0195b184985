"""A small training step, compiled and not, against numpy and torch at a fixed thread count.

    python benchmarks/bench_train_step.py [--torch-python PY] [--threads 1] [--seconds 6]
                                          [--momentum 0.0] [--optim sgd|adam|adamw] [--only NAME,...]
                                          [--json OUT]

The step: an MLP 784 -> 256 -> ReLU -> 10 (nn.Linear), batch 64, float32,
F.cross_entropy against integer targets, SGD (lr 0.01, `--momentum`) or, with `--optim`,
Adam / AdamW (lr 1e-3, PyTorch's defaults otherwise; AdamW's weight decay 0.01):
zero_grad, forward, loss.backward(), opt.step(). Candidates, each on its own
copy of the same initial weights and the same batch:

- dynjit plain: the step run eagerly;
- step <backend>: `dynjit.compile(step, backend=...)`, the whole step, its
  backward() and opt.step() included, for eager / aot_eager / llvm;
- model+loss <backend>: only `F.cross_entropy(model(x), y)` compiled; backward
  and the optimizer run eagerly;
- numpy by hand: the same step written in numpy (what the arithmetic costs
  without any framework: three matmuls in the backward, two forward);
- torch eager and torch.compile (inductor, model+loss) when `--torch-python`
  names an interpreter with torch: this script runs there as a worker
  (`--torch-worker`), never importing dynjit, and torch is never a dependency.

Every candidate is checked first: three steps from the same start give the
weights numpy's formula gives. Then candidates are timed in interleaved blocks
(a block of steps of each in turn, torch's block through its worker; at more than one
thread torch's candidates are timed after the others, not interleaved, since idle thread
pools spin and would take each other's cores), and each
row reports the median and the best step time and the ratio to torch eager (or
to numpy when torch is absent); below 1 means faster than torch eager.
The thread count (`--threads`) is set for numpy's BLAS, dynjit's kernels and
torch before anything is imported.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH, D_IN, D_HID, D_OUT = 64, 784, 256, 10
LR = 0.01
ADAM_LR, BETAS, EPS, ADAMW_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--torch-python", default=None, help="an interpreter with torch (a separate venv)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=6.0, help="timing budget in seconds")
    p.add_argument("--block", type=int, default=20, help="steps per candidate per block")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--optim", choices=("sgd", "adam", "adamw"), default="sgd")
    p.add_argument("--only", default=None, help="comma-separated candidate names (substrings)")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _set_threads(n):
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "DYNJIT_NUM_THREADS"):
        os.environ[var] = str(n)


def initial_arrays():
    """The weights (PyTorch's layout: weight (out, in)), the batch and the targets, as numpy."""
    import numpy as np
    rng = np.random.default_rng(0)
    f32 = np.float32
    return {
        "w1": (rng.uniform(-1, 1, (D_HID, D_IN)) / np.sqrt(D_IN)).astype(f32),
        "b1": (rng.uniform(-1, 1, D_HID) / np.sqrt(D_IN)).astype(f32),
        "w2": (rng.uniform(-1, 1, (D_OUT, D_HID)) / np.sqrt(D_HID)).astype(f32),
        "b2": (rng.uniform(-1, 1, D_OUT) / np.sqrt(D_HID)).astype(f32),
        "x": rng.standard_normal((BATCH, D_IN)).astype(f32),
        "y": rng.integers(0, D_OUT, BATCH).astype(np.int64),
    }


# -- numpy by hand ------------------------------------------------------------------------------
def numpy_step_fn(arrays, momentum, optim="sgd"):
    """A step in numpy, updating the arrays in `arrays` in place (weights w1 b1 w2 b2)."""
    import numpy as np
    p = arrays
    x, y = p["x"], p["y"]
    rows = np.arange(BATCH)
    bufs = {}
    adam = {k: [0, np.zeros_like(p[k]), np.zeros_like(p[k])] for k in ("w1", "b1", "w2", "b2")}

    def adam_update(k, g):
        """PyTorch's Adam / AdamW update of p[k] in place (exp_avg by lerp, as torch does)."""
        st = adam[k]
        st[0] += 1
        m, v = st[1], st[2]
        if optim == "adamw":
            p[k] *= np.float32(1 - ADAM_LR * ADAMW_DECAY)
        m += (g - m) * np.float32(1 - BETAS[0])
        v *= np.float32(BETAS[1])
        v += np.float32(1 - BETAS[1]) * g * g
        bc1 = 1 - BETAS[0] ** st[0]
        bc2_sqrt = np.sqrt(1 - BETAS[1] ** st[0])
        p[k] -= (ADAM_LR / bc1) * m / (np.sqrt(v) / np.float32(bc2_sqrt) + np.float32(EPS))

    def step():
        h = x @ p["w1"].T
        h += p["b1"]
        np.maximum(h, 0, out=h)
        z = h @ p["w2"].T
        z += p["b2"]
        z -= z.max(1, keepdims=True)
        e = np.exp(z)
        s = e.sum(1, keepdims=True)
        loss = np.log(s[:, 0]).sum() / BATCH - z[rows, y].sum() / BATCH
        dz = e / s
        dz[rows, y] -= 1
        dz /= BATCH
        grads = {"w2": dz.T @ h, "b2": dz.sum(0)}
        dh = dz @ p["w2"]
        dh *= h > 0
        grads["w1"] = dh.T @ x
        grads["b1"] = dh.sum(0)
        for k in ("w1", "b1", "w2", "b2"):
            g = grads[k]
            if optim != "sgd":
                adam_update(k, g)
                continue
            if momentum:
                if k in bufs:
                    bufs[k] *= momentum
                    bufs[k] += g
                else:
                    bufs[k] = g.copy()
                g = bufs[k]
            p[k] -= LR * g
        return loss
    return step


# -- dynjit -------------------------------------------------------------------------------------
def _ensure_llvm_backend():
    """The llvm backend by name, also where dynjit runs from a source tree that is not
    installed (its entry point then is not there)."""
    from dynjit.compiler import registry
    try:
        registry.lookup_backend("llvm")
    except Exception:
        from backends.llvm import llvm_backend
        registry.register_backend(llvm_backend, name="llvm")


def make_optimizer(optim_mod, name, params, momentum):
    """The step's optimizer, from dynjit.optim or torch.optim (the same names and defaults)."""
    if name == "adam":
        return optim_mod.Adam(params, lr=ADAM_LR, betas=BETAS, eps=EPS)
    if name == "adamw":
        return optim_mod.AdamW(params, lr=ADAM_LR, betas=BETAS, eps=EPS, weight_decay=ADAMW_DECAY)
    return optim_mod.SGD(params, lr=LR, momentum=momentum)


def dynjit_candidates(arrays, momentum, only, optim_name="sgd"):
    import numpy as np
    import dynjit
    _ensure_llvm_backend()
    from dynjit import nn, optim
    import dynjit.nn.functional as F

    def make(compile_step=None, compile_loss=None):
        model = nn.Sequential(nn.Linear(D_IN, D_HID), nn.ReLU(), nn.Linear(D_HID, D_OUT))
        with dynjit.no_grad():
            model[0].weight.copy_(dynjit.tensor(arrays["w1"]))
            model[0].bias.copy_(dynjit.tensor(arrays["b1"]))
            model[2].weight.copy_(dynjit.tensor(arrays["w2"]))
            model[2].bias.copy_(dynjit.tensor(arrays["b2"]))
        x, y = dynjit.tensor(arrays["x"]), dynjit.tensor(arrays["y"])
        opt = make_optimizer(optim, optim_name, model.parameters(), momentum)

        def loss_fn(x, y):
            return F.cross_entropy(model(x), y)
        if compile_loss is not None:
            loss_fn = dynjit.compile(loss_fn, backend=compile_loss)

        def step(x, y):
            opt.zero_grad()
            loss = loss_fn(x, y)
            loss.backward()
            opt.step()
            return loss
        if compile_step is not None:
            step = dynjit.compile(step, backend=compile_step)

        def weights():
            return [model[0].weight._data, model[0].bias._data, model[2].weight._data, model[2].bias._data]
        run = lambda: step(x, y)            # noqa: E731
        run.weights = weights
        return run

    cands = [("dynjit plain", lambda: make())]
    for b in ("eager", "aot_eager", "llvm"):
        cands.append((f"step {b}", lambda b=b: make(compile_step=b)))
    for b in ("aot_eager", "llvm"):
        cands.append((f"model+loss {b}", lambda b=b: make(compile_loss=b)))
    return [(name, mk) for name, mk in cands if _selected(name, only)]


def _selected(name, only):
    return only is None or any(s in name for s in only)


# -- torch, in its own interpreter -----------------------------------------------------------------
def torch_worker():
    """Reads JSON lines: {"setup": name} builds and warms a candidate, {"run": name, "n": k}
    times k steps; {"weights": name} returns its weights after the steps so far."""
    import numpy as np
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    arrays = initial_arrays()
    runners = {}

    def make(kind, momentum, optim_name):
        model = torch.nn.Sequential(torch.nn.Linear(D_IN, D_HID), torch.nn.ReLU(), torch.nn.Linear(D_HID, D_OUT))
        with torch.no_grad():
            for mod, w, b in ((model[0], "w1", "b1"), (model[2], "w2", "b2")):
                mod.weight.copy_(torch.from_numpy(arrays[w]))
                mod.bias.copy_(torch.from_numpy(arrays[b]))
        x, y = torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["y"])
        opt = make_optimizer(torch.optim, optim_name, model.parameters(), momentum)

        def loss_fn(x, y):
            return torch.nn.functional.cross_entropy(model(x), y)
        if kind == "torch.compile model+loss":
            loss_fn = torch.compile(loss_fn, dynamic=False)

        def step():
            opt.zero_grad()
            loss = loss_fn(x, y)
            loss.backward()
            opt.step()
            return loss
        step.weights = lambda: [t.detach().numpy().tolist() for t in
                                (model[0].weight, model[0].bias, model[2].weight, model[2].bias)]
        return step

    info = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        if "setup" in msg:
            runners[msg["setup"]] = make(msg["setup"], msg["momentum"], msg["optim"])
            reply = {"ok": True}
        elif "weights" in msg:
            reply = {"weights": runners[msg["weights"]].weights()}
        else:
            run = runners[msg["run"]]
            times = []
            for _ in range(msg["n"]):
                t = time.perf_counter()
                run()
                times.append(time.perf_counter() - t)
            reply = {"seconds": times}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class TorchCandidates:
    def __init__(self, python, momentum, optim_name="sgd"):
        env = dict(os.environ)
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--torch-worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.info = json.loads(self.proc.stdout.readline())
        self.momentum = momentum
        self.optim = optim_name

    def ask(self, **msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the torch worker exited (see its error above)")
        return json.loads(line)

    def candidate(self, name):
        self.ask(setup=name, momentum=self.momentum, optim=self.optim)

        def run():
            return self.ask(run=name, n=1)["seconds"][0]
        run.block = lambda n: self.ask(run=name, n=n)["seconds"]
        run.weights = lambda: [__import__("numpy").array(w, dtype="float32")
                               for w in self.ask(weights=name)["weights"]]
        return run

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# -- checking and timing ----------------------------------------------------------------------------
def reference_weights(momentum, steps, optim="sgd"):
    import numpy as np
    arrays = {k: v.copy() for k, v in initial_arrays().items()}
    step = numpy_step_fn(arrays, momentum, optim)
    for _ in range(steps):
        step()
    return [arrays[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2")]


def check(name, weights, ref):
    import numpy as np
    for w, r in zip(weights, ref):
        if not np.allclose(np.asarray(w, np.float64), r, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: weights after 3 steps differ from numpy's "
                                 f"(max abs diff {np.abs(np.asarray(w, np.float64) - r).max():.3g})")


def local_timer(fn):
    def block(n):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return times
    return block


def time_interleaved(blocks, seconds, block):
    """{name: [step seconds]}: blocks of `block` steps of each candidate in turn until `seconds`."""
    times = {name: [] for name in blocks}
    for fn in blocks.values():
        fn(3)                                       # warm
    end = time.perf_counter() + seconds
    while True:
        for name, fn in blocks.items():
            times[name] += fn(block)
        if time.perf_counter() > end:
            return times


def main(argv=None):
    args = _parse(argv)
    _set_threads(args.threads)
    if args.torch_worker:
        return torch_worker()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import numpy as np
    only = args.only.split(",") if args.only else None

    ref = reference_weights(args.momentum, 3, args.optim)
    blocks, check_runs = {}, []
    arrays = {k: v.copy() for k, v in initial_arrays().items()}
    if _selected("numpy by hand", only):
        np_step = numpy_step_fn(arrays, args.momentum, args.optim)
        for _ in range(3):
            np_step()
        check("numpy by hand", [arrays[k] for k in ("w1", "b1", "w2", "b2")], ref)
        blocks["numpy by hand"] = local_timer(np_step)
    compile_seconds = {}
    for name, make in dynjit_candidates(initial_arrays(), args.momentum, only, args.optim):
        t = time.perf_counter()
        run = make()
        run()
        compile_seconds[name] = time.perf_counter() - t
        run(), run()
        check(name, run.weights(), ref)
        blocks[name] = local_timer(run)
    worker = None
    if args.torch_python:
        worker = TorchCandidates(args.torch_python, args.momentum, args.optim)
        for name in ("torch eager", "torch.compile model+loss"):
            if not _selected(name, only):
                continue
            t = time.perf_counter()
            run = worker.candidate(name)
            run(), run(), run()
            compile_seconds[name] = time.perf_counter() - t
            check(name, run.weights(), ref)
            blocks[name] = run.block
    if args.threads == 1:
        times = time_interleaved(blocks, args.seconds, args.block)
    else:
        # Thread pools spin a while after their last task (OpenMP in torch, OpenBLAS in
        # numpy): interleaved with the other process's blocks they take each other's cores.
        # So at several threads this process's candidates are timed first, then torch's.
        remote = {k: v for k, v in blocks.items() if k.startswith("torch")}
        local = {k: v for k, v in blocks.items() if k not in remote}
        time.sleep(1.0)
        times = time_interleaved(local, args.seconds, args.block)
        time.sleep(1.0)
        times.update(time_interleaved(remote, args.seconds / 2, args.block) if remote else {})
    if worker is not None:
        worker.close()

    base = "torch eager" if "torch eager" in times else "numpy by hand" if "numpy by hand" in times else None
    med = {name: statistics.median(ts) for name, ts in times.items()}
    opt_desc = f"SGD momentum {args.momentum}" if args.optim == "sgd" else {"adam": "Adam", "adamw": "AdamW"}[args.optim]
    print(f"MLP {D_IN}-{D_HID}-{D_OUT}, batch {BATCH}, float32, cross-entropy, {opt_desc}; "
          f"{args.threads} thread(s); numpy {np.__version__}"
          + (f", torch {worker.info['torch']}" if worker else ""))
    print(f"  {'':28s} {'median':>10s} {'best':>10s} {'steps':>6s}  {'vs ' + base if base else '':>16s}")
    rows = []
    for name, ts in times.items():
        ratio = med[name] / med[base] if base else float("nan")
        rows.append({"name": name, "median_s": med[name], "best_s": min(ts), "steps": len(ts),
                     "ratio_to_" + (base or "none"): ratio, "first_call_s": compile_seconds.get(name)})
        print(f"  {name:28s} {med[name] * 1e3:8.3f} ms {min(ts) * 1e3:7.3f} ms {len(ts):6d}  {ratio:15.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "momentum": args.momentum, "optim": args.optim, "rows": rows,
                       "torch": worker.info if worker else None, "numpy": np.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
