"""How `perfbot bisect` builds and measures one commit: a `Prober`. `CommandProber` runs shell
commands in a worktree of the commit, for any repository; `TritonProber` builds Triton at the
commit and times one benchmark there with perfbot's own engine. A commit that cannot be built or
measured is `Unusable`: skipped, never blamed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

from .. import git
from ..errors import EnvironmentFailure
from ..records.schema import MAX_MS, MAX_SAMPLES, MIN_MS


class Prober(Protocol):
    recipe: str

    def measure(self, sha: str) -> list[float]:
        """Build the commit if needed and return timing samples (ms); raise Unusable if it
        cannot be built or measured."""


class Unusable(Exception):
    """The commit cannot be built or measured: skip it, never blame it."""


class CommandProber:
    """Any repository: `build` then `measure` run by the shell in a worktree of the commit;
    `measure` prints samples in ms, one per line. A non-zero exit makes the commit unusable."""

    def __init__(self, repo: Path, build: str, measure: str, workdir: Path, timeout_s: float = 3600):
        self.repo, self.build, self.measure_command, self.workdir, self.timeout_s = (
            repo,
            build,
            measure,
            workdir,
            timeout_s,
        )
        self.recipe = f"build: {build}\nmeasure: {measure}"

    def measure(self, sha: str) -> list[float]:
        tree = self.workdir / sha
        if tree.exists():
            shutil.rmtree(tree)
        with git.worktree(self.repo, sha, tree):
            env = dict(os.environ, PERFBOT_BISECT_COMMIT=sha)
            try:
                for name, command in (("build", self.build), ("measure", self.measure_command)):
                    done = run_in_group(command, shell=True, cwd=tree, env=env, timeout=self.timeout_s)
                    if done.returncode != 0:
                        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
                        raise Unusable(f"{name} exited {done.returncode}: {last[0][:200]}")
            except subprocess.TimeoutExpired as error:
                raise Unusable(f"timed out after {error.timeout:.0f} s") from None
            return parse_samples(done.stdout)


def run_in_group(args: str | list[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(args, capture_output=True, text=True, timeout=timeout)`, with the command in
    a session (and process group) of its own that is killed whole however the call ends: past its
    timeout, on Ctrl-C (which the terminal sends perfbot's group, not this one), on any error, or
    done. A shell's children (`sleep`, a benchmark) never outlive perfbot, nor hold its pipes."""
    with subprocess.Popen(
        args, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # the group is gone already
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def parse_samples(text: str) -> list[float]:
    samples: list[float] = []
    for line in text.splitlines():
        if len(samples) >= MAX_SAMPLES:
            raise Unusable(f"measure printed more than {MAX_SAMPLES} samples")
        if not line.strip():
            continue
        try:
            value = float(line)
        except ValueError:
            raise Unusable(f"measure printed {line.strip()[:60]!r}, not a number of milliseconds") from None
        if not MIN_MS <= value <= MAX_MS:
            raise Unusable(f"measure printed {value:g}, not a time in milliseconds ({MIN_MS:g} to {MAX_MS:g})")
        samples.append(value)
    return samples


class TritonProber:
    """Triton, the default: each commit's wheel from `perfbot triton build` (cached by commit) is
    unpacked into an environment of its own, put first on PYTHONPATH, and one benchmark is
    timed there by `perfbot sample` with perfbot's own engine."""

    def __init__(
        self, repo: Path, cache: Path, sample_args: list[str], timeout_s: float = 7200, build_isolation: bool = True
    ):
        self.repo, self.cache, self.sample_args, self.timeout_s = repo, cache, sample_args, timeout_s
        self.build_isolation = build_isolation
        self.recipe = "triton: perfbot sample " + " ".join(sample_args)

    def measure(self, sha: str) -> list[float]:
        from ..measuring import triton_build

        try:
            environment = triton_build.environment(
                sha, str(self.repo), self.cache, build_isolation=self.build_isolation
            )
        except EnvironmentFailure as error:
            raise Unusable(str(error).splitlines()[0]) from None
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(filter(None, [str(environment), os.environ.get("PYTHONPATH")])),
            PERFBOT_TRITON_COMMIT=sha,
        )
        done = run_in_group(
            [sys.executable, "-m", "perfbot", "sample", *self.sample_args], env=env, timeout=self.timeout_s
        )
        if done.returncode == 3:
            raise EnvironmentFailure(f"perfbot sample could not run: {done.stderr.strip()[-300:]}")
        if done.returncode != 0:
            raise Unusable(f"perfbot sample exited {done.returncode}: {done.stderr.strip()[-200:]}")
        return parse_samples(done.stdout)
