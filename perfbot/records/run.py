"""What a run recorded: where it was measured (`Environment`), how (`Settings`), every sample
of every benchmark and every failure, and the `Results` that holds them, with what a report asks
of them (a benchmark's peers, its fastest baseline, its share of each bound).

The records are validated as a file is read into them (results.py reads and writes the file):
strict types within schema.py's limits, and unknown fields skipped.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from statistics import median
from typing import Annotated, Any, Final

from pydantic import ConfigDict, Field, TypeAdapter, with_config

from .autotune import OwnPicks, Picks
from .compiled import Compiled
from .schema import (
    MAX_ITEMS,
    MAX_SAMPLES,
    Count,
    Dim,
    Finite,
    Label,
    Ms,
    Name,
    NonNegative,
    Record,
    Text,
)

FORMAT: Final = 3  # the results format `Results.to_json` writes of a forward run; results.py lists every format
# The format of a run with a row in another mode: a perfbot that predates modes refuses it rather
# than read a backward row as a forward one.
MODES_FORMAT: Final = 4
FORWARD: Final = "forward"  # the mode of a row that names none
Mode = Annotated[str, Field(pattern=r"^(forward|backward|forward\+backward)$")]  # loading/subject.py MODES
_RECORD = ConfigDict(strict=True, extra="ignore", defer_build=True)  # a newer perfbot may add fields: they are skipped

Shape = Annotated[dict[Name, Dim], Field(min_length=1, max_length=16)]
Variant = Annotated[dict[Name, Name], Field(max_length=16)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# implementation -> {path: sha256}: the files its code came from (provenance.py)
Sources = Annotated[dict[Name, Annotated[dict[Text, Sha256], Field(max_length=MAX_ITEMS)]], Field(max_length=256)]

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
    # The Triton the project pins ([tool.perfbot] triton-commit, or the side's own in an A/B) and
    # whether the one measured with is it: None when that cannot be told, or in a file that predates
    # the check (measuring/triton_pin.py).
    triton_pin: Sha | None = None
    triton_pin_matches: bool | None = None
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
    # Set when the SM clock moved during the run by more than DRIFT_PERCENT (measuring/environment.py):
    # the samples' speed may have changed under them (docs/method.md, "Throttling and drift.").
    clock_drift: Text | None = None


def gpu_slug(gpu_name: str) -> str:
    """A GPU model's name folded for comparison and folder names: case, spaces, punctuation."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def same_gpu(a: object, b: object) -> bool:
    """Whether two environment.gpu_name values name one GPU model."""
    return isinstance(a, str) and isinstance(b, str) and gpu_slug(a) == gpu_slug(b) != ""


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
    # What the run was cut down to by name (--case, --kernel, --variant); empty: not cut down. A
    # benchmark outside it is not missing from the run (compare.py).
    chosen_cases: Annotated[list[Name], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    chosen_kernels: Annotated[list[Name], Field(max_length=MAX_ITEMS)] = field(default_factory=list)
    chosen_variants: Annotated[dict[Name, Annotated[list[Name], Field(max_length=MAX_ITEMS)]], Field(max_length=16)] = (
        field(default_factory=dict)
    )
    chosen_modes: Annotated[list[Mode], Field(max_length=3)] = field(default_factory=list)  # --mode
    # The files each implementation's code came from, with their sha256: a path relative to the
    # side's checkout where the file is inside it, else absolute. Empty in files written before
    # perfbot recorded them (docs/files.md, "The formats").
    sources: Sources = field(default_factory=dict)


# What names one benchmark within a run: its implementation, variant, shape and dtype, and its
# mode where that is not the forward (so that a forward row's key is what it was before modes).
Key = tuple[Any, ...]


def benchmark_key(
    kernel: str, variant: Mapping[str, str], shape: Mapping[str, int], dtype: str, mode: str = FORWARD
) -> Key:
    key = (kernel, tuple(sorted(variant.items())), tuple(sorted(shape.items())), dtype)
    return key if mode == FORWARD else (*key, mode)


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
    # The Triton kernels its checked call launched, as compiled (compiled.py); None where nothing
    # was compiled (the interpreter) or in files written before perfbot recorded them.
    compiled: Compiled | None = None
    # Each triton.autotune'd kernel it launched: the config it ran per key, and how that was chosen.
    autotune: Picks = field(default_factory=list)
    # An A/B row whose sides' picks differ where their code or configs do: each side at its own
    # picks, timed beside `samples_ms` (the sides at a common config).
    own_picks: OwnPicks | None = None
    # What was timed (loading/subject.py MODES): part of the benchmark's identity, as its variant
    # is. Absent in files written before modes, and from forward rows: "forward".
    mode: Mode = FORWARD

    @property
    def key(self) -> Key:
        return benchmark_key(self.kernel, self.variant, self.shape, self.dtype, self.mode)

    @property
    def name(self) -> str:
        return variant_name(self.kernel, self.variant, self.mode)

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
    mode: Mode = FORWARD

    @property
    def key(self) -> Key:
        """As Benchmark.key: the benchmark that failed."""
        return benchmark_key(self.kernel, self.variant, self.shape, self.dtype, self.mode)

    @property
    def name(self) -> str:
        return variant_name(self.kernel, self.variant, self.mode)


def failure_of(bench: Benchmark, reason: str) -> Failure:
    """A benchmark that was timed and then found wrong (on fresh inputs, or too fast to be
    credible): a failure of its own, in its place."""
    return Failure(
        kernel=bench.kernel,
        variant=bench.variant,
        shape=bench.shape,
        dtype=bench.dtype,
        reason=reason,
        suite=bench.suite,
        case=bench.case,
        mode=bench.mode,
    )


def variant_name(kernel: str, variant: Mapping[str, str], mode: str = FORWARD) -> str:
    """The implementation with its variant and its mode, as reports show it: "triton" and
    "triton[offset=1]" in the forward, "triton[backward]" and "triton[offset=1,backward]" in
    another mode: a variant's parameters are NAME=VALUE, a mode a bare word."""
    shown = [*(f"{k}={v}" for k, v in variant.items()), *([mode] if mode != FORWARD else [])]
    return f"{kernel}[{','.join(shown)}]" if shown else kernel


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
        return _peer_among(self._on_the_case(bench).get(implementation, []), bench)

    def _on_the_case(self, bench: Benchmark) -> dict[str, list[Benchmark]]:
        """Every implementation's benchmarks on `bench`'s case, by implementation: looked up once
        for all the peers of a benchmark, since a file of thousands of benchmarks made that
        quadratic per peer."""
        case = (bench.suite, bench.case, bench.dtype, bench.shape, bench.mode)
        by_implementation: dict[str, list[Benchmark]] = {}
        for other in self.benchmarks:
            if (other.suite, other.case, other.dtype, other.shape, other.mode) == case:
                by_implementation.setdefault(other.kernel, []).append(other)
        return by_implementation

    def fastest_baseline(self, bench: Benchmark) -> tuple[str, float] | None:
        """For a benchmark of the subject's own: the fastest baseline on its case (not a bound, not
        its own) and how many times faster the benchmark is (above 1: faster)."""
        if bench.kernel not in self.settings.under_test:
            return None
        on_the_case = self._on_the_case(bench)
        others = set(on_the_case) - set(self.settings.under_test) - set(self.settings.bounds)
        peers = [peer for name in sorted(others) if (peer := _peer_among(on_the_case[name], bench)) is not None]
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
        on_the_case = self._on_the_case(bench)
        for name in self.settings.bounds:
            bound = _peer_among(on_the_case.get(name, []), bench)
            if bound is None:
                continue
            if bound.flops and bench.flops:
                shares.append((bound.name, bench.tflops / bound.tflops))
            elif not bound.flops and bound.bytes and bench.bytes:
                shares.append((bound.name, bench.gbps / bound.gbps))
        return shares

    def to_json(self) -> dict[str, Any]:
        """The file's content: a forward row without its mode, and a run of forward rows alone in
        FORMAT, as before modes; a run with a row in another mode in MODES_FORMAT."""
        forward = all(b.mode == FORWARD for b in self.benchmarks) and all(f.mode == FORWARD for f in self.failures)
        return {
            "format": FORMAT if forward else MODES_FORMAT,
            "created": self.created,
            "environment": _plain(self.environment),
            "settings": _without_forward(_plain(self.settings), "chosen_modes", []),
            "benchmarks": [_without_forward(_plain(b)) for b in self.benchmarks],
            "failures": [_without_forward(_plain(f)) for f in self.failures],
        }


_ATOMS: Final = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """What dataclasses.asdict makes of `value`, without its deep copy of every number and
    string: a run holds up to millions of samples, and copying each one was half the time of
    writing a results file."""
    if type(value) in _ATOMS:  # immutable: asdict's copy is the value itself
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple, rebuilt field by field
        return type(value)(*[_plain(v) for v in value])
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return copy.deepcopy(value)


def _without_forward(record: dict[str, Any], field: str = "mode", default: Any = FORWARD) -> dict[str, Any]:
    """A record as a file writes it: a field at the value it had before modes left out."""
    if record.get(field) == default:
        del record[field]
    return record


def _peer_among(same_case: list[Benchmark], bench: Benchmark) -> Benchmark | None:
    """Results.peer, among one implementation's benchmarks on `bench`'s case."""
    found = next((other for other in same_case if other.variant == bench.variant), None)
    if found is None and all(not other.variant for other in same_case):
        found = next(iter(same_case), None)  # it takes no variant: its one benchmark serves all
    return found


# Each record alone, validated as a file's are: for the records a worker process sends (worker.py).
BENCHMARK = TypeAdapter(Benchmark)
FAILURE = TypeAdapter(Failure)
ENVIRONMENT = TypeAdapter(Environment)
SETTINGS = TypeAdapter(Settings)
