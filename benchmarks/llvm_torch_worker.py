"""The torch side of benchmarks/bench_llvm.py, run by a Python that has torch.

torch is never a dependency of dynjit: bench_llvm.py starts this script with
the interpreter given by `--torch-python` (a separate venv) and talks to it
over stdin/stdout, one JSON object per line, so that torch's timings are
taken in the same run as the other candidates':

    {"cmd": "setup", "name": ..., "case": ..., "n": ..., "mode": "eager"|"inductor"}
        -> {"ok": true} once the case is built and warmed up (compiled)
    {"cmd": "run", "name": ..., "repeat": k}   -> {"seconds": [time of each of k calls]}
    {"cmd": "info"}               -> {"torch": version, "threads": n}
    {"cmd": "threads", "n": k}    -> {"threads": k}  (torch.set_num_threads; set up cases after it)

The inputs are drawn with numpy's generator from the same seeds as in
bench_llvm.py, so every candidate computes on the same numbers.
"""
import json
import sys
import time

import numpy as np
import torch

from llvm_row_inputs import row_inputs      # this script's folder is on sys.path


def _expr(a, b, c):
    return ((a * b + c).sin() * 0.5).exp() - a * c


def _softmax(x):
    return x.softmax(1)


def _dot_sum(a, b):
    return (a * b).sum()


def _mlp_step(x, y, w1, b1, w2, b2):
    h = (x @ w1.t() + b1).relu()
    logits = h @ w2.t() + b2
    return -(logits.log_softmax(1) * y).sum() / x.shape[0]


def _layernorm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def _rmsnorm(x, w):
    return x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w


def _cross_entropy(x, t):
    return torch.nn.functional.nll_loss(x.log_softmax(1), t)


def _log_softmax(x):
    return x.log_softmax(1)


_ROW_CASES = {"layernorm": _layernorm, "rmsnorm": _rmsnorm, "cross_entropy": _cross_entropy,
              "log_softmax": _log_softmax}


def _inputs(case, n):
    if case in _ROW_CASES:       # n: None (the default shape) or [rows, columns]
        return [torch.from_numpy(a) for a in row_inputs(case, n)], _ROW_CASES[case]
    if case == "expr":
        rng = np.random.default_rng(0)
        return [torch.from_numpy(rng.standard_normal(n).astype(np.float32)) for _ in range(3)], _expr
    if case == "softmax" and n is not None:
        return [torch.from_numpy(row_inputs(case, n)[0])], _softmax
    if case == "softmax":
        rng = np.random.default_rng(1)
        return [torch.from_numpy(rng.standard_normal((4096, 1024)).astype(np.float32))], _softmax
    if case == "dot_sum":
        rng = np.random.default_rng(2)
        return [torch.from_numpy(rng.standard_normal(n).astype(np.float32)) for _ in range(2)], _dot_sum
    raise ValueError(f"unknown case {case!r}")


def _mlp_runner(mode):
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((64, 784)).astype(np.float32))
    y = torch.from_numpy(np.eye(10, dtype=np.float32)[np.arange(64) % 10])
    params = [torch.from_numpy((rng.standard_normal((256, 784)) * 0.05).astype(np.float32)),
              torch.zeros(256), torch.from_numpy((rng.standard_normal((10, 256)) * 0.05).astype(np.float32)),
              torch.zeros(10)]
    for p in params:
        p.requires_grad_()
    step = _mlp_step if mode == "eager" else torch.compile(_mlp_step, dynamic=False)

    def run():
        for p in params:
            p.grad = None
        step(x, y, *params).backward()
    return run


def build(case, n, mode):
    if case == "mlp":
        return _mlp_runner(mode)
    args, fn = _inputs(case, n)
    if mode == "inductor":
        fn = torch.compile(fn, dynamic=False)
    return lambda: fn(*args)


def main():
    torch.set_grad_enabled(True)
    runners = {}
    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        if cmd == "info":
            reply = {"torch": torch.__version__, "threads": torch.get_num_threads()}
        elif cmd == "threads":
            torch.set_num_threads(msg["n"])
            torch._dynamo.reset()       # inductor compiles for the thread count it sees: compile again
            runners.clear()
            reply = {"threads": torch.get_num_threads()}
        elif cmd == "setup":
            run = build(msg["case"], msg.get("n"), msg["mode"])
            with torch.no_grad() if msg["case"] != "mlp" else torch.enable_grad():
                for _ in range(3):
                    run()
            runners[msg["name"]] = (run, msg["case"] != "mlp")
            reply = {"ok": True}
        elif cmd == "run":
            run, no_grad = runners[msg["name"]]
            times = []
            with torch.no_grad() if no_grad else torch.enable_grad():
                for _ in range(msg.get("repeat", 1)):
                    t = time.perf_counter()
                    run()
                    times.append(time.perf_counter() - t)
            reply = {"seconds": times}
        else:
            reply = {"error": f"unknown command {cmd!r}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
