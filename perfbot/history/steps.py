"""The steps `perfbot history --check` reports: every step found in the store's history that no
earlier check reported, with the range of commits it lies in and the `perfbot bisect` command
that would find the commit. The steps already reported are kept in a small file beside the
store (`reported-steps.json`), so that each is reported once, though a step's place may move by
a run or two as later runs arrive.

    {"format": 1, "reported": [{"gpu": "NVIDIA H200", "series": "3f2a...", "label": "mykernel · pr/...",
      "stored": "20261130T051500.000000Z", "change_percent": 2.1}]}

Only a slower step of one of the subject's own implementations fails the check: a step in
what the check watches for it whose cause is the subject's own time (perfbot/history/attribution.py),
starting among the newest RECENT_RUNS runs. A baseline that moved, a reference that moved under
the subject (a faster vendor library), the whole run moving (a slower machine) are reported and fail
nothing, and so is a step found long after it happened (the first check of an old store). The
commit bisect is offered only for a step of the subject's own time.

A step a user acknowledged (`perfbot history ack`, kept in the store: perfbot/history/acknowledgements.py)
is never reported again, matched as the reported ones are, whatever this file says.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Protocol

from pydantic import ConfigDict, Field, TypeAdapter, with_config

from ..deciding.changepoints import Step
from ..errors import BadInput
from ..files import write_atomic
from ..records.schema import MAX_ITEMS, Finite, IntOnly, Name, Text, load_json
from . import acknowledgements
from .acknowledgements import Acknowledgement
from .attribution import Attribution, attribute
from .series import History, Run, Series

STATE_FILE = "reported-steps.json"
# A step found again within this many runs of a reported one is the same step: its estimated
# place moves a little as later runs arrive (docs/history.md, "What it finds").
SAME_STEP_RUNS = 5
# A new step fails the check only if it starts among this many newest runs: a step is found
# within some runs of its start, and its place estimated within a few (docs/history.md, "What
# it finds").
RECENT_RUNS = 20
# The commit range runs from this many runs before a step's estimated start to this many after,
# since the estimate may be off by a run or two.
RANGE_BEFORE, RANGE_AFTER = 3, 2


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Reported:
    gpu: Name
    series: Name  # Series.identity
    label: Text  # for people reading the file
    stored: Name  # when the run that starts the step was stored
    change_percent: Finite


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class State:
    format: Annotated[Literal[1], IntOnly] = 1
    reported: Annotated[list[Reported], Field(max_length=MAX_ITEMS)] = field(default_factory=list)


_STATE = TypeAdapter(State)


@dataclass(frozen=True)
class Found:
    series: Series
    step: Step
    before: Run  # the last run before the step, as estimated
    after: Run  # the first run of it
    good: Run  # the range its commit lies in: a few runs before `after`
    bad: Run  # and a few after
    recent: bool  # it starts among the newest RECENT_RUNS runs of its GPU
    attribution: Attribution | None  # whose step it is; None for a benchmark not the subject's own
    environment: tuple[tuple[Run, str], ...] = ()  # the environment's changes from `good` to `bad`

    @property
    def slower(self) -> bool:
        return self.step.after > self.step.before

    @property
    def own(self) -> bool:
        """The subject's own time moved: the step is its code's or its environment's, not a
        reference's or the machine's."""
        return self.attribution is not None and self.attribution.cause == "subject"

    @property
    def unclear(self) -> bool:
        return self.attribution is not None and self.attribution.cause == "unclear"

    @property
    def fails(self) -> bool:
        """A slowdown of the subject's own time, found while it is news."""
        return self.slower and self.own and self.recent

    @property
    def step_id(self) -> str:
        """What `perfbot history ack --step` takes: the series and the stamp of the step's first run."""
        return acknowledgements.step_id(self.series.identity, self.after.stored)

    def acknowledgement(self, reason: str, by: str | None, at: str) -> Acknowledgement:
        return Acknowledgement(
            self.series.gpu,
            self.series.identity,
            self.series.label[:200],
            self.after.stored,
            round(self.step.change_percent, 3),
            reason,
            by,
            at,
        )

    def reported(self) -> Reported:
        return Reported(
            self.series.gpu,
            self.series.identity,
            self.series.label[:200],
            self.after.stored,
            round(self.step.change_percent, 3),
        )


