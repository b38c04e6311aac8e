"""The fused kernel's compiled code for a config, erf against tanh: registers, spills and the
SASS instructions by opcode, from Triton's compiled kernel (its cubin, disassembled with the
cuobjdump that Triton carries).

On the H200 (2026-11-30) it showed the tanh kernel with two more FMAs per output element than
erf and the same registers, and what the select-free gate removed: 2136 -> 1944 instructions with
erf (epilogue-sass.md beside this).

    PYTHONPATH=. python experiments/2026-11-30-h200-select-free-gate/epilogue_sass.py [--class large] [--sass-out DIR]
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

import torch
from triton.tools.disasm import get_sass

ROOT = Path(__file__).resolve().parents[2]

from kernels import configs
from kernels import geglu as geglu_module

# A shape of each class on the H200 (132 SMs).
SHAPES = {"large": (8192, 5376, 21504), "small": (1024, 1024, 4096)}


def opcodes(sass: str) -> collections.Counter:
    counts = collections.Counter()
    for line in sass.splitlines():
        # Triton's listing: "control codes<TAB>[@predicate ]OPCODE.modifiers operands;"
        match = re.match(r"[0-9a-f-]+:[^\t]*\t(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if match:
            counts[match.group(1).split(".")[0]] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class", dest="cls", default="large", choices=sorted(SHAPES))
    parser.add_argument("--sass-out", type=Path, help="also write each kernel's SASS here")
    args = parser.parse_args()
    M, K, N = SHAPES[args.cls]
    gpu = torch.cuda.get_device_name()
    config = configs.lookup(gpu, "tma", args.cls, torch.bfloat16)
    print(f"{gpu}: tma/{args.cls} config {config}, {M}x{K}->{N} bf16")
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(2 * N, K, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    plan = geglu_module.launch_plan(x, weight, "tma")
    counts = {}
    for gelu, tanh in (("erf", False), ("tanh", True)):
        kernel = geglu_module._launch(x, weight, out, plan, tanh)
        sass = get_sass(kernel.asm["cubin"])
        counts[gelu] = opcodes(sass)
        spills = getattr(kernel, "n_spills", "?")
        print(f"{gelu}: {kernel.n_regs} registers, {spills} spilled, {kernel.metadata.shared} B shared, "
              f"{sum(counts[gelu].values())} SASS instructions")
        if args.sass_out:
            args.sass_out.mkdir(parents=True, exist_ok=True)
            (args.sass_out / f"{args.cls}-{gelu}.sass").write_text(sass)
    print("opcode | erf | tanh")
    for op in sorted(set(counts["erf"]) | set(counts["tanh"]), key=lambda o: -counts["tanh"][o] - counts["erf"][o]):
        print(f"{op} | {counts['erf'][op]} | {counts['tanh'][op]}")


if __name__ == "__main__":
    main()
