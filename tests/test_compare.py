"""The decision: verdicts per benchmark, exit codes, environments, and the statistics' promises."""

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.cli import perfbot
from perfbot.deciding import comparison, stats
from perfbot.deciding.compare import Judgement, compare, judge_paired, judge_unpaired
from perfbot.deciding.comparison import summarize
from perfbot.deciding.standing import tally
from perfbot.deciding.thresholds import Override, Rule, load_policy
from perfbot.errors import BadInput
from perfbot.records import results
from perfbot.records.run import Benchmark, Environment, Failure, Results, Settings
from tests.conftest import ROOT
from tests.helpers import make_results

POLICY = load_policy(ROOT / "thresholds.yaml")


def verdicts(report):
    return {(c.current.kernel, c.current.case): (c.verdict, c.fails) for c in report.comparisons}


def test_the_same_code_measured_twice_is_unchanged():
    report = compare(make_results(seed=1), make_results(seed=2), POLICY)
    assert set(verdicts(report).values()) == {("unchanged", False)}
    assert not report.fails
    assert summarize(report).headline.startswith("✅")
    assert math.isclose(report.geomean_ratio, 1.0, abs_tol=0.01)


def test_a_ten_percent_slowdown_fails():
    report = compare(make_results(seed=1), make_results({("fused", "gemma-2b"): 1.10}, seed=2), POLICY)
    assert verdicts(report)[("fused", "gemma-2b")] == ("regression", True)
    assert sum(c.fails for c in report.comparisons) == 1
    assert report.fails and summarize(report).headline.startswith("❌")
    failing = next(c for c in report.comparisons if c.fails)
    assert 1.08 < failing.estimate.low < 1.10 < failing.estimate.high < 1.12
    assert failing.q_value < 0.01


def test_a_slowdown_between_warn_and_fail_is_reported_without_failing():
    report = compare(make_results(seed=1), make_results({("fused", "gemma-2b"): 1.04}, seed=2), POLICY)
    assert verdicts(report)[("fused", "gemma-2b")] == ("regression", False)
    assert not report.fails
    assert summarize(report).headline.startswith("⚠️")


def test_an_improvement():
    report = compare(make_results(seed=1), make_results({("gemm", "t5-v1.1-xl"): 0.9}, seed=2), POLICY)
    assert verdicts(report)[("gemm", "t5-v1.1-xl")] == ("improvement", False)


def test_too_few_samples_is_inconclusive_and_says_what_to_do():
    report = compare(make_results(seed=1, n=5), make_results(seed=2, n=5), POLICY)
    assert {c.verdict for c in report.comparisons} == {"inconclusive"}
    assert "--samples 10" in report.comparisons[0].reason
    assert not report.fails


def test_noise_that_hides_a_possible_regression_is_inconclusive():
    report = compare(
        make_results(seed=1, n=10, noise=0.08),
        make_results({("fused", "gemma-2b"): 1.03}, seed=2, n=10, noise=0.08),
        POLICY,
    )
    verdict = next(c for c in report.comparisons if (c.current.kernel, c.current.case) == ("fused", "gemma-2b"))
    assert verdict.verdict == "inconclusive"
    assert "--samples 20" in verdict.reason


def test_the_interleaved_policy_catches_one_percent():
    base = make_results(seed=1, noise=0.002)
    head = make_results({("fused", "gemma-2b"): 1.01}, seed=2, noise=0.002)
    assert verdicts(compare(base, head, POLICY))[("fused", "gemma-2b")][1] is False  # across runs: under 6%
    ab = Settings(ab_run="run-1")
    report = compare(replace(base, settings=ab), replace(head, settings=ab), POLICY)
    assert report.interleaved
    assert verdicts(report)[("fused", "gemma-2b")] == ("regression", True)


def _stepped(ms: float, seed: int) -> list[float]:
    """30 samples whose clock steps 5% slower from round 15 on, as seen on the H200 (the step
    is shared by both sides of an interleaved run; the per-sample jitter is not)."""
    jitter = np.random.default_rng(seed).standard_normal(30)
    return [ms * (1.05 if i >= 15 else 1.0) * (1 + 0.002 * jitter[i]) for i in range(30)]


def _interleaved_pair(slowdown: float) -> tuple[Results, Results]:
    bench = Benchmark(
        kernel="fused",
        shape={"M": 8192, "K": 2048, "N": 5120},
        dtype="bfloat16",
        samples_ms=[],
        suite="pr",
        case="t5-v1.1-xl",
    )

    def side(samples):
        return Results(
            environment=Environment(gpu_name="NVIDIA H200"),
            settings=Settings(ab_run="run-1"),
            benchmarks=[replace(bench, samples_ms=samples)],
        )

    return side(_stepped(0.53, seed=1)), side(_stepped(0.53 * slowdown, seed=2))


