"""docs/kernel.md's tables of the generated suites, from results files of

    perfbot run --suite generated --suite generated-2 --variant approximate=all --kernel fused \\
        --kernel eager --kernel compiled --kernel max-autotune --kernel gemm --kernel copy --out FILE

(one file may hold several suites and both GELUs, or each file one of them). Per suite and GELU:
each ratio's best, median and worst over the shapes, a table of every shape with the targets it
misses, and the count of misses. The targets, per shape: faster than eager and compiled, and not
slower than max-autotune, judged paired (the median of the per-round ratios with its 95%
bootstrap interval: faster when the interval lies below 1, slower above, else tied); decode
(M <= 64) reading the weight at 90% of copy's bandwidth or more; prefill within 3% of gemm (the
ratio of medians).

    python -m kernels.report FILE...                            # prints the tables
    python -m kernels.report FILE... --write docs/kernel.md     # rewrites them between markers
    python -m kernels.report FILE... --check docs/kernel.md     # exit 1 if they are not current

The backward suites (backward-a100, backward-models, backward-generated: rows in the `backward`
and `forward+backward` modes) are judged by issue 54's targets instead, per GELU and mode:
kernels/report_backward.py says which, and which shapes are large.

The tables of a suite go between `<!-- report:SUITE:begin -->` and `<!-- report:SUITE:end -->`;
--write and --check touch nothing else: a block whose suite is not in the files given is left as
it is (and not checked). Bad input exits 2 with a one-line error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernels import report_backward
from kernels.report_paired import Paired, ReportError, judged_pair, misses_lines, summary_row, summary_table
from kernels.subject import subject
from perfbot.errors import BadInput
from perfbot.records import results
from perfbot.records.run import FORWARD, Benchmark, Results, variant_name

BASELINES = ("eager", "compiled", "max-autotune")  # judged paired, by round
NEEDED = ("fused", *BASELINES, "gemm")
DECODE_ROWS = 64  # M at most this: decode, judged by copy's bandwidth; above it prefill, by gemm's time
COPY_SHARE_TARGET = 0.90
GEMM_RATIO_TARGET = 1.03
GELU_NAMES = {"none": "erf", "tanh": "tanh"}  # F.gelu's `approximate`
REPOSITORY = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Shape:
    """One case of one GELU: its times and its ratios against each target."""

    case: str
    M: int
    K: int
    N: int
    fused_ms: float
    gemm_ms: float
    paired: dict[str, Paired]  # baseline -> fused / baseline, paired
    copy_share: float | None  # decode only: the weight's read bandwidth over copy's

    @property
    def decode(self) -> bool:
        return self.M <= DECODE_ROWS

    @property
    def of_gemm(self) -> float:
        return self.fused_ms / self.gemm_ms

    @property
    def misses(self) -> list[str]:
        missed = [name for name in ("eager", "compiled") if self.paired[name].high >= 1]  # not faster
        if self.paired["max-autotune"].low > 1:  # slower
            missed.append("max-autotune")
        if self.copy_share is not None and self.copy_share < COPY_SHARE_TARGET:  # decode only
            missed.append("copy")
        if not self.decode and self.of_gemm > GEMM_RATIO_TARGET:
            missed.append("gemm")
        return missed


@dataclass(eq=False)  # one file is itself: compared by identity, not by every sample
class Source:
    path: str
    run: Results


def _takes_gelu(kernel: str) -> bool:
    """Whether the implementation takes `approximate`; those that do not (gemm, copy) are timed
    once per case and serve both GELUs of their file."""
    implementation = subject.implementations.get(kernel)
    return implementation is None or implementation.variants is None or "approximate" in implementation.variants


def _shown_path(path: str) -> str:
    """A file in this repository by its path from the root, as docs name it, wherever this runs."""
    try:
        return str(Path(path).resolve().relative_to(REPOSITORY))
    except ValueError:
        return path


def load(paths: Sequence[str]) -> list[Source]:
    sources = []
    for path in paths:
        if not Path(path).is_file():
            raise ReportError(f"{path}: no such results file")
        try:
            sources.append(Source(_shown_path(path), results.load(Path(path))))
        except BadInput as error:
            raise ReportError(str(error).splitlines()[0]) from None
    return sources


def _named(bench: Benchmark) -> str:
    """The implementation with its mode, as reports name it: `fused` in the forward,
    `fused[backward]` and `fused[forward+backward]` in the others."""
    return variant_name(bench.kernel, {}, bench.mode)


# suite -> GELU -> case -> implementation (with its mode) -> benchmark
Grouped = dict[str, dict[str, dict[str, dict[str, Benchmark]]]]


def group(sources: Sequence[Source]) -> tuple[Grouped, dict[str, list[Source]], dict[tuple[str, str, str], str]]:
    """The benchmarks by suite, GELU and case; each suite's files; and the file of each
    (suite, GELU, case)."""
    grouped: Grouped = {}
    suite_sources: dict[str, list[Source]] = {}
    origins: dict[tuple[str, str, str], str] = {}
    for source in sources:
        shared: dict[tuple[str, str], dict[str, Benchmark]] = {}
        mine: dict[tuple[str, str, str], dict[str, Benchmark]] = {}
        for bench in source.run.benchmarks:
            if not _takes_gelu(bench.kernel):
                shared.setdefault((bench.suite, bench.case), {})[_named(bench)] = bench
            else:
                approximate = bench.variant.get("approximate", "none")
                gelu = GELU_NAMES.get(approximate, approximate)
                mine.setdefault((bench.suite, gelu, bench.case), {})[_named(bench)] = bench
        for (suite, gelu, case), benches in mine.items():
            cases = grouped.setdefault(suite, {}).setdefault(gelu, {})
            if case in cases:
                raise ReportError(f"{source.path}: suite {suite} case {case} ({gelu} GELU) is in an earlier file too")
            cases[case] = {**shared.get((suite, case), {}), **benches}
            origins[(suite, gelu, case)] = source.path
            if source not in suite_sources.setdefault(suite, []):
                suite_sources[suite].append(source)
    return grouped, suite_sources, origins


def shape_of(where: str, case: str, benches: dict[str, Benchmark]) -> Shape:
    fused = benches.get("fused")
    M = fused.shape.get("M", 0) if fused else 0
    decode = 0 < M <= DECODE_ROWS
    needed = (*NEEDED, "copy") if decode else NEEDED
    lacking = [name for name in needed if name not in benches]
    if lacking:
        raise ReportError(f"{where} case {case}: no {', '.join(lacking)} in the results (needed: {', '.join(needed)})")
    fused = benches["fused"]  # NEEDED names it
    if any(not isinstance(fused.shape.get(dim), int) for dim in ("M", "K", "N")):
        raise ReportError(f"{where} case {case}: fused's shape {fused.shape} has no M, K and N")
    paired = {name: judged_pair(f"{where} case {case}", name, "fused", benches) for name in BASELINES}
    # Decode only: copy reads and writes the weight, fused reads it once, so fused's read
    # bandwidth over copy's is copy's time over twice fused's.
    copy_share = benches["copy"].median_ms / (2 * fused.median_ms) if decode else None
    return Shape(
        case,
        M,
        fused.shape["K"],
        fused.shape["N"],
        fused.median_ms,
        benches["gemm"].median_ms,
        paired,
        copy_share,
    )


def gelu_tables(gelu: str, shapes: list[Shape]) -> list[str]:
    lines = summary_table(
        f"**{gelu} GELU, {len(shapes)} shapes.** Ratios fused / other; against eager, compiled and "
        "max-autotune the paired median of the per-round ratios [95% interval], against gemm the ratio "
        "of medians; copy share: the weight's read bandwidth over copy's (decode).",
        BASELINES,
        shapes,
    )
    decode = [(s.copy_share, s.case) for s in shapes if s.copy_share is not None]
    if decode:
        lines.append(summary_row("decode: share of copy's bandwidth", decode, higher_is_better=True))
    lines += [
        "",
        "| case | M×K→N | fused ms | gemm ms | fused / gemm | fused / eager | fused / compiled "
        "| fused / max-autotune | copy share | misses |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in shapes:
        share = f"{s.copy_share:.3f}" if s.copy_share is not None else "—"
        paired = " | ".join(str(s.paired[name]) for name in BASELINES)
        lines.append(
            f"| {s.case} | {s.M}×{s.K}→{s.N} | {s.fused_ms:.4f} | {s.gemm_ms:.4f} | {s.of_gemm:.3f} | {paired} "
            f"| {share} | {', '.join(s.misses) or '—'} |"
        )
    return lines + misses_lines(shapes, (*BASELINES, "copy", "gemm"))


def _described(source: Source) -> str:
    env = source.run.environment
    commit = f"kernels at `{env.kernels_commit[:7]}`" if env.kernels_commit else "kernels at an unknown commit"
    if env.kernels_dirty:
        commit += " (with uncommitted changes)"
    versions = ", ".join(f"{name} {value}" for name, value in (("PyTorch", env.torch), ("Triton", env.triton)) if value)
    return (
        f"`{source.path}` ({env.gpu_name or 'no GPU named'}, {source.run.created or 'undated'}, {commit}; {versions})"
    )


def suite_block(
    suite: str,
    by_gelu: dict[str, dict[str, dict[str, Benchmark]]],
    sources: list[Source],
    origins: dict[tuple[str, str, str], str],
) -> str:
    lines = [
        "<!-- Written by `python -m kernels.report`; edit the results, not these lines. -->",
        f"Suite `{suite}`, from {'; '.join(_described(source) for source in sources)}.",
    ]
    # A suite with a row in another mode is judged by issue 54's targets (kernels/report_backward.py).
    rows = [bench for cases in by_gelu.values() for benches in cases.values() for bench in benches.values()]
    backward = any(bench.mode != FORWARD for bench in rows)
    known = [gelu for gelu in GELU_NAMES.values() if gelu in by_gelu]
    for gelu in known + [gelu for gelu in by_gelu if gelu not in known]:
        wheres = {case: f"{origins[(suite, gelu, case)]}: suite {suite} ({gelu} GELU)" for case in by_gelu[gelu]}
        if backward:
            lines += ["", *report_backward.gelu_tables(gelu, by_gelu[gelu], wheres)]
            continue
        shapes = [shape_of(wheres[case], case, benches) for case, benches in by_gelu[gelu].items()]
        lines += ["", *gelu_tables(gelu, shapes)]
    return "\n".join(lines) + "\n"


def report(paths: Sequence[str], suites: Sequence[str] = ()) -> dict[str, str]:
    """Each suite's block of markdown (every suite in the files, or those named)."""
    grouped, suite_sources, origins = group(load(paths))
    missing = [suite for suite in suites if suite not in grouped]
    if missing:
        found = ", ".join(grouped) or "none"
        raise ReportError(f"no suite {missing[0]} in {', '.join(paths)} (suites there: {found})")
    if not grouped:
        raise ReportError(f"no benchmarks in {', '.join(paths)}")
    return {suite: suite_block(suite, grouped[suite], suite_sources[suite], origins) for suite in (suites or grouped)}


