"""Graph breaks are structured: every break has a kind from the closed set BreakKind and a hint
in the user's terms; counters, explain, the graph-break log and fullgraph errors show them."""
import ast
import logging
import pathlib

import pytest

import dynjit
from dynjit.exc import BreakKind, Unsupported
from dynjit.utils import counters

FRONTEND = pathlib.Path(dynjit.frontend.__file__).parent


def test_every_kind_has_a_title_and_a_distinct_hint():
    hints = [k.hint for k in BreakKind]
    assert all(k.title and len(k.hint) > 30 for k in BreakKind)
    assert len(set(hints)) == len(hints)


def test_a_break_needs_a_kind():
    with pytest.raises(TypeError, match="BreakKind"):
        Unsupported("a free-text reason", "detail")
    e = Unsupported(BreakKind.EXPLICIT, "detail")
    assert str(e) == "detail" and e.hint == BreakKind.EXPLICIT.hint
    assert Unsupported(BreakKind.EXPLICIT, "detail", "own hint").hint == "own hint"


def _break_sites():
    for path in FRONTEND.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                    "unimplemented", "Unsupported", "DataDependent"):
                yield path, node


def test_every_break_site_in_the_frontend_names_its_kind():
    sites = list(_break_sites())
    assert len(sites) > 100
    for path, call in sites:
        first = call.args[0] if call.args else None
        named = isinstance(first, ast.Attribute) and (
            getattr(first.value, "id", None) == "BreakKind" and first.attr in BreakKind.__members__
            or first.attr == "kind")               # re-raising a break keeps its kind
        assert named or ast.unparse(call) == "Unsupported(kind, detail, hint)", \
            f"{path.name}:{call.lineno}: {ast.unparse(call)}"


def _program(x):
    if x.sum() > 0:                 # data-dependent branch
        x = x + 1
    print("logged")                 # effect outside the program
    return x * x.sum().item()       # tensor data read


EXPECTED = [BreakKind.DATA_DEPENDENT_BRANCH, BreakKind.SIDE_EFFECT_CALL, BreakKind.TENSOR_DATA_READ]


def test_explain_groups_breaks_by_kind_with_hints(capsys):
    out = dynjit.explain(_program)(dynjit.ones(2))
    assert [b.kind for b in out.break_reasons] == EXPECTED
    assert dict(out.breaks_by_kind) == {k: 1 for k in EXPECTED}
    text = str(out)
    for brk, line in zip(out.break_reasons, (1, 3, 4)):
        assert f"[{brk.kind.title}]" in text and f"hint: {brk.hint}" in text
        assert brk.where == f"{__file__}:{_program.__code__.co_firstlineno + line}"
    assert "dynjit.where" in out.break_reasons[0].hint
    assert ".item() outside the compiled function" in out.break_reasons[2].hint


def test_counters_count_breaks_by_kind(capsys):
    counters.clear()
    dynjit.compile(_program)(dynjit.ones(2))
    assert {k: counters["graph_break_kind"][k.name] for k in EXPECTED} == {k: 1 for k in EXPECTED}


def test_fullgraph_error_shows_the_kind_and_hint():
    with pytest.raises(Unsupported) as info:
        dynjit.compile(_program, fullgraph=True)(dynjit.ones(2))
    assert info.value.kind is BreakKind.DATA_DEPENDENT_BRANCH
    assert f"hint: {BreakKind.DATA_DEPENDENT_BRANCH.hint}" in str(info.value)
    assert f"{__file__}:{_program.__code__.co_firstlineno + 1}" in str(info.value)


def test_graph_break_log_shows_the_hint(caplog, capsys):
    with caplog.at_level(logging.DEBUG, logger="dynjit.graph_breaks"):
        dynjit.compile(_program)(dynjit.ones(2))
    assert BreakKind.SIDE_EFFECT_CALL.hint in caplog.text


def test_explicit_break_and_a_break_in_a_loop_have_their_kinds(capsys):
    def explicit(x):
        x = x + 1
        dynjit.graph_break()
        return x

    def in_loop(x):
        for _ in range(2):
            x = x + 1
            print("step")
        return x
    assert [b.kind for b in dynjit.explain(explicit)(dynjit.ones(2)).break_reasons] == [BreakKind.EXPLICIT]
    brk, = dynjit.explain(in_loop)(dynjit.ones(2)).break_reasons
    assert brk.kind is BreakKind.SIDE_EFFECT_CALL
    assert BreakKind.FRAME_STRUCTURE.hint in brk.hint      # why the frame runs plain


def test_break_reasons_name_objects_without_addresses(capsys):
    # counters and explain group equal breaks by their reason: no `<... object at 0x...>`
    import collections

    class Opaque:
        def __call__(self, v):
            return v

    def fn(x):
        with dynjit.inference_mode():
            y = x * 2
        z = collections.Counter([1, 2])
        return Opaque()(y) + len(z)
    reasons = [b.reason for b in dynjit.explain(fn)(dynjit.ones(2)).break_reasons]
    assert reasons and not any("0x" in r for r in reasons), reasons
