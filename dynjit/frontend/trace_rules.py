"""What happens when traced code calls something: one table of rules.

`lookup(fn)` says, for any callable, one of
  INLINE   trace into its Python code (user functions, library glue, modules);
  GRAPH    put the call in the graph as one node (dynjit ops and functions,
           functions marked with dynjit.allow_in_graph);
  FOLD     run it at trace time on constant arguments (pure builtins, math, operator);
  HANDLED  a tracker implements it (builtins such as getattr or next, grad-mode
           context managers);
  BREAK    a graph break, with its BreakKind.
`tensor_method(name)` says the same for the methods of a tensor.

The trackers ask here instead of keeping their own name lists.
"""
import enum
import types
from typing import NamedTuple, Optional

from ..exc import BreakKind
from ..utils import is_dynjit_module


class Action(enum.Enum):
    INLINE = "inline"
    GRAPH = "graph"
    FOLD = "fold"
    HANDLED = "handled"
    BREAK = "break"


class Rule(NamedTuple):
    action: Action
    why: str                            # which rule matched, in a few words
    kind: Optional[BreakKind] = None    # for BREAK
    detail: str = ""                    # for BREAK: what the user reads


def _break(kind, detail):
    return Rule(Action.BREAK, "break", kind, detail)


# builtins that are pure functions of their (constant) arguments: fold them at trace time
PURE_BUILTINS = frozenset({
    abs, all, any, bool, bytes, callable, chr, complex, divmod, float, format, frozenset, hash, int,
    isinstance, issubclass, len, max, min, oct, ord, pow, range, repr, reversed, round, slice, sorted,
    str, sum, tuple, type, zip, enumerate, list, dict, set, hex, bin, iter,
})
PURE_MODULES = ("math", "_operator", "operator", "builtins")
# builtins a tracker implements (BuiltinVariable's _call_<name> handlers and these)
HANDLED_BUILTINS = frozenset({getattr, hasattr, setattr, super, next, map, filter, locals, vars})
# builtins whose effect is outside the program (or that read the frame): a break
SIDE_EFFECT_BUILTINS = frozenset({print, input, open, exec, eval, id, globals, breakpoint,
                                  delattr})
_KNOWN_BUILTINS = PURE_BUILTINS | HANDLED_BUILTINS | SIDE_EFFECT_BUILTINS

# dynjit functions that change global state the graph cannot hold
_STATE_CHANGING = ("manual_seed", "seed", "set_rng_state", "backward")
# dynjit's own JIT API: not something to trace
_JIT_API_MODULES = ("dynjit.frontend.eval_frame", "dynjit.frontend.explain")
# dynjit modules whose functions are traced into, like user code
_TRACED_LIBRARY_MODULES = ("dynjit.frontend", "dynjit.optim", "dynjit.nn.modules", "dynjit.nn.utils")

# tensor methods
TENSOR_DATA_METHODS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__",
                                 "__index__", "data_ptr"})
TENSOR_METADATA_METHODS = frozenset({"size", "dim", "numel", "stride", "is_contiguous", "is_floating_point",
                                     "element_size", "nelement", "ndimension", "is_complex"})
TENSOR_STATE_METHODS = frozenset({"backward", "retain_grad", "requires_grad_"})
TENSOR_HOOK_METHODS = frozenset({"register_hook", "register_post_accumulate_grad_hook"})
# in-place changes of a tensor's shape, strides or storage: they run natively, where the
# caller's tensor object is the one changed (a graph's outputs are new tensors)
TENSOR_METADATA_INPLACE = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_",
                                     "resize_", "resize_as_", "set_", "as_strided_", "detach_"})


_WEAKREF_MODULES = ("weakref", "_weakref", "_weakrefset")


def _frame_readers():
    """The functions that read the Python call stack: under compile it holds dynjit's generated
    functions, so what they return (frame names, line numbers, locals) would differ."""
    import inspect
    import sys
    import traceback
    readers = [sys._getframe, inspect.currentframe, inspect.stack, inspect.trace, inspect.getouterframes,
               traceback.extract_stack, traceback.format_stack, traceback.print_stack, traceback.walk_stack]
    if hasattr(sys, "_getframemodulename"):
        readers.append(sys._getframemodulename)
    return readers


