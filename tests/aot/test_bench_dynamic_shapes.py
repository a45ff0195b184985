"""benchmarks/bench_dynamic_shapes.py runs (three batch sizes, dynjit only), and what it counts
is what dynjit does with changing batch sizes: the frontend compiles a frame twice (the second
time with the batch dimension dynamic), AOT autograd traces each graph once with symbolic
sizes (plus one concrete trace that checks it), llvm lowers once per batch size but compiles
its kernels once."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import bench_dynamic_shapes as bench  # noqa: E402


def test_counts_for_three_batch_sizes():
    args = bench._parse(["--calls", "3", "--passes", "1"])
    rows = bench.run_dynjit(args, ["shape_fn/", "mlp/"])
    by_name = {(r["workload"], r["candidate"]): r for r in rows}
    assert set(by_name) == {(w, c) for w in ("shape_fn", "mlp")
                            for c in ("dynjit plain", "dynjit eager", "dynjit aot_eager", "dynjit llvm")}
    for workload in ("shape_fn", "mlp"):
        for backend in ("eager", "aot_eager", "llvm"):
            row = by_name[(workload, f"dynjit {backend}")]
            assert row["graphs"] == 2 and row["breaks"] == 0 and row["more_graphs"] == 0, row
            assert row["first_s"] > 0 and row["steady_us"] > 0
    # trace_function calls: the first graph is traced for its size, the dynamic graph once
    # with symbolic sizes and once concretely at other sizes (the check). Not one per size.
    for workload in ("shape_fn", "mlp"):
        assert by_name[(workload, "dynjit aot_eager")]["traces"] == 3
    # the MLP's parameters require grad: llvm goes through AOT autograd
    assert by_name[("mlp", "dynjit llvm")]["traces"] == 3
    assert by_name[("shape_fn", "dynjit llvm")]["traces"] == 0
    lowerings, modules = map(int, by_name[("mlp", "dynjit llvm")]["kernels"].split(" / "))
    assert lowerings == 3 and modules <= 1      # size-generic kernels (0: already in the disk cache)
    table = bench.table(rows, 3)
    assert table.count("\n") == len(rows) + 1 and "| mlp | dynjit llvm | 2 | 0 | 3 |" in table
