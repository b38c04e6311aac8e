"""The baseline store: a directory of results files, one folder per GPU model, every stored run
kept as history. The newest run of a GPU is its baseline.

    <store>/<gpu-slug>/<created, UTC, sortable>-<first 12 hex digits of the file's sha256>.json

Files are written atomically and never overwritten; a file that cannot be read is reported by
name, never skipped or replaced.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from . import results as results_file
from .errors import BadInput
from .files import write_atomic
from .results import Results


@dataclass(frozen=True)
class Entry:
    path: Path
    gpu: str
    created: str
    benchmarks: int


def gpu_slug(gpu_name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def add(store: Path, results: Results) -> Path:
    """Store a run as the newest baseline of its GPU; returns the new file."""
    gpu = results.environment.get("gpu_name")
    if not isinstance(gpu, str) or not gpu_slug(gpu):
        raise BadInput("the results name no GPU (environment.gpu_name); only runs measured on a GPU can be baselines")
    if not results.benchmarks:
        raise BadInput("the results hold no benchmarks; there is nothing to store")
    _check_store(store)
    folder = store / gpu_slug(gpu)
    folder.mkdir(parents=True, exist_ok=True)
    text = results_file.to_text(results)
    stamp = _sortable(results.created) or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = folder / f"{stamp}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    if target.exists():
        raise BadInput(f"{target}: this exact run is already stored")
    write_atomic(target, text, replace=False)
    return target


def history(store: Path, gpu_name: str | None = None) -> list[Entry]:
    """Every stored run, oldest first (of one GPU if given). A corrupt file is an error."""
    _check_store(store)
    if not store.exists():
        return []
    folders = [store / gpu_slug(gpu_name)] if gpu_name else sorted(p for p in store.iterdir() if p.is_dir())
    entries = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            loaded = _load(path)
            entries.append(Entry(path, str(loaded.environment.get("gpu_name")), loaded.created, len(loaded.benchmarks)))
    return entries


def latest(store: Path, gpu_name: str) -> tuple[Path, Results]:
    """The baseline of `gpu_name`: its newest stored run."""
    entries = history(store, gpu_name)
    if not entries:
        raise BadInput(
            f"{store}: no baseline stored for {gpu_name!r}; store one with `perfbot baseline update RESULTS`"
        )
    return entries[-1].path, _load(entries[-1].path)


def _load(path: Path) -> Results:
    try:
        return results_file.load(path)
    except BadInput as error:
        raise BadInput(f"corrupt file in the baseline store (left as it is; move it aside to go on): {error}") from None


def _check_store(store: Path) -> None:
    if store.exists() and not store.is_dir():
        raise BadInput(f"{store}: the baseline store must be a directory, and this is a file")


def _sortable(created: str) -> str | None:
    try:
        moment = datetime.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