def test_interleaved_samples_are_paired_so_a_clock_step_during_the_run_cancels():
    base, head = _interleaved_pair(1.01)
    [paired] = compare(base, head, POLICY).comparisons
    assert (paired.verdict, paired.fails) == ("regression", True)
    assert 1.005 < paired.estimate.low < 1.01 < paired.estimate.high < 1.015
    # The same samples unpaired: the step swamps the 1% and only a wide interval is left.
    unpaired = compare(replace(base, settings=Settings()), replace(head, settings=Settings()), POLICY).comparisons[0]
    assert unpaired.estimate.high - unpaired.estimate.low > 0.03
    base, head = _interleaved_pair(1.0)
    [same] = compare(base, head, POLICY).comparisons
    assert (same.verdict, same.fails) == ("unchanged", False)


def _stepped_between_the_sides() -> tuple[Results, Results]:
    """An A/B of one benchmark 0.5% slower in every round, whose clock stepped 6% slower between
    the two sides of round 15 (base: from round 16 on, head: from 15 on): the two medians fall on
    either side of the step, 3.5% apart."""
    base, head = _interleaved_pair(1.0)
    rounds = np.random.default_rng(3).normal(1.0, 0.001, 30)
    clock = [1.06 if i >= 16 else 1.0 for i in range(30)]
    base_ms = [0.53 * c * r for c, r in zip(clock, rounds, strict=True)]
    head_ms = [ms * 1.005 * (1.06 if i == 15 else 1.0) for i, ms in enumerate(base_ms)]
    return (
        replace(base, benchmarks=[replace(base.benchmarks[0], samples_ms=base_ms)]),
        replace(head, benchmarks=[replace(head.benchmarks[0], samples_ms=head_ms)]),
    )


def test_the_change_shown_is_the_estimate_the_verdict_rests_on(tmp_path):
    """A paired row's change is its median per-round ratio, the figure its reason gives, not the
    ratio of its two medians; so is the comparison file's and the geometric mean's; an unpaired
    row's is the ratio of medians."""
    base, head = _stepped_between_the_sides()
    report = compare(base, head, POLICY)
    [row] = report.comparisons
    medians = 100 * (row.current.median_ms / row.baseline.median_ms - 1)
    assert medians > 3 and row.change_percent == pytest.approx(0.5, abs=0.01)
    assert row.paired and row.reason.startswith(f"{row.change_percent:+.2f}%,")
    assert report.geomean_ratio == pytest.approx(1 + row.change_percent / 100)
    path = tmp_path / "comparison.json"
    path.write_text(comparison.to_text(summarize(report)))
    [loaded] = comparison.load(path).comparisons
    assert (loaded.change_percent, loaded.paired) == (row.change_percent, True)
    unpaired = compare(replace(base, settings=Settings()), replace(head, settings=Settings()), POLICY)
    assert not unpaired.comparisons[0].paired
    assert unpaired.comparisons[0].change_percent == pytest.approx(medians)


def test_a_row_with_too_few_rounds_shows_its_median_per_round_ratio():
    """Too few rounds for a verdict: no estimate, and the change is still the paired statistic
    in an A/B (the median per-round ratio), the ratio of medians between two runs."""
    base, head = _stepped_between_the_sides()
    few = [
        replace(side, benchmarks=[replace(side.benchmarks[0], samples_ms=side.benchmarks[0].samples_ms[12:20])])
        for side in (base, head)
    ]
    [row] = compare(*few, POLICY).comparisons
    assert row.verdict == "inconclusive" and row.estimate is None and row.paired
    assert row.change_percent == pytest.approx(0.5, abs=0.01)
    [apart] = compare(*(replace(side, settings=Settings()) for side in few), POLICY).comparisons
    assert apart.change_percent == pytest.approx(100 * (apart.current.median_ms / apart.baseline.median_ms - 1))
    assert apart.change_percent > 3


def test_both_judges_return_one_verdict_type():
    base, head = _interleaved_pair(1.01)
    rule = POLICY.rule_for("fused", "", "bfloat16", "NVIDIA H200", {}, True)
    paired = judge_paired(base.benchmarks[0].samples_ms, head.benchmarks[0].samples_ms, rule)
    estimate = stats.RatioEstimate(1.2, 1.15, 1.25, 0.95)
    unpaired = judge_unpaired(estimate, 1e-6, 1e-6, POLICY.defaults, 30)
    assert isinstance(paired, Judgement) and isinstance(unpaired, Judgement)
    assert (paired.verdict, paired.fails) == ("regression", True)
    assert (unpaired.verdict, unpaired.fails, unpaired.estimate) == ("regression", True, estimate)


