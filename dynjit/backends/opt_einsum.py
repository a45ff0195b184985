"""torch.backends.opt_einsum's flags. dynjit's einsum is numpy's (which picks its own
contraction order): `is_available()` is False; `enabled` and `strategy` are settable and
change nothing."""
enabled = True
strategy = "auto"


def is_available():
    return False


def get_opt_einsum():
    return None
