"""Everything that is true of an op is declared once, at its registration
(dynjit/ops/registry.py), and every layer derives what it needs from the
registry: no list of op names lives anywhere else.

These tests check that what the registry says holds everywhere (variants
exist, in-place pairs link up, tags mean what they say) and scan dynjit/ and
backends/ for literal collections of op names."""
import ast
import inspect
import pathlib

import pytest

import dynjit
import dynjit.functional
from dynjit.fx import Graph
from dynjit.ops import metadata
from dynjit.ops.registry import (registry, with_tag, with_variant, FUNCTION, METHOD, INPLACE, VIEW,
                                 REDUCTION, RANDOM, NONE_DIM_REDUCES_ALL, TAGS, VARIANTS)
from dynjit.aot.partition import _is_recomputable

ROOT = pathlib.Path(__file__).resolve().parents[2]


# -- variants ------------------------------------------------------------------------

@pytest.mark.parametrize("name", with_variant(METHOD))
def test_every_method_variant_is_a_tensor_method(name):
    method = inspect.getattr_static(dynjit.Tensor, name, None)
    assert callable(method), f"{name} declares a method variant but Tensor.{name} is missing"


@pytest.mark.parametrize("name", with_variant(FUNCTION))
def test_every_function_variant_is_a_dynjit_function(name):
    assert callable(getattr(dynjit, name, None)), f"{name} declares a function variant but dynjit.{name} is missing"
    assert name in dynjit.functional.__all__


def test_generated_methods_are_exactly_the_method_variants():
    """A Tensor method generated from an op (its name is the op's, it says 'See dynjit.<op>')
    exists only for ops that declare the variant."""
    generated = {n for n, v in vars(dynjit.Tensor).items()
                 if getattr(v, "__qualname__", None) == f"Tensor.{n}" and getattr(v, "__doc__", None) == f"See dynjit.{n}."}
    assert generated <= set(with_variant(METHOD))


def test_variants_and_tags_are_known_words():
    for op in registry.values():
        assert op.variants <= set(VARIANTS), op.name
        assert op.tags <= set(TAGS), op.name


def test_with_variant_and_with_tag_read_the_declarations():
    assert "add" in with_variant(FUNCTION) and "add" in with_variant(METHOD)
    assert "add_" in with_variant(METHOD) and "add_" not in with_variant(FUNCTION)
    assert "index_backward" not in with_variant(FUNCTION) + with_variant(METHOD)
    assert with_tag(RANDOM) >= {"rand", "randn", "bernoulli", "native_dropout"}


# -- in-place pairs ------------------------------------------------------------------

def test_inplace_pairs_link_up():
    for name, op in registry.items():
        if op.kind == INPLACE:
            fop = op.functional
            assert fop is not None and fop.inplace is op, name
            assert name == fop.name + "_"
            assert op.kernel is fop.kernel
            assert METHOD in op.variants
            assert [op.params[i] for i in op.tensor_lists] == [fop.params[i] for i in fop.tensor_lists]
        elif op.inplace is not None:
            assert op.inplace.functional is op and registry[name + "_"] is op.inplace, name
        else:
            assert op.functional is None, name


def test_every_inplace_variant_is_a_tensor_method():
    for name, op in registry.items():
        if op.kind == INPLACE:
            assert callable(getattr(dynjit.Tensor, name, None)), name


def test_declaring_an_op_twice_fails():
    with pytest.raises(ValueError, match="registered twice"):
        dynjit.ops.register("add", "pointwise")(lambda self, other: self)
    with pytest.raises(ValueError, match="registered twice"):
        # its in-place variant would clash with the one `add` declares
        dynjit.ops.register("add_", "pointwise")(lambda self, other: self)