def load_state(path: Path) -> State:
    return load_json(path, "reported-steps file", _STATE) if path.exists() else State()


def save_state(path: Path, state: State) -> None:
    write_atomic(path, json.dumps(asdict(state), indent=1) + "\n", replace=True)


def find_all(history: History) -> list[Found]:
    """Every step in every series of the store, oldest first within a series."""
    found = []
    for series in history.series:
        runs = history.runs[series.gpu]
        watched = [run for run, _ in series.watched]
        # Whose step is told between the same runs as the step: from the step or acknowledged
        # break before it to the next one.
        cuts = sorted({0, len(watched), *series.breaks, *(step.at for step, _, _ in series.steps)})
        for step, before, after in series.steps:
            good = watched[max(0, step.at - RANGE_BEFORE)]
            bad = watched[min(len(watched) - 1, step.at + RANGE_AFTER)]
            recent = after > len(runs) - 1 - RECENT_RUNS
            at = cuts.index(step.at)
            segments = watched[cuts[at - 1] : step.at], watched[step.at : cuts[at + 1]]
            attribution = attribute(series, *segments, step.after / step.before - 1) if series.under_test else None
            environment = tuple((run, change) for run in runs[good + 1 : bad + 1] for change in run.changed)
            found.append(
                Found(series, step, runs[before], runs[after], runs[good], runs[bad], recent, attribution, environment)
            )
    return found


def new_steps(history: History, state: State) -> list[Found]:
    """The steps no earlier check reported, but for those whose cause is not yet clear (held_back)."""
    return [f for f in _unreported(history, state) if not f.unclear]


def held_back(history: History, state: State) -> list[Found]:
    """The steps no earlier check reported whose cause is not yet clear: reported, and recorded,
    only once later runs tell (perfbot/history/attribution.py)."""
    return [f for f in _unreported(history, state) if f.unclear]


def _unreported(history: History, state: State) -> list[Found]:
    index = {(run.stored, gpu): run.index for gpu, runs in history.runs.items() for run in runs}
    reported: dict[tuple[str, str], list[int]] = {}
    for r in state.reported:
        if (r.stored, r.gpu) in index:
            reported.setdefault((r.gpu, r.series), []).append(index[(r.stored, r.gpu)])
    for series in history.series:  # an acknowledged step is as good as reported, for good
        reported.setdefault((series.gpu, series.identity), []).extend(at for at, _ in series.acknowledged)
    return [
        f
        for f in find_all(history)
        if all(abs(f.after.index - at) > SAME_STEP_RUNS for at in reported.get((f.series.gpu, f.series.identity), []))
    ]


def describe(found: Found, store: Path | None = None) -> list[str]:
    """What a reader needs: the benchmark, the step, whose it is, where it lies, for a step of the
    subject's own time how to find its commit, and how to accept it (`store`: the store's folder,
    for that command)."""
    series, step = found.series, found.step
    lines = [
        f"{series.gpu} · {series.label}: {series.watched_label} {step.change_percent:+.2f}% "
        f"({step.before:.4g} → {step.after:.4g}) from run {found.after.index + 1} "
        f"(stored {found.after.stored})",
    ]
    if found.attribution is None:
        lines.append("  a baseline or bound moved, not this repository's code: this fails no check")
    else:
        lines.append(f"  watched: {series.watched_why}")
        lines.append(found.attribution.describe(series))
        if found.own and not found.recent:
            lines.append(f"  it started more than {RECENT_RUNS} runs ago: reported as history, it fails no check")
    for run, change in found.environment:
        lines.append(f"  environment changed in the step's range, at run {run.index + 1}: {change}")
    good, bad = found.good.commit, found.bad.commit
    if good and bad and good != bad:
        lines.append(
            f"  between commits {good[:12]} (run {found.good.index + 1}) and {bad[:12]} (run {found.bad.index + 1})"
        )
        if found.own:
            lines.append(f"  find the commit: {bisect_command(series, good, bad)}")
            if found.environment:
                lines.append("  if the bisect finds no commit, the environment's change is the cause")
    elif good and good == bad:
        lines.append(f"  the runs around it all measured commit {good[:12]}: the environment moved, not the code")
    else:
        lines.append("  the runs do not say which commits they measured")
    triton_good, triton_bad = found.good.triton_commit, found.bad.triton_commit
    if found.own and triton_good and triton_bad and triton_good != triton_bad:
        lines.append(
            f"  Triton moved too ({triton_good[:12]} → {triton_bad[:12]}): perfbot bisect --repo TRITON_CHECKOUT "
            f"--good {triton_good} --bad {triton_bad} {_benchmark_options(series)}"
        )
    lines.append(f"  acknowledge it: {acknowledge_command(found, store)}")
    return lines


