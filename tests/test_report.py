"""What people read, compared exactly with checked-in golden files
(regenerate with PERFBOT_UPDATE_GOLDEN=1 after a deliberate change, and review the diff)."""

import os
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from perfbot.compare import compare
from perfbot.comparison import summarize
from perfbot.report import MARKER, comment_markdown, compare_table, markdown_escape
from perfbot.thresholds import load_policy
from tests.conftest import ROOT
from tests.helpers import make_results

GOLDEN = Path(__file__).with_name("golden")
POLICY = load_policy(ROOT / "thresholds.yaml")


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PERFBOT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file"


def _report():
    base = make_results(seed=1)
    head = make_results(
        {("fused", "gemma-2b"): 1.10, ("gemm", "t5-v1.1-xl"): 0.90, ("eager", "gemma-7b-m16"): 1.04},
        seed=2,
        environment={"driver": "590.10"},
        config={"path": "tma", "BLOCK_N": 64},
    )
    head = replace(head, benchmarks=[*head.benchmarks[:-1], replace(head.benchmarks[-1], kernel="fused-v2")])
    return summarize(compare(base, replace(head, settings=replace(head.settings, samples=30)), POLICY))


def test_pr_comment_golden():
    _golden("comment.md", comment_markdown(_report()))


def test_terminal_table_golden():
    console = Console(width=170, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(compare_table(_report()))
    _golden("compare-table.txt", console.export_text())


def test_comment_starts_with_the_verdict_and_ends_with_the_marker():
    text = comment_markdown(_report())
    assert text.startswith("**perfbot:** ❌ 1 significant slowdown(s) beyond the threshold")
    assert text.rstrip("\n").endswith(MARKER)
    assert "<details><summary>" in text and "unchanged</summary>" in text


def test_names_from_files_cannot_break_the_table_or_forge_the_marker():
    hostile = "evil|name\n<!-- perfbot-report -->`x`*[link](http://x)"
    base = make_results(seed=1)
    head = make_results({("fused", "gemma-2b"): 1.10}, seed=2)

    def rename(r):
        return replace(
            r,
            benchmarks=[
                replace(b, kernel=hostile if b.kernel == "fused" else b.kernel, case=hostile) for b in r.benchmarks
            ],
        )

    text = comment_markdown(summarize(compare(rename(base), rename(head), POLICY)))
    assert text.count(MARKER) == 1
    table_rows = [line for line in text.splitlines() if line.startswith("| evil")]
    assert table_rows and all(line.count(" | ") == 7 for line in table_rows)  # 8 cells, no extra column
    assert "](http" not in text.replace("\\]", "")
    assert markdown_escape("a|b<c>") == "a\\|b&lt;c&gt;"


def test_a_huge_report_stays_under_githubs_limit_and_says_so():
    base = make_results(seed=1)

    def many(r, f):
        return replace(
            r,
            settings=replace(r.settings, under_test=[f"fused-{i}" for i in range(250)]),
            benchmarks=[
                replace(b, kernel=f"{b.kernel}-{i}", samples_ms=[s * f(i) for s in b.samples_ms])
                for i in range(250)
                for b in r.benchmarks
            ],
        )

    report = compare(many(base, lambda i: 1.0), many(make_results(seed=2), lambda i: 1.2 if i % 2 else 1.0), POLICY)
    text = comment_markdown(summarize(report))
    assert len(text) <= 65536
    assert "left out to stay under GitHub's comment limit" in text
    assert text.rstrip("\n").endswith(MARKER)
    assert text.startswith("**perfbot:** ❌")


def test_throttling_and_clock_drift_are_reported():
    base = make_results(seed=1)
    head = make_results(
        seed=2,
        environment={
            "throttled_rounds": 3,
            "throttle_reasons": ["sw_thermal_slowdown"],
            "clock_drift": "SM clock 1980 -> 1800 MHz (-9.1%) during the run",
        },
    )
    text = comment_markdown(summarize(compare(base, head, POLICY)))
    assert "current run: clocks drifted — SM clock 1980 -&gt; 1800 MHz" in text
    assert "3 timing round(s) while NVML reported throttling (sw\\_thermal\\_slowdown)" in text
