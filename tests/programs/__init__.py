"""Realistic PyTorch training programs, written as a PyTorch user writes them with `torch`
replaced by `dynjit`; each runs plain and under dynjit.compile on every backend."""
