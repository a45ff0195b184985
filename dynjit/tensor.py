"""`Tensor`: a numpy array plus autograd state, with PyTorch's API.

Every math method goes through the op dispatcher (dynjit.ops.dispatch); this
module only holds state, properties, Python protocol methods and the
conversion helpers. Views share their base's numpy memory and version counter.
"""
import builtins

import numpy as np

from . import _dtype
from ._dtype import from_numpy_dtype
from .ops import metadata as _metadata
from .ops import memory_format as _memory_format
from .ops.dispatch import dispatch, grad_state as _grad_state
from .ops.registry import registry as _ops
from .ops.sparse import SparseCOO as _SparseCOO, layout_of as _layout_of

_NP_SCALARS = (np.generic,)
# observers told when Python reads a tensor's values (item, tolist, bool, numpy): compiled
# autograd's capture uses this to notice a backward whose Python depends on tensor values
_data_reads = []


class Tensor:
    """A numpy array with autograd state.

    This module is the tensor layer: it sits on ops and knows nothing above
    them. Methods that call into the layers above are bound to the class by
    dynjit/_methods.py: the op methods and operators, and autograd's
    (grad_fn, backward, retain_grad, register_hook,
    register_post_accumulate_grad_hook, _get_accumulator).
    """
    # Class-level defaults keep construction to two attribute writes.
    _grad_fn = None
    _output_nr = 0
    _requires_grad = False
    _grad = None
    _base = None
    _view_of = None
    _view_version = 0
    _accumulator = None
    _hooks = None
    _post_acc_hooks = None
    _retains_grad = False
    _is_inference = False
    _creation_meta = None       # a view's ('no_grad'|'inference'|'multi'|'custom', name, nr)
    _is_param = False
    _meta_ops = ()              # inverses of the in-place view ops applied to this tensor (ops.metadata)
    _src_meta = 0               # a view: len(source._meta_ops) when it was made
    _fw_grads = None            # forward AD: {level: tangent} (autograd.forward_ad)
    _fw_nondiff_view = False    # forward AD: a view that does not share its base's tangent
    __array_priority__ = 1000   # numpy scalars defer to Tensor's reflected ops

    def __init__(self, *args, dtype=None, requires_grad=False):
        # PyTorch's legacy constructor: Tensor(data) is always of the default float dtype
        # (Tensor(bool_array) is 0./1., as programs use it), Tensor(2, 3) a (zero-filled)
        # tensor of that size; a Tensor argument keeps its dtype
        sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
        if sizes and all(isinstance(s, builtins.int) and not isinstance(s, builtins.bool) for s in sizes):
            if any(s < 0 for s in sizes):
                raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
            data = np.zeros(tuple(sizes), dtype=_dtype.to_dtype(dtype or _dtype.get_default_dtype()).np)
        elif len(args) > 1:
            raise TypeError(f"Tensor() takes one sequence of data or sizes as ints, got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        else:
            data = args[0] if args else None
            if dtype is None and not isinstance(data, Tensor):
                dtype = _dtype.get_default_dtype()
        arr = _to_array(data if data is not None else [], dtype)
        self._data = arr
        self._version_counter = [0]
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, arr):
        t = object.__new__(Tensor)
        t._data = arr
        t._version_counter = [0]
        if _grad_state.inference:
            t._is_inference = True
        return t

    # -- basic properties ------------------------------------------------
    @property
    def dtype(self):
        d = self._data.dtype
        if d.metadata is not None:          # bfloat16 (float32 storage, tagged)
            return _dtype.dtype_of_np(d)
        return _dtype._FROM_NP[d]

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    def stride(self, dim=None):
        item = self._data.itemsize
        st = tuple(s // item for s in self._data.strides)
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self):
        if self._base is None:
            return 0
        return (self._data.__array_interface__["data"][0]
                - self._base._data.__array_interface__["data"][0]) // self._data.itemsize

    def data_ptr(self):
        return self._data.__array_interface__["data"][0]

    def untyped_storage(self):
        return _Storage(self._base if self._base is not None else self)

    def dim(self):
        return self._data.ndim

    ndim = property(dim)

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self.dtype.itemsize        # bfloat16: 2, though stored as float32

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return self._data.flags.c_contiguous
        return _memory_format.is_contiguous_in(self._data, memory_format)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def is_conj(self):
        return False        # conj() makes a conjugated copy: there is no lazy conjugate bit

    def is_neg(self):
        return False

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def conj_physical(self):
        return dispatch(_ops["conj"], (self,), {})

    @property
    def real(self):
        """The real part, a view (a real tensor is its own real part, as in PyTorch)."""
        if self._data.dtype.kind != "c":
            return self
        return dispatch(_ops["real"], (self,), {})

    @real.setter
    def real(self, value):
        self.real.copy_(value if isinstance(value, Tensor) else tensor(value, dtype=self.dtype.to_real()))

    @property
    def imag(self):
        """The imaginary part, a view (a real tensor has none: PyTorch's error)."""
        return dispatch(_ops["imag"], (self,), {})

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value if isinstance(value, Tensor) else tensor(value, dtype=self.dtype.to_real()))

    @property
    def device(self):
        return _CPU

    def get_device(self):
        return -1           # PyTorch's answer for a CPU tensor

    is_cpu = property(lambda self: True)
    is_cuda = property(lambda self: False)
    is_xpu = property(lambda self: False)
    is_mps = property(lambda self: False)
    is_meta = property(lambda self: False)
    is_ipu = property(lambda self: False)
    is_hpu = property(lambda self: False)
    is_mkldnn = property(lambda self: False)
    is_vulkan = property(lambda self: False)
    is_quantized = property(lambda self: False)

    @property
    def layout(self):
        return _layout_of(self._data)

    @property
    def is_sparse(self):
        return type(self._data) is _SparseCOO

    def type(self, dtype=None):
        if dtype is None:
            return {"float32": "dynjit.FloatTensor", "float64": "dynjit.DoubleTensor",
                    "int64": "dynjit.LongTensor", "int32": "dynjit.IntTensor",
                    "bool": "dynjit.BoolTensor", "float16": "dynjit.HalfTensor",
                    "bfloat16": "dynjit.BFloat16Tensor", "complex64": "dynjit.ComplexFloatTensor",
                    "complex128": "dynjit.ComplexDoubleTensor"}.get(
                        self.dtype.name, f"dynjit.{self.dtype.name}Tensor")
        return self.to(dtype)

    @property
    def T(self):
        return self.permute(*range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError("Tensor.data must be set to a Tensor")
        if self._requires_grad and not other.dtype.is_floating_point:
            raise RuntimeError(f"data set to a tensor that requires gradients must be floating point "
                               f"or complex dtype (got {other.dtype.name})")
        if type(other._data) is not type(self._data):      # a dense tensor and a sparse one
            raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and "
                               "`tensor` have incompatible tensor type.")
        self._data = other._data

    @property
    def volatile(self):
        import warnings
        warnings.warn("volatile was removed (Variable.volatile is always False); use "
                      "dynjit.no_grad() instead", UserWarning, stacklevel=2)
        return False

    _UNDELETABLE = frozenset(("data", "requires_grad", "grad_fn", "_grad_fn", "is_leaf",
                              "_backward_hooks", "_version", "_base", "shape", "dtype"))

    def __delattr__(self, name):
        if name in Tensor._UNDELETABLE:
            raise RuntimeError(f"cannot delete the {name!r} attribute of a Tensor")
        object.__delattr__(self, name)

    @property
    def _version(self):
        """The version counter's value: bumped by every in-place change (shared with views)."""
        if self._is_inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_counter[0]

    def _is_view(self):
        return self._base is not None

    _version_value = _version

    @property
    def is_inference(self):
        return lambda: self._is_inference

    # -- autograd state --------------------------------------------------
    @property
    def requires_grad(self):
        if self._base is not None and self._view_version != self._version_counter[0]:
            self.grad_fn     # the base changed in place: the view may now require grad
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach().")
            return self
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients (this tensor is "
                f"{self.dtype.name}); convert it first, e.g. x.float().requires_grad_()")
        if requires_grad and self._is_inference and not _grad_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        if (self._grad_fn is not None and not self._retains_grad and _warn_nonleaf_grad[0]):
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"assigned grad has data of a different type ({value.dtype.name}) "
                                   f"than the tensor ({self.dtype.name})")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size "
                                   f"({list(value.shape)}) than the tensor ({list(self.shape)})")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def _snapshot(self):
        """A copy of this tensor's current value that keeps its autograd identity
        (saved for backward before an in-place op overwrites it)."""
        t = Tensor._make(self._data.copy())
        t._grad_fn = self.grad_fn
        t._output_nr = self._output_nr
        t._requires_grad = self._requires_grad
        if t._grad_fn is None and self._requires_grad:
            t._accumulator = self._get_accumulator()
        return t

    def detach(self):
        return dispatch(_ops["detach"], (self,), {})

    def detach_(self):
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def retains_grad(self):
        return self._retains_grad

    # -- metadata mutation (see dynjit.ops.metadata) ------------------------
    def t_(self):
        """Transpose this 2-D tensor in place (its shape and strides change, its memory does not)."""
        return _metadata.metadata_mutation("t_", self, ())

    def transpose_(self, dim0, dim1):
        """Swap two dimensions of this tensor in place (a metadata change)."""
        return _metadata.metadata_mutation("transpose_", self, (dim0, dim1))

    def swapdims_(self, dim0, dim1):
        return _metadata.metadata_mutation("swapdims_", self, (dim0, dim1))

    swapaxes_ = swapdims_

    def unsqueeze_(self, dim):
        """Insert a dimension of size 1 at `dim`, in place (a metadata change)."""
        return _metadata.metadata_mutation("unsqueeze_", self, (dim,))

    def squeeze_(self, dim=None):
        """Remove dimensions of size 1 (all, or `dim`), in place (a metadata change)."""
        return _metadata.metadata_mutation("squeeze_", self, () if dim is None else (dim,))

    def set_(self, source):
        """Make this tensor use `source`'s memory, shape and strides (only without autograd
        recording: under no_grad, or when neither requires grad)."""
        return _metadata.metadata_mutation("set_", self, (source,))

    # -- conversion --------------------------------------------------------
    def numpy(self, *, force=False):
        if self._requires_grad and not force and _grad_state.enabled:     # as PyTorch: fine under no_grad
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if _data_reads:
            _data_reads[-1](self, "numpy")
        if type(self._data) is not np.ndarray:      # a sparse tensor, of any layout
            raise TypeError(f"can't convert {str.__str__(self.layout)} layout tensor to numpy. Use "
                            "Tensor.to_dense() first.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if _data_reads:
            _data_reads[-1](self, "__array__")
        if type(self._data) is not np.ndarray:      # a sparse tensor, of any layout
            raise TypeError(f"can't convert {str.__str__(self.layout)} layout tensor to numpy. Use "
                            "Tensor.to_dense() first.")
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if _data_reads:
            _data_reads[-1](self, "item")
        return self._data.reshape(()).item()

    def tolist(self):
        if _data_reads:
            _data_reads[-1](self, "tolist")
        return self._data.tolist()

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(it has {self._data.size} elements); use .any() or .all()")
        if _data_reads:
            _data_reads[-1](self, "__bool__")
        return bool(self._data.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        if type(self._data) is not np.ndarray:
            from .ops.sparse import sparse_repr
            return sparse_repr(self)
        from ._printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._data.copy(), self._requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        new = type(self).__new__(type(self))
        new._data = self._data.copy()
        new._version_counter = [0]
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    # -- indexing ------------------------------------------------------------
    def __getitem__(self, index):
        basic, idx = _normalize_index(index)
        if basic:
            return dispatch(_getitem, (self, idx), {})
        return dispatch(_index, (self, list(idx)), {})

    def __setitem__(self, index, value):
        basic, idx = _normalize_index(index)
        if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
            # as PyTorch's indexing assignment, the value's leading size-1 dims are dropped
            # (x[t] = v of shape [1, n] into a row of n)
            lead = 0
            while lead < value.ndim and value.shape[lead] == 1:
                lead += 1
            value = value.reshape(tuple(value.shape[lead:]))
        if basic:
            target = dispatch(_getitem, (self, idx), {})
            if not isinstance(value, Tensor):
                value = tensor(value, dtype=self.dtype)
            dispatch(_copy_, (target, value), {})
        else:
            if not isinstance(value, Tensor):
                value = tensor(value, dtype=self.dtype)
            dispatch(_index_put_, (self, list(idx), value), {})

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
        """to(dtype), to(device), to(device, dtype), to(other): the CPU is the only device, so
        only the dtype can change (a copy when `copy=True` or when the dtype changes)."""
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, builtins.bool):
                non_blocking = a
            elif isinstance(a, (str, _device_class, builtins.int)):
                device = a
            else:
                raise TypeError(f"to() received an invalid combination of arguments - got "
                                f"{builtins.type(a).__name__}; expected a dtype, a device (or a "
                                "device string such as 'cpu') or a tensor")
        if device is not None:
            check_device(device)
        if memory_format is not None and memory_format is not _memory_format.preserve_format:
            out = self if dtype is None or dtype is self.dtype else self.to(dtype)
            if not copy and out.is_contiguous(memory_format=memory_format):
                return out
            return dispatch(_ops["to_memory_format"], (out, memory_format), {})
        if dtype is None or dtype is self.dtype:
            return self.clone() if copy else self
        return dispatch(_ops["to_dtype"], (self, _dtype.to_dtype(dtype)), {})

    def cpu(self, memory_format=None):
        return self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        raise RuntimeError(_not_cpu_message("cuda" if device is None else f"cuda:{device}" if
                                            isinstance(device, builtins.int) else str(device)))

    def pin_memory(self, device=None):
        raise RuntimeError("Cannot access accelerator device when none is available: pinned memory "
                           "is for copies to an accelerator, and dynjit runs on the CPU only.")

    def is_pinned(self, device=None):
        return False

    def float(self):
        return self.to(_dtype.float32)

    def double(self):
        return self.to(_dtype.float64)

    def half(self):
        return self.to(_dtype.float16)

    def bfloat16(self):
        return self.to(_dtype.bfloat16)

    def cfloat(self):
        return self.to(_dtype.complex64)

    def cdouble(self):
        return self.to(_dtype.complex128)

    def long(self):
        return self.to(_dtype.int64)

    def int(self):
        return self.to(_dtype.int32)

    def bool(self):
        return self.to(_dtype.bool_)

    def type_as(self, other):
        return self.to(other.dtype)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def size_hint(self):
        return self.shape


class Size(tuple):
    """A tensor's shape: a tuple of ints, printed like PyTorch's."""

    def __repr__(self):
        return f"dynjit.Size([{', '.join(map(str, self))}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """A device, as torch.device: `device("cpu")`, `device("cpu:0")`, `device("cpu", 0)`.

    dynjit computes on the CPU only: naming another device (`"cuda"`, `"mps"`, ...) raises
    a RuntimeError that says so and how to choose the device portably."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): a device object takes no index")
            type, index = type.type, type.index
        elif isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            raise RuntimeError(f"device({type}): a bare index names an accelerator device; "
                               f"{_CPU_ONLY} Use device('cpu').")
        elif not isinstance(type, str):
            raise TypeError(f"device() expects a string or a device, got {builtins.type(type).__name__}")
        kind, colon, idx = type.partition(":")
        if colon:
            if index is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = builtins.int(idx)
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                               f"device string: {type}")
        if kind != "cpu":
            raise RuntimeError(_not_cpu_message(type if colon else kind if index is None else f"{kind}:{index}"))
        if index is not None:
            if not isinstance(index, builtins.int) or isinstance(index, builtins.bool) or index < 0:
                raise RuntimeError(f"Device index must not be negative (or not an int): {index!r}")
            if index != 0:
                raise RuntimeError(f"dynjit has one CPU device, cpu:0; there is no cpu:{index}")
        self._type = kind
        self._index = index

    type = property(lambda self: self._type)         # read-only, as torch.device's
    index = property(lambda self: self._index)

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self):        # `with dynjit.device("cpu"):` sets nothing: the CPU is the only device
        return self

    def __exit__(self, *exc):
        return False


