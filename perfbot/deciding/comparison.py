"""The comparison file (comparison.json): a comparison's verdicts as data, from which the PR
comment, the job summary and the terminal table are rendered. The job that posts the PR
comment reads only this file, validated like any other input, and renders the comment itself:
no text a measured pull request could have written reaches the comment unescaped.

Format versions:
  1 -- (written by perfbot before 2026-12; never read) headline, comparisons with their
       numbers and verdicts, added, removed, failures, environment differences.
  2 -- {"format": 2, "interleaved", "geomean_ratio", "confidence", "policy", "comparisons":
       [Row], "added": [Identity], "removed": [Identity], "failures": [Failed],
       "environment_differences": [Difference], "environments": {"baseline": {...},
       "current": {...}}, "notes": [str], "trend": str | null, "policy_change": [str],
       "headline": str, "fails": bool}. The last two are written for readers of the file and
       recomputed from the rows when perfbot reads it; other unknown keys are ignored.
  3 -- as 2, each Row's ratio to one fixed baseline replaced by "fastest_baseline" (the fastest baseline
       on the case, by name) and "vs_fastest_baseline" (its time over the row's), and "gbps" beside
       "tflops". Format 2 is
       not read: the file lives within one workflow run, written and read by one perfbot.
       Later, within format 3: each Row's "samples" (rounds or samples per side it was judged on);
       "declaration_changes" ([str]) and "missing" ([Failed]: benchmarks the base's subject
       plans that the head cannot run, or, between two results files, the baseline has under
       test and the current run did not time; failing);
       "merge" (null, or the base's tip, the head and the merge commit of `perfbot ab --merge`);
       each Row's "compiled_change" (null, or deciding/compiled_change.py's CompiledChange: what
       differs in its Triton kernels' compiled code);
       each Row's "change_percent" is the change its verdict rests on (compare.Comparison's),
       and its "paired" says which: true, the median per-round ratio of an A/B's paired rounds;
       false, the ratio of the two medians (until then every row's was the ratio of medians);
       "geomean_ratio" is the geometric mean of those changes;
       each Row's "role" ("under test", "baseline" or "bound", from the baseline's results) and
       "confirmed" (null, or whether a second A/B round confirmed a failing row): the headline
       counts by them (standing.py);
       each Row's "picks_difference" ([str]: where the two sides' autotune picks differ, a line
       per kernel and key) and "tuning" (null, or the tuning's effect where an A/B timed each side at its own
       picks beside a common config: change_percent, ci, verdict, fails, reason, base, head)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, with_config

from ..records.run import Benchmark, Failure, Label, Merge, Mode, Shape, Variant, variant_name
from ..records.run import Environment as EnvironmentRecord
from ..records.schema import MAX_ITEMS, MAX_JSON_BYTES, Finite, IntOnly, Name, Text, _bounded, load_json
from .compiled_change import CompiledChange
from .standing import Role, Standing, Verdict, fails_check, tally

if TYPE_CHECKING:  # what a summary is made from; reading and rendering one needs neither (nor numpy)
    from .compare import Comparison, Report
    from .picks import TuningEffect

FORMAT: Final = 3
# The environment fields a comparison shows side by side.
ENVIRONMENT_KEYS = ("gpu_name", "gpu_sm_count", "driver", "cuda", "torch", "triton", "triton_commit", "kernels_commit")
_STRICT = ConfigDict(strict=True, extra="forbid", defer_build=True)
Notes = Annotated[list[Text], Field(max_length=MAX_ITEMS)]


@with_config(_STRICT)
@dataclass(frozen=True)
class Identity:
    kernel: Name
    shape: Shape
    dtype: Name
    suite: Label = ""
    case: Label = ""
    variant: Variant = field(default_factory=dict)
    mode: Mode = "forward"  # absent from comparisons written before modes

    @classmethod
    def of(cls, bench: Benchmark | Failure) -> Identity:
        return cls(bench.kernel, bench.shape, bench.dtype, bench.suite, bench.case, bench.variant, bench.mode)


@with_config(_STRICT)
@dataclass(frozen=True)
class Tuning:
    """The tuning's effect of a row (deciding/picks.py): each side at its own autotune picks."""

    change_percent: Finite
    verdict: Verdict
    fails: bool
    reason: Text
    base: Text  # the base's picks, in words
    head: Text
    ci: tuple[Finite, Finite] | None = None