def test_a_report_and_its_comparison_file_fail_and_count_alike(tmp_path):
    """One rule decides `fails` and counts the rows, for the report and for its file read back."""
    changed = make_results({("fused", "gemma-2b"): 1.10, ("gemm", "t5-v1.1-xl"): 0.9}, seed=2)
    missing = Failure(kernel="fused", shape={"M": 1, "K": 8, "N": 8}, dtype="bfloat16", reason="missing")
    unchanged = compare(make_results(seed=1), make_results(seed=2), POLICY)
    for report in (unchanged, compare(make_results(seed=1), changed, POLICY), replace(unchanged, missing=(missing,))):
        path = tmp_path / "comparison.json"
        path.write_text(comparison.to_text(summarize(report)))
        summary = comparison.load(path)
        assert report.fails == summary.fails
        assert tally(report.comparisons) == tally(summary.comparisons)
    assert not unchanged.fails and replace(unchanged, missing=(missing,)).fails


def test_added_removed_and_wrong_results():
    base = make_results(seed=1)
    head = make_results(seed=2)
    extra = replace(head.benchmarks[0], kernel="fused-v2")
    failure = Failure(kernel="fused", shape={"M": 1, "K": 8, "N": 8}, dtype="bfloat16", reason="wrong result")
    assert head.benchmarks[1].kernel == "eager"  # a baseline: dropping it is no one's to judge
    head = replace(head, benchmarks=[head.benchmarks[0], *head.benchmarks[2:], extra], failures=[failure])
    report = compare(base, head, POLICY)
    assert [b.kernel for b in report.added] == ["fused-v2"]
    assert [b.kernel for b in report.removed] == ["eager"] and not report.missing
    assert report.fails and "wrong result" in summarize(report).headline


def _without(results: Results, kernel: str, case: str) -> Results:
    kept = [b for b in results.benchmarks if (b.kernel, b.case) != (kernel, case)]
    assert len(kept) == len(results.benchmarks) - 1
    return replace(results, benchmarks=kept)


def test_a_benchmark_the_base_has_under_test_and_the_head_lacks_fails_as_missing():
    """The base's results name the subject's own (`settings.under_test`): one of those the head
    did not time fails the check, named, and is not listed as merely removed; a baseline the head
    did not time is removed and fails nothing."""
    base = make_results(seed=1)
    head = _without(_without(make_results(seed=2), "fused", "gemma-2b"), "eager", "t5-v1.1-xl")
    report = compare(base, head, POLICY)
    assert [(m.kernel, m.case) for m in report.missing] == [("fused", "gemma-2b")]
    assert "under test in the baseline's results" in report.missing[0].reason
    assert [(b.kernel, b.case) for b in report.removed] == [("eager", "t5-v1.1-xl")]
    assert report.fails and not any(c.fails for c in report.comparisons)
    assert summarize(report).headline.startswith("❌ 1 benchmark(s) the base judges missing on the head")
    # Only the base's list decides: the head's results naming no kernel of their own change nothing.
    unnamed = replace(head, settings=replace(head.settings, under_test=[]))
    assert [(m.kernel, m.case) for m in compare(base, unnamed, POLICY).missing] == [("fused", "gemma-2b")]
    assert not compare(replace(base, settings=replace(base.settings, under_test=[])), head, POLICY).missing


def test_what_the_head_did_not_time_on_purpose_or_got_wrong_is_not_missing():
    """A suite the head's run did not time, an implementation it left out on purpose, or one that
    gave a wrong result (failing as such) is not missing; a suite it timed is."""
    base = make_results(seed=1)
    head = _without(make_results(seed=2), "fused", "gemma-2b")  # of suite "models"
    assert compare(base, head, POLICY).missing
    other_suite = replace(head, settings=replace(head.settings, suites=["decode"]))
    assert not compare(base, other_suite, POLICY).missing
    same_suite = replace(head, settings=replace(head.settings, suites=["decode", "models"]))
    assert [m.case for m in compare(base, same_suite, POLICY).missing] == ["gemma-2b"]
    skipped = replace(head, settings=replace(head.settings, skipped_kernels=["fused"]))
    assert not compare(base, skipped, POLICY).missing
    dropped = next(b for b in base.benchmarks if (b.kernel, b.case) == ("fused", "gemma-2b"))
    wrong = Failure(kernel="fused", shape=dropped.shape, dtype=dropped.dtype, reason="wrong result", suite="models")
    report = compare(base, replace(head, failures=[wrong]), POLICY)
    assert not report.missing and not report.removed and report.fails


