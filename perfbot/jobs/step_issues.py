"""The issue the baseline workflow opens for a new slowdown of the subject's own: which failing step
gets one, and its title and body.

Each failing step of the steps file gets one issue, unless its bisect did not reproduce it (bad
not significantly slower than good: then no step is there to report). The body says the step
(benchmark, GPU, change, levels, runs, stored stamps, commits), the culprit or why there is none,
what changed in the benchmark's compiled kernels from the last good commit to the first bad one
(where the bisect's measure command handed them back), the command to reproduce, and the
evidence (the check's lines, every probe of the bisect), and ends with a hidden marker naming the
step, by which a later run finds the issue again instead of opening another. Every value read
from a file goes through report.markdown_escape: the bisect's outcome comes from a GPU runner,
where pull requests' code runs too.
"""

from __future__ import annotations

import datetime
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput, EnvironmentFailure
from ..history.steps_file import StepRecord
from ..output.compiled_tables import FEW_ROWS_PER_KERNEL, compiled_markdown
from ..output.markdown import markdown_escape, unlinked
from ..records import store
from ..records.run import variant_name
from . import bisect_outcome
from .bisect_outcome import OutcomeFile

# The bisect job uploads each runner's outcomes as this artifact; the issue job downloads them all
# into one folder, each artifact in a folder of its name (download-artifact v4).
ARTIFACT = "perfbot-bisect-{runner}"
BODY_LIMIT = 65_000  # under GitHub's 65,536 characters of an issue body
TITLE_LIMIT = 256  # what GitHub keeps of a title
MAX_PROBES = 60  # rows of the bisect's table; the artifact has them all
# An issue updated before its step's first run was stored cannot be the step's; a day of margin
# for clocks.
_MARGIN = datetime.timedelta(days=1)


def marker(step_id: str) -> str:
    """The hidden last line of a step's issue. A step id is hex, @, digits, letters and dots
    (steps_file.STEP_ID), so it cannot end the comment early."""
    return f"<!-- perfbot-step: {step_id} -->"


@dataclass(frozen=True)
class Issue:
    step: StepRecord
    title: str
    body: str
    marker: str
    since: str | None  # ISO 8601: no older issue can be this step's


def outcome_path(outcomes: Path, step: StepRecord) -> Path:
    return outcomes / ARTIFACT.format(runner=step.runner) / f"{step.id}.json"


def read_outcome(outcomes: Path, step: StepRecord) -> OutcomeFile:
    """The outcome of the step's bisect, from the runner the steps file gave it to. Missing is an
    environment failure (its bisect job did not finish: re-run it); a symlink is not followed; an
    outcome of another range is refused."""
    path = outcome_path(outcomes, step)
    if path.is_symlink():
        raise BadInput(f"{path}: is a symlink; an outcome file is read only as a plain file")
    if not path.exists():
        raise EnvironmentFailure(
            f"step {step.id} ({step.label} on {step.gpu}): its bisect on {step.runner} left no outcome ({path}); "
            "see the bisect job, and re-run it to open the issue"
        )
    outcome = bisect_outcome.load(path)
    good, bad = step.good.commit or "", step.bad.commit or ""
    if not (outcome.good.startswith(good) and outcome.bad.startswith(bad)):
        raise BadInput(
            f"{path}: bisects {outcome.good[:12]}..{outcome.bad[:12]}, not the step's range {good[:12]}..{bad[:12]}"
        )
    return outcome


def not_bisected(step: StepRecord) -> str | None:
    """Why a failing step was not bisected, or None if it was meant to be."""
    if step.bisect is None:
        return "the check names no commit range to bisect (see its lines below)"
    if step.runner is None:
        return f"no runner of this GPU kind ({step.gpu}) measured main in this push"
    return None


def title(step: StepRecord) -> str:
    """The issue's title: the benchmark's suite, case, implementation and mode, which open-issues opens
    issues for only where main's suites declare them (records/declared.py), the change, the
    runner label and the run's number. No free text of the store (its GPU name, its label) is in
    it: a title is what everyone watching the repository is sent."""
    bench = step.benchmark
    runner = f" ({step.runner})" if step.runner else ""
    change = f"{step.change_percent:+.2f}%"
    # Its mode as results name it ("mykernel[backward]"): a backward step and a forward one of the
    # same case are two issues, and their titles must tell them apart.
    kernel = variant_name(bench.kernel, {}, bench.mode)
    said = f"perfbot: {kernel} {change} on {bench.suite}/{bench.case}{runner}, run {step.after.run}"
    # Plain text, but GitHub still reads its mentions and references (#26, GH-26): none works.
    return unlinked(said)[:TITLE_LIMIT]


