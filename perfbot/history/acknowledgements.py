"""The steps a user accepted (`perfbot history ack`): kept in the store, beside its runs, so they
travel with it (on GitHub, the `perfbot-baselines` branch) and outlive the check's own state.

    STORE/acknowledged-steps.json
    {"format": 1, "acknowledged": [{"gpu": "NVIDIA H200", "series": "3f2a...", "label": "mykernel · pr/...",
      "stored": "20261130T051500.000000Z", "change_percent": 3.01, "reason": "...", "by": "alice",
      "at": "2026-12-01T10:00:00Z"}]}

A step is named by its id, SERIES@STORED: the series' identity (16 hex digits of a digest of its
GPU and benchmark) and the stamp of the step's first run in the store. An acknowledged step is
never reported again, and its run is a known break for the step search from then on: later
steps are measured from the level it started (perfbot/deciding/changepoints.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter, with_config

from ..characters import DESCRIBED, has_control
from ..errors import BadInput
from ..files import write_atomic
from ..records.schema import MAX_ITEMS, MAX_NAME, MAX_TEXT, Finite, IntOnly, Name, Text, load_json

FILE = "acknowledged-steps.json"
_IDENTITY = r"[0-9a-f]{16}"
_STEP_ID = re.compile(rf"({_IDENTITY})@([^\s@]{{1,{MAX_NAME}}})")

Reason = Annotated[Text, Field(min_length=1)]
Identity = Annotated[str, Field(pattern=rf"^{_IDENTITY}$")]


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Acknowledgement:
    gpu: Name
    series: Identity  # Series.identity
    label: Text  # for people reading the file
    stored: Name  # when the run that starts the step was stored
    change_percent: Finite  # the step as it was found when acknowledged
    reason: Reason
    by: Name | None  # who acknowledged it, when known
    at: Name  # when (UTC, ISO 8601)

    @property
    def step_id(self) -> str:
        return step_id(self.series, self.stored)


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class Acknowledged:
    format: Annotated[Literal[1], IntOnly] = 1
    acknowledged: Annotated[list[Acknowledgement], Field(max_length=MAX_ITEMS)] = field(default_factory=list)


_FILE = TypeAdapter(Acknowledged)


def step_id(series: str, stored: str) -> str:
    """What names a step for `perfbot history ack --step`: SERIES@STORED."""
    return f"{series}@{stored}"


def parse_step_id(text: str) -> tuple[str, str]:
    """(series identity, stamp of the step's first run) of a step id; anything else is BadInput."""
    match = _STEP_ID.fullmatch(text)
    if match is None:
        raise BadInput(
            f"--step {text[:80]!r}: a step id is SERIES@STORED (16 hex digits, @, the stamp of the step's first run), "
            "as `perfbot history --check` and `perfbot history --store DIR` print it"
        )
    return match.group(1), match.group(2)


def check_reason(reason: str) -> str:
    """The reason as it will be recorded: one line, not blank, at most MAX_TEXT characters."""
    text = reason.strip()
    if not text:
        raise BadInput("--reason is empty: say why the step is accepted (the site shows it at the step)")
    if len(text) > MAX_TEXT:
        raise BadInput(f"--reason is {len(text)} characters long; at most {MAX_TEXT}")
    if has_control(text):
        raise BadInput(f"--reason must be one line, without {DESCRIBED}")
    return text


def load(store_dir: Path) -> list[Acknowledgement]:
    """The store's acknowledgements, oldest first (none without the file)."""
    path = store_dir / FILE
    return load_json(path, "acknowledged-steps file", _FILE).acknowledged if path.exists() else []


def save(store_dir: Path, acknowledged: list[Acknowledgement]) -> Path:
    path = store_dir / FILE
    text = json.dumps(asdict(Acknowledged(acknowledged=acknowledged)), indent=1, ensure_ascii=False) + "\n"
    write_atomic(path, text, replace=True)
    return path
