"""The headline counts by what decides (perfbot/deciding/standing.py): failing, slower under the
fail threshold, not confirmed by a second A/B, and the baselines' and bounds' rows apart, which
never fail. Each report is made by the real compare (and, for an A/B, the real confirm)."""

from dataclasses import replace

import pytest

from perfbot.deciding import comparison
from perfbot.deciding.compare import Report, compare
from perfbot.deciding.comparison import summarize
from perfbot.deciding.standing import standing, tally
from perfbot.deciding.thresholds import load_policy
from perfbot.jobs.ab import confirm, trend
from perfbot.records import store
from tests.conftest import ROOT
from tests.helpers import ab_sides, make_results

POLICY = load_policy(ROOT / "thresholds.yaml")


def _ab(first: dict[tuple[str, str], float], second: dict[tuple[str, str], float], **stepped) -> Report:
    """An A/B judged as `perfbot ab` judges it: failing rows measured again, with `second`'s slowdowns."""
    base, head = ab_sides(first, seed=1, **stepped)
    again = ab_sides(second, seed=2)
    return confirm(compare(base, head, POLICY), POLICY, lambda cases: again)


def _apart(slowdowns: dict[tuple[str, str], float]) -> Report:
    """Two separate runs (make_results: fused is under test, gemm a bound, eager a baseline)."""
    return compare(make_results(seed=1), make_results(slowdowns, seed=2), POLICY)


def _standings(report: Report) -> dict[tuple[str, str], tuple[str, str]]:
    return {(c.current.kernel, c.current.case): (standing(c), c.role) for c in report.comparisons}


def test_a_not_confirmed_row_and_a_bounds_row_are_counted_apart_from_the_failing_one():
    report = _ab(
        {("fused", "gemma-2b"): 1.02, ("fused", "gemma-7b-m16"): 1.03, ("gemm", "gemma-2b"): 1.005},
        {("fused", "gemma-7b-m16"): 1.03},
        stepped=("gemm", "gemma-2b"),
    )
    rows = _standings(report)
    assert rows[("fused", "gemma-7b-m16")] == ("failing", "under test")
    assert rows[("fused", "gemma-2b")] == ("not confirmed", "under test")
    assert rows[("gemm", "gemma-2b")] == ("slower", "bound")
    assert rows[("eager", "gemma-2b")] == ("unchanged", "baseline")
    counted = tally(report.comparisons)
    assert counted.own == {"failing": 1, "not confirmed": 1, "unchanged": 1}
    assert counted.others == {"slower": 1, "unchanged": 5}
    assert summarize(report).headline == (
        "❌ 1 significant slowdown(s) beyond the threshold (worst +2.9%) — 1 failing, 1 not confirmed, "
        "1 unchanged; baselines and bounds, which never fail: 1 regression, 5 unchanged; geometric mean ratio 1.006"
    )


def test_a_slowdown_the_second_round_does_not_confirm_is_no_significant_slowdown():
    report = _ab({("fused", "gemma-2b"): 1.02}, {})
    assert not report.fails
    headline = summarize(report).headline
    assert headline.startswith("⚠️ 1 slowdown(s) not confirmed by a second A/B, so not failing — 1 not confirmed, 2")
    assert "significant" not in headline and "slower" not in headline and "regression" not in headline


def test_a_confirmed_slowdown_under_the_fail_threshold_leads_and_the_unconfirmed_one_is_counted():
    """Between two runs a slowdown under the fail threshold is significant and does not fail; it
    leads over one an A/B did not confirm. Both are counted, each as what it is."""
    apart = summarize(_apart({("fused", "gemma-2b"): 1.04}))
    assert apart.headline.startswith(
        "⚠️ 1 significant slowdown(s) under the fail threshold — 1 slower under the fail threshold, 2 unchanged;"
    )
    unconfirmed = summarize(_ab({("fused", "gemma-2b"): 1.02}, {}))
    [row] = [r for r in unconfirmed.comparisons if r.confirmed is False]
    both = replace(apart, comparisons=[*apart.comparisons, row])
    assert both.headline.startswith(
        "⚠️ 1 significant slowdown(s) under the fail threshold — 1 slower under the fail threshold, 1 not confirmed"
    )


