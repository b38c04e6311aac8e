"""How `perfbot bisect` builds and measures one commit: a `Prober`. `CommandProber` runs shell
commands in a worktree of the commit, for any repository; `TritonProber` builds Triton at the
commit and times one benchmark there with perfbot's own engine. A commit that cannot be built or
measured is `Unusable`: skipped, never blamed.

Beside its samples, a measure command may hand back the compiled kernels of the benchmark it
timed (records/compiled.py), so that the report can say what changed in them: it writes the
record as JSON, with its autotune picks, to the file named by $PERFBOT_BISECT_COMPILED (`hand_back` writes it: what
`perfbot sample` calls with its benchmark's record). Without one the bisect goes on as before; a
file it cannot read is said in the report.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Protocol

from pydantic import ConfigDict, TypeAdapter, with_config

from .. import git
from ..errors import BadInput, EnvironmentFailure
from ..files import write_atomic
from ..records.autotune import AutotunePick, Picks
from ..records.compiled import Compiled
from ..records.schema import MAX_MS, MAX_SAMPLES, MAX_TEXT, MIN_MS, clean, load_json

COMPILED_ENV: Final = "PERFBOT_BISECT_COMPILED"
# A record of MAX_KERNELS kernels without their SASS, and of the picks, is a few tens of kB.
MAX_COMPILED_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class Measured:
    """One measurement of a commit: its samples (ms), and the compiled kernels and autotune picks
    the measure command handed back, if it did."""

    samples: list[float] = field(default_factory=list)
    compiled: Compiled | None = None
    autotune: list[AutotunePick] = field(default_factory=list)


@with_config(ConfigDict(strict=True, extra="forbid", defer_build=True))
@dataclass(frozen=True)
class HandedBack:
    """What a measure command hands back (COMPILED_ENV): the timed benchmark's compiled kernels
    and the configs its autotuned kernels ran."""

    compiled: Compiled | None = None
    autotune: Picks = field(default_factory=list)


# What a perfbot before 2026-12-03 hands back, the compiled record alone, is read too: a bisect
# of perfbot's own history runs each commit's.
_HANDED_BACK = TypeAdapter(HandedBack | Compiled)


class Prober(Protocol):
    recipe: str

    def measure(self, sha: str) -> Measured:
        """Build the commit if needed and measure it; raise Unusable if it cannot be built or
        measured."""


def hand_back(compiled: Compiled | None, autotune: Sequence[AutotunePick] = ()) -> None:
    """For a measure command that a bisect runs (`perfbot sample`): write the compiled kernels
    of the benchmark it timed, without their SASS, and its autotune picks where the bisect reads
    them. Does nothing outside a bisect, or where there is nothing to hand back."""
    path = os.environ.get(COMPILED_ENV)
    if not path or (compiled is None and not autotune):
        return
    kept = None if compiled is None else replace(compiled, kernels=[replace(k, sass=None) for k in compiled.kernels])
    write_atomic(Path(path), json.dumps(asdict(HandedBack(kept, list(autotune)))))


def handed_back(path: Path) -> HandedBack:
    """What a measure command wrote to `path` (COMPILED_ENV): nothing where it wrote nothing, and
    a compiled record saying why where it cannot be read (never a reason to skip the commit)."""
    if not path.exists() and not path.is_symlink():
        return HandedBack()
    try:
        back = load_json(path, "handed-back record", _HANDED_BACK, MAX_COMPILED_BYTES)
    except BadInput as error:
        return HandedBack(Compiled(unrecorded=clean(f"the measure command's record cannot be read: {error}", MAX_TEXT)))
    return back if isinstance(back, HandedBack) else HandedBack(back)


def measured_with_compiled(measure: Callable[[dict[str, str]], list[float]]) -> Measured:
    """`measure(env)`'s samples, `env` naming a fresh file for what it hands back (COMPILED_ENV),
    and what was written there."""
    with tempfile.TemporaryDirectory(prefix="perfbot-compiled-") as folder:
        path = Path(folder) / "compiled.json"
        samples = measure({COMPILED_ENV: str(path)})
        back = handed_back(path)
        return Measured(samples, back.compiled, list(back.autotune))


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

    def measure(self, sha: str) -> Measured:
        return measured_with_compiled(lambda extra: self._samples(sha, extra))

    def _samples(self, sha: str, extra: dict[str, str]) -> list[float]:
        tree = self.workdir / sha
        if tree.exists():
            shutil.rmtree(tree)
        with git.worktree(self.repo, sha, tree):
            env = dict(os.environ, PERFBOT_BISECT_COMMIT=sha, **extra)
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

    def measure(self, sha: str) -> Measured:
        return measured_with_compiled(lambda extra: self._samples(sha, extra))

    def _samples(self, sha: str, extra: dict[str, str]) -> list[float]:
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
            **extra,
        )
        done = run_in_group(
            [sys.executable, "-m", "perfbot", "sample", *self.sample_args], env=env, timeout=self.timeout_s
        )
        if done.returncode == 3:
            raise EnvironmentFailure(f"perfbot sample could not run: {done.stderr.strip()[-300:]}")
        if done.returncode != 0:
            raise Unusable(f"perfbot sample exited {done.returncode}: {done.stderr.strip()[-200:]}")
        return parse_samples(done.stdout)
