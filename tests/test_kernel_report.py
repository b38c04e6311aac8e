"""kernels/report.py: docs/kernel.md's generated-suite tables from results files, on files built
with perfbot's own records (timings chosen so that each target is hit and missed) and on the
H200 files that summary.txt was made from (copies in tests/fixtures: tests/fixtures/README.md)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from kernels import report, report_backward
from perfbot.records import results
from perfbot.records.run import Benchmark, Environment, Results, Settings
from tests.conftest import ROOT

ROUNDS = 30
# A per-round factor every implementation of a case shares (a clock moving), median exactly 1.
CLOCK = [1 + 0.002 * ((7 * i) % ROUNDS - 14.5) for i in range(ROUNDS)]
TIE = 0.03  # per-round ratios spread over 1 +- TIE, median 1: the paired interval holds 1

# case: (M, fused ms, fused / gemm, copy share or None, {baseline: (fused / baseline, spread)})
CASES: dict[str, tuple[int, float, float, float | None, dict[str, tuple[float, float]]]] = {
    "prefill-near": (1000, 0.25, 1.02, None, {"eager": (0.8, 0), "compiled": (0.9, 0), "max-autotune": (1.0, TIE)}),
    "prefill-far": (300, 0.5, 1.05, None, {"eager": (1.0, TIE), "compiled": (0.95, 0), "max-autotune": (1.05, 0)}),
    "decode-fast": (8, 0.05, 0.95, 0.91, {"eager": (0.7, 0), "compiled": (1.02, 0), "max-autotune": (0.9, 0)}),
    "decode-slow": (64, 0.06, 1.10, 0.89, {"eager": (0.85, 0), "compiled": (0.9, 0), "max-autotune": (0.98, 0)}),
}
K, N = 4096, 11008
TANH_SLOWER = 1.1  # the tanh GELU's fused time over the erf one's; gemm and copy serve both


def _bench(kernel: str, case: str, shape: dict, samples: list[float], variant: dict, suite: str) -> Benchmark:
    M, K, N = shape["M"], shape["K"], shape["N"]
    return Benchmark(
        kernel=kernel,
        shape=shape,
        dtype="bfloat16",
        samples_ms=[round(s, 9) for s in samples],
        variant=variant,
        suite=suite,
        case=case,
        bytes=2 * 2 * N * K * 2 if kernel == "copy" else 2 * (M * K + 2 * N * K + M * N),
    )


def _benchmarks(gelus: tuple[str, ...], suite: str = "generated", bounds: bool = True, k: int = K) -> list[Benchmark]:
    benches = []
    for case, (M, fused_ms, of_gemm, share, paired) in CASES.items():
        shape = {"M": M, "K": k, "N": N}
        fused = [fused_ms * c for c in CLOCK]
        if bounds:
            benches.append(_bench("gemm", case, shape, [f / of_gemm for f in fused], {}, suite))
            if share is not None:  # copy moves the weight twice: its time is 2 * share * fused's
                benches.append(_bench("copy", case, shape, [2 * share * f for f in fused], {}, suite))
        benches += _fused_and_paired(case, shape, fused, paired, gelus, suite)
    return benches


def _fused_and_paired(case: str, shape: dict, fused: list[float], paired: dict, gelus: tuple[str, ...], suite: str):
    """Each GELU's fused rows, and each paired baseline's, whose per-round ratios fused / it spread
    evenly around `ratio` by `spread`."""
    rows = []
    for gelu in gelus:
        variant = {"approximate": "tanh"} if gelu == "tanh" else {}
        slower = TANH_SLOWER if gelu == "tanh" else 1.0
        rows.append(_bench("fused", case, shape, [slower * f for f in fused], variant, suite))
        for name, (ratio, spread) in paired.items():
            ratios = [ratio + spread * ((11 * i) % ROUNDS - 14.5) / 14.5 for i in range(ROUNDS)]
            rows.append(
                _bench(name, case, shape, [slower * f / r for f, r in zip(fused, ratios, strict=True)], variant, suite)
            )
    return rows


def _save(path: Path, benchmarks: list[Benchmark], created: str = "2026-12-02T10:00:00+00:00") -> Path:
    environment = Environment(gpu_name="NVIDIA H200", torch="2.11.0+cu130", triton="3.6.0", kernels_commit="0" * 40)
    results.save(Results(environment, Settings(samples=ROUNDS), benchmarks, [], created), path)
    return path


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = report.main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _section(text: str, gelu: str) -> str:
    start = text.index(f"**{gelu} GELU")
    end = text.find("**", text.index("Misses:", start))
    return text[start : end if end >= 0 else len(text)]


def _row(section: str, first_cell: str) -> str:
    return next(line for line in section.splitlines() if line.startswith(f"| {first_cell} |"))


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip("|").split("|")]


@pytest.fixture
def both_gelus(tmp_path: Path) -> Path:
    """One file of an `--variant approximate=all` run: gemm and copy once per case."""
    return _save(tmp_path / "all.json", _benchmarks(("erf", "tanh")))


def test_each_target_is_hit_and_missed_as_the_timings_say(capsys, both_gelus):
    code, out, err = _run(capsys, both_gelus)
    assert code == 0, err
    erf = _section(out, "erf")
    assert "**erf GELU, 4 shapes.**" in erf
    misses = {case: _cells(_row(erf, case))[-1] for case in CASES}
    assert misses == {
        "prefill-near": "—",  # 1.02x gemm is within 3%; tied with max-autotune is no miss
        "prefill-far": "eager, max-autotune, gemm",  # tied with eager is not faster; a clear loss
        "decode-fast": "compiled",  # 0.91 of copy hits; 1.02x compiled misses
        "decode-slow": "copy",  # M = 64 is decode: 0.89 of copy misses, 1.10x gemm is not judged
    }
    assert "Misses: 5 on 3 of the 4 shapes (eager 1, compiled 1, max-autotune 1, copy 1, gemm 1)." in erf


def test_the_summary_gives_each_ratios_best_median_and_worst(capsys, both_gelus):
    _, out, _ = _run(capsys, both_gelus)
    erf = _section(out, "erf")
    assert _row(erf, "fused / eager (paired)") == "| fused / eager (paired) | 0.700 | 0.825 | 1.000 (prefill-far) |"
    assert _row(erf, "fused / compiled (paired)") == (
        "| fused / compiled (paired) | 0.900 | 0.925 | 1.020 (decode-fast) |"
    )
    assert _row(erf, "fused / max-autotune (paired)") == (
        "| fused / max-autotune (paired) | 0.900 | 0.990 | 1.050 (prefill-far) |"
    )
    assert _row(erf, "fused / gemm") == "| fused / gemm | 0.950 | 1.035 | 1.100 (decode-slow) |"
    # A share of copy's bandwidth is better high: its worst is the lowest.
    assert _row(erf, "decode: share of copy's bandwidth") == (
        "| decode: share of copy's bandwidth | 0.910 | 0.900 | 0.890 (decode-slow) |"
    )


def test_a_shapes_row_gives_its_times_and_paired_intervals(capsys, both_gelus):
    _, out, _ = _run(capsys, both_gelus)
    cells = _cells(_row(_section(out, "erf"), "prefill-far"))
    assert cells[:5] == ["prefill-far", "300×4096→11008", "0.5000", "0.4762", "1.050"]
    low, high = map(float, re.fullmatch(r"1\.000 \[(\S+), (\S+)\]", cells[5]).groups())
    assert low < 1 < high  # the tie: its interval holds 1
    assert cells[6:9] == ["0.950 [0.950, 0.950]", "1.050 [1.050, 1.050]", "—"]
    assert _cells(_row(_section(out, "erf"), "decode-fast"))[8] == "0.910"


def test_gemm_and_copy_serve_both_gelus_of_their_file(capsys, both_gelus):
    _, out, _ = _run(capsys, both_gelus)
    tanh = _section(out, "tanh")
    # fused 1.1x slower with tanh, against the same gemm and copy: 1.122x gemm, 0.827 of copy.
    near, fast = _cells(_row(tanh, "prefill-near")), _cells(_row(tanh, "decode-fast"))
    assert (near[4], near[5], near[9]) == ("1.122", "0.800 [0.800, 0.800]", "gemm")
    assert fast[8:] == ["0.827", "compiled, copy"]
    assert "Misses: 7 on 4 of the 4 shapes (eager 1, compiled 1, max-autotune 1, copy 2, gemm 2)." in tanh


def test_files_of_one_gelu_each_give_the_same_tables(capsys, tmp_path, both_gelus):
    erf = _save(tmp_path / "erf.json", _benchmarks(("erf",)))
    tanh = _save(tmp_path / "tanh.json", _benchmarks(("tanh",)))
    _, together, _ = _run(capsys, both_gelus)
    code, apart, err = _run(capsys, erf, tanh)
    assert code == 0, err
    assert apart.split("\n", 2)[2] == together.split("\n", 2)[2]  # all but the sources
    assert f"`{erf}` (NVIDIA H200, 2026-12-02T10:00:00+00:00, kernels at `0000000`; PyTorch" in apart
    assert f"`{tanh}`" in apart


def test_each_suite_is_its_own_block_and_suite_picks_them(capsys, tmp_path):
    two = _save(tmp_path / "two.json", _benchmarks(("erf",)) + _benchmarks(("erf",), suite="generated-2", k=2048))
    blocks = report.report([str(two)])
    assert list(blocks) == ["generated", "generated-2"]
    assert blocks["generated-2"].startswith("<!-- Written by") and "Suite `generated-2`" in blocks["generated-2"]
    _, out, _ = _run(capsys, two, "--suite", "generated-2")
    assert "Suite `generated-2`" in out and "Suite `generated`," not in out


DOC = """# The kernel

