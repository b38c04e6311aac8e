"""`perfbot history bisect-steps` on a generated repository whose commits a generated store
measured: which steps it bisects, and what it refuses. Only `perfbot sample` (the GPU) is faked.
The bisects themselves (each failing step's command as printed, a culprit found or a range that
does not reproduce the step, a re-run over the job's folder, the outcomes where the issue job
reads them) run in the bisect job of test_workflows's
test_a_new_slowdown_on_main_is_bisected_and_gets_one_issue_per_step, on the same repositories."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.history import steps_file
from perfbot.jobs import bisect_outcome
from perfbot.records import results
from tests import step_repo
from tests.history_store import write_store

SLOWER_FROM = 24  # the commit that makes the fused kernel 3% slower; the store's step starts at its run


def _steps(tmp_path: Path, speeds: list[float]) -> tuple[Path, list[str], Path]:
    """The repository, its commits, and the steps file the check wrote for a store that measured them."""
    repo = tmp_path / "repo"
    shas = step_repo.repository(repo, speeds)
    runs = step_repo.measured(shas, 0.03, SLOWER_FROM)
    store = write_store(tmp_path / "store", runs)
    run_file = tmp_path / "h200.json"
    results.save(runs[-1], run_file)
    steps = tmp_path / "steps.json"
    checked = CliRunner().invoke(
        perfbot,
        ["history", "--store", str(store), "--check", "--out-steps", str(steps), "--runner", f"h200={run_file}"],
    )
    assert checked.exit_code == 1, checked.output
    return repo, shas, steps


@pytest.fixture(scope="module")
def as_fast(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """_steps of a repository whose commits are all as fast (the store's step is not in them),
    made once for the module (a second of CPU: its 40 commits, the store, the check): the
    repository, which the tests using it leave as it is, and the steps file. They are of one
    pytest-xdist group, so that one worker runs them and makes it once."""
    repo, _, steps = _steps(tmp_path_factory.mktemp("as-fast"), [1.0] * 40)
    return repo, steps


SHARING_AS_FAST = pytest.mark.xdist_group("step_bisect_as_fast")


def _as_fast(as_fast: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """The shared repository, and a copy of its steps file for this test to change at will."""
    repo, steps = as_fast
    mine = tmp_path / "steps.json"
    shutil.copy(steps, mine)
    return repo, mine


@pytest.fixture
def gpu(tmp_path: Path, monkeypatch) -> Path:
    """The fake GPU's perfbot first on PATH; its log."""
    step_repo.shim(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("PERFBOT_SHIM_LOG", str(tmp_path / "shim.log"))
    return tmp_path / "shim.log"


def bisect_steps(repo: Path, steps: Path, out: Path, runner: str = "h200", monkeypatch=None):
    here = os.getcwd()
    os.chdir(repo)  # the command's --repo is .
    try:
        return CliRunner().invoke(
            perfbot, ["history", "bisect-steps", "--steps", str(steps), "--runner", runner, "--out-dir", str(out)]
        )
    finally:
        os.chdir(here)


@SHARING_AS_FAST
def test_only_the_steps_given_to_this_runner_are_bisected(as_fast, tmp_path: Path, gpu: Path):
    repo, steps = _as_fast(as_fast, tmp_path)
    result = bisect_steps(repo, steps, tmp_path / "out", runner="a100")
    assert result.exit_code == 0 and result.output == "no new slowdown to bisect on runner a100\n"
    assert step_repo.calls(gpu) == [] and not (tmp_path / "out").exists()


@SHARING_AS_FAST
def test_an_earlier_outcome_never_stands_for_a_bisect_that_left_none(as_fast, tmp_path: Path, gpu: Path, monkeypatch):
    repo, steps = _as_fast(as_fast, tmp_path)
    records = steps_file.load(steps).steps
    (tmp_path / "out").mkdir()
    stale = bisect_outcome.OutcomeFile("culprit", "a" * 40, "b" * 40, "first bad commit", "c" * 40)
    bisect_outcome.save(tmp_path / "out" / f"{records[0].id}.json", stale)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "perfbot").write_text("#!/bin/sh\nexit 3\n")  # a bisect that dies before any outcome
    (broken / "perfbot").chmod(0o755)
    monkeypatch.setenv("PATH", f"{broken}:{os.environ['PATH']}")
    result = bisect_steps(repo, steps, tmp_path / "out")
    assert result.exit_code == 3, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"perfbot: error: 2 of 2 bisect(s) left no outcome: {records[0].id}, {records[1].id}"
    )
    assert not list((tmp_path / "out").glob("*.json"))


@SHARING_AS_FAST
def test_without_perfbot_on_path_it_says_so_in_one_line(as_fast, tmp_path: Path, monkeypatch):
    repo, steps = _as_fast(as_fast, tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    result = bisect_steps(repo, steps, tmp_path / "out")
    assert result.exit_code == 3 and "perfbot is not on PATH" in result.output


@SHARING_AS_FAST
def test_a_forged_steps_file_runs_nothing(as_fast, tmp_path: Path, gpu: Path):
    repo, steps = _as_fast(as_fast, tmp_path)
    text = steps.read_text().replace("perfbot sample --suite pr", "touch pwned; perfbot sample --suite pr")
    steps.write_text(text)
    result = bisect_steps(repo, steps, tmp_path / "out")
    assert result.exit_code == 2 and "is not the perfbot bisect command" in result.output
    assert step_repo.calls(gpu) == [] and not (repo / "pwned").exists()


def test_a_step_of_another_gpu_is_left_to_its_runner(tmp_path: Path, gpu: Path):
    repo = tmp_path / "repo"
    shas = step_repo.repository(repo, [1.0] * 40)
    runs = step_repo.measured(shas, 0.03, SLOWER_FROM)
    store = write_store(tmp_path / "store", runs)
    other = tmp_path / "a100.json"
    results.save(replace(runs[-1], environment=replace(runs[-1].environment, gpu_name="NVIDIA A100")), other)
    steps = tmp_path / "steps.json"
    CliRunner().invoke(
        perfbot, ["history", "--store", str(store), "--check", "--out-steps", str(steps), "--runner", f"a100={other}"]
    )
    assert {r.runner for r in steps_file.load(steps).steps} == {None}  # no runner measured the H200
    assert bisect_steps(repo, steps, tmp_path / "out", runner="a100").output.startswith("no new slowdown")


def test_a_step_that_fails_nothing_is_not_bisected(tmp_path: Path, gpu: Path):
    repo = tmp_path / "repo"
    shas = step_repo.repository(repo, [1.0] * 40)
    runs = step_repo.measured(shas, -0.03, SLOWER_FROM)  # faster: reported, fails nothing
    store = write_store(tmp_path / "store", runs)
    results.save(runs[-1], tmp_path / "h200.json")
    steps = tmp_path / "steps.json"
    args = ["history", "--store", str(store), "--check", "--out-steps", str(steps)]
    assert CliRunner().invoke(perfbot, [*args, "--runner", f"h200={tmp_path / 'h200.json'}"]).exit_code == 0
    records = steps_file.load(steps).steps
    assert records and all(r.bisect and r.runner == "h200" and not r.fails for r in records)
    result = bisect_steps(repo, steps, tmp_path / "out")
    assert result.output == "no new slowdown to bisect on runner h200\n" and step_repo.calls(gpu) == []
