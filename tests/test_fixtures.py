"""The tests read their data from tests/fixtures, never from experiments/: the lab's dated folders
may be pruned or moved without the product's tests noticing, and every fixture says where it
came from (tests/fixtures/README.md)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
# test_docs.py checks that the pages' links into the lab lead somewhere, where the lab is there.
MAY_NAME_THE_LAB = {"test_docs.py", "test_fixtures.py"}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings: they may say where data came from."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def lab_paths(source: str) -> list[tuple[int, str]]:
    """Each string in the code (not a docstring or a comment) that names experiments/ or a path in
    it, with its line."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and (node.value.strip("/") == "experiments" or node.value.startswith("experiments/"))
    )


def test_no_test_reads_the_lab():
    named = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name not in MAY_NAME_THE_LAB
        for line, value in lab_paths(path.read_text())
    ]
    assert not named, f"tests read experiments/; copy the data into tests/fixtures: {named}"


def test_the_finder_sees_a_path_into_the_lab_and_leaves_docstrings_alone():
    source = '''"""From experiments/2026-11-30-x/ (a docstring)."""
NOISE = ROOT / "experiments" / "x" / "noise.json"  # experiments/ in a comment
RUNS = Path("experiments/2026-11-30-y/run.json")
NAME = "experiments-and-more"


def f():
    """experiments/ again, a docstring."""
    return f"experiments/{NAME}"
'''
    assert lab_paths(source) == [(2, "experiments"), (3, "experiments/2026-11-30-y/run.json"), (9, "experiments/")]


def test_every_fixture_says_where_it_came_from():
    readme = (FIXTURES / "README.md").read_text()
    files = [path for path in sorted(FIXTURES.rglob("*")) if path.is_file() and path.name != "README.md"]
    assert files
    unsaid = [str(path.relative_to(FIXTURES)) for path in files if f"| `{path.relative_to(FIXTURES)}` |" not in readme]
    assert not unsaid, f"tests/fixtures/README.md has no line for {unsaid}"
