"""Backends that plug into dynjit from outside its core, through the entry-point
group `dynjit.backends` (see docs/backends.md), exactly as a third-party
package would: `llvm` (fused loop kernels compiled with llvmlite)."""
