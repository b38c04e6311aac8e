"""One CLI vocabulary (CONTRIBUTING.md, "Naming options"): an option several commands take is
declared once, in perfbot/commands/options.py; a renamed option still takes its old spelling for
one release, with a warning that names the new one; and every call of perfbot that this
repository ships (workflows, scripts, docs, code) uses the current names."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.commands.options import Option
from tests.conftest import ROOT
from tests.helpers import commands, parsed


def options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]


def long_name(option: click.Option) -> str:
    return next(o for o in option.opts if o.startswith("--"))


# The names that more than one declaration carries, how many, and why: a name's meaning that
# depends on its command. Every other option that two commands take is declared once.
DECLARATIONS = {
    "--family": (2, "the families of many benchmarks (run, ab, check, explain) / of one (sample, selftest, bisect)"),
    "--suite": (2, "the suites of many benchmarks / the suite of one"),
    "--case": (2, "the cases of many benchmarks / the case of one"),
    "--mode": (2, "the modes of many benchmarks / the mode of one"),
    "--variant": (2, "many benchmarks' values (NAME=all) / one benchmark's"),
    "--samples": (2, "per benchmark of a run, 30 / per measurement of one benchmark, 20"),
    "--kernel": (3, "many benchmarks' implementations / one benchmark's / init's MODULE:FUNCTION to set up"),
    "--project": (2, "the project a command reads / init's repository, which has no [tool.perfbot] yet"),
    "--store": (2, "the store a command keeps or reads / compare's, compared with instead of BASELINE"),
    "--repo": (2, "bisect's git checkout / a GitHub repository, OWNER/NAME"),
    "--sha": (2, "the commit comment's report measured / the head verify-head requires"),
    "--state": (2, "bisect's resume file / the steps history --check reported"),
    "--runner": (2, "history's LABEL=RESULTS per GPU / bisect-steps' own label"),
    "--gpu-model": (2, "explain's compile target, a GPU perfbot knows / baseline show's filter, any name"),
    "--triton-commit": (2, "init's pin, default the installed Triton's / triton build's, default the pin"),
    "--out": (4, "the one file each of run, export, selftest and explain writes"),
    "--out-json": (2, "compare's comparison / bisect's outcome"),
    "--out-markdown": (2, "compare's PR comment / bisect's table"),
    "--out-dir": (2, "ab's four files / bisect-steps' files per step"),
}


def _declaration(path: tuple[str, ...], option: click.Option) -> tuple[str, ...]:
    """What declared the option: a group of options.py (with its help, so that a second
    declaration under the same group and name is still two), else the command itself."""
    shared = option.shared if isinstance(option, Option) else None
    return ("shared", shared, option.help or "") if shared else ("own", *path)


def test_an_option_several_commands_take_is_declared_once():
    declared: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for path, command in commands():
        for option in options(command):
            by = declared.setdefault(long_name(option), {})
            by.setdefault(_declaration(path, option), []).append(" ".join(path))
    several = {name: by for name, by in declared.items() if sum(map(len, by.values())) > 1}
    assert len(several) > 25  # the benchmark, timing, Triton, store, GitHub and output options
    counts = {name: len(by) for name, by in several.items()}
    expected = {name: count for name, (count, _) in DECLARATIONS.items()}
    wrong = {name: (counts.get(name, 0), expected.get(name, 1)) for name in {*counts, *expected}}
    wrong = {name: pair for name, pair in wrong.items() if pair[0] != pair[1]}
    assert not wrong, "(declarations, expected) of each name: " + "; ".join(
        f"{name} {pair}: {[', '.join(users) for users in several.get(name, {}).values()]}"
        for name, pair in sorted(wrong.items())
    )


def test_a_second_declaration_by_hand_is_caught(monkeypatch):
    """The test above fails for a command that writes out a shared option again."""

    @click.command("extra")
    @click.option("--seed", type=int, default=0, help="Seed of the random inputs.")
    def extra(seed: int) -> None:
        """A command with the seed written out by hand.

        Example:

            perfbot extra --seed 1
        """

    monkeypatch.setitem(perfbot.commands, "extra", extra)
    with pytest.raises(AssertionError, match=r"--seed \(2, 1\)"):
        test_an_option_several_commands_take_is_declared_once()


def test_a_shared_option_reads_the_same_on_every_command():
    seen: dict[tuple[str, str], dict[str, object]] = {}
    for path, command in commands():
        for option in options(command):
            if isinstance(option, Option) and option.shared:
                shape = {**option.to_info_dict(), "metavar": option.metavar}  # help, type, default, ...
                first = seen.setdefault((option.shared, long_name(option)), shape)
                assert first == shape, (path, long_name(option))


# Every rename, old → new, on each command that had the old name: each still works for one release.
RENAMED = {
    ("compare", "--markdown"): "--out-markdown",
    ("compare", "--json"): "--out-json",
    ("explain", "--json"): "--out",
    ("explain", "--gpu"): "--gpu-model",
    ("baseline", "show", "--gpu"): "--gpu-model",
    ("bisect", "--report"): "--out-markdown",
    ("bisect", "--outcome"): "--out-json",
    ("bisect", "--cache"): "--triton-cache",
    ("history", "--steps-json"): "--out-steps",
    ("history", "bisect-steps", "--out"): "--out-dir",
    ("check", "--kernels"): "--package",
    ("run", "--kernels"): "--package",
    ("sample", "--kernels"): "--package",
    ("triton", "build", "--commit"): "--triton-commit",
    ("triton", "build", "--source"): "--triton-source",
    ("triton", "build", "--cache"): "--triton-cache",
}
# What each command needs besides the option to parse, and a value the option takes.
REQUIRED = {
    ("explain",): ["HEAD"],
    ("bisect",): ["--repo", ".", "--good", "a", "--bad", "b"],
    ("history", "bisect-steps"): ["--steps", "steps.json", "--runner", "h200"],
}
VALUES = {"--gpu-model": "NVIDIA H200", "--triton-commit": "7c56a5e4"}


def test_every_old_spelling_is_listed_with_its_new_name():
    found = {
        (*path, old): long_name(option)
        for path, command in commands()
        for option in options(command)
        if isinstance(option, Option)
        for old in option.old
    }
    assert found == RENAMED


def test_an_old_spelling_names_nothing_else_on_its_command():
    for path, command in commands():
        names = [name for option in options(command) for name in (*option.opts, *option.secondary_opts)]
        old = [spelling for option in options(command) if isinstance(option, Option) for spelling in option.old]
        assert len(set(old)) == len(old) and not set(old) & set(names), path


@pytest.mark.parametrize("renamed", sorted(RENAMED), ids=" ".join)
def test_an_old_spelling_works_as_the_new_with_a_warning_naming_it(renamed: tuple[str, ...], capsys):
    *path, old = renamed
    new = RENAMED[renamed]
    value = VALUES.get(new, "x")
    given = [*REQUIRED.get(tuple(path), [])]
    with parsed(tuple(path), [*given, new, value]) as context:
        as_new = dict(context.params)
    assert capsys.readouterr().err == ""
    with parsed(tuple(path), [*given, old, value]) as context:
        as_old = dict(context.params)
    assert capsys.readouterr().err == f"perfbot: warning: {old} is deprecated; use {new}\n"
    assert as_old == as_new and value in map(str, as_new.values())


def test_the_history_sites_contract_spelling_builds_it_without_a_warning(tmp_path: Path):
    """`perfbot history --store DIR --html OUT_DIR` is what other tooling calls (the design's contract)."""
    from tests.history_store import make_runs, write_store

    store = write_store(tmp_path / "store", make_runs(8, seed=3))
    done = CliRunner().invoke(perfbot, ["history", "--store", str(store), "--html", str(tmp_path / "site")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "site" / "index.html").is_file()
    assert "deprecated" not in done.stderr  # a contract, not an old spelling: no warning


def test_a_repeated_option_takes_its_old_spelling_too(tmp_path: Path, capsys):
    """Both spellings of one option: the new one's value stands, and the old one is still warned of."""
    with parsed(("compare",), ["--out-json", "new.json", "--json", "old.json"]) as context:
        assert context.params["json_path"] == Path("new.json")
    assert capsys.readouterr().err == "perfbot: warning: --json is deprecated; use --out-json\n"


# --- every call of perfbot the repository ships uses the current names ------------------------

SHIPPED = [
    *sorted(ROOT.glob(".github/**/*.yml")),
    *sorted(ROOT.glob(".github/perfbot/*.sh")),
    *sorted(ROOT.glob("examples/*/.github/**/*.yml")),
    *sorted(ROOT.glob("scripts/*.sh")),
    *sorted(ROOT.glob("perfbot/**/*.py")),
    *sorted(ROOT.glob("perfbot/**/*.j2")),
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "SECURITY.md",
    # docs/kernel.md and docs/method.md quote the commands of dated experiments as they ran
    # (`selftest --rounds`, now --checks): evidence, not instructions. docs/cli.md is the code's
    # help, checked in the code (where click has not wrapped it).
    *sorted(p for p in ROOT.glob("docs/*.md") if p.name not in ("kernel.md", "method.md", "cli.md")),
]
CALL = re.compile(r"(?<![\w.-])perfbot\"?((?:[ \t]+[a-z][a-z-]*)+)")
# Where a call's words end: a shell separator, a comment, the end of a code span or line, or a
# call of perfbot within it (the measure command of a bisect).
CALL_END = re.compile(r"[|;`#>)\n]|&&|(?<![\w.-])perfbot[ \t]")
QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")


def calls(text: str) -> Iterator[tuple[tuple[str, ...], set[str]]]:
    """Each call of a perfbot command in `text` (a line continued by a backslash is one), with the
    options it gives: a quoted word is a value, not an option (`--measure "./bench --ms"`)."""
    text = re.sub(r"\\\n\s*", " ", text)
    known = dict(commands())
    for match in CALL.finditer(text):
        path: tuple[str, ...] = ()
        for word in match.group(1).split():
            if (*path, word) not in known:
                break
            path = (*path, word)
        if not path:
            continue
        rest = text[match.end(0) - len(match.group(1)) :]
        end = CALL_END.search(rest)
        words = QUOTED.sub(" ", rest[: end.start() if end else None])
        yield path, set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", words))


@pytest.mark.parametrize("page", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_call_of_perfbot_uses_the_current_names(page: Path):
    known = dict(commands())
    stale = []
    for path, given in calls(page.read_text()):
        names = {"--help", *(n for o in options(known[path]) for n in (*o.opts, *o.secondary_opts))}
        stale += [f"perfbot {' '.join(path)} {name}" for name in sorted(given - names)]
    assert not stale, f"{page.relative_to(ROOT)}: {stale}"


def test_the_call_finder_reads_continued_lines_and_leaves_quoted_words():
    text = 'perfbot bisect --repo . \\\n  --cache c --measure "./bench --ms"  # --nothing\nperfbot sample --kernels k'
    assert list(calls(text)) == [(("bisect",), {"--repo", "--cache", "--measure"}), (("sample",), {"--kernels"})]
    assert list(calls("`perfbot history bisect-steps --out d`, perfbot's --no-build-isolation")) == [
        (("history", "bisect-steps"), {"--out"})
    ]
