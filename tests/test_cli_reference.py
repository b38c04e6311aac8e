"""docs/cli.md, the command-line reference, is every command's --help as it is now: written by
scripts/cli_reference.py, which refuses a command without help or an example."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

from perfbot.cli import perfbot
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "cli_reference.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_is_current():
    written = (ROOT / "docs" / "cli.md").read_text()
    assert _script().render(perfbot) == written, "docs/cli.md is not current: run python scripts/cli_reference.py"


# `python -m perfbot ARGS` for each ARGS, one after another in one process (a process each costs
# a start-up and perfbot's imports again): what each printed on stdout.
AS_MAIN = """
import contextlib, io, json, runpy, sys
printed = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["perfbot", *args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        runpy.run_module("perfbot", run_name="__main__", alter_sys=True)
    printed.append(out.getvalue())
print(json.dumps(printed))
"""


def test_the_reference_holds_each_commands_help_as_the_command_prints_it():
    text = (ROOT / "docs" / "cli.md").read_text()
    paths = [("history", "ack"), ("compare",)]
    env = {**os.environ, "COLUMNS": "80"}  # a terminal 80 wide, as the page is written for
    done = subprocess.run(
        [sys.executable, "-c", AS_MAIN, json.dumps([[*path, "--help"] for path in paths])],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for path, printed in zip(paths, json.loads(done.stdout), strict=True):
        assert f"## perfbot {' '.join(path)}\n\n```text\n{printed.rstrip()}\n```\n" in text
    assert "| `perfbot compare` | `--json` | `--out-json` |" in text  # the renames, with their new names


def test_every_command_is_in_the_reference_and_the_readme_links_to_it():
    text = (ROOT / "docs" / "cli.md").read_text()
    for path, _ in _script().walk(perfbot):
        assert f"\n## perfbot {' '.join(path)}\n" in text, path
    assert "(docs/cli.md)" in (ROOT / "README.md").read_text()


def _group() -> click.Group:
    @click.group()
    def tool() -> None:
        """A tool.

        Example:

            tool fine
        """

    @tool.command()
    @click.option("--level", help="How much.")
    def fine(level: str) -> None:
        """Has help and an example.

        Example:

            tool fine --level 2
        """

    return tool


def test_a_command_without_help_or_an_example_or_an_option_without_help_is_refused():
    script = _script()
    tool = _group()
    assert script.problems(tool) == []
    assert "## perfbot fine" in script.render(tool)

    @tool.command("bare")
    @click.option("--quiet", is_flag=True)
    def bare(quiet: bool) -> None:
        pass

    @tool.command("no-example")
    def no_example() -> None:
        """Says what it does, and nothing about how to call it."""

    assert script.problems(tool) == [
        "perfbot bare: no help",
        "perfbot bare --quiet: no help",
        "perfbot no-example: no example (a line `Example:` in its help)",
    ]
    with pytest.raises(ValueError, match="perfbot bare: no help"):
        script.render(tool)


def test_the_script_writes_the_page_and_checks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    page = tmp_path / "cli.md"
    page.write_text((ROOT / "docs" / "cli.md").read_text().replace("--out-json", "--json", 1))
    stale = subprocess.run(
        [sys.executable, str(SCRIPT), str(page), "--check"], capture_output=True, text=True, timeout=120
    )
    assert stale.returncode == 1 and f"{page} is not current" in stale.stderr
    # The exit code is the process's, above; writing the page is main's work, run here.
    monkeypatch.setattr(sys, "path", list(sys.path))  # main puts the checkout first on it
    assert _script().main([str(page)]) == 0
    assert page.read_text() == (ROOT / "docs" / "cli.md").read_text()