def test_a_slower_baseline_or_bound_never_leads_the_headline():
    """A baseline's or a bound's slowdown (or an undecided one) fails nothing and is counted
    apart: the subject's own rows decide the lead."""
    report = _apart({("eager", "gemma-2b"): 1.10, ("gemm", "t5-v1.1-xl"): 1.10})
    rows = _standings(report)
    assert rows[("eager", "gemma-2b")] == ("slower", "baseline")
    assert rows[("gemm", "t5-v1.1-xl")] == ("slower", "bound")
    assert summarize(report).headline.startswith(
        "✅ no significant slowdown — 3 unchanged; baselines and bounds, which never fail: 2 regression, 4 unchanged;"
    )
    undecided = _too_few(("eager", "gemma-2b"))
    assert _standings(undecided)[("eager", "gemma-2b")] == ("inconclusive", "baseline")
    assert tally(undecided.comparisons).own == {"unchanged": 3}
    assert summarize(undecided).headline.startswith("✅ no significant slowdown — 3 unchanged;")


def _too_few(benchmark: tuple[str, str]) -> Report:
    """Two separate runs with five samples of `benchmark` a side: too few for a verdict."""

    def cut(results):
        kept = [
            replace(b, samples_ms=b.samples_ms[:5]) if (b.kernel, b.case) == benchmark else b
            for b in results.benchmarks
        ]
        return replace(results, benchmarks=kept)

    return compare(cut(make_results(seed=1)), cut(make_results(seed=2)), POLICY)


def test_the_subjects_own_inconclusive_row_leads():
    undecided = _too_few(("fused", "gemma-2b"))
    assert _standings(undecided)[("fused", "gemma-2b")] == ("inconclusive", "under test")
    assert summarize(undecided).headline.startswith(
        "❔ no significant slowdown; 1 inconclusive — 2 unchanged, 1 inconclusive;"
    )


@pytest.mark.parametrize(
    "under_test,bounds,roles",
    [
        (["fused"], ["gemm"], {"fused": "under test", "gemm": "bound", "eager": "baseline"}),
        (["fused", "eager"], [], {"fused": "under test", "gemm": "baseline", "eager": "under test"}),
        ([], ["gemm"], {"fused": "under test", "gemm": "under test", "eager": "under test"}),  # judged whole
    ],
)
def test_each_rows_role_comes_from_the_bases_results(under_test, bounds, roles):
    def named(results):
        return replace(results, settings=replace(results.settings, under_test=under_test, bounds=bounds))

    # The head's results name nothing of their own: only the base's say.
    head = replace(make_results(seed=2), settings=replace(make_results(seed=2).settings, under_test=[], bounds=[]))
    report = compare(named(make_results(seed=1)), head, POLICY)
    assert {c.current.kernel: c.role for c in report.comparisons} == roles


def test_the_comparison_file_keeps_what_decides(tmp_path):
    """Read back, a comparison file counts as the report did: each row's role and whether a second
    round confirmed it are in the file."""
    report = _ab(
        {("fused", "gemma-2b"): 1.02, ("fused", "gemma-7b-m16"): 1.03, ("gemm", "gemma-2b"): 1.005},
        {("fused", "gemma-7b-m16"): 1.03},
        stepped=("gemm", "gemma-2b"),
    )
    path = tmp_path / "comparison.json"
    path.write_text(comparison.to_text(summarize(report)))
    loaded = comparison.load(path)
    assert loaded.headline == summarize(report).headline
    assert tally(loaded.comparisons) == tally(report.comparisons)
    assert sorted((r.role, r.confirmed) for r in loaded.comparisons if r.verdict == "regression") == [
        ("bound", None),
        ("under test", False),
        ("under test", True),
    ]


def test_the_longer_trend_counts_the_subjects_own_slowdowns_only(tmp_path):
    """`perfbot ab --trend-store`'s line against the stored baseline: a slower baseline or bound
    is not counted among the subject's slowdowns."""
    store.add(tmp_path, make_results(seed=1))
    head = make_results(
        {("fused", "gemma-2b"): 1.10, ("eager", "t5-v1.1-xl"): 1.10, ("gemm", "gemma-2b"): 1.10}, seed=2
    )
    line = trend(tmp_path, head, POLICY)
    assert ", 1 significant slowdown(s) of the subject's own across runs" in line
