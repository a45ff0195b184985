"""Backward pass time: the ordinary engine against compiled autograd.

One training step's backward of an MLP (forward run eagerly each time, not timed
apart: the numbers are forward + backward), at a small size (where the cost is
per-node overhead) and a larger one (where it is arithmetic). Compiled autograd
runs the captured graph uncompiled (`gm`: the same ops from one Python function),
through dynjit.compile with the eager backend, and with the llvm backend (fused
kernels). Baseline: the same forward and backward written by hand in numpy.

    python benchmarks/bench_compiled_autograd.py
"""
import timeit

import numpy as np

import dynjit
from dynjit import compiled_autograd, nn


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, 1)

    def forward(self, x):
        return self.fc3(dynjit.tanh(self.fc2(dynjit.tanh(self.fc1(x)))))


def numpy_step(params, x, y):
    """Forward and backward of the same MLP and loss in plain numpy."""
    (w1, b1), (w2, b2), (w3, b3) = params
    h1 = np.tanh(x @ w1.T + b1)
    h2 = np.tanh(h1 @ w2.T + b2)
    out = h2 @ w3.T + b3
    d = 2 * (out - y) / out.size
    gw3, gb3 = d.T @ h2, d.sum(0)
    d2 = (d @ w3) * (1 - h2 * h2)
    gw2, gb2 = d2.T @ h1, d2.sum(0)
    d1 = (d2 @ w2) * (1 - h1 * h1)
    gw1, gb1 = d1.T @ x, d1.sum(0)
    return gw1, gb1, gw2, gb2, gw3, gb3


def per_call(fn, number, repeat=5):
    fn()
    fn()        # compile outside the timing
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    print(f"{'batch x width':<14} {'numpy us':>9} {'engine':>8} {'ca gm':>8} {'ca eager':>9} {'ca llvm':>8}"
          "   (ratios: time / numpy)")
    for batch, width, number in ((8, 16, 300), (256, 256, 30)):
        dynjit.manual_seed(0)
        model = MLP(width)
        x, y = dynjit.randn(batch, width), dynjit.randn(batch, 1)
        params = [(model.fc1.weight.detach().numpy(), model.fc1.bias.detach().numpy()),
                  (model.fc2.weight.detach().numpy(), model.fc2.bias.detach().numpy()),
                  (model.fc3.weight.detach().numpy(), model.fc3.bias.detach().numpy())]
        xn, yn = x.numpy(), y.numpy()

        def step():
            for p in model.parameters():
                p.grad = None
            ((model(x) - y) ** 2).mean().backward()

        def compiled_step(compiler_fn):
            def run():
                with compiled_autograd.enable(compiler_fn):
                    step()
            return run

        base = per_call(lambda: numpy_step(params, xn, yn), number)
        times = [per_call(step, number),
                 per_call(compiled_step(lambda gm: gm), number),
                 per_call(compiled_step(lambda gm: dynjit.compile(gm, backend="eager")), number),
                 per_call(compiled_step(lambda gm: dynjit.compile(gm, backend="llvm")), number)]
        print(f"{f'{batch} x {width}':<14} {base:9.1f} " + " ".join(f"{t / base:8.2f}x" for t in times))


if __name__ == "__main__":
    main()
