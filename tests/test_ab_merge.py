"""`perfbot ab BASE HEAD --merge`: the head merged into the base's tip, measured against the tip.

The trick it closes (docs/github.md): main gains a speedup O after commit A; a branch from A
cherry-picks O and adds a regression R. Against A (the merge-base) the branch shows O+R, an
improvement; merged into main's tip and measured against it, it shows R, and only R (main's
later speedup P, which the branch lacks, is on both sides). Generated git repositories, the
kernels run for real; only the GPU is faked, its timings set by the code each capture runs (the
constants the measured geglu.py defines)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.deciding import comparison
from perfbot.errors import BadInput
from perfbot.jobs import ab_sides
from perfbot.output.verdicts import comment_markdown
from perfbot.records import results
from perfbot.records.run import Merge
from tests.test_runner_cpu import _git, init_repo

SPEEDUP = "\n\nFASTER_TILES = True  # the speedup O\n"
LATER_SPEEDUP = "FEWER_STORES = True  # the speedup P\n\n\n"
REGRESSION = "EXTRA_PASS = True  # the regression R\n\n\n"
# Commits of the generated repositories get fixed dates: a merge is dated as its head is.
DATE = "2026-12-01T10:00:00+00:00"


def _commit(repo: Path, message: str, date: str = DATE) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message],
        check=True,
        env=env,
    )
    return _git(repo, "rev-parse", "HEAD")


def _edit(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def _speed_up(repo: Path) -> None:
    _edit(repo / "kernels" / "geglu.py", lambda text: text + SPEEDUP)


def _insert_before(repo: Path, line: str, text: str) -> None:
    # Far apart in geglu.py, so that O (on both branches), P and R merge cleanly.
    _edit(repo / "kernels" / "geglu.py", lambda old: old.replace(f"\n{line}", f"\n{text}{line}", 1))


@pytest.fixture
def trick(project: Path) -> Path:
    """main: A, then O, then P; branch `pr` from A: O cherry-picked, then R. The checkout is at
    main, as the PR check's is at the base's tip."""
    init_repo(project)
    _git(project, "branch", "-M", "main")
    _git(project, "branch", "pr")
    _speed_up(project)
    _commit(project, "O: a speedup")
    _insert_before(project, "def launch_plan(", LATER_SPEEDUP)
    _commit(project, "P: another speedup")
    _git(project, "checkout", "-q", "pr")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "cherry-pick", "main~1")
    _insert_before(project, "def geglu(", REGRESSION)
    _commit(project, "R: a regression", "2026-12-02T10:00:00+00:00")
    _git(project, "checkout", "-q", "main")
    return project


def _timed_by_code(gpu) -> None:
    """fused takes 1 ms, 10% less where the kernels it ran define O's constant, 5% less where
    they define P's, 3% more where they define R's: the timing follows the code, whichever side
    it is on."""
    factors = {"FASTER_TILES": 0.9, "FEWER_STORES": 0.95, "EXTRA_PASS": 1.03}

    def speed(name, previous, captured):
        if not name.endswith(":fused"):
            return 1.0
        package = gpu.modules[captured[name].graph].rpartition(".")[0]
        kernel = sys.modules[f"{package}.geglu"]
        return math.prod(factor for constant, factor in factors.items() if getattr(kernel, constant, False))

    gpu.context = speed


@pytest.fixture
def out(tmp_path_factory) -> Path:
    """The A/B's --out-dir, outside the repository (whose checkout must stay clean)."""
    return tmp_path_factory.mktemp("out") / "ab"


def _ab(repo: Path, out: Path, *revs: str):
    return CliRunner().invoke(
        perfbot, ["ab", *revs, "--project", str(repo), "--suite", "tiny", "--samples", "12", "--out-dir", str(out)]
    )


def _fused(out: Path) -> list[dict]:
    rows = json.loads((out / "comparison.json").read_text())["comparisons"]
    return [row for row in rows if row["benchmark"]["kernel"] == "fused"]


def test_merged_into_the_tip_the_cherry_picked_speedup_hides_no_regression(gpu, trick: Path, out: Path):
    _timed_by_code(gpu)
    result = _ab(trick, out, "HEAD", "pr", "--merge")  # HEAD: the base's tip, as in the PR check
    assert result.exit_code == 1, result.output
    fused = _fused(out)
    assert len(fused) == 2 and all(row["fails"] and row["verdict"] == "regression" for row in fused), fused
    # R alone: O and P on both sides (against the tip unmerged, the head would lack P: 8%).
    assert all(2 < row["change_percent"] < 4 for row in fused), fused


