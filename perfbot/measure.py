"""The timing engine: CUDA-graph replays, L2 flushed before each sample, implementations
interleaved, the GPU's throttle state read after every round. It returns every sample and
decides nothing (decisions live in compare)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

# Bytes read between samples to evict the previous sample's data from L2; at least this,
# and at least four times the L2 of the GPU at hand.
MIN_FLUSH_BYTES = 256 * 1024 * 1024
# GPU clock cycles to hold per sample of a round while the host queues it: about 0.1 ms at
# 2 GHz, several times what queueing one sample takes the host.
HOLD_CYCLES_PER_SAMPLE = 200_000
# How samples are taken, recorded with every result: `perfbot compare` notes when a baseline was
# timed another way (before 2026-11-30's change, L2 was flushed by overwriting the buffer).
L2_FLUSH = "L2 flushed before each sample by reading a buffer 4x its size"


@dataclass(frozen=True)
class Round:
    """The GPU's state right after one round: NVML's throttle reasons and SM clock."""

    throttle_reasons: tuple[str, ...] = ()
    sm_clock_mhz: int | None = None


@dataclass(frozen=True)
class Timings:
    samples: dict[str, list[float]]  # name -> ms, one per round
    rounds: list[Round]


class Monitor(Protocol):
    def read(self) -> Round: ...


@dataclass(frozen=True)
class Captured:
    """An implementation captured as a CUDA graph; `output` is the tensor each replay writes."""

    graph: torch.cuda.CUDAGraph
    output: torch.Tensor


def capture(fn: Callable[[], torch.Tensor], warmup_calls: int) -> Captured:
    """Run `fn` a few times outside the graph (compilation, autotuning, lazy init), then capture
    one call. Capture on a side stream, as torch.cuda.graphs requires."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup_calls):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = fn()
    return Captured(graph, output)


def time_interleaved(
    captured: Mapping[str, Captured],
    samples: int,
    on_round: Callable[[], None] | None = None,
    monitor: Monitor | None = None,
) -> Timings:
    """Milliseconds of one graph replay per sample, for each name.

    Every round times each implementation once, in the order `round_order` gives. Before each
    sample L2 is flushed (`L2Flush`), so every sample starts with a cold cache, as a layer in a
    model does. While the GPU flushes, the host has already queued the start event and
    the replay: the events bracket the kernel, not the launch.

    Untimed replays come before the first timed sample of a round and after the last, so that
    every timed sample sits between two others: without them, on an 0.08 ms kernel (H200,
    2026-11-30), the first sample of a round ran 0.2-0.8% slow and the last 0.5% fast. The GPU
    also holds (a spin kernel) while the host queues the round; on its own that did not remove
    either effect, but the figures in the README were measured with it.
    """
    names = list(captured)
    flush = L2Flush()
    for item in captured.values():  # the first replay uploads the graph; keep it out
        item.graph.replay()
    torch.cuda.synchronize()

    timings: dict[str, list[float]] = {name: [] for name in names}
    rounds: list[Round] = []
    for round_index in range(samples):
        order = round_order(names, round_index)
        torch.cuda._sleep(HOLD_CYCLES_PER_SAMPLE * len(order))
        flush()  # lead-in, untimed
        captured[order[-1]].graph.replay()
        events = [(name, *_replay_between_events(captured[name], flush)) for name in order]
        flush()  # trailer, untimed
        captured[order[0]].graph.replay()
        torch.cuda.synchronize()
        for name, start, end in events:
            timings[name].append(start.elapsed_time(end))
        rounds.append(monitor.read() if monitor is not None else Round())
        if on_round is not None:
            on_round()
    return Timings(timings, rounds)


def round_order(names: Sequence[str], round_index: int) -> list[str]:
    """The order of one round: rotated, and reversed in every odd round, so that every pair of
    names runs in both orders equally often. A rotation alone puts the second name right after
    the first in all rounds but one, and anything one sample leaves behind for the next (the
    clock, the power state) then biases that pair."""
    shift = (round_index // 2) % len(names)
    order = [*names[shift:], *names[:shift]]
    return order[::-1] if round_index % 2 else order


def time_once(captured: Captured, flush: L2Flush) -> float:
    """Milliseconds of one graph replay after an L2 flush, synchronized: for a worker process
    that times one sample when told to, so that two processes alternate on the GPU."""
    start, end = _replay_between_events(captured, flush)
    end.synchronize()
    return start.elapsed_time(end)


def _replay_between_events(captured: Captured, flush: L2Flush) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    """Queue an L2 flush, then one graph replay bracketed by timing events."""
    flush()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    captured.graph.replay()
    end.record()
    return start, end


class L2Flush:
    """Evicts L2 before a sample by reading a buffer four times its size (at least 256 MiB).

    Reading, not writing: an overwritten buffer leaves L2 full of dirty lines, and the kernel
    timed next pays for writing them back to memory. On the H200 that added 8-9 µs to every
    sample (scripts/flush_probe.py, kernels/results/experiments/h200-2026-11-30-flush-probe/):
    8-12% of a decode kernel's time, a cost of the flush that perfbot charged to the kernel.
    """

    def __init__(self) -> None:
        self.buffer = torch.empty(_flush_bytes() // 8, dtype=torch.int64, device="cuda")

    def __call__(self) -> None:
        torch.sum(self.buffer)


def _flush_bytes() -> int:
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    return max(MIN_FLUSH_BYTES, 4 * l2)
