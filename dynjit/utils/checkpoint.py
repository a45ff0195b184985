"""dynjit.utils.checkpoint: activation checkpointing (torch.utils.checkpoint).

`checkpoint(fn, *args, use_reentrant=...)` runs `fn` without keeping the activations its
ops save for backward, and reruns it in backward to get them back: memory traded for
compute. Two implementations, as in PyTorch:

- reentrant (`use_reentrant=True`): a custom Function runs `fn` under no_grad and, in its
  backward, reruns it under enable_grad and backpropagates through the rerun with a nested
  (reentrant) backward call. Incompatible with `autograd.grad` and `backward(inputs=...)`.
- non-reentrant (`use_reentrant=False`): `fn` runs normally inside saved-tensor hooks that
  keep a small holder instead of each saved tensor; the first unpack in a backward pass
  reruns `fn` (inside other hooks that collect what it saves, in order) and hands back
  the recomputed tensors, each once. Recomputation stops as soon as the last needed tensor
  is saved again (early stop). Works with autograd.grad, kwargs, nesting, higher order.

Both restore the RNG state of the forward before rerunning `fn` (`preserve_rng_state`) so
that dropout draws the same mask. Selective checkpointing (`create_selective_checkpoint_contexts`
with a `CheckpointPolicy` per op) saves chosen ops' outputs in the forward and replays them
in the recomputation instead of rerunning those ops.
"""
import contextlib
import enum
import uuid
import warnings
import weakref
from collections import defaultdict

from .. import random as _random
from ..tensor import Tensor
from ..autograd import engine as _engine
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad, is_grad_enabled
from ..autograd.saved import SavedTensor, saved_tensors_hooks
from ..ops.dispatch import DispatchMode
from ..ops.registry import OpDef

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None


class CheckpointError(RuntimeError):
    pass


def _pytree_map(fn, obj):
    if isinstance(obj, (list, tuple)):
        mapped = [_pytree_map(fn, x) for x in obj]
        return type(obj)(mapped) if type(obj) in (list, tuple) else type(obj)(*mapped)
    if isinstance(obj, dict):
        return {k: _pytree_map(fn, v) for k, v in obj.items()}
    return fn(obj)


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides every checkpoint's `debug` inside the block (None: each call's own)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant checkpoints made inside the block stop recomputation as soon
    as every tensor they need is recomputed (only needs to be active for the forward)."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def detach_variable(inputs):
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


@contextlib.contextmanager
def _forked_rng(enabled, state):
    """Run the block with the global generator set to `state`, then put back what it was."""
    if not enabled:
        yield
        return
    outer = _random.get_rng_state()
    _random.set_rng_state(state)
    try:
        yield
    finally:
        _random.set_rng_state(outer)


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


# -- reentrant ----------------------------------------------------------------------------

def _autocast_state():
    """CPU autocast's state where the forward runs, for the recomputation to run in it too."""
    from .. import amp
    return amp.is_autocast_enabled("cpu"), amp.get_autocast_dtype("cpu")


