"""The PR comment of an A/B's comparison file (gzipped, as the scripts here keep them), rendered
with this checkout's perfbot, as the pull-request check's comment job renders it:

    python experiments/2026-12-02-h200-compiled/render.py runs/t1/block-k/comparison.json.gz OUT.md
"""

import gzip
import sys
import tempfile
from pathlib import Path

from perfbot.deciding import comparison
from perfbot.output.verdicts import GITHUB_COMMENT_LIMIT, comment_markdown

source, target = Path(sys.argv[1]), Path(sys.argv[2])
with tempfile.TemporaryDirectory() as where:
    plain = Path(where) / "comparison.json"
    plain.write_bytes(gzip.decompress(source.read_bytes()))
    target.write_text(comment_markdown(comparison.load(plain), GITHUB_COMMENT_LIMIT - 400))
