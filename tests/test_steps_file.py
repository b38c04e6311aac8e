"""`perfbot history --check --out-steps`: the steps the check reports, as records the bisect and
issue jobs read strictly; each says what the check printed for it, and nothing else."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.history import steps, steps_file
from perfbot.records import results
from tests.history_store import commit, make_runs, scaled, write_store

RUNS, AT = 40, 24


def check(directory: Path, out: Path, *extra: str):
    result = CliRunner().invoke(
        perfbot, ["history", "--store", str(directory), "--check", "--out-steps", str(out), *extra]
    )
    if out.exists():  # a record has a command exactly where the check printed one, and it is that one
        for record in steps_file.load(out).steps:
            printed = [line for line in record.evidence if line.startswith("  find the commit: ")]
            assert printed == ([f"  find the commit: {shlex.join(record.bisect)}"] if record.bisect else [])
    return result


def _run_file(path: Path, gpu: str = "NVIDIA H200") -> Path:
    run = make_runs(1, seed=99)[0]
    results.save(replace(run, environment=replace(run.environment, gpu_name=gpu)), path)
    return path


def test_each_record_is_what_the_check_printed_for_its_step(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    result = check(directory, tmp_path / "steps.json", "--runner", f"h200={_run_file(tmp_path / 'h200.json')}")
    assert result.exit_code == 1, result.output
    records = steps_file.load(tmp_path / "steps.json").steps
    printed = result.output.splitlines()
    assert len(records) == 2 and printed[-1].startswith("perfbot history: 2 new step(s), 2 of them")
    assert [line for r in records for line in r.evidence] == printed[:-1]  # the lines, in the order printed
    for r in records:
        head = r.evidence[0]
        assert head.startswith(f"{r.gpu} · {r.label}: {r.watched} {r.change_percent:+.2f}%")
        assert f"from run {r.after.run} (stored {r.after.stored})" in head
        assert r.after.run == r.before.run + 1 and r.good.run < r.after.run <= r.bad.run
        assert (r.good.commit, r.bad.commit) == (commit(r.good.run - 1), commit(r.bad.run - 1))
        # The command the job runs is the one printed, word for word.
        assert f"  find the commit: {shlex.join(r.bisect)}" in r.evidence
        assert r.bisect[-1] == f"perfbot sample --suite pr --case {r.benchmark.case} --kernel fused --samples 30"
        assert (r.benchmark.suite, r.benchmark.kernel, r.benchmark.variant) == ("pr", "fused", {})
        assert (r.fails, r.under_test, r.recent, r.runner) == (True, True, True, "h200")
        series = r.id.split("@")[0]
        assert r.id == f"{series}@{r.after.stored}" and re.fullmatch(r"[0-9a-f]{16}", series)
        assert f"--step {r.id} " in r.evidence[-1]  # the id `perfbot history ack` takes
    assert len({r.id for r in records}) == 2


def test_the_id_is_the_series_and_the_stamp_of_the_steps_first_run(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    check(directory, tmp_path / "steps.json")
    from perfbot.history import series as history

    found = steps.find_all(history.read(directory))
    ids = {f.step_id for f in found if f.series.under_test}
    assert {r.id for r in steps_file.load(tmp_path / "steps.json").steps} == ids


def test_a_baseline_that_moved_is_recorded_without_a_command_and_fails_nothing(tmp_path: Path):
    runs = make_runs(RUNS, seed=8)
    slower = scaled(runs, "eager", 1.04, AT)
    directory = write_store(tmp_path / "store", slower)
    result = check(directory, tmp_path / "steps.json")
    assert result.exit_code == 0, result.output
    records = steps_file.load(tmp_path / "steps.json").steps
    assert records and all(r.benchmark.kernel == "eager" for r in records)
    assert all((r.fails, r.under_test, r.bisect, r.runner) == (False, False, None, None) for r in records)


def test_a_step_in_runs_of_one_commit_has_no_command(tmp_path: Path):
    runs = make_runs(RUNS, step=0.03, at=AT, seed=11)
    same = [replace(run, environment=replace(run.environment, kernels_commit=commit(0))) for run in runs]
    directory = write_store(tmp_path / "store", same)
    result = check(directory, tmp_path / "steps.json")
    records = steps_file.load(tmp_path / "steps.json").steps
    assert records and all(r.bisect is None and r.fails for r in records), result.output
    assert "find the commit" not in result.output


def test_the_file_is_written_without_a_step_and_the_next_check_reports_nothing_again(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    assert check(directory, tmp_path / "first.json").exit_code == 1
    again = check(directory, tmp_path / "again.json")
    assert again.exit_code == 0 and "no new step" in again.output
    assert json.loads((tmp_path / "again.json").read_text()) == {"format": 1, "steps": []}


def test_the_runner_is_the_first_label_that_measured_the_steps_gpu(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    runners = [
        f"a100={_run_file(tmp_path / 'a100.json', 'NVIDIA A100-SXM4-80GB')}",
        f"h200-b={_run_file(tmp_path / 'h200b.json')}",
        f"h200={_run_file(tmp_path / 'h200.json')}",
    ]
    check(directory, tmp_path / "steps.json", *(part for r in runners for part in ("--runner", r)))
    assert {r.runner for r in steps_file.load(tmp_path / "steps.json").steps} == {"h200-b"}
    check(directory, tmp_path / "none.json", "--state", str(tmp_path / "s.json"), "--runner", runners[0])
    assert {r.runner for r in steps_file.load(tmp_path / "none.json").steps} == {None}  # no runner of its GPU


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--runner", "h200"], "must be LABEL=RESULTS"),
        (["--runner", "../h200=x.json"], "not a runner label"),
        (["--runner", "h200=missing.json"], "missing.json: no such file"),
    ],
)
def test_bad_runners_are_one_line_and_exit_2(tmp_path: Path, args, words):
    directory = write_store(tmp_path / "store", make_runs(8, seed=1))
    result = check(directory, tmp_path / "steps.json", *args)
    assert result.exit_code == 2 and words in result.output, result.output
    if "LABEL=RESULTS" not in words:  # click's own usage error has its usage lines
        assert result.output.strip().count("\n") == 0, result.output
    assert not (tmp_path / "steps.json").exists() and not (directory / steps.STATE_FILE).exists()


def test_the_options_need_their_partners_and_go_before_a_subcommand(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(8, seed=1))
    runner = CliRunner()
    alone = runner.invoke(perfbot, ["history", "--store", str(directory), "--out-steps", str(tmp_path / "s.json")])
    assert alone.exit_code == 2 and "--out-steps needs --check" in alone.output
    runs = _run_file(tmp_path / "h200.json")
    no_file = runner.invoke(perfbot, ["history", "--store", str(directory), "--check", "--runner", f"h200={runs}"])
    assert no_file.exit_code == 2 and "--runner needs --out-steps" in no_file.output


def _written(tmp_path: Path) -> dict:
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    check(directory, tmp_path / "steps.json")
    return json.loads((tmp_path / "steps.json").read_text())


@pytest.fixture(scope="module")
def steps_written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The steps file of a generated store, checked: written once, each test below edits a copy."""
    return json.dumps(_written(tmp_path_factory.mktemp("steps")))


