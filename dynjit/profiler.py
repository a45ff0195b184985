"""dynjit.profiler: the op profiler (torch.profiler)."""
