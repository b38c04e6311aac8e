"""What users read stays true: the README is a user's page of at most about 250 lines, and every
file and command that the README, SECURITY.md, CONTRIBUTING.md, CHANGELOG.md and docs/ name exists. Names
under experiments/ are checked where the lab is in the checkout: the product's tests pass without
it (tests/test_fixtures.py)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import click
import pytest

from perfbot.cli import perfbot
from tests.conftest import ROOT

LAB = ROOT / "experiments"
PAGES = [
    ROOT / "README.md",
    ROOT / "SECURITY.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *([LAB / "README.md"] if LAB.is_dir() else []),
]
TOP = (
    "perfbot/",
    "kernels/",
    "docs/",
    "experiments/",
    "scripts/",
    "tests/",
    ".github/",
    "thresholds.yaml",
    "SECURITY.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "pyproject.toml",
    ".ci/",
)
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(re.escape(t) for t in TOP) + r")[\w./{},*-]*)")


def _paths(text: str) -> set[str]:
    found = set()
    for match in PATH.findall(text):
        path = match.rstrip(".,)")
        for expanded in _braces(path):
            found.add(expanded)
    return found


def _braces(path: str) -> list[str]:
    brace = re.search(r"\{([^{}]*)\}", path)
    if not brace:
        return [path]
    return [
        p for choice in brace.group(1).split(",") for p in _braces(path[: brace.start()] + choice + path[brace.end() :])
    ]


def test_the_readme_is_a_users_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    text = "\n".join(lines)
    assert "kernels/results" not in text and text.count("2026-") <= 2  # no lab notebook


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_names_exists(page: Path):
    missing = [
        path
        for path in sorted(_paths(page.read_text()))
        if not glob.glob(str(ROOT / path))
        and not (ROOT / path.rstrip("/")).exists()
        and (LAB.is_dir() or not (ROOT / path).is_relative_to(LAB))
    ]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_ci_runs_the_readmes_test_command_verbatim():
    """The second command of the README's "Two commands" sets up and runs the tests; .ci/run runs
    that line as it is, so what a contributor runs is what CI runs."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Two commands") :]
    setup_and_run, setup_and_test = re.findall(r"```sh\n(.*?)\n```", section, re.S)[:2]
    assert "pytest" in setup_and_test and "pytest" not in setup_and_run
    assert setup_and_test in (ROOT / ".ci" / "run").read_text().splitlines()


def test_every_command_the_readme_names_exists():
    text = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`perfbot ([a-z][a-z-]*)", text))
    commands = set(perfbot.list_commands(click.Context(perfbot)))
    assert named and named <= commands, named - commands


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.S)


def test_the_subject_pages_complete_example_works(tmp_path: Path):
    """docs/subject.md's example, written out as the page says, passes `perfbot check` on the CPU."""
    from click.testing import CliRunner

    page = ROOT / "docs" / "subject.md"
    (tmp_path / "pyproject.toml").write_text(_blocks(page, "toml")[0])
    (tmp_path / "softmax").mkdir()
    (tmp_path / "softmax" / "__init__.py").write_text(_blocks(page, "python")[0])
    done = CliRunner().invoke(perfbot, ["check", "--project", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "4 right, 0 wrong, of 4" in done.output
    suites = CliRunner().invoke(perfbot, ["suites", "--project", str(tmp_path)])
    assert "vocab-32k" in suites.output and "rows=4096 cols=32768" in suites.output


# A place in the code or the policy that sends the reader to a page's section: `docs/x.md, "Title"`
# or `docs/x.md ("Title")`, the title a heading of that page or a point in bold.
SECTION_REFERENCE = re.compile(r'(docs/[\w-]+\.md)[,\s(]+"([A-Za-z][^"]*)"')
REFERRING = [
    *sorted((ROOT / "perfbot").rglob("*.py")),
    *sorted((ROOT / "kernels").glob("*.py")),
    *sorted((ROOT / "examples").rglob("*.py")),
    ROOT / "thresholds.yaml",
]


def _section_references(path: Path) -> list[tuple[str, str]]:
    # A comment or docstring wraps its lines: join them, dropping each line's indent and "#".
    text = re.sub(r"\n[ \t]*#?[ \t]*", " ", path.read_text())
    return SECTION_REFERENCE.findall(text)


def test_every_section_the_code_points_to_exists():
    """Code says why in a line and names the section that holds the figures: that section must be
    there, or the pointer leads nowhere once a page is reorganised."""
    missing = []
    for path in REFERRING:
        for page, title in _section_references(path):
            text = (ROOT / page).read_text() if (ROOT / page).is_file() else ""
            heading = re.search(r"(?m)^#+ " + re.escape(title), text)
            if heading is None and f"**{title}**" not in text:
                missing.append(f"{path.relative_to(ROOT)}: {page}, {title!r}")
    assert not missing, missing


def test_the_section_reference_finder_reads_wrapped_comments(tmp_path: Path):
    wrapped = tmp_path / "wrapped.py"
    wrapped.write_text('# held to 1-2% (docs/method.md, "The check at full\n# width, measured")\n')
    assert _section_references(wrapped) == [("docs/method.md", "The check at full width, measured")]
