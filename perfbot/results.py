"""The results file: every sample of every benchmark of a run, and where it was measured.

Format versions:
  1 -- {"format": 1, "created", "environment", "settings", "benchmarks": [...], "failures": [...]}
       A benchmark is identified by (kernel, shape, dtype) and carries every sample in ms.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config

from .errors import BadInput
from .files import write_atomic
from .schema import (MAX_ITEMS, MAX_NAME, MAX_SAMPLES, Count, Dim, Ms, Name, NonNegative, Record, Text,
                     _bounded, _printable, bad_input, read_limited, shown, MAX_JSON_BYTES)

FORMAT = 1

# A label that may be empty (a benchmark outside any suite has suite "").
Label = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_printable)]
Shape = Annotated[dict[Name, Dim], Field(min_length=1, max_length=16)]


def _iso_or_empty(text: str) -> str:
    if text:
        try:
            datetime.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("must be an ISO 8601 date and time, like 2026-11-30T05:00:00+00:00") from None
    return text


Created = Annotated[str, Field(max_length=64), AfterValidator(_iso_or_empty)]


@with_config(ConfigDict(strict=True))
@dataclass(frozen=True)
class Benchmark:
    kernel: Name  # implementation name, "[tanh]" appended for the tanh GELU
    shape: Shape
    dtype: Name
    samples_ms: Annotated[list[Ms], Field(min_length=1, max_length=MAX_SAMPLES)]
    suite: Label = ""
    case: Label = ""
    approximate: Label = "none"
    flops: Count = 0
    bytes: Count = 0  # the fewest bytes the benchmark must move through memory
    relative_error: NonNegative | None = None
    error_bound: NonNegative | None = None
    config: Record | None = None  # the Triton kernel's launch config, if any
    # Indices of samples taken while NVML reported a power, thermal or clock slowdown.
    throttled_samples: Annotated[list[Annotated[int, Field(ge=0, lt=MAX_SAMPLES)]],
                                 Field(max_length=MAX_SAMPLES)] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, int], ...], str]:
        return (self.kernel, tuple(sorted(self.shape.items())), self.dtype)

    @property
    def median_ms(self) -> float:
        return median(self.samples_ms)

    @property
    def tflops(self) -> float:
        return self.flops / (self.median_ms * 1e-3) / 1e12

    @property
    def gbps(self) -> float:
        return self.bytes / (self.median_ms * 1e-3) / 1e9


@with_config(ConfigDict(strict=True))
@dataclass(frozen=True)
class Failure:
    """An implementation that raised or gave a wrong result: reported, never timed."""

    kernel: Name
    shape: Shape
    dtype: Name
    reason: Annotated[Text, Field(min_length=1)]
    suite: Label = ""
    case: Label = ""
    approximate: Label = "none"
    relative_error: NonNegative | None = None
    error_bound: NonNegative | None = None


class EnvironmentRecord(TypedDict, total=False):
    """The keys of `Results.environment` that perfbot reads, with their types; other keys (NVML's
    state, versions) are kept as bounded JSON."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    gpu_name: Name | None
    gpu_sm_count: Count | None
    driver: Text | None
    cuda: Text | None
    torch: Text | None
    triton: Text | None
    triton_commit: Text | None
    kernels_commit: Text | None
    kernels_dirty: bool | None
    host: Text | None
    throttled_rounds: Count
    throttle_reasons: Annotated[list[Name], Field(max_length=64)]
    clock_drift: Text


