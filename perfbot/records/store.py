"""The baseline store: a directory of results files, one folder per GPU model, every stored run
kept as history. The most recently *stored* run of a GPU is its baseline: runs are ordered by when
they entered the store, never by the date a file says it was made.

    <store>/<gpu-slug>/<stored at, UTC, sortable>-<first 12 hex digits of the file's sha256>.json
    <store>/.lock       held while a run is added

GPU names are folded to their slug (case, spaces and punctuation), for the folder and when two
runs are compared. A run is stored only if it loads back as written, validated as every later
comparison reads it, so a stored run never stops one. Files are written atomically and never
overwritten; a writer killed mid-way leaves at most a hidden `.*.tmp` file, which the next
update (holding the lock, so no writer is mid-way) removes and reports. A file that cannot be
read is reported by name, never skipped or replaced. What an update writes, and the leftovers it
removes, stay inside the store: a symlink in it that leads out (a GPU's folder, the lock) is
refused, and a leftover through one is left alone (files.py's containment rule).
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..characters import DESCRIBED, has_control
from ..errors import BadInput, EnvironmentFailure
from ..files import Inside, write_atomic
from . import results as results_file
from .run import Results, gpu_slug

# When a run entered the store, as its file name begins: UTC, and sorting as it reads.
STAMP = "%Y%m%dT%H%M%S.%fZ"


@dataclass(frozen=True)
class Entry:
    path: Path
    gpu: str
    stored: str  # when it entered the store (UTC), from its file name
    created: str  # when the run says it was made
    benchmarks: int


@dataclass(frozen=True)
class Added:
    path: Path
    leftovers_removed: int  # partial files of interrupted updates, cleaned up


def add(store: Path, results: Results) -> Added:
    """Store a run as the newest baseline of its GPU."""
    gpu = results.environment.gpu_name
    if not isinstance(gpu, str) or not gpu_slug(gpu):
        raise BadInput("the results name no GPU (environment.gpu_name); only runs measured on a GPU can be baselines")
    if not results.benchmarks:
        raise BadInput("the results hold no benchmarks; there is nothing to store")
    text = results_file.to_text(results)
    _check_comparable(text)
    _check_store(store)
    inside = Inside(store, "the store")
    folder = store / gpu_slug(gpu)
    inside.check(folder, follow=True)  # before anything is read through a link out of the store
    with _locked(store, inside):
        removed = _remove_leftovers(store, inside)
        same = sorted(folder.glob(f"*-{_digest(text)}.json")) if folder.is_dir() else []
        if same:
            raise BadInput(f"{same[0]}: this exact run is already stored")
        target = folder / file_name(text, datetime.datetime.now(datetime.UTC))
        write_atomic(target, text, replace=False, inside=inside)
    return Added(target, removed)


def file_name(text: str, stored: datetime.datetime) -> str:
    """The name of a run's file in its GPU's folder: when it was stored, then its text's digest."""
    return f"{stored.strftime(STAMP)}-{_digest(text)}.json"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def history(store: Path, gpu_name: str | None = None) -> list[Entry]:
    """Every stored run, in the order they were stored (of one GPU if given). A corrupt file is
    an error."""
    return [entry for entry, _ in runs(store, gpu_name)]


def runs(store: Path, gpu_name: str | None = None) -> list[tuple[Entry, Results]]:
    """Every stored run with its results, in the order they were stored (of one GPU if given)."""
    _check_store(store)
    if not store.exists():
        return []
    folders = [store / gpu_slug(gpu_name)] if gpu_name else sorted(p for p in store.iterdir() if p.is_dir())
    found = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if has_control(str(path.relative_to(store))):  # its stamp and folder are printed as they are
                raise BadInput(f"{path}: a stored run's name holds {DESCRIBED}; perfbot never names one so")
            loaded = load(path)
            entry = Entry(
                path, str(loaded.environment.gpu_name), path.name.split("-")[0], loaded.created, len(loaded.benchmarks)
            )
            found.append((entry, loaded))
    return found


def latest(store: Path, gpu_name: str) -> tuple[Path, Results]:
    """The baseline of `gpu_name`: its most recently stored run."""
    entries = history(store, gpu_name)
    if not entries:
        raise BadInput(
            f"{store}: no baseline stored for {gpu_name!r}; store one with `perfbot baseline update RESULTS`"
        )
    return entries[-1].path, load(entries[-1].path)


def leftovers(store: Path) -> list[Path]:
    """Partial files of interrupted updates (none while an update is under way)."""
    if not store.is_dir():
        return []
    return sorted(store.glob("*/.*.tmp"))


def _remove_leftovers(store: Path, inside: Inside) -> int:
    found = [path for path in leftovers(store) if inside.holds(path)]
    for path in found:
        path.unlink(missing_ok=True)
    return len(found)


@contextmanager
def _locked(store: Path, inside: Inside) -> Iterator[None]:
    inside.check(store / ".lock", follow=True)  # opened to append: a link there would be written through
    try:
        store.mkdir(parents=True, exist_ok=True)
        handle = (store / ".lock").open("a")
    except OSError as error:
        if error.errno in _UNUSABLE_NAME:
            raise _store_error(store, error) from None
        raise EnvironmentFailure(f"{store}: cannot write the store: {error.strerror or error}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released by the system if this process dies
        yield


def _check_comparable(text: str) -> None:
    """A run goes in only if it loads back as written: what every later comparison reads."""
    try:
        results_file.parse(text, "the run to store")
    except BadInput as error:
        raise BadInput(f"not stored: {error}") from None


def load(path: Path) -> Results:
    """A stored run; a file that does not read is named as corrupt."""
    try:
        return results_file.load(path)
    except BadInput as error:
        raise BadInput(f"corrupt file in the baseline store (left as it is; move it aside to go on): {error}") from None


def _check_store(store: Path) -> None:
    try:
        mode = os.stat(store).st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise _store_error(store, error) from None
    if not stat.S_ISDIR(mode):
        raise BadInput(f"{store}: the baseline store must be a directory, and this is a file")


# A store name the system cannot use at all: the user's to change, not the machine's failure.
_UNUSABLE_NAME = {errno.ENAMETOOLONG, errno.ENOTDIR, errno.ELOOP, errno.EINVAL}


def _store_error(store: Path, error: OSError) -> BadInput | EnvironmentFailure:
    if error.errno in _UNUSABLE_NAME:
        return BadInput(f"{store}: not a name a store can have ({error.strerror}); give another --store")
    return EnvironmentFailure(f"{store}: cannot use the store: {error.strerror or error}")