@with_config(_STRICT)
@dataclass(frozen=True)
class Row:
    """One benchmark compared."""

    benchmark: Identity
    baseline_median_ms: Finite
    current_median_ms: Finite
    change_percent: Finite
    verdict: Verdict
    fails: bool
    reason: Text
    fail_percent: Finite
    ci: tuple[Finite, Finite] | None = None
    p_value: Finite | None = None
    q_value: Finite | None = None
    config_change: Text | None = None
    compiled_change: CompiledChange | None = None  # what differs in its Triton kernels' compiled code
    tflops: Finite | None = None
    gbps: Finite | None = None  # shown where there are no flops (a memory-bound subject)
    fastest_baseline: Name | None = None  # the fastest baseline on the case (rows of the subject's own)
    vs_fastest_baseline: Finite | None = None  # its time over this benchmark's: above 1, this one is faster
    samples: int | None = None  # rounds (paired) or samples per side it was judged on: the fewer of the two
    paired: bool = False  # change_percent is the median per-round ratio (true) or the ratio of medians
    role: Role = "under test"  # whose code it times: a baseline's or a bound's never fails
    confirmed: bool | None = None  # failed in an A/B and measured again: whether it failed again
    picks_difference: Notes = field(default_factory=list)  # where the two sides' autotune picks differ, a line each
    tuning: Tuning | None = None  # each side at its own picks, where the A/B timed that too


@with_config(_STRICT)
@dataclass(frozen=True)
class Failed:
    benchmark: Identity
    reason: Text


@with_config(_STRICT)
@dataclass(frozen=True)
class Difference:
    field: Name
    baseline: Text | int | Finite | bool | None
    current: Text | int | Finite | bool | None


Environment = Annotated[dict[Name, Any], AfterValidator(_bounded)]


