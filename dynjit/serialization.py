"""dynjit.save / dynjit.load: checkpoints of tensors, state dicts and nested containers.

The format (docs/serialization.md) is a zip archive, stored uncompressed:

- `dynjit_checkpoint.json`: the manifest; the saved object as JSON (containers, numbers,
  strings, None, dtypes, devices and references to tensors), a table of tensors (dtype,
  shape, stride, storage offset, requires_grad) and a table of storages;
- `storages/<n>.npy`: one flat array per storage, in the .npy format (numpy.load reads it);
- `pickles/<n>.pkl`: only for objects the manifest cannot describe (a custom class, a whole
  module). Loading such a file needs `weights_only=False`, because unpickling can run code.

Tensors that are views of one memory block (one numpy base array) are saved with that block
once and load as tensors sharing memory again, as torch's storages do. The same tensor object
saved twice loads as one object.
"""
import collections
import io
import json
import math
import os
import pickle
import zipfile

import numpy as np

from . import _dtype
from .tensor import Tensor, Size, device as _device, check_device
from .nn.parameter import Parameter

__all__ = ["save", "load", "CheckpointError"]

MANIFEST = "dynjit_checkpoint.json"
FORMAT = "dynjit-checkpoint"
VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)       # fixed: the same object gives the same bytes


class CheckpointError(RuntimeError):
    """A file that is not a dynjit checkpoint, or a corrupt or truncated one."""


# -- save ---------------------------------------------------------------------------------------

