"""torch.backends.mps: Apple's Metal backend, which dynjit does not have."""


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    return False