def test_against_the_merge_base_the_same_branch_shows_an_improvement(gpu, trick: Path, out: Path):
    # The control: the check as it was, the head against the merge-base, passes R as part of O+R.
    _timed_by_code(gpu)
    result = _ab(trick, out, _git(trick, "merge-base", "main", "pr"), "pr")
    assert result.exit_code == 0, result.output
    fused = _fused(out)
    assert len(fused) == 2 and all(row["verdict"] == "improvement" for row in fused), fused


def test_the_measured_commits_are_recorded_in_both_sides_and_the_comment(gpu, trick: Path, out: Path):
    # Also a later run over the out dir of a refused one, which takes its error file for an output
    # (one A/B checked both ways).
    _conflicting(trick, ["NOTES"])
    _refused(_ab(trick, out, "main", "clash", "--merge"))
    _refused(_ab(trick, out, "main", "pr", "--merge"), "error.txt: already exists", "--overwrite")
    result = _ab(trick, out, "main", "pr", "--merge", "--overwrite")
    assert result.exit_code == 0, result.output
    assert not (out / "error.txt").exists()  # the earlier run's reason does not outlive it
    main, pr = _git(trick, "rev-parse", "main"), _git(trick, "rev-parse", "pr")
    head = results.load(out / "head.json")
    merge = head.settings.merge
    assert merge is not None and (merge.base, merge.head) == (main, pr) and merge.commit is not None
    # The merge commit: the head merged into the tip (its first parent), and what the head side ran.
    assert _git(trick, "log", "-1", "--format=%P", merge.commit).split() == [main, pr]
    assert head.environment.kernels_commit == merge.commit and head.settings.head == pr
    base = results.load(out / "base.json")
    assert base.settings.merge == merge and base.environment.kernels_commit == main == base.settings.against
    line = f"Measured: `{pr[:12]}` merged into `{main[:12]}` (merge `{merge.commit[:12]}`), against `{main[:12]}`."
    assert line in (out / "comment.md").read_text().splitlines()
    # The comment job renders the comparison file alone: the line must survive it.
    assert line in comment_markdown(comparison.load(out / "comparison.json")).splitlines()
    assert line.replace("`", "").rstrip(".") in " ".join(result.output.split())  # the terminal table's caption
    assert _git(trick, "status", "--porcelain") == "" and _git(trick, "rev-parse", "HEAD") == main
    assert _git(trick, "worktree", "list").count("\n") == 0  # both worktrees are gone


def _branch_from_main(repo: Path, name: str) -> str:
    _git(repo, "checkout", "-q", "-b", name, "main")
    (repo / "kernels" / "NOTES").write_text(f"{name}\n")
    _git(repo, "add", "-A")
    sha = _commit(repo, name)
    _git(repo, "checkout", "-q", "main")
    return sha


def test_a_head_that_contains_the_tip_is_measured_as_it_is(gpu, trick: Path, out: Path):
    ahead = _branch_from_main(trick, "ahead")
    result = _ab(trick, out, "main", "ahead", "--merge")
    assert result.exit_code == 0, result.output
    main = _git(trick, "rev-parse", "main")
    head = results.load(out / "head.json")
    assert head.settings.merge == Merge(base=main, head=ahead, commit=None)
    assert head.environment.kernels_commit == ahead  # no merge commit made
    fast_forward = "(a fast-forward: measured as it is)"
    line = f"Measured: `{ahead[:12]}`, which contains `{main[:12]}` {fast_forward}, against `{main[:12]}`."
    assert line in (out / "comment.md").read_text().splitlines()


def _conflicting(repo: Path, files: list[str]) -> None:
    """`files` (under kernels/) changed one way on main and another way on branch `clash`."""
    _git(repo, "checkout", "-q", "-b", "clash", "main~2")
    for name in files:
        (repo / "kernels" / name).write_text("the branch's\n")
    _git(repo, "add", "-A")
    _commit(repo, "clash")
    _git(repo, "checkout", "-q", "main")
    for name in files:
        (repo / "kernels" / name).write_text("main's\n")
    _git(repo, "add", "-A")
    _commit(repo, "main's")


