"""Why K not a multiple of 16 is slow on the TMA path: the rows of x and weight are then 16-byte
but not 32-byte aligned (the kernel's code does not change with K's divisibility: Triton's PTX
for K divisible by 16 and not is the same, compared on the CPU). Here the same kernel reads x,
or x and weight, from buffers whose rows are padded to a multiple of 16 elements (the descriptor
keeps the true K, so the padding is never read), against the unpadded launch and cuBLAS.

    PYTHONPATH=. python experiments/2026-11-30-h200-unseen-shapes/probe_alignment.py > probe_alignment.txt
"""

from __future__ import annotations

import statistics

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels import geglu as geglu_module
from kernels.subject import geglu_float64
from perfbot import correctness, measure

CASES = [("odd-m5722", 5722, 8168, 27448), ("odd-m9429", 9429, 2712, 5280), ("odd-m14735", 14735, 1576, 22504),
         ("odd-m8660 (K % 16 = 0)", 8660, 5264, 11456)]


def padded(t: torch.Tensor) -> torch.Tensor:
    """The same values in a buffer whose rows are a multiple of 16 elements long."""
    rows, K = t.shape
    buffer = torch.zeros(rows, -(-K // 16) * 16, dtype=t.dtype, device=t.device)
    buffer[:, :K] = t
    return buffer


def launch(x_buf, w_buf, K, N, out, plan):
    M = out.shape[0]
    bm, bn, bk = plan["BLOCK_M"], plan["BLOCK_N"], plan["BLOCK_K"]
    x_stride, w_stride = x_buf.stride(0), w_buf.stride(0)
    x_desc = TensorDescriptor(x_buf, [M, K], [x_stride, 1], [bm, bk])
    w_desc = TensorDescriptor(w_buf, [2, N, K], [N * w_stride, w_stride, 1], [2, bn, bk])
    out_desc = TensorDescriptor(out, [M, N], [N, 1], [bm, bn])
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(plan["num_sms"], tiles)
    geglu_module._geglu_tma_kernel[(programs,)](
        x_desc, w_desc, w_desc, out_desc, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=plan["GROUP_M"],
        NUM_PROGRAMS=programs, APPROXIMATE_TANH=False, WARP_SPECIALIZE=False, EPILOGUE_SUBTILE=False, ONE_DOT=True,
        FLATTEN=True, num_warps=plan["num_warps"], num_stages=plan["num_stages"])
    return out


def main() -> None:
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, 20 samples; medians in ms")
    for name, M, K, N in CASES:
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        expected = geglu_float64(x, weight)
        plan = geglu_module.launch_plan(x, weight)
        x_pad, w_pad = padded(x), padded(weight)
        outs = {k: torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for k in ("plain", "x padded", "both padded")}
        sources = {"plain": (x, weight), "x padded": (x_pad, weight), "both padded": (x_pad, w_pad)}
        captured = {"gemm": measure.capture(lambda: x @ weight.T, 2)}
        for key, (xb, wb) in sources.items():
            result = launch(xb, wb, K, N, outs[key], plan)
            check = correctness.check(result, expected, 3e-3)
            assert check.passed, (name, key, check)
            captured[key] = measure.capture(lambda xb=xb, wb=wb, key=key: launch(xb, wb, K, N, outs[key], plan), 2)
        medians = {k: statistics.median(v) for k, v in measure.time_interleaved(captured, 20).samples.items()}
        print(f"{name} M={M} K={K} N={N}: " + "  ".join(f"{k} {v:.4f} ({v / medians['gemm']:.3f}x gemm)" for k, v in medians.items()))
        del captured, x_pad, w_pad
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
