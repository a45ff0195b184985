"""The eager optimizer step alone, dynjit against torch eager in the same run.

    python benchmarks/bench_optim_step.py [--torch-python PY] [--seconds 3] [--only NAME,...]
                                          [--foreach none|false|true] [--json OUT]

The parameters are those of the MLP 784 -> 256 -> 10 of bench_train_step.py (float32:
weight (256, 784), bias 256, weight (10, 256), bias 10) with fixed random gradients; each
candidate times `opt.step()` (gradients left in place, so every step does the same work) for
Adam, AdamW, Adam(amsgrad), SGD (plain, momentum, nesterov + weight decay) and RMSprop
(plain, centered + momentum). torch's steps are timed in a worker process
(`--torch-python`, an interpreter with torch; torch is never a dependency), interleaved in
blocks with dynjit's, one thread each. Rows give the median step time and the ratio to
torch eager (below 1: faster than torch).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(256, 784), (256,), (10, 256), (10,)]

CONFIGS = {
    "adam": ("Adam", dict(lr=1e-3)),
    "adamw": ("AdamW", dict(lr=1e-3)),
    "adam_amsgrad_wd": ("Adam", dict(lr=1e-3, amsgrad=True, weight_decay=0.01)),
    "sgd": ("SGD", dict(lr=0.01)),
    "sgd_momentum": ("SGD", dict(lr=0.01, momentum=0.9)),
    "sgd_nesterov_wd": ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4)),
    "rmsprop": ("RMSprop", dict(lr=1e-3)),
    "rmsprop_centered_mom": ("RMSprop", dict(lr=1e-3, centered=True, momentum=0.9)),
}


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--torch-python", default=None)
    p.add_argument("--seconds", type=float, default=3.0, help="timing budget per configuration")
    p.add_argument("--block", type=int, default=50, help="steps per candidate per block")
    p.add_argument("--only", default=None)
    p.add_argument("--foreach", choices=("none", "false", "true"), default="none")
    p.add_argument("--json", default=None)
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _arrays():
    import numpy as np
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in SHAPES]
    return params, grads


def _make(lib, name, foreach):
    """An optimizer of `lib` (dynjit or torch) over the MLP's parameters, gradients set."""
    params, grads = _arrays()
    ps = []
    for a, g in zip(params, grads):
        p = lib.nn.Parameter(lib.tensor(a))
        p.grad = lib.tensor(g)
        ps.append(p)
    cls_name, kwargs = CONFIGS[name]
    kwargs = dict(kwargs)
    if foreach is not None:
        kwargs["foreach"] = foreach
    opt = getattr(lib.optim, cls_name)(ps, **kwargs)
    opt.step()      # state created outside the timing
    return opt


def _time_block(opt, n):
    t0 = time.perf_counter()
    for _ in range(n):
        opt.step()
    return (time.perf_counter() - t0) / n


def _torch_worker():
    """Reads 'name n' lines, answers the per-step time of a block of n torch steps."""
    import torch
    torch.set_num_threads(1)
    opts = {}
    for line in sys.stdin:
        name, n = line.split()
        if name not in opts:
            opts[name] = _make(torch, name, None)
        print(_time_block(opts[name], int(n)), flush=True)


def main(argv=None):
    args = _parse(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "DYNJIT_NUM_THREADS"):
        os.environ[var] = "1"
    if args.torch_worker:
        return _torch_worker()
    import dynjit
    foreach = {"none": None, "false": False, "true": True}[args.foreach]
    names = [n for n in CONFIGS if not args.only or any(s in n for s in args.only.split(","))]
    worker = None
    if args.torch_python:
        worker = subprocess.Popen([args.torch_python, os.path.abspath(__file__), "--torch-worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def torch_block(name, n):
        worker.stdin.write(f"{name} {n}\n")
        worker.stdin.flush()
        return float(worker.stdout.readline())

    rows = []
    print(f"{'optimizer':24} {'dynjit ms':>10} {'torch ms':>10} {'ratio':>7}   (foreach={foreach})")
    for name in names:
        opt = _make(dynjit, name, foreach)
        mine, theirs = [], []
        if worker:
            torch_block(name, 5)
        deadline = time.perf_counter() + args.seconds
        while time.perf_counter() < deadline:
            mine.append(_time_block(opt, args.block))
            if worker:
                theirs.append(torch_block(name, args.block))
        m = statistics.median(mine) * 1e3
        t = statistics.median(theirs) * 1e3 if theirs else float("nan")
        rows.append({"optimizer": name, "dynjit_ms": m, "torch_ms": t, "ratio": m / t if theirs else None})
        print(f"{name:24} {m:10.3f} {t:10.3f} {m / t if theirs else float('nan'):7.2f}", flush=True)
    if worker:
        worker.stdin.close()
        worker.wait()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"foreach": args.foreach, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