_CPU_ONLY = "dynjit runs on the CPU only (it computes with numpy); there is no accelerator."


def _not_cpu_message(name):
    return (f"dynjit runs on the CPU only; device '{name}' is not available. Use device='cpu', or "
            "choose the device portably: device = \"cuda\" if dynjit.cuda.is_available() else \"cpu\" "
            "(dynjit.cuda.is_available() is False).")


def check_device(dev):
    """The device `dev` names (a device, a string such as "cpu" or "cpu:0", or None for the
    CPU), raising dynjit's CPU-only error for any other device."""
    if dev is None:
        return _CPU
    return dev if isinstance(dev, device) else device(dev)


_CPU = device("cpu")
_device_class = device      # (Tensor.to has a parameter named device)


def get_default_device():
    return _CPU


def set_default_device(dev):
    check_device(dev)


class _Storage:
    def __init__(self, root):
        self._root = root

    def data_ptr(self):
        return self._root.data_ptr()

    def size(self):
        return self._root._data.nbytes

    def nbytes(self):
        return self._root._data.nbytes


_warn_nonleaf_grad = [True]


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _rebuild(arr, requires_grad):
    t = Tensor._make(arr)
    t._requires_grad = requires_grad
    return t


def _to_array(data, dtype):
    np_dtype = None
    if dtype is not None:
        np_dtype = _dtype.to_dtype(dtype).np
    if isinstance(data, Tensor):
        arr = np.array(data._data, dtype=np_dtype, copy=True)
        return arr
    if isinstance(data, np.ndarray):
        arr = np.array(data, dtype=np_dtype, copy=True)
    else:
        data = _unwrap_nested(data)
        arr = _python_data_array(data, np_dtype)
        if np_dtype is None:
            if arr.dtype.kind == "f":
                with np.errstate(over="ignore"):        # 1e300 is inf in float32, as in PyTorch
                    arr = arr.astype(_dtype.get_default_dtype().np)
            elif arr.dtype.kind in "iu":
                arr = arr.astype(np.int64)
            elif arr.dtype.kind == "c":     # Python complex numbers: the default complex dtype
                arr = arr.astype(_dtype.get_default_complex_dtype().np)
    if arr.dtype.kind == "f" and np_dtype is None and arr.dtype == np.float64 and not isinstance(data, np.ndarray):
        arr = arr.astype(_dtype.get_default_dtype().np)
    if np_dtype is not None and np_dtype.metadata is not None:     # bfloat16: round the values
        arr = _dtype.round_to_bfloat16(arr)
    if arr.dtype not in _dtype._FROM_NP:
        raise TypeError(f"can't make a tensor from data of numpy dtype {arr.dtype}")
    return arr


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _python_data_array(data, np_dtype):
    """Python numbers (nested lists) as an array of `np_dtype` (None: numpy's inference,
    refined by the caller), converted as PyTorch converts them: an int beyond int64 is
    an overflow error unless it becomes a float or bool; a value outside an integer
    dtype's range is an error (a negative int wraps into uint8, a float is truncated);
    numpy would wrap silently or give up on the int64 range."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            arr = np.array(data)
        except OverflowError:
            arr = None
        if arr is None or arr.dtype.kind in "uO" or (
                arr.dtype.kind == "f" and arr.size and np.fmax.reduce(np.abs(arr), axis=None) >= 2.0 ** 63):
            # numpy met an int outside int64 (and gave uint64, object or, nested, float64)
            target = np_dtype.kind if np_dtype is not None else None
            if target in ("f", "b") or (target is None and _contains_float(data)):
                return np.array(data, dtype=np_dtype or np.float64)
            big = _int_beyond_int64(data)
            if big is not None:
                raise ValueError(f"Overflow when unpacking long long: {big} does not fit in int64 "
                                 "(the range of dynjit's integer tensors)")
            if arr is None:
                arr = np.array(data, dtype=np_dtype)
        if np_dtype is None or arr.dtype == np_dtype:
            return arr
        if arr.dtype.kind not in "biuf":
            return np.array(data, dtype=np_dtype)
        if np_dtype.kind in "iu" and arr.dtype.kind in "iuf":
            _check_integer_range(arr, np_dtype)
        return arr.astype(np_dtype)


def _check_integer_range(arr, np_dtype):
    info = np.iinfo(np_dtype)
    if arr.dtype.kind == "f":
        bad = ~((arr >= info.min) & (arr <= info.max))      # NaN too
    elif np_dtype.kind == "u":
        bad = (arr > info.max) | (arr < -info.max)          # -1 wraps to 255, as in PyTorch
    else:
        bad = (arr > info.max) | (arr < info.min)
    if bad.any():
        raise RuntimeError(f"value cannot be converted to type {np_dtype.name} without overflow "
                           f"(got {arr[bad].flat[0].item()!r})")


def _contains_float(data):
    if isinstance(data, (list, tuple)):
        return any(_contains_float(d) for d in data)
    return isinstance(data, (float, np.floating)) or (
        isinstance(data, np.ndarray) and data.dtype.kind == "f")


def _int_beyond_int64(data):
    """The first Python int in `data` outside int64's range, or None."""
    if isinstance(data, (list, tuple)):
        for d in data:
            big = _int_beyond_int64(d)
            if big is not None:
                return big
        return None
    if isinstance(data, int) and not isinstance(data, bool) and not _INT64_MIN <= data <= _INT64_MAX:
        return data
    return None


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor holding a copy of `data` (nested lists, numbers, arrays)."""
    check_device(device)
    t = Tensor._make(_to_array(data, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    check_device(device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(arr):
    """A tensor sharing memory with a numpy array."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(arr).__name__}")
    from_numpy_dtype(arr.dtype)
    return Tensor._make(arr)