Prose before, kept as it is.

<!-- report:generated:begin -->
old tables
<!-- report:generated:end -->

Prose after.
"""


def test_write_then_check_round_trip_and_a_hand_edit_fails_the_check(capsys, tmp_path, both_gelus):
    doc = tmp_path / "kernel.md"
    doc.write_text(DOC)
    assert _run(capsys, both_gelus, "--check", doc)[0] == 1  # the old tables are not current
    assert _run(capsys, both_gelus, "--write", doc)[0] == 0
    text = doc.read_text()
    assert text.startswith("# The kernel\n\nProse before, kept as it is.\n\n<!-- report:generated:begin -->\n")
    assert text.endswith("<!-- report:generated:end -->\n\nProse after.\n")
    assert "old tables" not in text and report.report([str(both_gelus)])["generated"] in text
    assert _run(capsys, both_gelus, "--check", doc) == (0, "", "")
    assert _run(capsys, both_gelus, "--write", doc)[0] == 0 and doc.read_text() == text  # idempotent

    doc.write_text(text.replace("| prefill-far |", "| prefill-far (edited) |"))
    code, out, err = _run(capsys, both_gelus, "--check", doc)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "the tables of generated differ from what the results give" in err
    doc.write_text(text.replace("Prose after.", "Prose after, edited."))  # outside the markers: not checked
    assert _run(capsys, both_gelus, "--check", doc)[0] == 0


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda tmp: [tmp / "missing.json"], "no such results file"),
        (lambda tmp: [_text(tmp / "bad.json", "{not json")], "bad.json"),
        (lambda tmp: [_save(tmp / "r.json", _benchmarks(("erf",))), "--suite", "generated-3"], "no suite generated-3"),
        (
            lambda tmp: [_save(tmp / "r.json", _benchmarks(("erf",), bounds=False))],
            "r.json: suite generated (erf GELU) case prefill-near: no gemm in",
        ),
        (
            lambda tmp: [_save(tmp / "r.json", [b for b in _benchmarks(("erf",)) if b.kernel != "compiled"])],
            "no compiled in the results",
        ),
        (
            lambda tmp: [_save(tmp / "r.json", [b for b in _benchmarks(("erf",)) if b.kernel != "copy"])],
            "case decode-fast: no copy in the results",  # the first decode case; prefill needs no copy
        ),
        (lambda tmp: [_save(tmp / "r.json", _benchmarks(("erf",)))] * 2, "is in an earlier file too"),
        (
            lambda tmp: [
                _save(tmp / "r.json", _benchmarks(("erf",))),
                "--check",
                _text(tmp / "d.md", "# no markers\n"),
            ],
            "needs <!-- report:generated:begin --> and <!-- report:generated:end --> once each",
        ),
        (lambda tmp: [_save(tmp / "r.json", _benchmarks(("erf",))), "--write", tmp / "none.md"], "no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, make, expected):
    code, out, err = _run(capsys, *make(tmp_path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("kernels.report: error: ") and expected in err, err


def _text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.slow
def test_the_command_line_reports_bad_input_without_a_traceback(tmp_path, capsys):
    # main() is all that `python -m kernels.report` runs (sys.exit(main())), in this process: a
    # process of its own would start PyTorch for nothing (kernels/__init__.py), 3 CPU-s.
    code, out, err = _run(capsys, tmp_path / "missing.json")
    assert code == 2 and out == ""
    assert err == f"kernels.report: error: {tmp_path / 'missing.json'}: no such results file\n"


FIXTURES = ROOT / "tests" / "fixtures"
FULL = FIXTURES / "unseen-shapes"


def test_the_h200_files_give_summary_txts_figures(capsys):
    """summarize.py's summary.txt came from these files: the same ratios of medians, the same
    paired intervals (the same bootstrap), the same misses."""
    code, out, err = _run(capsys, FULL / "full-erf.json", FULL / "full-tanh.json")
    assert code == 0, err
    summary = (FULL / "summary.txt").read_text()
    labels = {"fused / gemm": "fused / gemm", "decode: weight read": "decode: share of copy's bandwidth"}
    for gelu, part in zip(("erf", "tanh"), summary.split("\n== "), strict=True):
        section = _section(out, gelu)
        for theirs, ours in labels.items():
            line = next(line for line in part.splitlines() if line.startswith(theirs))
            best, median, worst, case = re.search(r"best (\S+)  median (\S+)  worst (\S+) \((\S+)\)", line).groups()
            assert _row(section, ours) == f"| {ours} | {best} | {median} | {worst} ({case}) |"
        misses = int(re.search(r"misses \((\d+)\)", part).group(1))
        assert f"Misses: {misses} on " in section
        paired = re.findall(r"^  (\S+): (?:slower|not faster) than \S+, paired (\S+)x (\[\S+, \S+\])", part, re.M)
        assert len(paired) > 10
        for case, ratio, interval in paired:
            assert f"| {ratio} {interval} |" in _row(section, case)


def test_docs_kernel_md_holds_the_tables_of_the_committed_runs(capsys):
    """docs/kernel.md's tables of both generated sets are what the script makes of issue 35's
    committed H200 runs: a table edited by hand, or a run replaced without --write, fails here."""
    files = (
        # Both sets in one start of the GPU machine, the final kernel at a committed head (7dc7606).
        FIXTURES / "final-judgement" / "generated.json",
        FIXTURES / "final-judgement" / "generated-2.json",
    )
    assert _run(capsys, *files, "--check", ROOT / "docs" / "kernel.md") == (0, "", "")


def _judged(M: int = 300, of_gemm: float = 1.0, share: float | None = None, **paired) -> report.Shape:
    ties = {name: report.Paired(1.0, 0.98, 0.99) for name in report.BASELINES}  # faster than each
    return report.Shape("c", M, K, N, of_gemm, 1.0, {**ties, **paired}, share)


def test_each_target_is_judged_at_its_boundary():
    # Faster than eager and compiled means the interval lies below 1: touching 1 is a miss.
    assert _judged(eager=report.Paired(0.99, 0.98, 1.0)).misses == ["eager"]
    assert _judged(compiled=report.Paired(0.99, 0.98, 0.9999)).misses == []
    # Slower than max-autotune means the interval lies above 1: touching 1 is a tie.
    assert _judged(**{"max-autotune": report.Paired(1.01, 1.0, 1.02)}).misses == []
    assert _judged(**{"max-autotune": report.Paired(1.01, 1.0001, 1.02)}).misses == ["max-autotune"]
    # Decode at 90% of copy's bandwidth holds; prefill at 1.03 x gemm holds.
    assert _judged(M=64, share=0.9).misses == [] and _judged(M=64, share=0.8999).misses == ["copy"]
    assert _judged(of_gemm=1.03).misses == [] and _judged(of_gemm=1.0301).misses == ["gemm"]
    # 64 rows are decode, judged by copy and not by gemm; 65 rows are prefill.
    assert _judged(M=64, of_gemm=2.0, share=0.95).misses == []
    assert _judged(M=65, of_gemm=2.0).misses == ["gemm"]


def _one_case(M: int, drop: str = "", samples: int = ROUNDS, fused_samples: int | None = None, shape=None):
    """One case timed by every implementation alike; `shape` replaces each benchmark's own."""
    full = {"M": M, "K": K, "N": N}
    times = [0.1 * c for c in CLOCK][:samples]
    benches = [_bench("fused", "only", full, [0.1 * c for c in CLOCK][: fused_samples or samples], {}, "generated")]
    benches += [_bench(name, "only", full, times, {}, "generated") for name in (*report.BASELINES, "gemm", "copy")]
    return [b if shape is None else replace(b, shape=shape) for b in benches if b.kernel != drop]


