"""What the generated wrapper calls: allocation, contiguous copies, the combination
of split reductions' partial results, parallel calls, and the compiled-graph
object that specializes on input layouts.

The wrapper is straight-line Python generated for one graph and one set of
input shapes/strides/dtypes: it guards those (one comparison per input),
allocates the outputs with numpy (large ones through a BufferCache) and calls
the kernels through ctypes.
Calls with other layouts compile (and cache) another specialization.
"""
import ctypes
import itertools
import linecache
import sys

import numpy as np

from dynjit.ops.dispatch import _mutation_observers
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
    if type(value) is np.ndarray and value.dtype == dtype:
        return value
    arr = np.asarray(value)
    return arr if arr.dtype == dtype else arr.astype(dtype)


class BufferCache:
    """The output buffer of one allocation site of a wrapper, kept for the next call.

    A fresh multi-megabyte numpy array costs the kernel zeroed pages (page faults
    and the kernel's zeroing: about a third of a 1e7-element elementwise kernel).
    So large buffers are kept here and handed out again once nothing else holds
    them: an array whose reference count is only this cache's cannot be seen by
    anyone (a Tensor, a view or a memoryview of it would hold a reference). Two
    arrays per site, so `x = f(x)` alternates between them; at most
    CACHE_LIMIT_BYTES in all, past which sites allocate as usual."""
    __slots__ = ("shape", "dtype", "arrays", "nbytes")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype
        self.arrays = []
        self.nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize

    def __call__(self):
        arrays = self.arrays
        for i in range(len(arrays)):
            arr = arrays[i]
            if sys.getrefcount(arr) <= _FREE_REFS:
                return arr
        arr = np.empty(self.shape, self.dtype)
        global _cached_bytes
        if len(arrays) < 2 and _cached_bytes + self.nbytes <= CACHE_LIMIT_BYTES:
            arrays.append(arr)
            _cached_bytes += self.nbytes
        return arr

    def __del__(self):
        global _cached_bytes
        _cached_bytes -= self.nbytes * len(self.arrays)


def _free_refs():
    """The reference count BufferCache.__call__ sees for an array only its list holds."""
    arrays, counts = [np.empty(1)], []
    for i in range(len(arrays)):
        arr = arrays[i]
        counts.append(sys.getrefcount(arr))
    return counts[0]


CACHED_BUFFER_BYTES = 1 << 20            # buffers from this size on are kept between calls
CACHE_LIMIT_BYTES = 1 << 30
_cached_bytes = 0
_FREE_REFS = _free_refs()


def finish_sum(out, partial, divide_by):
    out[...] = partial.sum()
    if divide_by is not None:       # mean: the sum rounded to the output dtype, then divided (numpy's)
        np.true_divide(out, divide_by, out=out)


def finish_prod(out, partial, divide_by):
    out[...] = partial.prod()


def finish_max(out, partial, divide_by):
    out[...] = partial.max()


def finish_min(out, partial, divide_by):
    out[...] = partial.min()


def pack_args(*arrays):
    """The arguments of a kernel with many arrays: one C array of their PyObject pointers
    (it holds references to them while it lives)."""
    return (ctypes.py_object * len(arrays))(*arrays)


RUNTIME_GLOBALS = {
    "_empty": np.empty,
    "_T": Tensor._make,
    "_contig": contig,
    "_asarray": as_result,
    "_par": parallel_call,
    "_pack": pack_args,
    "_finish_sum": finish_sum,
    "_finish_prod": finish_prod,
    "_finish_max": finish_max,
    "_finish_min": finish_min,
}


def kernel_function(address, nargs, packed=False):
    """The kernel at `address` as a ctypes function: its arrays as `nargs` arguments, or
    `packed` as one array of them (see pack_args)."""
    arrays = [ctypes.POINTER(ctypes.py_object)] if packed else [ctypes.py_object] * nargs
    proto = ctypes.CFUNCTYPE(None, *arrays, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
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


# -- a kernel storing into a graph input (lowering.try_store_into) ------------------------------
def store_into_lines(var, dst_t, dst_d, kernel, arg_vars, copy_op):
    """The wrapper's line before a kernel that stores a value copied into graph input
    `dst_t` (array `dst_d`) as its output `var`, and the line after it. The kernel may
    write the input's memory only if it reads that memory at exactly the index it writes
    (same offset and strides), else it writes a buffer that copy_ copies afterwards."""
    out = arg_vars.index(var)
    store = next(o for o in kernel.operands if o.is_output and o.arg == out)
    outputs = {o.arg for o in kernel.operands if o.is_output}
    src = arg_vars.index(dst_d) if dst_d in arg_vars else None
    same_index = all(o.offset == store.offset and o.strides == store.strides
                     for o in kernel.operands if o.arg == src and not o.is_output)
    others = [v for i, v in enumerate(arg_vars) if i not in outputs and v != dst_d]
    if same_index:
        before = f"{var} = _store_target({dst_t}, {dst_d}, ({''.join(v + ', ' for v in others)}))"
    else:
        before = f"{var} = _empty_like({dst_d})"
    return before, f"_stored({dst_t}, {dst_d}, {var}, {copy_op})"


def store_target(t, data, others):
    """The array a kernel writes a value that is then copied into tensor `t`: t's own
    memory when that is eager's result (writable, no observer of in-place writes, no other
    array the kernel reads overlaps it), else a new array (see stored)."""
    if t._data is data and data.flags.writeable and not _mutation_observers:
        for o in others:
            if np.may_share_memory(o, data):
                break
        else:
            return data
    return np.empty_like(data)


def stored(t, data, buf, copy_op):
    """After the kernel: a write into t's memory counts as an in-place write (its version);
    a separate buffer is copied in by the eager copy_ (its checks and errors included)."""
    if buf is data:
        t._version_counter[0] += 1
    else:
        copy_op(t, Tensor._make(buf))


RUNTIME_GLOBALS.update({"_store_target": store_target, "_stored": stored, "_empty_like": np.empty_like})
