"""dynjit.accelerator: torch.accelerator's queries. dynjit runs on the CPU only: there is no
accelerator, so `is_available()` is False, `current_accelerator()` None and
`device_count()` 0."""
from .tensor import _not_cpu_message


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def synchronize(device=None):
    pass


def current_device_index():
    raise RuntimeError(_not_cpu_message("accelerator"))


def set_device_index(device):
    raise RuntimeError(_not_cpu_message("accelerator"))