@pytest.mark.parametrize(
    "benches, expected",
    [
        (_one_case(64, drop="copy"), "case only: no copy in the results"),  # 64 rows are decode
        (_one_case(1, fused_samples=ROUNDS - 1), "samples: not paired"),
        (_one_case(1, samples=1), "one sample of eager and fused"),
        (_one_case(1, shape={"M": 1, "K": K}), "has no M, K and N"),
    ],
)
def test_cases_the_report_cannot_judge_are_one_line_and_exit_2(capsys, tmp_path, benches, expected):
    code, out, err = _run(capsys, _save(tmp_path / "r.json", benches))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err, err


def test_65_rows_need_no_copy(capsys, tmp_path):
    code, out, err = _run(capsys, _save(tmp_path / "r.json", _one_case(65, drop="copy")))
    assert "| only | 65×4096→11008 |" in out
    assert code == 0, err


# The backward suites (kernels/report_backward.py): issue 54's targets per GELU and mode.

BACKWARD_SUITE = "backward-models"
# case: (M, K, N, {mode: (fused ms, fused / gemm, {baseline: (fused / baseline, spread)})})
BACKWARD_CASES: dict[str, tuple[int, int, int, dict[str, tuple[float, float, dict[str, tuple[float, float]]]]]] = {
    "big-hit": (
        8192,
        4096,
        4096,
        {
            "backward": (2.0, 1.04, {"eager": (0.8, 0), "compiled": (0.9, 0)}),
            "forward+backward": (3.0, 1.5, {"eager": (0.9, 0), "compiled": (1.1, 0)}),  # compiled, gemm not judged
        },
    ),
    "big-over": (
        8192,
        4096,
        5120,
        {
            "backward": (2.2, 1.07, {"eager": (1.0, TIE), "compiled": (0.95, 0)}),  # large: over 1.05
            "forward+backward": (3.2, 1.2, {"eager": (1.0, TIE), "compiled": (0.9, 0)}),
        },
    ),
    "small-ok": (
        2048,
        2048,
        8192,
        {
            "backward": (0.4, 1.07, {"eager": (0.7, 0), "compiled": (1.02, 0)}),  # not large: within 1.10
            "forward+backward": (0.6, 1.3, {"eager": (0.95, 0), "compiled": (0.97, 0)}),
        },
    ),
    "decode-over": (
        16,
        3072,
        24576,
        {
            "backward": (0.2, 1.12, {"eager": (0.9, 0), "compiled": (0.92, 0)}),  # over 1.10 anywhere
            "forward+backward": (0.4, 1.1, {"eager": (0.96, 0), "compiled": (0.99, 0)}),
        },
    ),
}


