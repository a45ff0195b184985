"""dynjit.amp: torch.amp's `autocast` and `GradScaler` for a CPU-only library.

- `autocast(device_type, dtype=None, enabled=True)`: disabled, it does nothing (results are
  exactly those without it). For "cuda" (or another accelerator), as torch does when the
  device is missing, it warns and disables itself. Enabled on the CPU it does what torch's
  CPU autocast does: ops tagged AUTOCAST_LOWER_PRECISION in the registry (matrix products,
  convolution) run on their floating inputs cast to `dtype` (bfloat16 by default, or
  float16), ops tagged AUTOCAST_FP32 (nll_loss, prod) on inputs cast to float32, other ops
  in their inputs' dtypes; float64 inputs are never cast. It is a dispatch mode, so the casts
  are ordinary `to` ops that autograd records. bfloat16 computes in float32 and rounds every
  result to bfloat16 (dynjit/_dtype.py), which gives PyTorch's values up to the order of
  float32 roundings inside an op.
- `GradScaler(device="cuda", ...)`: for "cuda" it warns that CUDA is missing and is disabled,
  a pass-through (`scale(loss)` is `loss`, `step(opt)` is `opt.step()`), as torch's is. For
  `device="cpu"` it scales for real: the loss is multiplied by a power of two, gradients are
  divided back (exactly, barring overflow), a step whose gradients hold an inf or a NaN is
  skipped and the scale backed off, as torch's.
"""
import functools
import math
import threading
import warnings

from . import _dtype
from .ops.dispatch import DispatchMode
from .ops.registry import registry as _R, AUTOCAST_LOWER_PRECISION, AUTOCAST_FP32

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "custom_fwd", "custom_bwd"]


def is_autocast_available(device_type):
    return device_type == "cpu"


class _State(threading.local):
    def __init__(self):
        self.stack = []         # (enabled, dtype) of the autocast blocks entered, innermost last


_state = _State()
# enabled CPU autocast blocks open in any thread: while there are none, a disabled block has
# nothing to switch off and touches no state (so compiled code can enter it freely)
_enabled_blocks = 0


def is_autocast_enabled(device_type=None):
    """Whether the innermost CPU autocast block is enabled. Without a device_type this asks about
    CUDA, as PyTorch's legacy form does: always False here."""
    if device_type != "cpu":
        return False
    return bool(_state.stack) and _state.stack[-1][0]


def get_autocast_dtype(device_type="cpu"):
    """The dtype autocast casts to (bfloat16 on the CPU unless a block chose float16)."""
    for enabled, dtype in reversed(_state.stack):
        if enabled:
            return dtype
    return _dtype.bfloat16


def _cast(value, target):
    from .tensor import Tensor
    if isinstance(value, Tensor):
        d = value.dtype
        if d.is_floating_point and d is not _dtype.float64 and d is not target:
            return _R["to_dtype"](value, target)
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast(v, target) for v in value)
    return value


class _AutocastMode(DispatchMode):
    """Casts the inputs of the ops autocast's policy names (see the module docstring)."""

    def __dispatch__(self, op, args, kwargs):
        if _state.stack and _state.stack[-1][0]:
            if AUTOCAST_LOWER_PRECISION in op.tags:
                target = _state.stack[-1][1]
            elif AUTOCAST_FP32 in op.tags:
                target = _dtype.float32
            else:
                return op(*args, **kwargs)
            args = tuple(_cast(a, target) for a in args)
            kwargs = {k: _cast(v, target) for k, v in kwargs.items()}
        return op(*args, **kwargs)


class autocast:
    """Context manager and decorator; see the module docstring for what it does on dynjit."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type != "cpu":
            warnings.warn(f"User provided device_type of '{device_type}', but {device_type.upper()} "
                          "is not available (dynjit runs on the CPU only). Disabling", stacklevel=2)
            self._enabled = False
        if self.fast_dtype is None:
            self.fast_dtype = _dtype.bfloat16
        if device_type == "cpu" and self._enabled and self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                          stacklevel=2)
            self._enabled = False
        self._mode = None

    def __enter__(self):
        global _enabled_blocks
        self._pushed = False
        if self.device != "cpu" or not (self._enabled or _enabled_blocks):
            return self
        _state.stack.append((self._enabled, self.fast_dtype))
        self._pushed = True
        if self._enabled:
            _enabled_blocks += 1
            self._mode = _AutocastMode()
            self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        global _enabled_blocks
        if not self._pushed:
            return False
        if self._mode is not None:
            self._mode.__exit__(*exc)
            self._mode = None
            _enabled_blocks -= 1
        _state.stack.pop()
        self._pushed = False
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """torch.amp.custom_fwd: autocast never runs enabled on dynjit, so the function is as is."""
    if fwd is None:
        return lambda f: f
    return fwd


def custom_bwd(bwd=None, *, device_type="cpu"):
    if bwd is None:
        return lambda f: f
    return bwd


class GradScaler:
    """torch.amp.GradScaler: see the module docstring."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        if enabled and self._device.split(":")[0] != "cpu":
            warnings.warn(f"GradScaler is enabled, but {self._device} is not available "
                          "(dynjit runs on the CPU only). Disabling.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}            # id(optimizer) -> {"unscaled": bool, "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False})

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        from .autograd import no_grad
        inv = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    if not bool(p.grad.isfinite().all()):
                        found_inf = True
        state["unscaled"], state["found_inf"] = True, found_inf

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        else:
            found_inf = any(s["found_inf"] for s in self._per_optimizer.values())
            if found_inf:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    candidate = self._scale * self._growth_factor
                    if math.isfinite(candidate):
                        self._scale = candidate
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
