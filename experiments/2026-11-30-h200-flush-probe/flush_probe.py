"""How the L2 flush before each sample affects timings, memory-bound ones above all.

First, whether reading a buffer evicts L2 as well as writing it does: a 16 MiB tensor (it fits
in L2) is summed right after it was summed (warm), after reading the flush buffer, and after
writing it. Then the fused kernel, cuBLAS's gemm and the weight copy are timed after each kind
of flush: `write` (the buffer overwritten: perfbot's flush until 2026-11-30, which leaves L2
full of dirty lines that the timed kernel then writes back), `read` (the buffer read:
perfbot's `measure.L2Flush`) and `none`. The flush kinds take turns within every round, so that
clock drift over the run weighs on all three alike. Without a flush the host may not keep ahead
of a short kernel, so `none` is not a fair time for those. It prints medians and the bandwidth
of reading weight once, against the copy's.

    PYTHONPATH=. python experiments/2026-11-30-h200-flush-probe/flush_probe.py [--samples 30]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch


from kernels.geglu import geglu
from kernels.implementations import copy_weight
from perfbot import correctness, measure

CASES = [("gemma-7b-m1", 1, 3072, 24576), ("gemma-7b-m64", 64, 3072, 24576), ("gemma-3-27b-m1", 1, 5376, 21504),
         ("d512", 512, 512, 2048), ("t5-v1.1-xl", 8192, 2048, 5120)]


def time_after(flushes: dict, captured: dict[str, measure.Captured], samples: int) -> dict[tuple[str, str], float]:
    """Median ms of each implementation after each kind of flush, all interleaved round by round."""
    times: dict[tuple[str, str], list[float]] = {}
    for round_index in range(samples):
        pairs = []
        for flush_name in measure.round_order(list(flushes), round_index):
            for name in measure.round_order(list(captured), round_index):
                pairs.append(((flush_name, name), *measure._replay_between_events(captured[name], flushes[flush_name])))
        torch.cuda.synchronize()
        for key, start, end in pairs:
            times.setdefault(key, []).append(start.elapsed_time(end))
    return {key: statistics.median(values) for key, values in times.items()}


def eviction_check(flushes: dict, samples: int) -> None:
    """Sum a 16 MiB tensor warm (just summed) and after each flush; a flush that evicts L2 makes
    the sum read from memory, so it takes longer than the warm one."""
    data = torch.ones(4 << 20, dtype=torch.float32, device="cuda")
    times: dict[str, list[float]] = {}
    for _ in range(samples):
        for name, flush in {"warm": data.sum, **flushes}.items():
            flush()
            torch.cuda._sleep(1_000_000)  # the host queues the timed sum while the GPU waits
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            data.sum()
            end.record()
            end.synchronize()
            times.setdefault(name, []).append(start.elapsed_time(end) * 1000)
    print("16 MiB sum, median us: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in times.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    read = measure.L2Flush()
    flushes = {"write": read.buffer.zero_, "read": read, "none": lambda: None}
    size_mib = read.buffer.numel() * read.buffer.element_size() >> 20
    print(f"{torch.cuda.get_device_name()}, flush buffer {size_mib} MiB, {args.samples} samples")
    eviction_check({"after read": read, "after write": read.buffer.zero_}, args.samples)
    print(f"{'case':16} {'flush':5} {'fused ms':>9} {'gemm ms':>9} {'copy ms':>9} {'fused GB/s':>10} {'copy GB/s':>9} {'of copy':>7}")
    for name, M, K, N in CASES:
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        # Checked, not assumed: the timed kernel computes the right thing.
        check = correctness.check(geglu(x, weight), correctness.reference(x, weight, "geglu", "none"), "bfloat16")
        if not check.passed:
            raise SystemExit(f"{name}: fused is wrong, relative error {check.relative_error:.3g}")
        captured = {
            "fused": measure.capture(lambda: geglu(x, weight), 2),
            "gemm": measure.capture(lambda: x @ weight.T, 2),
            "copy": measure.capture(lambda: copy_weight(x, weight), 2),
        }
        weight_bytes = weight.numel() * weight.element_size()
        ms = time_after(flushes, captured, args.samples)
        for flush_name in flushes:
            fused, gemm, copy = (ms[flush_name, kernel] for kernel in ("fused", "gemm", "copy"))
            fused_gbps = (weight_bytes + (x.numel() + M * N) * 2) / fused / 1e6
            copy_gbps = 2 * weight_bytes / copy / 1e6
            print(f"{name:16} {flush_name:5} {fused:9.4f} {gemm:9.4f} {copy:9.4f} "
                  f"{fused_gbps:10.0f} {copy_gbps:9.0f} {fused_gbps / copy_gbps:7.1%}", flush=True)
        del captured
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
