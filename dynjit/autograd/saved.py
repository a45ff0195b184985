"""Tensors saved for backward: version-checked on use, and saved only when a
wanted gradient reads them (like PyTorch's derivatives.yaml codegen)."""
import ast
import inspect
import textwrap
import threading
import weakref

from ..ops.dispatch import INFERENCE_SAVE_MESSAGE
from . import graph as _graph
from .grad_mode import state as _grad_state

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling backward.")

PACK_INPLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook.")

DETACHED_MESSAGE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().If you "
    "meant to detach it, use .detach() instead, which returns a new tensor.")


class SavedTensorModifiedError(RuntimeError):
    """A backward read a saved tensor that was modified in place after it was saved."""


class _HookState(threading.local):
    def __init__(self):
        self.stack = []          # active (pack_hook, unpack_hook) pairs, innermost last
        self.disabled = None     # the error message while saved-tensor hooks are disabled


_hooks = _HookState()


class suspended_hooks:
    """No saved-tensor hooks inside (for computations that are not the user's own, such as the
    example values a tracer computes: the user's pack hooks must not see them)."""

    def __enter__(self):
        self.stack, _hooks.stack = _hooks.stack, []

    def __exit__(self, *exc):
        _hooks.stack = self.stack
        return False


def _tracing():
    from ..ops.dispatch import _modes
    return bool(_modes)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Like PyTorch's SavedVariable: an input is kept as the tensor itself; an op's
    output is kept without a strong reference to the tensor (which refers to the
    node that saves it: that would be a reference cycle) and comes back as a new
    tensor sharing its data and version counter, whose grad_fn is the saving node.
    With saved-tensor hooks active, the pack hook's result is kept instead and
    the unpack hook's result comes back with the saved tensor's autograd identity.
    """
    __slots__ = ("tensor", "version", "_ref", "_data", "_counter", "_output_nr", "_had_grad_fn",
                 "_packed", "_unpack_hook", "_requires_grad", "_grad_fn", "_accumulator", "_is_out",
                 "__weakref__")

    def __init__(self, tensor=None, is_output=False):
        if tensor is None:
            raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")
        if tensor._is_inference and not _grad_state.inference:
            raise RuntimeError(INFERENCE_SAVE_MESSAGE)
        self.version = tensor._version_counter[0]
        self._output_nr = tensor._output_nr
        self._packed = self._unpack_hook = None
        self._ref = None
        self._is_out = is_output
        if is_output and not _tracing():
            # (a tracing mode identifies tensors by object: it keeps the original)
            self.tensor = None
            self._ref = weakref.ref(tensor)
            self._data = tensor._data
            self._counter = tensor._version_counter
        else:
            self.tensor = tensor
        # (an output that is not differentiable, such as a mask, comes back without one)
        self._had_grad_fn = tensor._grad_fn is not None or (is_output and tensor._requires_grad)
        if _hooks.stack:
            self.register_hooks(*_hooks.stack[-1])

    @classmethod
    def of(cls, value):
        """What custom Functions keep for each saved value: a SavedTensor, also for None."""
        if value is None:
            none = object.__new__(cls)
            none.tensor = none._ref = none._unpack_hook = None
            none._is_out = False
            none.version = None
            return none
        return cls(value)

    def register_hooks(self, *hooks):
        """Replace the saved tensor by `pack_hook(tensor)`; `unpack_hook(packed)` gives it back."""
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            raise TypeError("register_hooks(): incompatible function arguments. The following "
                            "argument types are supported: (self, pack_hook: Callable[[Tensor], "
                            "object], unpack_hook: Callable[[object], Tensor])")
        pack_hook, unpack_hook = hooks
        if self.version is None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose value is None is forbidden")
        if self._unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor where hooks have already been "
                               "set. Hooks can only be registered once.")
        t = self.tensor if self.tensor is not None else self._ref()
        if t is None:
            t = self._alias(None)
        self._requires_grad = t._requires_grad
        self._grad_fn = None if self._is_out else t.grad_fn
        self._accumulator = (t._get_accumulator() if not self._is_out and self._grad_fn is None
                             and t._requires_grad else None)
        if self._is_out and not self._had_grad_fn:
            self._requires_grad = False
        version = t._version_counter[0]
        packed = pack_hook(t)
        if t._version_counter[0] != version:
            raise RuntimeError(PACK_INPLACE_MESSAGE)
        self._packed = packed
        self._unpack_hook = unpack_hook
        self.tensor = self._ref = self._data = self._counter = None    # only the packed value stays

    def _alias(self, node):
        t = _graph.Tensor._make(self._data)
        t._version_counter = self._counter
        if node is not None and self._had_grad_fn:
            t._grad_fn = node
            t._output_nr = self._output_nr
            t._requires_grad = True
        return t

    def _from_hooks(self, node):
        t = self._unpack_hook(self._packed)
        if not isinstance(t, _graph.Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        u = _graph.Tensor._make(t._data)
        u._version_counter = t._version_counter
        grad_fn = (node if self._had_grad_fn else None) if self._is_out else self._grad_fn
        if grad_fn is not None:
            u._grad_fn = grad_fn
            u._output_nr = self._output_nr
            u._requires_grad = True
        elif self._requires_grad:
            u._requires_grad = True
            u._accumulator = self._accumulator
        return u

    def unpack(self, node, lazy=False, original=True):
        """The saved tensor; raises if it was modified in place since it was saved.

        With `lazy`, a modified tensor is returned as a stand-in that raises only
        when its values are read: an op's backward that computes just the
        gradients it needs (see `needs` in the registry) then does not fail on a
        saved tensor it does not use, as in PyTorch, which saves only those.
        A saved output comes back as the output itself while that lives, unless
        `original` is false (then always as a new tensor, as PyTorch gives it)."""
        if self._unpack_hook is not None:
            return self._from_hooks(node)
        if self.version is None:
            return None
        t = self.tensor
        if t is None:
            t = self._alias(node)
        elif self._had_grad_fn and t._grad_fn is None and t._base is None:
            raise RuntimeError(DETACHED_MESSAGE)
        if t._version_counter[0] != self.version:
            message = (
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.type()} {list(t.shape)}], which is output "
                f"{self._output_nr} of {node.name()}, is at version {t._version_counter[0]}; expected "
                f"version {self.version} instead. Hint: the backtrace further above shows the "
                "operation that failed to compute its gradient.")
            if lazy:
                return _stale_tensor(message)
            raise SavedTensorModifiedError(message)
        if self._ref is not None and original:
            alive = self._ref()      # the output itself while it lives (tracers know it)
            if alive is not None and alive._data is self._data:
                return alive
        return t


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside it is packed with
    `pack_hook(tensor)` and unpacked with `unpack_hook(packed)` when backward needs it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks.disabled is not None:
            raise RuntimeError(_hooks.disabled)
        _hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept as copies (dynjit's tensors always live on the CPU, so this
    only decouples them from later changes); `pin_memory` is accepted and ignored."""

    def __init__(self, pin_memory=False, device_type="cpu"):
        def pack(t):
            return (t.device, t.detach().clone())

        def unpack(packed):
            return packed[1]
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager: using saved_tensors_hooks inside it raises `error_message`."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if _hooks.stack:
            raise RuntimeError(self.error_message)
        self.prev = _hooks.disabled
        _hooks.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _hooks.disabled = self.prev
        return False


