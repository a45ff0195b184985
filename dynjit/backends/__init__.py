"""dynjit.backends: library flags, as torch.backends holds them (`cudnn`, `cuda.matmul`,
`mkldnn`, `mps`, `opt_einsum`, `cpu`).

dynjit computes with numpy on the CPU, so there is no cuDNN, CUDA, oneDNN or MPS: each
`is_available()` is False, and the flags are plain attributes that scripts may set (as they
do unconditionally, `dynjit.backends.cudnn.benchmark = True`); setting them changes no result.

The compiler-backend registry that used to live here is `dynjit.compiler`
(`list_backends`, `register_backend`, `lookup_backend`); its old names reached through
`dynjit.backends` still work and warn with a DeprecationWarning.
"""
import warnings

from . import cpu, cuda, cudnn, mkldnn, mps, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]

_MOVED_TO_COMPILER = ("register_backend", "lookup_backend", "list_backends", "call_backend",
                      "ENTRY_POINT_GROUP", "builtin")


def __getattr__(name):
    if name in _MOVED_TO_COMPILER:
        warnings.warn(f"dynjit.backends.{name} moved to dynjit.compiler.{name}; dynjit.backends "
                      "now holds library flags as torch.backends does (cudnn, mkldnn, mps, ...). "
                      f"Use dynjit.compiler.{name}.", DeprecationWarning, stacklevel=2)
        from .. import compiler
        return getattr(compiler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
