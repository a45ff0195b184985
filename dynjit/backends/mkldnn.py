"""torch.backends.mkldnn's flags. dynjit computes with numpy, not oneDNN: `is_available()` is
False; `enabled` is a settable attribute that changes nothing."""
import sys

from ._flags import set_flags

enabled = True
deterministic = False


def is_available():
    return False


def flags(enabled=False, deterministic=False):
    return set_flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic)
