"""perfbot history ack on generated stores: an acknowledged step is never reported again, later
steps are measured from its level, the record outlives a new run and a site rebuild, and bad
steps, reasons and files are refused in one line."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.deciding import changepoints
from perfbot.history import acknowledgements, steps
from perfbot.history import series as history
from perfbot.history.acknowledgements import Acknowledgement
from perfbot.output import site
from perfbot.records import results, store
from tests.history_store import make_runs, write_store

RUNS, AT = 40, 24  # AT is 0-based: the step starts at run 25
T5, GEMMA = "fused · pr/t5-v1.1-xl", "fused · pr/gemma-7b-m16"


def invoke(*args: str):
    return CliRunner().invoke(perfbot, ["history", *args])


def _ack_commands(output: str) -> dict[str, list[str]]:
    """Each step's label -> the ack command --check printed for it, as a list of arguments."""
    commands, label = {}, None
    for line in output.splitlines():
        if not line.startswith(" "):
            label = line.split(": ", 1)[0]
        elif line.startswith("  acknowledge it: "):
            commands[label] = shlex.split(line.removeprefix("  acknowledge it: "))
    return commands


def _run_printed(command: list[str], reason: str):
    """The printed command as a user would run it, with '...' replaced by the reason."""
    assert command[:3] == ["perfbot", "history", "ack"] and command[-2:] == ["--reason", "..."], command
    return CliRunner().invoke(perfbot, [*command[1:-1], reason])


def _stored(directory: Path, index: int) -> str:
    return history.read(directory).runs["NVIDIA H200"][index].stored


def _series(directory: Path, label: str) -> history.Series:
    return next(s for s in history.read(directory).series if s.label.startswith(label))


def _one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and result.output.startswith("perfbot: error: "), result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output


# The module's tests copy one store, built and checked once: on one worker, it is built once.
pytestmark = pytest.mark.xdist_group("history-ack")


