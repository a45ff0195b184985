"""docs/conformance.md stays in step with the PyTorch seed tests (tools/conformance.py)."""
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO.parent / "shared" / "seeds"


def _load_tool():
    path = REPO / "tools" / "conformance.py"
    spec = importlib.util.spec_from_file_location("dynjit_conformance_tool", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while it loads
    spec.loader.exec_module(module)
    return module


conformance = _load_tool()


def test_conformance_table_has_one_valid_row_per_seed_test():
    if not SEEDS.is_dir():
        pytest.skip(f"seed directory {SEEDS} is not present next to the repository")
    problems = conformance.check(REPO, SEEDS, REPO / "docs" / "conformance.md")
    assert problems == [], "docs/conformance.md:\n" + "\n".join(problems)


WELL_FORMED = textwrap.dedent('''\
    import unittest
    from torch.testing._internal.common_utils import TestCase

    def test_top_level():
        pass

    class Helper(torch.nn.Module):
        def test_not_a_test(self):
            pass

    class TestA(TestCase):
        def test_one(self):
            def test_inner(x):
                return x
            s = """
    class GraphModule(torch.nn.Module):
        def forward(self, x):
            return x
    """

        @parametrize("n", [1, 2])
        def test_two(
            self, n
        ):
            class Local(Function):
                pass

        def test_one(self):
            pass

        def helper(self):
            pass

    class TestB(
        TestA,
    ):
        async def test_three(self):
            pass
    ''')


def test_scan_agrees_with_ast_on_well_formed_code():
    import ast

    from_ast = [t.name for t in conformance.tests_from_ast(ast.parse(WELL_FORMED))]
    from_scan = [t.name for t in conformance.tests_from_scan(WELL_FORMED)]
    assert from_ast == ["test_top_level", "TestA.test_one", "TestA.test_two", "TestB.test_three"]
    assert from_scan == from_ast


def test_scan_survives_garbled_seed(tmp_path):
    # a prose line, an unterminated string and a method knocked to column 0
    garbled = WELL_FORMED.replace("    def helper(self):", "这是一行说明。\n    def helper(self):")
    garbled = garbled.replace('"""\n\n    @parametrize', '\n    @parametrize')
    assert garbled.count('"""') == 1 and "这是" in garbled
    garbled += "def test_four(self):\n    pass\n"
    seed = tmp_path / "x.txt"
    seed.write_text("# `.\\pytorch\\test\\x.py`\n\n```py\n" + garbled + "```\n", encoding="utf-8")
    parsed = conformance.parse_seed(seed)
    assert parsed.parsed_with == "scan"
    assert parsed.title == ".\\pytorch\\test\\x.py"
    assert [t.name for t in parsed.tests] == [
        "test_top_level", "TestA.test_one", "TestA.test_two", "TestB.test_three", "TestB.test_four"]
    assert parsed.tests[0].line == 7  # line numbers count from the top of the seed file


def test_check_reports_each_kind_of_problem(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    code = "class TestX(TestCase):\n" + "".join(f"    def test_{c}(self):\n        pass\n" for c in "abcdef")
    (seeds / "s.txt").write_text("# `t.py`\n\n```py\n" + code + "```\n", encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("def test_ported():\n    pass\n", encoding="utf-8")
    doc = repo / "conformance.md"
    doc.write_text(textwrap.dedent("""\
        | seed file | seed test | status | dynjit test or reason |
        |---|---|---|---|
        | s.txt | `TestX.test_a` | pass | `tests/test_x.py::test_ported` |
        | s.txt | `TestX.test_b` | pass | tests/test_x.py::test_missing |
        | s.txt | `TestX.test_c` | out-of-scope |  |
        | s.txt | `TestX.test_d` | maybe | |
        | s.txt | `TestX.test_e` | todo | |
        | s.txt | `TestX.test_e` | todo | |
        | s.txt | `TestX.test_gone` | todo | |
        | other.txt | `TestX.test_a` | todo | |
        """), encoding="utf-8")
    problems = conformance.check(repo, seeds, doc)
    text = "\n".join(problems)
    assert "has no 'def test_missing'" in text
    assert "out-of-scope row needs a reason" in text
    assert "status 'maybe'" in text
    assert "TestX.test_e has 2 rows" in text
    assert "has no test 'TestX.test_gone'" in text
    assert "unknown seed file 'other.txt'" in text
    assert "missing row: s.txt TestX.test_f" in text
    assert len(problems) == 7, text
    assert not any("test_a " in p or "test_ported" in p for p in problems)


def test_every_ported_seed_test_is_marked_pass():
    # a `# ports: SEED Class.test` marker above a dynjit test means that row is done
    if not SEEDS.is_dir():
        pytest.skip(f"seed directory {SEEDS} is not present next to the repository")
    markers = conformance.port_markers(REPO)
    text = (REPO / "docs" / "conformance.md").read_text()
    rows, _ = conformance.parse_doc(text, {s for s, _ in markers})
    stale = [f"{r.seed} {r.test} -> {markers[(r.seed, r.test)]}" for r in rows
             if r.status == "todo" and (r.seed, r.test) in markers]
    assert stale == [], "run `python tools/conformance.py sync`:\n" + "\n".join(stale)