def is_tensor(obj):
    return isinstance(obj, Tensor)



# -- indexing ------------------------------------------------------------------
# Basic indices (ints, slices, None, Ellipsis) give a view through the `getitem` op;
# anything holding an integer/bool tensor or a list is advanced indexing through the
# `index` op (a copy). Assignment writes through a view with `copy_` or, for advanced
# indices, uses `index_put_`.

_getitem = _ops["getitem"]
_index = _ops["index"]
_index_put_ = _ops["index_put_"]
_copy_ = _ops["copy_"]
_BASIC_INDEX = (int, slice, type(None), type(Ellipsis))


def _normalize_index(index):
    """(is_basic, index tuple) with 0-d integer tensors turned into ints."""
    if not isinstance(index, tuple):
        index = (index,)
    basic = True
    out = []
    for i in index:
        if isinstance(i, Tensor):
            if i._data.ndim == 0 and i._data.dtype.kind in "iu":
                i = int(i._data)
            else:
                basic = False
                if i._data.dtype.kind == "f":
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(i, bool) or isinstance(i, np.bool_):
            basic = False
        elif isinstance(i, np.integer):
            i = int(i)
        elif isinstance(i, (list, np.ndarray)):
            basic = False
        elif not isinstance(i, _BASIC_INDEX):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"tensors are valid indices (got {type(i).__name__})")
        if isinstance(i, slice):
            for part in (i.start, i.stop, i.step):
                if isinstance(part, Tensor):
                    i = slice(*(int(p) if isinstance(p, Tensor) else p for p in (i.start, i.stop, i.step)))
                    break
            if i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
        out.append(i)
    return basic, tuple(out)
