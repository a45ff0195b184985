"""Tensors saved for backward: version-checked on use, and saved only when a
wanted gradient reads them (like PyTorch's derivatives.yaml codegen)."""
import ast
import inspect
import textwrap

from . import graph as _graph
from .grad_mode import state as _grad_state

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling backward.")


INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. To work around you can make a clone to get "
    "a normal tensor and use it in autograd.")


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved."""
    __slots__ = ("tensor", "version")

    def __init__(self, tensor):
        if tensor._is_inference and not _grad_state.inference:
            raise RuntimeError(INFERENCE_SAVE_MESSAGE)
        self.tensor = tensor
        self.version = tensor._version_counter[0]

    def unpack(self, node, lazy=False):
        """The saved tensor; raises if it was modified in place since it was saved.

        With `lazy`, a modified tensor is returned as a stand-in that raises only
        when its values are read: an op's backward that computes just the
        gradients it needs (see `needs` in the registry) then does not fail on a
        saved tensor it does not use, as in PyTorch, which saves only those."""
        t = self.tensor
        if t._version_counter[0] != self.version:
            message = (
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.type()} {list(t.shape)}], which is output "
                f"{t._output_nr} of {node.name()}, is at version {t._version_counter[0]}; expected "
                f"version {self.version} instead. Hint: the backtrace further above shows the "
                "operation that failed to compute its gradient.")
            if lazy:
                return _stale_tensor(message)
            raise RuntimeError(message)
        return t


_StaleTensor = None


def _stale_tensor(message):
    global _StaleTensor
    if _StaleTensor is None:
        class _StaleTensor(_graph.Tensor):
            """Stands for a saved tensor modified in place: reading it raises."""

            @property
            def _data(self):
                raise RuntimeError(self._message)
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
