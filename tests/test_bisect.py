"""`perfbot bisect` on git repositories generated here: a measured "speed" per commit with
noise, build failures, and commands that log every call (to count builds and measurements)."""

import json
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.measuring import triton_build

MEASURE = """
import os, pathlib, random, sys
log = pathlib.Path(os.environ["BISECT_LOG"])
calls = log.read_text().count("measure " + os.environ["PERFBOT_BISECT_COMMIT"]) if log.exists() else 0
with log.open("a") as handle:
    handle.write("measure " + os.environ["PERFBOT_BISECT_COMMIT"] + "\\n")
speed, noise = map(float, pathlib.Path("speed.txt").read_text().split())
rng = random.Random(os.environ["PERFBOT_BISECT_COMMIT"] + str(calls))
for _ in range(15):
    print(f"{speed * (1 + noise * rng.gauss(0, 1)):.6f}")
# The commit's compiled kernels, handed back as `perfbot sample` hands back its benchmark's.
compiled, handed = pathlib.Path("compiled.json"), os.environ.get("PERFBOT_BISECT_COMPILED")
if compiled.exists() and handed:
    pathlib.Path(handed).write_text(compiled.read_text())
"""
BUILD = """
import os, pathlib, sys
with open(os.environ["BISECT_LOG"], "a") as handle:
    handle.write("build " + os.environ["PERFBOT_BISECT_COMMIT"] + "\\n")
if pathlib.Path("BROKEN").exists():
    sys.exit("error: does not compile")
"""

# What runs the two commands above, once per probe: this interpreter by its path, without
# site-packages (they need only the standard library). A `python3` looked up on PATH may be a
# version manager's shell script that costs ten times the start of Python itself.
PYTHON = f"{shlex.quote(sys.executable)} -S"


def _git(repo: Path, *args: str) -> str:
    # Fixed dates: the same history gets the same SHAs, so the seeded noise is the same every run.
    env = {
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def history(
    tmp_path: Path,
    speeds: list[float],
    noise: float = 0.01,
    broken: tuple[int, ...] = (),
    compiled: list[str] | None = None,
) -> tuple[Path, list[str]]:
    """One commit per speed (ms); commits in `broken` do not build. `compiled[i]`, if given, is
    the text commit i's measure command hands back as its compiled kernels.

    Every commit is written by one `git fast-import` (`git add` and `git commit` took three git
    processes a commit), as `git commit` writes it: the same objects, so the same SHAs."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    branch = _git(repo, "symbolic-ref", "HEAD")
    signature = b"t <t@t> 1767225600 +0000"  # user t, at _git's dates
    stream = []
    for index, speed in enumerate(speeds):
        files = {"build.py": BUILD, "measure.py": MEASURE, "speed.txt": f"{speed} {noise}\n"}
        files["version.txt"] = f"{index}\n"  # every commit changes something
        if compiled is not None:
            files["compiled.json"] = compiled[index]
        if index in broken:
            files["BROKEN"] = "x"
        stream += [b"commit " + branch.encode(), b"author " + signature, b"committer " + signature]
        stream += [_data(f"commit {index}\n"), b"deleteall"]  # the tree is these files alone
        stream += [b"M 100644 inline " + name.encode() + b"\n" + _data(text) for name, text in files.items()]
    imported = subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"\n".join(stream) + b"\n")
    assert imported.returncode == 0
    _git(repo, "reset", "-q", "--hard")  # the last commit checked out, as committing leaves it
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    assert len(shas) == len(speeds)
    return repo, shas


def _data(text: str) -> bytes:
    """fast-import's exact-length data block."""
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw


def run_bisect(repo: Path, good: str, bad: str, tmp_path: Path, *extra: str, monkeypatch=None):
    return CliRunner().invoke(
        perfbot,
        [
            "bisect",
            "--repo",
            str(repo),
            "--good",
            good,
            "--bad",
            bad,
            "--build",
            f"{PYTHON} build.py",
            "--measure",
            f"{PYTHON} measure.py",
            "--state",
            str(tmp_path / "state.json"),
            *extra,
        ],
    )


@pytest.fixture(autouse=True)
def log(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("BISECT_LOG", str(path))
    return path


def _calls(log: Path, kind: str) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines() if line.startswith(kind)] if log.exists() else []


def test_finds_a_step_slowdown_frugally_and_leaves_the_working_copy_alone(tmp_path: Path, log: Path):
    speeds = [1.0] * 19 + [1.05] * 13  # commit 19 is 5% slower, 1% noise
    repo, shas = history(tmp_path, speeds)
    (repo / "notes.txt").write_text("uncommitted work\n")
    head, status = _git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")
    result = run_bisect(repo, shas[0], shas[-1], tmp_path, "--out-markdown", str(tmp_path / "bisect.md"))
    assert result.exit_code == 0, result.output
    assert f"first bad commit: {shas[19]}" in result.output
    measured = set(_calls(log, "measure"))
    assert len(measured) <= math.ceil(math.log2(31)) + 2 + 1  # about log2(N) plus the two ends
    assert (_git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")) == (head, status)
    assert (repo / "notes.txt").read_text() == "uncommitted work\n"
    assert _git(repo, "worktree", "list").count("\n") == 0  # every worktree removed
    report = (tmp_path / "bisect.md").read_text()
    assert f"first bad commit {shas[19][:12]}" in report and "| `" in report


def test_unbuildable_commits_next_to_the_culprit_are_skipped_not_blamed(tmp_path: Path, log: Path):
    speeds = [1.0] * 16 + [1.05] * 16
    repo, shas = history(tmp_path, speeds, broken=(14, 17, 18))
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 0, result.output
    assert f"first bad commit: {shas[16]}" in result.output
    assert "skipped" in result.output
    assert shas[17] in _calls(log, "build")  # probed, failed to build, skipped
    assert not set(_calls(log, "measure")) & {shas[14], shas[17], shas[18]}  # never measured, so never blamed


def test_when_unbuildable_commits_hide_the_culprit_it_says_which_could_be(tmp_path: Path):
    speeds = [1.0] * 10 + [1.05] * 6
    repo, shas = history(tmp_path, speeds, broken=(10,))
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 3
    assert f"one of {shas[10][:12]}, {shas[11][:12]}" in result.output


def test_no_slowdown_in_the_range_is_refused_with_both_medians(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0] * 8)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 2
    assert "not significantly slower" in result.output and "medians" in result.output


def test_a_slowdown_smaller_than_the_noise_is_refused(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0] * 4 + [1.003] * 4, noise=0.03)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 2 and "not significantly slower" in result.output


