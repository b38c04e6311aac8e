"""How the L2 flush before each sample affects timings, memory-bound ones above all.

Times the fused kernel, cuBLAS's gemm and the weight copy interleaved, after three kinds of
flush: `write` (a buffer four times L2 overwritten: perfbot's flush until 2026-11-30, which
leaves L2 full of dirty lines that the timed kernel then writes back), `read` (the same buffer
read: perfbot's `measure.L2Flush`, leaving clean lines) and `none`. Decode shapes show the
write-back's cost; d512 (its weight fits in L2) shows that a read evicts as well as a write
(both slower than `none`); T5 v1.1 XL shows a compute-bound kernel. It prints medians and the
bandwidth of reading weight once, against the copy's.

    python scripts/flush_probe.py [--samples 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels.geglu import geglu
from kernels.implementations import copy_weight
from perfbot import correctness, measure

CASES = [("gemma-7b-m1", 1, 3072, 24576), ("gemma-7b-m64", 64, 3072, 24576), ("gemma-3-27b-m1", 1, 5376, 21504),
         ("d512", 512, 512, 2048), ("t5-v1.1-xl", 8192, 2048, 5120)]


def time_after(flush, captured: dict[str, measure.Captured], samples: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in captured}
    for round_index in range(samples):
        pairs = []
        for name in measure.round_order(list(captured), round_index):
            flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            captured[name].graph.replay()
            end.record()
            pairs.append((name, start, end))
        torch.cuda.synchronize()
        for name, start, end in pairs:
            times[name].append(start.elapsed_time(end))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    read = measure.L2Flush()
    flushes = {"write": read.buffer.zero_, "read": read, "none": lambda: None}
    size_mib = read.buffer.numel() * read.buffer.element_size() >> 20
    print(f"{torch.cuda.get_device_name()}, flush buffer {size_mib} MiB, {args.samples} samples")
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
        for flush_name, flush in flushes.items():
            ms = time_after(flush, captured, args.samples)
            fused_gbps = (weight_bytes + (x.numel() + M * N) * 2) / ms["fused"] / 1e6
            copy_gbps = 2 * weight_bytes / ms["copy"] / 1e6
            print(f"{name:16} {flush_name:5} {ms['fused']:9.4f} {ms['gemm']:9.4f} {ms['copy']:9.4f} "
                  f"{fused_gbps:10.0f} {copy_gbps:9.0f} {fused_gbps / copy_gbps:7.1%}", flush=True)
        del captured
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