def _backward_benchmarks(gelus: tuple[str, ...] = ("erf", "tanh"), suite: str = BACKWARD_SUITE) -> list[Benchmark]:
    benches = []
    for case, (M, k, n, modes) in BACKWARD_CASES.items():
        shape = {"M": M, "K": k, "N": n}
        for mode, (fused_ms, of_gemm, paired) in modes.items():
            fused = [fused_ms * c for c in CLOCK]
            rows = [_bench("gemm", case, shape, [f / of_gemm for f in fused], {}, suite)]  # serves both GELUs
            rows += _fused_and_paired(case, shape, fused, paired, gelus, suite)
            benches += [replace(row, mode=mode) for row in rows]
    return benches


def _mode_section(text: str, gelu: str, mode: str) -> str:
    start = text.index(f"**{gelu} GELU, {mode}, ")
    return text[start : text.index("\n", text.index("Misses:", start))]


@pytest.fixture
def backward_file(tmp_path: Path) -> Path:
    return _save(tmp_path / "backward.json", _backward_benchmarks())


def test_the_backward_suites_targets_are_hit_and_missed_as_the_timings_say(capsys, backward_file):
    code, out, err = _run(capsys, backward_file)
    assert code == 0, err
    titles = re.findall(r"^\*\*(.+?) shapes\.\*\*", out, re.M)
    modes = ("backward, 4", "forward+backward, 4")
    assert titles == [f"{gelu} GELU, {mode}" for gelu in ("erf", "tanh") for mode in modes]
    backward = _mode_section(out, "erf", "backward")
    assert {case: _cells(_row(backward, case))[-1] for case in BACKWARD_CASES} == {
        "big-hit": "—",  # 1.04 x gemm on a large shape
        "big-over": "eager, gemm",  # tied with eager is not faster; 1.07 x gemm on a large shape
        "small-ok": "compiled",  # 1.07 x gemm is within 10% off the large shapes; 1.02 x compiled
        "decode-over": "gemm",  # 1.12 x gemm: over 10%
    }
    assert "Misses: 4 on 3 of the 4 shapes (eager 1, compiled 1, gemm 2)." in backward
    step = _mode_section(out, "erf", "forward+backward")
    # A training step is judged against eager alone: 1.1 x compiled and 1.5 x gemm are no misses.
    assert {case: _cells(_row(step, case))[-1] for case in BACKWARD_CASES} == {
        "big-hit": "—",
        "big-over": "eager",
        "small-ok": "—",
        "decode-over": "—",
    }
    assert "Misses: 1 on 1 of the 4 shapes (eager 1)." in step