def reads_call_stack(fn, args=(), kwargs=None):
    """Whether calling `fn` with `args`/`kwargs` (trackers) reads the Python call stack (see
    frame_plain_reason): a frame reader, or warnings.warn attributing the warning to a caller
    (stacklevel above 1)."""
    import warnings
    if fn is warnings.warn:
        level = (kwargs or {}).get("stacklevel", args[2] if len(args) > 2 else None)
        if level is None:
            return False
        return not level.is_python_constant() or level.as_python_constant() != 1
    return _in(fn, _frame_readers())


def _native_copies():
    import copy
    return (copy.copy, copy.deepcopy)


def frame_plain_reason(fn, inlined=False, args=(), kwargs=None):
    """Why calling `fn` makes the whole frame run plain, or None. Two kinds of call cannot be
    split into traced and native parts that agree with plain Python:
    - those that make when an object dies observable: a class whose instances have `__del__`,
      or a weak reference (weakref.ref, proxy, finalize, WeakMethod, the weak containers).
      The trace creates objects lazily, or never when they do not escape, and a graph break
      hands the live ones to the code that resumes, which holds them past the user's `del`;
    - those that read the call stack (sys._getframe, inspect.currentframe, inspect.stack,
      traceback.extract_stack, ...) in the frame being compiled, which would see dynjit's
      generated functions as its callers. Called from an inlined function (`inlined`), they
      break the graph instead (the translator's call_function): the outermost inlined call
      then runs plain, natively, from the break code, which carries the caller's name and
      line numbers."""
    module = getattr(fn, "__module__", None)
    if module in _WEAKREF_MODULES:
        return "a weak reference, whose death plain Python makes observable"
    if isinstance(fn, type):
        if any("__del__" in vars(klass) for klass in fn.__mro__[:-1]):
            return f"creating a {fn.__name__}, whose __del__ runs when plain Python says"
        return None
    if not inlined and reads_call_stack(fn, args, kwargs):
        return f"{callable_name(fn)}() reads the call stack (here: dynjit's generated frames)"
    return None


def lookup(fn):
    """The rule for calling `fn` in traced code."""
    if getattr(fn, "_dynjit_graph_break", False):
        return _break(BreakKind.EXPLICIT, "dynjit.graph_break() called")
    if getattr(fn, "_dynjit_disable", False):
        return _break(BreakKind.DISABLED,
                      f"call to {getattr(fn, '__qualname__', fn)}, which is marked with dynjit.disable")
    from .eval_frame import is_allowed_in_graph
    if is_allowed_in_graph(fn):
        return Rule(Action.GRAPH, "allow_in_graph")
    from ..ops.registry import OpDef
    if isinstance(fn, OpDef):
        return Rule(Action.GRAPH, "op")
    if _in(fn, _native_copies()):
        return _break(BreakKind.UNKNOWN_CALLABLE, f"copy.{fn.__name__}() (a copy is made natively: a tensor's copy "
                      "is a new leaf, which a graph cannot make)")
    if _in(fn, _KNOWN_BUILTINS):              # before classes: int, list, zip are types
        return _builtin_rule(fn, "builtins")
    from ..autograd import grad_mode
    if _in(fn, (grad_mode.set_grad_enabled, grad_mode.no_grad, grad_mode.enable_grad, grad_mode.is_grad_enabled)):
        return Rule(Action.HANDLED, "grad mode")
    if _in(fn, checkpoint_functions()):
        return Rule(Action.HANDLED, "activation checkpoint: traced as a call of its function")
    if isinstance(fn, (type, types.MethodType)):
        return Rule(Action.INLINE, "class or bound method")
    if getattr(fn, "_dynjit_trace_into", False) or hasattr(fn, "_dynjit_traced_as"):
        return Rule(Action.INLINE, "library glue around user code")
    from ..fx.graph_module import GraphModule
    from .eval_frame import is_nn_module
    if isinstance(fn, GraphModule) or is_nn_module(fn):
        return Rule(Action.INLINE, "module")
    module = getattr(fn, "__module__", None) or ""
    if is_dynjit_module(module):
        return _dynjit_rule(fn, module)
    if isinstance(fn, types.FunctionType):
        return Rule(Action.INLINE, "Python function")
    return _builtin_rule(fn, module)


