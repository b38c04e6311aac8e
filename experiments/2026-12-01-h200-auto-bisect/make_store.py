"""A baseline store whose runs measured the commits of a real repository, for the auto-bisect on
the GPU: generated runs (tests/history_store.py), the first PAD of them measuring the first
commit (a step is found only after enough runs before it), then one run per later commit, fused
10% slower from the run of commit CULPRIT (0-based, as `git rev-list --reverse HEAD` lists
them); the t5 case renamed quick/odd (the case the real slowdown commit slows), the other case
left out.

    python make_store.py REPO STORE CULPRIT
"""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from perfbot import store
from tests.history_store import make_runs

PAD = 15
repo, directory, culprit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
commits = subprocess.run(
    ["git", "-C", str(repo), "rev-list", "--reverse", "HEAD"], capture_output=True, text=True, check=True
).stdout.split()
measured = [commits[0]] * (PAD - 1) + commits
at = PAD - 1 + culprit
for index, run in enumerate(make_runs(len(measured), step=0.10, at=at, seed=1)):
    benchmarks = [replace(b, suite="quick", case="odd") for b in run.benchmarks if b.case == "t5-v1.1-xl"]
    store.add(
        directory,
        replace(run, benchmarks=benchmarks, environment=replace(run.environment, kernels_commit=measured[index])),
    )
print(f"{len(measured)} runs stored in {directory}; fused 10% slower from run {at + 1}, commit {measured[at]}")
