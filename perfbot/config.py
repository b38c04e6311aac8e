"""The `[tool.perfbot]` table of a checkout's pyproject.toml, loaded into a validated object."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import BadInput

_KEYS = {"triton-commit", "kernels", "store"}
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class ProjectConfig:
    root: Path
    triton_commit: str  # full SHA of the Triton commit CI builds and measures with
    kernels_dir: Path  # the measured subject, loaded by path
    store_dir: Path  # the baseline store


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above `start` whose pyproject.toml has a [tool.perfbot] table."""
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "perfbot" in _read_toml(candidate).get("tool", {}):
            return directory
    raise BadInput(
        f"no pyproject.toml with a [tool.perfbot] table in {start.resolve()} or its parents; "
        "run perfbot from a perfbot checkout or pass --project DIR"
    )


def load_project_config(root: Path) -> ProjectConfig:
    path = root / "pyproject.toml"
    if not path.is_file():
        raise BadInput(f"{path}: not found; pass --project with a perfbot checkout")
    table = _read_toml(path).get("tool", {}).get("perfbot")
    if not isinstance(table, dict):
        raise BadInput(f"{path}: no [tool.perfbot] table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise BadInput(f"{path}: [tool.perfbot] has unknown key {unknown[0]!r}; allowed: {sorted(_KEYS)}")
    commit = table.get("triton-commit")
    if not isinstance(commit, str) or not _SHA.fullmatch(commit):
        raise BadInput(f"{path}: [tool.perfbot] triton-commit must be a full 40-hex-digit SHA, got {commit!r}")
    for key in ("kernels", "store"):
        if key in table and not isinstance(table[key], str):
            raise BadInput(f"{path}: [tool.perfbot] {key} must be a path string, got {table[key]!r}")
    return ProjectConfig(
        root=root,
        triton_commit=commit,
        kernels_dir=root / table.get("kernels", "kernels"),
        store_dir=root / table.get("store", ".perfbot/store"),
    )


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise BadInput(f"{path}: cannot read it as TOML: {error}") from None