def with_block(cls):
    """The rule for `with` over an instance of `cls` (not a grad mode, which a tracker handles):
    its __enter__/__exit__ are inlined, unless the class is dynjit's own and changes library
    state that the graph's ops consult (saved-tensor hooks, dispatch modes, profilers): replayed
    after the graph, that state would not surround the ops, so the block runs natively."""
    module = getattr(cls, "__module__", "") or ""
    if not is_dynjit_module(module) or _in(cls, _pure_context_managers()):
        return Rule(Action.INLINE, "context manager written in Python")
    return _break(BreakKind.GRAD_MODE, f"a `with` block over {cls.__qualname__} (dynjit state the graph cannot "
                  "hold; runs natively)")


def _pure_context_managers():
    from ..amp import autocast
    return (autocast,)


# checkpoint's own keywords; the rest go to the checkpointed function
CHECKPOINT_OPTIONS = ("use_reentrant", "context_fn", "determinism_check", "debug", "early_stop",
                      "preserve_rng_state")


def checkpoint_functions():
    """dynjit.utils.checkpoint.checkpoint: a compiled trace runs its function inline (same values
    and gradients; what the backward recomputes is the AOT partitioner's choice)."""
    from ..utils.checkpoint import checkpoint
    return (checkpoint,)


def _dynjit_rule(fn, module):
    name = getattr(fn, "__name__", "")
    if module.startswith(_JIT_API_MODULES):
        return _break(BreakKind.UNSUPPORTED_BUILTIN, f"dynjit.{name}() inside a compiled function")
    if name in _STATE_CHANGING:
        return _break(BreakKind.MUTATION, f"dynjit.{name}() inside a compiled function")
    if module.startswith(_TRACED_LIBRARY_MODULES):
        return Rule(Action.INLINE, "traced library code")
    if callable(fn):
        return Rule(Action.GRAPH, "dynjit function")
    return _break(BreakKind.UNKNOWN_CALLABLE, f"calling {callable_name(fn)}")


# immutable builtin values: every method of theirs is a pure function of its arguments
_IMMUTABLE_TYPES = (str, bytes, int, float, complex, bool, tuple, frozenset, range)


def _builtin_rule(fn, module):
    if isinstance(fn, types.BuiltinMethodType) and type(getattr(fn, "__self__", None)) in _IMMUTABLE_TYPES:
        return Rule(Action.FOLD, "method of an immutable value")
    if _in(fn, SIDE_EFFECT_BUILTINS):
        return _break(BreakKind.SIDE_EFFECT_CALL, f"builtin: {fn.__name__}")
    if _in(fn, HANDLED_BUILTINS) or _in(fn, PURE_BUILTINS) and \
            hasattr(_handlers(), f"_call_{getattr(fn, '__name__', '')}"):
        return Rule(Action.HANDLED, "builtin with a tracker")
    if _in(fn, PURE_BUILTINS) or module in PURE_MODULES:
        return Rule(Action.FOLD, "pure builtin")
    return _break(BreakKind.UNKNOWN_CALLABLE, f"calling {callable_name(fn)}")


def _handlers():
    from .variables.functions import BuiltinVariable
    return BuiltinVariable


def tensor_method(name):
    """The rule for calling method `name` of a tensor in traced code."""
    if name in TENSOR_DATA_METHODS:
        return _break(BreakKind.TENSOR_DATA_READ, f"Tensor.{name}() reads a tensor's data (data-dependent)")
    if name in TENSOR_METADATA_METHODS:
        return Rule(Action.FOLD, "tensor metadata")
    if name in TENSOR_HOOK_METHODS:
        return Rule(Action.HANDLED, "hook on an input tensor")
    if name in TENSOR_STATE_METHODS:
        return _break(BreakKind.MUTATION, f"Tensor.{name}() inside a compiled function")
    if name in TENSOR_METADATA_INPLACE:
        return _break(BreakKind.MUTATION, f"Tensor.{name}() changes a tensor's shape or storage in place")
    return Rule(Action.GRAPH, "tensor method")


def callable_name(fn):
    """A callable's name for messages: never an address, so equal breaks group together."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else f"{type(fn).__qualname__} instance"


def _in(value, collection):
    """`value` is one of `collection`'s members, by identity for a sequence (a value whose
    == is elementwise, such as a numpy array, must not be compared by ==). A value whose class
    defines __hash__ in Python is no member of dynjit's sets, and its __hash__ is the program's
    code (it may have effects): it is not called on dynjit's behalf."""
    if isinstance(collection, (set, frozenset, dict)):
        if isinstance(getattr(type(value), "__hash__", None), types.FunctionType):
            return False
        try:
            return value in collection
        except TypeError:     # unhashable
            return False
    return any(value is member for member in collection)