@pytest.mark.xdist_group("steps-file-strict")  # on one worker, which writes the steps file once
@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["steps"][0]["bisect"].__setitem__(9, "rm -rf ~"), "bisect: is not the perfbot bisect command"),
        (lambda d: d["steps"][0]["bisect"].__setitem__(5, commit(0)), "bisect: is not the perfbot bisect command"),
        (lambda d: d["steps"][0]["benchmark"].__setitem__("case", "other"), "bisect: is not the perfbot bisect"),
        (lambda d: d["steps"][0]["bisect"].append("--build=make"), "bisect: is not the perfbot bisect command"),
        (lambda d: d["steps"][0].__setitem__("id", "x-->"), "steps[0].id: String should match pattern"),
        (lambda d: d["steps"][0].__setitem__("runner", "a b"), "steps[0].runner"),
        (lambda d: d["steps"][0].__setitem__("fails", 1), "steps[0].fails: should be a valid boolean"),
        (lambda d: d["steps"][0].__setitem__("label", "a\nb"), "steps[0].label: must not hold control characters"),
        (lambda d: d.__setitem__("format", 2), "format"),
        (lambda d: d["steps"][0].__setitem__("extra", 1), "steps[0].extra"),
    ],
    ids=["command", "commit", "benchmark", "more-words", "id", "runner", "fails", "label", "format", "unknown-key"],
)
def test_a_steps_file_is_read_strictly(steps_written: str, tmp_path: Path, change, words):
    data = json.loads(steps_written)
    change(data)
    (tmp_path / "steps.json").write_text(json.dumps(data))
    with pytest.raises(BadInput, match=re.escape(words)):
        steps_file.load(tmp_path / "steps.json")


def test_the_steps_are_written_before_the_state_so_none_is_lost(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(RUNS, step=0.03, at=AT, seed=11))
    result = check(directory, tmp_path / "steps.json", "--state", "/proc/perfbot-reported-steps.json")
    assert result.exit_code == 3, result.output  # the state could not be written: reported again next time
    assert len(steps_file.load(tmp_path / "steps.json").steps) == 2