def acknowledge_command(found: Found, store: Path | None) -> str:
    where = shlex.quote(str(store)) if store is not None else "STORE"
    return f"perfbot history ack --store {where} --step {shlex.quote(found.step_id)} --reason '...'"


def to_acknowledge(history: History, series_identity: str, stored: str) -> Found:
    """The step a user names to acknowledge: in that series, the step found whose first run is
    nearest the run stored at `stored`, within SAME_STEP_RUNS runs (its estimated place may have
    moved since its id was printed). One already acknowledged, or none there, is BadInput."""
    series = next((s for s in history.series if s.identity == series_identity), None)
    if series is None:
        raise BadInput(
            f"--step: no series {series_identity} in the store; `perfbot history --store DIR` lists the steps"
        )
    run = next((r for r in history.runs[series.gpu] if r.stored == stored), None)
    if run is None:
        raise BadInput(f"--step: {series.gpu} · {series.label} has no run stored at {stored}")
    for at, done in series.acknowledged:
        if abs(at - run.index) <= SAME_STEP_RUNS:
            raise BadInput(
                f"--step: the step from run {at + 1} of {series.label} is already acknowledged "
                f"(on {done.at} by {done.by or 'someone'}: {done.reason[:80]})"
            )
    found = find_all(History(history.runs, [series]))
    near = [f for f in found if abs(f.after.index - run.index) <= SAME_STEP_RUNS]
    if not near:
        raise BadInput(
            f"--step: no step found in {series.gpu} · {series.label} within {SAME_STEP_RUNS} runs of run "
            f"{run.index + 1} (stored {stored}); `perfbot history --store DIR` lists the steps"
        )
    return min(near, key=lambda f: abs(f.after.index - run.index))


def bisect_command(series: Series, good: str, bad: str) -> str:
    return shlex.join(bisect_argv(series.bench, good, bad))


class Sampled(Protocol):
    """What names one benchmark for `perfbot sample`: a results file's benchmark, or a step's
    record in the steps file."""

    @property
    def suite(self) -> str: ...
    @property
    def case(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def variant(self) -> Mapping[str, str]: ...
    @property
    def mode(self) -> str: ...


def bisect_argv(bench: Sampled, good: str, bad: str) -> list[str]:
    """The command that finds a step's commit, word by word: what the check prints (shell-quoted)
    and what the auto-bisect job runs."""
    sample = f"perfbot sample {_sample_options(bench)} --samples 30"
    return ["perfbot", "bisect", "--repo", ".", "--good", good, "--bad", bad, "--measure", sample]


def _benchmark_options(series: Series) -> str:
    return _sample_options(series.bench)


def _sample_options(bench: Sampled) -> str:
    options = ["--suite", bench.suite, "--case", bench.case, "--kernel", bench.kernel]
    options += ["--mode", bench.mode] if bench.mode != "forward" else []
    for name, value in bench.variant.items():
        options += ["--variant", f"{name}={value}"]
    return " ".join(shlex.quote(option) for option in options)
