"""Results in other tools' formats: pytest-benchmark's JSON, which existing dashboards ingest."""

from __future__ import annotations

import platform
from typing import Any

import pytest_benchmark
from pytest_benchmark.stats import Stats

from .run import FORWARD, Results


def to_pytest_benchmark(results: Results) -> dict[str, Any]:
    """One pytest-benchmark entry per benchmark, its samples in seconds, one call per round;
    the statistics are pytest-benchmark's own (pytest_benchmark.stats.Stats)."""
    env = results.environment
    benchmarks = []
    for bench in results.benchmarks:
        stats = Stats()
        for sample in bench.samples_ms:
            stats.update(sample / 1000.0)
        shape = "x".join(f"{k}{v}" for k, v in bench.shape.items())
        name = f"{bench.name}[{shape}-{bench.dtype}]"
        benchmarks.append(
            {
                "group": f"{bench.suite}/{bench.case}" if bench.suite else None,
                "name": name,
                "fullname": f"perfbot::{bench.suite or 'run'}::{name}",
                "params": {
                    "shape": bench.shape,
                    "dtype": bench.dtype,
                    **bench.variant,
                    **({"mode": bench.mode} if bench.mode != FORWARD else {}),
                },
                "param": f"{shape}-{bench.dtype}",
                "extra_info": {
                    "flops": bench.flops,
                    "bytes": bench.bytes,
                    "config": bench.config,
                    "relative_error": bench.relative_error,
                    "gpu": env.gpu_name,
                },
                "options": {
                    "timer": "cuda-graph replay, CUDA events",
                    "min_rounds": len(bench.samples_ms),
                    "warmup": True,
                    "disable_gc": False,
                    "max_time": None,
                    "min_time": None,
                },
                "stats": {**stats.as_dict(), "data": list(stats.data), "iterations": 1},
            }
        )
    return {
        "machine_info": {
            "node": env.host,
            "machine": platform.machine(),
            "python_version": env.python,
            "gpu": env.gpu_name,
            "driver": env.driver,
            "cuda": env.cuda,
            "torch": env.torch,
            "triton": env.triton,
        },
        "commit_info": {"id": env.kernels_commit, "project": "perfbot"},
        "benchmarks": benchmarks,
        "datetime": results.created,
        "version": pytest_benchmark.__version__,
    }
