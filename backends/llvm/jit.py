"""LLVM IR text -> optimized machine code for the host CPU -> function addresses.

`load(ir_text)` hashes the IR (with the target CPU, its features and the
LLVM/codegen versions), and looks the hash up
1. in this process (a module already loaded),
2. on disk: `$DYNJIT_CACHE_DIR` or `~/.cache/dynjit/llvm/<hash>.o`, object code
   written by an earlier process,
3. else parses the IR, runs LLVM's O3 pipeline (loop and SLP vectorizers on)
   for the host CPU, emits object code and stores it on disk.
The object code is then linked into one MCJIT engine per process. Symbol names
in the IR carry the placeholder `KPREFIX`, replaced by a name derived from the
hash, so that modules never clash inside the engine.
"""
import ctypes
import ctypes.util
import hashlib
import os
import tempfile
import threading

import llvmlite
import llvmlite.binding as llvm

from .mathlib import LIBM_BINARY, LIBM_UNARY

CODEGEN_VERSION = "1"
PREFIX = "KPREFIX"

stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}

_lock = threading.RLock()
_jit = None


class _Jit:
    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3, jit=True)
        self.triple = llvm.get_process_triple()
        self.data_layout = str(self.tm.target_data)
        _add_c_symbols()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.loaded = {}          # hash -> {symbol: address}
        self.target_key = "|".join([CODEGEN_VERSION, llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                                    self.triple, self.cpu, self.features])

    def optimize(self, mod):
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(self.tm, pto)
        pb.getModulePassManager().run(mod, pb)


def _add_c_symbols():
    """Make the C library functions the kernels may call resolvable by the JIT linker."""
    libs = []
    for name in ("m", "c"):
        path = ctypes.util.find_library(name)
        if path:
            try:
                libs.append(ctypes.CDLL(path))
            except OSError:
                pass
    libs.append(ctypes.CDLL(None))
    names = ["memset", "memcpy", "memmove", "fmodf", "fmod"]
    for n in LIBM_UNARY + LIBM_BINARY + ("sin", "cos"):
        names += [n, n + "f"]
    for n in names:
        for lib in libs:
            try:
                fn = getattr(lib, n)
            except AttributeError:
                continue
            llvm.add_symbol(n, ctypes.cast(fn, ctypes.c_void_p).value)
            break


def jit():
    global _jit
    with _lock:
        if _jit is None:
            _jit = _Jit()
        return _jit


def triple_and_layout():
    j = jit()
    return j.triple, j.data_layout


def cache_dir():
    d = os.environ.get("DYNJIT_CACHE_DIR")
    return d if d else os.path.join(os.path.expanduser("~"), ".cache", "dynjit", "llvm")


def module_hash(ir_text):
    return hashlib.sha256((jit().target_key + "\n" + ir_text).encode()).hexdigest()[:32]


def symbol_prefix(key):
    return "dj" + key[:20]


def compile_object(ir_text):
    """Object code for IR text (already carrying its final symbol names)."""
    j = jit()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    j.optimize(mod)
    return j.tm.emit_object(mod)


def optimized_assembly(ir_text):
    """The host assembly of IR text after the O3 pipeline (to inspect vectorization)."""
    j = jit()
    mod = llvm.parse_assembly(ir_text)
    j.optimize(mod)
    return j.tm.emit_assembly(mod)


def _read_cached(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write_cached(path, data):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass        # an unwritable cache only costs recompilation


def load(ir_text, names):
    """Addresses of the functions `names` (written with the KPREFIX placeholder) of a module."""
    j = jit()
    key = module_hash(ir_text)
    prefix = symbol_prefix(key)
    with _lock:
        addresses = j.loaded.get(key)
        if addresses is not None:
            stats["memory_hits"] += 1
            return {n: addresses[n.replace(PREFIX, prefix)] for n in names}
        path = os.path.join(cache_dir(), key + ".o")
        obj = _read_cached(path)
        if obj is not None:
            stats["disk_hits"] += 1
        else:
            obj = compile_object(ir_text.replace(PREFIX, prefix))
            stats["compiled"] += 1
            _write_cached(path, obj)
        j.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        j.engine.finalize_object()
        final = [n.replace(PREFIX, prefix) for n in names]
        addresses = {f: j.engine.get_function_address(f) for f in final}
        if not all(addresses.values()):
            missing = [f for f, a in addresses.items() if not a]
            raise RuntimeError(f"llvm backend: compiled module lacks functions {missing}")
        j.loaded[key] = addresses
        return {n: addresses[n.replace(PREFIX, prefix)] for n in names}