@with_config(ConfigDict(strict=True, extra="ignore", defer_build=True))
@dataclass(frozen=True)
class Summary:
    """Everything a report of one comparison shows."""

    format: Annotated[Literal[3], IntOnly]
    interleaved: bool
    geomean_ratio: Finite | None
    confidence: Finite
    policy: Text  # the policy file's name
    comparisons: Annotated[list[Row], Field(max_length=MAX_ITEMS)]
    added: Annotated[list[Identity], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    removed: Annotated[list[Identity], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    failures: Annotated[list[Failed], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    environment_differences: Annotated[list[Difference], Field(max_length=64)] = field(default_factory=list)
    environments: dict[Literal["baseline", "current"], Environment] = field(default_factory=dict)
    notes: Notes = field(default_factory=list)
    trend: Text | None = None
    policy_change: Notes = field(default_factory=list)
    declaration_changes: Notes = field(default_factory=list)
    # What the base's suites time and the head cannot run (an A/B; declarations.py): failing.
    missing: Annotated[list[Failed], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    merge: Merge | None = None  # what the current side was: the head merged into the baseline's commit

    @property
    def fails(self) -> bool:
        return fails_check(self.failures, self.missing, self.comparisons)

    @property
    def headline(self) -> str:
        """The one-line verdict a reader sees first: what fails the check, then the rows counted by
        what decides (standing.py), the subject's own and the baselines' and bounds' apart."""
        counted = tally(self.comparisons)
        failing = [row for row in self.comparisons if row.fails]
        slower, unconfirmed = counted.own.get("slower", 0), counted.own.get("not confirmed", 0)
        if self.missing:
            lead = f"❌ {len(self.missing)} benchmark(s) the base judges missing on the head"
        elif self.failures:
            lead = f"❌ {len(self.failures)} wrong result(s)"
        elif failing:
            worst = max(failing, key=lambda row: row.change_percent)
            lead = (
                f"❌ {len(failing)} significant slowdown(s) beyond the threshold (worst {worst.change_percent:+.1f}%)"
            )
        elif slower:
            lead = f"⚠️ {slower} significant slowdown(s) under the fail threshold"
        elif unconfirmed:
            lead = f"⚠️ {unconfirmed} slowdown(s) not confirmed by a second A/B, so not failing"
        elif counted.own.get("inconclusive"):
            lead = f"❔ no significant slowdown; {counted.own['inconclusive']} inconclusive"
        else:
            lead = "✅ no significant slowdown"
        own = ", ".join(f"{n} {_OWN_WORDS[standing]}" for standing, n in counted.own.items())
        # A baseline's or a bound's standing is its verdict: it never fails, nor is measured again.
        others = ", ".join(f"{n} {_VERDICT_OF[standing]}" for standing, n in counted.others.items())
        counts = "; ".join(
            [*([own] if own else []), *([f"baselines and bounds, which never fail: {others}"] if others else [])]
        )
        geomean = f"; geometric mean ratio {self.geomean_ratio:.3f}" if self.geomean_ratio else ""
        return f"{lead} — {counts or 'nothing compared'}{geomean}"

    def to_json(self) -> dict[str, Any]:
        return {**_forward_unnamed(asdict(self)), "headline": self.headline, "fails": self.fails}


def _forward_unnamed(value: Any) -> Any:
    """`value` with each Identity of a forward row without its mode: a comparison of forward rows
    alone is written as before modes, which a perfbot that predates them reads."""
    if isinstance(value, dict):
        if value.get("mode") == "forward" and {"kernel", "shape", "dtype"} <= value.keys():
            value = {k: v for k, v in value.items() if k != "mode"}
        return {k: _forward_unnamed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_forward_unnamed(v) for v in value]
    return value


# How the headline counts the subject's own rows, by standing.
_OWN_WORDS: Final[dict[Standing, str]] = {
    "failing": "failing",
    "slower": "slower under the fail threshold",
    "not confirmed": "not confirmed",
    "improvement": "improvement",
    "unchanged": "unchanged",
    "inconclusive": "inconclusive",
}
_VERDICT_OF: Final[dict[Standing, Verdict]] = {
    "failing": "regression",
    "slower": "regression",
    "not confirmed": "regression",
    "improvement": "improvement",
    "unchanged": "unchanged",
    "inconclusive": "inconclusive",
}
_SUMMARY = TypeAdapter(Summary)


def summarize(report: Report) -> Summary:
    """The data of a report, as the comparison file holds it."""
    first = report.comparisons[0].estimate if report.comparisons else None
    environments: dict[Literal["baseline", "current"], dict[str, Any]] = {
        "baseline": {k: getattr(report.baseline_environment, k) for k in ENVIRONMENT_KEYS},
        "current": {k: getattr(report.current_environment, k) for k in ENVIRONMENT_KEYS},
    }
    return Summary(
        format=FORMAT,
        interleaved=report.interleaved,
        geomean_ratio=report.geomean_ratio,
        confidence=first.confidence if first else 0.95,
        policy=Path(report.policy_source).name,
        comparisons=[_row(c) for c in report.comparisons],
        added=[Identity.of(b) for b in report.added],
        removed=[Identity.of(b) for b in report.removed],
        failures=[Failed(Identity.of(f), f.reason) for f in report.failures],
        environment_differences=[Difference(d.field, d.baseline, d.current) for d in report.differences],
        environments=environments,
        notes=_notes(report),
        trend=report.trend,
        policy_change=list(report.policy_change),
        declaration_changes=list(report.declaration_changes),
        missing=[Failed(Identity.of(f), f.reason) for f in report.missing],
        merge=report.merge,
    )


def _row(c: Comparison) -> Row:
    return Row(
        benchmark=Identity.of(c.current),
        baseline_median_ms=c.baseline.median_ms,
        current_median_ms=c.current.median_ms,
        change_percent=c.change_percent,
        verdict=c.verdict,
        fails=c.fails,
        reason=c.reason,
        fail_percent=c.rule.fail_percent,
        # A confidence sequence is unbounded until enough blocks are in (JSON holds no infinity).
        ci=(c.estimate.low, c.estimate.high) if c.estimate and math.isfinite(c.estimate.high) else None,
        p_value=c.p_value,
        q_value=c.q_value,
        config_change=c.config_change,
        compiled_change=c.compiled_change,
        tflops=c.current.tflops if c.current.flops else None,
        gbps=c.current.gbps if c.current.bytes else None,
        fastest_baseline=c.fastest_baseline[0] if c.fastest_baseline else None,
        vs_fastest_baseline=c.fastest_baseline[1] if c.fastest_baseline else None,
        samples=min(len(c.current.samples_ms), len(c.baseline.samples_ms)),
        paired=c.paired,
        role=c.role,
        confirmed=c.confirmed,
        picks_difference=list(c.picks_difference),
        tuning=_tuning(c.tuning) if c.tuning is not None else None,
    )


def _tuning(effect: TuningEffect) -> Tuning:
    estimate = effect.estimate
    return Tuning(
        change_percent=effect.change_percent,
        verdict=effect.verdict,
        fails=effect.fails,
        reason=effect.reason,
        base=effect.base,
        head=effect.head,
        ci=(estimate.low, estimate.high) if math.isfinite(estimate.high) else None,
    )


def _notes(report: Report) -> list[str]:
    notes = [report.policy_note] if report.policy_note else []
    for c in report.comparisons:
        name = label(Identity.of(c.current))
        if c.config_change:
            notes.append(
                f"{name}: kernel config changed ({c.config_change}) — a likely cause of any change in its time"
            )
        if c.verdict in ("regression", "inconclusive"):
            notes.append(f"{name}: {c.reason}")
    for d in report.differences:
        notes.append(f"environment differs: {d.field} {d.baseline} → {d.current}")
    if report.skipped_kernels:
        notes.append(
            f"not measured here: {', '.join(report.skipped_kernels)} (too slow to set up for every pull request); "
            "the baseline job on main measures it"
        )
    if report.gpus:
        notes.append(f"cases shared out across GPUs {'; '.join(report.gpus)}; both sides of a row on one GPU")
    sides: tuple[tuple[str, EnvironmentRecord], ...] = (
        ("baseline", report.baseline_environment),
        ("current", report.current_environment),
    )
    for side, environment in sides:
        pin_note = _pin_note(side, environment)
        if pin_note:
            notes.append(pin_note)
        if environment.clock_drift:
            notes.append(f"{side} run: clocks drifted — {environment.clock_drift}")
        if environment.throttled_rounds:
            notes.append(
                f"{side} run: {environment.throttled_rounds} timing round(s) while NVML reported "
                f"throttling ({', '.join(environment.throttle_reasons)}); those samples are flagged in "
                "the results"
            )
    return notes


def _pin_note(side: str, environment: EnvironmentRecord) -> str | None:
    """What a side's results say of its Triton against the pin it was measured under
    (measuring/triton_pin.py); None where it held, or where the file predates the check."""
    pin = environment.triton_pin
    if pin is None or environment.triton_pin_matches:
        return None
    triton = f"Triton {environment.triton or 'of unknown version'} (commit {environment.triton_commit or 'unknown'})"
    if environment.triton_pin_matches is False:
        return f"{side} run: measured with {triton}, not the pinned {pin[:12]}; its times may not compare"
    return f"{side} run: measured with {triton}; whether it is the pinned {pin[:12]} cannot be told"


def label(benchmark: Identity) -> str:
    """`kernel[variant] · suite/case · shape dtype`, as plain text (renderers escape it)."""
    where = f"{benchmark.suite}/{benchmark.case} · " if benchmark.suite else ""
    name = variant_name(benchmark.kernel, benchmark.variant, benchmark.mode)
    return f"{name} · {where}{shape_text(benchmark.shape)} {benchmark.dtype}"


def shape_text(shape: dict[str, int]) -> str:
    """A case's parameters as "M=8192 K=2048 N=5120", in the order the suite gives them."""
    return " ".join(f"{k}={v}" for k, v in shape.items())


def to_text(summary: Summary) -> str:
    return json.dumps(summary.to_json(), indent=1, allow_nan=False) + "\n"


def load(path: Path) -> Summary:
    """Read and validate a comparison file (schema.py's limits)."""
    return load_json(path, "comparison file", _SUMMARY, MAX_JSON_BYTES)
