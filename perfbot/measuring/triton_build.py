"""`perfbot triton build`: a Triton wheel at one commit, built once and cached by commit.

    <cache>/<full commit sha>/triton-*.whl      a finished build
    <cache>/<full commit sha>/wheel.json        its record: {"wheel": file name, "sha256": digest}
    <cache>/<full commit sha>.log               the last build's log
    <cache>/envs/<full commit sha>/             the wheel installed (pip --target), to put first on
                                                PYTHONPATH: an environment of that commit's own

Older Triton commits keep setup.py under python/, newer ones at the top; both are built with
`pip wheel`. A cache hit is the file the record names, and only if its digest matches the
record; anything else (a stray file, a wheel swapped or cut short) is set aside and rebuilt.
ccache is used when it is on PATH, and MAX_JOBS is bounded by memory, since each
LLVM/MLIR compile job can take several GB.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import git
from ..errors import BadInput, EnvironmentFailure

DEFAULT_SOURCE = "https://github.com/triton-lang/triton.git"
GB_PER_JOB = 4  # a C++ compile job of Triton's LLVM-heavy sources peaks at a few GB
_SHA = re.compile(r"[0-9a-f]{7,40}")


def default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "perfbot" / "triton-wheels"


def max_jobs(memory_bytes: int | None = None, cpus: int | None = None) -> int:
    """Parallel compile jobs: one per CPU, but no more than memory allows."""
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(cpus, memory_bytes // (GB_PER_JOB * 1024**3)))


RECORD = "wheel.json"


def cached_wheel(cache: Path, commit: str) -> Path | None:
    """The cached wheel of `commit`, if its record names it and its digest matches the record."""
    entry = cache / commit
    try:
        record = json.loads((entry / RECORD).read_text())
        wheel = entry / record["wheel"]
        expected = record["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if Path(record["wheel"]).name != record["wheel"] or not wheel.is_file():
        return None
    return wheel if sha256_of(wheel) == expected else None


def write_record(wheel: Path, commit: str) -> None:
    """The record beside `wheel`, in its cache entry, that cached_wheel reads back."""
    record = {"wheel": wheel.name, "sha256": sha256_of(wheel), "commit": commit}
    (wheel.parent / RECORD).write_text(json.dumps(record, indent=1) + "\n")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(
    commit: str,
    source: str = DEFAULT_SOURCE,
    cache: Path | None = None,
    *,
    build_isolation: bool = True,
    log_lines: int = 40,
    on_note: Callable[[str], None] = lambda note: None,
) -> tuple[Path, bool]:
    """(wheel, built): the wheel of `commit`, from the cache when it is there (built False)."""
    if not _SHA.fullmatch(commit):
        raise BadInput(f"--triton-commit must be a hex commit SHA (7 to 40 digits), got {commit!r}")
    if shutil.which("git") is None:
        raise EnvironmentFailure("git is not installed; perfbot triton build needs it")
    cache = cache or default_cache()
    if cache.exists() and not cache.is_dir():
        raise BadInput(f"{cache}: the wheel cache must be a directory")
    cache.mkdir(parents=True, exist_ok=True)
    if len(commit) == 40 and (hit := cached_wheel(cache, commit)):
        return hit, False
    if len(commit) == 40:
        _set_aside(cache, commit, on_note)

    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as scratch:
        checkout = Path(scratch) / "src"
        full = _checkout(source, commit, checkout)
        if hit := cached_wheel(cache, full):  # a short SHA that names a cached build
            return hit, False
        _set_aside(cache, full, on_note)
        project = _project_dir(checkout, full)
        log = cache / f"{full}.log"
        out = Path(scratch) / "wheel"
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(project)]
        if not build_isolation:
            command.insert(4, "--no-build-isolation")
        env = dict(os.environ, MAX_JOBS=str(max_jobs()))
        if shutil.which("ccache"):
            env["TRITON_BUILD_WITH_CCACHE"] = "true"
        with log.open("w") as handle:
            handle.write(
                f"$ {' '.join(command)}\n# MAX_JOBS={env['MAX_JOBS']} "
                f"TRITON_BUILD_WITH_CCACHE={env.get('TRITON_BUILD_WITH_CCACHE', 'false')}\n"
            )
            handle.flush()
            done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=project)
        wheels = sorted(out.glob("*.whl"))
        if done.returncode != 0 or not wheels:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-log_lines:])
            raise EnvironmentFailure(
                f"building Triton at {full[:12]} failed (exit {done.returncode}); full log: {log}\n{tail}"
            )
        # Publish the finished wheel with one rename, so a crash never leaves half a cache entry.
        staged = Path(scratch) / full
        staged.mkdir()
        shutil.move(str(wheels[0]), staged / wheels[0].name)
        write_record(staged / wheels[0].name, full)
        try:
            os.rename(staged, cache / full)
        except OSError:  # another build of the same commit finished first: use that one
            pass
    wheel = cached_wheel(cache, full)
    assert wheel is not None
    return wheel, True


def _set_aside(cache: Path, commit: str, on_note: Callable[[str], None]) -> None:
    """Move a cache entry that is no verified hit out of the way, so a fresh build can take its place."""
    entry = cache / commit
    if entry.exists():
        aside = Path(tempfile.mkdtemp(dir=cache, prefix=f".rejected-{commit[:12]}-"))
        os.replace(entry, aside / commit)
        on_note(
            f"the cached entry {entry} does not match its recorded digest (or has no record); "
            f"moved to {aside} and rebuilt"
        )


def _checkout(source: str, commit: str, checkout: Path) -> str:
    """Check `commit` out of `source` (a path or URL) into `checkout`; returns the full SHA.

    From a URL, only a published commit is built: one on a branch or tag of that repository.
    Hosts also serve commits by SHA that no branch holds (GitHub: any pull request's), and a
    pull request that moves the pin must not make the GPU runner build code of its choosing.
    From a local path the user chose, any commit of it goes."""
    remote = bool(re.match(r"^[a-z+]+://|^git@", source))
    if not remote and not Path(source).exists():
        raise BadInput(f"--triton-source {source!r} is neither an existing path nor a URL")
    cloned = git.run(None, "clone", "--quiet", "--no-checkout", source, str(checkout))
    if cloned.returncode != 0:
        raise EnvironmentFailure(f"cannot clone {source}: {cloned.stderr.strip().splitlines()[-1:]}")
    if not remote and git.run(checkout, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        git.run(checkout, "fetch", "--quiet", "origin", commit)  # commits off the local repository's branches
    full = git.commit_of(checkout, commit)
    published = (
        full is not None
        and git.run(
            checkout, "for-each-ref", "--count=1", "--contains", full, "refs/remotes", "refs/tags"
        ).stdout.strip()
    )
    if full is None or (remote and not published):
        raise BadInput(f"commit {commit} is not on a branch or tag of {source}; perfbot builds only published commits")
    switched = git.run(checkout, "-c", "advice.detachedHead=false", "checkout", "--quiet", full)
    if switched.returncode != 0:
        raise EnvironmentFailure(f"cannot check out {full[:12]}: {switched.stderr.strip()}")
    git.run(checkout, "submodule", "update", "--init", "--recursive", "--quiet")
    return full


def _project_dir(checkout: Path, commit: str) -> Path:
    """Newer Triton builds from the top (setup.py or pyproject.toml); older from python/."""
    if (checkout / "setup.py").is_file() or (checkout / "pyproject.toml").is_file():
        return checkout
    if (checkout / "python" / "setup.py").is_file():
        return checkout / "python"
    raise BadInput(
        f"Triton at {commit[:12]} has neither setup.py nor python/setup.py; is --triton-source a Triton repository?"
    )


def environment(
    commit: str, source: str = DEFAULT_SOURCE, cache: Path | None = None, *, build_isolation: bool = True
) -> Path:
    """A directory holding Triton at `commit` (built or cached, then installed there once), for
    a process that puts it first on PYTHONPATH. It is reused only if it was installed from the
    wheel now in the cache (same digest)."""
    cache = cache or default_cache()
    wheel, _ = build(commit, source, cache, build_isolation=build_isolation)
    digest = sha256_of(wheel)
    installed_at = cache / "envs" / commit
    try:
        if (installed_at / ".perfbot-wheel-sha256").read_text().strip() == digest:
            return installed_at
    except OSError:
        pass
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=".env-"))
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(staging), str(wheel)],
        capture_output=True,
        text=True,
    )
    if installed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentFailure(f"installing {wheel.name} failed: {installed.stderr.strip()[-200:]}")
    (staging / ".perfbot-wheel-sha256").write_text(digest + "\n")
    installed_at.parent.mkdir(parents=True, exist_ok=True)
    if installed_at.exists():
        shutil.rmtree(installed_at)
    os.replace(staging, installed_at)
    return installed_at
