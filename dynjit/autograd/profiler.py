"""The autograd profiler (torch.autograd.profiler)."""
