"""scripts/paired_ratios.py reproduces the paired ratios docs/kernel.md quotes, from the H200
results files they came from (copies in tests/fixtures/kernel-results)."""

import subprocess
import sys

from tests.conftest import ROOT

RESULTS = ROOT / "tests" / "fixtures" / "kernel-results"


def test_the_script_reproduces_the_committed_paired_ratios():
    files = [str(RESULTS / f"{name}.json") for name in ("a100", "models", "decode")]
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "paired_ratios.py"), *files],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    # The same rows; the committed file lists each case's others in the order they were timed.
    assert sorted(done.stdout.splitlines()) == sorted((RESULTS / "paired-ratios.txt").read_text().splitlines())