@pytest.fixture(scope="module")
def checked_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 runs, fused 3% slower from run 25 in both cases; checked once (both steps reported)."""
    directory = write_store(tmp_path_factory.mktemp("stepped") / "store", make_runs(RUNS, step=0.03, at=AT, seed=3))
    first = invoke("--store", str(directory), "--check")
    assert first.exit_code == 1 and "2 new step(s)" in first.output, first.output
    return directory


@pytest.fixture
def stepped(checked_store: Path, tmp_path: Path) -> Path:
    """The checked store, copied for the test to change: its files, stamps and state as they are."""
    return shutil.copytree(checked_store, tmp_path / "store", symlinks=True)


def test_an_acknowledged_step_is_not_reported_again_even_without_the_state_file(stepped: Path):
    state = stepped / steps.STATE_FILE
    state.unlink()
    printed = _ack_commands(invoke("--store", str(stepped), "--check").output)
    assert sorted(label.split(": ")[0][len("NVIDIA H200 · ") :] for label in printed) == sorted(
        s.label for s in history.read(stepped).series if s.bench.kernel == "fused"
    )
    t5 = next(command for label, command in printed.items() if T5 in label)
    done = _run_printed(t5, "the new epilogue: 3% here for 10% on decode (#123)")
    assert done.exit_code == 0, done.output
    assert f"acknowledged: NVIDIA H200 · {T5}" in done.output and "+3." in done.output
    assert "now estimated" not in done.output  # the id named the step's own run

    # Only that series' step is acknowledged: the other is reported again once the state is lost.
    state.unlink()
    again = invoke("--store", str(stepped), "--check")
    assert again.exit_code == 1 and "1 new step(s)" in again.output, again.output
    assert GEMMA in again.output and T5 not in again.output

    gemma = next(command for label, command in printed.items() if GEMMA in label)
    assert _run_printed(gemma, "accepted with the t5 one").exit_code == 0
    state.unlink()
    quiet = invoke("--store", str(stepped), "--check")
    assert quiet.exit_code == 0 and quiet.output.strip() == "perfbot history: no new step", quiet.output
    record = json.loads((stepped / acknowledgements.FILE).read_text())
    assert record["format"] == 1 and [a["reason"] for a in record["acknowledged"]] == [
        "the new epilogue: 3% here for 10% on decode (#123)",
        "accepted with the t5 one",
    ]
    first = record["acknowledged"][0]
    assert first["gpu"] == "NVIDIA H200" and first["series"] == _series(stepped, T5).identity
    assert first["stored"] == _stored(stepped, AT) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["at"])


def test_the_step_table_prints_an_id_that_ack_takes(stepped: Path):
    table = invoke("--store", str(stepped))
    assert table.exit_code == 0, table.output
    ids = re.findall(r"\b[0-9a-f]{16}@\S+", table.output)
    assert sorted(ids) == sorted(f.step_id for f in steps.find_all(history.read(stepped)))
    assert f"acknowledge one: perfbot history ack --store {stepped} --step ID" in table.output
    done = invoke("ack", "--store", str(stepped), "--step", ids[0], "--reason", "expected", "--by", "alice")
    assert done.exit_code == 0, done.output
    assert json.loads((stepped / acknowledgements.FILE).read_text())["acknowledged"][0]["by"] == "alice"
    assert len(re.findall(r"\b[0-9a-f]{16}@\S+", invoke("--store", str(stepped)).output)) == len(ids) - 1


def test_ack_without_a_store_keeps_it_in_the_projects(stepped: Path, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    pin = 40 * "0"
    (project / "pyproject.toml").write_text(f'[tool.perfbot]\nstore = "{stepped}"\ntriton-commit = "{pin}"\n')
    step_id = steps.find_all(history.read(stepped))[0].step_id
    done = invoke("ack", "--project", str(project), "--step", step_id, "--reason", "expected", "--by", "alice")
    assert done.exit_code == 0, done.output
    assert json.loads((stepped / acknowledgements.FILE).read_text())["acknowledged"][0]["reason"] == "expected"
    (project / "pyproject.toml").write_text(f'[tool.perfbot]\nstore = "none"\ntriton-commit = "{pin}"\n')
    _one_line_error(
        invoke("ack", "--project", str(project), "--step", step_id, "--reason", "ok"),
        f"baseline store {project / 'none'}: no such folder",
    )


def test_a_later_step_is_found_from_the_acknowledged_level(tmp_path: Path):
    runs = make_runs(60, step=0.03, at=AT, seed=3, second_step=0.03, second_at=44)
    directory = write_store(tmp_path / "store", runs[:RUNS])
    for command in _ack_commands(invoke("--store", str(directory), "--check").output).values():
        assert _run_printed(command, "accepted").exit_code == 0
    write_store(directory, runs[RUNS:])
    result = invoke("--store", str(directory), "--check")
    assert result.exit_code == 1, result.output  # the second step is the subject's, and recent
    reported = re.findall(
        r"· (fused · \S+) .*?fused/gemm ([+-][\d.]+)% \(([\d.]+) → ([\d.]+)\) from run (\d+)", result.output
    )
    assert sorted(label for label, *_ in reported) == sorted([T5, GEMMA]), result.output
    for label, change, before, _, run in reported:
        assert abs(int(run) - 45) <= 2 and 2.0 < float(change) < 4.5, result.output  # 3%, not 6%
        # Measured from the level the acknowledged step started, not from the level before it.
        ratios = [value for at, value in _series(directory, label).watched if AT <= at < 44]
        assert abs(float(before) / statistics.median(ratios) - 1) < 0.003, (label, before)


def test_an_acknowledgement_survives_a_new_run_and_a_site_rebuild(stepped: Path, tmp_path: Path):
    series = _series(stepped, T5)
    step_id = f"{series.identity}@{_stored(stepped, AT)}"
    hostile = "<script>alert(1)</script> accepted & <b>why</b>"
    assert (
        invoke("ack", "--store", str(stepped), "--step", step_id, "--reason", hostile, "--by", "<i>bob</i>").exit_code
        == 0
    )
    kept = (stepped / acknowledgements.FILE).read_bytes()

    new_run = tmp_path / "run-41.json"
    results.save(make_runs(RUNS + 1, step=0.03, at=AT, seed=3)[-1], new_run)
    updated = CliRunner().invoke(perfbot, ["baseline", "update", str(new_run), "--store", str(stepped)])
    assert updated.exit_code == 0, updated.output
    assert (stepped / acknowledgements.FILE).read_bytes() == kept
    assert len(store.history(stepped)) == RUNS + 1  # the store's runs, the file not among them
    shown = CliRunner().invoke(perfbot, ["baseline", "show", "--store", str(stepped)])
    assert shown.exit_code == 0, shown.output

    (stepped / steps.STATE_FILE).unlink()
    site = tmp_path / "site"
    rebuilt = invoke("--store", str(stepped), "--check", "--out-html", str(site))
    assert T5 not in rebuilt.output and GEMMA in rebuilt.output, rebuilt.output
    page = (site / "b" / f"{series.slug}.html").read_text()
    assert page.count('class="acknowledged-mark"') == 2  # on the median chart and the ratio chart
    assert 'class="step-mark"' not in page  # the acknowledged step is no longer found
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; accepted &amp; &lt;b&gt;why&lt;/b&gt;"
    assert "acknowledged by &lt;i&gt;bob&lt;/i&gt; on " in page and f"<q>{escaped}</q>" in page
    assert "<title>acknowledged step +3." in page and f"from run {AT + 1}: {escaped}" in page
    index = (site / "index.html").read_text()
    assert f"at run {AT + 1} acknowledged by &lt;i&gt;bob&lt;/i&gt;" in index and escaped in index
    for written in site.rglob("*.html"):
        text = written.read_text()
        assert "<script>" not in text and "<b>why" not in text and "<i>bob" not in text
    gemma_page = (site / "b" / f"{_series(stepped, GEMMA).slug}.html").read_text()
    assert "acknowledged-mark" not in gemma_page and 'class="step-mark"' in gemma_page


@pytest.mark.parametrize("offset", [-5, 5])
def test_ack_takes_the_step_within_five_runs_of_the_given_one_and_records_its_own_run(stepped: Path, offset: int):
    series = _series(stepped, T5)
    done = invoke(
        "ack", "--store", str(stepped), "--step", f"{series.identity}@{_stored(stepped, AT + offset)}", "--reason", "ok"
    )
    assert done.exit_code == 0, done.output
    assert f"its first run is now estimated at run {AT + 1}" in done.output
    assert acknowledgements.load(stepped)[0].stored == _stored(stepped, AT)


@pytest.mark.parametrize("offset", [-6, 6])
def test_ack_refuses_a_run_six_runs_from_any_step(stepped: Path, offset: int):
    series = _series(stepped, T5)
    step_id = f"{series.identity}@{_stored(stepped, AT + offset)}"
    _one_line_error(
        invoke("ack", "--store", str(stepped), "--step", step_id, "--reason", "ok"), "no step found", "within 5 runs"
    )
    assert not (stepped / acknowledgements.FILE).exists()


def test_ack_takes_the_nearest_of_two_steps(tmp_path: Path):
    runs = make_runs(RUNS, step=0.03, at=20, seed=2, second_step=0.03, second_at=27)
    stored = [(Path(f"{i}"), f"{i:04d}", r) for i, r in enumerate(runs)]
    read = history.of_runs(stored)
    series = next(s for s in read.series if s.label.startswith(T5))
    assert [after for _, _, after in series.steps] == [20, 27]
    assert steps.to_acknowledge(read, series.identity, "0023").after.index == 20
    assert steps.to_acknowledge(read, series.identity, "0024").after.index == 27


@pytest.mark.parametrize("offset", [0, 5, -5])
def test_a_step_already_acknowledged_is_refused(stepped: Path, offset: int):
    series = _series(stepped, T5)
    assert (
        invoke(
            "ack", "--store", str(stepped), "--step", f"{series.identity}@{_stored(stepped, AT)}", "--reason", "first"
        ).exit_code
        == 0
    )
    kept = (stepped / acknowledgements.FILE).read_bytes()
    again = f"{series.identity}@{_stored(stepped, AT + offset)}"
    _one_line_error(
        invoke("ack", "--store", str(stepped), "--step", again, "--reason", "second"),
        f"the step from run {AT + 1} of {series.label} is already acknowledged",
        ": first)",
    )
    assert (stepped / acknowledgements.FILE).read_bytes() == kept


@pytest.mark.parametrize(("offset", "reported"), [(5, False), (6, True), (-6, True)])
def test_the_check_matches_an_acknowledgement_within_five_runs(offset: int, reported: bool):
    stored = [(Path(f"{i}"), f"{i:04d}", r) for i, r in enumerate(make_runs(RUNS, step=0.03, at=AT, seed=10))]
    series = next(s for s in history.of_runs(stored).series if s.label.startswith(T5))
    acknowledged = Acknowledgement(series.gpu, series.identity, "x", f"{AT + offset:04d}", 3.0, "r", None, "t")
    read = history.of_runs(stored, [acknowledged])
    found = [f.after.index for f in steps.find_all(read) if f.series.identity == series.identity]
    assert found == [AT]  # still found beside a break five or six runs off
    new = [f.after.index for f in steps.new_steps(read, steps.State()) if f.series.identity == series.identity]
    assert new == ([AT] if reported else [])


def test_an_acknowledgement_of_another_gpu_series_or_run_changes_nothing():
    stored = [(Path(f"{i}"), f"{i:04d}", r) for i, r in enumerate(make_runs(RUNS, step=0.03, at=AT, seed=10))]
    series = next(s for s in history.of_runs(stored).series if s.label.startswith(T5))
    for gpu, identity, run in (
        ("NVIDIA H100", series.identity, f"{AT:04d}"),
        (series.gpu, "0" * 16, f"{AT:04d}"),
        (series.gpu, series.identity, "9999"),  # a run no longer in the store
    ):
        read = history.of_runs(stored, [Acknowledgement(gpu, identity, "x", run, 3.0, "r", None, "t")])
        assert [s.acknowledged for s in read.series] == [()] * len(read.series)
        new = [f.after.index for f in steps.new_steps(read, steps.State()) if f.series.identity == series.identity]
        assert new == [AT], (gpu, identity)


def test_a_series_breaks_at_its_acknowledged_runs_in_the_order_of_its_runs():
    runs = make_runs(RUNS, seed=1)
    # Run 20 measured no gemm, so the t5 series watches no ratio there.
    runs[20] = replace(
        runs[20], benchmarks=[b for b in runs[20].benchmarks if not (b.kernel == "gemm" and b.case == "t5-v1.1-xl")]
    )
    stored = [(Path(f"{i}"), f"{i:04d}", r) for i, r in enumerate(runs)]
    series = next(s for s in history.of_runs(stored).series if s.label.startswith(T5))
    acknowledged = [
        Acknowledgement(series.gpu, series.identity, "x", f"{at:04d}", 3.0, f"at {at}", None, "t")
        for at in (30, 20, 10)
    ]
    read = next(s for s in history.of_runs(stored, acknowledged).series if s.identity == series.identity)
    assert [(at, record.reason) for at, record in read.acknowledged] == [(10, "at 10"), (20, "at 20"), (30, "at 30")]
    # At its run where that run is watched, else at the next watched one (run 21, index 20).
    assert read.breaks == [10, 20, 29]


def test_known_breaks_split_the_search():
    def level(value: float, count: int) -> list[float]:
        return [value * (1 + 0.001 * (i % 3)) for i in range(count)]

    one_step = level(1.0, 20) + level(1.05, 20)
    assert [(s.at, round(s.change_percent)) for s in changepoints.find(one_step)] == [(20, 5)]
    for breaks in ([20], [19], [21], [0, 20, 40]):  # at the step, or a run off: nothing is left to find
        assert changepoints.find(one_step, breaks) == [], breaks
    assert changepoints.find(one_step, [0, 40]) == changepoints.find(one_step)  # the ends are no breaks
    two_steps = level(1.0, 20) + level(1.05, 10) + level(1.10, 10)
    after_break = changepoints.find(two_steps, [20])
    assert [s.at for s in after_break] == [30]  # placed in the whole series, not in its piece
    assert after_break[0].before == pytest.approx(1.05, rel=2e-3) and after_break[0].after == pytest.approx(
        1.10, rel=2e-3
    )


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("nope", "a step id is SERIES@STORED"),
        ("0123456789abcdef", "a step id is SERIES@STORED"),
        ("0123456789ABCDEF@20261130T051500.000000Z", "a step id is SERIES@STORED"),
        ("0123456789abcdef@", "a step id is SERIES@STORED"),
        ("0123456789abcdef@a b", "a step id is SERIES@STORED"),
        ("", "a step id is SERIES@STORED"),
        ("0123456789abcdef@20261130T051500.000000Z", "no series 0123456789abcdef in the store"),
    ],
)
def test_a_bad_step_is_one_line_and_exit_2(stepped: Path, step: str, words: str):
    _one_line_error(invoke("ack", "--store", str(stepped), "--step", step, "--reason", "ok"), words)
    assert not (stepped / acknowledgements.FILE).exists()


def test_a_run_the_series_does_not_have_is_one_line_and_exit_2(stepped: Path):
    series = _series(stepped, T5)
    _one_line_error(
        invoke(
            "ack", "--store", str(stepped), "--step", f"{series.identity}@20991231T000000.000000Z", "--reason", "ok"
        ),
        "has no run stored at 20991231T000000.000000Z",
    )


@pytest.mark.parametrize(
    ("reason", "by", "words"),
    [
        ("", None, "--reason is empty"),
        ("   ", None, "--reason is empty"),
        ("x" * 2001, None, "--reason is 2001 characters long; at most 2000"),
        ("two\nlines", None, "--reason must be one line"),
        ("tab\there", None, "--reason must be one line"),
        ("ok", "a\nb", "--by: give a name of one line"),
        ("ok", "x" * 201, "--by: give a name of one line"),
        ("ok", " ", "--by: give a name of one line"),
    ],
)
def test_a_bad_reason_or_name_is_one_line_and_exit_2(stepped: Path, reason: str, by: str | None, words: str):
    step_id = f"{_series(stepped, T5).identity}@{_stored(stepped, AT)}"
    _one_line_error(
        invoke("ack", "--store", str(stepped), "--step", step_id, "--reason", reason, *(["--by", by] if by else [])),
        words,
    )
    assert not (stepped / acknowledgements.FILE).exists()


def test_the_longest_reason_and_name_are_taken_whole(stepped: Path):
    step_id = f"{_series(stepped, T5).identity}@{_stored(stepped, AT)}"
    reason, by = " " + "x" * 2000 + " ", "y" * 200
    assert invoke("ack", "--store", str(stepped), "--step", step_id, "--reason", reason, "--by", by).exit_code == 0
    assert (acknowledgements.load(stepped)[0].reason, acknowledgements.load(stepped)[0].by) == ("x" * 2000, by)


@pytest.mark.parametrize(
    ("git_name", "user", "recorded"), [("Ada L", "carol", "Ada L"), (None, "carol", "carol"), (None, "", None)]
)
def test_who_acknowledged_is_gits_user_name_else_user(
    stepped: Path, tmp_path: Path, monkeypatch, git_name: str | None, user: str, recorded: str | None
):
    config = tmp_path / "gitconfig"
    config.write_text(f"[user]\n\tname = {git_name}\n" if git_name else "")
    monkeypatch.chdir(tmp_path)  # no repository's own configuration
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("USER", user)
    step_id = f"{_series(stepped, T5).identity}@{_stored(stepped, AT)}"
    assert invoke("ack", "--store", str(stepped), "--step", step_id, "--reason", "ok").exit_code == 0
    assert acknowledgements.load(stepped)[0].by == recorded


def test_the_site_names_no_one_as_someone(tmp_path: Path):
    stored = [(Path(f"{i}"), f"{i:04d}", r) for i, r in enumerate(make_runs(RUNS, step=0.03, at=AT, seed=10))]
    series = next(s for s in history.of_runs(stored).series if s.label.startswith(T5))
    record = Acknowledgement(series.gpu, series.identity, "x", f"{AT:04d}", 3.04, "known", None, "2026-12-01T10:00:00Z")
    site.build(history.of_runs(stored, [record]), tmp_path / "site", site.Links(None, {}))
    page = (tmp_path / "site" / "b" / f"{series.slug}.html").read_text()
    assert "✓ +3.0% from run 25 (stored 0024), acknowledged by someone on 2026-12-01T10:00:00Z: <q>known</q>" in page


def _record(**changes) -> dict:
    record = {
        "gpu": "NVIDIA H200",
        "series": "0123456789abcdef",
        "label": "fused",
        "stored": "20261130T051500.000000Z",
        "change_percent": 3.0,
        "reason": "accepted",
        "by": None,
        "at": "2026-12-01T10:00:00Z",
    }
    return {**record, **changes}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not valid JSON"),
        ("[" * 100_000, "not valid JSON"),
        (json.dumps({"format": 2, "acknowledged": []}), "format"),
        (json.dumps({"format": 1, "acknowledged": [_record(extra=1)]}), "acknowledged[0].extra"),
        (json.dumps({"format": 1, "acknowledged": [_record(reason="")]}), "acknowledged[0].reason"),
        (json.dumps({"format": 1, "acknowledged": [_record(reason="a\nb")]}), "control characters"),
        (json.dumps({"format": 1, "acknowledged": [_record(series="../../etc")]}), "acknowledged[0].series"),
        (json.dumps({"format": 1, "acknowledged": [_record(change_percent="3")]}), "change_percent"),
        (json.dumps({"format": 1, "acknowledged": [_record(reason="x" * 2001)]}), "at most 2000 characters"),
        (json.dumps({"format": 1, "acknowledged": [_record()] * 10_001}), "at most 10000 items"),
        (json.dumps({"format": 1, "acknowledged": [{"gpu": 5}]}), "acknowledged[0]"),
        (" " * (64 * 1024 * 1024 + 1), "over 64 MiB"),
    ],
    ids=[
        "truncated",
        "deeply-nested",
        "newer-format",
        "unknown-key",
        "empty-reason",
        "newline-in-reason",
        "not-an-identity",
        "string-for-number",
        "reason-too-long",
        "too-many",
        "wrong-type",
        "too-large",
    ],
)
def test_a_bad_acknowledged_steps_file_is_one_line_and_exit_2(tmp_path: Path, text: str, words: str):
    directory = write_store(tmp_path / "store", make_runs(10, seed=1))
    (directory / acknowledgements.FILE).write_text(text)
    for args in (
        ["--check"],
        ["--out-html", str(tmp_path / "site")],
        [],
        ["--step", f"{'0' * 16}@x", "--reason", "r"],  # ack, which reads the file before it adds to it
    ):
        where = ["ack", "--store", str(directory)] if "--step" in args else ["--store", str(directory)]
        _one_line_error(invoke(*where, *args), acknowledgements.FILE, words)


def test_a_folder_in_place_of_the_file_is_one_line_and_exit_2(tmp_path: Path):
    directory = write_store(tmp_path / "store", make_runs(10, seed=1))
    (directory / acknowledgements.FILE).mkdir()
    _one_line_error(invoke("--store", str(directory), "--check"), "is a directory")


def test_ack_options_belong_after_the_subcommand(stepped: Path):
    _one_line_error(
        invoke("--store", str(stepped), "ack", "--store", str(stepped)), "--store goes after the subcommand"
    )


def test_the_printed_ack_command_quotes_a_strange_stamp():
    runs = make_runs(RUNS, step=0.03, at=AT, seed=10)
    stored = [(Path(f"{i}"), f"{i:04d}" if i != AT else "$(touch x);", r) for i, r in enumerate(runs)]
    found = next(f for f in steps.find_all(history.of_runs(stored)) if f.series.label.startswith(T5))
    assert found.after.stored == "$(touch x);"
    line = steps.describe(found, Path("my store"))[-1]
    assert line == (
        f"  acknowledge it: perfbot history ack --store 'my store' --step '{found.series.identity}@$(touch x);' "
        "--reason '...'"
    )
    assert shlex.split(line)[8] == found.step_id
