"""The results file: every sample of every benchmark of a run, and where it was measured.

Format versions (both are read; perfbot writes the newest):
  1 -- {"format": 1, "created", "environment", "settings", "benchmarks": [...], "failures": [...]}.
       A benchmark is identified by (kernel, shape, dtype); a variant is written into the kernel's
       name ("kernel[value]"), with each variant parameter also a field of the record.
  2 -- the same keys, with typed `environment` (Environment) and `settings` (Settings), and each
       benchmark's variant a field of its own: {"kernel": "mine", "variant": {"mode": "fast"}},
       holding the parameters set away from their defaults ({} for none). A benchmark is
       identified by (kernel, variant, shape, dtype). Format 1 is read into the same records.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from statistics import median
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config

from ..errors import BadInput
from ..files import check_output, write_atomic
from .schema import (
    MAX_ITEMS,
    MAX_JSON_BYTES,
    MAX_NAME,
    MAX_SAMPLES,
    Count,
    Dim,
    Finite,
    Ms,
    Name,
    NonNegative,
    Record,
    Text,
    _printable,
    bad_input,
    read_limited,
    shown,
)

FORMAT: Final = 2
_RECORD = ConfigDict(strict=True, extra="ignore")  # a newer perfbot may add fields: they are skipped

# A label that may be empty (a benchmark outside any suite has suite "").
Label = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_printable)]
Shape = Annotated[dict[Name, Dim], Field(min_length=1, max_length=16)]
Variant = Annotated[dict[Name, Name], Field(max_length=16)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# implementation -> {path: sha256}: the files its code came from (provenance.py)
Sources = Annotated[dict[Name, Annotated[dict[Text, Sha256], Field(max_length=MAX_ITEMS)]], Field(max_length=256)]


def _iso_or_empty(text: str) -> str:
    if text:
        try:
            datetime.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("must be an ISO 8601 date and time, like 2026-11-30T05:00:00+00:00") from None
    return text


Created = Annotated[str, Field(max_length=64), AfterValidator(_iso_or_empty)]
# A full git commit name: SHA-1 (40 hex digits) or SHA-256 (64).
Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")]


@with_config(_RECORD)
@dataclass(frozen=True)
class GpuState:
    """What NVML said about the GPU at one moment."""

    sm_clock_mhz: Count
    memory_clock_mhz: Count
    max_sm_clock_mhz: Count
    temperature_c: int
    power_w: Finite
    power_limit_w: Finite
    clock_event_reasons: Annotated[list[Name], Field(max_length=64)]  # why clocks are below max


@with_config(_RECORD)
@dataclass(frozen=True)
class GpuStates:
    before: GpuState | None = None
    after: GpuState | None = None


@with_config(_RECORD)
@dataclass(frozen=True)
class Environment:
    """Where a run was measured: software versions, the GPU, its state, and how stable it was."""

    host: Text | None = None
    python: Text | None = None
    perfbot: Text | None = None
    torch: Text | None = None
    cuda: Text | None = None
    triton: Text | None = None
    triton_commit: Text | None = None
    triton_path: Text | None = None  # where the imported Triton lives: tells two environments of one version apart
    gpu_name: Name | None = None  # None without a CUDA GPU
    gpu_sm_count: Count | None = None
    gpu_memory_bytes: Count | None = None
    gpu_l2_bytes: Count | None = None
    driver: Text | None = None
    nvml_error: Text | None = None
    gpu_state: GpuStates = field(default_factory=GpuStates)
    kernels_commit: Text | None = None  # the git commit of the measured kernels
    kernels_dirty: bool | None = None  # whether their files differ from it
    throttled_rounds: Count = 0  # timing rounds while NVML reported a power, thermal or clock slowdown
    throttle_reasons: Annotated[list[Name], Field(max_length=64)] = field(default_factory=list)
    sm_clock_first_last_mhz: Annotated[list[Count], Field(max_length=2)] | None = None
    clock_drift: Text | None = None  # set when the SM clock moved more than 2% during the run


@with_config(_RECORD)
@dataclass(frozen=True)
class Merge:
    """The head side of `perfbot ab --merge`: the head merged into the base's tip, which the
    base side measured."""

    base: Sha  # the base's tip
    head: Sha  # the head's own commit
    commit: Sha | None = None  # the merge commit measured; None: the head contained the tip (a fast-forward)


@with_config(_RECORD)
@dataclass(frozen=True)
class Settings:
    """How a run was measured, and for an A/B run, which one and against what."""

    suites: Annotated[list[Name], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    samples: Count = 0
    warmup_calls: Count = 0
    seed: int = 0
    timing: Text = ""  # how a sample is taken: a baseline timed another way is flagged
    error_bounds: Annotated[dict[Name, NonNegative], Field(max_length=16)] = field(default_factory=dict)
    subject: Name | None = None  # the subject's name
    under_test: Annotated[list[Name], Field(max_length=64)] = field(default_factory=list)  # the subject's own
    bounds: Annotated[list[Name], Field(max_length=64)] = field(default_factory=list)  # floors and ceilings
    side: Name | None = None  # "base" or "head" in an A/B run
    ab_run: Name | None = None  # both sides of one interleaved A/B run share it: their samples pair up
    against: Text | None = None  # the base's commit
    head: Text | None = None  # the head's commit, when it is not the checkout's own
    merge: Merge | None = None  # how the head was merged into the base's tip (`perfbot ab --merge`)
    triton_commits: Annotated[dict[Name, Text | None], Field(max_length=4)] = field(default_factory=dict)
    # How an A/B decided how many rounds to take (sequential.py); None: `samples` rounds each.
    stopping: Text | None = None
    # Rounds per block of a sequential A/B, the unit its verdict counts.
    block_rounds: Annotated[int, Field(ge=1, le=MAX_SAMPLES)] | None = None
    # The GPUs the run was sharded across, "INDEX: MODEL"; each benchmark names its own.
    gpus: Annotated[list[Text], Field(max_length=64)] = field(default_factory=list)
    # Implementations left out of this run on purpose (e.g. max-autotune, for the baseline job).
    skipped_kernels: Annotated[list[Name], Field(max_length=64)] = field(default_factory=list)
    # The files each implementation's code came from, with their sha256: a path relative to the
    # side's checkout where the file is inside it, else absolute. Empty in files from before 2026-12.
    sources: Sources = field(default_factory=dict)


@with_config(_RECORD)
@dataclass(frozen=True)
class Benchmark:
    kernel: Name  # the implementation
    shape: Shape
    dtype: Name
    samples_ms: Annotated[list[Ms], Field(min_length=1, max_length=MAX_SAMPLES)]
    variant: Variant = field(default_factory=dict)  # parameters set away from their defaults
    suite: Label = ""
    case: Label = ""
    flops: Count = 0
    bytes: Count = 0  # the fewest bytes the benchmark must move through memory
    relative_error: NonNegative | None = None
    error_bound: NonNegative | None = None
    config: Record | None = None  # the Triton kernel's launch config, if any
    # Indices of samples taken while NVML reported a power, thermal or clock slowdown.
    throttled_samples: Annotated[list[Annotated[int, Field(ge=0, lt=MAX_SAMPLES)]], Field(max_length=MAX_SAMPLES)] = (
        field(default_factory=list)
    )
    gpu: Text | None = None  # "INDEX: MODEL" of the GPU that measured it, in a run sharded across GPUs

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, int], ...], str]:
        return (self.kernel, tuple(sorted(self.variant.items())), tuple(sorted(self.shape.items())), self.dtype)

    @property
    def name(self) -> str:
        return variant_name(self.kernel, self.variant)

    @property
    def median_ms(self) -> float:
        return median(self.samples_ms)

    @property
    def tflops(self) -> float:
        return self.flops / (self.median_ms * 1e-3) / 1e12

    @property
    def gbps(self) -> float:
        return self.bytes / (self.median_ms * 1e-3) / 1e9


@with_config(_RECORD)
@dataclass(frozen=True)
class Failure:
    """An implementation that raised or gave a wrong result: reported, never timed."""

    kernel: Name
    shape: Shape
    dtype: Name
    reason: Annotated[Text, Field(min_length=1)]
    variant: Variant = field(default_factory=dict)
    suite: Label = ""
    case: Label = ""
    relative_error: NonNegative | None = None
    error_bound: NonNegative | None = None

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, int], ...], str]:
        """As Benchmark.key: the benchmark that failed."""
        return (self.kernel, tuple(sorted(self.variant.items())), tuple(sorted(self.shape.items())), self.dtype)

    @property
    def name(self) -> str:
        return variant_name(self.kernel, self.variant)


def variant_name(kernel: str, variant: dict[str, str]) -> str:
    """The implementation with its variant, as reports show it: "triton[offset=1]"."""
    return f"{kernel}[{','.join(f'{k}={v}' for k, v in variant.items())}]" if variant else kernel


@dataclass(frozen=True)
class Results:
    environment: Environment
    settings: Settings
    benchmarks: list[Benchmark]
    failures: list[Failure] = field(default_factory=list)
    created: str = ""

    def peer(self, bench: Benchmark, implementation: str) -> Benchmark | None:
        """The benchmark of `implementation` on `bench`'s case: of the same variant, else of none
        (an implementation that takes no variant serves every variant of the case)."""
        same_case = [
            other
            for other in self.benchmarks
            if other.kernel == implementation
            and (other.suite, other.case, other.dtype, other.shape)
            == (bench.suite, bench.case, bench.dtype, bench.shape)
        ]
        found = next((other for other in same_case if other.variant == bench.variant), None)
        if found is None and all(not other.variant for other in same_case):
            found = next(iter(same_case), None)  # it takes no variant: its one benchmark serves all
        return found

    def fastest_baseline(self, bench: Benchmark) -> tuple[str, float] | None:
        """For a benchmark of the subject's own: the fastest baseline on its case (not a bound, not
        its own) and how many times faster the benchmark is (above 1: faster)."""
        if bench.kernel not in self.settings.under_test:
            return None
        others = {b.kernel for b in self.benchmarks} - set(self.settings.under_test) - set(self.settings.bounds)
        peers = [peer for name in sorted(others) if (peer := self.peer(bench, name)) is not None]
        if not peers:
            return None
        fastest = min(peers, key=lambda peer: peer.median_ms)
        return fastest.name, fastest.median_ms / bench.median_ms

    def bound_shares(self, bench: Benchmark) -> list[tuple[str, float]]:
        """For a benchmark of the subject's own: each bound on its case, with the share of the
        bound's throughput the benchmark reaches, in the unit the bound counts (FLOP/s if it counts
        flops, else bytes/s; a unit the benchmark does not count gives no share)."""
        if bench.kernel not in self.settings.under_test:
            return []
        shares = []
        for name in self.settings.bounds:
            bound = self.peer(bench, name)
            if bound is None:
                continue
            if bound.flops and bench.flops:
                shares.append((bound.name, bench.tflops / bound.tflops))
            elif not bound.flops and bound.bytes and bench.bytes:
                shares.append((bound.name, bench.gbps / bound.gbps))
        return shares

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "created": self.created,
            "environment": asdict(self.environment),
            "settings": asdict(self.settings),
            "benchmarks": [asdict(b) for b in self.benchmarks],
            "failures": [asdict(f) for f in self.failures],
        }


def save(results: Results, path: Path, *, overwrite: bool = False) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of either. The
    output rule (files.py) holds."""
    check_output(path, overwrite=overwrite)
    write_atomic(path, to_text(results), replace=overwrite)


def to_text(results: Results) -> str:
    """The file's JSON text; NaN (a NaN in an output, so no relative error) is written as null."""
    return json.dumps(_finite_or_none(results.to_json()), indent=1, allow_nan=False) + "\n"


@with_config(ConfigDict(strict=True))
@dataclass(frozen=True)
class _File:
    """The file as written: format 2."""

    format: Literal[2]
    environment: Environment
    benchmarks: Annotated[list[Benchmark], Field(max_length=MAX_ITEMS)]
    settings: Settings = field(default_factory=Settings)
    failures: Annotated[list[Failure], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    created: Created = ""


@with_config(ConfigDict(strict=True, extra="ignore"))
@dataclass(frozen=True)
class _Version:
    format: int


_FILE = TypeAdapter(_File)
READS = (1, 2)  # the formats this perfbot reads
_VERSION = TypeAdapter(_Version)
BENCHMARK = TypeAdapter(Benchmark)
FAILURE = TypeAdapter(Failure)
ENVIRONMENT = TypeAdapter(Environment)
SETTINGS = TypeAdapter(Settings)


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
