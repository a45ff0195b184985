"""dynjit's layers import downward only (docs/architecture.md).

Every module of the package belongs to one layer; a module may import its own
layer and the layers below it, never one above: not at module level, and not
inside a function either (a lazy import is still a dependency). The few places
where a lower layer must reach a higher one do it through a slot that the
higher layer fills: the dispatcher's tensor class and autograd entry points
(filled by dynjit/__init__.py), the engine's compiled-autograd slot (filled by
compiled_autograd.enable), the JIT callback (dynjit/_jit_callback.py, filled by
the frontend).
"""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "dynjit"

# Bottom to top. A module belongs to the layer of its longest listed prefix.
LAYERS = [
    ("base", ("dynjit._dtype", "dynjit.config", "dynjit.exc", "dynjit._logging", "dynjit.utils",
              "dynjit.random", "dynjit._jit_callback", "dynjit._printing", "dynjit._pytree")),
    ("ops", ("dynjit.ops",)),
    ("tensor", ("dynjit.tensor",)),
    ("autograd", ("dynjit.autograd",)),
    ("tensor API", ("dynjit._methods", "dynjit.functional", "dynjit.sparse")),
    ("nn, optim", ("dynjit.nn", "dynjit.optim", "dynjit.utils.data", "dynjit.utils.checkpoint", "dynjit.serialization", "dynjit.cuda",
                   "dynjit.accelerator", "dynjit.amp")),
    ("fx", ("dynjit.fx", "dynjit._trace_wrapped")),
    ("aot", ("dynjit.aot",)),
    ("func, control flow", ("dynjit.func", "dynjit.control_flow")),
    ("compiled autograd", ("dynjit.compiled_autograd",)),
    ("backends", ("dynjit.backends", "dynjit.compiler")),
    ("frontend", ("dynjit.frontend",)),
    ("API", ("dynjit", "dynjit.testing", "dynjit.cli", "dynjit.demo", "dynjit.bench")),
]


def layer_of(module):
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name):
    rel = pathlib.Path(*name.split("."))
    base = PACKAGE.parent / rel
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _modules():
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path, source=None):
    """(line, imported dynjit module) for every import in the file, at any depth; a name
    imported from a package counts as its submodule when there is one."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "dynjit"]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, node)
            if base.split(".")[0] != "dynjit":
                continue
            subs = [f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")]
            if len(subs) < len(node.names):
                found.append((node.lineno, base))
            found += [(node.lineno, s) for s in subs]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__") and node.args
              and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("dynjit")):
            found.append((node.lineno, node.args[0].value))
    return found


def _resolve(package, node):
    """The absolute module name an ImportFrom node imports from."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[:len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def test_every_module_has_a_layer():
    missing = [m for m in _modules() if layer_of(m) is None]
    assert not missing, f"modules in no layer (add them to LAYERS and docs/architecture.md): {missing}"


def test_no_upward_imports():
    bad = []
    for module, path in _modules().items():
        mine = layer_of(module)
        for line, target in imports(path):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[mine][0]}) imports "
                           f"{target} ({LAYERS[theirs][0]})")
    assert not bad, "imports from a higher layer:\n" + "\n".join(bad)


def test_no_module_patches_another_at_import():
    """A module-level `other_module.name = value` is how a cycle gets papered over: the layer
    above fills a slot through a function the lower layer offers instead."""
    bad = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text())
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        aliases = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                aliases |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("dynjit")}
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(package, node)
                aliases |= {a.asname or a.name for a in node.names if _is_module(f"{base}.{a.name}")}
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in aliases:
                    bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(t)}")
    assert not bad, "module attributes patched at import:\n" + "\n".join(bad)


@pytest.mark.parametrize("source, target, upward", [
    ("dynjit.ops.dispatch", "dynjit.tensor", True),
    ("dynjit.autograd.engine", "dynjit.compiled_autograd", True),
    ("dynjit.fx.graph", "dynjit", True),
    ("dynjit.tensor", "dynjit.ops.registry", False),
    ("dynjit.frontend.translator", "dynjit.backends", False),
])
def test_layer_order(source, target, upward):
    assert (layer_of(target) > layer_of(source)) is upward


def test_the_scan_sees_imports_inside_functions():
    src = ("def f():\n    from ..tensor import Tensor\n    from . import registry, vocab\n"
           "    import dynjit.fx.graph\n    from .. import ops, exc\n")
    found = [t for _, t in imports(PACKAGE / "ops" / "probe.py", source=src)]
    assert found == ["dynjit.tensor", "dynjit.ops.registry", "dynjit.ops.vocab", "dynjit.fx.graph",
                     "dynjit.ops", "dynjit.exc"]