class _Writer:
    def __init__(self, pickle_module, pickle_protocol):
        self.tensors = []           # manifest entries
        self.tensor_ids = {}        # id(tensor) -> index (the same object saved once)
        self.keep = []              # keeps saved objects alive so their ids stay unique
        self.storages = []          # flat arrays, in memory order
        self.storage_ids = {}       # id(owner ndarray) -> index
        self.pickles = []
        self.pickle_module = pickle_module
        self.pickle_protocol = pickle_protocol

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj if type(obj) is int else self.other(obj)
        if isinstance(obj, float):
            if type(obj) is not float:
                return self.other(obj)
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            return {"tensor": self.tensor(obj)}
        if isinstance(obj, _dtype.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        if type(obj) is Size:
            return {"size": list(obj)}
        if type(obj) is list:
            return {"list": [self.encode(v) for v in obj]}
        if type(obj) is tuple:
            return {"tuple": [self.encode(v) for v in obj]}
        if type(obj) in (dict, collections.OrderedDict):
            items = [[self.encode(k), self.encode(v)] for k, v in obj.items()]
            out = {"dict" if type(obj) is dict else "odict": items}
            metadata = getattr(obj, "_metadata", None)      # nn.Module.state_dict's versions
            if metadata is not None:
                out["metadata"] = self.encode(metadata)
            return out
        if type(obj) is bytes:
            return {"bytes": obj.hex()}
        return self.other(obj)

    def other(self, obj):
        """An object the manifest cannot describe: pickled (loads with weights_only=False)."""
        buf = io.BytesIO()
        try:
            self.pickle_module.dump(obj, buf, protocol=self.pickle_protocol)
        except Exception as e:
            raise TypeError(f"dynjit.save cannot save an object of type "
                            f"{type(obj).__module__}.{type(obj).__qualname__}: it is none of the "
                            f"types a checkpoint describes (tensors, numbers, strings, None, lists, "
                            f"tuples, dicts) and pickling it failed: {type(e).__name__}: {e}") from e
        self.pickles.append(buf.getvalue())
        return {"pickle": len(self.pickles) - 1,
                "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}

    def tensor(self, t):
        index = self.tensor_ids.get(id(t))
        if index is not None:
            return index
        if type(t._data) is not np.ndarray:
            return self.sparse_tensor(t)
        arr = t._data
        storage, offset, stride = self.storage_of(arr)
        entry = {"dtype": t.dtype.name, "shape": list(arr.shape), "stride": stride,
                 "storage": storage, "storage_offset": offset, "requires_grad": bool(t.requires_grad)}
        if isinstance(t, Parameter):
            entry["parameter"] = True
        self.tensors.append(entry)
        self.keep.append(t)
        index = self.tensor_ids[id(t)] = len(self.tensors) - 1
        return index

    def sparse_tensor(self, t):
        """A sparse tensor: its layout and parts (each an ordinary tensor entry)."""
        from .ops.sparse import storage_parts
        layout, parts, flags = storage_parts(t._data)
        part_tensors = {name: Tensor._make(arr) for name, arr in parts.items()}
        self.keep.extend(part_tensors.values())
        entry = {"layout": layout, "shape": list(t._data.shape), "requires_grad": bool(t.requires_grad),
                 "parts": {name: self.tensor(p) for name, p in part_tensors.items()}, **flags}
        if isinstance(t, Parameter):
            entry["parameter"] = True
        self.tensors.append(entry)
        self.keep.append(t)
        index = self.tensor_ids[id(t)] = len(self.tensors) - 1
        return index

    def storage_of(self, arr):
        """(storage index, element offset, element strides) of `arr` within the memory block
        it views; a block that cannot be described gets a private contiguous copy."""
        owner = arr
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        flat = None
        if owner.flags.c_contiguous or owner.flags.f_contiguous:
            flat = owner.ravel(order="K")
            if owner.size and flat.__array_interface__["data"][0] != owner.__array_interface__["data"][0]:
                flat = None
            elif flat.dtype.kind not in "biuf":
                flat = flat.view(np.uint8)
        item = arr.itemsize
        if flat is not None and flat.size:
            start = flat.__array_interface__["data"][0]
            byte_offset = arr.__array_interface__["data"][0] - start
            if byte_offset % item or any(s % item for s in arr.strides):
                flat = None
        if flat is None or not flat.size:
            owner = flat = np.ascontiguousarray(arr).reshape(-1)
            byte_offset = 0
            strides = [s // item for s in np.ascontiguousarray(arr).strides]
            if not arr.size:
                strides = list(_contiguous_strides(arr.shape))
            self.keep.append(owner)
            return self.add_storage(owner, flat), 0, strides
        index = self.add_storage(owner, flat)
        return index, byte_offset // item, [s // item for s in arr.strides]

    def add_storage(self, owner, flat):
        index = self.storage_ids.get(id(owner))
        if index is None:
            self.storages.append(flat)
            self.keep.append(owner)
            index = self.storage_ids[id(owner)] = len(self.storages) - 1
        return index


def _contiguous_strides(shape):
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save `obj` (tensors, state dicts, nested containers of tensors, numbers, strings and
    None) to `f`: a path, a path-like or a writable binary file object."""
    writer = _Writer(pickle_module, pickle_protocol)
    root = writer.encode(obj)
    manifest = {"format": FORMAT, "version": VERSION, "byteorder": "little" if np.little_endian else "big",
                "root": root, "tensors": writer.tensors,
                "storages": [{"file": f"storages/{i}.npy", "dtype": s.dtype.name, "numel": int(s.size)}
                             for i, s in enumerate(writer.storages)],
                "pickles": [f"pickles/{i}.pkl" for i in range(len(writer.pickles))]}
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "wb") as fh:
            _write(fh, manifest, writer)
    elif hasattr(f, "write"):
        _write(f, manifest, writer)
    else:
        raise TypeError(f"dynjit.save: f must be a path or a writable binary file object, got "
                        f"{type(f).__name__}")


def _write(fh, manifest, writer):
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(zipfile.ZipInfo(MANIFEST, _ZIP_DATE), json.dumps(manifest, indent=1))
        for entry, flat in zip(manifest["storages"], writer.storages):
            buf = io.BytesIO()
            if flat.dtype.metadata is not None:     # bfloat16's tagged float32: the tensor entry names it
                flat = flat.view(np.dtype(flat.dtype.str))
            np.save(buf, flat, allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(entry["file"], _ZIP_DATE), buf.getvalue())
        for name, blob in zip(manifest["pickles"], writer.pickles):
            zf.writestr(zipfile.ZipInfo(name, _ZIP_DATE), blob)


# -- load ---------------------------------------------------------------------------------------

def _describe(f):
    return repr(os.fspath(f)) if isinstance(f, (str, bytes, os.PathLike)) else "the file object"


def _read_bytes(f):
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("dynjit.load: the file object must be opened in binary mode ('rb')")
        return bytes(data)
    raise TypeError(f"dynjit.load: f must be a path or a readable binary file object, got {type(f).__name__}")


def _not_a_checkpoint(what, data):
    if data[:1] == b"\x80" or data[:2] == b"\x8a\x0a":
        hint = " (it looks like a pickle file, such as PyTorch's legacy torch.save format)"
    elif not data:
        hint = " (it is empty)"
    else:
        hint = ""
    return CheckpointError(f"dynjit.load: {what} is not a dynjit checkpoint{hint}; dynjit.save "
                           "writes a zip archive holding dynjit_checkpoint.json")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load what `dynjit.save` wrote. With `weights_only=True` (the default, as in torch) only
    tensors, numbers, strings, None, lists, tuples and dicts load; an object that was pickled
    is rejected (pass `weights_only=False` for files you trust: unpickling can run code).
    `map_location` may be "cpu", a device, a dict of location names or a callable
    fn(storage, location): dynjit's only location is the CPU."""
    if weights_only is None:
        weights_only = True
    what = _describe(f)
    data = _read_bytes(f)
    if data[:4] != _ZIP_MAGIC:
        raise _not_a_checkpoint(what, data)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise CheckpointError(f"dynjit.load: {what} is a corrupt or truncated checkpoint (the zip "
                              f"archive cannot be read: {e})") from e
    with zf:
        names = set(zf.namelist())
        if MANIFEST not in names:
            torch_like = any(n.endswith("/data.pkl") or n == "data.pkl" for n in names)
            hint = (" (it looks like a PyTorch checkpoint written by torch.save, which holds "
                    "pickled code; dynjit does not read it)") if torch_like else ""
            raise CheckpointError(f"dynjit.load: {what} is a zip archive but not a dynjit checkpoint "
                                  f"(it has no {MANIFEST}){hint}")
        reader = _Reader(zf, what, map_location, weights_only, pickle_module or pickle, pickle_load_args)
        return reader.run()


class _Reader:
    def __init__(self, zf, what, map_location, weights_only, pickle_module, pickle_load_args):
        self.zf = zf
        self.what = what
        self.map_storage = _storage_mapper(map_location)
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.pickle_load_args = pickle_load_args

    def corrupt(self, detail):
        return CheckpointError(f"dynjit.load: {self.what} is a corrupt or truncated checkpoint: {detail}")

    def read(self, name):
        try:
            return self.zf.read(name)
        except KeyError:
            raise self.corrupt(f"the manifest names {name!r}, which the archive lacks") from None
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            raise self.corrupt(f"{name!r} cannot be read ({type(e).__name__}: {e})") from e

    def run(self):
        try:
            manifest = json.loads(self.read(MANIFEST).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise self.corrupt(f"{MANIFEST} is not valid JSON ({e})") from e
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise CheckpointError(f"dynjit.load: {self.what} is not a dynjit checkpoint (its {MANIFEST} "
                                  f"does not say format {FORMAT!r})")
        if manifest.get("version") != VERSION:
            raise CheckpointError(f"dynjit.load: {self.what} is a dynjit checkpoint of format version "
                                  f"{manifest.get('version')!r}; this dynjit reads version {VERSION}")
        try:
            self.storage_entries = manifest["storages"]
            self.tensor_entries = manifest["tensors"]
            self.pickle_names = manifest["pickles"]
            self.storages = {}
            self.tensors = {}
            return self.decode(manifest["root"])
        except CheckpointError:
            raise
        except pickle.UnpicklingError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise self.corrupt(f"malformed manifest ({type(e).__name__}: {e})") from e

    def decode(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or not v:
            raise self.corrupt(f"unexpected manifest value {v!r}")
        tag = next(iter(v))
        body = v[tag]
        if tag == "tensor":
            return self.tensor(body)
        if tag == "list":
            return [self.decode(x) for x in body]
        if tag == "tuple":
            return tuple(self.decode(x) for x in body)
        if tag in ("dict", "odict"):
            out = (dict if tag == "dict" else collections.OrderedDict)(
                (self.decode(k), self.decode(x)) for k, x in body)
            if "metadata" in v:
                out._metadata = self.decode(v["metadata"])
            return out
        if tag == "float":
            if body not in ("nan", "inf", "-inf"):
                raise self.corrupt(f"unexpected float {body!r}")
            return float(body)
        if tag == "dtype":
            if body not in _dtype._BY_NAME:
                raise self.corrupt(f"unknown dtype {body!r}")
            return _dtype._BY_NAME[body]
        if tag == "device":
            return check_device(body)
        if tag == "size":
            return Size(int(s) for s in body)
        if tag == "bytes":
            return bytes.fromhex(body)
        if tag == "pickle":
            return self.unpickle(body, v.get("type", "?"))
        raise self.corrupt(f"unknown manifest tag {tag!r}")

    def unpickle(self, index, type_name):
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"dynjit.load: weights_only=True (the default) refused an object of type "
                f"{type_name} in {self.what}: it was pickled, and unpickling can run arbitrary "
                "code. With weights_only=True only tensors, numbers, strings, None, lists, tuples, "
                "dicts, dtypes and devices load. If you trust the file, pass weights_only=False.")
        blob = self.read(self.pickle_names[index])
        return self.pickle_module.loads(blob, **self.pickle_load_args)

    def storage(self, index):
        arr = self.storages.get(index)
        if arr is None:
            entry = self.storage_entries[index]
            try:
                arr = np.load(io.BytesIO(self.read(entry["file"])), allow_pickle=False)
            except (ValueError, EOFError, OSError) as e:
                raise self.corrupt(f"{entry['file']!r} is not a valid .npy array ({e})") from e
            if not arr.dtype.isnative:             # written on a machine of the other byte order
                arr = arr.astype(arr.dtype.newbyteorder("="))
            if arr.ndim != 1 or arr.dtype.name != entry["dtype"] or arr.size != entry["numel"]:
                raise self.corrupt(f"{entry['file']!r} holds {arr.dtype.name}[{arr.size}], the manifest "
                                   f"says {entry['dtype']}[{entry['numel']}]")
            arr = self.map_storage(arr)
            self.storages[index] = arr
        return arr

    def tensor(self, index):
        t = self.tensors.get(index)
        if t is not None:
            return t
        entry = self.tensor_entries[index]
        if "layout" in entry:
            return self.sparse_tensor(index, entry)
        if entry["dtype"] not in _dtype._BY_NAME:
            raise self.corrupt(f"unknown dtype {entry['dtype']!r}")
        dt = _dtype._BY_NAME[entry["dtype"]]
        shape = tuple(int(s) for s in entry["shape"])
        stride = tuple(int(s) for s in entry["stride"])
        offset = int(entry["storage_offset"])
        storage = self.storage(int(entry["storage"]))
        item = np.dtype(dt.np).itemsize
        nbytes = storage.nbytes
        if len(shape) != len(stride) or any(s < 0 for s in shape) or offset < 0:
            raise self.corrupt(f"tensor {index} has an invalid shape/stride/offset")
        if all(shape):
            lo = offset + sum((s - 1) * st for s, st in zip(shape, stride) if st < 0)
            hi = offset + sum((s - 1) * st for s, st in zip(shape, stride) if st > 0)
            if lo < 0 or (hi + 1) * item > nbytes:
                raise self.corrupt(f"tensor {index} reaches outside its storage")
        raw = storage.view(np.uint8)
        if all(shape) and shape:
            arr = np.ndarray(shape, dt.np, buffer=raw, offset=offset * item,
                             strides=tuple(st * item for st in stride))
        elif all(shape):                                # 0-d
            arr = np.ndarray((), dt.np, buffer=raw, offset=offset * item)
        else:
            arr = np.empty(shape, dt.np)
        t = Tensor._make(arr)
        if entry.get("parameter"):
            t = Parameter(t, requires_grad=bool(entry["requires_grad"]))
        elif entry["requires_grad"]:
            t.requires_grad_(True)
        self.tensors[index] = t
        return t


    def sparse_tensor(self, index, entry):
        from .ops.sparse import from_parts
        try:
            parts = {name: self.tensor(int(i))._data for name, i in entry["parts"].items()}
            data = from_parts(entry["layout"], parts, entry["shape"], entry)
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise self.corrupt(f"sparse tensor {index} is invalid ({e})") from e
        t = Tensor._make(data)
        if entry.get("parameter"):
            t = Parameter(t, requires_grad=bool(entry["requires_grad"]))
        elif entry["requires_grad"]:
            t.requires_grad_(True)
        self.tensors[index] = t
        return t


def _storage_mapper(map_location):
    """A function applied to each storage (a flat numpy array) as it loads."""
    if map_location is None:
        return lambda arr: arr
    if isinstance(map_location, (str, _device)):
        check_device(map_location)
        return lambda arr: arr
    if isinstance(map_location, dict):
        target = map_location.get("cpu", "cpu")
        check_device(target)
        return lambda arr: arr
    if callable(map_location):
        def mapped(arr):
            out = map_location(Tensor._make(arr), "cpu")
            if out is None:
                return arr
            if isinstance(out, Tensor):
                out = out._data
            if not isinstance(out, np.ndarray) or out.nbytes != arr.nbytes or out.ndim != 1:
                raise TypeError("dynjit.load: map_location(storage, location) must return the "
                                "storage (a flat tensor of the same size) or None")
            return np.ascontiguousarray(out)
        return mapped
    raise TypeError(f"dynjit.load: map_location must be None, a string, a device, a dict or a "
                    f"callable, got {type(map_location).__name__}")
