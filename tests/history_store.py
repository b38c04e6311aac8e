"""Stores of generated runs for the history tests and the detection figures in docs/history.md,
with the noise measured between separate H200 runs (tests/fixtures/noise.json, a copy of the
history-noise experiment's of 2026-11-30: tests/fixtures/README.md).

A run's benchmarks of one case share a deviation drawn from the measured deviations of a median
(what moves a whole case between runs), and each benchmark has its own drawn from the measured
deviations of a ratio of two benchmarks of one case, divided by sqrt(2) (so that a ratio moves
as measured). The subject's own benchmark (fused) can take a step: every run from `at` on is
`step` slower; so can the reference (gemm) on one case, `reference_step`; and the environment can
change at the same run (torch 2.11.0 → 2.12.0, `environment_changes`); and fused a second
step: every run from `second_at` on `second_step` slower again."""

from __future__ import annotations

import datetime
import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from perfbot.records import results as results_file
from perfbot.records import store
from perfbot.records.run import Benchmark, Environment, Results, Settings, gpu_slug

NOISE = json.loads((Path(__file__).parent / "fixtures" / "noise.json").read_text())
CASES = {"t5-v1.1-xl": (8192, 2048, 5120, 0.452), "gemma-7b-m16": (16, 3072, 24576, 0.0757)}
START = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)  # one run an hour from here
KERNELS = {"fused": 1.0, "gemm": 1.005, "eager": 1.5}  # times relative to the case's fused


def commit(index: int) -> str:
    return hashlib.sha1(f"commit {index}".encode()).hexdigest()


def make_runs(
    count: int,
    *,
    step: float = 0.0,
    at: int = 25,
    seed: int = 0,
    samples: int = 30,
    reference_step: float = 0.0,
    reference_case: str = "gemma-7b-m16",
    environment_changes: bool = False,
    second_step: float = 0.0,
    second_at: int | None = None,
) -> list[Results]:
    """`count` runs, oldest first; run `at` (0-based) and later have fused `step` slower (and from
    `second_at` on `second_step` slower again), gemm on `reference_case` `reference_step` slower
    (negative: faster), and torch 2.12.0 if `environment_changes`; the same draws whatever they are."""
    rng = np.random.default_rng(seed)
    median_noise, ratio_noise = np.array(NOISE["median"]), np.array(NOISE["ratio"]) / math.sqrt(2)
    runs = []
    for index in range(count):
        benchmarks = []
        for case, (m, k, n, fused_ms) in CASES.items():
            shared = rng.choice(median_noise)
            for kernel, scale in KERNELS.items():
                level = fused_ms * scale * math.exp(shared + rng.choice(ratio_noise))
                if kernel == "fused" and index >= at:
                    level *= 1 + step
                if kernel == "gemm" and case == reference_case and index >= at:
                    level *= 1 + reference_step
                if kernel == "fused" and second_at is not None and index >= second_at:
                    level *= 1 + second_step
                within = level * (1 + 0.003 * rng.standard_normal(samples))  # the spread inside one run
                benchmarks.append(
                    Benchmark(
                        kernel=kernel,
                        shape={"M": m, "K": k, "N": n},
                        dtype="bfloat16",
                        samples_ms=[round(float(v), 6) for v in within],
                        suite="pr",
                        case=case,
                        flops=4 * m * k * n,
                    )
                )
        runs.append(
            Results(
                environment=Environment(
                    gpu_name="NVIDIA H200",
                    kernels_commit=commit(index),
                    torch="2.12.0" if environment_changes and index >= at else "2.11.0",
                ),
                settings=Settings(samples=samples, under_test=["fused"], bounds=["gemm"]),
                benchmarks=benchmarks,
                created=(START + datetime.timedelta(hours=index)).isoformat(),
            )
        )
    return runs


def scaled(runs: list[Results], kernel: str, factor: float, start: int) -> list[Results]:
    """The runs with `kernel`'s samples multiplied by `factor` from run `start` on (a baseline that
    moved, say)."""
    return [
        replace(
            run,
            benchmarks=[
                replace(b, samples_ms=[v * factor for v in b.samples_ms]) if b.kernel == kernel and i >= start else b
                for b in run.benchmarks
            ],
        )
        for i, run in enumerate(runs)
    ]


def write_store(directory: Path, runs: list[Results]) -> Path:
    """The store `perfbot baseline update` makes of `runs`, stored one after another: each file
    named as store.add names it (store.file_name), with the time it is stored, but written plainly
    (store.add's checks, lock and synced writes cost 2.5 ms a run, and the history tests store
    thousands). test_store.py checks that the two stores are alike."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".lock").touch()  # as store.add leaves it
    for run in runs:
        text = results_file.to_text(run)
        folder = directory / gpu_slug(run.environment.gpu_name)
        folder.mkdir(exist_ok=True)
        (folder / store.file_name(text, _stored_now())).write_text(text, encoding="utf-8")
    return directory


_last_stored = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def _stored_now() -> datetime.datetime:
    """The time now, made later than the last run's: a run stored after another sorts after it,
    however fast they are written."""
    global _last_stored
    _last_stored = max(datetime.datetime.now(datetime.UTC), _last_stored + datetime.timedelta(microseconds=1))
    return _last_stored
