"""Anomaly detection for autograd (PyTorch's `detect_anomaly` / `set_detect_anomaly`).

While it is on, every backward node remembers the Python stack of the forward call
that made it (and, for nodes made by a backward with create_graph, the node whose
backward made them); when a node's backward fails, or returns NaN with `check_nan`,
that stack is reported as a warning (or on stderr when warnings are errors).
"""
import sys
import traceback
import warnings


class _AnomalyState:
    enabled = False
    check_nan = True


state = _AnomalyState()


def is_anomaly_enabled():
    return state.enabled


def is_anomaly_check_nan_enabled():
    return state.check_nan


class set_detect_anomaly:
    """Turn anomaly detection on or off: takes effect when called, and restores the
    previous setting when used as a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = (state.enabled, state.check_nan)
        state.enabled = bool(mode)
        state.check_nan = bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on inside it."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and "
                      "should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (state.enabled, state.check_nan)
        state.enabled = True
        state.check_nan = self.check_nan
        return None

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def record_forward(node):
    """Called for each node made while anomaly detection is on."""
    stack = traceback.format_stack()[:-2]       # up to the op call, not dynjit's recording
    node.metadata["traceback_"] = stack
    from .engine import current_autograd_node
    parent = current_autograd_node()
    if parent is not None:                      # made by the backward of `parent`
        node.metadata["parent_"] = parent


def _report(message):
    try:
        warnings.warn(message, stacklevel=2)
    except Warning:                             # warnings are errors: still tell the user
        print(message, file=sys.stderr)


def report_failure(node):
    """The node's backward failed: report the forward stack(s) that led to it."""
    stack = node.metadata.get("traceback_") if node._metadata else None
    if not stack:
        _report(f"Error detected in {node.name()}. No forward pass information available. Enable "
                "detect anomaly during forward pass for more information.")
        return
    _report(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            + "".join(stack))
    parent = node.metadata.get("parent_")
    while parent is not None:
        meta = parent._metadata or {}
        stack = meta.get("traceback_")
        if not stack:
            _report(f"Previous calculation was induced by {parent.name()}. No forward pass "
                    "information available. Enable detect anomaly during forward pass for more "
                    "information.")
        else:
            _report(f"Previous calculation was induced by {parent.name()}. Traceback of forward "
                    "call that induced the previous calculation:\n" + "".join(stack))
        parent = meta.get("parent_")


def check_outputs(node, outs):
    """With check_nan: refuse NaN in what the node's backward returned."""
    if not state.check_nan:
        return
    import numpy as np
    for i, g in enumerate(outs):
        if g is None:
            continue
        data = g._data if type(g._data) is np.ndarray else g._data.values     # (a sparse gradient)
        if data.dtype.kind == "f" and np.isnan(data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