def test_what_the_head_run_was_cut_down_to_by_name_bounds_what_is_missing():
    """A head run cut down with --case, --kernel or --variant times only that: the base's other
    benchmarks are outside it, not missing; a benchmark inside it is."""
    base = make_results(seed=1)
    head = _without(make_results(seed=2), "fused", "gemma-2b")
    settings = head.settings
    for cut, missing in [
        ({"chosen_cases": ["t5-v1.1-xl"]}, False),
        ({"chosen_cases": ["gemma-2b"]}, True),
        ({"chosen_kernels": ["eager"]}, False),
        ({"chosen_kernels": ["fused"]}, True),
        ({"chosen_variants": {"approximate": ["tanh"]}}, False),
    ]:
        cut_head = replace(head, settings=replace(settings, **cut))
        assert bool(compare(base, cut_head, POLICY).missing) is missing, cut


def test_the_bases_results_say_what_may_fail():
    """A head whose results stop naming its kernel as the subject's own (it names a baseline
    instead) is judged by the base's list: its slowdown fails; the baseline's does not."""
    base = make_results(seed=1)
    head = make_results({("fused", "gemma-2b"): 1.10, ("eager", "t5-v1.1-xl"): 1.10}, seed=2)
    moved = replace(head, settings=replace(head.settings, under_test=["eager"]))
    rows = {(c.current.kernel, c.current.case): c.fails for c in compare(base, moved, POLICY).comparisons}
    assert rows[("fused", "gemma-2b")] and not rows[("eager", "t5-v1.1-xl")]
    # Base results that predate the list: the current run's decides.
    legacy = replace(base, settings=replace(base.settings, under_test=[]))
    rows = {(c.current.kernel, c.current.case): c.fails for c in compare(legacy, moved, POLICY).comparisons}
    assert not rows[("fused", "gemma-2b")] and rows[("eager", "t5-v1.1-xl")]


def test_different_gpu_models_are_refused_unless_forced():
    base = make_results(seed=1)
    head = make_results(seed=2, environment={"gpu_name": "NVIDIA A100-SXM4-80GB"})
    with pytest.raises(BadInput, match="--force"):
        compare(base, head, POLICY)
    report = compare(base, head, POLICY, force=True)
    assert [d.field for d in report.differences] == ["gpu_name"]


def test_environment_and_config_differences_are_shown():
    base = make_results(seed=1)
    head = make_results(
        seed=2, environment={"driver": "590.10", "triton": "3.7.0"}, config={"path": "tma", "BLOCK_N": 64}
    )
    report = compare(base, head, POLICY)
    assert {(d.field, d.baseline, d.current) for d in report.differences} == {
        ("driver", "580.159.04", "590.10"),
        ("triton", "3.6.0", "3.7.0"),
    }
    fused = [c for c in report.comparisons if c.current.kernel == "fused"]
    assert all(c.config_change == "BLOCK_N 128 → 64" for c in fused)
    assert all(c.config_change is None for c in report.comparisons if c.current.kernel != "fused")


def test_a_baseline_timed_another_way_is_noted(tmp_path):
    old_way = "one CUDA-graph replay per sample, L2 flushed before each, implementations interleaved"
    base = replace(make_results(seed=1), settings=Settings(timing=old_way))
    head = replace(make_results(seed=2), settings=Settings(timing="another way"))
    report = compare(base, head, POLICY)
    assert [(d.field, d.baseline, d.current) for d in report.differences] == [("timing", old_way, "another way")]
    files = [tmp_path / "base.json", tmp_path / "head.json"]
    results.save(base, files[0])
    results.save(head, files[1])
    comment = tmp_path / "comment.md"
    CliRunner().invoke(perfbot, ["compare", *map(str, files), "--out-markdown", str(comment)])
    assert "environment differs: timing one CUDA-graph replay" in comment.read_text()


def test_q_values_are_never_below_p_values():
    report = compare(make_results(seed=1), make_results({("fused", "gemma-2b"): 1.02}, seed=2), POLICY)
    assert all(c.q_value >= c.p_value for c in report.comparisons)


# Property tests of the decision rule.
sample_lists = st.lists(st.floats(min_value=0.01, max_value=100.0, allow_nan=False), min_size=10, max_size=60)


def _single(samples_ms: list[float]) -> Results:
    bench = Benchmark(kernel="fused", shape={"M": 1, "K": 2, "N": 3}, dtype="bfloat16", samples_ms=samples_ms)
    return Results(environment=Environment(gpu_name="X"), settings=Settings(), benchmarks=[bench])


