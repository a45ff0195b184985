"""The `dynjit` command: `dynjit demo`, `dynjit explain FILE.py:FUNC`, `dynjit bench`,
`dynjit backends`."""
import argparse
import importlib.util
import os
import sys


def _demo(args):
    from .demo import run
    run(backend=args.backend, steps=args.steps)
    return 0


def _load_function(spec):
    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise SystemExit(f"dynjit explain: expected FILE.py:FUNCTION, got {spec!r}")
    if not os.path.exists(path):
        raise SystemExit(f"dynjit explain: no such file: {path}")
    module_spec = importlib.util.spec_from_file_location("__dynjit_explain__", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    module_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise SystemExit(f"dynjit explain: {path} defines no {name!r}")
    make_inputs = getattr(module, f"{name}_example_inputs", None) or getattr(module, "example_inputs", None)
    return fn, make_inputs


def _explain(args):
    import dynjit
    fn, make_inputs = _load_function(args.target)
    inputs = make_inputs() if make_inputs is not None else ()
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    print(dynjit.explain(fn)(*inputs))
    return 0


def _bench(args):
    from .bench import run
    run(size=args.size, repeat=args.repeat, backend=args.backend)
    return 0


def _backends(args):
    from .compiler import list_backends
    for name in list_backends():
        print(name)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="dynjit", description="dynjit: a bytecode-level JIT for numerical Python")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small model compiled by dynjit, show its graphs and speed")
    demo.add_argument("--backend", default="llvm", help="backend to compile with (default: llvm)")
    demo.add_argument("--steps", type=int, default=300, help="training steps (default: 300)")
    demo.set_defaults(run=_demo)
    explain = sub.add_parser("explain", help="graphs and graph breaks of FILE.py:FUNCTION; inputs come from "
                                             "FUNCTION_example_inputs() or example_inputs() in that file")
    explain.add_argument("target", metavar="FILE.py:FUNCTION")
    explain.set_defaults(run=_explain)
    bench = sub.add_parser("bench", help="numpy vs dynjit eager vs compiled on a few workloads")
    bench.add_argument("--size", type=int, default=1_000_000, help="elements per input (default: 1e6)")
    bench.add_argument("--repeat", type=int, default=5, help="timed runs, best is kept (default: 5)")
    bench.add_argument("--backend", default="llvm", help="backend to compile with (default: llvm)")
    bench.set_defaults(run=_bench)
    backends = sub.add_parser("backends", help="list the registered backends")
    backends.set_defaults(run=_backends)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
