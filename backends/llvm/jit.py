"""LLVM IR text -> optimized machine code for the host CPU -> function addresses.

`load(ir_text)` hashes the IR (with the target CPU, its features and the
LLVM/codegen versions), and looks the hash up
1. in this process (a module already loaded),
2. on disk: `$DYNJIT_CACHE_DIR` or `~/.cache/dynjit/llvm/<hash>.djo`, object code
   written by an earlier process,
3. else parses the IR, runs LLVM's O3 pipeline (loop and SLP vectorizers on)
   for the host CPU, emits object code and stores it on disk.
The object code is then linked into one MCJIT engine per process. Symbol names
in the IR carry the placeholder `KPREFIX`, replaced by a name derived from the
hash, so that modules never clash inside the engine.

The disk cache cannot hurt: LLVM crashes the process on a malformed object file,
so an entry is loaded only if it is whole and is the one asked for. Each file is
a header and the object code:

    magic "DJITOBJ\0" | format version (u32) | key length (u32) | key (the hash)
    | payload length (u64) | sha256 of everything before it and of the payload | payload

An entry that is empty, truncated, of another format, written for another key
(another graph's object copied or renamed onto this one), or whose checksum does
not match (a flipped bit, a zeroed block) is discarded with one warning naming the
file, and the module is compiled again and stored in its place. Entries are
written to a temporary file in the cache directory, fsynced and renamed over the
entry (os.replace), so a reader never sees half a file, and two processes
storing the same entry both store a whole one.
"""
import ctypes
import ctypes.util
import hashlib
import os
import struct
import tempfile
import threading
import warnings

import llvmlite
import llvmlite.binding as llvm

from .mathlib import LIBM_BINARY, LIBM_UNARY

CODEGEN_VERSION = "2"
PREFIX = "KPREFIX"

CACHE_SUFFIX = ".djo"
CACHE_MAGIC = b"DJITOBJ\0"
CACHE_FORMAT = 1
_HEAD = struct.Struct("<8sII")          # magic, format version, key length
_LEN = struct.Struct("<Q")              # payload length
_DIGEST = 32                            # sha256

stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "disk_rejected": 0}


class CacheWarning(RuntimeWarning):
    """A cached object file was unusable (and has been replaced)."""

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


def cache_path(key):
    return os.path.join(cache_dir(), key + CACHE_SUFFIX)


def encode_entry(key, obj):
    """A cache file's bytes: the header (see the module doc) and the object code."""
    kb = key.encode()
    head = _HEAD.pack(CACHE_MAGIC, CACHE_FORMAT, len(kb)) + kb + _LEN.pack(len(obj))
    return head + hashlib.sha256(head + obj).digest() + obj


def decode_entry(data, key):
    """(object code, None) from a cache file's bytes, or (None, why it is unusable)."""
    if not data:
        return None, "empty file"
    if len(data) < _HEAD.size:
        return None, "truncated header"
    magic, version, klen = _HEAD.unpack_from(data)
    if magic != CACHE_MAGIC:
        return None, "not a dynjit object file (bad magic)"
    if version != CACHE_FORMAT:
        return None, f"format version {version}, expected {CACHE_FORMAT}"
    pos = _HEAD.size
    if klen > 1024 or len(data) < pos + klen + _LEN.size + _DIGEST:
        return None, "truncated header"
    stored_key = data[pos:pos + klen]
    pos += klen
    (length,) = _LEN.unpack_from(data, pos)
    pos += _LEN.size
    head_end = pos
    digest = data[pos:pos + _DIGEST]
    pos += _DIGEST
    if len(data) - pos != length:
        return None, f"payload of {len(data) - pos} bytes, header says {length} (truncated or appended to)"
    obj = data[pos:]
    if hashlib.sha256(data[:head_end] + obj).digest() != digest:
        return None, "checksum mismatch (corrupted)"
    if stored_key != key.encode():
        return None, f"written for another module ({stored_key.decode(errors='replace')})"
    return obj, None


def _read_cached(path, key):
    """(object code or None, why an existing file is unusable or None)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"
    return decode_entry(data, key)


def _write_cached(path, key, obj):
    """Store an entry atomically: a temporary file in the same directory, fsynced, renamed
    over `path`. An unwritable cache only costs recompilation."""
    tmp = None
    try:
        d = os.path.dirname(path)
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=CACHE_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(encode_entry(key, obj))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        try:                        # make the rename itself durable
            dfd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _reject(path, why):
    stats["disk_rejected"] += 1
    warnings.warn(f"dynjit llvm cache: discarding {path}: {why}; compiling the module again",
                  CacheWarning, stacklevel=3)
    try:
        os.unlink(path)
    except OSError:
        pass


def load(ir_text, names):
    """Addresses of the functions `names` (written with the KPREFIX placeholder) of a module."""
    j = jit()
    key = module_hash(ir_text)
    prefix = symbol_prefix(key)
    final = [n.replace(PREFIX, prefix) for n in names]
    with _lock:
        addresses = j.loaded.get(key)
        if addresses is not None:
            stats["memory_hits"] += 1
            return {n: addresses[f] for n, f in zip(names, final)}
        path = cache_path(key)
        obj, why = _read_cached(path, key)
        if why is not None:
            _reject(path, why)
        addresses = None
        if obj is not None:
            addresses = _link(j, obj, final)
            if addresses is None:
                _reject(path, "the object code lacks the module's functions")
            else:
                stats["disk_hits"] += 1
        if addresses is None:
            obj = compile_object(ir_text.replace(PREFIX, prefix))
            stats["compiled"] += 1
            _write_cached(path, key, obj)
            addresses = _link(j, obj, final)
            if addresses is None:
                raise RuntimeError(f"llvm backend: compiled module lacks functions {final}")
        j.loaded[key] = addresses
        return {n: addresses[f] for n, f in zip(names, final)}


def _link(j, obj, final):
    """Add object code to the engine: {symbol: address}, or None if a function is missing."""
    j.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    j.engine.finalize_object()
    addresses = {f: j.engine.get_function_address(f) for f in final}
    return addresses if all(addresses.values()) else None
