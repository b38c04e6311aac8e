"""The steps file: every new step `perfbot history --check --out-steps FILE` reported, as records
a program reads strictly (the baseline workflow's bisect and issue jobs). Format 1:

    {"format": 1, "steps": [{
      "id": "3f2a9c0d1e4b5a67@20261130T172932.251330Z",
      "gpu": "NVIDIA H200", "label": "mykernel · pr/case · M=8 K=4 bfloat16", "watched": "mykernel/bound",
      "change_percent": 2.43, "before_level": 0.9946, "after_level": 1.019,
      "before": {"run": 24, "stored": "...", "commit": "..."}, "after": {...}, "good": {...}, "bad": {...},
      "benchmark": {"suite": "pr", "case": "case", "kernel": "mykernel", "variant": {}},
      "under_test": true, "cause": "subject", "own": true, "recent": true, "fails": true, "runner": "h200",
      "bisect": ["perfbot", "bisect", "--repo", ".", "--good", "...", "--bad", "...", "--measure", "..."],
      "evidence": ["the lines the check printed for it", "..."]}]}

`id` names a step for good: its series (Series.identity) and the stored stamp of its first run,
SERIES@STORED, as `perfbot history ack --step` takes it. `cause` is whose step it is
(perfbot/history/attribution.py; null for a benchmark not the subject's), `own` whether it is the
subject's own time.
`runner` is the runner label of the GPU kind that bisects it (`--runner LABEL=RESULTS`: the first
label whose run has the step's GPU), or null where none measured it. `bisect` is the command
the check printed, word by word, or null where it printed none; a file whose command is not the
one perfbot builds from the record's own benchmark and commits is refused, so a steps file can
make the bisect job run `perfbot bisect` of a benchmark and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, model_validator, with_config

from ..errors import BadInput
from ..files import write_atomic
from ..records import results
from ..records.run import FORWARD, Label, Mode, Variant
from ..records.schema import (
    GPU_LABEL,
    MAX_ITEMS,
    MAX_TEXT,
    Finite,
    IntOnly,
    Name,
    NoControl,
    Text,
    bad_input,
    load_json,
)
from . import acknowledgements, steps
from .attribution import Cause
from .series import Run

FORMAT: Final = 1
# A step's id goes into an HTML comment of an issue (its marker): hex, @, a stamp's digits and dots.
STEP_ID = r"^[0-9a-f]{16}@[0-9A-Za-z.]{1,40}$"
_STAMP = re.compile(r"[0-9A-Za-z.]{1,40}")
MAX_EVIDENCE = 64  # lines: describe() prints a handful

Commit = Annotated[str, Field(pattern=r"^[0-9a-f]{7,40}$")]
RunnerLabel = Annotated[str, Field(pattern=r"^" + GPU_LABEL.pattern + r"$")]
Word = Annotated[str, Field(max_length=20_000), NoControl]  # of a command line, printed as it runs


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class RunRef:
    run: Annotated[int, Field(ge=1)]  # its number among its GPU's runs, as the check prints it
    stored: Name  # when it entered the store
    commit: Commit | None  # the commit its kernels were measured at, where the run says


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Benchmark:
    """What `perfbot sample` times to measure the step at a commit."""

    suite: Label
    case: Label
    kernel: Name
    variant: Variant = field(default_factory=dict)
    mode: Mode = FORWARD  # written only where it is not the forward, as results write it


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class StepRecord:
    id: Annotated[str, Field(pattern=STEP_ID)]
    gpu: Name
    label: Text
    watched: Text  # "mykernel/bound", or "median"
    change_percent: Finite
    before_level: Finite  # the watched value's level before the step
    after_level: Finite  # and after it
    before: RunRef  # the last run before the step, as estimated
    after: RunRef  # the first run of it
    good: RunRef  # the range its commit lies in
    bad: RunRef
    benchmark: Benchmark
    under_test: bool  # one of the subject's own implementations
    cause: Cause | None  # whose step it is (attribution.Cause); None for a benchmark not the subject's
    own: bool  # the subject's own time moved: only then is a commit range bisected
    recent: bool  # it starts among the newest runs of its GPU
    fails: bool  # what fails the check: a recent slowdown of the subject's own
    runner: RunnerLabel | None
    bisect: Annotated[list[Word], Field(max_length=16)] | None
    evidence: Annotated[list[Text], Field(max_length=MAX_EVIDENCE)]

    @model_validator(mode="after")
    def _the_command_perfbot_builds(self) -> StepRecord:
        if self.bisect is None:
            return self
        good, bad = self.good.commit, self.bad.commit
        if good is None or bad is None or self.bisect != steps.bisect_argv(self.benchmark, good, bad):
            raise ValueError("bisect: is not the perfbot bisect command of the step's benchmark and commits")
        return self


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class StepsFile:
    format: Annotated[Literal[1], IntOnly] = FORMAT
    steps: Annotated[list[StepRecord], Field(max_length=MAX_ITEMS)] = field(default_factory=list)


_FILE = TypeAdapter(StepsFile)


def step_id(found: steps.Found) -> str:
    """The step's id as `perfbot history ack` takes it; a stamp of other characters than the
    store writes (a file put there by hand) is replaced by its digest, to be safe in a marker."""
    if _STAMP.fullmatch(found.after.stored):
        return found.step_id
    return acknowledgements.step_id(found.series.identity, hashlib.sha256(found.after.stored.encode()).hexdigest()[:16])


def record(found: steps.Found, runner: str | None, printed: list[str]) -> StepRecord:
    """A step as the check reported it, with the lines it printed for it (steps.describe)."""
    series, bench = found.series, found.series.bench
    good, bad = found.good.commit, found.bad.commit
    # The check prints the command where it prints "find the commit" (steps.describe).
    bisect = steps.bisect_argv(bench, good, bad) if found.own and good and bad and good != bad else None
    return StepRecord(
        id=step_id(found),
        gpu=series.gpu,
        label=series.label[:MAX_TEXT],
        watched=series.watched_label,
        change_percent=round(found.step.change_percent, 4),
        before_level=found.step.before,
        after_level=found.step.after,
        before=_run(found.before),
        after=_run(found.after),
        good=_run(found.good),
        bad=_run(found.bad),
        benchmark=Benchmark(bench.suite, bench.case, bench.kernel, dict(bench.variant), bench.mode),
        under_test=series.under_test,
        cause=found.attribution.cause if found.attribution is not None else None,
        own=found.own,
        recent=found.recent,
        fails=found.fails,
        runner=runner,
        bisect=bisect,
        evidence=[line[:MAX_TEXT] for line in printed[:MAX_EVIDENCE]],
    )


def _run(run: Run) -> RunRef:
    return RunRef(run.index + 1, run.stored, run.commit)


def runners(pairs: list[tuple[str, Path]]) -> dict[str, str]:
    """GPU name -> the runner label that bisects its steps: the first LABEL whose results file
    (the run that label measured) has that GPU."""
    chosen: dict[str, str] = {}
    for label, path in pairs:
        if not GPU_LABEL.fullmatch(label):
            raise BadInput(
                f"--runner {label!r}: not a runner label (1 to 64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit)"
            )
        gpu = results.load(path).environment.gpu_name
        if gpu is None:
            raise BadInput(f"{path}: the run names no GPU, so no step is bisected on runner {label}")
        chosen.setdefault(gpu, label)
    return chosen


def save(path: Path, records: list[StepRecord]) -> None:
    """Write the file, read back as its consumers read it first: what is written always loads."""
    written = asdict(StepsFile(FORMAT, records))
    for record in written["steps"]:
        if record["benchmark"].get("mode") == FORWARD:
            del record["benchmark"]["mode"]
    text = json.dumps(written, indent=1, ensure_ascii=False) + "\n"
    try:
        _FILE.validate_json(text, strict=True)
    except ValidationError as error:
        raise bad_input(f"{path} (not written)", error, "steps file") from None
    write_atomic(path, text)


def load(path: Path) -> StepsFile:
    return load_json(path, "steps file (perfbot history --check --out-steps)", _FILE)
