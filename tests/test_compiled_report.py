"""What changed in the compiled code, as the PR comment and `perfbot compare` show it for each
flagged row, compared exactly with golden files (PERFBOT_UPDATE_GOLDEN=1 rewrites them); and the
comparison file that carries it, read back."""

import os
from dataclasses import replace

from rich.console import Console

from perfbot.deciding import comparison
from perfbot.deciding.compare import compare
from perfbot.deciding.comparison import Summary, summarize
from perfbot.deciding.compiled_change import CompiledChange, Difference, KernelChange
from perfbot.deciding.thresholds import load_policy
from perfbot.output.compiled_tables import FEW_ROWS_PER_KERNEL, ROWS_PER_KERNEL, compiled_markdown
from perfbot.output.markdown import MARKER
from perfbot.output.verdicts import comment_markdown, compare_table
from perfbot.records.compiled import Compiled
from perfbot.records.run import Results
from tests import compiled_records as records
from tests.conftest import ROOT
from tests.helpers import make_results
from tests.test_report import _golden

POLICY = load_policy(ROOT / "thresholds.yaml")
COPY = replace(records.DECODE_BLOCK_K_64, name="_align_rows_kernel", grid=[16, 1, 1])
DECODE, LARGE, SMALL = "gemma-7b-m16", "gemma-2b", "t5-v1.1-xl"
# (implementation, case) -> (baseline, current) compiled kernels.
KERNELS: dict[tuple[str, str], tuple[Compiled | None, Compiled]] = {
    # A branch that only changes decode's BLOCK_K (128 -> 64), and copies x first.
    ("fused", DECODE): (
        records.compiled(records.DECODE_BLOCK_K_128),
        records.compiled(COPY, records.DECODE_BLOCK_K_64),
    ),
    # maxnreg lowered on a large case until it spills.
    ("fused", LARGE): (records.compiled(records.LARGE_TUNED), records.compiled(records.LARGE_MAXNREG_128)),
    # Faster, with the same cubin: the change is not in the kernel.
    ("fused", SMALL): (records.compiled(records.LARGE_TUNED), records.compiled(records.LARGE_TUNED)),
    # A baseline that an older perfbot measured.
    ("gemm", DECODE): (None, records.compiled(records.DECODE_BLOCK_K_64)),
    # Unchanged in time, changed in code: an unflagged row shows no section.
    ("eager", SMALL): (records.compiled(records.LARGE_TUNED), records.compiled(records.LARGE_MAXNREG_128)),
}
SLOWDOWNS = {("fused", DECODE): 1.10, ("fused", LARGE): 1.10, ("fused", SMALL): 0.90, ("gemm", DECODE): 1.10}


def _with_kernels(results: Results, side: int) -> Results:
    return replace(
        results,
        benchmarks=[
            replace(b, compiled=KERNELS.get((b.kernel, b.case), (None, None))[side]) for b in results.benchmarks
        ],
    )


def _summary() -> Summary:
    base = _with_kernels(make_results(seed=1), 0)
    head = _with_kernels(make_results(SLOWDOWNS, seed=2), 1)
    return summarize(compare(base, head, POLICY))


def _sections(text: str) -> list[str]:
    """The summaries of the comment's compiled-code sections."""
    return [
        line.removeprefix("<details><summary>").removesuffix("</summary>")
        for line in text.splitlines()
        if line.endswith(": what changed in the compiled code</summary>")
    ]


def test_pr_comment_with_compiled_changes_golden():
    _golden("comment-compiled.md", comment_markdown(_summary()))


