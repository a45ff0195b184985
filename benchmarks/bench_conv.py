"""Convolution speed: dynjit's conv2d against a plain numpy im2col + matmul and against
torch eager (when torch is installed), forward and forward + backward, on a ResNet-style
3x3 convolution (batch 32, 64 -> 64 channels, 32x32, padding 1) and a few other shapes.

    python benchmarks/bench_conv.py [--repeat 5] [--threads N]

Prints the best time of each and the ratios dynjit / numpy and dynjit / torch.
`--threads` sets the BLAS (and torch) thread count before anything is imported."""
import argparse
import os
import sys
import time

SHAPES = [
    # (name, input shape, weight shape, stride, padding, groups)
    ("resnet 3x3 64->64 32x32 b32", (32, 64, 32, 32), (64, 64, 3, 3), 1, 1, 1),
    ("stem 5x5 1->32 28x28 b64", (64, 1, 28, 28), (32, 1, 5, 5), 1, 2, 1),
    ("strided 3x3 64->128 32x32 b32", (32, 64, 32, 32), (128, 64, 3, 3), 2, 1, 1),
    ("depthwise 3x3 64 32x32 b32", (32, 64, 32, 32), (64, 1, 3, 3), 1, 1, 64),
    ("depthwise s2 3x3 64 32x32 b32", (32, 64, 32, 32), (64, 1, 3, 3), 2, 1, 64),
    ("grouped g4 3x3 64 16x16 b32", (32, 64, 16, 16), (64, 16, 3, 3), 1, 1, 4),
    ("mobilenet dw 3x3 64 56x56 b8", (8, 64, 56, 56), (64, 1, 3, 3), 1, 1, 64),
    ("mobilenet dw s2 3x3 64 56x56 b8", (8, 64, 56, 56), (64, 1, 3, 3), 2, 1, 64),
    ("grouped g4 3x3 64 56x56 b8", (8, 64, 56, 56), (64, 16, 3, 3), 1, 1, 4),
    ("resnext g32 3x3 128 28x28 b8", (8, 128, 28, 28), (128, 4, 3, 3), 1, 1, 32),
    ("grouped g2 s2 3x3 64->128 28x28 b8", (8, 64, 28, 28), (128, 32, 3, 3), 2, 1, 2),
    ("late 3x3 128->128 7x7 b32", (32, 128, 7, 7), (128, 128, 3, 3), 1, 1, 1),
    ("cnn_classifier conv2 8->16 14x14 b64", (64, 8, 14, 14), (16, 8, 3, 3), 1, 1, 1),
]


def best_of(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def numpy_im2col_conv(np, x, w, stride, padding):
    """The textbook baseline: sliding_window_view im2col and one tensordot (groups=1 only)."""
    from numpy.lib.stride_tricks import sliding_window_view
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = sliding_window_view(xp, w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    return np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--only", default=None, help="run the shapes whose name contains this")
    args = p.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import dynjit
    import dynjit.nn.functional as F
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None

    print(f"{'shape':38s} {'pass':9s} {'dynjit ms':>10s} {'numpy ms':>10s} {'torch ms':>10s} "
          f"{'dj/np':>7s} {'dj/torch':>8s}")
    rng = np.random.default_rng(0)
    for name, xs, ws, stride, padding, groups in SHAPES:
        if args.only and args.only not in name:
            continue
        xn = rng.standard_normal(xs, dtype=np.float32)
        wn = rng.standard_normal(ws, dtype=np.float32)
        x = dynjit.tensor(xn, requires_grad=True)
        w = dynjit.tensor(wn, requires_grad=True)
        out = F.conv2d(x, w, None, stride, padding, 1, groups)
        gn = rng.standard_normal(tuple(out.shape), dtype=np.float32)
        g = dynjit.tensor(gn)

        def dj_fwd():
            with dynjit.no_grad():
                F.conv2d(x, w, None, stride, padding, 1, groups)

        def dj_both():
            F.conv2d(x, w, None, stride, padding, 1, groups).backward(g)
        rows = {"forward": [best_of(dj_fwd, args.repeat)], "fwd+bwd": [best_of(dj_both, args.repeat)]}
        rows["forward"].append(best_of(lambda: numpy_im2col_conv(np, xn, wn, stride, padding), args.repeat)
                               if groups == 1 else None)
        rows["fwd+bwd"].append(None)
        if torch is not None:
            xt = torch.tensor(xn, requires_grad=True)
            wt = torch.tensor(wn, requires_grad=True)
            gt = torch.tensor(gn)

            def t_fwd():
                with torch.no_grad():
                    torch.nn.functional.conv2d(xt, wt, None, stride, padding, 1, groups)

            def t_both():
                torch.nn.functional.conv2d(xt, wt, None, stride, padding, 1, groups).backward(gt)
            rows["forward"].append(best_of(t_fwd, args.repeat))
            rows["fwd+bwd"].append(best_of(t_both, args.repeat))
        else:
            rows["forward"].append(None)
            rows["fwd+bwd"].append(None)
        for kind, (dj, npy, tt) in rows.items():
            def ms(v):
                return f"{v * 1e3:10.2f}" if v is not None else f"{'-':>10s}"

            def ratio(v):
                return f"{dj / v:7.2f}" if v else f"{'-':>7s}"
            print(f"{name:38s} {kind:9s} {ms(dj)} {ms(npy)} {ms(tt)} {ratio(npy)} {ratio(tt):>8s}")


if __name__ == "__main__":
    main()
