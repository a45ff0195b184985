"""Flat per-group optimizer state for the `foreach=True` update paths.

A pointwise update (Adam's moments and bias corrections) costs the same dozen ops
for every parameter; over a model with many parameters the per-op overhead, not
the arithmetic, dominates. With foreach=True an optimizer keeps each state entry
of a group ('exp_avg', 'exp_avg_sq', ...) in ONE flat buffer whose slices,
viewed in each parameter's shape, are the per-parameter state tensors PyTorch's
format expects (so state_dict/load_state_dict are unchanged). A step then runs
the update once over the flat buffers and writes each parameter's slice back.

The flat layout is (re)built from the per-parameter state whenever it no longer
matches: other parameters have gradients, or the state tensors were replaced
(load_state_dict). Parameters of a group must share a dtype and a step count;
otherwise the optimizer keeps its per-parameter loop.
"""
from .. import functional as _fn
from .._dtype import float64
from ..tensor import tensor


class FlatGroupState:
    """The flat buffers of one parameter group: `buffers[name]` (1-d) whose
    `views[name]` are the per-parameter state tensors, and `steps` (the parameters'
    own 0-d float64 step counts, all equal, or None)."""

    def __init__(self, params, names, buffers, views, steps):
        self.params = params
        self.names = names
        self.buffers = buffers
        self.views = views
        self.steps = steps
        self.slices = _slices(params)

    def matches(self, params, state):
        if len(params) != len(self.params) or any(a is not b for a, b in zip(params, self.params)):
            return False
        for i, p in enumerate(params):
            s = state.get(p) or {}
            if self.steps is not None and s.get("step") is not self.steps[i]:
                return False
            for name in self.names:
                if s.get(name) is not self.views[name][i]:
                    return False
        return True

    def add_to_steps(self):
        """Count a step for every parameter; returns the (common) new step count."""
        for step in self.steps:
            step.add_(1)
        return self.steps[0]

    def flat(self, tensors):
        """One 1-d tensor holding `tensors` (one per parameter) in the layout's order."""
        return _fn.cat([t.reshape(-1) for t in tensors])

    def write_back(self, update):
        """p += update's slice of p for every parameter."""
        for p, (start, stop) in zip(self.params, self.slices):
            p.add_(update[start:stop].view_as(p))


def flat_group_state(optimizer, group, params, names, with_step):
    """The group's flat state over `params` (those with gradients): the cached layout,
    or new zero buffers when none of the parameters has state yet (first step), or a
    layout rebuilt from the per-parameter state; None when the per-parameter loop must
    be used (mixed dtypes, some parameters without state, differing step counts)."""
    cache = optimizer._flat_group_states          # [group, layout] pairs
    entry = next((e for e in cache if e[0] is group), None)
    state = optimizer.state
    if entry is not None and entry[1].matches(params, state):
        return entry[1]
    if not params or len({p.dtype for p in params}) != 1:
        return None
    if all(not state.get(p) for p in params):
        layout = _fresh_layout(params, names, with_step)
    else:
        layout = _layout_from_state(params, names, with_step, state)
        if layout is None:
            return None
    for i, p in enumerate(params):
        entries = state[p]
        for name in names:
            entries[name] = layout.views[name][i]
        if with_step:
            entries["step"] = layout.steps[i]
    if entry is None:
        cache.append([group, layout])
    else:
        entry[1] = layout
    return layout


def _slices(params):
    out, offset = [], 0
    for p in params:
        out.append((offset, offset + p.numel()))
        offset += p.numel()
    return out


def _views(buffer, params, slices):
    return [buffer[start:stop].view_as(p) for p, (start, stop) in zip(params, slices)]


def _fresh_layout(params, names, with_step):
    """Zero state for parameters that have none yet. Reads no tensor values, so a
    compiled first step traces it."""
    slices = _slices(params)
    total = slices[-1][1]
    buffers = {name: _fn.zeros(total, dtype=params[0].dtype) for name in names}
    views = {name: _views(buffers[name], params, slices) for name in names}
    steps = [tensor(0.0, dtype=float64) for _ in params] if with_step else None
    return FlatGroupState(list(params), names, buffers, views, steps)


def _layout_from_state(params, names, with_step, state):
    """A layout holding copies of the parameters' existing state (after load_state_dict
    or when other parameters have gradients); None if it cannot be flat."""
    if any(n not in state.get(p, {}) for p in params for n in names):
        return None
    if with_step and any("step" not in state.get(p, {}) for p in params):
        return None
    slices = _slices(params)
    steps = None
    if with_step:
        steps = [state[p]["step"] for p in params]
        if len({float(step) for step in steps}) != 1:
            return None
    buffers = {name: _fn.cat([state[p][name].reshape(-1) for p in params]) for name in names}
    views = {name: _views(buffers[name], params, slices) for name in names}
    return FlatGroupState(list(params), names, buffers, views, steps)
