"""Issue 28's reproducer, applied to a kernels/ folder: the large shape class's GROUP_M 8 -> 16 on
the TMA path (tuned_configs.yaml) and the decode configs' BLOCK_K 128 -> 64 (configs.py), the
two launch-config changes of the pull request in which an unchanged fused-pointer failed.

    python experiments/2026-12-01-h200-cross-talk/neighbour.py KERNELS_DIR
"""

import sys
from pathlib import Path

kernels = Path(sys.argv[1])
tuned = kernels / "tuned_configs.yaml"
text = tuned.read_text()
large = text.index("\n    large:\n", text.index("\n  tma:\n"))  # the TMA path's, not the pointer path's
end = text.index("\n    gemv:\n", large)
at = text.index("      GROUP_M: 8\n", large)
assert at < end, "the TMA path's large class has no GROUP_M 8"
tuned.write_text(text[:at] + "      GROUP_M: 16\n" + text[at + len("      GROUP_M: 8\n") :])
configs = kernels / "configs.py"
text = configs.read_text()
start = text.index("\n_DECODE = {\n")
end = text.index("\n}\n", start)
at = text.index('    "BLOCK_K": 128,\n', start)
assert at < end, "_DECODE has no BLOCK_K 128"
configs.write_text(text[:at] + '    "BLOCK_K": 64,\n' + text[at + len('    "BLOCK_K": 128,\n') :])
