"""torch.backends.cuda's flags. dynjit has no CUDA: `is_built()` is False and the flags
(`matmul.allow_tf32` and the like) are settable attributes that change nothing."""


class _MatmulFlags:
    """torch.backends.cuda.matmul: only known flags may be set (a typo raises)."""
    _NAMES = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction", "fp32_precision")

    def __init__(self):
        object.__setattr__(self, "allow_tf32", False)
        object.__setattr__(self, "allow_fp16_reduced_precision_reduction", True)
        object.__setattr__(self, "allow_bf16_reduced_precision_reduction", True)
        object.__setattr__(self, "fp32_precision", "ieee")

    def __setattr__(self, name, value):
        if name not in self._NAMES:
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


matmul = _MatmulFlags()


def is_built():
    return False


def flash_sdp_enabled():
    return False


def mem_efficient_sdp_enabled():
    return False


def math_sdp_enabled():
    return True


def enable_flash_sdp(enabled):
    pass


def enable_mem_efficient_sdp(enabled):
    pass


def enable_math_sdp(enabled):
    pass
