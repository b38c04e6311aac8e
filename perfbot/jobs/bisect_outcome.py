"""The outcome file of `perfbot bisect --out-json FILE`: what one bisect concluded, for a program to
read (the baseline workflow's issue job). Format 1:

    {"format": 1, "result": "culprit", "good": "<sha>", "bad": "<sha>", "first_bad": "<sha>",
     "candidates": ["<sha>"], "message": "first bad commit: <sha>", "range_size": 16,
     "probes": [{"sha": "<sha>", "subject": "kernel as tuned", "samples": 20, "median_ms": 0.4977,
                 "verdict": "good", "note": null}], "non_monotonic": [],
     "last_good": "<sha>", "earliest_bad": "<sha>", "compiled_change": null}

`result` says what the bisect found; `perfbot bisect` exits as it does without the file:
- "culprit": the first bad commit, `first_bad` (exit 0);
- "no-culprit": bad is slower than good, but no one commit is named: the commits that may be the
  first bad one (`candidates`) could not be built or measured (exit 3);
- "not-reproduced": bad is not significantly slower than good, so there is no step in the range
  to find (exit 2); `probes` holds the two ends;
- "failed": it stopped before a verdict (a revision that is no commit, an end that cannot be
  measured, the environment); `message` says why.
`good` and `bad` are full commits once the bisect resolved them, else the revisions as given.
`last_good` and `earliest_bad` (a culprit: the first bad commit) are the two commits a concluded
bisect ended between, and `compiled_change` what changed in the measured benchmark's compiled
kernels from one to the other (deciding/compiled_change.py; null where the measure command
handed none back, bisect_probers.py). Added within format 1; absent in older files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, TypeAdapter, with_config

from ..deciding.compiled_change import CompiledChange
from ..deciding.picks import picked
from ..errors import PerfbotError
from ..files import write_atomic
from ..records.schema import MAX_ITEMS, MAX_SAMPLES, IntOnly, Ms, Text, clean, load_json
from .bisect import NotReproduced, Outcome, Probe, Sha

FORMAT: Final = 1
Result = Literal["culprit", "no-culprit", "not-reproduced", "failed"]
MAX_OUTCOME_BYTES = 8 * 1024 * 1024  # MAX_ITEMS probes of a few hundred characters each


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class ProbeRecord:
    sha: Sha
    subject: Text
    samples: Annotated[int, Field(ge=0, le=MAX_SAMPLES)]  # how many were taken
    median_ms: Ms | None
    verdict: Literal["good", "bad"] | None
    note: Text | None  # why it was skipped, or what made it stand out
    autotune: Text | None = None  # the configs its autotuned kernels ran, in words


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class OutcomeFile:
    result: Result
    good: Text
    bad: Text
    message: Text
    first_bad: Sha | None = None
    candidates: Annotated[list[Sha], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    range_size: Annotated[int, Field(ge=0)] = 0  # commits from good to bad, both included
    probes: Annotated[list[ProbeRecord], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    non_monotonic: Annotated[list[Text], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    format: Annotated[Literal[1], IntOnly] = FORMAT
    last_good: Sha | None = None
    earliest_bad: Sha | None = None
    compiled_change: CompiledChange | None = None
    picks_change: Text | None = None  # where the two commits' autotune picks differ, in words


_FILE = TypeAdapter(OutcomeFile)


def concluded(outcome: Outcome) -> OutcomeFile:
    """A bisect that ran to its end: the first bad commit, or the candidates that hide it."""
    found = outcome.first_bad
    message = (
        f"first bad commit: {found}"
        if found
        else "the first bad commit is one of "
        + ", ".join(c[:12] for c in outcome.candidates)
        + ": the commits between could not be built or measured"
    )
    return OutcomeFile(
        "culprit" if found else "no-culprit",
        outcome.probes[0].sha,  # the good end; the bad end is the newest commit probed
        outcome.probes[-1].sha,
        clean(message),
        found,
        list(outcome.candidates),
        outcome.range_size,
        [_probe(p) for p in outcome.probes],
        [clean(note) for note in outcome.non_monotonic],
        last_good=outcome.last_good,
        earliest_bad=outcome.earliest_bad,
        compiled_change=outcome.compiled_change,
        picks_change=clean(outcome.picks_change) if outcome.picks_change else None,
    )


def not_reproduced(error: NotReproduced) -> OutcomeFile:
    return OutcomeFile(
        "not-reproduced",
        error.good.sha,
        error.bad.sha,
        clean(str(error)),
        probes=[_probe(error.good), _probe(error.bad)],
    )


def failed(good: str, bad: str, why: str) -> OutcomeFile:
    return OutcomeFile("failed", clean(good, 200), clean(bad, 200), clean(why))


def _probe(probe: Probe) -> ProbeRecord:
    picks = clean(picked(probe.autotune)) or None
    return ProbeRecord(
        probe.sha,
        probe.subject,
        len(probe.samples),
        probe.median_ms,
        probe.verdict,
        probe.note or probe.unusable,
        picks,
    )


@contextmanager
def kept(path: Path | None, good: str, bad: str) -> Iterator[Callable[[Outcome], OutcomeFile]]:
    """Around a bisect: `keep(outcome)` records how it concluded; an error it stops on before
    that is recorded as not-reproduced or failed, and raised on. Written to `path`, if given."""
    done: list[OutcomeFile] = []

    def keep(outcome: Outcome) -> OutcomeFile:
        done.append(concluded(outcome))
        if path is not None:
            save(path, done[0])
        return done[0]

    try:
        yield keep
    except NotReproduced as error:
        if path is not None and not done:
            save(path, not_reproduced(error))
        raise
    except PerfbotError as error:
        if path is not None and not done:
            save(path, failed(good, bad, str(error)))
        raise


def save(path: Path, outcome: OutcomeFile) -> None:
    write_atomic(path, json.dumps(asdict(outcome), indent=1, ensure_ascii=False) + "\n")


def load(path: Path) -> OutcomeFile:
    return load_json(path, "bisect outcome file (perfbot bisect --out-json)", _FILE, MAX_OUTCOME_BYTES)
