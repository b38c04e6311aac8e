"""The orchestration of `perfbot run` on the CPU: planning, checking, timing interleaved,
splitting an A/B run into its two sides, confirming a regression. Only the GPU's primitives are
replaced (CUDA-graph capture, CUDA-event timing, the no-GPU check); the kernels run for real,
the fused one as tests/stub_geglu.py's PyTorch stand-in (and, in the tests marked
ON_BOTH_SUBJECTS, as the real kernel in Triton's interpreter too). Timings come from a given
function of the benchmark, so the statistics downstream see known slowdowns."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.loading.package import load_subject
from perfbot.measuring import measure, planning, runner
from tests.conftest import ON_BOTH_SUBJECTS

TINY = """
tiny:
  about: small enough for the interpreter
  dtype: float16
  kernels: [fused, eager, gemm, copy]
  cases:
    - {name: odd, M: 33, K: 40, N: 24}
    - {name: square, M: 64, K: 64, N: 64}
"""


def _subject(project: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY)
    return load_subject(project / "kernels")


@ON_BOTH_SUBJECTS
def test_a_plain_run_checks_times_and_records(gpu, project: Path):
    subject = _subject(project)
    settings = planning.RunSettings(samples=10)
    steps = []
    results = runner.run(subject, [subject.suites["tiny"]], settings, on_progress=lambda label, n: steps.append(n))
    assert {(b.case, b.kernel) for b in results.benchmarks} == {
        (c, k) for c in ("odd", "square") for k in ("fused", "eager", "gemm", "copy")
    }
    assert all(len(b.samples_ms) == 10 and b.relative_error <= b.error_bound for b in results.benchmarks)
    assert results.failures == []
    assert sum(steps) == planning.progress_steps(planning.plan(subject, [subject.suites["tiny"]], settings), settings)
    assert results.environment.throttled_rounds == 0
    fused = next(b for b in results.benchmarks if b.kernel == "fused")
    assert fused.config["path"] == "pointer" and fused.throttled_samples == []


def test_case_picks_cases_across_the_chosen_suites(gpu, project: Path, tmp_path: Path):
    _subject(project)
    out = tmp_path / "one.json"
    result = CliRunner().invoke(
        perfbot,
        [
            "run",
            "--project",
            str(project),
            "--suite",
            "tiny",
            "--case",
            "square",
            "--kernel",
            "eager",
            "--samples",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    from perfbot.records import results

    assert {(b.case, b.kernel) for b in results.load(out).benchmarks} == {("square", "eager")}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def init_repo(project: Path) -> Path:
    """The project copy, with the tiny suite, as a git repository of one commit."""
    (project / "kernels" / "suites.yaml").write_text(TINY)
    # As in any Python repository: importing the kernels leaves bytecode that git should not see.
    (project / ".gitignore").write_text("__pycache__/\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "base")
    return project


@pytest.fixture
def repo(project: Path) -> Path:
    """The project copy as a git repository with two commits: base, then head."""
    init_repo(project)
    (project / "kernels" / "NOTES").write_text("head\n")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "head")
    return project


def _ab(repo: Path, out: Path, *extra: str):
    return CliRunner().invoke(
        perfbot,
        ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--samples", "12", "--out-dir", str(out), *extra],
    )


# One case, for an A/B whose every case's rows are judged alike: a second case pins nothing more,
# and costs the captures of every block again (on the real fused kernel, calls in Triton's
# interpreter: most of an A/B's CPU).
ONE_CASE = ("--case", "odd")


@ON_BOTH_SUBJECTS
def test_ab_of_identical_code_passes_and_writes_both_sides(gpu, repo: Path, tmp_path: Path):
    out = tmp_path / "ab"
    result = _ab(repo, out, *ONE_CASE)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["base.json", "comment.md", "comparison.json", "head.json"]
    comment = (out / "comment.md").read_text()
    assert "interleaved A/B thresholds" in comment and comment.startswith("**perfbot:** ✅")
    assert _git(repo, "worktree", "list").count("\n") == 0  # the worktree of the base is gone
    again = _ab(repo, out, *ONE_CASE)
    assert again.exit_code == 2 and "--overwrite" in again.output


def test_ab_regression_must_hold_in_a_second_round(gpu, repo: Path, tmp_path: Path):
    gpu.ms = lambda name, call: 1.02 if name == "head:fused" else 1.0  # 2%: over the 0.5% A/B threshold
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output
    assert "confirmed by a second interleaved round" in (tmp_path / "ab" / "comment.md").read_text()


def test_ab_slowdown_that_vanishes_in_the_second_round_does_not_fail(gpu, repo: Path, tmp_path: Path, monkeypatch):
    # Slow only until the check measures again: a passing hiccup.
    from perfbot.jobs import ab

    again = {"now": False}
    first_judgement = ab.confirm

    def confirm(report, policy, remeasure):
        again["now"] = True
        return first_judgement(report, policy, remeasure)

    monkeypatch.setattr(ab, "confirm", confirm)
    gpu.ms = lambda name, call: 1.02 if name == "head:fused" and not again["now"] else 1.0
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "ab" / "comment.md").read_text()
    assert "NOT confirmed by a second interleaved round" in comment
    # not "under the fail threshold", nor counted as significant: it was over it, once
    assert comment.startswith("**perfbot:** ⚠️ 2 slowdown(s) not confirmed by a second A/B, so not failing")  # two cases
    assert "| 🔺 regression, not confirmed |" in comment


@ON_BOTH_SUBJECTS
def test_ab_with_a_wrong_head_kernel(gpu, repo: Path, tmp_path: Path):
    geglu = repo / "kernels" / "geglu.py"
    right = "out = z1 * _gelu(z2, APPROXIMATE_TANH)"
    assert right in geglu.read_text()
    geglu.write_text(geglu.read_text().replace(right, right.replace("z1 * _gelu(z2", "z2 * _gelu(z1")))
    _git(repo, "commit", "-qam", "wrong head")
    result = _ab(repo, tmp_path / "ab", *ONE_CASE)
    assert result.exit_code == 1
    assert "wrong result" in (tmp_path / "ab" / "comment.md").read_text()


def test_ab_bad_revision(gpu, repo: Path, tmp_path: Path):
    result = CliRunner().invoke(
        perfbot, ["ab", "nope", "--project", str(repo), "--suite", "tiny", "--out-dir", str(tmp_path / "ab")]
    )
    assert result.exit_code == 2 and "'nope' is not a commit" in result.output


def test_ab_reports_the_longer_trend_without_failing_on_it(gpu, repo: Path, tmp_path: Path):
    from perfbot.records import results, store
    from tests.helpers import make_results

    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))  # an H200 baseline; this CPU run names no GPU
    result = _ab(repo, tmp_path / "ab", "--trend-store", str(directory))
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "ab" / "comment.md").read_text()
    assert "**Longer trend:** no comparison with a stored baseline" in comment
    assert results.load(tmp_path / "ab" / "head.json").settings.side == "head"


def test_a_kernel_that_cannot_be_captured_is_a_failure_not_a_crash(gpu, project: Path, monkeypatch):
    subject = _subject(project)
    capture = gpu.capture

    def refusing(fn, warmup_calls):
        if getattr(fn, "args", None) and fn.func.__name__ == "copy_weight":
            raise RuntimeError("operation not permitted when stream is capturing")
        return capture(fn, warmup_calls)

    monkeypatch.setattr(measure, "capture", refusing)
    results = runner.run(subject, [subject.suites["tiny"]], planning.RunSettings(samples=10))
    assert {f.kernel for f in results.failures} == {"copy"}
    assert all("cannot be captured in a CUDA graph" in f.reason for f in results.failures)
    assert {b.kernel for b in results.benchmarks} == {"fused", "eager", "gemm"}


def test_the_base_judges_a_head_that_loosens_its_own_thresholds(gpu, project: Path, tmp_path: Path):
    init_repo(project)
    base = _git(project, "rev-parse", "HEAD")
    thresholds = project / "thresholds.yaml"
    thresholds.write_text(thresholds.read_text().replace("fail_percent: 0.5", "fail_percent: 50"))
    assert "fail_percent: 50" in thresholds.read_text()
    (project / "kernels" / "suites.yaml").write_text(TINY.replace("    - {name: odd, M: 33, K: 40, N: 24}\n", ""))
    _git(project, "commit", "-qam", "head: loosen the thresholds, drop a case")
    head = _git(project, "rev-parse", "HEAD")
    _git(project, "checkout", "-q", base)  # the check runs in the base's checkout
    gpu.ms = lambda name, call: 1.02 if name == "head:fused" else 1.0
    out = tmp_path / "ab"
    result = CliRunner().invoke(
        perfbot,
        ["ab", base, head, "--project", str(project), "--suite", "tiny", "--samples", "12", "--out-dir", str(out)],
    )
    assert result.exit_code == 1, result.output  # judged by the base's 0.5%, not the head's 50%
    comment = (out / "comment.md").read_text()
    assert "thresholds.yaml differs between the two sides" in comment
    assert "interleaved.fail\\_percent: 0.5 → 50" in comment
    assert "The subject's declarations differ between the two sides" in comment
    assert "suite tiny: case odd only on the base, or changed" in comment  # and measured: the base decides
    rows = json.loads((out / "comparison.json").read_text())["comparisons"]
    assert "odd" in {row["benchmark"]["case"] for row in rows}
    from perfbot.records import results

    head_run = results.load(out / "head.json")
    assert head_run.settings.head == head and head_run.settings.against == base
    assert {b.case for b in head_run.benchmarks} == {"odd", "square"}  # the base's suite was measured
    assert _git(project, "worktree", "list").count("\n") == 0


def test_the_other_sides_missing_thresholds_are_named_without_a_temporary_path(tmp_path: Path):
    from perfbot.deciding.thresholds import load_policy
    from perfbot.jobs.ab import policy_change

    ours = Path(__file__).resolve().parents[1] / "thresholds.yaml"
    policy = load_policy(ours)
    assert policy_change(policy, tmp_path) == (
        "This check applied the thresholds.yaml of the checkout that ran it; the other side has none.",
    )
    (tmp_path / "thresholds.yaml").write_text("version: [")
    _, broken = policy_change(policy, tmp_path)
    assert broken.startswith(f"the other side's thresholds.yaml does not load: {tmp_path / 'thresholds.yaml'}: ")
    shutil.copy(ours, tmp_path / "thresholds.yaml")
    assert policy_change(policy, tmp_path) == ()


def test_run_measures_one_checkout_and_ab_two(gpu, repo: Path, tmp_path: Path):
    result = CliRunner().invoke(perfbot, ["run", "--project", str(repo), "--suite", "tiny", "--against", "HEAD"])
    assert result.exit_code == 2 and "No such option '--against'" in result.output


def test_suite_all_is_every_suite_and_a_case_two_suites_share_is_measured_once(gpu, project: Path, tmp_path: Path):
    (project / "kernels" / "suites.yaml").write_text(
        TINY + "again:\n  about: a repeat\n  dtype: float16\n  kernels: [eager, fused]\n  cases:\n"
        "    - {name: odd-again, M: 33, K: 40, N: 24}\n    - {name: other, M: 8, K: 16, N: 8}\n"
    )
    out = tmp_path / "all.json"
    args = ["run", "--project", str(project), "--suite", "all", "--kernel", "eager", "--samples", "10"]
    result = CliRunner().invoke(perfbot, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    from perfbot.records import results

    measured = sorted((b.suite, b.case) for b in results.load(out).benchmarks)
    # tiny times more implementations, so the shared shape stays there; `again` keeps its own case
    assert measured == [("again", "other"), ("tiny", "odd"), ("tiny", "square")]


def test_a_case_whose_time_ran_out_gets_a_second_turn_after_the_others(gpu, project: Path, monkeypatch):
    import random

    from perfbot.deciding.thresholds import load_policy
    from perfbot.measuring import sequential
    from perfbot.measuring.recording import Measurement
    from perfbot.measuring.sequential import PolicyRules, Stopping

    subject = _subject(project)
    noise = random.Random(1)
    # gemm's two sides spread by up to 40%: undecided within any share of the budget (3% could be
    # decided in the first turn on an idle machine, which times many fake rounds in 50 ms)
    gpu.ms = lambda name, call: 1.0 + (0.4 * noise.uniform(-1, 1) if name.endswith(":gemm") else 0.0)
    turns = []
    time_until_decided = sequential.time_until_decided

    def watched(case, *args, **kwargs):
        timings = time_until_decided(case, *args, **kwargs)
        turns.append((case.name, kwargs.get("earlier") is not None, len(timings.rounds)))
        return timings

    monkeypatch.setattr(sequential, "time_until_decided", watched)
    settings = planning.RunSettings(samples=12)
    stopping = Stopping(
        sequential.first_look(12, 0.01), 4000, 0.1, PolicyRules(load_policy(project / "thresholds.yaml"), "H200")
    )
    progress = []
    sides = runner.LocalSides({"base": subject, "head": subject}, settings)
    measured = runner.measure_sides(
        sides,
        Measurement([subject.suites["tiny"]], settings, stopping),
        lambda label, steps: progress.append((label, steps)),
    )
    assert [(name, again) for name, again, _ in turns] == [
        ("odd", False),
        ("square", False),
        ("odd", True),
        ("square", True),
    ]
    assert turns[2][2] > turns[0][2] and turns[3][2] > turns[1][2]  # the second turns went on sampling
    assert [label for label, _ in progress] == [
        "tiny/odd",
        "tiny/square",
        "tiny/odd, again",
        "tiny/odd",
        "tiny/square, again",
        "tiny/square",
    ]
    assert sum(steps for _, steps in progress) == planning.progress_steps([[1], [1]], settings, stopping)
    for side in ("base", "head"):  # recorded in the suite's order, once each, every sample kept
        benches = measured[side].benchmarks
        assert [(b.case, b.kernel) for b in benches] == [
            (c, k) for c in ("odd", "square") for k in ("fused", "eager", "gemm", "copy")
        ]
        rounds = {"odd": turns[2][2], "square": turns[3][2]}
        assert all(len(b.samples_ms) == rounds[b.case] for b in benches if b.kernel == "gemm")
    assert measured["head"].settings.block_rounds == measure.BLOCK_ROUNDS
