"""Whether a two-CTA cluster helps the fused kernel on the large shapes (Triton's `num_ctas=2`).

cuBLAS runs these shapes with two-CTA clusters (`_1x2_`/`_2x1_` in its nvjet kernels' names,
cublas_kernels.py beside this), whose CTAs share one operand's tile through TMA multicast. Here the
fused kernel's program is split over a cluster: BLOCK_M = 256 rows over two CTAs of 128 each,
which may then load the weight tile once for both. Each variant is checked against a float64
reference, then timed interleaved with the tuned kernel and cuBLAS's gemm (perfbot's engine).

    PYTHONPATH=. python experiments/2026-11-30-h200-cublas-clusters-power/cluster_probe.py [--samples 20]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
import triton


from kernels import geglu as geglu_module
from perfbot import correctness, measure

CASES = [("d4096", 4096, 4096, 16384), ("gemma-3-27b", 8192, 5376, 21504), ("t5-v1.1-xl", 8192, 2048, 5120)]
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_ctas, one_dot): the tuned large config is
# 128/128/64, 4 stages, one dot. With one dot (weight as [2, N, K]) Triton 3.6 failed to build any
# two-CTA variant on 2026-11-30 (a LinearLayout error); two dots read weight through 2-D descriptors.
VARIANTS = [(256, 128, 64, 4, 2, False), (256, 128, 64, 3, 2, False), (128, 256, 64, 3, 2, False),
            (256, 128, 64, 4, 2, True)]


def launch(x, weight, out, variant):
    """The fused kernel's own launcher, with the variant as its config."""
    bm, bn, bk, stages, ctas, one_dot = variant
    config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 16, "num_warps": 8, "num_stages": stages,
              "one_dot": one_dot, "flatten": True, "num_ctas": ctas}
    plan = geglu_module._with_config(geglu_module.launch_plan(x, weight, "tma"), config, x.shape[0], "given")
    return geglu_module._launch(x, weight, out, plan, False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, {args.samples} samples; medians in ms")
    for name, M, K, N in CASES:
        x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        weight = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        expected = correctness.reference(x, weight, "geglu", "none")
        captured = {"gemm": measure.capture(lambda: x @ weight.T, 2),
                    "tuned": measure.capture(lambda: geglu_module.geglu(x, weight), 2)}
        for variant in VARIANTS:
            try:
                out.fill_(float("nan"))
                kernel = launch(x, weight, out, variant)
                error = correctness.check(out, expected, "bfloat16").relative_error
            except Exception as failure:  # noqa: BLE001  a variant Triton cannot build is a finding
                print(f"{name} {variant}: failed: {type(failure).__name__}: {str(failure).splitlines()[0][:200]}")
                continue
            if not error <= 3e-3:
                print(f"{name} {variant}: wrong, relative error {error:.3g}")
                continue
            print(f"{name} {variant}: {kernel.n_regs} registers, {kernel.metadata.shared} B shared, "
                  f"cluster {getattr(kernel.metadata, 'cluster_dims', '?')}, error {error:.2g}")
            captured[variant] = measure.capture(lambda variant=variant: launch(x, weight, out, variant), 2)
        samples = measure.time_interleaved(captured, args.samples).samples
        gemm = statistics.median(samples["gemm"])
        for key, values in samples.items():
            print(f"  {name} {str(key):24} {statistics.median(values):.4f}  {statistics.median(values) / gemm:.3f}x gemm")
        del captured, expected
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