def _autocast_as(state):
    from .. import amp
    enabled, dtype = state
    return amp.autocast("cpu", dtype=dtype, enabled=enabled)


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under no_grad, backward reruns and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _random.get_rng_state()
        ctx.autocast_state = _autocast_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _engine.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with _forked_rng(ctx.preserve_rng_state, getattr(ctx, "fwd_cpu_state", None)):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad(), _autocast_as(ctx.autocast_state):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for out, grad in zip(outputs, args):
            if isinstance(out, Tensor) and out.requires_grad:
                outputs_with_grad.append(out)
                args_with_grad.append(grad)
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        from ..autograd import backward
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# -- the public entry points ------------------------------------------------------------

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """Run `function(*args, **kwargs)` without keeping its activations; backward reruns it.

    `use_reentrant` should be passed (True: the reentrant Function, which takes no kwargs;
    False: saved-tensor hooks, recommended). `preserve_rng_state=True` (a keyword) restores
    the forward's RNG state for the rerun. `context_fn()` gives two context managers, the
    forward's and the recomputation's (non-reentrant only)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(
        function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs)
    next(gen)
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "torch.utils.checkpoint: the forward context provided by "
                "context_fn suppressed an exception raised during the "
                "checkpointed forward. This is not supported because "
                "checkpoint cannot return a value for a failed forward.") from stop
        raise
    try:
        next(gen)
    except StopIteration:
        return ret
    raise AssertionError("torch.utils.checkpoint: expected context_fn generator to yield "
                         "exactly twice, but it yielded more than twice.")


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` (an nn.Sequential or a list of callables) one after another on `input`,
    checkpointing each of the first `segments - 1` chunks (the last runs normally)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# -- non-reentrant ----------------------------------------------------------------------
# A checkpointed region's saved tensors are packed as _Holders. The first unpack in a
# backward pass (identified by its graph task id) reruns the region under
# _recomputation_hook, which gives the holders, in the order they were packed, a _Handle
# per pass and keeps the recomputed tensor under it; unpacking clears the handle, so a
# recomputed tensor lives until it is used once, even with retain_graph=True.
# Inputs of a checkpoint are saved to its parent (they are SavedTensors made while the
# parent's hooks are active): a nested region's rerun unpacks them, rerunning the parent.

def _internal_assert(cond):
    if not cond:
        raise AssertionError("Something went unexpectedly wrong in activation checkpoint. "
                             "Please report this bug by filing an issue to PyTorch.")


class _Handle:
    pass


class _Holder:
    def __init__(self):
        self.handles = {}      # graph task id -> _Handle, or None once unpacked


class _StopRecomputationError(Exception):
    pass


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


class _LeafInput:
    """Names a leaf input of a checkpoint in the error about its in-place modification."""

    @staticmethod
    def name():
        return "a leaf tensor passed to checkpoint"


class _CheckpointFrame:
    """One non-reentrant checkpoint call: how to rerun it and what it saved."""

    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn):
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)   # gid -> {handle: tensor}
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        # saved like any saved tensor: an enclosing checkpoint's hooks pack them
        self.saved_args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]
        # the node each input came out of names it when it was modified in place since
        self.input_nodes = [(a.grad_fn or _LeafInput) if isinstance(a, Tensor) else None
                            for a in args]

    def get_inputs(self):
        return [a.unpack(node) if isinstance(a, SavedTensor) else a
                for a, node in zip(self.saved_args, self.input_nodes)]

    def check_recomputed_tensors_match(self, gid):
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}")
        different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            recomputed_meta = self.metadata_fn(self.recomputed[gid][holder.handles[gid]])
            if self.x_metadatas[idx] != recomputed_meta:
                different.append((idx, self.x_metadatas[idx], recomputed_meta))
        if different:
            mismatched = "".join(f"tensor at position {idx}:\nsaved metadata: {saved}\n"
                                 f"recomputed metadata: {recomputed}\n"
                                 for idx, saved, recomputed in different)
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                f"have different metadata than during the forward pass.\n{mismatched}.\n"
                f"{_debug_tip_msg}")


class _recomputation_hook(saved_tensors_hooks):
    """Active while a frame reruns: hands each tensor saved to the frame's holder in order."""

    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            frame = target_frame_ref()
            _internal_assert(frame is not None)
            recomp_idx = frame.recomp_counter[gid]
            frame.recomp_counter[gid] += 1
            if recomp_idx >= len(frame.weak_holders):
                _internal_assert(not frame.early_stop)
                if not frame.forward_completed:
                    # a backward inside the checkpointed function saved more in the forward
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    f"recomputation than during the original forward pass.\n{_debug_tip_msg}")
            holder = frame.weak_holders[recomp_idx]()
            if holder is not None:      # (None: its saved tensor was already freed)
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                frame.recomputed[gid][holder.handles[gid]] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputationError
            return x

        def unpack_hook(x):
            return x

        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(saved_tensors_hooks):
    """Active while a checkpointed function runs: saved tensors become holders."""

    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = _engine.current_graph_task_id()
            if gid == -1:
                # unpacked outside backward: a recomputation of its own
                gid = int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                    "unpacked once. If you are calling ctx.saved_tensors in backward, make sure "
                    "to do so only once. Otherwise please open an issue with details on your use case.")
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is not None:
            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)
            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


class _OpLog(DispatchMode):
    """debug=True: the names of the ops a run executed (shown when unpacking fails)."""

    def __init__(self, log):
        self.log = log

    def __dispatch__(self, op, args, kwargs):
        self.log.append(op.name)
        return op(*args, **(kwargs or {}))


def _get_debug_context_and_cb():
    forward_ops, recompute_ops = [], []

    def context_fn():
        return _OpLog(forward_ops), _OpLog(recompute_ops)

    def unpack_error_cb(e):
        raise CheckpointError(
            f"{e}\nOperations executed during the original forward:\n  "
            + "\n  ".join(forward_ops) + "\nOperations executed during recomputation:\n  "
            + "\n  ".join(recompute_ops)) from e
    return context_fn, unpack_error_cb


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True, context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE,
                                            debug=False, early_stop=True, *args, **kwargs):
    """Yields once before the checkpointed forward runs and once after (see checkpoint)."""
    unpack_error_cb = None
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()
    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError("determinism_check should be one of "
                         f"{list(_allowed_determinism_checks_to_fns.keys())}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    fwd_cpu_state = _random.get_rng_state() if preserve_rng_state else None
    autocast_state = _autocast_state()

    def recompute_fn(*inputs):
        with _forked_rng(preserve_rng_state, fwd_cpu_state), _autocast_as(autocast_state), recompute_context:
            fn(*inputs, **kwargs)

    new_frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop,
        unpack_error_cb, metadata_fn)
    if not is_grad_enabled():
        yield
        return
    new_frame.save_inputs(*args)
    suppressed = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            suppressed = True
            raise
    if suppressed:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward.")
    new_frame.forward_completed = True


# -- selective checkpointing ------------------------------------------------------------

class CheckpointPolicy(enum.Enum):
    """Whether an op's output inside a selectively checkpointed region is saved (kept from
    the forward and replayed in the recomputation) or recomputed."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


def _policy_from_bool(b):
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


class SelectiveCheckpointContext:
    """What a policy function is told besides the op: whether this is the recomputation."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