def markers(suite: str) -> tuple[str, str]:
    return f"<!-- report:{suite}:begin -->", f"<!-- report:{suite}:end -->"


def rewritten(text: str, where: str, blocks: dict[str, str]) -> str:
    """`text` with each block put between its suite's markers, and nothing else changed."""
    for suite, block in blocks.items():
        begin, end = markers(suite)
        if text.count(begin) != 1 or text.count(end) != 1:
            raise ReportError(f"{where}: needs {begin} and {end} once each, where the tables go")
        start, stop = text.index(begin) + len(begin), text.index(end)
        if stop < start:
            raise ReportError(f"{where}: {end} comes before {begin}")
        text = text[:start] + "\n" + block + text[stop:]
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.report", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", metavar="FILE", help="results files of `perfbot run`")
    parser.add_argument("--suite", action="append", default=[], help="only this suite (repeat); default: every one")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--write", metavar="MARKDOWN", help="rewrite the tables between this file's markers")
    out.add_argument("--check", metavar="MARKDOWN", help="exit 1 if this file's tables differ from the results'")
    args = parser.parse_args(argv)
    try:
        blocks = report(args.files, args.suite)
        if not (args.write or args.check):
            print("\n".join(blocks.values()), end="")
            return 0
        target = Path(args.write or args.check)
        if not target.is_file():
            raise ReportError(f"{target}: no such file")
        text = target.read_text()
        new = rewritten(text, str(target), blocks)
        if args.write and new != text:
            target.write_text(new)
    except (ReportError, OSError) as error:
        print(f"kernels.report: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    if args.write:
        return 0
    if new != text:
        differing = [suite for suite in blocks if rewritten(text, str(target), {suite: blocks[suite]}) != text]
        print(
            f"{target}: the tables of {', '.join(differing)} differ from what the results give "
            f"(python -m kernels.report ... --write {target})",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
