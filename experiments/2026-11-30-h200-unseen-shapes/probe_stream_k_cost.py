"""Where stream-K's time goes, a probe: the large config's kernel launched by hand on one wave of
tiles (132 on the H200) taken whole (the data-parallel loop) and through the stream-K loop with
whole tiles (no partial sums: the loop's own cost), and on half a wave of tiles split in two by
K steps (partial sums and the wait: the fix-up's cost), against the same half wave taken whole.

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_stream_k_cost.py > probe_stream_k_cost.txt
"""

from __future__ import annotations

import statistics

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels import configs
from kernels import geglu as geglu_module
from kernels.subject import geglu_float64
from perfbot import correctness, measure

K = 4096


def launch(x, weight, out, config, dp_tiles, sk_tiles, sk_steps, programs):
    M, N = out.shape
    bm, bn, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    x_desc = TensorDescriptor(x, [M, K], [K, 1], [bm, bk])
    w_desc = TensorDescriptor(weight, [2, N, K], [N * K, K, 1], [2, bn, bk])
    out_desc = TensorDescriptor(out, [M, N], [N, 1], [bm, bn])
    partials, flags = geglu_module._stream_k_buffers(out.device, programs, bm, bn)
    geglu_module._geglu_tma_kernel[(programs,)](
        x_desc, w_desc, w_desc, out_desc, partials, flags, M, N, K, dp_tiles, sk_tiles, sk_steps,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=config["GROUP_M"], NUM_PROGRAMS=programs,
        APPROXIMATE_TANH=False, WARP_SPECIALIZE=False, EPILOGUE_SUBTILE=False, ONE_DOT=True, FLATTEN=True,
        STREAM_K=sk_tiles > 0, num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out


def main() -> None:
    config = configs.lookup("NVIDIA H200", "tma", "large", torch.bfloat16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    steps = K // config["BLOCK_K"]
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, K={K}, 30 samples; medians in ms")
    for rows, label in ((256, "one wave"), (128, "half a wave")):
        N = sms // (rows // 128) * 128 if rows == 256 else sms // 2 * 128
        x = torch.randn(rows, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        tiles = (rows // 128) * (N // 128)
        runs = {"whole tiles, data-parallel loop": (tiles, 0, 0, tiles)}
        if label == "one wave":
            runs["whole tiles, stream-K loop"] = (0, tiles, steps, sms)
        else:
            runs["split in two, stream-K loop"] = (0, tiles, triton.cdiv(tiles * steps, sms), sms)
        captured = {"gemm": measure.capture(lambda: x @ weight.T, 2)}
        for name, args in runs.items():
            out = torch.full((rows, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            run = lambda out=out, args=args: launch(x, weight, out, config, *args)  # noqa: E731
            assert correctness.check(run(), expected, 3e-3).passed, name
            captured[name] = measure.capture(run, 2)
        medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, 30).samples.items()}
        print(f"{label}: M={rows} N={N}, {tiles} tiles, {steps} K steps each")
        for k, v in medians.items():
            print(f"  {k:34} {v:.4f}")


if __name__ == "__main__":
    main()