class _VersionWrapper:
    def __init__(self, val):
        self.val = val
        self.version = val._version if isinstance(val, Tensor) else None

    def get_val(self, allow_cache_entry_mutation):
        if self.version is not None and not allow_cache_entry_mutation:
            if self.val._version != self.version:
                raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        return self.val


def _detach(x):
    if isinstance(x, Tensor):
        with no_grad():
            return x.detach()
    return x


# ops the policy is not asked about: checkpointing's own bookkeeping
_SAC_IGNORED_OPS = frozenset({"detach"})

_RECOMPUTE = object()
_CONSUMED = object()
_SAC_MISMATCH_MSG = ("This can happen if the operations in the checkpointed region are "
                     "nondeterministic or depend on global state that changed between "
                     "forward and backward.")


class _CachingTorchDispatchMode(DispatchMode):
    """The forward's mode: asks the policy about each op and stores the outputs to save."""

    def __init__(self, policy_fn, storage):
        self.policy_fn = policy_fn
        self.storage = storage

    def __dispatch__(self, op, args, kwargs):
        kwargs = kwargs or {}
        if op.name in _SAC_IGNORED_OPS:
            return op(*args, **kwargs)
        out = op(*args, **kwargs)
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                op, *args, **kwargs)
        if isinstance(policy, bool):
            policy = _policy_from_bool(policy)
        entries = self.storage[op]
        if policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
            entries.append(_pytree_map(lambda x: _VersionWrapper(_detach(x)), out))
        else:
            entries.append(_RECOMPUTE)
        return out


class _CachedTorchDispatchMode(DispatchMode):
    """The recomputation's mode: replays the saved outputs in order, reruns the others."""

    def __init__(self, policy_fn, storage, allow_cache_entry_mutation=False):
        self.policy_fn = policy_fn
        self.storage = storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation
        self.func_counter = defaultdict(int)

    def __enter__(self):
        self.func_counter.clear()
        return super().__enter__()

    def __dispatch__(self, op, args, kwargs):
        kwargs = kwargs or {}
        if op.name in _SAC_IGNORED_OPS:
            return op(*args, **kwargs)
        if self.policy_fn is not None:
            self.policy_fn(SelectiveCheckpointContext(is_recompute=True), op, *args, **kwargs)
        idx = self.func_counter[op]
        self.func_counter[op] += 1
        entries = self.storage.get(op)
        if entries is None:
            raise RuntimeError(f"{op} encountered during backward but not found in storage. "
                               f"{_SAC_MISMATCH_MSG}")
        if idx >= len(entries):
            raise RuntimeError(f"{op} invocation index {idx} encountered during backward "
                               f"but not found in storage. {_SAC_MISMATCH_MSG}")
        entry = entries[idx]
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to backward "
                               "once on any region computed under selective activation checkpoint.")
        if entry is _RECOMPUTE:
            return op(*args, **kwargs)
        entries[idx] = _CONSUMED
        out = _pytree_map(lambda x: _detach(x.get_val(self.allow_cache_entry_mutation))
                          if isinstance(x, _VersionWrapper) else x, entry)
        # dynjit's modes sit above autograd: the replayed output gets the node the op would
        # have recorded, so that this op and the ops after it save what they saved in the
        # forward (the recomputation hook counts saved tensors)
        _record_replayed(op, args, kwargs, out)
        return out


def _record_replayed(op, args, kwargs, out):
    from ..ops import dispatch
    if hasattr(op, "record_replayed"):     # a custom op (dynjit.library): its autograd.Function's node
        return op.record_replayed(args, kwargs, out)
    if not is_grad_enabled() or op.backward_cls is None:
        return
    if kwargs or len(args) != op.nparams:
        args = op.normalize(args, kwargs)
    _, tensors = dispatch._unwrap(op, args)
    if any(t._requires_grad for t in tensors):
        dispatch.record(op, args, tensors, out)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The `context_fn` result for selective checkpointing: a policy function
    `policy(ctx, op, *args, **kwargs) -> CheckpointPolicy` (or a list of ops to save, the
    rest recomputed) decides, op by op, what the recomputation takes from the forward."""
    if isinstance(policy_fn_or_list, list):
        from ..ops import registry
        for op in policy_fn_or_list:
            if not isinstance(op, OpDef):
                name = getattr(op, "__name__", None)
                extra = (f"Please update the OpOverloadPacket to a specific OpOverload: pass the op "
                         f"dynjit.ops.{name}, not the function {getattr(op, '__module__', 'dynjit')}.{name}."
                         if callable(op) and name in registry else
                         "dynjit's ops are the objects in dynjit.ops, such as dynjit.ops.matmul.")
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {extra}")
        ops = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
        cached_policy = None
    elif callable(policy_fn_or_list):
        policy_fn = cached_policy = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(list)
    return (_CachingTorchDispatchMode(policy_fn, storage),
            _CachedTorchDispatchMode(cached_policy, storage, allow_cache_entry_mutation))
