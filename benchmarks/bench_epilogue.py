"""Matmul epilogues in the llvm backend: `linear` + bias + activation (+ residual) with the
bias add fused into the activation's kernel, against the same graph compiled with linear
as one numpy call (`x @ w.T + b`, then the activation's kernel), and numpy.

    python benchmarks/bench_epilogue.py [--threads 1] [--seconds 4]

Workloads (float32): the MLP layer relu(linear(x)) at 64 x 784 -> 256; a transformer MLP
block x + fc2(gelu(fc1(x))) at (4, 64, 256) -> 1024 -> 256, forward only and forward +
backward through the llvm backend (AOT). The two variants are timed interleaved in one
process (numpy too for the layer); the table gives medians and the fused / unfused ratio
(below 1: fused faster).
"""
import argparse
import os
import statistics
import sys
import time


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=4.0)
    args = p.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "DYNJIT_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np
    import dynjit
    import dynjit.nn.functional as F
    from dynjit.fx import make_fx
    from backends.llvm import compile_graph, lowering
    from bench_train_step import _ensure_llvm_backend
    _ensure_llvm_backend()

    rng = np.random.default_rng(0)
    f32 = np.float32

    def tensor(shape, scale=1.0, grad=False):
        return dynjit.tensor((rng.standard_normal(shape) * scale).astype(f32), requires_grad=grad)

    def mlp_layer(x, w, b):
        return F.relu(F.linear(x, w, b))

    def gelu_block(x, w1, b1, w2, b2):
        return x + F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    layer_in = [tensor((64, 784)), tensor((256, 784), 0.05), tensor(256)]
    block_in = [tensor((4, 64, 256)), tensor((1024, 256), 0.06), tensor(1024), tensor((256, 1024), 0.03),
                tensor(256)]
    block_train = [t.detach().requires_grad_() for t in block_in]

    def build(fused):
        keep = lowering._linear_decomposable
        if not fused:
            lowering._linear_decomposable = lambda n: False
        try:
            layer = compile_graph(make_fx(mlp_layer)(*layer_in), layer_in)
            block = compile_graph(make_fx(gelu_block)(*block_in), block_in)
            train = dynjit.compile(lambda *a: gelu_block(*a).square().mean(), backend="llvm")
            train(*block_train).backward()
        finally:
            lowering._linear_decomposable = keep
        return {"MLP layer relu(linear) 64x784->256": lambda: layer(*layer_in),
                "GELU MLP block forward (4,64,256)->1024": lambda: block(*block_in),
                "GELU MLP block forward+backward": lambda: train(*block_train).backward()}

    xs = [t._data for t in layer_in]
    cands = {"fused": build(True), "unfused": build(False),
             "numpy": {"MLP layer relu(linear) 64x784->256": lambda: np.maximum(xs[0] @ xs[1].T + xs[2], 0)}}
    for name in cands["fused"]:
        if "backward" not in name:
            a, b = cands["fused"][name](), cands["unfused"][name]()
            np.testing.assert_allclose(a._data, b._data, rtol=1e-5, atol=1e-6)
    print(f"threads {args.threads}, numpy {np.__version__}")
    for name in cands["fused"]:
        fns = {k: v[name] for k, v in cands.items() if name in v}
        times = {k: [] for k in fns}
        for fn in fns.values():
            fn()
        end = time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            for k, fn in fns.items():
                t = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        row = "  ".join(f"{k} {v * 1e6:8.1f} us" for k, v in med.items())
        print(f"{name:42s} {row}   fused/unfused {med['fused'] / med['unfused']:.3f}")


if __name__ == "__main__":
    main()
