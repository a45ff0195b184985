"""torch.backends.cpu: what the CPU offers dynjit's kernels (numpy's; no vector ISA dispatch)."""


def get_cpu_capability():
    return "DEFAULT"