def test_a_backward_shapes_row_and_summary(capsys, backward_file):
    _, out, _ = _run(capsys, backward_file)
    backward = _mode_section(out, "erf", "backward")
    cells = _cells(_row(backward, "big-over"))
    assert cells[:6] == ["big-over", "8192×4096→5120", "yes", "2.2000", "2.0561", "1.070"]
    low, high = map(float, re.fullmatch(r"1\.000 \[(\S+), (\S+)\]", cells[6]).groups())
    assert low < 1 < high
    assert cells[7] == "0.950 [0.950, 0.950]"
    assert _cells(_row(backward, "small-ok"))[2] == "—"  # 2048 rows: not large
    assert _row(backward, "fused / eager (paired)") == "| fused / eager (paired) | 0.700 | 0.850 | 1.000 (big-over) |"
    assert _row(backward, "fused / compiled (paired)") == (
        "| fused / compiled (paired) | 0.900 | 0.935 | 1.020 (small-ok) |"
    )
    assert _row(backward, "fused / gemm") == "| fused / gemm | 1.040 | 1.070 | 1.120 (decode-over) |"
    assert "gemm is cuBLAS computing dx and dW alone" in backward and "(M ≥ 4096 and M·K·N ≥ 2^34)" in backward


def test_the_backward_gemm_serves_both_gelus(capsys, backward_file):
    _, out, _ = _run(capsys, backward_file)
    tanh = _mode_section(out, "tanh", "backward")
    # fused 1.1x slower with tanh against the same gemm: big-hit at 1.144 misses the 5%.
    cells = _cells(_row(tanh, "big-hit"))
    assert (cells[5], cells[6], cells[-1]) == ("1.144", "0.800 [0.800, 0.800]", "gemm")
    assert _cells(_row(tanh, "small-ok"))[-1] == "compiled, gemm"  # 1.177: over 10%


