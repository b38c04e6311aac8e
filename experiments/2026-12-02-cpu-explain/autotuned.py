"""What stops the CPU path at an autotuned kernel: `triton.autotune` with two configs times
them, which needs the GPU; with one config there is nothing to time and it compiles. Run from
the repository's root: env -u TRITON_INTERPRET PYTHONPATH=. python experiments/2026-12-02-cpu-explain/autotuned.py"""

import torch
import triton
import triton.language as tl

from perfbot.compiling import artifacts, launches, offline


def kernel_with(configs):
    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)

    return double


x = torch.randn(4096)
y = torch.empty_like(x)
with offline.compiling_for(offline.gpu_named(offline.DEFAULT_GPU)):
    for count in (1, 2):
        double = kernel_with([triton.Config({"BLOCK": 128 * (i + 1)}) for i in range(count)])
        try:
            with launches.recording() as seen:
                double[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, y, 4096)
            kernels = artifacts.compiled(seen).kernels
            print(f"{count} config(s): compiled {[(k.name, k.specialization['BLOCK'], k.registers) for k in kernels]}")
        except Exception as error:  # noqa: BLE001
            print(f"{count} config(s): {type(error).__name__}: {error}")