def _refused(result, *parts: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfbot: error: "), result.output
    assert all(part in lines[0] for part in parts), lines[0]
    return lines[0].removeprefix("perfbot: error: ")


def test_a_head_that_does_not_merge_is_refused_naming_the_conflicts(gpu, trick: Path, out: Path):
    _conflicting(trick, ["NOTES"])
    main, clash = _git(trick, "rev-parse", "main"), _git(trick, "rev-parse", "clash")
    said = _refused(
        _ab(trick, out, "main", "clash", "--merge"),
        f"the head {clash[:12]} does not merge into the base's tip {main[:12]}: conflicts in kernels/NOTES; ",
        "rebase the head on the base, or merge the base into it",
    )
    assert "more" not in said
    # Where its report would be, the PR check's comment finds why there is none.
    assert sorted(p.name for p in out.iterdir()) == ["error.txt"] and (out / "error.txt").read_text() == said + "\n"
    assert _git(trick, "status", "--porcelain") == "" and _git(trick, "rev-parse", "HEAD") == main
    assert _git(trick, "worktree", "list").count("\n") == 0


@pytest.mark.parametrize(
    ("files", "named"),
    [("abc", "kernels/a, kernels/b, kernels/c; "), ("abcde", "kernels/a, kernels/b, kernels/c and 2 more; ")],
)
def test_a_refusal_names_a_few_conflicts_and_counts_the_rest(gpu, trick: Path, out: Path, files: str, named: str):
    _conflicting(trick, list(files))
    _refused(_ab(trick, out, "main", "clash", "--merge"), f"conflicts in {named}rebase")


def test_merge_needs_the_heads_commit(gpu, trick: Path, out: Path):
    _refused(_ab(trick, out, "main", "--merge"), "--merge needs HEAD", "uncommitted changes")


def test_a_head_already_in_the_base_is_refused(gpu, trick: Path, out: Path):
    _refused(_ab(trick, out, "main", "main~1", "--merge"), "already in the history of the base's tip")


def test_a_head_of_another_history_is_refused(gpu, trick: Path, out: Path):
    _git(trick, "checkout", "-q", "--orphan", "elsewhere")
    _commit(trick, "another history")
    _git(trick, "checkout", "-q", "main")
    _refused(_ab(trick, out, "main", "elsewhere", "--merge"), "shares no history with the base's tip")


def _merge_of(repo: Path, base: str, head: str) -> Merge:
    with ab_sides.merged(repo, _git(repo, "rev-parse", base), head) as (tree, merge):
        assert _git(tree, "rev-parse", "HEAD") == merge.commit
        return merge


def test_the_merge_runs_no_hook_and_needs_no_identity_or_signature(trick: Path, tmp_path_factory, monkeypatch):
    hooks = trick / ".git" / "hooks"
    ran = tmp_path_factory.mktemp("hooks") / "ran"  # outside the checkout
    for hook in ("post-checkout", "pre-merge-commit", "commit-msg", "post-merge"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {ran}\nexit 1\n")
        (hooks / hook).chmod(0o755)
    # No identity anywhere (git may not guess one), signing that cannot work, and settings that
    # would refuse a merge commit, refuse the unsigned head, or add its log to the message.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key, value in {
        "user.useConfigOnly": "true",
        "commit.gpgSign": "true",
        "gpg.program": "false",
        "merge.ff": "only",
        "merge.verifySignatures": "true",
        "merge.log": "true",
    }.items():
        _git(trick, "config", key, value)
    merge = _merge_of(trick, "main", "pr")
    assert merge.commit is not None and not ran.exists()
    pr = _git(trick, "rev-parse", "pr")
    assert _git(trick, "log", "-1", "--format=%B", merge.commit) == f"Merge commit '{pr}' into HEAD"
    author = _git(trick, "log", "-1", "--format=%an <%ae> %aI %cI", merge.commit)
    assert author == "perfbot <perfbot@localhost> 2026-12-02T10:00:00+00:00 2026-12-02T10:00:00+00:00"
    assert _merge_of(trick, "main", "pr") == merge  # the same two commits, the same merge


def test_a_remembered_resolution_does_not_hide_a_conflict(trick: Path):
    # With rerere, git resolves a conflict it saw resolved before, and stops short of committing.
    _conflicting(trick, ["NOTES"])
    _git(trick, "config", "rerere.enabled", "true")
    _git(trick, "config", "rerere.autoUpdate", "true")
    _git(trick, "checkout", "-q", "--detach", "main")
    assert _fails(trick, "merge", "--no-edit", "clash")
    (trick / "kernels" / "NOTES").write_text("resolved\n")
    _git(trick, "add", "-A")
    _git(trick, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--no-edit")  # rerere records it
    _git(trick, "checkout", "-q", "main")
    with pytest.raises(BadInput, match="conflicts in kernels/NOTES"):
        _merge_of(trick, "main", "clash")


def _fails(repo: Path, *args: str) -> bool:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    return done.returncode != 0


def test_old_files_without_a_merge_load_and_a_malformed_one_is_refused(tmp_path: Path):
    from tests.helpers import make_results

    data = make_results().to_json()
    data["settings"].pop("merge")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert results.load(path).settings.merge is None
    data["settings"]["merge"] = {"base": "a" * 40, "head": "b" * 40, "commit": "`not a commit`"}
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=r"settings\.merge\.commit"):
        results.load(path)