def _backward_judged(mode: str = "backward", M: int = 8192, K: int = 4096, N: int = 4096, of_gemm=1.0, **paired):
    faster = {name: report.Paired(0.9, 0.88, 0.92) for name in report_backward.PAIRED}
    return report_backward.Shape("c", mode, M, K, N, of_gemm, 1.0, {**faster, **paired})


def test_each_backward_target_is_judged_at_its_boundary():
    judged = _backward_judged
    # Faster than eager and compiled: the interval below 1, touching 1 a miss, in the backward.
    assert judged(eager=report.Paired(0.99, 0.98, 1.0)).misses == ["eager"]
    assert judged(eager=report.Paired(0.99, 0.98, 0.9999)).misses == []
    assert judged(compiled=report.Paired(0.99, 0.98, 1.0)).misses == ["compiled"]
    assert judged(compiled=report.Paired(0.99, 0.98, 0.9999)).misses == []
    # Within 5% of gemm on a large shape, within 10% on every shape.
    assert judged(of_gemm=1.05).misses == [] and judged(of_gemm=1.0501).misses == ["gemm"]
    assert judged(M=2048, of_gemm=1.10).misses == [] and judged(M=2048, of_gemm=1.1001).misses == ["gemm"]
    assert judged(M=16, of_gemm=1.1001).misses == ["gemm"]
    # Large: M >= 4096 and M·K·N >= 2^34, each at its edge.
    assert judged(M=4096, K=2048, N=2048).large and judged(M=4096, K=2048, N=2048, of_gemm=1.06).misses == ["gemm"]
    assert not judged(M=4095, K=4096, N=4096).large and judged(M=4095, K=4096, N=4096, of_gemm=1.06).misses == []
    assert not judged(M=4096, K=2048, N=2047).large and judged(M=4096, K=2048, N=2047, of_gemm=1.06).misses == []
    # A training step: faster than eager alone; compiled and gemm not judged.
    step = "forward+backward"
    assert judged(step, eager=report.Paired(0.99, 0.98, 1.0)).misses == ["eager"]
    assert judged(step, eager=report.Paired(0.99, 0.98, 0.9999)).misses == []
    assert judged(step, of_gemm=3.0, compiled=report.Paired(1.5, 1.4, 1.6)).misses == []
    assert judged(step).gemm_limit is None and judged().gemm_limit == 1.05


