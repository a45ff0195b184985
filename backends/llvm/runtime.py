"""What the generated wrapper calls: allocation, contiguous copies, the combination
of split reductions' partial results, parallel calls, and the compiled-graph
object that specializes on input layouts.

The wrapper is straight-line Python generated for one graph and one set of
input shapes/strides/dtypes: it guards those (one comparison per input),
allocates the outputs with numpy and calls the kernels through ctypes.
Calls with other layouts compile (and cache) another specialization.
"""
import ctypes
import itertools
import linecache

import numpy as np

from dynjit.tensor import Tensor

from .threads import parallel_call

MAX_SPECIALIZATIONS = 8

_source_ids = itertools.count()


def contig(arr, dtype):
    """`arr` as a C-contiguous array of `dtype` (itself when it already is one)."""
    if type(arr) is np.ndarray and arr.dtype == dtype and arr.flags.c_contiguous:
        return arr
    return np.ascontiguousarray(arr, dtype=dtype)


def as_result(value, dtype):
    arr = np.asarray(value)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def finish_sum(out, partial, divide_by):
    total = partial.sum()
    out[...] = total / divide_by if divide_by is not None else total


def finish_prod(out, partial, divide_by):
    out[...] = partial.prod()


def finish_max(out, partial, divide_by):
    out[...] = partial.max()


def finish_min(out, partial, divide_by):
    out[...] = partial.min()


RUNTIME_GLOBALS = {
    "_empty": np.empty,
    "_T": Tensor._make,
    "_contig": contig,
    "_asarray": as_result,
    "_par": parallel_call,
    "_finish_sum": finish_sum,
    "_finish_prod": finish_prod,
    "_finish_max": finish_max,
    "_finish_min": finish_min,
}


def kernel_function(address, nargs):
    proto = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * nargs), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    return proto(address)


def make_function(name, params, body_lines, guards, prologue, globs):
    """Compile the wrapper's source; `globs` gets `_respecialize` from the caller."""
    lines = [f"def {name}({', '.join(params)}):"]
    lines += ["    " + p for p in prologue]
    if guards:
        lines.append("    if (" + "\n            or ".join(guards) + "):")
        lines.append(f"        return _respecialize({', '.join(params)})")
    lines += ["    " + line for line in body_lines]
    src = "\n".join(lines) + "\n"
    filename = f"<dynjit-llvm-wrapper-{next(_source_ids)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), globs)
    return globs[name], src
