"""Run a program of tests/programs under dynjit and under PyTorch with the same initial
weights and data, and compare the losses step by step. A development tool, not a test
(PyTorch is never a dependency of dynjit):

    python tests/programs/compare_with_torch.py PROGRAM [--steps N] [--torch-python PATH]

The program's source is run a second time by the PyTorch interpreter with its `dynjit`
imports rewritten to `torch`. Its `run(steps=, init=)` returns (losses, state); the dynjit
run's initial state is handed to the PyTorch run. Random draws that a program makes during
training (`distributions.*.sample()`) are recorded in the dynjit run and replayed in the
PyTorch one, since the two libraries' random streams differ."""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def rewrite_for_torch(source):
    return (source.replace("import dynjit as torch", "import torch")
                  .replace("from dynjit", "from torch").replace("import dynjit.", "import torch."))


def load_program(path, torch_source=False, name="program"):
    source = path.read_text()
    if torch_source:
        source = rewrite_for_torch(source)
    module = type(sys)(name)
    module.__file__ = str(path)
    sys.path.insert(0, str(HERE.parents[1]))
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def patch_sampling(torch, mode, record):
    """Wrap Distribution.sample of every distribution the library has to record (dynjit
    run) or replay (PyTorch run) its results."""
    import importlib
    try:
        dists = importlib.import_module(torch.__name__ + ".distributions")
    except ImportError:
        return
    for cls_name in ("Categorical", "Normal", "Bernoulli"):
        cls = getattr(dists, cls_name, None)
        if cls is None:
            continue
        original = cls.sample

        def sample(self, sample_shape=(), _original=original):
            if mode == "record":
                out = _original(self, sample_shape)
                record.append(out.numpy().tolist())
                return out
            return torch.tensor(record.pop(0))
        cls.sample = sample


def torch_side(args):
    import torch
    program = load_program(HERE / f"{args.program}.py", torch_source=True)
    data = np.load(args.state, allow_pickle=False)
    init = {k: data[k] for k in data.files}
    samples = json.loads(pathlib.Path(args.samples).read_text())
    if samples:
        patch_sampling(torch, "replay", samples)
    losses, state = program.run(steps=args.steps, init=init, **json.loads(args.kwargs))
    np.savez(args.out, losses=np.array(losses), **{"state." + k: v for k, v in state.items()})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("program")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--kwargs", default="{}")
    parser.add_argument("--torch-python", default="/tmp/torchvenv/bin/python")
    parser.add_argument("--torch-side", action="store_true")
    parser.add_argument("--state"), parser.add_argument("--samples"), parser.add_argument("--out")
    args = parser.parse_args()
    if args.torch_side:
        return torch_side(args)
    import dynjit
    program = load_program(HERE / f"{args.program}.py")
    kwargs = json.loads(args.kwargs)
    init = program.run(steps=0, **kwargs)[1]
    samples = []
    patch_sampling(dynjit, "record", samples)
    losses, state = program.run(steps=args.steps, init=init, **kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: os.path.join(tmp, k) for k in ("state.npz", "samples.json", "out.npz")}
        np.savez(paths["state.npz"], **init)
        pathlib.Path(paths["samples.json"]).write_text(json.dumps(samples))
        subprocess.run([args.torch_python, __file__, args.program, "--torch-side", "--steps", str(args.steps),
                        "--kwargs", args.kwargs, "--state", paths["state.npz"],
                        "--samples", paths["samples.json"], "--out", paths["out.npz"]], check=True)
        ref = np.load(paths["out.npz"])
        ref_losses = ref["losses"]
        ref_state = {k[len("state."):]: ref[k] for k in ref.files if k.startswith("state.")}
    losses = np.array(losses)
    print(f"{'step':>4} {'dynjit':>14} {'torch':>14} {'rel diff':>10}")
    for i, (a, b) in enumerate(zip(losses, ref_losses)):
        print(f"{i:4d} {a:14.7f} {b:14.7f} {abs(a - b) / max(abs(b), 1e-12):10.2e}")
    diffs = {k: float(np.max(np.abs(state[k] - ref_state[k]), initial=0.0)) for k in state if k in ref_state
             and state[k].dtype.kind == "f"}
    worst_key = max(diffs, key=diffs.get, default=None)
    worst = diffs.get(worst_key, 0.0)
    missing = sorted(set(state) ^ set(ref_state))
    print(f"max |param diff| after {args.steps} steps: {worst:.2e} ({worst_key})" + (f"; state keys differ: {missing}" if missing else ""))
    ok = np.allclose(losses, ref_losses, rtol=1e-4, atol=1e-5) and len(losses) == len(ref_losses)
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