def _without(name: str, mode: str) -> list[Benchmark]:
    return [b for b in _backward_benchmarks(("erf",)) if not (b.kernel == name and b.mode == mode)]


@pytest.mark.parametrize(
    "benches, expected",
    [
        (
            _without("gemm", "backward"),
            "suite backward-models (erf GELU) case big-hit: no gemm[backward] in the results "
            "(needed: fused[backward], eager[backward], compiled[backward], gemm[backward])",
        ),
        (_without("compiled", "forward+backward"), "case big-hit: no compiled[forward+backward] in the results"),
        (_without("eager", "backward"), "case big-hit: no eager[backward] in the results"),
        (
            [
                replace(b, samples_ms=b.samples_ms[:-1]) if b.kernel == "fused" else b
                for b in _backward_benchmarks(("erf",))
            ],
            "eager[backward] and fused[backward] have 30 and 29 samples: not paired",
        ),
        (
            _backward_benchmarks(("erf",)) + _benchmarks(("erf",), suite=BACKWARD_SUITE),
            "case prefill-near: forward rows in a suite with backward ones",
        ),
    ],
)
def test_backward_input_the_report_cannot_judge_is_one_line_and_exit_2(capsys, tmp_path, benches, expected):
    code, out, err = _run(capsys, _save(tmp_path / "r.json", benches))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("kernels.report: error: ") and expected in err, err


