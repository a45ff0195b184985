"""Per-call cost of dynjit's plain eager op path (no compile): what the dispatcher, the op
registry's call wrapper, Tensor's operators and autograd's node creation add to the numpy
work, on tensors small enough that the overhead is most of the time.

    python benchmarks/bench_eager_dispatch.py [--repeat 7] [--seconds 0.2] [--json OUT]

Each row times one computation in dynjit and the same computation written directly in
numpy, and prints microseconds per call (the best of `--repeat` runs of a loop lasting about
`--seconds`) and the ratio dynjit / numpy:

- add, mul, sum, relu on 100-element float32 tensors; matmul of two 64x64 float32 matrices;
- linear: F.linear(x (16, 64), weight (32, 64), bias (32,)) without autograd;
- cross_entropy fwd+bwd: F.cross_entropy of (64, 10) logits that require grad against int64
  targets, then backward (numpy: log-softmax, the loss and its gradient by hand);
- mlp step: bench_train_step.py's step (784 -> 256 -> ReLU -> 10, batch 64, SGD) run
  eagerly, against that script's numpy step;
- tiny mlp step: the same step with 32 -> 64 -> ReLU -> 10, batch 16, where the framework's
  per-op cost is most of the step.

BLAS runs on one thread (set before numpy is imported) so the numbers compare across runs.
"""
import argparse
import json
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "DYNJIT_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))
sys.path.insert(0, _HERE)


def per_call_us(fn, repeat, seconds):
    """Best microseconds per call of `fn` over `repeat` timed loops of about `seconds` each."""
    fn()
    n, t = 1, 0.0
    while t < seconds / 4:      # calibrate the loop length
        n *= 2
        start = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - start
    n = max(1, int(n * seconds / t))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def cases():
    """(name, dynjit fn, numpy fn) for every row."""
    import numpy as np
    import dynjit
    import dynjit.nn.functional as F
    from dynjit import nn, optim
    import bench_train_step as ts

    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(100).astype(np.float32)
    b_np = rng.standard_normal(100).astype(np.float32)
    m_np = rng.standard_normal((64, 64)).astype(np.float32)
    n_np = rng.standard_normal((64, 64)).astype(np.float32)
    a, b, m, n = (dynjit.tensor(v) for v in (a_np, b_np, m_np, n_np))

    x_np = rng.standard_normal((16, 64)).astype(np.float32)
    w_np = rng.standard_normal((32, 64)).astype(np.float32)
    bias_np = rng.standard_normal(32).astype(np.float32)
    x, w, bias = (dynjit.tensor(v) for v in (x_np, w_np, bias_np))

    logits_np = rng.standard_normal((64, 10)).astype(np.float32)
    target_np = rng.integers(0, 10, 64).astype(np.int64)
    logits = dynjit.tensor(logits_np, requires_grad=True)
    target = dynjit.tensor(target_np)
    rows = np.arange(64)

    def ce_dynjit():
        logits.grad = None
        F.cross_entropy(logits, target).backward()

    def ce_numpy():
        z = logits_np - logits_np.max(1, keepdims=True)
        e = np.exp(z)
        s = e.sum(1, keepdims=True)
        loss = (np.log(s[:, 0]) - z[rows, target_np]).mean()
        grad = e / s
        grad[rows, target_np] -= 1
        grad /= 64
        return loss, grad

    def mlp(d_in, d_hid, d_out, batch):
        """(dynjit step, numpy step) of bench_train_step's MLP at these sizes."""
        saved = ts.BATCH, ts.D_IN, ts.D_HID, ts.D_OUT
        ts.BATCH, ts.D_IN, ts.D_HID, ts.D_OUT = batch, d_in, d_hid, d_out
        try:
            arrays = ts.initial_arrays()
            numpy_step = ts.numpy_step_fn({k: v.copy() for k, v in arrays.items()}, 0.0)
        finally:
            ts.BATCH, ts.D_IN, ts.D_HID, ts.D_OUT = saved
        model = nn.Sequential(nn.Linear(d_in, d_hid), nn.ReLU(), nn.Linear(d_hid, d_out))
        with dynjit.no_grad():
            model[0].weight.copy_(dynjit.tensor(arrays["w1"]))
            model[0].bias.copy_(dynjit.tensor(arrays["b1"]))
            model[2].weight.copy_(dynjit.tensor(arrays["w2"]))
            model[2].bias.copy_(dynjit.tensor(arrays["b2"]))
        xs, ys = dynjit.tensor(arrays["x"]), dynjit.tensor(arrays["y"])
        opt = optim.SGD(model.parameters(), lr=ts.LR)

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(xs), ys)
            loss.backward()
            opt.step()
            return loss
        return step, numpy_step

    mlp_step, mlp_numpy = mlp(ts.D_IN, ts.D_HID, ts.D_OUT, ts.BATCH)
    tiny_step, tiny_numpy = mlp(32, 64, 10, 16)
    return [
        ("add", lambda: a + b, lambda: a_np + b_np),
        ("mul", lambda: a * b, lambda: a_np * b_np),
        ("sum", lambda: a.sum(), lambda: a_np.sum()),
        ("matmul 64x64", lambda: m @ n, lambda: m_np @ n_np),
        ("relu", lambda: dynjit.relu(a), lambda: np.maximum(a_np, 0)),
        ("linear 16x64->32", lambda: F.linear(x, w, bias), lambda: x_np @ w_np.T + bias_np),
        ("cross_entropy fwd+bwd", ce_dynjit, ce_numpy),
        (f"mlp step {ts.D_IN}-{ts.D_HID}-{ts.D_OUT} b{ts.BATCH}", mlp_step, mlp_numpy),
        ("tiny mlp step 32-64-10 b16", tiny_step, tiny_numpy),
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--seconds", type=float, default=0.2, help="length of one timed loop")
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    rows = []
    print(f"{'computation':32s} {'dynjit us':>10s} {'numpy us':>10s} {'ratio':>7s}")
    for name, dj, ref in cases():
        t_dj = per_call_us(dj, args.repeat, args.seconds)
        t_np = per_call_us(ref, args.repeat, args.seconds)
        rows.append({"name": name, "dynjit_us": t_dj, "numpy_us": t_np, "ratio": t_dj / t_np})
        print(f"{name:32s} {t_dj:10.2f} {t_np:10.2f} {t_dj / t_np:7.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
