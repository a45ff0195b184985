#!/usr/bin/env python3
"""Conformance bookkeeping between the PyTorch seed test files and dynjit.

The seed documents (``../shared/seeds/*.txt`` next to the repository) are
PyTorch test files wrapped in markdown: a ``# `path` `` title line, then the
code inside a ``` fence.  Some of them carry Chinese translation comments and
are garbled in places (prose lines dropped into the code, triple-quoted strings
whose closing quotes went missing, methods re-indented to column 0, ...).

This script lists every test in every seed and checks ``docs/conformance.md``,
the table that records, for each seed test, whether dynjit passes it
(``pass``), should do so eventually (``todo``) or never will
(``out-of-scope``, with a reason).

What counts as a seed test
--------------------------
* a ``def test_...`` method of a *test class* is listed as ``Class.test_name``;
  a test class is a class whose bases name something ending in ``TestCase``
  (``TestCase``, ``torch._dynamo.test_case.TestCase``, ``AOTTestCase``) or an
  earlier test class of the same file (``TestAOTAutogradWithDynamo(TestAOTAutograd)``);
* a top-level ``def test_...`` function (no ``self``) is listed by bare name;
* a test name defined twice in the same class is listed once;
* ``def test_...`` helpers nested in test bodies (``def test_fn(inp):``),
  ``def test(...)`` and methods of non-test classes are not tests.

If the fenced code parses, Python's ``ast`` gives the answer.  Otherwise a
line scan is used: a test method belongs to the most recent test-class header
above it, whatever its indentation (the garbling moves methods to column 0 or
indents whole classes), and a ``def test_...(self, ...)`` line is a test
method wherever it appears.  Both readings agree on well-formed code.

Usage::

    python tools/conformance.py list       # seedfile<TAB>testname, one per test
    python tools/conformance.py check      # validate docs/conformance.md
    python tools/conformance.py summary    # counts per seed file and status
    python tools/conformance.py sync       # todo -> pass where a test says `# ports: SEED Class.test`

``--seeds DIR`` and ``--doc FILE`` override the default locations
(``<repo>/../shared/seeds`` and ``<repo>/docs/conformance.md``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SEEDS = REPO_ROOT.parent / "shared" / "seeds"
DEFAULT_DOC = REPO_ROOT / "docs" / "conformance.md"

STATUSES = ("pass", "todo", "out-of-scope")


# ---------------------------------------------------------------------------
# Seed parsing
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedTest:
    name: str  # "Class.test_x" or "test_x"
    line: int  # 1-based line in the seed file where it is (first) defined


@dataclass
class Seed:
    path: Path
    title: str  # original PyTorch path from the "# `path`" line, if any
    tests: list[SeedTest]
    parsed_with: str  # "ast" or "scan"

    @property
    def name(self) -> str:
        return self.path.name


def extract_code(text: str) -> tuple[str, str, int]:
    """Return (title, code, first_code_line) for a markdown-wrapped seed.

    ``first_code_line`` is the 1-based line of the seed file holding the first
    line of ``code``.  Files without a fence are taken as plain code.
    """
    lines = text.splitlines()
    title = ""
    start = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if start is None and not title:
            m = re.match(r"#\s*`([^`]*)`", stripped)
            if m:
                title = m.group(1)
                continue
        if stripped.startswith("```"):
            start = i + 1
            break
    if start is None:
        return title, text, 1
    end = len(lines)
    for j in range(start, len(lines)):
        if lines[j].strip().startswith("```"):
            end = j
            break
    return title, "\n".join(lines[start:end]) + "\n", start + 1


def _base_names(bases: list[str]) -> list[str]:
    return [b.strip().split(".")[-1] for b in bases if b.strip()]


def _is_test_class(bases: list[str], known: set[str]) -> bool:
    return any(b.endswith("TestCase") or b in known for b in _base_names(bases))


def _first_param(args: ast.arguments) -> str | None:
    params = args.posonlyargs + args.args
    return params[0].arg if params else None


def tests_from_ast(tree: ast.Module) -> list[SeedTest]:
    """Tests of a module that parsed cleanly (line numbers relative to code)."""
    found: list[SeedTest] = []
    seen: set[str] = set()
    known: set[str] = set()

    def add(name: str, line: int) -> None:
        if name not in seen:
            seen.add(name)
            found.append(SeedTest(name, line))

    def visit_class(cls: ast.ClassDef) -> None:
        bases = [ast.unparse(b) for b in cls.bases]
        if not _is_test_class(bases, known):
            return
        known.add(cls.name)
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                add(f"{cls.name}.{node.name}", node.lineno)

    # Walk in source order so that "earlier test class" is meaningful.
    for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.ClassDef):
            visit_class(node)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            if _first_param(node.args) != "self":
                add(node.name, node.lineno)
    found.sort(key=lambda t: t.line)
    return found


_CLASS_RE = re.compile(r"^(\s*)class\s+(\w+)\s*([(:])")
_DEF_RE = re.compile(r"^(\s*)(?:async\s+)?def\s+(test_\w*)\s*\((.*)$")


def _first_param_text(lines: list[str], i: int, rest: str) -> str:
    """First parameter name of a def whose text after '(' starts with rest."""
    text = rest
    j = i
    while not re.search(r"\w|\)", text) and j + 1 < len(lines) and j < i + 5:
        j += 1
        text += " " + lines[j]
    m = re.match(r"\s*(\*{0,2}\w+)", text)
    return m.group(1) if m else ""


def _class_bases(lines: list[str], i: int, rest: str) -> list[str]:
    """Base-class expressions of a class header whose text after '(' is rest."""
    text = rest
    j = i
    while ")" not in text and j + 1 < len(lines) and j < i + 5:
        j += 1
        text += " " + lines[j]
    return text.split(")", 1)[0].split(",")


def tests_from_scan(code: str) -> list[SeedTest]:
    """Line-based fallback for code that does not parse (see module doc)."""
    lines = code.splitlines()
    found: list[SeedTest] = []
    seen: set[str] = set()
    known: set[str] = set()
    current: str | None = None  # most recent test class
    for i, line in enumerate(lines):
        m = _CLASS_RE.match(line)
        if m:
            bases = _class_bases(lines, i, line[m.end():]) if m.group(3) == "(" else []
            if _is_test_class(bases, known):
                known.add(m.group(2))
                current = m.group(2)
            continue
        m = _DEF_RE.match(line)
        if not m:
            continue
        indent, name, rest = m.groups()
        if _first_param_text(lines, i, rest) == "self":
            if current is None:
                continue  # a method outside any test class
            qual = f"{current}.{name}"
        elif indent == "":
            qual = name  # top-level test function
            current = None
        else:
            continue  # helper nested in a test body
        if qual not in seen:
            seen.add(qual)
            found.append(SeedTest(qual, i + 1))
    return found


def parse_seed(path: Path) -> Seed:
    text = path.read_text(encoding="utf-8", errors="replace")
    title, code, first = extract_code(text)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        tests, how = tests_from_scan(code), "scan"
    else:
        tests, how = tests_from_ast(tree), "ast"
    tests = [SeedTest(t.name, t.line + first - 1) for t in tests]
    return Seed(path, title, tests, how)


def load_seeds(seeds_dir: Path) -> list[Seed]:
    return [parse_seed(p) for p in sorted(seeds_dir.glob("*.txt"))]


# ---------------------------------------------------------------------------
# The conformance table
# ---------------------------------------------------------------------------


@dataclass
class Row:
    line: int
    seed: str
    test: str
    status: str
    note: str


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [c.strip().replace("\\|", "|") for c in cells]


def _unquote(cell: str) -> str:
    cell = cell.strip()
    if len(cell) >= 2 and cell[0] == "`" and cell[-1] == "`":
        cell = cell[1:-1].strip()
    return cell


def parse_doc(text: str, seed_names: set[str]) -> tuple[list[Row], list[str]]:
    """Rows of every table line whose first cell names a seed file.

    Header and separator lines are skipped; any other table line that does
    not name a known seed file is reported as a problem.
    """
    rows: list[Row] = []
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            continue
        cells = _split_row(line)
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue  # separator
        first = _unquote(cells[0]) if cells else ""
        if first.lower() == "seed file":
            continue  # header
        if first not in seed_names:
            problems.append(f"doc line {n}: row names unknown seed file {first!r}")
            continue
        if len(cells) != 4:
            problems.append(f"doc line {n}: expected 4 columns, found {len(cells)}")
            continue
        rows.append(Row(n, first, _unquote(cells[1]), _unquote(cells[2]), cells[3].strip()))
    return rows, problems


_PASS_RE = re.compile(r"^(tests/[\w./-]+\.py)::(?:(\w+)::)?(test_\w+)$")


def _check_pass_target(note: str, repo: Path) -> str | None:
    """Problem with a `pass` row's dynjit test reference, or None."""
    ref = _unquote(note)
    m = _PASS_RE.match(ref)
    if not m:
        return f"pass row must name a dynjit test as tests/path.py::test_name, got {note!r}"
    rel, cls, func = m.groups()
    path = repo / rel
    if not path.is_file():
        return f"dynjit test file {rel} does not exist"
    src = path.read_text(encoding="utf-8", errors="replace")
    if not re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(func)}\s*\(", src, re.M):
        return f"{rel} has no 'def {func}'"
    if cls and not re.search(rf"^\s*class\s+{re.escape(cls)}\b", src, re.M):
        return f"{rel} has no 'class {cls}'"
    return None


def check(repo: Path = REPO_ROOT, seeds_dir: Path = DEFAULT_SEEDS, doc: Path | None = None) -> list[str]:
    """Every problem with the conformance table; an empty list means it is valid."""
    doc = doc or repo / "docs" / "conformance.md"
    problems: list[str] = []
    seeds = load_seeds(seeds_dir)
    if not seeds:
        return [f"no seed files (*.txt) found in {seeds_dir}"]
    if not doc.is_file():
        return [f"{doc} does not exist"]
    expected = {(s.name, t.name) for s in seeds for t in s.tests}
    rows, problems = parse_doc(doc.read_text(encoding="utf-8"), {s.name for s in seeds})

    by_key: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        by_key.setdefault((r.seed, r.test), []).append(r)
    for (seed, test), rs in sorted(by_key.items()):
        if (seed, test) not in expected:
            problems.append(f"doc line {rs[0].line}: {seed} has no test {test!r}")
        if len(rs) > 1:
            lines = ", ".join(str(r.line) for r in rs)
            problems.append(f"doc lines {lines}: {seed} {test} has {len(rs)} rows")
    for seed in seeds:
        for t in seed.tests:
            if (seed.name, t.name) not in by_key:
                problems.append(f"missing row: {seed.name} {t.name} (seed line {t.line})")

    for r in rows:
        where = f"doc line {r.line} ({r.seed} {r.test})"
        if r.status not in STATUSES:
            problems.append(f"{where}: status {r.status!r} is not one of {', '.join(STATUSES)}")
        elif r.status == "pass":
            err = _check_pass_target(r.note, repo)
            if err:
                problems.append(f"{where}: {err}")
        elif r.status == "out-of-scope" and not r.note.strip():
            problems.append(f"{where}: out-of-scope row needs a reason")
    return problems


def summary(repo: Path = REPO_ROOT, seeds_dir: Path = DEFAULT_SEEDS, doc: Path | None = None) -> str:
    doc = doc or repo / "docs" / "conformance.md"
    seeds = load_seeds(seeds_dir)
    rows: list[Row] = []
    if doc.is_file():
        rows, _ = parse_doc(doc.read_text(encoding="utf-8"), {s.name for s in seeds})
    counts: dict[str, Counter] = {s.name: Counter() for s in seeds}
    for r in rows:
        counts[r.seed][r.status] += 1
    cols = list(STATUSES)
    header = ["seed file", "tests", *cols, "no row"]
    table = []
    total = Counter()
    for s in seeds:
        c = counts[s.name]
        in_doc = {r.test for r in rows if r.seed == s.name}
        missing = sum(1 for t in s.tests if t.name not in in_doc)
        row = [s.name, len(s.tests), *(c[k] for k in cols), missing]
        table.append(row)
        total.update({"tests": len(s.tests), "no row": missing, **{k: c[k] for k in cols}})
    table.append(["total", total["tests"], *(total[k] for k in cols), total["no row"]])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table)]
    out = []
    for row in [header, *table]:
        out.append("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths))))
    return "\n".join(out)


_PORTS_RE = re.compile(r"#\s*ports:\s*(\S+\.txt)\s+(.+)$")
_PORT_DEF_RE = re.compile(r"^(\s*)(?:async\s+)?def\s+(test_\w+)")
_PORT_CLASS_RE = re.compile(r"^class\s+(Test\w*)")


def port_markers(repo: Path = REPO_ROOT) -> dict[tuple[str, str], str]:
    """(seed file, seed test) -> pytest id, from `# ports: SEED Class.test, ...`
    comments placed right above the dynjit test that ports them."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted((repo / "tests").rglob("*.py")):
        lines = path.read_text().splitlines()
        rel = path.relative_to(repo).as_posix()
        pending: list[tuple[str, str]] = []
        cls = None
        for line in lines:
            m = _PORT_CLASS_RE.match(line)
            if m:
                cls = m.group(1)
            m = _PORTS_RE.search(line)
            if m:
                seed = m.group(1)
                pending += [(seed, name.strip().rstrip(",")) for name in re.split(r"[,\s]+", m.group(2))
                            if name.strip().rstrip(",")]
                continue
            m = _PORT_DEF_RE.match(line)
            if m and pending:
                target = f"{rel}::{cls}::{m.group(2)}" if m.group(1) and cls else f"{rel}::{m.group(2)}"
                for key in pending:
                    found.setdefault(key, target)
                pending = []
    return found


def sync(repo: Path = REPO_ROOT, seeds_dir: Path = DEFAULT_SEEDS, doc: Path | None = None) -> int:
    """Mark `todo` rows `pass` where a `# ports:` marker names the dynjit test; returns rows changed."""
    doc = doc or repo / "docs" / "conformance.md"
    markers = port_markers(repo)
    out, changed = [], 0
    for line in doc.read_text().splitlines(keepends=True):
        cells = _split_row(line) if line.lstrip().startswith("|") else []
        if len(cells) == 4 and _unquote(cells[2]) == "todo":
            target = markers.get((_unquote(cells[0]), _unquote(cells[1])))
            if target is not None:
                line = f"| {cells[0]} | {cells[1]} | pass | {target} |\n"
                changed += 1
        out.append(line)
    doc.write_text("".join(out))
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("list", "check", "summary", "sync"))
    ap.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS, help="directory of seed *.txt files")
    ap.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="conformance table (markdown)")
    ap.add_argument("--lines", action="store_true", help="list: add the seed line number as a third column")
    args = ap.parse_args(argv)

    if not args.seeds.is_dir():
        print(f"seed directory {args.seeds} not found", file=sys.stderr)
        return 2
    if args.mode == "list":
        for seed in load_seeds(args.seeds):
            for t in seed.tests:
                print(f"{seed.name}\t{t.name}" + (f"\t{t.line}" if args.lines else ""))
        return 0
    if args.mode == "sync":
        print(f"{sync(REPO_ROOT, args.seeds, args.doc)} row(s) marked pass from `# ports:` markers")
        return 0
    if args.mode == "summary":
        print(summary(REPO_ROOT, args.seeds, args.doc))
        return 0
    problems = check(REPO_ROOT, args.seeds, args.doc)
    if problems:
        print(f"{args.doc}: {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    n = sum(len(s.tests) for s in load_seeds(args.seeds))
    print(f"{args.doc}: OK ({n} seed tests, one row each)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. `list | head`
        sys.stderr.close()
        sys.exit(0)