def test_an_interrupted_bisect_resumes_without_rebuilding_or_remeasuring(tmp_path: Path, log: Path):
    speeds = [1.0] * 21 + [1.05] * 11
    repo, shas = history(tmp_path, speeds)
    first = run_bisect(repo, shas[0], shas[-1], tmp_path, "--max-probes", "3")
    assert first.exit_code == 3 and "run the same command again" in first.output
    done_before = _calls(log, "measure")
    assert len(done_before) == 3
    state = json.loads((tmp_path / "state.json").read_text())
    assert set(state["probes"]) == set(done_before)
    second = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert second.exit_code == 0, second.output
    assert f"first bad commit: {shas[21]}" in second.output
    builds = _calls(log, "build")
    assert len(builds) == len(set(builds))  # no commit built twice
    assert set(_calls(log, "measure")[3:]).isdisjoint(done_before)


def test_a_range_that_is_not_monotonic_is_reported(tmp_path: Path):
    # Two steps: 1.00 -> 1.04 at commit 8, -> 1.08 at commit 24. Bisect finds the earlier one and
    # reports the commits it saw between the ends.
    speeds = [1.0] * 8 + [1.04] * 16 + [1.08] * 8
    repo, shas = history(tmp_path, speeds, noise=0.005)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 0, result.output
    assert "slower than good, faster than bad): range not monotonic, the slowdown comes in steps" in result.output
    assert f"first bad commit: {shas[8]}" in result.output


def test_a_tiny_significant_difference_is_not_called_non_monotonic(tmp_path: Path):
    # The culprit is 0.4% slower than the later bad commits, significant with this little noise,
    # but far under a quarter of the 5% step (seen on the H200 in the bisect demo).
    speeds = [1.0] * 8 + [1.054] + [1.05] * 7
    repo, shas = history(tmp_path, speeds, noise=0.0005)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 0, result.output
    assert f"first bad commit: {shas[8]}" in result.output
    assert "not monotonic" not in result.output


def test_a_faster_commit_inside_the_range_is_reported(tmp_path: Path):
    speeds = [1.0] * 4 + [0.9] * 4 + [1.0] * 4 + [1.05] * 4
    repo, shas = history(tmp_path, speeds, noise=0.005)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path)
    assert result.exit_code == 0, result.output
    assert "faster than the good end: range not monotonic" in result.output


