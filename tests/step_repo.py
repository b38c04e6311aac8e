"""A generated git repository and a generated store of runs that measured its commits, for the
auto-bisect tests: the store's history has a step, and the repository's commits have (or lack)
the slowdown that made it.

Only the GPU is faked: a `perfbot` on PATH that answers `perfbot sample` with samples drawn from
the commit's speed.txt (what a GPU would measure there) and hands every other subcommand to the
real perfbot of this checkout, logging each call's words."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from perfbot.records.run import Results
from tests.conftest import ROOT
from tests.history_store import make_runs

# Every call's words, logged by the interpreter that answers it (a Python started only to log
# them cost 0.05 CPU-seconds a call).
LOG_ARGV = """
import json, os, sys
with open(os.environ["PERFBOT_SHIM_LOG"] + ".argv", "a") as argv_log:
    argv_log.write(json.dumps(sys.argv[1:]) + "\\n")
"""

# The fake GPU: samples around the commit's speed, 1% noise, seeded by the commit and the call.
SAMPLE = (
    LOG_ARGV
    + """
import os, pathlib, random, sys
log = pathlib.Path(os.environ["PERFBOT_SHIM_LOG"])
commit = os.environ.get("PERFBOT_BISECT_COMMIT", "")
calls = log.read_text().count("sample " + commit) if log.exists() else 0
with log.open("a") as handle:
    handle.write("sample " + commit + "\\n")
if pathlib.Path("BROKEN").exists():
    sys.exit("perfbot: error: the kernel does not compile")
speed = float(pathlib.Path("speed.txt").read_text())
rng = random.Random(commit + str(calls))
for _ in range(30):
    print(f"{speed * (1 + 0.01 * rng.gauss(0, 1)):.6f}")
"""
)

# This checkout's perfbot, as `python -m perfbot` runs it.
PERFBOT = (
    LOG_ARGV
    + """
import os, runpy, sys
sys.path[0] = os.getcwd()
runpy.run_module("perfbot", run_name="__main__", alter_sys=True)
"""
)


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
    }
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env)
    return done.stdout.strip()


def repository(path: Path, speeds: list[float], broken: tuple[int, ...] = ()) -> list[str]:
    """One commit per speed (ms) at `path`; the commits in `broken` do not build. Their SHAs.
    The commits `git add -A` and `git commit` would make, one at a time, at _git's date, written
    by one `git fast-import` (120 git processes took 0.6 CPU-seconds), then checked out."""
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    branch = _git(path, "symbolic-ref", "HEAD")
    when = f"{int(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC).timestamp())} +0000"
    stream = []
    for index, speed in enumerate(speeds):
        files = {"speed.txt": f"{speed}\n", "version.txt": f"{index}\n"}  # every commit changes something
        if index in broken:
            files["BROKEN"] = "x\n"
        message = f"change {index}\n"
        stream += [f"commit {branch}", f"author t <t@t> {when}", f"committer t <t@t> {when}"]
        stream += [f"data {len(message)}", message, "deleteall"]
        for name, text in sorted(files.items()):
            stream += [f"M 100644 inline {name}", f"data {len(text)}", text]
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input="\n".join(stream), text=True, check=True)
    _git(path, "reset", "-q", "--hard")
    return _git(path, "rev-list", "--reverse", "HEAD").splitlines()


def measured(shas: list[str], step: float, at: int, seed: int = 11) -> list[Results]:
    """A run per commit, oldest first, the fused kernel `step` slower from run `at` on."""
    runs = make_runs(len(shas), step=step, at=at, seed=seed)
    return [
        replace(run, environment=replace(run.environment, kernels_commit=sha))
        for run, sha in zip(runs, shas, strict=True)
    ]


def shim(folder: Path) -> Path:
    """`folder/perfbot`: the fake GPU for `sample`, this checkout's perfbot for the rest. Every call's
    words go to PERFBOT_SHIM_LOG.argv as one JSON line."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fake_sample.py").write_text(SAMPLE)
    (folder / "logged_perfbot.py").write_text(PERFBOT)
    script = folder / "perfbot"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = sample ]; then exec {sys.executable} {folder / "fake_sample.py"} "$@"; fi\n'
        f'PYTHONPATH={ROOT} exec {sys.executable} {folder / "logged_perfbot.py"} "$@"\n'
    )
    script.chmod(0o755)
    return script


def calls(log: Path) -> list[list[str]]:
    """The words of every call the shim saw, in order."""
    argv = Path(f"{log}.argv")
    return [json.loads(line) for line in argv.read_text().splitlines()] if argv.exists() else []
