"""The base's subject decides what an A/B judges (perfbot/loading/declarations.py): a head cannot take its
kernel out of the check by what it declares. Each attack makes the head's `fused` 20% slower (or
wrong) and declares its way out; each must fail the check, naming the implementation. With the
head's declarations in force instead, the base's results still judge (deciding/compare.py: the
baseline's `under_test` says what may fail and what is missing), as `perfbot compare` of the two
results files would."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.loading import declarations
from tests.test_runner_cpu import ONE_CASE, TINY, _ab, _git, init_repo


def _head(project: Path, edit: Callable[[str], str], suites: str = TINY) -> Path:
    """The project as a base commit and a head commit that edits kernels/subject.py."""
    init_repo(project)
    subject = project / "kernels" / "subject.py"
    edited = edit(subject.read_text())
    assert edited != subject.read_text()
    subject.write_text(edited)
    (project / "kernels" / "suites.yaml").write_text(suites)
    _git(project, "commit", "-qam", "head")
    return project


def _slower_head_fused(gpu) -> None:
    gpu.ms = lambda name, call: 1.2 if name.startswith("head:fused") else 1.0


def _head_declares_itself(monkeypatch) -> None:
    """The head's own declarations, as before the base's subject decided (its results then name
    the head's own implementations)."""
    monkeypatch.setattr(declarations, "judged_by_base", lambda base, head: (head, {}))


def _outcome(out: Path) -> tuple[dict, str]:
    return json.loads((out / "comparison.json").read_text()), (out / "comment.md").read_text()


def _moves_under_test(text: str) -> str:
    text = text.replace('"fused", under_test=True, config=launch_plan', '"fused", config=launch_plan')
    return text.replace('@subject.implementation("eager")', '@subject.implementation("eager", under_test=True)')


def _renames(text: str) -> str:
    return text.replace('@subject.implementation("fused", ', '@subject.implementation("fused2", ')


def _wrong_with_its_own_reference(text: str) -> str:
    # The head's fused is off by one everywhere, and brings a reference that is off by one too.
    text = text.replace(
        "    return geglu(x, weight, approximate=approximate)\n",
        "    return geglu(x, weight, approximate=approximate) + 1\n",
        1,
    )
    return text.replace(
        '"fused", under_test=True, config=launch_plan',
        '"fused", under_test=True, config=launch_plan, '
        'reference=lambda x, w, approximate="none": geglu_float64(x, w, approximate=approximate) + 1',
    )


def test_a_head_that_no_longer_marks_its_kernel_under_test_fails(gpu, project: Path, tmp_path: Path):
    repo = _head(project, _moves_under_test)
    _slower_head_fused(gpu)
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output
    summary, comment = _outcome(tmp_path / "ab")
    missing = {(m["benchmark"]["kernel"], m["benchmark"]["case"]) for m in summary["missing"]}
    assert missing == {("fused", "odd"), ("fused", "square")}
    assert all("the base marks it under test; the head no longer does" in m["reason"] for m in summary["missing"])
    assert "Missing on the head" in comment and summary["headline"].startswith("❌ 2 benchmark(s) the base judges")
    assert "The subject's declarations differ between the two sides" in comment
    assert "implementation fused under_test: True on the base, False on the head" in summary["declaration_changes"]
    assert "implementation eager under_test: False on the base, True on the head" in summary["declaration_changes"]
    # eager stays a baseline: the base says so.
    eager = [row for row in summary["comparisons"] if row["benchmark"]["kernel"] == "eager"]
    assert eager and not any(row["fails"] for row in eager)


def test_under_the_heads_declarations_the_bases_results_still_judge_the_moved_mark(
    gpu, project: Path, tmp_path: Path, monkeypatch
):
    repo = _head(project, _moves_under_test)
    _slower_head_fused(gpu)
    _head_declares_itself(monkeypatch)
    result = _ab(repo, tmp_path / "ab", *ONE_CASE)  # every case's rows are judged alike
    assert result.exit_code == 1, result.output
    summary, _ = _outcome(tmp_path / "ab")
    failing = {row["benchmark"]["kernel"] for row in summary["comparisons"] if row["fails"]}
    assert failing == {"fused"} and not summary["missing"]


def test_a_head_that_renames_its_kernel_fails_and_it_is_not_merely_removed(gpu, project: Path, tmp_path: Path):
    repo = _head(project, _renames, TINY.replace("[fused, ", "[fused2, "))
    _slower_head_fused(gpu)
    result = _ab(repo, tmp_path / "ab", *ONE_CASE)  # every case's rows are judged alike
    assert result.exit_code == 1, result.output
    summary, comment = _outcome(tmp_path / "ab")
    assert {m["benchmark"]["kernel"] for m in summary["missing"]} == {"fused"}
    assert all("the head has no implementation of that name" in m["reason"] for m in summary["missing"])
    assert summary["fails"] is True  # what the comment job and its headline per GPU read
    assert not [b for b in summary["removed"] if b["kernel"] == "fused"]
    changes = "\n".join(summary["declaration_changes"])
    assert "implementation fused: only on the base" in changes and "implementation fused2: only on the head" in changes
    assert "suite tiny implementations: fused, eager, gemm, copy on the base, fused2, eager, gemm, copy" in changes
    assert "Missing on the head" in comment
    # The head's renamed kernel is not timed: the base's suites do not name it.
    assert not [row for row in summary["comparisons"] if row["benchmark"]["kernel"] == "fused2"]


def test_under_the_heads_declarations_the_bases_results_still_fail_the_rename(
    gpu, project: Path, tmp_path: Path, monkeypatch
):
    repo = _head(project, _renames, TINY.replace("[fused, ", "[fused2, "))
    _slower_head_fused(gpu)
    _head_declares_itself(monkeypatch)
    result = _ab(repo, tmp_path / "ab", *ONE_CASE)  # every case's rows are judged alike
    assert result.exit_code == 1, result.output
    summary, _ = _outcome(tmp_path / "ab")
    assert {m["benchmark"]["kernel"] for m in summary["missing"]} == {"fused"}
    assert all("under test in the baseline's results" in m["reason"] for m in summary["missing"])
    assert "fused" not in {b["kernel"] for b in summary["removed"]}


def test_a_wrong_kernel_with_a_reference_of_its_own_is_a_wrong_result(gpu, project: Path, tmp_path: Path):
    repo = _head(project, _wrong_with_its_own_reference)
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output
    summary, comment = _outcome(tmp_path / "ab")
    wrong = {(f["benchmark"]["kernel"], f["benchmark"]["case"]) for f in summary["failures"]}
    assert wrong == {("fused", "odd"), ("fused", "square")}
    assert all(f["reason"] == "wrong result" for f in summary["failures"])
    assert "implementation fused reference: none on the base, <lambda>" in "\n".join(summary["declaration_changes"])
    assert "Wrong results" in comment


def test_control_under_the_heads_declarations_the_wrong_kernel_passes(gpu, project: Path, tmp_path: Path, monkeypatch):
    repo = _head(project, _wrong_with_its_own_reference)
    _head_declares_itself(monkeypatch)
    result = _ab(repo, tmp_path / "ab", *ONE_CASE)  # every case's rows are judged alike
    assert result.exit_code == 0, result.output
    assert not _outcome(tmp_path / "ab")[0]["failures"]


@pytest.mark.parametrize("checkout", ["base", "head"])
def test_the_base_s_suites_decide_from_either_checkout(gpu, project: Path, tmp_path: Path, checkout: str):
    # The head drops the case `odd` from its suite; the base's suite still times it, wherever
    # the check is run from (the PR check runs in the base's checkout, a user in the head's).
    repo = _head(project, lambda text: text + "\n", TINY.replace("    - {name: odd, M: 33, K: 40, N: 24}\n", ""))
    base, head = _git(repo, "rev-parse", "HEAD~1"), _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", base if checkout == "base" else head)
    out = tmp_path / "ab"
    arguments = ["ab", base, head, "--project", str(repo), "--suite", "tiny", "--samples", "12", "--out-dir", str(out)]
    result = CliRunner().invoke(perfbot, arguments)
    assert result.exit_code == 0, result.output
    summary, comment = _outcome(out)
    assert {row["benchmark"]["case"] for row in summary["comparisons"]} == {"odd", "square"}
    assert "suite tiny: case odd only on the base, or changed" in summary["declaration_changes"]
    assert "The subject's declarations differ" in comment


def test_a_dry_run_shows_what_the_head_is_missing_and_what_it_declares_differently(project: Path):
    # No fake GPU: a dry run measures nothing.
    repo = _head(project, _renames, TINY.replace("[fused, ", "[fused2, "))
    result = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--dry-run"])
    assert result.exit_code == 0, result.output
    missing = "missing on the head, would fail the check: fused on tiny/{}: not timed: the base declares it"
    assert missing.format("odd") in result.output and missing.format("square") in result.output
    assert "declarations differ: implementation fused2: only on the head" in result.output
    assert "benchmarks per side: base 8, head 6" in result.output


@pytest.mark.parametrize(("chosen", "missing"), [(["--kernel", "fused"], True), (["--skip-kernel", "fused"], False)])
def test_a_dry_run_plans_the_head_as_the_run_does(project: Path, chosen: list[str], missing: bool):
    # The head lacks fused: the run leaves it out of the head's side (and fails on it unless it is
    # skipped); the dry run must say the same, not refuse an unknown implementation.
    repo = _head(project, _renames, TINY.replace("[fused, ", "[fused2, "))
    dry = ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--dry-run", *chosen]
    result = CliRunner().invoke(perfbot, dry)
    assert result.exit_code == 0, result.output
    assert ("missing on the head, would fail the check: fused on" in result.output) is missing


def test_a_head_that_declares_fewer_variants_is_timed_on_the_base_s(gpu, project: Path, tmp_path: Path):
    # The head says fused takes no variant; the base's fused takes `approximate`, so the head's
    # fused[approximate=tanh] is timed, and its slowdown fails the check.
    def fewer_variants(text: str) -> str:
        return text.replace(
            '"fused", under_test=True, config=launch_plan', '"fused", under_test=True, variants=(), config=launch_plan'
        )

    repo = _head(project, fewer_variants)
    gpu.ms = lambda name, call: 1.2 if name == "head:fused[approximate=tanh]" else 1.0
    result = _ab(repo, tmp_path / "ab", "--variant", "approximate=all", *ONE_CASE)  # every case's rows alike
    assert result.exit_code == 1, result.output
    summary, _ = _outcome(tmp_path / "ab")
    failing = {
        (r["benchmark"]["kernel"], tuple(r["benchmark"]["variant"].items()))
        for r in summary["comparisons"]
        if r["fails"]
    }
    assert failing == {("fused", (("approximate", "tanh"),))}
    assert "implementation fused variants: None on the base, () on the head" in summary["declaration_changes"]
