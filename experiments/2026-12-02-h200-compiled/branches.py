"""The two branches of issue 34's targets, applied to a kernels/ folder:

    python experiments/2026-12-02-h200-compiled/branches.py KERNELS_DIR block-k
        decode's BLOCK_K 128 -> 64 (configs.py's _DECODE), as in step 1's pull request;
    python experiments/2026-12-02-h200-compiled/branches.py KERNELS_DIR spills
        the TMA path's small class on 4 warps instead of 8 under its maxnreg 128
        (tuned_configs.yaml): twice the accumulator a thread, which spills.

Lowering maxnreg alone cannot make the small class spill: on 8 warps it needs 92 registers at
most, and ptxas refuses the kernel's wgmma under 92 ("Internal Triton PTX codegen error" at
maxnreg 88, compiled for sm_90 on the CPU with perfbot/compiling/offline.py, 2026-12-02).
"""

import sys
from pathlib import Path


def replace_once(path: Path, start: str, old: str, new: str, end: str) -> None:
    text = path.read_text()
    begin = text.index(start)
    stop = text.index(end, begin + len(start))
    at = text.index(old, begin)
    assert at < stop, f"{path.name}: no {old.strip()!r} between {start.strip()!r} and {end.strip()!r}"
    path.write_text(text[:at] + new + text[at + len(old) :])


kernels, branch = Path(sys.argv[1]), sys.argv[2]
if branch == "block-k":
    replace_once(kernels / "configs.py", "\n_DECODE = {\n", '    "BLOCK_K": 128,\n', '    "BLOCK_K": 64,\n', "\n}\n")
elif branch == "spills":
    tuned = kernels / "tuned_configs.yaml"
    tma = tuned.read_text().index("\n  tma:\n")
    small = tuned.read_text().index("\n    small:\n", tma)
    text = tuned.read_text()
    stop = text.index("\n    large:\n", small)
    at = text.index("      num_warps: 8\n", small)
    assert at < stop, "the TMA path's small class has no num_warps 8"
    tuned.write_text(text[:at] + "      num_warps: 4\n" + text[at + len("      num_warps: 8\n") :])
else:
    raise SystemExit(f"unknown branch {branch!r}: block-k or spills")
