"""The baseline store on real files: history kept, atomic writes, corrupt files reported."""

import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.records import results, store
from perfbot.records.run import Results
from tests.helpers import make_results


def _save(tmp_path: Path, name: str, loaded) -> Path:
    path = tmp_path / name
    results.save(loaded, path)
    return path


def test_every_run_is_kept_and_the_last_stored_is_the_baseline(tmp_path: Path):
    directory = tmp_path / "store"
    # A run that says it is from 2999, stored first, and an older run stored later: the order
    # is the store's, not the files' own dates.
    first = store.add(directory, replace(make_results(seed=1), created="2999-01-01T00:00:00+00:00")).path
    second = store.add(directory, replace(make_results(seed=2), created="0001-01-01T00:00:00+00:00")).path
    assert first.parent == second.parent == directory / "nvidia-h200"
    assert [e.path for e in store.history(directory)] == [first, second]
    path, baseline = store.latest(directory, "NVIDIA H200")
    assert path == second and baseline.created.startswith("0001-01-01")
    assert [p.name for p in directory.rglob("*") if p.name.startswith(".")] == [".lock"]  # no temporary files


def test_the_tests_generated_stores_are_what_baseline_update_makes(tmp_path: Path):
    """tests/history_store.py writes its stores without store.add, for speed: the same files,
    in the same order, with the same texts and modes, and the same lock file."""
    from tests.history_store import make_runs, write_store

    runs = make_runs(3, seed=1)
    runs.insert(1, replace(runs[0], environment=replace(runs[0].environment, gpu_name="NVIDIA A100-SXM4-80GB")))
    for run in runs:
        store.add(tmp_path / "added", run)
    written = write_store(tmp_path / "written", runs[:2])
    write_store(written, runs[2:])  # a store written to again, as some tests do

    def files(directory: Path) -> list[tuple[str, str, bytes | bool, int]]:
        """Each file and folder in the order of its path, its stamp left out."""
        return [
            (
                str(p.parent.relative_to(directory)),
                p.name.split("-", 1)[-1],
                p.is_file() and p.read_bytes(),
                p.stat().st_mode,
            )
            for p in sorted(directory.rglob("*"))
        ]

    assert files(written) == files(tmp_path / "added")
    assert [(e.gpu, e.path.name.split("-")[1]) for e in store.history(written)] == [
        (e.gpu, e.path.name.split("-")[1]) for e in store.history(tmp_path / "added")
    ]
    assert [loaded for _, loaded in store.runs(written)] == [loaded for _, loaded in store.runs(tmp_path / "added")]


