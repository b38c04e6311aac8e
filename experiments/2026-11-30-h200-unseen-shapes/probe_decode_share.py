"""Why some decode shapes read the weight below 90% of a copy's bandwidth, a probe: each such
shape as it is, with K doubled and N halved (the same weight in longer rows: more K steps per
tile, the same bytes), and with N doubled (twice the bytes, the same K), timed interleaved with a
copy of its weight (perfbot's engine; each output checked against float64 first).

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_decode_share.py > probe_decode_share.txt
"""

from __future__ import annotations

import statistics

import torch
import triton

from kernels.geglu import geglu
from kernels.subject import copy_weight, geglu_float64
from perfbot import correctness, measure

CASES = [
    ("bert-large-m1", 1, 1024, 4096),
    ("gemma-2-2b-m4", 4, 2304, 9216),
    ("gemma-2-2b-m31", 31, 2304, 9216),
    ("llama-3.2-3b-m3", 3, 3072, 8192),
    ("odd-m20", 20, 5184, 6944),
    ("llama-3-8b-m4 (reads at 0.9+)", 4, 4096, 14336),
]


def share(M: int, K: int, N: int) -> tuple[float, float, float]:
    """(fused ms, copy ms, the fused kernel's weight read as a share of the copy's bandwidth)."""
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
    assert correctness.check(geglu(x, weight), geglu_float64(x, weight), 3e-3).passed
    captured = {
        "fused": measure.capture(lambda: geglu(x, weight), 2),
        "copy": measure.capture(lambda: copy_weight(x, weight), 2),
    }
    medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, 30).samples.items()}
    read = weight.numel() * weight.element_size()
    return medians["fused"], medians["copy"], (read / medians["fused"]) / (2 * read / medians["copy"])


def main() -> None:
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, 30 samples; medians in ms")
    for name, M, K, N in CASES:
        print(name)
        for label, k, n in (("as is", K, N), ("K doubled, N halved", 2 * K, N // 2), ("N doubled", K, 2 * N)):
            fused, copy, of_copy = share(M, k, n)
            weight_mb = 2 * n * k * 2 / 1e6
            print(f"  {label:20} M={M} K={k} N={n} ({weight_mb:.0f} MB): fused {fused:.4f}  copy {copy:.4f}  read at {of_copy:.2f} of copy")


if __name__ == "__main__":
    main()