def test_terminal_table_with_compiled_changes_golden():
    console = Console(width=180, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(compare_table(_summary()))
    _golden("compare-table-compiled.txt", console.export_text())


def test_each_flagged_row_gets_a_section_below_the_table_and_no_other_row_does():
    summary = _summary()
    verdicts = {(r.benchmark.kernel, r.benchmark.case): r.verdict for r in summary.comparisons}
    assert verdicts[("eager", SMALL)] == "unchanged" and verdicts[("fused", SMALL)] == "improvement"
    text = comment_markdown(summary)
    assert [section.split(" · ")[:2] for section in _sections(text)] == [
        # in the order of the table's rows: failing first, then the subject's own, then a bound's
        ["fused", f"decode/{DECODE}"],
        ["fused", f"models/{LARGE}"],
        ["fused", f"models/{SMALL}"],
        ["gemm", f"decode/{DECODE}"],
    ]
    table_end = text.index("\n\n", text.index("|---|"))
    assert text.index(": what changed in the compiled code") > table_end
    assert text.index(": what changed in the compiled code") < text.index("unchanged</summary>")
    assert "| \\_geglu\\_tma\\_kernel | registers | 62 | 45 |" in text
    assert "|  | spill stores (B) | 0 | 1080 |" in text
    assert "|  | occupancy | 1 blocks/SM (registers) | 1 blocks/SM (shared memory) |" in text
    assert "| \\_align\\_rows\\_kernel | launched by one side only | not launched | launched |" in text
    assert "Same machine code: the change is outside this kernel (launch, inputs, neighbours)." in text
    assert "Not known: the baseline recorded no compiled kernels" in text
    assert "mma instructions | 8 | 8" not in text  # equal on both sides of the maxnreg row: not shown


def test_an_aa_comparison_shows_no_section():
    same = _with_kernels(make_results(seed=1), 0)
    text = comment_markdown(summarize(compare(same, replace(same, created="2026-12-01T00:00:00+00:00"), POLICY)))
    assert not _sections(text) and "compiled code" not in text


def test_names_from_the_record_are_escaped_and_cannot_forge_the_marker():
    hostile = replace(records.DECODE_BLOCK_K_64, name="evil|name <!-- perfbot-report --> @someone [x](y)")
    base = _with_kernels(make_results(seed=1), 0)
    head = _with_kernels(make_results(SLOWDOWNS, seed=2), 1)
    head = replace(
        head,
        benchmarks=[
            replace(b, compiled=records.compiled(hostile)) if (b.kernel, b.case) == ("fused", DECODE) else b
            for b in head.benchmarks
        ],
    )
    text = comment_markdown(summarize(compare(base, head, POLICY)))
    assert text.count(MARKER) == 1
    assert (
        "| evil\\|name &lt;\\!-- perfbot-report --&gt; @\u200dsomeone \\[x\\](y) | launched by one side only "
        "| not launched | launched |" in text
    )


def _crowded(summary: Summary, kernels: int = 20, differences: int = 60) -> Summary:
    """Every flagged row's change made `kernels` kernels of `differences` differences each."""
    change = CompiledChange(
        kernels=[
            KernelChange(f"kernel_{k}", [Difference(f"BLOCK_{d}", d, d + 1) for d in range(differences)])
            for k in range(kernels)
        ]
    )
    return replace(
        summary,
        comparisons=[replace(r, compiled_change=change) if r.compiled_change else r for r in summary.comparisons],
    )


def test_a_long_section_shows_its_first_differences_per_kernel_and_says_how_many_more():
    cells = compiled_markdown(_crowded(_summary(), kernels=1).comparisons[0].compiled_change or CompiledChange())
    lines = cells.splitlines()
    assert lines[:2] == ["| kernel | what | baseline | current |", "|---|---|---:|---:|"]
    assert len(lines) == 2 + ROWS_PER_KERNEL + 1  # the header, the differences shown, the rest counted
    assert f"…and {60 - ROWS_PER_KERNEL} more difference(s), left out here" in cells


def test_near_githubs_limit_the_sections_show_fewer_differences_before_rows_go():
    crowded = _crowded(_summary())
    full = comment_markdown(crowded, limit=10**7)
    assert f"{60 - ROWS_PER_KERNEL} more difference(s)" in full
    limit = len(full) // 3
    text = comment_markdown(crowded, limit=limit)
    assert len(text) <= limit and text.rstrip("\n").endswith(MARKER)
    assert f"…and {60 - FEW_ROWS_PER_KERNEL} more difference(s), left out here" in text
    assert text.count("<details>") == text.count("</details>")
    tiny = comment_markdown(crowded, limit=6000)
    assert len(tiny) <= 6000 and tiny.count("<details>") == tiny.count("</details>")
    assert "left out to stay under GitHub's comment limit" in tiny


def test_the_comparison_file_keeps_each_rows_compiled_change(tmp_path):
    summary = _summary()
    path = tmp_path / "comparison.json"
    path.write_text(comparison.to_text(summary))
    loaded = comparison.load(path)
    assert loaded == summary
    changes = {(r.benchmark.kernel, r.benchmark.case): r.compiled_change for r in loaded.comparisons}
    decode = changes[("fused", DECODE)]
    assert decode is not None and decode.kernels[1] == KernelChange("_align_rows_kernel", [], "current")
    assert Difference("BLOCK_K", 128, 64) in decode.kernels[0].differences
    assert changes[("fused", SMALL)] == CompiledChange(same_machine_code=True)
    assert changes[("eager", LARGE)] is None  # no Triton kernel on either side
    assert comment_markdown(loaded) == comment_markdown(summary)


def test_a_comparison_of_hostile_records_reads_back(tmp_path):
    """A head's results come from the pull request's own run: however many and however named its
    kernels' differences, the comparison file perfbot writes is one perfbot reads again."""
    many = {f"P{i}": i for i in range(62)}
    hostile = replace(
        records.DECODE_BLOCK_K_64,
        specialization={**many, "": "x" * 1900},
        instructions={**records.DECODE_BLOCK_K_64.instructions, "mma": 1},
    )
    wide = replace(records.DECODE_BLOCK_K_128, specialization={f"Q{i}": i for i in range(63)})
    base = _with_kernels(make_results(seed=1), 0)
    head = _with_kernels(make_results(SLOWDOWNS, seed=2), 1)
    base = replace(base, benchmarks=[replace(b, compiled=records.compiled(wide)) for b in base.benchmarks])
    head = replace(head, benchmarks=[replace(b, compiled=records.compiled(*[hostile] * 2)) for b in head.benchmarks])
    path = tmp_path / "comparison.json"
    path.write_text(comparison.to_text(summarize(compare(base, head, POLICY))))
    loaded = comparison.load(path)
    change = next(row.compiled_change for row in loaded.comparisons if row.compiled_change)
    whats = [d.what for d in change.kernels[0].differences]
    assert "?" in whats and all(whats)  # the empty name is shown as "?"
    assert MARKER in comment_markdown(loaded, 60_000)


def test_a_kernel_of_more_differences_than_a_file_holds_says_how_many_are_left_out(monkeypatch):
    from perfbot.deciding import compiled_change as module
    from perfbot.deciding.compiled_change import MAX_DIFFERENCES, kernel_differences

    # Past the record's limits, as no file is read: what compiled_change must still bound.
    before = replace(records.DECODE_BLOCK_K_128, specialization={f"P{i}": 0 for i in range(300)})
    after = replace(records.DECODE_BLOCK_K_64, specialization={f"P{i}": 1 for i in range(300)})
    found = kernel_differences(before, after)
    assert len(found) == MAX_DIFFERENCES and found[-1].what == "differences not shown"
    monkeypatch.setattr(module, "MAX_DIFFERENCES", 10_000)
    every = kernel_differences(before, after)
    assert len(every) > 300 and found[-1].current == len(every) - (MAX_DIFFERENCES - 1)
    assert found[:-1] == every[: MAX_DIFFERENCES - 1]