def saved_tensors_hooks_is_enabled():
    return _hooks.disabled is None


class _Handle:
    """What allow_mutation_on_saved_tensors packs a saved tensor into."""
    __slots__ = ("__weakref__",)


class _MutationContext:
    """The state of one allow_mutation_on_saved_tensors block.

    Saved tensors are packed as handles; an in-place op on a tensor whose storage
    holds saved values first clones those values (once per tensor and version),
    and backward unpacks the clone. A clone lives as long as a handle needs it."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()   # handle -> the saved tensor
        self.tid_of = weakref.WeakKeyDictionary()     # handle -> (storage id, version)
        self.tid_to_weakhandle = {}                   # (storage id, version) -> WeakSet of handles
        self.cloned = {}                              # (storage id, version) -> clone
        self.active = True

    def pack(self, t):
        handle = _Handle()
        tid = (id(_storage_of(t)), t._version_counter[0])
        self.original[handle] = t
        self.tid_of[handle] = tid
        self.tid_to_weakhandle.setdefault(tid, weakref.WeakSet()).add(handle)
        weakref.finalize(handle, self._forget, tid)
        return handle

    def unpack(self, handle):
        if not self.active:
            raise AssertionError("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                                 "context in which the graph was originally recorded.")
        tid = self.tid_of[handle]
        return self.cloned.get(tid, self.original[handle])

    def _forget(self, tid):
        handles = self.tid_to_weakhandle.get(tid)
        if handles is not None and not list(handles):    # (only live handles are listed)
            del self.tid_to_weakhandle[tid]
            self.cloned.pop(tid, None)

    def before_mutation(self, t):
        """`t` is about to change in place: clone what was saved from its storage at this version."""
        sid = id(_storage_of(t))
        version = t._version_counter[0]
        for (saved_sid, saved_version), handles in list(self.tid_to_weakhandle.items()):
            if saved_sid != sid or saved_version != version or (sid, version) in self.cloned:
                continue
            for handle in list(handles):
                from .grad_mode import no_grad
                with no_grad():
                    self.cloned[(sid, version)] = self.original[handle].clone()
                break

    def clear(self):
        self.active = False
        self.cloned.clear()
        self.tid_to_weakhandle.clear()


def _storage_of(t):
    return t._base if t._base is not None else t


_mutation_context = [None]


class allow_mutation_on_saved_tensors:
    """Context manager: inside it, tensors saved for backward may be modified in place
    (the saved value is cloned first); backward must run inside the same block."""

    def __enter__(self):
        if _mutation_context[0] is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        from ..ops import dispatch
        self.ctx = _MutationContext()
        self.hooks = saved_tensors_hooks(self.ctx.pack, self.ctx.unpack)
        self.hooks.__enter__()
        _mutation_context[0] = self.ctx
        dispatch._mutation_observers.append(self.ctx.before_mutation)
        return self.ctx

    def __exit__(self, *exc):
        from ..ops import dispatch
        dispatch._mutation_observers.remove(self.ctx.before_mutation)
        _mutation_context[0] = None
        self.hooks.__exit__(*exc)
        self.ctx.clear()
        return False


_StaleTensor = None


def _stale_tensor(message):
    global _StaleTensor
    if _StaleTensor is None:
        class _StaleTensor(_graph.Tensor):
            """Stands for a saved tensor modified in place: reading it raises."""

            @property
            def _data(self):
                raise SavedTensorModifiedError(self._message)
    stale = object.__new__(_StaleTensor)
    stale._message = message
    return stale


def save_conditions(op):
    """When each value the derivative of `op` reads must be saved.

    PyTorch saves an input for backward only if a gradient that needs it is
    wanted (`x * y` with only x requiring grad saves y, not x). dynjit reads
    that off the derivative's source: a parameter read only inside
    `... if needs[k] else ...` or `if needs[k]:` is needed only when input k
    wants a gradient. Returns {name: indices k} for such parameters; any other
    parameter is always saved.
    """
    fn = op.derivative_fn
    if fn is None or "needs" not in op.derivative_params:
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    names = set(op.derivative_params) - {"needs"}
    always, guarded = set(), {}

    def guard_of(test):
        if (isinstance(test, ast.Subscript) and isinstance(test.value, ast.Name)
                and test.value.id == "needs" and isinstance(test.slice, ast.Constant)
                and isinstance(test.slice.value, int)):
            return test.slice.value
        return None

    def visit(node, guard):
        if isinstance(node, (ast.IfExp, ast.If)):
            k = guard_of(node.test)
            visit(node.test, guard)
            inner = guard if k is None else k
            for part in (node.body if isinstance(node.body, list) else [node.body]):
                visit(part, inner)
            for part in (node.orelse if isinstance(node.orelse, list) else [node.orelse]):
                visit(part, guard)
            return
        if isinstance(node, ast.Name) and node.id in names:
            if guard is None:
                always.add(node.id)
            else:
                guarded.setdefault(node.id, set()).add(guard)
        for child in ast.iter_child_nodes(node):
            visit(child, guard)

    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        return {}
    for stmt in func.body:
        visit(stmt, None)
    return {name: frozenset(ks) for name, ks in guarded.items() if name not in always}
