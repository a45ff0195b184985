"""Code generation and compilation: vector instructions for the host CPU, the on-disk
cache of object code (a second process does not run LLVM), threads, call cost."""
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dynjit
import llvmlite.binding as llvm

from backends.llvm import jit
from llvm_helpers import check, compiled


def test_contiguous_float32_kernel_is_vectorized_for_the_host():
    a, b = dynjit.randn(1000), dynjit.randn(1000)
    _, fn = compiled(lambda a, b: (a * b + 1).exp(), a, b)
    assert re.search(r"<(8|16) x float>", fn.ir)
    asm = jit.optimized_assembly(fn.ir.replace(jit.PREFIX, "asm_check"))
    features = llvm.get_host_cpu_features()
    # AVX-512 hosts may use 512-bit (zmm) or, where LLVM prefers them, 256-bit registers
    packed = ("zmm", "ymm") if features.get("avx512f") else ("ymm",) if features.get("avx") else ("xmm",)
    assert any(any(p in line for p in packed) and "ps" in line.split()[0]
               for line in asm.splitlines() if line.strip()
               and line.split()[0].startswith(("vmul", "mul", "vadd", "add", "vfmadd")))


def _run(code, cache_dir, threads="1"):
    env = dict(os.environ, DYNJIT_CACHE_DIR=str(cache_dir), DYNJIT_NUM_THREADS=threads)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


_CACHE_PROGRAM = """
    import json, time, dynjit
    from dynjit.fx import make_fx
    from backends.llvm import compile_graph, jit
    x = dynjit.randn(64, 33)
    gm = make_fx(lambda x: ((x * 3.25).tanh() + x.softmax(1)).sum(0))(x)
    t = time.perf_counter()
    out = compile_graph(gm, [x])(x)
    print(json.dumps({"stats": jit.stats, "seconds": time.perf_counter() - t, "sum": float(out.sum().item())}))
"""


def test_second_process_loads_object_code_from_the_disk_cache(tmp_path):
    first = _run(_CACHE_PROGRAM, tmp_path)
    assert first["stats"]["compiled"] == 1 and first["stats"]["disk_hits"] == 0
    assert any(name.endswith(jit.CACHE_SUFFIX) for name in os.listdir(tmp_path))
    second = _run(_CACHE_PROGRAM, tmp_path)
    assert second["stats"]["compiled"] == 0 and second["stats"]["disk_hits"] == 1
    assert second["sum"] == first["sum"]


def test_unwritable_cache_dir_only_costs_recompiling(tmp_path):
    target = tmp_path / "file"
    target.write_text("not a directory")
    out = _run(_CACHE_PROGRAM, target)
    assert out["stats"]["compiled"] == 1


def test_large_kernels_run_on_threads_with_the_same_results(monkeypatch):
    a, b = dynjit.randn(512, 1024), dynjit.randn(512, 1024)

    def f(a, b):
        y = (a * b).sin()
        return y * 2, y.sum(1), (a * b).sum(), a.softmax(1)
    monkeypatch.setenv("DYNJIT_NUM_THREADS", "1")
    gm, one = compiled(f, a, b)
    assert "_par(" not in one.source
    monkeypatch.setenv("DYNJIT_NUM_THREADS", "3")
    _, three = compiled(f, a, b)
    assert "_par(" in three.source
    for x, y, r in zip(one(a, b), three(a, b), gm(a, b)):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(y.numpy(), r.numpy(), rtol=1e-4, atol=1e-4)


def test_split_full_reduction_is_accurate():
    x = dynjit.rand(3_000_000)
    gm, fn = compiled(lambda x: ((x * 2).sum(), x.mean(), x.amax(), (x - 0.5).amin()), x)
    s, m, mx, mn = (t.item() for t in fn(x))
    ref = x.numpy().astype(np.float64)
    assert abs(s - 2 * ref.sum()) <= 1e-6 * abs(2 * ref.sum())
    assert abs(m - ref.mean()) <= 1e-6 * abs(ref.mean())
    assert mx == x.numpy().max() and mn == (x.numpy() - np.float32(0.5)).min()


def test_bad_thread_count_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DYNJIT_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="DYNJIT_NUM_THREADS must be a positive integer"):
        compiled(lambda x: x + 1, dynjit.randn(3))


def test_a_call_is_straight_line_code_around_one_kernel_call():
    # What a call costs is measured in benchmarks/bench_llvm.py (a timed test would be
    # flaky on a loaded machine); here, the structure that keeps it small: the wrapper checks
    # its inputs' layout, allocates the output, calls the kernel once, and wraps the result.
    a, b = dynjit.randn(8), dynjit.randn(8)
    _, fn = compiled(lambda a, b: (a * b).exp() + 1, a, b)
    src = fn.source
    assert len(fn.kernels) == 1
    assert src.count("_k0(") == 1 and not re.search(r"\b(for|while|import|lambda)\b", src)
    assert len(src.strip().splitlines()) <= 12