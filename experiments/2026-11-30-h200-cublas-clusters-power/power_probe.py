"""SM clock and board power while cuBLAS's gemm and the fused kernel (erf, tanh) run back to back
on one large shape: is the H200 held at its power limit, and does each kernel run at the same
clock? Each phase replays one CUDA graph for `--seconds` while a thread polls nvidia-smi.

    PYTHONPATH=. python experiments/2026-11-30-h200-cublas-clusters-power/power_probe.py [--case gemma-3-27b] [--seconds 4]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import threading
import time
from pathlib import Path

import torch


from kernels.geglu import geglu
from perfbot import correctness, measure

CASES = {"gemma-3-27b": (8192, 5376, 21504), "gemma-7b": (8192, 3072, 24576), "d4096": (4096, 4096, 16384)}


def poll(readings: list, stop: threading.Event) -> None:
    while not stop.is_set():
        line = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True).stdout.split("\n")[0]
        clock, power = (float(v) for v in line.split(","))
        readings.append((time.monotonic(), clock, power))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="gemma-3-27b", choices=sorted(CASES))
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    M, K, N = CASES[args.case]
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
    phases = {"gemm": lambda: x @ weight.T}
    for gelu in ("none", "tanh"):
        error = correctness.check(geglu(x, weight, approximate=gelu),
                                  correctness.reference(x, weight, "geglu", gelu), "bfloat16").relative_error
        assert error <= 3e-3, f"fused {gelu}: relative error {error}"
        phases[f"fused {gelu}"] = lambda gelu=gelu: geglu(x, weight, approximate=gelu)
    readings, stop = [], threading.Event()
    poller = threading.Thread(target=poll, args=(readings, stop))
    poller.start()
    print(f"{torch.cuda.get_device_name()}, {args.case} {M}x{K}->{N} bf16, {args.seconds} s per phase, twice")
    print("phase | ms per call | median SM MHz | median W | readings")
    for _ in range(2):  # twice, so that warming up weighs on the first round only
        for name, fn in phases.items():
            graph = measure.capture(fn, 2)
            start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            calls, start = 0, time.monotonic()
            start_event.record()
            while time.monotonic() - start < args.seconds:
                for _ in range(10):
                    graph.graph.replay()
                calls += 10
                torch.cuda.synchronize()
            end_event.record()
            end_event.synchronize()
            end = time.monotonic()
            inside = [r for r in readings if start + 0.5 < r[0] < end]  # the first half second settles
            print(f"{name} | {start_event.elapsed_time(end_event) / calls:.4f} | "
                  f"{statistics.median(r[1] for r in inside):.0f} | {statistics.median(r[2] for r in inside):.0f} | {len(inside)}")
    stop.set()
    poller.join()


if __name__ == "__main__":
    main()