@pytest.mark.parametrize(
    "args,words",
    [
        (["--good", "nope"], "'nope' is not a commit"),
        (["--bad", "HEAD~40"], "is not a commit"),
    ],
)
def test_unknown_revisions(tmp_path: Path, args, words):
    repo, shas = history(tmp_path, [1.0, 1.1, 1.2])
    good, bad = shas[0], shas[-1]
    merged = {"--good": good, "--bad": bad, **dict(zip(args[::2], args[1::2], strict=False))}
    result = run_bisect(repo, merged["--good"], merged["--bad"], tmp_path)
    assert result.exit_code == 2 and words in result.output


def test_good_must_be_an_ancestor_of_bad(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0, 1.1, 1.2])
    result = run_bisect(repo, shas[-1], shas[0], tmp_path)
    assert result.exit_code == 2 and "not an ancestor" in result.output


def test_other_bad_input(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0, 1.1])
    result = CliRunner().invoke(
        perfbot, ["bisect", "--repo", str(tmp_path / "nowhere"), "--good", "a", "--bad", "b", "--measure", "true"]
    )
    assert result.exit_code == 2
    result = CliRunner().invoke(
        perfbot, ["bisect", "--repo", str(repo), "--good", shas[0], "--bad", shas[1], "--build", "true"]
    )
    assert result.exit_code == 2 and "--build needs --measure" in result.output
    garbage = CliRunner().invoke(
        perfbot,
        [
            "bisect",
            "--repo",
            str(repo),
            "--good",
            shas[0],
            "--bad",
            shas[1],
            "--measure",
            "echo fast",
            "--state",
            str(tmp_path / "s.json"),
        ],
    )
    assert garbage.exit_code == 2 and "cannot be measured" in garbage.output and "'fast'" in garbage.output
    (tmp_path / "other.json").write_text(
        json.dumps({"version": 1, "repo": "x", "good": "a" * 40, "bad": "b" * 40, "recipe": "r", "probes": {}})
    )
    other = run_bisect(repo, shas[0], shas[1], tmp_path, "--state", str(tmp_path / "other.json"))
    assert other.exit_code == 2 and "another bisect" in other.output
    (tmp_path / "forged.json").write_text(
        json.dumps({"version": 1, "repo": "x", "good": "a", "bad": "b", "recipe": "r", "probes": {}})
    )
    forged = run_bisect(repo, shas[0], shas[1], tmp_path, "--state", str(tmp_path / "forged.json"))
    assert forged.exit_code == 2 and "good: String should match pattern" in forged.output
    assert "delete it to start over" in forged.output and forged.output.count("\n") == 1


# The real kernel: it imports triton.language, which the stand-in Triton lacks (stub_geglu.py does
# not). Slow: it builds and installs both ends of the stand-in Triton.
@pytest.mark.parametrize("project", [pytest.param("real", marks=pytest.mark.slow)], indirect=True)
def test_triton_mode_builds_each_end_once_into_its_own_environment(tmp_path: Path, project: Path):
    """Without --measure, --repo is Triton: here a stand-in repository, built for real. The
    stand-in has no triton.language, so the kernels do not import under it: `perfbot sample`
    refuses each end (exit 2), and bisect reports them unusable, after building and installing
    both ends, each into its own environment."""
    from tests.test_triton_build import standin

    repo, good, _broken = standin(tmp_path, "new")
    _git(repo, "checkout", "-q", good)
    (repo / "triton" / "extra.py").write_text("X = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "second good")
    bad = _git(repo, "rev-parse", "HEAD")
    cache = tmp_path / "cache"
    result = CliRunner().invoke(
        perfbot,
        [
            "bisect",
            "--repo",
            str(repo),
            "--good",
            good,
            "--bad",
            bad,
            "--project",
            str(project),
            "--triton-cache",
            str(cache),
            "--no-build-isolation",
            "--state",
            str(tmp_path / "state.json"),
        ],
    )
    assert result.exit_code == 2 and "cannot be measured" in result.output, result.output
    assert "the package does not import: No module named 'triton.language'" in result.output
    assert "Traceback" not in result.output
    for sha in (good, bad):
        assert triton_build.cached_wheel(cache, sha) is not None, sha
        assert (cache / "envs" / sha / "triton" / "__init__.py").is_file()


def _outcome(tmp_path: Path):
    from perfbot.jobs import bisect_outcome

    return bisect_outcome.load(tmp_path / "outcome.json")


def test_the_outcome_file_names_the_culprit_with_every_probe(tmp_path: Path):
    speeds = [1.0] * 11 + [1.05] * 5
    repo, shas = history(tmp_path, speeds)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path, "--out-json", str(tmp_path / "outcome.json"))
    assert result.exit_code == 0, result.output
    outcome = _outcome(tmp_path)
    assert (outcome.result, outcome.first_bad, outcome.candidates) == ("culprit", shas[11], [shas[11]])
    assert (outcome.good, outcome.bad, outcome.range_size) == (shas[0], shas[-1], 16)
    assert outcome.message == f"first bad commit: {shas[11]}"
    probed = {p.sha: p for p in outcome.probes}
    assert [p.sha for p in outcome.probes] == [s for s in shas if s in probed]  # oldest first
    assert probed[shas[0]].verdict == "good" and probed[shas[11]].verdict == "bad"
    assert probed[shas[11]].subject == "commit 11" and probed[shas[11]].samples == 15
    assert 1.04 < probed[shas[-1]].median_ms < 1.06


