"""The results file: a run's records (run.py) as JSON, written atomically and read back
validated, from any format this perfbot reads.

Format versions (all are read; perfbot writes the newest):
  1 -- {"format": 1, "created", "environment", "settings", "benchmarks": [...], "failures": [...]}.
       A benchmark is identified by (kernel, shape, dtype); a variant is written into the kernel's
       name ("kernel[value]"), with each variant parameter also a field of the record.
  2 -- the same keys, with typed `environment` (Environment) and `settings` (Settings), and each
       benchmark's variant a field of its own: {"kernel": "mine", "variant": {"mode": "fast"}},
       holding the parameters set away from their defaults ({} for none). A benchmark is
       identified by (kernel, variant, shape, dtype). Format 1 is read into the same records.
  3 -- format 2 with each benchmark's `compiled` (records/compiled.py): the Triton kernels its
       checked call launched, their resources, digests and SASS counts, or null.
  4 -- format 3 with a benchmark's and a failure's `mode` ("backward", "forward+backward"), part of
       its identity, and the settings' `chosen_modes` (--mode). Written only by a run with a row in
       a mode other than the forward, which has no `mode` field: a run of forward rows alone is
       still written as format 3, and a row of format 1 to 3 is a forward one.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config

from ..errors import BadInput
from ..files import check_output, write_atomic
from .run import Benchmark, Environment, Failure, Results, Settings
from .schema import MAX_ITEMS, MAX_JSON_BYTES, IntOnly, bad_input, read_limited, shown

READS = (1, 2, 3, 4)  # the formats this perfbot reads; it writes run.FORMAT


def _iso_or_empty(text: str) -> str:
    if text:
        try:
            datetime.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("must be an ISO 8601 date and time, like 2026-11-30T05:00:00+00:00") from None
    return text


Created = Annotated[str, Field(max_length=64), AfterValidator(_iso_or_empty)]


def save(results: Results, path: Path, *, overwrite: bool = False) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of either. The
    output rule (files.py) holds."""
    check_output(path, overwrite=overwrite)
    write_atomic(path, to_text(results), replace=overwrite)


def to_text(results: Results) -> str:
    """The file's JSON text; NaN (a NaN in an output, so no relative error) is written as null."""
    return json.dumps(_finite_or_none(results.to_json()), indent=1, allow_nan=False) + "\n"


@with_config(ConfigDict(strict=True, defer_build=True))
@dataclass(frozen=True)
class _File:
    """The file as written: format 2, 3 (the same with compiled kernels) or 4 (with modes)."""

    format: Annotated[Literal[2, 3, 4], IntOnly]
    environment: Environment
    benchmarks: Annotated[list[Benchmark], Field(max_length=MAX_ITEMS)]
    settings: Settings = field(default_factory=Settings)
    failures: Annotated[list[Failure], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    created: Created = ""


@with_config(ConfigDict(strict=True, extra="ignore", defer_build=True))
@dataclass(frozen=True)
class _Version:
    format: int


_FILE = TypeAdapter(_File)
_VERSION = TypeAdapter(_Version)


def load(path: Path) -> Results:
    """Read and validate a results file of any format this perfbot reads: every field by type
    and range (schema.py's limits); anything else is a BadInput naming the file, the place and
    what was expected."""
    return parse(read_limited(path, "results file", MAX_JSON_BYTES), str(path))


def parse(data: bytes | str, where: str) -> Results:
    """A results file's text, validated (see `load`)."""
    version: object
    try:
        version = _VERSION.validate_json(data, strict=True).format
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        if first["loc"][:1] != ("format",):
            raise bad_input(where, error, "results file") from None
        version = None if first["type"] == "missing" else first.get("input")
    if not isinstance(version, int) or isinstance(version, bool) or version not in READS:
        raise BadInput(
            f"{where}: results format {shown(version)} is not supported by this perfbot (it reads formats "
            f"{', '.join(map(str, READS))}); re-run `perfbot run` with this version to produce a current file"
        )
    if version == 1:
        data = _format1_as_format2(data, where)
    try:
        parsed = _FILE.validate_json(data, strict=True)
    except ValidationError as error:
        raise bad_input(where, error, "results file") from None
    results = Results(
        parsed.environment, parsed.settings, list(parsed.benchmarks), list(parsed.failures), parsed.created
    )
    seen: dict[Any, int] = {}
    for i, bench in enumerate(results.benchmarks):
        if bench.key in seen:
            raise BadInput(
                f"{where}: benchmarks[{i}] repeats benchmarks[{seen[bench.key]}] "
                f"({bench.name}, {bench.shape}, {bench.dtype})"
            )
        if any(index >= len(bench.samples_ms) for index in bench.throttled_samples):
            raise BadInput(
                f"{where}: benchmarks[{i}].throttled_samples: an index past its {len(bench.samples_ms)} samples"
            )
        seen[bench.key] = i
    return results


def _format1_as_format2(data: bytes | str, where: str) -> str:
    """Format 1 named a variant in the benchmark's name, "kernel[value]" (only when it differed
    from the defaults), and kept each variant parameter as a field of the record beside the
    others, one format 2 does not have. Those whose value the name shows become format 2's
    `variant`; other unknown fields are dropped, as format 1's reader ignored them. Then the
    file is read (and validated) as format 2."""
    try:
        file = json.loads(data)
    except (ValueError, RecursionError):
        raise BadInput(f"{where}: is not a JSON results file (format 1)") from None
    known = {f.name for f in fields(Benchmark)} | {f.name for f in fields(Failure)}
    for records in (file.get("benchmarks"), file.get("failures")):
        for record in records if isinstance(records, list) else ():
            if not isinstance(record, dict) or not isinstance(record.get("kernel"), str):
                continue  # validation says what is wrong with it
            kernel, _, bracket = record["kernel"].partition("[")
            values = bracket.removesuffix("]").split(",") if bracket else []
            extra = {key: record.pop(key) for key in list(record) if key not in known}
            record.update(kernel=kernel, variant={k: v for k, v in extra.items() if v in values})
    file["format"] = 2
    return json.dumps(file)


def _finite_or_none(value: Any) -> Any:
    # JSON has no NaN: a NaN relative error (a NaN in the output) is written as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_none(v) for v in value]
    return value
