"""Hook bookkeeping for Modules: `RemovableHandle` and `BackwardHook`.

`BackwardHook` implements `register_full_backward_hook` and
`register_full_backward_pre_hook`: the module's tensor inputs and outputs are
passed through an identity autograd Function; a pre-hook on the outputs' node
sees grad_output, a post-hook on the inputs' node sees grad_input, and the
user hooks run once per backward with both.
"""
import itertools
import weakref
from collections import OrderedDict

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor


class HookDict(OrderedDict):
    """An ordered dict of hooks (weakly referable, so handles do not keep it alive)."""


class RemovableHandle:
    """Returned by every Module.register_*hook; `remove()` unregisters the hook."""
    _next_id = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._next_id)
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, hook, prepend=False, extra_dict=None):
    handle = RemovableHandle(hooks, extra_dict=extra_dict)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class BackwardHookFunction(Function):
    """Identity on tensors; its backward node is where module backward hooks attach."""

    @staticmethod
    def forward(ctx, *tensors):
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One module call's backward hooks (see the module docstring)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_tensors_index = None
        self.n_outputs = 0
        self.output_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        packed = [None] * size
        for i, v in zip(indices, values):
            packed[i] = v
        return tuple(packed)

    def setup_input_hook(self, args):
        new_args, index = self._apply_on_tensors(self._set_input_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = index
        return new_args

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outputs = result if is_tuple else (result,)
        new_outputs, index = self._apply_on_tensors(self._set_output_hook, outputs)
        self.n_outputs = len(outputs)
        self.output_tensors_index = index
        return new_outputs if is_tuple else new_outputs[0]

    def _apply_on_tensors(self, register, args):
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not index or not is_grad_enabled():
            return args, None
        new_tensors = BackwardHookFunction.apply(*(args[i] for i in index))
        register(new_tensors[0].grad_fn)
        new_args = list(args)
        for i, t in zip(index, new_tensors):
            new_args[i] = t
        return tuple(new_args), index

    def _set_output_hook(self, grad_fn):
        def hook(grad_outputs):
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_outputs,
                                                     self.n_outputs)
            for pre_hook in self.user_pre_hooks:
                new = pre_hook(self.module, self.grad_outputs)
                if new is None:
                    continue
                new = _as_tuple(new)
                if len(new) != len(self.grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, "
                                       f"got {len(new)}, but expected {len(self.grad_outputs)}")
                self.grad_outputs = new
            if self.input_tensors_index is None:
                # no input requires grad: the input-side hook never runs, so call the user hooks now
                grad_inputs = (None,) * self.n_inputs
                for user_hook in self.user_hooks:
                    res = user_hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not all(r is None for r in _as_tuple(res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                           "should always return None or None for all gradients.")
                result = self.grad_outputs
                self.grad_outputs = None
                return tuple(result[i] for i in self.output_tensors_index)
            return tuple(self.grad_outputs[i] for i in self.output_tensors_index)
        grad_fn.register_prehook(hook)

    def _set_input_hook(self, grad_fn):
        def hook(grad_inputs, _grad_outputs):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs
                # (e.g. double backward): PyTorch does not call the hooks then either
                return None
            packed = self._pack_with_none(self.input_tensors_index, grad_inputs, self.n_inputs)
            for user_hook in self.user_hooks:
                new = user_hook(self.module, packed, self.grad_outputs)
                if new is None:
                    continue
                new = _as_tuple(new)
                if len(new) != len(packed):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(new)}, but expected {len(packed)}")
                packed = new
            self.grad_outputs = None
            return tuple(packed[i] for i in self.input_tensors_index)
        grad_fn.register_hook(hook)


def _as_tuple(value):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)
