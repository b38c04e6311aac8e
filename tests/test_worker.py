"""A/B across two Triton environments: one real worker process per side (tests/cpu_worker.py,
the GPU's primitives replaced), alternating sample by sample. A side's "Triton environment" here
holds a module that sets the speed of its samples, so the verdict shows which environment each
worker really imported."""

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.measuring import runner, triton_build, worker, worker_sides
from perfbot.records import results
from tests.conftest import ON_BOTH_SUBJECTS
from tests.test_runner_cpu import ONE_CASE, _git, init_repo

CPU_WORKER = (sys.executable, str(Path(__file__).parent / "cpu_worker.py"))


@pytest.fixture(autouse=True)
def cpu_workers(monkeypatch):
    monkeypatch.setattr(worker_sides, "WORKER_COMMAND", CPU_WORKER)


@pytest.fixture
def repo(project: Path) -> Path:
    return init_repo(project)


def _environment(path: Path, scale: float, extra: str = "") -> Path:
    path.mkdir()
    (path / "perfbot_test_speed.py").write_text(f"SCALE = {scale}\n{extra}")
    return path


def _ab(repo: Path, out: Path, *extra: str):
    return CliRunner().invoke(
        perfbot,
        [
            "ab",
            "HEAD",
            "--project",
            str(repo),
            "--suite",
            "tiny",
            "--kernel",
            "fused",
            "--kernel",
            "eager",
            "--samples",
            "12",
            "--out-dir",
            str(out),
            *extra,
        ],
    )