def test_gpu_names_are_folded_alike_for_the_folder_and_the_comparison(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    lower = make_results(seed=2, environment={"gpu_name": "nvidia  h200"})
    _path, baseline = store.latest(directory, lower.environment.gpu_name)
    from perfbot.deciding.compare import compare
    from perfbot.deciding.thresholds import load_policy
    from tests.conftest import ROOT

    assert compare(baseline, lower, load_policy(ROOT / "thresholds.yaml")).comparisons


def test_a_run_that_could_not_be_compared_later_is_refused(tmp_path: Path):
    directory = tmp_path / "store"
    run = make_results(seed=1)
    implausible = replace(run, benchmarks=[replace(run.benchmarks[0], samples_ms=[1e308] * 30), *run.benchmarks[1:]])
    for broken, words in (
        (implausible, r"samples_ms\[0\]: should be less than or equal to 1000000"),
        (replace(run, created="yesterday"), "created: must be an ISO 8601"),
    ):
        with pytest.raises(BadInput, match=words):
            store.add(directory, broken)
    assert not directory.exists() or not list(directory.rglob("*.json"))


def test_the_same_run_twice_is_refused_not_overwritten(tmp_path: Path):
    directory = tmp_path / "store"
    stored = store.add(directory, make_results(seed=1)).path
    before = stored.read_bytes()
    with pytest.raises(BadInput, match="already stored"):
        store.add(directory, make_results(seed=1))
    assert stored.read_bytes() == before


def test_a_corrupt_file_is_reported_never_skipped_or_replaced(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    corrupt = directory / "nvidia-h200" / "20991231T000000Z-ffffffffffff.json"
    corrupt.write_text('{"format": 1, "benchm')
    with pytest.raises(BadInput, match="corrupt file in the baseline store") as error:
        store.latest(directory, "NVIDIA H200")
    assert corrupt.name in str(error.value)
    store.add(directory, make_results(seed=3))  # storing a new run leaves the corrupt file alone
    with pytest.raises(BadInput, match="corrupt"):
        store.history(directory)
    assert corrupt.read_text() == '{"format": 1, "benchm'


def test_no_baseline_and_bad_store(tmp_path: Path):
    with pytest.raises(BadInput, match="baseline update"):
        store.latest(tmp_path / "empty", "NVIDIA H200")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="must be a directory"):
        store.add(tmp_path / "file", make_results(seed=1))
    with pytest.raises(BadInput, match="name no GPU"):
        store.add(tmp_path / "s", make_results(seed=1, environment={"gpu_name": None}))


def test_cli_update_show_and_compare_with_the_store(tmp_path: Path):
    directory = tmp_path / "store"
    runner = CliRunner()
    base = _save(tmp_path, "base.json", make_results(seed=1))
    slow = _save(tmp_path, "slow.json", make_results({("fused", "gemma-2b"): 1.10}, seed=2))
    result = runner.invoke(perfbot, ["baseline", "update", str(base), "--store", str(directory)])
    assert result.exit_code == 0 and "stored" in result.output
    shown = runner.invoke(perfbot, ["baseline", "show", "--store", str(directory)])
    assert shown.exit_code == 0 and "NVIDIA H200" in shown.output and "baseline" in shown.output
    compared = runner.invoke(perfbot, ["compare", "--store", str(directory), str(slow)])
    assert compared.exit_code == 1, compared.output
    other = _save(tmp_path, "a100.json", make_results(seed=2, environment={"gpu_name": "NVIDIA A100"}))
    missing = runner.invoke(perfbot, ["compare", "--store", str(directory), str(other)])
    assert missing.exit_code == 2 and "no baseline stored for 'NVIDIA A100'" in missing.output


def test_leftovers_of_an_interrupted_update_are_reported_then_removed(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    leftover = directory / "nvidia-h200" / ".20261130T000000.000000Z-0123456789ab.json.x1y2.tmp"
    leftover.write_text('{"format": 1, "envir')
    shown = CliRunner().invoke(perfbot, ["baseline", "show", "--store", str(directory)])
    assert shown.exit_code == 0 and "1 partial file(s) left by an interrupted update" in shown.output
    path = _save(tmp_path, "run.json", make_results(seed=2))
    updated = CliRunner().invoke(perfbot, ["baseline", "update", str(path), "--store", str(directory)])
    assert updated.exit_code == 0 and "removed 1 partial file(s)" in updated.output
    assert not leftover.exists() and len(store.history(directory)) == 2


def _large_run(seed: int) -> Results:
    """About 2.8 MB of JSON: 270 benchmarks of 1,000 samples, so that a write takes a while."""
    base = make_results(seed=seed, n=1000)
    benchmarks = [
        replace(b, case=f"{b.case}-{copy}", shape={**b.shape, "M": b.shape["M"] + copy})
        for copy in range(30)
        for b in base.benchmarks
    ]
    return replace(base, benchmarks=benchmarks, created=f"2026-11-{seed + 1:02d}T00:00:00+00:00")


def _large_runs(tmp_path: Path, days: list[int]) -> list[Path]:
    """A results file of _large_run per day of November: the first one's text with its date
    changed, each a run of its own (another digest), without encoding 2.8 MB again for each."""
    text = results.to_text(_large_run(0))
    created = '"created": "2026-11-01T00:00:00+00:00"'
    assert text.count(created) == 1
    paths = []
    for day in days:
        path = tmp_path / f"run-{day:02d}.json"
        path.write_text(text.replace(created, f'"created": "2026-11-{day:02d}T00:00:00+00:00"'))
        paths.append(path)
    return paths


@pytest.mark.slow
def test_a_kill_at_any_moment_leaves_a_store_that_loads(tmp_path: Path):
    """`baseline update` killed (SIGKILL) at random moments, and at the moment its temporary file
    appears (mid-write): after each kill the store loads whole, and the next update cleans up."""
    import random
    import signal
    import subprocess
    import sys
    import time

    directory = tmp_path / "store"
    command = [sys.executable, "-m", "perfbot", "baseline", "update", "--store", str(directory)]
    rng = random.Random(0)
    stored, mid_write = 0, 0
    *paths, last_path = _large_runs(tmp_path, [*range(1, 9), 21])
    for attempt, path in enumerate(paths):
        process = subprocess.Popen([*command, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + (rng.uniform(0.5, 2.0) if attempt % 2 else 30)
        while time.monotonic() < deadline and process.poll() is None:
            if attempt % 2 == 0 and store.leftovers(directory):  # its temporary file exists: kill now
                mid_write += 1
                break
            time.sleep(0.002)  # a 2.8 MB write takes far longer; a tighter loop starves the other tests
        process.send_signal(signal.SIGKILL)
        finished = process.wait() == 0
        now = len(store.history(directory))  # every file there loads; none is partial
        # A kill that came after the run was stored, but before the process exited, stored it too.
        assert now == stored + 1 if finished else now in (stored, stored + 1)
        stored = now
    assert mid_write >= 2, "the kills never landed inside a write"
    assert store.leftovers(directory), "no kill left a partial file to clean up"
    last = subprocess.run([*command, str(last_path)], capture_output=True, text=True, timeout=120)
    assert last.returncode == 0 and "removed" in last.stderr, last.stderr
    assert store.leftovers(directory) == [] and len(store.history(directory)) == stored + 1


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write in: read-only for a user; /proc for root, whom file
    modes do not stop."""
    if os.geteuid() == 0:
        return Path("/proc/perfbot-test")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def test_an_unwritable_store_or_output_is_an_environment_failure(tmp_path: Path):
    path = _save(tmp_path, "run.json", make_results(seed=2))
    where = _unwritable(tmp_path)
    runner = CliRunner()
    for args in (
        ["baseline", "update", str(path), "--store", str(where / "store")],
        ["compare", str(path), str(path), "--out-markdown", str(where / "comment.md")],
        ["export", str(path), "--out", str(where / "out.json")],
    ):
        result = runner.invoke(perfbot, args)
        assert result.exit_code == 3 and result.stderr.count("\n") == 1, (args, result.output)
        assert "cannot write" in result.stderr and "Traceback" not in result.output


def test_cli_refuses_to_store_a_run_with_wrong_results(tmp_path: Path):
    from perfbot.records.run import Failure

    broken = replace(make_results(seed=1), failures=[Failure("fused", {"M": 1}, "bfloat16", "wrong result")])
    path = _save(tmp_path, "broken.json", broken)
    result = CliRunner().invoke(perfbot, ["baseline", "update", str(path), "--store", str(tmp_path / "s")])
    assert result.exit_code == 2 and "wrong result" in result.output
    assert not (tmp_path / "s").exists()


def test_cli_show_reports_corrupt_files_with_exit_2(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    (directory / "nvidia-h200" / "bad.json").write_text("[]")
    result = CliRunner().invoke(perfbot, ["baseline", "show", "--store", str(directory)])
    assert result.exit_code == 2 and "bad.json" in result.output


def test_store_defaults_to_the_project_setting(project: Path):
    result = CliRunner().invoke(perfbot, ["baseline", "show", "--project", str(project)])
    assert result.exit_code == 0
    assert str(project / ".perfbot" / "store") in result.output
    assert os.path.isdir(project / "kernels")


@pytest.mark.parametrize("name", ["q" * 100_000, "q" * 300, "r.json/store"])
def test_a_store_name_the_system_cannot_use_is_bad_input(tmp_path: Path, name: str):
    """Too long for the system (the whole path, or one part of it), or under a file: exit 2."""
    run = tmp_path / "r.json"
    results.save(make_results(seed=1), run)
    for argv in (["baseline", "update", str(run)], ["baseline", "show"]):
        done = CliRunner().invoke(perfbot, [*argv, "--store", str(tmp_path / name)])
        assert done.exit_code == 2, (argv, done.output[-300:])
        assert "not a name a store can have" in done.stderr and done.stderr.count("\n") == 1, done.stderr[-300:]


def test_a_store_the_system_refuses_to_create_is_an_environment_failure(tmp_path: Path):
    """Not the name's fault (sysfs lets no one make a folder, root included): exit 3."""
    run = tmp_path / "r.json"
    results.save(make_results(seed=1), run)
    done = CliRunner().invoke(perfbot, ["baseline", "update", str(run), "--store", "/sys/perfbot-store"])
    assert done.exit_code == 3, done.output
    assert done.stderr.startswith("perfbot: error: /sys/perfbot-store: cannot write the store: ")


# --- nothing written outside the store (files.py's containment rule) ----------------------------


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the store and the project, holding a file to keep."""
    place = tmp_path_factory.mktemp("outside")
    (place / "precious").write_text("precious")
    return place


def _update(run: Path, *where: str):
    return CliRunner().invoke(perfbot, ["baseline", "update", str(run), *where])


def test_a_gpus_folder_that_links_out_of_the_store_is_refused(tmp_path: Path, outside: Path):
    # The perfbot-baselines branch that a store is a clone of can hold a link anyone's workflow pushed.
    directory = tmp_path / "store"
    directory.mkdir()
    (directory / "nvidia-h200").symlink_to(outside)
    done = _update(_save(tmp_path, "run.json", make_results(seed=1)), "--store", str(directory))
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"perfbot: error: {directory / 'nvidia-h200'}: is a symlink to {outside}, outside the store "
        f"({directory}); perfbot writes only inside it\n"
    )
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]


@pytest.mark.parametrize("target", ["a file outside", "nothing yet, outside"])
def test_a_lock_that_links_out_of_the_store_is_refused(tmp_path: Path, outside: Path, target: str):
    directory = tmp_path / "store"
    directory.mkdir()
    lock = outside / ("precious" if target == "a file outside" else "lock")
    (directory / ".lock").symlink_to(lock)
    done = _update(_save(tmp_path, "run.json", make_results(seed=1)), "--store", str(directory))
    assert done.exit_code == 2, done.output
    assert f"{directory / '.lock'}: is a symlink" in done.stderr and done.stderr.count("\n") == 1
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]  # opened to append: never made there
    assert not (directory / "nvidia-h200").exists()


def test_a_leftover_through_a_link_out_of_the_store_is_left_alone(tmp_path: Path, outside: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    (directory / "elsewhere").symlink_to(outside)
    (outside / ".20261130T000000.000000Z-0123456789ab.json.x1y2.tmp").write_text("theirs")
    assert store.add(directory, make_results(seed=2)).leftovers_removed == 0
    assert (outside / ".20261130T000000.000000Z-0123456789ab.json.x1y2.tmp").read_text() == "theirs"


def test_a_gpus_folder_linked_to_a_folder_inside_the_store_is_followed(tmp_path: Path):
    directory = tmp_path / "store"
    (directory / "h200-runs").mkdir(parents=True)
    (directory / "nvidia-h200").symlink_to("h200-runs")
    added = store.add(directory, make_results(seed=1))
    assert added.path.parent == directory / "nvidia-h200"
    assert [p.name for p in (directory / "h200-runs").iterdir()] == [added.path.name]


def test_the_projects_store_that_links_out_of_the_project_is_refused_where_written(project: Path, outside: Path):
    (outside / "store").mkdir()
    (project / ".perfbot").symlink_to(outside)  # [tool.perfbot] store = ".perfbot/store"
    run = _save(outside.parent, "run.json", make_results(seed=1))
    words = f"{project / '.perfbot'} is a symlink to {outside}, outside the project ({project})"
    writers = [
        ["baseline", "update", str(run)],
        ["history", "--check"],
        ["history", "ack", "--step", "0123456789abcdef@20261130T051500.000000Z", "--reason", "known"],
    ]
    for argv in writers:
        done = CliRunner().invoke(perfbot, [*argv, "--project", str(project)])
        assert done.exit_code == 2, (argv, done.output)
        assert words in done.stderr and done.stderr.count("\n") == 1, (argv, done.stderr)
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == ["precious", "store"]
    shown = CliRunner().invoke(perfbot, ["baseline", "show", "--project", str(project)])
    assert shown.exit_code == 0, shown.output  # read through the link: only writing is held to the rule
    # Named by the user, the same path is the user's choice, wherever it leads.
    assert _update(run, "--store", str(project / ".perfbot" / "store")).exit_code == 0
    assert len(list((outside / "store" / "nvidia-h200").glob("*.json"))) == 1