@settings(max_examples=60, deadline=None)
@given(sample_lists)
def test_identical_sample_sets_never_give_a_regression(samples_ms):
    report = compare(_single(samples_ms), _single(list(samples_ms)), POLICY)
    assert report.comparisons[0].verdict != "regression"
    assert not report.fails


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=1.0, max_value=1.005), min_size=10, max_size=60),
    st.floats(min_value=0.05, max_value=20.0),
)
def test_a_uniform_ten_percent_slowdown_with_low_noise_always_fails(jitter, scale):
    baseline = [scale * j for j in jitter]
    current = [1.10 * value for value in baseline]
    comparison = compare(_single(baseline), _single(current), POLICY).comparisons[0]
    assert (comparison.verdict, comparison.fails) == ("regression", True)


# The command line.
def _save(tmp_path: Path, name: str, loaded: Results) -> Path:
    path = tmp_path / name
    results.save(loaded, path)
    return path


def test_cli_exit_codes_and_reports(tmp_path: Path, monkeypatch):
    base = _save(tmp_path, "base.json", make_results(seed=1))
    same = _save(tmp_path, "same.json", make_results(seed=2))
    slow = _save(tmp_path, "slow.json", make_results({("fused", "gemma-2b"): 1.10}, seed=2))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    runner = CliRunner()
    assert runner.invoke(perfbot, ["compare", str(base), str(same)]).exit_code == 0
    result = runner.invoke(
        perfbot,
        [
            "compare",
            str(base),
            str(slow),
            "--out-markdown",
            str(tmp_path / "c.md"),
            "--out-json",
            str(tmp_path / "c.json"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "FAIL regression" in result.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["fails"] and [c["benchmark"]["kernel"] for c in data["comparisons"] if c["fails"]] == ["fused"]
    assert (tmp_path / "c.md").read_text().startswith("**perfbot:** ❌")
    assert summary.read_text().count("<!-- perfbot-report -->") == 2


def test_cli_fails_a_head_missing_what_the_base_has_under_test(tmp_path: Path):
    """Both forms of `perfbot compare`: the missing benchmark fails the check (exit 1), named on
    the terminal, in the comment and in the comparison file, and not listed as removed."""
    base = make_results(seed=1)
    head = _save(tmp_path, "head.json", _without(make_results(seed=2), "fused", "gemma-2b"))
    store = str(tmp_path / "store")
    runner = CliRunner()
    stored = runner.invoke(perfbot, ["baseline", "update", str(_save(tmp_path, "base.json", base)), "--store", store])
    assert stored.exit_code == 0, stored.output
    markdown, data = tmp_path / "c.md", tmp_path / "c.json"
    written = ["--out-markdown", str(markdown), "--out-json", str(data), "--overwrite"]
    for args in ([str(tmp_path / "base.json"), str(head)], ["--store", str(store), str(head)]):
        result = runner.invoke(perfbot, ["compare", *args, *written])
        assert result.exit_code == 1, result.output
        assert "missing on the head: fused · models/gemma-2b · M=8192 K=2048 N=16384 bfloat16" in result.output
        assert "removed" not in result.output
        summary = json.loads(data.read_text())
        assert summary["fails"] and [m["benchmark"]["case"] for m in summary["missing"]] == ["gemma-2b"]
        assert summary["removed"] == []
        assert "Missing on the head" in markdown.read_text()
    whole = _save(tmp_path, "whole.json", make_results(seed=2))
    assert runner.invoke(perfbot, ["compare", "--store", str(store), str(whole)]).exit_code == 0


def test_cli_refuses_other_gpus_without_force(tmp_path: Path):
    base = _save(tmp_path, "base.json", make_results(seed=1))
    other = _save(tmp_path, "other.json", make_results(seed=2, environment={"gpu_name": "NVIDIA A100"}))
    result = CliRunner().invoke(perfbot, ["compare", str(base), str(other)])
    assert result.exit_code == 2 and "--force" in result.output
    assert CliRunner().invoke(perfbot, ["compare", str(base), str(other), "--force"]).exit_code == 0


def _results_text(**changes) -> str:
    data = make_results(seed=1).to_json()
    data.update(changes)
    return json.dumps(data)


def _with_first_samples(values) -> str:
    data = make_results(seed=1).to_json()
    data["benchmarks"][0]["samples_ms"] = values
    return json.dumps(data).replace("Infinity", "1e999")


def _duplicated() -> str:
    data = make_results(seed=1).to_json()
    data["benchmarks"].append(data["benchmarks"][0])
    return json.dumps(data)


@pytest.mark.parametrize(
    "content,words",
    [
        (_results_text()[:200], "not valid JSON"),
        (_results_text(format=7), "results format 7"),
        (
            _with_first_samples([1.0, float("nan")]).replace("NaN", "NaN"),
            "samples_ms[1]: should be a finite number, got nan",
        ),
        (_with_first_samples([1.0, -1.0]), "-1.0"),
        (_with_first_samples([]), "samples_ms: List should have at least 1 item"),
        (_duplicated(), "repeats benchmarks[0]"),
        (None, "no such file"),
        ("DIR", "is a directory"),
    ],
    ids=["truncated", "format", "nan", "negative", "empty", "duplicate", "missing", "directory"],
)
def test_cli_malformed_inputs_exit_2(tmp_path: Path, content, words):
    good = _save(tmp_path, "good.json", make_results(seed=1))
    bad = tmp_path / "bad.json"
    if content == "DIR":
        bad.mkdir()
    elif content is not None:
        bad.write_text(content)
    for args in ([str(good), str(bad)], [str(bad), str(good)]):
        result = CliRunner().invoke(perfbot, ["compare", *args])
        assert result.exit_code == 2, result.output
        assert words in result.output and "bad.json" in result.output
        assert "Traceback" not in result.output


def test_cli_argument_shapes(tmp_path: Path):
    good = _save(tmp_path, "good.json", make_results(seed=1))
    assert CliRunner().invoke(perfbot, ["compare", str(good)]).exit_code == 2
    assert CliRunner().invoke(perfbot, ["compare", "--store", str(tmp_path), str(good), str(good)]).exit_code == 2


def test_only_the_subjects_own_implementations_fail_the_check():
    """A baseline or a bound runs code the pull request does not change: its slowdown is reported,
    never failing (results that name the subject's own implementations)."""
    base = make_results(seed=1)
    head = make_results({("eager", "gemma-2b"): 1.10, ("fused", "t5-v1.1-xl"): 1.10}, seed=2)
    report = compare(base, head, POLICY)
    rows = {(c.current.kernel, c.current.case): c for c in report.comparisons}
    assert rows[("fused", "t5-v1.1-xl")].fails
    eager = rows[("eager", "gemma-2b")]
    assert eager.verdict == "regression" and not eager.fails and "never failing the check" in eager.reason
    legacy = compare(
        replace(base, settings=replace(base.settings, under_test=[])),
        replace(head, settings=replace(head.settings, under_test=[])),
        POLICY,
    )
    assert {(c.current.kernel, c.current.case) for c in legacy.comparisons if c.fails} == {
        ("fused", "t5-v1.1-xl"),
        ("eager", "gemma-2b"),
    }


# Rules that a mutation run found unpinned (issue 32).
def _row(report, kernel: str, case: str):
    return next(c for c in report.comparisons if (c.current.kernel, c.current.case) == (kernel, case))


def test_a_gpu_pattern_override_applies_to_the_gpu_the_current_run_was_measured_on():
    """thresholds.yaml rules matched by `gpu` (a shell pattern) are looked up with the current
    run's GPU name: an override for the H200 changes the H200's verdict, one for another GPU
    does not."""
    base, head = make_results(seed=1), make_results({("fused", "gemma-2b"): 1.10}, seed=2)
    assert _row(compare(base, head, POLICY), "fused", "gemma-2b").fails  # 10% is past the default 6%
    lenient = Override(match={"gpu": "NVIDIA H2*"}, changes={"fail_percent": 20.0})
    on_h200 = replace(POLICY, overrides=(*POLICY.overrides, lenient))
    row = _row(compare(base, head, on_h200), "fused", "gemma-2b")
    assert (row.verdict, row.fails, row.rule.fail_percent) == ("regression", False, 20.0)
    elsewhere = replace(POLICY, overrides=(*POLICY.overrides, replace(lenient, match={"gpu": "*A100*"})))
    assert _row(compare(base, head, elsewhere), "fused", "gemma-2b").fails


def test_a_significant_change_within_warn_percent_is_unchanged_not_an_improvement():
    """Improvement needs both: significant AND faster by more than warn_percent. A significant
    +2% (a slowdown, under the 3% warn threshold) is unchanged."""
    report = compare(make_results(seed=1), make_results({("fused", "gemma-2b"): 1.02}, seed=2), POLICY)
    row = _row(report, "fused", "gemma-2b")
    assert row.q_value < row.rule.alpha and 0 < row.change_percent < row.rule.warn_percent
    assert row.verdict == "unchanged" and "significant but within" in row.reason


def test_a_speedup_that_is_not_significant_is_not_an_improvement():
    """A speedup past warn_percent that the test cannot tell from noise is no improvement."""
    base = make_results(seed=1, n=10, noise=0.05)
    head = make_results({("gemm", "t5-v1.1-xl"): 0.95}, seed=5, n=10, noise=0.05)
    row = _row(compare(base, head, POLICY), "gemm", "t5-v1.1-xl")
    assert row.q_value >= row.rule.alpha and row.change_percent < -row.rule.warn_percent
    assert row.verdict == "unchanged" and "not significant" in row.reason


# Rules that scripts/mutation_check.py found unpinned (docs/method.md, "Tests that pin the decisions").
def _units(low: float, high: float) -> list[float]:
    """Twelve per-round ratios from `low` to `high`: at alpha 0.01 the fewest units whose interval
    can exclude anything, which is then their whole range (tests/test_stats.py)."""
    return np.linspace(low, high, 12).tolist()


def _paired(ratios: list[float], rule: Rule, block: int = 1) -> Judgement:
    return judge_paired([1.0] * len(ratios), ratios, rule, block)


def test_a_paired_interval_must_lie_wholly_past_a_threshold_to_decide():
    """An interval whose end lies exactly on +warn_percent is not surely slower, one on
    -warn_percent not surely faster, one on +fail_percent not surely under the slowdown to catch;
    a hundredth of a percent past each, it is. (The threshold is computed as judge_paired
    computes the interval's end, so that the two are equal to the last bit.)"""
    on = 100 * (1.02 - 1)
    slower, faster, around = _units(1.02, 1.03), _units(0.97, 0.98), _units(0.99, 1.02)
    assert _paired(slower, Rule(5.0, on, 0.01, 10)).verdict == "unchanged"
    assert _paired(slower, Rule(5.0, on - 0.01, 0.01, 10)).verdict == "regression"
    assert _paired(faster, Rule(5.0, on, 0.01, 10)).verdict == "unchanged"
    assert _paired(faster, Rule(5.0, on - 0.01, 0.01, 10)).verdict == "improvement"
    assert _paired(around, Rule(on, 0.5, 0.01, 10)).verdict == "inconclusive"
    assert _paired(around, Rule(on + 0.01, 0.5, 0.01, 10)).verdict == "unchanged"


def test_by_default_each_round_is_a_unit_and_rounds_past_the_last_whole_block_wait():
    rule = POLICY.rule_for("fused", "", "bfloat16", "NVIDIA H200", {}, True)
    rounds = judge_paired([1.0] * 12, _units(1.02, 1.03), rule)  # no block given
    assert rounds.verdict == "regression" and rounds.reason.endswith("after 12 rounds)")
    blocks = _paired([*np.repeat(_units(1.02, 1.03), 5).tolist(), 0.5, 0.5], rule, block=5)
    assert blocks.verdict == "regression" and blocks.reason.endswith("after 60 rounds in 12 blocks)")
    assert blocks.estimate == rounds.estimate  # the two odd rounds wait for their block


def test_a_sequential_run_that_did_not_record_its_blocks_is_judged_in_blocks_of_five():
    """Results of a sequential A/B written before block_rounds was recorded took five rounds a
    block; those that record it are judged in theirs."""
    base, head = _interleaved_pair(1.01)
    samples = np.repeat(_units(1.02, 1.03), 5) * 0.53

    def reason(block_rounds: int | None) -> str:
        settings = Settings(ab_run="run-1", stopping="until decided", block_rounds=block_rounds)
        sides = [
            replace(side, settings=settings, benchmarks=[replace(side.benchmarks[0], samples_ms=list(ms))])
            for side, ms in ((base, [0.53] * 60), (head, samples))
        ]
        return compare(*sides, POLICY).comparisons[0].reason

    assert reason(None).endswith("after 60 rounds in 12 blocks)")
    assert reason(4).endswith("after 60 rounds in 15 blocks)")


def test_an_undecided_paired_verdict_says_how_many_rounds_would_decide_it():
    """Width against the gap between the thresholds, the width shrinking as one over the root of
    the rounds: 12 rounds 2% wide against a 0.25% gap want 12 * 8^2 = 768. With too few rounds
    for any interval, more rounds; with no gap at all, no number of rounds."""
    rule = POLICY.rule_for("fused", "", "bfloat16", "NVIDIA H200", {}, True)
    assert (rule.fail_percent, rule.warn_percent) == (0.5, 0.25)
    wide = _paired(_units(0.99, 1.01), rule)
    assert wide.verdict == "inconclusive" and wide.reason.endswith(
        "2.00% wide against a 0.25% gap, about 768 rounds to decide"
    )
    few = _paired(_units(0.99, 1.01)[:6], rule)
    assert few.reason.endswith("reaches both +0.25% and +0.5%; more rounds would decide it")
    no_gap = _paired(_units(0.99, 1.01), replace(rule, warn_percent=0.5))
    assert no_gap.reason.endswith("no interval can lie between them (warn_percent >= fail_percent)")


def test_an_unpaired_verdict_needs_each_threshold_strictly_passed():
    """q equal to alpha is not significant; a slowdown of exactly warn_percent is no regression and
    one of exactly fail_percent does not fail; a speedup of exactly warn_percent is no improvement;
    an interval reaching exactly to fail_percent leaves a non-significant change unchanged. A
    hundredth past each, the verdict changes (the thresholds are computed as judge_unpaired
    computes the change, so that the two are equal to the last bit)."""

    def judged(ratio: float, q: float, rule: Rule, high: float | None = None) -> tuple[str, bool]:
        estimate = stats.RatioEstimate(ratio, ratio - 0.001, ratio + 0.001 if high is None else high, 0.95)
        judgement = judge_unpaired(estimate, q, q, rule, 30)
        return judgement.verdict, judgement.fails

    rule = Rule(6.0, 3.0, 0.01, 10)
    assert judged(1.10, 0.01, rule) == ("inconclusive", False)  # not significant, reaching past 6%
    assert judged(1.10, 0.0099, rule) == ("regression", True)
    warn = 100 * (1.03 - 1)
    assert judged(1.03, 1e-6, replace(rule, warn_percent=warn)) == ("unchanged", False)
    assert judged(1.03, 1e-6, replace(rule, warn_percent=warn - 0.01)) == ("regression", False)
    fail = 100 * (1.06 - 1)
    assert judged(1.06, 1e-6, replace(rule, fail_percent=fail)) == ("regression", False)
    assert judged(1.06, 1e-6, replace(rule, fail_percent=fail - 0.01)) == ("regression", True)
    speedup = -100 * (0.97 - 1)
    assert judged(0.97, 1e-6, replace(rule, warn_percent=speedup)) == ("unchanged", False)
    assert judged(0.97, 1e-6, replace(rule, warn_percent=speedup - 0.01)) == ("improvement", False)
    assert judged(1.0, 0.5, replace(rule, fail_percent=fail), high=1.06) == ("unchanged", False)
    assert judged(1.0, 0.5, replace(rule, fail_percent=fail - 0.01), high=1.06) == ("inconclusive", False)


def test_a_run_without_a_cuda_gpu_matches_no_gpu_pattern_but_the_empty_one():
    """Results measured without a CUDA GPU have no GPU name; the policy sees an empty one, so an
    override for NVIDIA's GPUs ("N*") leaves them alone."""
    base = make_results(seed=1, environment={"gpu_name": None})
    head = make_results({("fused", "gemma-2b"): 1.10}, seed=2, environment={"gpu_name": None})
    lenient = replace(POLICY, overrides=(Override(match={"gpu": "N*"}, changes={"fail_percent": 20.0}),))
    row = _row(compare(base, head, lenient), "fused", "gemma-2b")
    assert (row.rule.fail_percent, row.fails) == (6.0, True)


def test_a_row_timed_at_each_sides_own_picks_too_reports_the_tuning_s_effect_only_when_paired():
    """An A/B row whose sides were also timed at their own autotune picks (OwnPicks): the tuning's
    effect is judged on those samples, round by round, and a slower tuning fails the row even
    where the code's effect (the row's samples, at a common config) is none. Own-pick samples of
    unequal rounds cannot be paired: no tuning effect is judged from them."""
    from perfbot.records.autotune import OwnPicks

    base, head = _interleaved_pair(1.0)
    own = _stepped(0.53, seed=5)

    def with_own(side: Results, samples: list[float]) -> Results:
        return replace(side, benchmarks=[replace(side.benchmarks[0], own_picks=OwnPicks(samples_ms=samples))])

    [row] = compare(with_own(base, own), with_own(head, [ms * 1.03 for ms in own]), POLICY).comparisons
    assert row.tuning is not None and (row.tuning.verdict, row.tuning.fails) == ("regression", True)
    assert row.fails and row.reason.startswith("the tuning's effect fails")
    [shown] = summarize(compare(with_own(base, own), with_own(head, [ms * 1.03 for ms in own]), POLICY)).comparisons
    assert shown.tuning is not None and shown.tuning.ci == (row.tuning.estimate.low, row.tuning.estimate.high)
    [unpaired] = compare(with_own(base, own), with_own(head, own[:-1]), POLICY).comparisons
    assert unpaired.tuning is None and not unpaired.fails