class SettingsRecord(TypedDict, total=False):
    """The keys of `Results.settings` that perfbot reads, with their types."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    suites: Annotated[list[Name], Field(max_length=MAX_ITEMS)]
    samples: Count
    warmup_calls: Count
    seed: int
    timing: Text
    side: Name
    ab_run: Name
    against: Text | None
    head: Text | None


Environment = Annotated[EnvironmentRecord, AfterValidator(_bounded)]
Settings = Annotated[SettingsRecord, AfterValidator(_bounded)]


@dataclass(frozen=True)
class Results:
    environment: dict[str, Any]
    settings: dict[str, Any]
    benchmarks: list[Benchmark]
    failures: list[Failure] = field(default_factory=list)
    created: str = ""

    def peer(self, bench: Benchmark, implementation: str) -> Benchmark | None:
        """The benchmark of `implementation` on `bench`'s case, with the same GELU if it has one."""
        for other in self.benchmarks:
            if (other.suite, other.case, other.dtype, other.shape) != (bench.suite, bench.case, bench.dtype, bench.shape):
                continue
            if other.kernel == implementation and implementation in ("gemm", "copy"):
                return other
            if other.kernel.split("[")[0] == implementation and other.approximate == bench.approximate:
                return other
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "created": self.created,
            "environment": self.environment,
            "settings": self.settings,
            "benchmarks": [asdict(b) for b in self.benchmarks],
            "failures": [asdict(f) for f in self.failures],
        }


def save(results: Results, path: Path, *, overwrite: bool = False) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of either."""
    if path.exists() and not path.is_dir() and not overwrite:
        raise BadInput(f"{path}: already exists; choose another name or pass --overwrite")
    write_atomic(path, to_text(results), replace=overwrite)


def to_text(results: Results) -> str:
    """The file's JSON text; NaN (a NaN in an output, so no relative error) is written as null."""
    return json.dumps(_finite_or_none(results.to_json()), indent=1, allow_nan=False) + "\n"


@with_config(ConfigDict(strict=True))
@dataclass(frozen=True)
class _File:
    """The file as written: format 1."""

    format: Literal[1]
    environment: Environment
    benchmarks: Annotated[list[Benchmark], Field(max_length=MAX_ITEMS)]
    settings: Settings = field(default_factory=dict)  # type: ignore[assignment]
    failures: Annotated[list[Failure], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    created: Created = ""


_FILE = TypeAdapter(_File)
BENCHMARK = TypeAdapter(Benchmark)
FAILURE = TypeAdapter(Failure)


def load(path: Path) -> Results:
    """Read and validate a results file: every field by type and range (schema.py's limits);
    anything else is a BadInput naming the file, the place and what was expected."""
    return parse(read_limited(path, "results file", MAX_JSON_BYTES), str(path))


def parse(data: bytes | str, where: str) -> Results:
    """A results file's text, validated (see `load`)."""
    try:
        parsed = _FILE.validate_json(data, strict=True)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        if first["loc"][:1] == ("format",):
            version = None if first["type"] == "missing" else first.get("input")
            raise BadInput(
                f"{where}: results format {shown(version)} is not supported by this perfbot (it reads "
                f"format {FORMAT}); re-run `perfbot run` with this version to produce a current file") from None
        raise bad_input(where, error, "results file") from None
    seen: dict[Any, int] = {}
    for i, bench in enumerate(parsed.benchmarks):
        if bench.key in seen:
            raise BadInput(
                f"{where}: benchmarks[{i}] repeats benchmarks[{seen[bench.key]}] "
                f"({bench.kernel}, {bench.shape}, {bench.dtype})"
            )
        if any(index >= len(bench.samples_ms) for index in bench.throttled_samples):
            raise BadInput(f"{where}: benchmarks[{i}].throttled_samples: an index past its {len(bench.samples_ms)} samples")
        seen[bench.key] = i
    return Results(environment=dict(parsed.environment), settings=dict(parsed.settings),
                   benchmarks=list(parsed.benchmarks), failures=list(parsed.failures), created=parsed.created)


def gpu_slug(gpu_name: str) -> str:
    """A GPU model's name folded for comparison and folder names: case, spaces, punctuation."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def same_gpu(a: object, b: object) -> bool:
    """Whether two environment.gpu_name values name one GPU model."""
    return isinstance(a, str) and isinstance(b, str) and gpu_slug(a) == gpu_slug(b) != ""


def _finite_or_none(value: Any) -> Any:
    # JSON has no NaN: a NaN relative error (a NaN in the output) is written as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_none(v) for v in value]
    return value
