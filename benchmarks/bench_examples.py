"""Time per training step of each program in examples/, eager and compiled on each backend,
with the graphs and graph breaks each compiled run makes.

A step's time is the slope of the run time over the number of steps ((T(2n) - T(n)) / n,
each T the fastest of `--repeat` runs after a warm-up run), so compiling, data set-up and
caches filled on the first run cancel. The examples are dynjit programs; torch's own time
for the same program is not measured here.

    python benchmarks/bench_examples.py [--steps N] [--only NAME ...]
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
    "regression_dataloader": ("epochs", {}),
}
BACKENDS = (None, "eager", "aot_eager", "llvm")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(main, count_kw, n, backend, extra):
    dynjit.reset()
    counters.clear()
    start = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        main(**{count_kw: n}, backend=backend, **extra)
    return time.perf_counter() - start


def measure(name, steps, repeat):
    count_kw, extra = PROGRAMS[name]
    main = _load(name).main
    rows = []
    for backend in BACKENDS:
        _run(main, count_kw, steps, backend, extra)                   # warm-up (caches, imports)
        t1 = min(_run(main, count_kw, steps, backend, extra) for _ in range(repeat))
        t2 = min(_run(main, count_kw, 2 * steps, backend, extra) for _ in range(repeat))
        graphs = counters["stats"]["frames_converted"]
        breaks = sum(counters["graph_break"].values())
        recompiles = sum(counters["recompiles"].values())
        rows.append((backend or "plain", (t2 - t1) / steps * 1e3, graphs, breaks, recompiles))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args(argv)
    names = args.only or list(PROGRAMS)
    print(f"| example | run | ms/step | vs plain | graphs | breaks | recompiles |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        rows = measure(name, args.steps, args.repeat)
        plain = rows[0][1]
        for backend, ms, graphs, breaks, recompiles in rows:
            ratio = f"{plain / ms:.2f}x" if ms > 0 else "-"
            extra = ("", "", "") if backend == "plain" else (graphs, breaks, recompiles)
            print(f"| {name} | {backend} | {ms:.2f} | {ratio} | {extra[0]} | {extra[1]} | {extra[2]} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
