"""What the two partitioners save for backward, on a 4-layer MLP.

The MLP is linear+relu x3 then linear (batch 64, 784 -> 256 -> 256 -> 256 -> 10)
with a cross-entropy loss; the parameters require grad, the input does not.
The joint graph is traced once per partitioner by aot_function; the numbers
are the count and total size of the tensors the forward graph returns for
backward, and the time of one forward+backward step. A second run uses SiLU
written as `h * h.sigmoid()` instead of relu, where rematerializing pays.

    python benchmarks/bench_partition.py
"""
import time

import dynjit
from dynjit.aot import aot_function, nop, default_partition, min_cut_rematerialization_partition
from dynjit.aot.partition import saved_stats
from dynjit.ops import registry as R

SIZES = [784, 256, 256, 256, 10]
BATCH = 64


def relu(h):
    return h.relu()


def silu(h):
    """SiLU written as two pointwise ops, as a user would: here recomputing pays."""
    return h * h.sigmoid()


def mlp_loss(x, target, *params, activation=relu):
    h = x
    for i in range(0, len(params), 2):
        h = R["linear"](h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = activation(h)
    return R["nll_loss"](h.log_softmax(-1), target)


def make_inputs():
    dynjit.manual_seed(0)
    params = []
    for n_in, n_out in zip(SIZES, SIZES[1:]):
        params.append((dynjit.randn(n_out, n_in) * (2 / n_in) ** 0.5).requires_grad_())
        params.append(dynjit.zeros(n_out, requires_grad=True))
    x = dynjit.randn(BATCH, SIZES[0])
    target = dynjit.randint(0, SIZES[-1], (BATCH,))
    return x, target, params


def measure(partition_fn, activation=relu, steps=5):
    graphs = []

    def fw_compiler(gm, example_inputs):
        graphs.append(gm)
        return gm
    def loss(x, target, *params):
        return mlp_loss(x, target, *params, activation=activation)
    step = aot_function(loss, fw_compiler, nop, partition_fn=partition_fn)
    x, target, params = make_inputs()
    step(x, target, *params).backward()          # compile
    start = time.perf_counter()
    for _ in range(steps):
        step(x, target, *params).backward()
    per_step = (time.perf_counter() - start) / steps
    count, nbytes = saved_stats(graphs[0])
    return count, nbytes, graphs[0].meta["saved"], per_step


def main():
    print(f"MLP {' -> '.join(map(str, SIZES))}, batch {BATCH}")
    print(f"{'activation':<10} {'partitioner':<36} {'saved':>5} {'bytes':>10}  {'step ms':>8}  saved values")
    for activation in (relu, silu):
        for fn in (default_partition, min_cut_rematerialization_partition):
            count, nbytes, names, per_step = measure(fn, activation)
            print(f"{activation.__name__:<10} {fn.__name__:<36} {count:5d} {nbytes:10d}  "
                  f"{per_step * 1e3:8.2f}  {', '.join(names)}")


if __name__ == "__main__":
    main()
