"""The results file: every sample of every benchmark of a run, and where it was measured.

Format versions:
  1 -- {"format": 1, "created", "environment", "settings", "benchmarks": [...], "failures": [...]}
       A benchmark is identified by (kernel, shape, dtype) and carries every sample in ms.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from .errors import BadInput
from .files import read_text, write_atomic

FORMAT = 1


@dataclass(frozen=True)
class Benchmark:
    kernel: str  # implementation name, "[tanh]" appended for the tanh GELU
    shape: dict[str, int]
    dtype: str
    samples_ms: list[float]
    suite: str = ""
    case: str = ""
    approximate: str = "none"
    flops: int = 0
    bytes: int = 0  # the fewest bytes the benchmark must move through memory
    relative_error: float | None = None
    error_bound: float | None = None
    config: dict[str, Any] | None = None  # the Triton kernel's launch config, if any
    # Indices of samples taken while NVML reported a power, thermal or clock slowdown.
    throttled_samples: list[int] = field(default_factory=list)

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


@dataclass(frozen=True)
class Failure:
    """An implementation that raised or gave a wrong result: reported, never timed."""

    kernel: str
    shape: dict[str, int]
    dtype: str
    reason: str
    suite: str = ""
    case: str = ""
    approximate: str = "none"
    relative_error: float | None = None
    error_bound: float | None = None


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


def load(path: Path) -> Results:
    """Read and validate a results file; anything malformed is a BadInput naming the problem."""
    try:
        data = json.loads(read_text(path, "results file"))
    except json.JSONDecodeError as error:
        raise BadInput(f"{path}: not valid JSON (truncated?): {error}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected a JSON object with a \"format\" key")
    version = data.get("format")
    if version != FORMAT:
        raise BadInput(
            f"{path}: results format {version!r} is not supported by this perfbot (it reads format {FORMAT}); "
            "re-run `perfbot run` with this version to produce a current file"
        )
    for key, kind in (("environment", dict), ("benchmarks", list)):
        if not isinstance(data.get(key), kind):
            raise BadInput(f"{path}: \"{key}\" must be a JSON {kind.__name__}")
    benchmarks = [_benchmark(path, i, item) for i, item in enumerate(data["benchmarks"])]
    seen: dict[Any, int] = {}
    for i, bench in enumerate(benchmarks):
        if bench.key in seen:
            raise BadInput(
                f"{path}: benchmarks[{i}] repeats benchmarks[{seen[bench.key]}] "
                f"({bench.kernel}, {bench.shape}, {bench.dtype})"
            )
        seen[bench.key] = i
    failures = [_failure(path, i, item) for i, item in enumerate(data.get("failures", []))]
    return Results(
        environment=data["environment"],
        settings=data.get("settings", {}),
        benchmarks=benchmarks,
        failures=failures,
        created=str(data.get("created", "")),
    )


def _benchmark(path: Path, index: int, item: Any) -> Benchmark:
    where = f"{path}: benchmarks[{index}]"
    if not isinstance(item, dict):
        raise BadInput(f"{where}: expected an object")
    _identity(where, item)
    samples = item.get("samples_ms")
    if not isinstance(samples, list) or not samples:
        raise BadInput(f"{where}: samples_ms must be a non-empty list of milliseconds")
    for value in samples:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise BadInput(f"{where}: samples_ms holds {value!r}; every sample must be a positive finite number")
    known = {f for f in Benchmark.__dataclass_fields__}
    return Benchmark(**{k: v for k, v in item.items() if k in known})


def _failure(path: Path, index: int, item: Any) -> Failure:
    where = f"{path}: failures[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("reason"), str):
        raise BadInput(f"{where}: expected an object with a \"reason\"")
    _identity(where, item)
    known = {f for f in Failure.__dataclass_fields__}
    return Failure(**{k: v for k, v in item.items() if k in known})


def _identity(where: str, item: dict) -> None:
    if not isinstance(item.get("kernel"), str) or not item["kernel"]:
        raise BadInput(f"{where}: \"kernel\" must be a non-empty string")
    shape = item.get("shape")
    if not isinstance(shape, dict) or not shape or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in shape.values()
    ):
        raise BadInput(f"{where}: \"shape\" must be an object of integers, got {shape!r}")
    if not isinstance(item.get("dtype"), str):
        raise BadInput(f"{where}: \"dtype\" must be a string")


def _finite_or_none(value: Any) -> Any:
    # JSON has no NaN: a NaN relative error (a NaN in the output) is written as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_none(v) for v in value]
    return value