def issue(step: StepRecord, outcome: OutcomeFile | None, run_url: str | None = None) -> Issue:
    """The issue of a failing step: its outcome, or None where it was not bisected."""
    head = [
        f"**perfbot:** a new slowdown of this repository's own code on main, found by `perfbot history --check`: "
        f"{_e(step.watched)} {step.change_percent:+.2f}%.",
        "",
        "| | |",
        "|---|---|",
        f"| benchmark | {_e(step.label)} |",
        f"| GPU | {_e(step.gpu)} |",
        f"| change | {_e(step.watched)} {step.change_percent:+.2f}% "
        f"({step.before_level:.4g} → {step.after_level:.4g}) |",
        f"| from run | {step.after.run} (stored {_e(step.after.stored)}); the run before: {step.before.run} "
        f"(stored {_e(step.before.stored)}) |",
        f"| commit range | {_commit(step.good.commit)} (run {step.good.run}) to {_commit(step.bad.commit)} "
        f"(run {step.bad.run}) |",
        "",
        "### Culprit",
        "",
        _culprit(step, outcome),
        "",
        *_compiled(outcome),
    ]
    if step.bisect is not None:
        command = shlex.join(step.bisect)
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", command))])
        show = [f"git show {outcome.first_bad}"] if outcome is not None and outcome.first_bad else []
        head += [
            "### Reproduce",
            "",
            f"In a checkout of this repository, on a GPU like the one that found it ({_e(step.gpu)}):",
        ]
        head += ["", fence + "sh", command, *show, fence, ""]
    # The id is hex, @ and a stamp's characters (steps_file.STEP_ID): nothing here needs quoting.
    head += [
        "If the slowdown is meant to stay, accept it in a checkout of the `perfbot-baselines` branch, and the "
        "check reports it no more (docs/history.md, acknowledging a step):",
        "",
        "```sh",
        f"perfbot history ack --store store --step {step.id} --reason '...'",
        "```",
        "",
    ]
    evidence = ["### Evidence", "", "What the history check printed:", ""]
    evidence += [f"- {_e(line.strip(), 1000)}" for line in step.evidence]
    if outcome is not None:
        evidence += ["", *_probes(step, outcome)]
    # A code span: the id is copied from here as it is (hex, @ and a stamp's characters).
    # The run's address is the workflow's own, checked by the command (http(s), no space, quote or
    # bracket): an autolink in <>, not escaped, since escaping breaks every bare URL's link.
    tail = ["", f"<sub>Step `{step.id}`{f', opened by <{run_url}>' if run_url else ''}.</sub>", marker(step.id)]
    body = _fit(head, evidence, tail)
    return Issue(step, title(step), body, marker(step.id), _since(step.after.stored))


def _culprit(step: StepRecord, outcome: OutcomeFile | None) -> str:
    if outcome is None:
        return f"**No culprit:** not bisected: {_e(not_bisected(step))}."
    if outcome.result == "culprit" and outcome.first_bad is not None:
        subject = next((p.subject for p in outcome.probes if p.sha == outcome.first_bad), "")
        return (
            f"**Culprit:** {_commit(outcome.first_bad)} {_e(subject)} — the first bad commit "
            f"`{outcome.first_bad}` of the {outcome.range_size} commits from good to bad."
        )
    if outcome.result == "no-culprit":
        return f"**No culprit:** the bisect found no step at a single commit: {_e(outcome.message, 1000)}."
    return f"**No culprit:** the bisect found no step: it stopped before a verdict: {_e(outcome.message, 1000)}."


def _compiled(outcome: OutcomeFile | None) -> list[str]:
    """What changed in the compiled code between the two commits the bisect ended between."""
    if outcome is None or outcome.compiled_change is None or outcome.result not in ("culprit", "no-culprit"):
        return []
    first = outcome.earliest_bad == outcome.first_bad
    bad = "the first bad one" if first else "the earliest bad one measured"
    sides = ("last good", "first bad" if first else "earliest bad")
    return [
        "### What changed in the compiled code",
        "",
        f"From the last good commit {_commit(outcome.last_good)} to {bad}, {_commit(outcome.earliest_bad)}:",
        "",
        compiled_markdown(outcome.compiled_change, FEW_ROWS_PER_KERNEL, sides),
        "",
    ]


def _probes(step: StepRecord, outcome: OutcomeFile) -> list[str]:
    measured = sum(p.samples > 0 for p in outcome.probes)
    lines = [f"The bisect on runner {_e(step.runner)} ({measured} of {outcome.range_size} commits measured):", ""]
    if not outcome.probes:
        return [*lines, f"- {_e(outcome.message, 1000)}"]
    good_ms = outcome.probes[0].median_ms
    lines += [
        "| commit | subject | samples | median ms | vs good | verdict | note |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for p in outcome.probes[:MAX_PROBES]:
        change = f"{100 * (p.median_ms / good_ms - 1):+.2f}%" if p.median_ms and good_ms else "—"
        median = f"{p.median_ms:.4f}" if p.median_ms is not None else "—"
        verdict: str = p.verdict or ("skipped" if p.samples == 0 else "—")
        if p.sha == outcome.first_bad:
            verdict += " (first bad)"
        cells = [_commit(p.sha), _e(p.subject, 80), str(p.samples), median, change, verdict, _e(p.note, 200)]
        lines.append("| " + " | ".join(cells) + " |")
    if len(outcome.probes) > MAX_PROBES:
        lines += ["", f"_…and {len(outcome.probes) - MAX_PROBES} more probes, in the bisect job's artifact._"]
    if outcome.non_monotonic:
        lines += ["", "Not monotonic:", *(f"- {_e(note, 500)}" for note in outcome.non_monotonic[:20])]
    return lines


def _fit(head: list[str], evidence: list[str], tail: list[str]) -> str:
    """The body within GitHub's limit: the evidence, last before the marker, is cut by whole lines
    if it must be."""
    cut = "_…cut here to fit in an issue: the full evidence is in the workflow run's artifacts._"
    room = BODY_LIMIT - len("\n".join(head + tail)) - len(cut) - 4
    kept: list[str] = []
    for line in evidence:
        room -= len(line) + 1
        if room < 0:
            kept += ["", cut]
            break
        kept.append(line)
    return "\n".join(head + kept + tail) + "\n"


def _since(stored: str) -> str | None:
    try:
        when = datetime.datetime.strptime(stored, store.STAMP).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None  # a stamp the store did not write: look at every issue
    return (when - _MARGIN).strftime("%Y-%m-%dT%H:%M:%SZ")


def _commit(sha: str | None) -> str:
    return f"`{sha[:12]}`" if sha and re.fullmatch(r"[0-9a-f]{7,40}", sha) else "—"


def _e(value: object, limit: int = 300) -> str:
    return markdown_escape(value, limit)