def test_the_outcome_file_says_when_the_step_does_not_reproduce(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0] * 8)
    result = run_bisect(repo, shas[0], shas[-1], tmp_path, "--out-json", str(tmp_path / "outcome.json"))
    assert result.exit_code == 2 and "not significantly slower" in result.output
    outcome = _outcome(tmp_path)
    assert (outcome.result, outcome.first_bad, outcome.candidates) == ("not-reproduced", None, [])
    assert outcome.message.startswith(f"bad {shas[-1][:12]} is not significantly slower than good {shas[0][:12]}")
    assert [p.sha for p in outcome.probes] == [shas[0], shas[-1]]  # the two ends, measured


def test_the_outcome_file_names_no_culprit_when_unbuildable_commits_hide_it(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0] * 10 + [1.05] * 6, broken=(10,))
    result = run_bisect(repo, shas[0], shas[-1], tmp_path, "--out-json", str(tmp_path / "outcome.json"))
    assert result.exit_code == 3
    outcome = _outcome(tmp_path)
    assert (outcome.result, outcome.first_bad, outcome.candidates) == ("no-culprit", None, [shas[10], shas[11]])
    assert outcome.message in result.output  # the line the bisect ended on
    assert next(p for p in outcome.probes if p.sha == shas[10]).note.startswith("build exited 1")


def test_the_outcome_file_says_why_a_bisect_failed(tmp_path: Path):
    repo, shas = history(tmp_path, [1.0, 1.1, 1.2])
    result = run_bisect(repo, shas[-1], shas[0], tmp_path, "--out-json", str(tmp_path / "outcome.json"))
    assert result.exit_code == 2
    outcome = _outcome(tmp_path)
    assert (outcome.result, outcome.good, outcome.bad) == ("failed", shas[-1], shas[0])
    assert "not an ancestor" in outcome.message and outcome.probes == []


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie that no one has reaped yet does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_ctrl_c_ends_the_measure_commands_children_too(tmp_path: Path):
    """Ctrl-C reaches perfbot alone here (the measure command runs in a session of its own): the
    bisect exits 130, and the command's processes, a shell's `sleep` included, end with it."""
    from tests.test_cli import _interrupted

    repo, shas = history(tmp_path, [1.0, 2.0])
    pid_file = tmp_path / "sleep.pid"
    measure = f"sleep 100 & echo $! > {pid_file}; wait"
    argv = ["bisect", "--repo", str(repo), "--good", shas[0], "--bad", shas[1], "--measure", measure]
    done = _interrupted([*argv, "--state", str(tmp_path / "state.json")], lambda: pid_file.exists())
    assert done.returncode == 130, done.stderr
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _alive(pid)
    if left:
        os.kill(pid, 9)  # the test's own leftover, not the next test's
    assert not left, f"the measure command's sleep ({pid}) outlived perfbot"


def test_the_triton_mode_hands_sample_the_benchmark_as_it_was_named(tmp_path: Path):
    from perfbot.commands.bisect import sample_arguments
    from tests.helpers import parsed

    named = {"--family": "norm", "--suite": "pr", "--case": None, "--kernel": "copy"}
    arguments = sample_arguments(tmp_path, 20, named, ("mode=a",))
    assert arguments == [
        "--project", str(tmp_path), "--samples", "20", "--family", "norm", "--suite", "pr", "--kernel", "copy",
        "--variant", "mode=a",
    ]  # fmt: skip
    with parsed(("sample",), arguments) as context:  # what sample takes
        given = context.params
    assert (given["family"], given["suite_name"], given["case_name"], given["kernel"]) == ("norm", "pr", None, "copy")
    assert given["variants"] == ("mode=a",) and given["samples"] == 20
