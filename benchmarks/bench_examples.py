"""Time per training step of each program in examples/, eager and compiled on each backend,
with the graphs, graph breaks and recompiles each compiled run makes.

Every example reads its loss with `loss.item()` once per step, outside the compiled step.
A step's time is the median interval between consecutive `item()` calls, after the first
`--warmup` steps (compiling and recompiling happen there), so it is the steady state.

    python benchmarks/bench_examples.py [--steps N] [--warmup K] [--only NAME ...]
"""
import argparse
import importlib.util
import io
import os
import sys
import time
from contextlib import redirect_stdout

import dynjit
from dynjit.utils import counters

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")

# example -> (keyword for the number of steps, extra keywords that keep a run short and quiet)
PROGRAMS = {
    "cnn_classifier": ("steps", {"epochs": 1, "n": 4096}),
    "char_gpt": ("steps", {"verbose": False, "sample_chars": 0}),
    "lstm_language_model": ("steps", {}),
    "vae": ("steps", {"verbose": False}),
    "regression_dataloader": ("epochs", {"n": 256}),
}
BACKENDS = (None, "eager", "aot_eager", "llvm")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(main, count_kw, n, backend, extra, warmup):
    """Run `main` for n steps; the median time between consecutive loss.item() calls after
    the first `warmup` steps, in ms."""
    stamps = []
    item = dynjit.Tensor.item

    def timed_item(self):
        stamps.append(time.perf_counter())
        return item(self)
    dynjit.reset()
    counters.clear()
    dynjit.Tensor.item = timed_item
    try:
        with redirect_stdout(io.StringIO()):
            main(**{count_kw: n}, backend=backend, **extra)
    finally:
        dynjit.Tensor.item = item
    gaps = sorted(b - a for a, b in zip(stamps[warmup:], stamps[warmup + 1:]))
    return gaps[len(gaps) // 2] * 1e3 if gaps else float("nan")


def measure(name, steps, warmup):
    count_kw, extra = PROGRAMS[name]
    main = _load(name).main
    rows = []
    for backend in BACKENDS:
        ms = _run(main, count_kw, steps, backend, extra, warmup)
        graphs = counters["stats"]["frames_converted"]
        breaks = sum(counters["graph_break"].values())
        recompiles = sum(counters["recompiles"].values())
        rows.append((backend or "plain", ms, graphs, breaks, recompiles))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args(argv)
    names = args.only or list(PROGRAMS)
    print(f"| example | run | ms/step | vs plain | graphs | breaks | recompiles |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        rows = measure(name, args.steps, args.warmup)
        plain = rows[0][1]
        for backend, ms, graphs, breaks, recompiles in rows:
            ratio = f"{plain / ms:.2f}x" if ms > 0 else "-"
            extra = ("", "", "") if backend == "plain" else (graphs, breaks, recompiles)
            print(f"| {name} | {backend} | {ms:.2f} | {ratio} | {extra[0]} | {extra[1]} | {extra[2]} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
