"""What people read, compared exactly with checked-in golden files
(regenerate with PERFBOT_UPDATE_GOLDEN=1 after a deliberate change, and review the diff)."""

import functools
import os
import re
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from perfbot.deciding import compare as compare_module
from perfbot.deciding.compare import compare
from perfbot.deciding.comparison import summarize
from perfbot.deciding.thresholds import load_policy
from perfbot.errors import BadInput
from perfbot.jobs.ab import confirm
from perfbot.output.markdown import MARKER, markdown_escape
from perfbot.output.verdicts import (
    GITHUB_COMMENT_LIMIT,
    GpuReport,
    _shares,
    comment_markdown,
    compare_table,
    gpu_comment_markdown,
)
from tests.conftest import ROOT
from tests.helpers import ab_sides, make_results

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
    console = Console(width=180, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(compare_table(_report()))
    _golden("compare-table.txt", console.export_text())


def _ab_report():
    """An A/B as the PR check judges it: fused 2% slower on gemma-2b, not again in the second
    round; 3% slower on the decode case, again; 3% faster on t5; gemm, a bound, 0.5% slower
    across a clock step."""
    first = {("fused", "gemma-2b"): 1.02, ("fused", "gemma-7b-m16"): 1.03, ("fused", "t5-v1.1-xl"): 0.97}
    first[("gemm", "gemma-2b")] = 1.005
    base, head = ab_sides(first, seed=1, stepped=("gemm", "gemma-2b"))
    second = ab_sides({("fused", "gemma-7b-m16"): 1.03}, seed=2)
    return summarize(confirm(compare(base, head, POLICY), POLICY, lambda cases: second))


def test_ab_comment_golden():
    _golden("comment-ab.md", comment_markdown(_ab_report()))


def test_ab_terminal_table_golden():
    console = Console(width=190, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(compare_table(_ab_report()))
    _golden("compare-table-ab.txt", console.export_text())


def test_an_ab_row_not_judged_on_paired_rounds_says_its_change_is_of_medians():
    """Sides of unequal length cannot pair up: that row is judged on its medians, and its change
    in the A/B's table (headed "paired change") says so; the paired rows' do not."""
    base, head = ab_sides({("fused", "gemma-2b"): 1.02}, seed=1)
    short = [replace(b, samples_ms=b.samples_ms[:-1]) if b.kernel == "fused" else b for b in head.benchmarks]
    summary = summarize(compare(base, replace(head, benchmarks=short), POLICY))
    assert summary.interleaved and {r.paired for r in summary.comparisons} == {True, False}
    text = comment_markdown(summary)
    assert "| paired change |" in text
    lines = [line for line in text.split("\n") if line.startswith("| fused · ")]
    assert len(lines) == 3 and all("% (of medians) |" in line for line in lines)
    assert not [line for line in text.split("\n") if line.startswith("| eager · ") and "of medians" in line]
    console = Console(width=200, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(compare_table(summary))
    assert console.export_text().count("% (of medians)") == 3


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
    assert table_rows and all(line.count(" | ") == 8 for line in table_rows)  # 9 cells, no extra column
    assert "](http" not in text.replace("\\]", "")
    assert markdown_escape("a|b<c>") == "a\\|b&lt;c&gt;"


# What GitHub's autolink extension makes a link of in plain text: a scheme followed by "://"
# (http, https and ftp in cmark-gfm) and "www." (https://github.github.com/gfm/#autolinks-extension-).
_AUTOLINK = re.compile(r"://|www\.", re.IGNORECASE)


@pytest.mark.parametrize(
    "name",
    ["https://evil.example/login", "see www.evil.example/x", "HTTPS://EVIL.EXAMPLE", "(ftp://a.b/c)", "*WwW.e.com*"],
)
def test_a_bare_url_in_a_name_is_not_a_link(name: str):
    """A kernel named like a login page stays text: a zero-width joiner after the ":" of "://"
    and the "www" of "www." (checked once by hand with cmark-gfm, GitHub's renderer: no <a>)."""
    escaped = markdown_escape(name)
    assert _AUTOLINK.search(name) and not _AUTOLINK.search(escaped)
    assert escaped.replace("\u200d", "").replace("\\", "") == name  # only the joiners added: it reads the same
    base, head = make_results(seed=1), make_results({("fused", "gemma-2b"): 1.10}, seed=2)

    def rename(r):
        return replace(
            r, benchmarks=[replace(b, kernel=name if b.kernel == "fused" else b.kernel) for b in r.benchmarks]
        )

    text = comment_markdown(summarize(compare(rename(base), rename(head), POLICY)))
    assert escaped in text and not _AUTOLINK.search(text)


@given(st.text(alphabet="htpsfw:/.wWHTPS @x", max_size=40))
def test_no_escaped_value_autolinks(text: str):
    assert not _AUTOLINK.search(markdown_escape(text))


# GitHub's references that reach beyond a link (docs.github.com, "Autolinked references and
# URLs"): an issue or pull request as #26, GH-26 (any case) or owner/repo#26, which GitHub also
# notes in that issue; a mention, which notifies; a commit as user@SHA or owner/repo@SHA.
_REFERENCE = re.compile(r"#\d|(?i:gh)-\d|@[A-Za-z0-9_-]")
SHA = "a5c3785ed8d6a35868bc169f07e40e889087fd2e"


@pytest.mark.parametrize(
    "name",
    [
        "fixes #26",
        "GH-26",
        "gh-26",
        "see Gh-7.",
        "octo/perfbot#26",
        "(octo/perfbot#1)",
        "@octocat",
        "@octo/reviewers",
        f"octocat@{SHA}",
        f"octo/perfbot@{SHA[:7]}",
        "x#1 GH-2 @y",
    ],
)
def test_a_reference_in_a_name_is_not_one(name: str):
    """`\\#26` still links on GitHub (the markdown gives "#26" back): a zero-width joiner follows the
    "#" and the "GH" instead, as it follows every "@"; it reads the same."""
    escaped = markdown_escape(name)
    assert _REFERENCE.search(name) and not _REFERENCE.search(escaped), escaped
    assert escaped.replace("\u200d", "").replace("\\", "") == name
    base, head = make_results(seed=1), make_results({("fused", "gemma-2b"): 1.10}, seed=2)

    def rename(r):
        return replace(
            r, benchmarks=[replace(b, kernel=name if b.kernel == "fused" else b.kernel) for b in r.benchmarks]
        )

    text = comment_markdown(summarize(compare(rename(base), rename(head), POLICY)))
    assert escaped in text and not _REFERENCE.search(text.replace(MARKER, ""))


@pytest.mark.parametrize("text", [SHA, SHA[:7], f"triton {SHA[:12]}", "#x", "GH-x", "sigh-5", "a-26"])
def test_what_is_no_reference_is_left_as_it_is(text: str):
    """A bare commit SHA stays whole, a link: GitHub links only a commit of the repository's own
    network, tells no one, and a SHA or a digest is what a reader copies. And neither "#" nor
    "GH" is touched before what is not a number ("sigh-5" is touched: it ends in "gh-5")."""
    escaped = markdown_escape(text)
    assert escaped.replace("\\", "") == text.replace("gh-5", "gh\u200d-5")


@given(st.text(alphabet="#Gg Hh-0123@xo/", max_size=30))
def test_no_escaped_value_references(text: str):
    assert not _REFERENCE.search(markdown_escape(text))


# Copies of make_results' nine benchmarks in a huge report. Each slower copy adds a note of its
# own, and a report's notes are never left out: with 100 copies the notes alone are over GitHub's
# limit (about 90,000 characters), so the report is shortened at every stage, down to no changed
# row, and then cut, as with more. Each copy costs compare() a bootstrap per benchmark.
COPIES = 100


def _many(r, f):
    return replace(
        r,
        settings=replace(r.settings, under_test=[f"fused-{i}" for i in range(COPIES)]),
        benchmarks=[
            replace(b, kernel=f"{b.kernel}-{i}", samples_ms=[s * f(i) for s in b.samples_ms])
            for i in range(COPIES)
            for b in r.benchmarks
        ],
    )


# The tests that read it run on one pytest-xdist worker, which computes it once.
HUGE = pytest.mark.xdist_group("huge-report")


@functools.cache
def _huge():
    """900 benchmarks, half of them 20% slower (computed once). The copies repeat 18 pairs of
    sample lists, and a pair's bootstrap and U test (compare._test, seeded) depend on nothing
    else: each pair's is computed once, not fifty times."""
    slower = lambda i: 1.2 if i % 2 else 1.0  # noqa: E731
    real = compare_module._test
    each_pair = functools.cache(lambda base, cur: real(list(base), list(cur)))
    with mock.patch.object(compare_module, "_test", lambda base, cur: each_pair(tuple(base), tuple(cur))):
        return summarize(
            compare(_many(make_results(seed=1), lambda i: 1.0), _many(make_results(seed=2), slower), POLICY)
        )


@pytest.mark.slow
@HUGE
def test_a_huge_report_stays_under_githubs_limit_and_says_so():
    text = comment_markdown(_huge())
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


def _gpu_reports():
    a100 = {"gpu_name": "NVIDIA A100-SXM4-80GB", "gpu_sm_count": 108}
    return [
        GpuReport("h200", _report()),
        GpuReport(
            "a100",
            summarize(compare(make_results(seed=3, environment=a100), make_results(seed=4, environment=a100), POLICY)),
        ),
        GpuReport("l40s", None, "no comparison file; its job stopped before comparing (see the workflow run)"),
    ]


def test_pr_comment_of_several_gpus_golden():
    _golden("comment-gpus.md", gpu_comment_markdown(_gpu_reports()))


def test_each_gpu_gets_a_section_under_its_label_and_the_comment_one_marker():
    text = gpu_comment_markdown(_gpu_reports())
    assert text.startswith("**perfbot:** ❌ fails on h200; not measured on l40s; passes on a100\n")
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == ["### h200 · NVIDIA H200", "### a100 · NVIDIA A100-SXM4-80GB", "### l40s"]
    assert text.count(MARKER) == 1 and text.rstrip("\n").endswith(MARKER)
    assert text.count("**perfbot:**") == 1  # each section's verdict line is its first line, unprefixed
    # Every section is its comparison as the single-GPU comment shows it, less the headline prefix and marker.
    single = comment_markdown(_report()).rstrip("\n").removesuffix(MARKER).rstrip("\n")
    assert single.removeprefix("**perfbot:** ") in text


def test_a_label_from_a_file_cannot_forge_a_section():
    """The GPU name shown beside a label is escaped text from the file; the heading's label is
    the one given, and a label that is not a runner label is refused."""
    hostile = make_results(seed=3, environment={"gpu_name": "x\n### h200 · NVIDIA H200\n<!-- perfbot-report -->"})
    text = gpu_comment_markdown([GpuReport("a100", summarize(compare(hostile, hostile, POLICY)))])
    assert [line for line in text.splitlines() if line.startswith("### ")] == [
        "### a100 · x \\#\\#\\# h200 · NVIDIA H200 &lt;\\!-- perfbot-report --&gt;"
    ]
    assert text.count(MARKER) == 1
    for label in ("", "../h200", "h200\n", "-h200", "a" * 65, "a100 h200", "a100/h200"):
        with pytest.raises(BadInput, match="runner label"):
            GpuReport(label, None, "x")
    with pytest.raises(BadInput, match="one section"):
        gpu_comment_markdown([GpuReport("a100", None, "x"), GpuReport("a100", None, "y")])


@pytest.mark.slow
@pytest.mark.slow
@HUGE
def test_several_huge_reports_share_githubs_limit():
    reports = [
        GpuReport("h200-1", _huge()),
        GpuReport("h200-2", _report()),  # small: kept whole
        GpuReport("h200-3", _huge()),
        GpuReport("l40s", None, "no comparison file"),
    ]
    text = gpu_comment_markdown(reports, GITHUB_COMMENT_LIMIT - 400)
    assert GITHUB_COMMENT_LIMIT - 400 - 2000 < len(text) <= GITHUB_COMMENT_LIMIT - 400  # the room is used
    assert [line for line in text.splitlines() if line.startswith("### ")] == [
        "### h200-1 · NVIDIA H200",
        "### h200-2 · NVIDIA H200",
        "### h200-3 · NVIDIA H200",
        "### l40s",
    ]
    sections = text.split("\n### ")
    assert comment_markdown(_report()).removeprefix("**perfbot:** ").split(f"\n{MARKER}")[0] in sections[2]
    for big in (sections[1], sections[3]):  # each cut to its share, and saying so
        # fused on three cases in each slower copy, all counted though most rows are left out
        assert big.split("\n")[2].startswith(f"❌ {3 * COPIES // 2} significant slowdown(s) beyond the threshold")
        assert "left out to stay under GitHub's comment limit" in big
        assert re.search(r"the report was cut here: it has [\d,]+ characters, over its share \([\d,]+\)", big)
    assert abs(len(sections[1]) - len(sections[3])) < 2000  # an equal share each
    assert text.count(MARKER) == 1 and text.rstrip("\n").endswith(MARKER)


def test_room_is_shared_max_min_fair():
    assert _shares(100, [10, 80, 80]) == [10, 45, 45]
    assert _shares(100, [10, 20, 30]) == [10, 20, 30]
    assert _shares(90, [50, 50, 50]) == [30, 30, 30]
    assert _shares(0, [5]) == [0]
    assert _shares(10, []) == []


def test_a_url_split_between_suite_and_case_is_not_a_link(tmp_path: Path):
    """Each value is escaped whole: a suite "https:" and a case "/evil.example/login" are joined
    with "/" first, so the "://" they make is escaped too."""
    from click.testing import CliRunner

    from perfbot.cli import perfbot
    from perfbot.records import results
    from perfbot.records.run import Failure

    failure = Failure("fused", {"M": 8}, "float32", "raised", suite="https:", case="/evil.example/login")
    run = tmp_path / "r.json"
    results.save(replace(make_results(seed=1), failures=[failure]), run)
    done = CliRunner().invoke(perfbot, ["show", str(run), "--markdown"])
    assert done.exit_code == 0, done.output
    assert "evil.example" in done.stdout and not _AUTOLINK.search(done.stdout)


PIN = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"


@pytest.mark.parametrize(
    "current,note",
    [
        (
            {"triton": "3.9.0", "triton_commit": None, "triton_pin": PIN, "triton_pin_matches": False},
            "current run: measured with Triton 3.9.0 (commit unknown), not the pinned 7c56a5e40f7f; its times may "
            "not compare",
        ),
        (
            {"triton": "3.9.0", "triton_commit": None, "triton_pin": "0" * 40, "triton_pin_matches": None},
            "current run: measured with Triton 3.9.0 (commit unknown); whether it is the pinned 000000000000 cannot "
            "be told",
        ),
        ({"triton": "3.6.0", "triton_commit": PIN, "triton_pin": PIN, "triton_pin_matches": True}, None),
        ({"triton": "3.9.0"}, None),  # results from before the pin was checked: nothing to say
    ],
)
def test_a_run_against_a_baseline_says_when_its_triton_is_not_the_pin(current, note):
    pinned = {"triton": "3.6.0", "triton_commit": PIN, "triton_pin": PIN, "triton_pin_matches": True}
    summary = summarize(
        compare(make_results(seed=1, environment=pinned), make_results(seed=2, environment=current), POLICY)
    )
    pin_notes = [line for line in summary.notes if "pinned" in line]
    assert pin_notes == ([note] if note else [])
    if note:
        assert markdown_escape(note) in comment_markdown(summary)


def test_a_baseline_measured_off_the_pin_is_named_as_the_baseline():
    off = {"triton": "3.9.0", "triton_commit": None, "triton_pin": PIN, "triton_pin_matches": False}
    summary = summarize(compare(make_results(seed=1, environment=off), make_results(seed=2), POLICY))
    assert [line for line in summary.notes if "pinned" in line] == [
        "baseline run: measured with Triton 3.9.0 (commit unknown), not the pinned 7c56a5e40f7f; its times may not "
        "compare"
    ]
    assert "environment differs: triton 3.9.0 → " in " ".join(summary.notes)
