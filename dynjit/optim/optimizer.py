"""`Optimizer`: the base of every optimizer (PyTorch's torch.optim.Optimizer).

Holds `param_groups` (dicts of 'params' plus hyperparameters, defaults filled
in) and per-parameter `state`; `state_dict()` refers to parameters by their
position across the groups, so it can be loaded into an optimizer built over
another model of the same shape.
"""
import copy
import itertools
import warnings
from collections import defaultdict

from ..autograd.grad_mode import no_grad
from ..nn.modules.hooks import HookDict, add_hook
from .._dtype import float64
from ..tensor import Tensor, tensor


class _RequiredParameter:
    """Marks a hyperparameter that has no default (like SGD's lr in old PyTorch)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _check_at_least(name, value, low=0.0):
    """PyTorch's hyperparameter check: 'Invalid <name>: <value>' when value < low."""
    if not low <= value:
        raise ValueError(f"Invalid {name}: {value}")


def _check_betas(betas):
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def _new_step_count():
    """The 'step' entry of a parameter's state: a float64 0-d tensor, so that updates
    computed from it are tensor ops (in float64, as Python floats would be) and a
    compiled step does not depend on, and is not recompiled for, the step's value."""
    return tensor(0.0, dtype=float64)


def _signed_grad(p, maximize):
    return -p.grad if maximize else p.grad


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._step_pre_hooks = HookDict()
        self._step_post_hooks = HookDict()
        self._flat_group_states = []        # [group, layout] for foreach=True (optim/_flat.py)
        if isinstance(params, Tensor) or isinstance(params, dict):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            f"dicts, but got {type(params).__name__}")
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with 'params' and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error", stacklevel=3)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized parameters: to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def _run_step(self, update, closure):
        """Call the pre hooks, closure (with grad enabled), update() under no_grad, post hooks."""
        for hook in list(self._step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None:
                raise RuntimeError("optimizer step pre hooks must return None")
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                update(group)
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs), before each step."""
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs), after each step."""
        return add_hook(self._step_post_hooks, hook)

    # -- state dict ---------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: per-parameter state}, 'param_groups': [groups with 'params' as
        indices]}; indices count parameters across all groups in order."""
        index_of = {}
        groups = []
        counter = itertools.count()
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                if id(p) not in index_of:
                    index_of[id(p)] = next(counter)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index_of[id(p)]: s for p, s in self.state.items() if id(p) in index_of}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict made by an optimizer of the same type over parameters of the
        same shapes (state tensors are copied and cast to each parameter's dtype)."""
        state_dict = copy.deepcopy(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                                 "size of optimizer's group")
        params_by_index = {}
        for mine, saved in zip(self.param_groups, saved_groups):
            for index, p in zip(saved["params"], mine["params"]):
                params_by_index[index] = p
        self.state = defaultdict(dict)
        for index, s in state_dict["state"].items():
            if index not in params_by_index:
                continue
            p = params_by_index[index]
            self.state[p] = {k: (v.to(p.dtype) if isinstance(v, Tensor) and k != "step"
                                 and v.is_floating_point() else v)
                             for k, v in s.items()}
        for mine, saved in zip(self.param_groups, saved_groups):
            params = mine["params"]
            mine.clear()
            mine.update(saved)
            mine["params"] = params

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_step_pre_hooks", HookDict())
        self.__dict__.setdefault("_step_post_hooks", HookDict())
        self.__dict__.setdefault("_flat_group_states", [])

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)