@ON_BOTH_SUBJECTS
def test_each_side_runs_in_its_own_environment_and_a_slower_one_fails(repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", "a" * 40)  # this process's Triton, not theirs
    base_env, head_env = _environment(tmp_path / "env-a", 1.0), _environment(tmp_path / "env-b", 1.03)
    out = tmp_path / "ab"
    tritons = ["--triton-env", f"base={base_env}", "--triton-env", f"head={head_env}"]
    result = _ab(repo, out, *tritons, *ONE_CASE)
    assert result.exit_code == 1, result.output
    comparison = (out / "comment.md").read_text()
    assert "confirmed by a second interleaved round" in comparison
    head = results.load(out / "head.json")
    assert "one worker process per side" in head.settings.timing
    assert {b.kernel for b in head.benchmarks} == {"fused", "eager"}
    assert all(1.02 < b.median_ms < 1.04 for b in head.benchmarks)
    assert all(0.99 < b.median_ms < 1.01 for b in results.load(out / "base.json").benchmarks)
    assert head.environment.triton_path.endswith("triton")
    assert head.environment.triton_commit != "a" * 40
    # Each worker records the files its side's code came from (the same code on both sides here).
    geglu = {side.settings.sources["fused"]["kernels/geglu.py"] for side in (head, results.load(out / "base.json"))}
    assert len(geglu) == 1 and len(geglu.pop()) == 64


@pytest.mark.slow
def test_two_tritons_sharded_across_gpus_get_a_worker_per_side_on_each_gpu(repo: Path, tmp_path: Path, monkeypatch):
    from perfbot.measuring import shards
    from tests.test_base_decides import _wrong_with_its_own_reference
    from tests.test_shards import TWO

    monkeypatch.setattr(shards, "visible_gpus", lambda: TWO)
    # The head (this checkout) also ships a fused that is wrong on the square case, with a
    # reference that agrees; each GPU's head worker must check it against the base's reference all
    # the same (declarations.py). On the odd case it is right, timed, and 3% slower.
    subject = repo / "kernels" / "subject.py"
    wrong = _wrong_with_its_own_reference(subject.read_text())
    subject.write_text(wrong.replace(" + 1", " + (x.shape[0] == 64)"))  # M: 64 on the square case
    base_env, head_env = _environment(tmp_path / "env-a", 1.0), _environment(tmp_path / "env-b", 1.03)
    out = tmp_path / "ab"
    result = _ab(repo, out, "--triton-env", f"base={base_env}", "--triton-env", f"head={head_env}", "--gpus", "2")
    assert result.exit_code == 1, result.output  # the 3% slower head, confirmed across the GPUs
    assert "confirmed by a second interleaved round" in (out / "comment.md").read_text()
    base, head = results.load(out / "base.json"), results.load(out / "head.json")
    assert {(f.case, f.kernel, f.reason) for f in head.failures} == {("square", "fused", "wrong result")}
    assert {(b.case, b.kernel) for b in head.benchmarks} == {("odd", "fused"), ("odd", "eager"), ("square", "eager")}
    assert not base.failures
    assert head.settings.gpus == ["0: NVIDIA H200", "1: NVIDIA H200"]
    assert "one worker process per side" in head.settings.timing
    assert "kernels/geglu.py" in base.settings.sources["fused"]  # recorded by the base's workers
    by_key = {b.key: b for b in base.benchmarks}
    assert {b.gpu for b in head.benchmarks} == set(head.settings.gpus)  # both GPUs took cases
    assert {b.gpu for b in base.benchmarks} == set(head.settings.gpus)
    for bench in base.benchmarks:  # each worker pinned to its GPU
        pinned = 1.1 if bench.gpu.startswith("1:") else 0.9  # unpinned: 1.0 (tests/cpu_worker.py)
        assert bench.median_ms == pytest.approx(pinned, rel=0.01)
    for bench in head.benchmarks:  # both sides of a pair on one GPU
        pinned = 1.1 if bench.gpu.startswith("1:") else 0.9
        assert by_key[bench.key].gpu == bench.gpu
        assert bench.median_ms == pytest.approx(1.03 * pinned, rel=0.01)


@pytest.mark.slow
def test_a_worker_dying_on_one_gpu_of_a_sharded_two_triton_ab_names_that_gpu(repo: Path, tmp_path: Path, monkeypatch):
    from perfbot.measuring import shards
    from tests.test_shards import TWO

    monkeypatch.setattr(shards, "visible_gpus", lambda: TWO)
    base_env = _environment(tmp_path / "env-a", 1.0)
    head_env = _environment(tmp_path / "env-b", 1.0, "DIE_AT_SAMPLE = 3\nDIE_ON_GPU = 'GPU-bbb'\n")
    result = _ab(
        repo, tmp_path / "ab", "--triton-env", f"base={base_env}", "--triton-env", f"head={head_env}", "--gpus", "2"
    )
    assert result.exit_code == 2, result.output  # it runs the subject's code, which can end it: refused
    assert "GPU 1: NVIDIA H200: the head worker ended (exit 9) before it answered" in " ".join(result.output.split())


def _standin_triton(tmp_path: Path, cache: Path) -> tuple[Path, str, str]:
    """A stand-in Triton repository whose two commits hold a speed module, 1.0 then 1.03, and a
    cache where each commit's wheel lies as `perfbot triton build` leaves it, its record beside
    it: an A/B installs each into its own environment. The wheels are written here, not built
    with pip (two CPU-seconds a commit); tests/test_triton_build.py builds for real."""
    source = tmp_path / "triton-src"
    source.mkdir()
    setup = "from setuptools import setup\nsetup(name='standin', version='0.1', py_modules=['perfbot_test_speed'])\n"
    (source / "setup.py").write_text(setup)
    shas = []
    for scale in (1.0, 1.03):
        module = f"SCALE = {scale}\n"
        (source / "perfbot_test_speed.py").write_text(module)
        _git(source, "init", "-q") if not shas else None
        _git(source, "add", "-A")
        _git(source, "commit", "-qm", f"scale {scale}")
        shas.append(_git(source, "rev-parse", "HEAD"))
        _cached_wheel(cache / shas[-1], {"perfbot_test_speed.py": module}, shas[-1])
    return source, shas[0], shas[1]


def _cached_wheel(entry: Path, files: dict[str, str], commit: str) -> None:
    """A pure-Python wheel of `files` and its record, in the cache entry of `commit`, as
    `perfbot triton build` leaves them."""
    info = "standin-0.1.dist-info"
    files = {
        **files,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: standin\nVersion: 0.1\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    entry.mkdir(parents=True)
    wheel = entry / "standin-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    triton_build.write_record(wheel, commit)


def _pin(repo: Path, sha: str) -> None:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text()
    old = text.split('triton-commit = "')[1].split('"')[0]
    pyproject.write_text(text.replace(old, sha))


@pytest.mark.slow
def test_a_moved_triton_pin_builds_both_commits_and_measures_each_with_its_own(repo: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    source, slow_free, slower = _standin_triton(tmp_path, cache)  # built ahead: no network in CI
    _pin(repo, slow_free)
    _git(repo, "commit", "-qam", "pin the base's Triton")
    _pin(repo, slower)
    _git(repo, "commit", "-qam", "move the pin")
    out = tmp_path / "ab"
    result = CliRunner().invoke(
        perfbot,
        [
            "ab",
            "HEAD~1",
            "--project",
            str(repo),
            "--suite",
            "tiny",
            "--kernel",
            "fused",
            "--samples",
            "12",
            "--out-dir",
            str(out),
            "--triton-source",
            str(source),
            "--triton-cache",
            str(cache),
        ],
    )
    assert result.exit_code == 1, result.output
    base, head = results.load(out / "base.json"), results.load(out / "head.json")
    assert (base.environment.triton_commit, head.environment.triton_commit) == (slow_free, slower)
    assert head.settings.triton_commits == {"base": slow_free, "head": slower}
    assert "triton_commit" in (out / "comment.md").read_text()  # the difference is shown
    assert all((cache / "envs" / sha / "perfbot_test_speed.py").is_file() for sha in (slow_free, slower))


def test_a_moved_pin_without_a_way_to_get_both_tritons_is_refused(repo: Path, tmp_path: Path):
    _pin(repo, "1" * 40)
    _git(repo, "commit", "-qam", "move the pin")
    result = CliRunner().invoke(
        perfbot, ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--out-dir", str(tmp_path / "ab")]
    )
    assert result.exit_code == 2
    assert "pins Triton" in result.output and "--triton-source" in result.output


def test_a_dry_run_says_which_triton_each_side_gets_or_refuses_as_the_run_would(repo: Path):
    _pin(repo, "1" * 40)
    _git(repo, "commit", "-qam", "move the pin")
    dry = ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--dry-run"]
    refused = CliRunner().invoke(perfbot, dry)
    assert refused.exit_code == 2 and "pins Triton" in refused.output and "--triton-source" in refused.output
    planned = CliRunner().invoke(perfbot, [*dry, "--triton-source", "https://example.invalid/triton.git"])
    assert planned.exit_code == 0, planned.output
    assert "both built from https://example.invalid/triton.git" in planned.output  # nothing built: a dry run


@pytest.mark.slow
def test_a_worker_that_dies_is_refused_naming_how_with_its_log(repo: Path, tmp_path: Path):
    """A worker runs a side's code, which can end it (os._exit, a crash): refused, exit 2."""
    base_env = _environment(tmp_path / "env-a", 1.0)
    head_env = _environment(tmp_path / "env-b", 1.0, "DIE_AT_SAMPLE = 5\n")
    out = tmp_path / "ab"
    result = _ab(repo, out, "--triton-env", f"base={base_env}", "--triton-env", f"head={head_env}")
    assert result.exit_code == 2, result.output
    assert "the head worker ended (exit 9) before it answered: (nothing on stderr)" in result.output
    assert not (out / "head.json").exists()  # nothing half-measured is written


@pytest.mark.parametrize(
    "args, words",
    [
        (["--triton-env", "side=/tmp"], "base=DIR or head=DIR"),
        (["--triton-env", "base=/no/such/dir"], "no such directory"),
    ],
)
def test_bad_triton_env(repo: Path, tmp_path: Path, args, words):
    result = _ab(repo, tmp_path / "ab", *args)
    assert result.exit_code == 2 and words in result.output


def test_triton_options_belong_to_the_ab_command(repo: Path):
    result = CliRunner().invoke(
        perfbot, ["run", "--project", str(repo), "--suite", "tiny", "--triton-env", "base=/tmp"]
    )
    assert result.exit_code == 2 and "No such option '--triton-env'" in result.output


def test_the_worker_answers_bad_requests_with_an_error_not_a_crash(repo: Path, tmp_path: Path):
    # A worker forked from this process runs the loop a fresh interpreter runs (worker.serve),
    # without its import of PyTorch; a fresh one answers a bad request in
    # test_a_worker_leaves_ctrl_c_to_its_coordinator.
    requests = '{"op": "nonsense"}\n{"op": "sample", "key": "x"}\n{"op": "sample"}\n{"op": "quit"}\n'
    with (tmp_path / "log").open("w+") as log:
        forked = worker_sides._Forked(repo / "kernels", "head", None, log)
        forked.requests.write(requests)
        forked.requests.close()
        lines = forked.replies.read().splitlines()
        forked.replies.close()
        assert forked.wait(timeout=120) == 0 and len(lines) == 3
    assert "unknown request 'nonsense'" in lines[0] and "no captured benchmark 'x'" in lines[1]
    # An error of perfbot's own (here a request without its argument): its kind, and where it was raised.
    error = json.loads(lines[2])
    assert error["exit"] == 3 and error["error"].startswith("TypeError: ")
    assert re.search(r"\(raised at worker\.py:\d+\)$", error["error"]), error


def test_an_unexpected_error_names_the_line_that_raised_it_not_perfbots_caller():
    """errors.unexpected: the innermost frame, here json's own decoder two calls below ours."""
    from perfbot.errors import unexpected

    try:
        json.loads("{")
    except ValueError as error:
        said = unexpected(error)
    assert said.startswith("JSONDecodeError: Expecting property name")
    assert re.search(r"\(raised at decoder\.py:\d+\)$", said), said
    assert unexpected(RuntimeError("never raised")) == "RuntimeError: never raised"


def test_a_worker_draws_the_second_ab_afresh(gpu, project: Path, monkeypatch):
    # The confirming A/B comes with the next seed; a worker that kept the first A/B's sides would
    # repeat its inputs and placements.
    from perfbot.measuring import measure, planning
    from tests.test_runner_cpu import _subject

    monkeypatch.setattr(measure, "L2Flush", lambda: None)
    monkeypatch.setattr(measure, "time_once", lambda captured, flush: 1.0)
    subject = _subject(project)
    (case,) = planning.single_cases([subject.suites["tiny"]])[:1]
    side = worker._Side(project / "kernels", "base")
    side.hello()
    first = planning.RunSettings(samples=10).to_wire()
    side.prepare(worker.suite_json(case), first)
    kept = side.local
    side.prepare(worker.suite_json(case), first)
    assert side.local is kept  # the same A/B, case after case
    side.prepare(worker.suite_json(case), planning.RunSettings(samples=10, seed=1).to_wire())
    assert side.local is not kept and side.local.settings.seed == 1


# A worker busy with a request that does not end, ignoring SIGINT as a real worker does.
BUSY_WORKER = (
    sys.executable,
    "-c",
    "import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.stdin.readline(); time.sleep(600)",
)


def test_ctrl_c_in_the_coordinator_stops_a_busy_worker_at_once(tmp_path: Path):
    import time

    started_at = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with worker_sides.workers({"base": (tmp_path, None, None)}, command=BUSY_WORKER) as started:
            process = started["base"]._process
            started["base"]._requests.write("{}\n")  # now it is busy
            started["base"]._requests.flush()
            raise KeyboardInterrupt  # Ctrl-C, while waiting for its answer
    assert process.poll() is not None
    assert time.monotonic() - started_at < 20  # not the minute a worker gets to finish on a plain stop


def test_a_forked_worker_stopped_while_another_thread_waits_on_it_ends_once_for_both(
    repo: Path, tmp_path: Path, monkeypatch
):
    """On Ctrl-C the coordinator kills a worker and waits on it while the thread that asked it sees
    it end and waits too (shards.py): one reaps it, and the other must not ask the kernel again,
    whose ECHILD would replace the KeyboardInterrupt (the exit 130 of tests/test_shards.py's
    Ctrl-C tests). The real waitpid, its window between reaping and noting it held open."""
    import os
    import threading
    import time

    waitpid = os.waitpid

    def slow_to_note(pid: int, options: int) -> tuple[int, int]:
        reaped = waitpid(pid, options)
        if reaped[0]:
            time.sleep(0.3)
        return reaped

    with (tmp_path / "log").open("w+") as log:
        forked = worker_sides._Forked(repo / "kernels", "head", None, log)  # idle, waiting for requests
        monkeypatch.setattr(os, "waitpid", slow_to_note)
        seen = []
        other = threading.Thread(target=lambda: seen.append(forked.wait(timeout=30)))
        other.start()
        forked.kill()
        killed = forked.wait(timeout=30)
        other.join()
        forked.requests.close()
        forked.replies.close()
    assert killed == -9 and seen == [-9]


def test_a_worker_leaves_ctrl_c_to_its_coordinator(tmp_path: Path):
    """SIGINT reaches the whole process group; the worker goes on until the coordinator stops it
    (here: the end of its requests)."""
    import signal
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "perfbot.measuring.worker", "--kernels", str(tmp_path), "--side", "base"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write('{"op": "nope"}\n')  # answered once it serves, its handler set
        process.stdin.flush()
        assert "unknown request" in process.stdout.readline()
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert process.poll() is None, process.communicate()[1]
        _, stderr = process.communicate("", timeout=30)  # no more requests: it ends on its own
        assert process.returncode == 0 and "KeyboardInterrupt" not in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_the_heads_worker_runs_the_bases_autotune_pick_and_a_confirming_round_the_first_rounds(tmp_path: Path):
    # tests/cpu_worker.py tunes each side to its own pick: the base BLOCK 16, the head BLOCK 64.
    from tests.autotuned import autotuned_repository

    root = autotuned_repository(tmp_path / "repo")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    # The head's environment 3% slower on scale alone: its rows fail, confirmed; torch's are the
    # A/A of two environments at the same speed, which passes. One run checks both, as each A/B of
    # two environments starts two fresh interpreters.
    base_env = _environment(tmp_path / "env-a", 1.0)
    head_env = _environment(tmp_path / "env-b", 1.03, "IMPLEMENTATIONS = ('scale',)\n")
    out = tmp_path / "ab"
    arguments = ["ab", "HEAD", "--project", str(root), "--suite", "quick", "--kernel", "scale", "--kernel", "torch"]
    tritons = ["--triton-env", f"base={base_env}", "--triton-env", f"head={head_env}"]
    result = CliRunner().invoke(perfbot, [*arguments, *ONE_CASE, "--samples", "12", *tritons, "--out-dir", str(out)])
    assert result.exit_code == 1, result.output
    base, head = (results.load(out / f"{side}.json") for side in ("base", "head"))
    samples = {b.key: b.samples_ms for b in base.benchmarks}
    assert len(head.benchmarks) == 2  # each pair timed until decided, both sides alike
    assert all(len(b.samples_ms) >= 12 and len(b.samples_ms) == len(samples[b.key]) for b in head.benchmarks)
    assert head.failures == []
    assert [p.config["BLOCK"] for b in base.benchmarks for p in b.autotune] == [16]  # scale's; torch has none
    for bench in (b for b in head.benchmarks if b.kernel == "scale"):
        [pick] = bench.autotune
        assert (pick.config["BLOCK"], pick.origin, pick.tuned["BLOCK"]) == (16, "pinned", 64)
        assert pick.pinned_to == "the base's pick"
    assert "the head's own tuning picked BLOCK=64" in (out / "comment.md").read_text()
    comparison = json.loads((out / "comparison.json").read_text())
    assert comparison["missing"] == []
    rows = {row["benchmark"]["kernel"]: row for row in comparison["comparisons"]}
    assert rows.keys() == {"scale", "torch"}
    assert rows["torch"]["verdict"] == "unchanged" and not rows["torch"]["fails"], rows["torch"]["reason"]
    confirmed = "confirmed by a second interleaved round (at the first round's autotune configs"
    assert rows["scale"]["fails"] and confirmed in rows["scale"]["reason"], rows["scale"]["reason"]


@pytest.mark.parametrize("command", ["run", pytest.param("ab", marks=pytest.mark.slow)])
def test_where_a_gpu_is_visible_run_and_ab_measure_in_a_fresh_interpreter(
    repo: Path, tmp_path: Path, monkeypatch, command: str
):
    """A fork inherits whatever of CUDA perfbot's process touched, and CUDA does not survive a
    fork: where a GPU is visible the worker of `run` and of an A/B of one Triton is started anew
    (here tests/cpu_worker.py, for python -m perfbot.measuring.worker), and measures as a fork
    does, a round at a time."""
    monkeypatch.setattr(worker_sides, "may_fork", lambda: False)  # as where a GPU is visible
    monkeypatch.setattr(worker_sides, "_Forked", None)  # a fork would fail the command
    if command == "ab":
        result = _ab(repo, tmp_path / "ab")
        assert result.exit_code == 0, result.output
        head = results.load(tmp_path / "ab" / "head.json")
    else:
        out = tmp_path / "run.json"
        args = ["run", "--project", str(repo), "--suite", "tiny", "--samples", "10", "--out", str(out)]
        result = CliRunner().invoke(perfbot, args)
        assert result.exit_code == 0, result.output
        head = results.load(out)
    assert {b.kernel for b in head.benchmarks} >= {"fused", "eager"}
    # The method an in-process run named: a stored baseline's timing compares equal.
    assert head.settings.timing == runner.LocalSides.timing
