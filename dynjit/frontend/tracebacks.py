"""Tracebacks that read as if the compiled function ran plain.

An exception that leaves a compiled function has passed through the frontend's
machinery: the compiled wrapper, the transformed function, the JIT callback, and
the glue a graph break adds (the call of the resume function). `strip` removes
those entries, so the user sees their own frames (with their own names and line
numbers: break and resume code carry the original's), the library frames plain
Python would show too, and one entry for the compiled wrapper that re-raised it.

Set `dynjit.config.verbose_tracebacks` (env DYNJIT_VERBOSE_TRACEBACKS=1) to keep
every frame, when debugging dynjit itself.
"""
import os
import types
import weakref

from .. import config, _jit_callback
from . import resume

_FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MACHINERY_FILES = frozenset({os.path.abspath(_jit_callback.__file__)})
_GENERATED_PREFIX = "<dynjit-"
_generated_codes = weakref.WeakSet()     # generated code that carries the user's names


def mark_generated(code):
    """`code` is dynjit's, though it carries the user's name and file (a transformed function)."""
    _generated_codes.add(code)


def _is_machinery(tb):
    code = tb.tb_frame.f_code
    filename = code.co_filename
    if filename.startswith(_GENERATED_PREFIX) or filename.startswith(_FRONTEND_DIR) \
            or filename in _MACHINERY_FILES or code in _generated_codes:
        return True
    original, offsets = resume.origin(code)
    # an instruction a graph break added (no original instruction): the resume call, ...
    return offsets is not None and offsets.get(tb.tb_lasti) is None


def strip(exc):
    """`exc` with the frontend's own entries removed from its traceback (returned, for `raise`)."""
    if config.verbose_tracebacks:
        return exc
    tb = exc.__traceback__
    entries = []
    dropped = False
    while tb is not None:
        if _is_machinery(tb):
            dropped = True
        else:
            entries.append(tb)
        tb = tb.tb_next
    if not dropped:
        return exc
    new = None
    for entry in reversed(entries):
        new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return exc.with_traceback(new)