def test_a_forward_suites_block_is_the_same_beside_a_backward_suite(tmp_path, both_gelus):
    mixed = _save(tmp_path / "mixed.json", _benchmarks(("erf", "tanh")) + _backward_benchmarks())
    alone = report.report([str(both_gelus)])["generated"]
    beside = report.report([str(mixed)])
    assert list(beside) == ["generated", BACKWARD_SUITE]
    assert beside["generated"].split("\n", 2)[2] == alone.split("\n", 2)[2]  # all but the sources
    assert "forward+backward" not in beside["generated"] and "max-autotune" not in beside[BACKWARD_SUITE]


BACKWARD_DOC = """# The kernel

<!-- report:generated:begin -->
old tables
<!-- report:generated:end -->

The H200's tables go here once measured.

<!-- report:backward-models:begin -->
<!-- report:backward-models:end -->

<!-- report:backward-a100:begin -->
<!-- report:backward-a100:end -->
"""


def test_write_and_check_fill_a_backward_block_and_leave_the_others(capsys, tmp_path, backward_file):
    doc = tmp_path / "kernel.md"
    doc.write_text(BACKWARD_DOC)
    assert _run(capsys, backward_file, "--check", doc)[0] == 1  # the empty block is not current
    assert _run(capsys, backward_file, "--write", doc)[0] == 0
    text = doc.read_text()
    block = report.report([str(backward_file)])[BACKWARD_SUITE]
    begin, end = report.markers(BACKWARD_SUITE)
    assert text == BACKWARD_DOC.replace(f"{begin}\n{end}", f"{begin}\n{block}{end}")  # nothing else touched
    assert "old tables" in text and "<!-- report:backward-a100:begin -->\n<!-- report:backward-a100:end -->" in text
    assert _run(capsys, backward_file, "--check", doc) == (0, "", "")
    doc.write_text(text.replace("| big-over |", "| big-over (edited) |"))
    code, _, err = _run(capsys, backward_file, "--check", doc)
    assert code == 1 and "the tables of backward-models differ" in err


def test_docs_kernel_md_has_an_empty_block_for_each_backward_suite():
    """Where --write puts the H200's tables: each backward suite's markers once, in "The backward"."""
    text = (ROOT / "docs" / "kernel.md").read_text()
    backward = text[text.index("\n## The backward\n") :]
    backward = backward[: backward.index("\n## ", 1)]
    for suite in ("backward-a100", "backward-models", "backward-generated"):
        begin, end = report.markers(suite)
        assert text.count(begin) == 1 and text.count(end) == 1, suite
        assert f"{begin}\n" in backward and backward.index(begin) < backward.index(end), suite


@pytest.mark.slow
def test_the_command_line_reports_a_backward_suites_bad_input_without_a_traceback(tmp_path, capsys):
    """kernels/report_backward.py's errors are the ReportError that `python -m kernels.report`
    catches (one class, kernels/report_paired.py's, not a copy in __main__)."""
    path = _save(tmp_path / "r.json", _without("gemm", "backward"))
    code, out, err = _run(capsys, path)
    assert code == 2 and out == ""
    assert err.startswith("kernels.report: error: ") and err.count("\n") == 1, err
    assert "no gemm[backward] in the results" in err