def test_an_op_declared_after_import_runs_and_differentiates():
    op = dynjit.ops.register("_probe_twice", "pointwise", inplace=True)(lambda self: self * 2)
    try:
        op.derivative(lambda grad: grad * 2)
        x = dynjit.ones(2, requires_grad=True)
        op(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        y = dynjit.ones(2)
        registry["_probe_twice_"](y)
        assert y.tolist() == [2.0, 2.0]
    finally:
        del registry["_probe_twice"], registry["_probe_twice_"]


def test_a_declaration_names_only_known_variants_tags_and_parameters():
    from dynjit.ops.registry import OpDef
    kernel = lambda self, other: self  # noqa: E731
    with pytest.raises(ValueError, match="unknown variant"):
        OpDef("x", kernel, "pointwise", variants="function, attribute")
    with pytest.raises(ValueError, match="unknown tag"):
        OpDef("x", kernel, "pointwise", tags=("fast",))
    with pytest.raises(ValueError, match="is not a parameter"):
        OpDef("x", kernel, "pointwise", wraps_scalar="value")


# -- tags and other facts ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(with_tag(RANDOM)))
def test_random_ops_are_kept_in_graphs_and_never_recomputed(name):
    g = Graph()
    node = g.call_function(registry[name], ())
    assert node.is_impure()
    assert not _is_recomputable(node)


def test_non_random_ops_are_pure_and_recomputable():
    g = Graph()
    node = g.call_function(registry["sin"], ())
    assert not node.is_impure()
    assert _is_recomputable(node)


@pytest.mark.parametrize("name", sorted(with_tag(NONE_DIM_REDUCES_ALL)))
def test_none_dim_reduces_every_dim(name):
    op = registry[name]
    assert op.kind == REDUCTION and "dim" in op.index
    x = dynjit.rand(2, 3, dtype=dynjit.float64) + 0.5
    out = op(x, dim=None)
    for o in (out if isinstance(out, tuple) else (out,)):
        assert o.ndim == 0, name


def test_dim_overloads_take_the_dim():
    declared = {n: op.dim_overload for n, op in registry.items() if op.dim_overload}
    assert set(declared) == {"max", "min", "median", "nanmedian"}
    for name, other in declared.items():
        assert "dim" not in registry[name].index and "dim" in registry[other].index


def test_wrapped_scalar_parameters_get_a_none_edge():
    declared = {n for n, op in registry.items() if op.wraps_scalar}
    assert declared == {"add", "sub", "mul", "div"}
    x = dynjit.ones(2, requires_grad=True)
    for name in declared:
        edges = registry[name](x, 2.0).grad_fn.next_functions
        assert len(edges) == 2 and edges[1] == (None, 0), name
    assert len(registry["pow"](x, 2.0).grad_fn.next_functions) == 1


def test_inplace_views_are_tensor_methods_of_view_ops():
    declared = {m: op for op in registry.values() for m in op.inplace_views}
    assert metadata.INPLACE_VIEWS == declared
    assert set(declared) == {"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_"}
    for method, op in declared.items():
        assert op.kind == VIEW and callable(getattr(dynjit.Tensor, method, None)), method


def test_varargs_methods_take_spread_sizes():
    declared = [n for n, op in registry.items() if op.varargs]
    assert set(declared) == {"view", "reshape", "expand", "permute", "repeat", "flip", "sum_to_size"}
    x = dynjit.ones(2, 3)
    for name in declared:
        op = registry[name]
        assert METHOD in op.variants and op.params[1] == op.varargs
        args = {"view": (3, 2), "reshape": (3, 2), "expand": (2, 3), "permute": (1, 0),
                "repeat": (1, 2), "flip": (0, 1), "sum_to_size": (1, 3)}[name]
        spread = getattr(x, name)(*args)
        listed = getattr(x, name)(args)
        assert spread.shape == listed.shape and bool((spread == listed).all()), name


def test_aliases_input_is_declared():
    assert [n for n, op in registry.items() if op.aliases_input] == ["detach"]


# -- no list of op names outside the registry ------------------------------------------

# Tables that say how a layer implements ops, keyed by op name (like derivatives are
# keyed by op): they are not facts about the ops. (path, enclosing name) -> why.
IMPLEMENTATION_TABLES = {
    ("dynjit/func/_batching.py", "_RULES"): "vmap batching rules, one per op that needs its own",
    ("dynjit/functional.py", "__all__"): "the public names of functions written out by hand",
    ("backends/llvm/lowering.py", "REDUCTIONS"): "llvm: how each reduction is lowered",
    ("backends/llvm/lowering.py", "COPY_OPS"): "llvm: ops lowered as copies",
    ("backends/llvm/lowering.py", "DECOMPOSED"): "llvm: ops spelled as reductions and pointwise ops",
    ("backends/llvm/lowering.py", "Lowering.try_reduction"): "llvm: reductions lowered with a dtype argument",
    ("backends/llvm/mathlib.py", "FAST_F32"): "llvm: math lowered with float32 approximations",
    ("backends/llvm/mathlib.py", "LIBM_UNARY"): "llvm: math lowered to libm calls",
    ("backends/llvm/mathlib.py", "LIBM_BINARY"): "llvm: math lowered to libm calls",
    ("backends/llvm/mathlib.py", "_BODIES"): "llvm: in-IR approximations",
    ("backends/llvm/codegen.py", "PRIMS"): "llvm: code generators of primitives",
    ("backends/llvm/op_lowerings.py", None): "llvm: lowerings (registered per op with @lowering)",
    ("dynjit/nn/functional.py", "embedding_bag"): "the values of embedding_bag's `mode` argument "
                                                   "('sum', 'mean', 'max'), which are also op names",
    ("dynjit/ops/scatter_reduce.py", None): "the values of scatter_reduce's `reduce` argument "
                                            "('sum', 'prod', ...), which are also op names",
}


def _site_lists(path):
    """(enclosing name, line, op names) for each literal collection in `path` of three or
    more strings that are mostly registered op names."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, owner):
        for child in ast.iter_child_nodes(node):
            name = owner
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = child.name if owner is None else f"{owner}.{child.name}"
            elif isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and owner is None:
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                t = targets[0]
                name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None) or ast.unparse(t)
                if isinstance(t, ast.Subscript):
                    name = ast.unparse(t.value)
            elts = None
            if isinstance(child, (ast.Tuple, ast.List, ast.Set)):
                elts = child.elts
            elif isinstance(child, ast.Dict):
                elts = [k for k in child.keys if k is not None]
            if elts:
                strs = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                ops = [s for s in strs if s in registry]
                if len(ops) >= 3 and 2 * len(ops) >= len(strs):
                    found.append((name, child.lineno, ops))
            visit(child, name)
    visit(tree, None)
    return found


def test_no_list_of_op_names_outside_the_registry():
    bad = []
    for top in ("dynjit", "backends"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for owner, line, ops in _site_lists(path):
                if (rel, owner) in IMPLEMENTATION_TABLES or (rel, None) in IMPLEMENTATION_TABLES:
                    continue
                bad.append(f"{rel}:{line} ({owner}): {ops[:6]}")
    assert not bad, ("lists of op names outside the registry: declare the fact at the op's "
                     "registration (dynjit/ops/registry.py) and derive the list from it:\n" + "\n".join(bad))


def test_the_scan_finds_a_list_of_op_names(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('X = 1\nRANDOMISH = frozenset({"rand", "randn", "bernoulli"})\n'
                 'def f(op):\n    return op in ("sin", "cos", "tan")\n')
    assert [(o, ops) for o, _, ops in _site_lists(f)] == [
        ("RANDOMISH", ["rand", "randn", "bernoulli"]), ("f", ["sin", "cos", "tan"])]
