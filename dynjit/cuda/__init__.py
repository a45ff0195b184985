"""dynjit.cuda: torch.cuda's queries for a library that runs on the CPU only.

`is_available()` is False and `device_count()` 0, so the usual
`device = "cuda" if dynjit.cuda.is_available() else "cpu"` picks the CPU. Seeding
(`manual_seed`, `manual_seed_all`, `seed`, `seed_all`) seeds CUDA generators in torch and
leaves the CPU generator alone; here there are none, so they do nothing. `synchronize` and
`empty_cache` have no pending work or cache to act on. Anything that needs a CUDA device
raises a RuntimeError saying dynjit runs on the CPU."""
from . import amp  # noqa: F401

_NO_CUDA = ("dynjit runs on the CPU only; there is no CUDA device (dynjit.cuda.is_available() is "
            "False). Use device='cpu', or device = \"cuda\" if dynjit.cuda.is_available() else \"cpu\".")


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    int(seed)


def manual_seed_all(seed):
    int(seed)


def seed():
    pass


def seed_all():
    pass


def synchronize(device=None):
    pass


def empty_cache():
    pass


def _needs_cuda(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"dynjit.cuda.{name}(): {_NO_CUDA}")
    fn.__name__ = name
    return fn


for _name in ("current_device", "set_device", "get_device_name", "get_device_properties",
              "get_device_capability", "memory_allocated", "max_memory_allocated", "memory_reserved",
              "max_memory_reserved", "reset_peak_memory_stats", "initial_seed", "get_rng_state",
              "set_rng_state", "get_rng_state_all", "set_rng_state_all", "mem_get_info", "init",
              "current_stream", "default_stream", "Stream", "Event", "device", "stream"):
    globals()[_name] = _needs_cuda(_name)
del _name
