"""dynjit's exceptions."""
import enum


class DynjitError(RuntimeError):
    """Base of dynjit's own errors."""


class BreakKind(enum.Enum):
    """Why a graph breaks: a closed set, each with a hint in the user's terms saying what to
    do instead. `Unsupported.kind` is one; counters and `dynjit.explain` group by it."""

    def __new__(cls, title, hint):
        member = object.__new__(cls)
        member._value_ = title
        member.title = title
        member.hint = hint
        return member

    EXPLICIT = ("dynjit.graph_break()",
                "remove the dynjit.graph_break() call to get one graph")
    DATA_DEPENDENT_BRANCH = (
        "data-dependent branch",
        "a Python decision (if, while, and/or, not, in) on a tensor's values cannot be traced: "
        "select values with dynjit.where(cond, a, b), or move the decision outside the compiled "
        "function")
    TENSOR_DATA_READ = (
        "tensor data read",
        "reading a tensor's values into Python (.item(), .tolist(), formatting) needs the data: "
        "return the tensor and call .item() outside the compiled function (e.g. for a loss log), "
        "or accept the break")
    SIDE_EFFECT_CALL = (
        "call with effects outside the program",
        "print, logging and I/O run as plain Python: do them outside the compiled function, or "
        "accept the break")
    UNKNOWN_CALLABLE = (
        "call dynjit cannot look into",
        "dynjit cannot trace this callable (a C function, or an object it does not model): if it "
        "computes only with dynjit ops, mark it with dynjit.allow_in_graph; otherwise call it "
        "outside the compiled function, or accept the break")
    UNSUPPORTED_BUILTIN = (
        "builtin or argument form not traced",
        "compute this outside the compiled function and pass the result in, or accept the break")
    UNSUPPORTED_BYTECODE = (
        "Python construct not traced",
        "generators, yield, async and some rare constructs run as plain Python: move them into "
        "a helper called outside the compiled function")
    UNSUPPORTED_VALUE = (
        "value of a type not traced",
        "pass tensors, numbers, strings and containers of them; keep other objects outside the "
        "compiled function")
    ATTRIBUTE = (
        "attribute access not traced",
        "read such attributes (descriptors, __getattr__, objects dynjit does not model) outside the "
        "compiled function and pass the values in")
    MUTATION = (
        "change of state that cannot be replayed",
        "make this change (to a tensor's attributes, a module, a container) outside the compiled "
        "function")
    USER_EXCEPTION = (
        "the program raises",
        "nothing to fix: the exception is raised exactly as in plain Python; code paths that do "
        "not raise compile to one graph")
    GRAD_MODE = (
        "grad mode change",
        "use `with dynjit.no_grad()`, `enable_grad()` or `set_grad_enabled()` inside the compiled "
        "function; other grad or inference mode changes run as plain Python")
    AUTOGRAD_FUNCTION = (
        "custom autograd.Function not traceable",
        "forward and backward must compute with dynjit ops on tensors, return tensors, and leave "
        "outside state alone")
    FRAME_STRUCTURE = (
        "break where the frame cannot resume",
        "a break inside a loop or a try block makes the whole frame run as plain Python: move the "
        "breaking call out of the loop or try block, or into a helper function")
    TOO_DEEP_OR_LONG = (
        "trace too deep or too long",
        "deep recursion and very long loops are not unrolled: compile the loop body instead of the "
        "loop, or raise dynjit.config.max_loop_unroll / max_inline_depth")
    DISABLED = ("function marked dynjit.disable",
                "remove dynjit.disable from the function to trace it")


class Unsupported(DynjitError):
    """The JIT met something it cannot trace: a graph break of `kind` (a BreakKind); raised to
    the user under fullgraph=True. str() is the detail; `hint` says what to do instead."""

    def __init__(self, kind, detail, hint=None):
        if not isinstance(kind, BreakKind):
            raise TypeError(f"Unsupported(kind, detail): kind must be a BreakKind, got {kind!r}")
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.hint = hint or kind.hint


class InvalidBackend(DynjitError):
    pass


class BackendCompilerFailed(DynjitError):
    """A backend raised while compiling a graph."""

    def __init__(self, backend_name, inner_exception):
        self.backend_name = backend_name
        self.inner_exception = inner_exception
        super().__init__(f"backend={backend_name!r} raised:\n{type(inner_exception).__name__}: {inner_exception}")


class InternalError(DynjitError):
    """A bug inside dynjit met while compiling a frame (not a graph break: nothing the user wrote
    is unsupported). The frame runs plain unless `dynjit.config.strict_internal_errors` is set."""
