"""Results built in memory for the compare, store and report tests: real objects, no GPU."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perfbot.records.run import Benchmark, Environment, Results, Settings

ENVIRONMENT = {
    "host": "runner-1",
    "python": "3.12.3",
    "perfbot": "0.1.0",
    "torch": "2.11.0+cu130",
    "cuda": "13.0",
    "triton": "3.6.0",
    "triton_commit": "7c56a5e40f7fd928dfd5c72902d5def0097db73a",
    "gpu_name": "NVIDIA H200",
    "gpu_sm_count": 132,
    "gpu_memory_bytes": 150109880320,
    "gpu_l2_bytes": 62914560,
    "driver": "580.159.04",
    "nvml_error": None,
    "kernels_commit": "0123456789abcdef0123456789abcdef01234567",
}
CASES = [
    ("models", "gemma-2b", 8192, 2048, 16384),
    ("models", "t5-v1.1-xl", 8192, 2048, 5120),
    ("decode", "gemma-7b-m16", 16, 3072, 24576),
]
KERNELS = {"fused": 1.0, "eager": 1.3, "gemm": 0.85}


def samples(median_ms: float, n: int = 30, noise: float = 0.004, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [round(float(v), 6) for v in median_ms * (1 + noise * rng.standard_normal(n))]


def make_results(
    slowdowns: dict[tuple[str, str], float] | None = None,
    *,
    n: int = 30,
    noise: float = 0.004,
    seed: int = 0,
    environment: dict | None = None,
    config: dict | None = None,
) -> Results:
    """Every kernel on every case; `slowdowns[(kernel, case)]` multiplies that benchmark's time."""
    slowdowns = slowdowns or {}
    benchmarks = []
    for index, (suite, case, M, K, N) in enumerate(CASES):
        for k_index, (kernel, scale) in enumerate(KERNELS.items()):
            base_ms = scale * M * K * N * 4e-12 + 0.05
            ms = base_ms * slowdowns.get((kernel, case), 1.0)
            benchmarks.append(
                Benchmark(
                    kernel=kernel,
                    shape={"M": M, "K": K, "N": N},
                    dtype="bfloat16",
                    samples_ms=samples(ms, n, noise, seed=seed * 1000 + index * 10 + k_index),
                    suite=suite,
                    case=case,
                    flops=2 * M * K * 2 * N,
                    bytes=2 * (M * K + 2 * N * K + M * N),
                    config=(config or {"path": "tma", "BLOCK_N": 128}) if kernel == "fused" else None,
                )
            )
    return Results(
        environment=Environment(**{**ENVIRONMENT, **(environment or {})}),
        settings=Settings(samples=n, under_test=["fused"], bounds=["gemm"]),
        benchmarks=benchmarks,
        created="2026-11-30T05:00:00+00:00",
    )


def ab_sides(
    slowdowns: dict[tuple[str, str], float], seed: int, stepped: tuple[str, str] | None = None
) -> tuple[Results, Results]:
    """Both sides of one interleaved A/B: each head sample is its round's base sample times the
    slowdown, with jitter of its own. On the `stepped` benchmark the GPU's clock steps 6% slower
    from round 16 on the base and from round 15 on the head (the step fell between the two sides
    of round 15): the medians of a benchmark 0.5% slower in every round move 3.5% apart."""
    base = make_results(seed=seed, noise=0.002)
    base = replace(base, settings=replace(base.settings, ab_run="ab-1"))
    rng = np.random.default_rng(seed)

    def side(bench, ratio: float, step_at: int):
        jitter = 1 + 0.001 * rng.standard_normal(len(bench.samples_ms))
        stepping = (bench.kernel, bench.case) == stepped
        clock = [1.06 if stepping and i >= step_at else 1.0 for i in range(len(jitter))]
        timed = zip(bench.samples_ms, jitter, clock, strict=True)
        return replace(bench, samples_ms=[round(s * ratio * j * c, 6) for s, j, c in timed])

    heads = [side(b, slowdowns.get((b.kernel, b.case), 1.0), 15) for b in base.benchmarks]
    return replace(base, benchmarks=[side(b, 1.0, 16) for b in base.benchmarks]), replace(base, benchmarks=heads)


def commands(group=None, path: tuple[str, ...] = ()):
    """Every command and group under `group` (default: perfbot), by the path that calls it."""
    import click

    from perfbot.cli import perfbot

    group = perfbot if group is None else group
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def parsed(path: tuple[str, ...], args: list[str]):
    """The context of `perfbot PATH ARGS` as a call makes it, nothing run: each command's context
    under its group's, so that the group's settings hold (a context made alone would leave its
    command a help option of other names, which click keeps for the rest of the process)."""
    import click

    from perfbot.cli import perfbot

    context = perfbot.make_context("perfbot", [], resilient_parsing=True)
    for at, name in enumerate(path):
        group = context.command
        assert isinstance(group, click.Group)
        command = group.get_command(context, name)
        assert command is not None, name
        last = at == len(path) - 1
        context = command.make_context(name, args if last else [], parent=context, resilient_parsing=not last)
    return context
