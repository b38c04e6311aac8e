"""The `[tool.perfbot]` table of a checkout's pyproject.toml, loaded into a validated object."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .characters import DESCRIBED, has_control
from .errors import BadInput

_KEYS = {"triton-commit", "kernels", "store"}
FULL_SHA = re.compile(r"[0-9a-f]{40}")  # a full commit, as triton-commit must be
_MOST_PATH = 4096  # characters of a path the table names: as long as a path may be (PATH_MAX)


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
        if candidate.is_file() and "perfbot" in _tool_table(candidate, _read_toml(candidate)):
            return directory
    raise BadInput(
        f"no pyproject.toml with a [tool.perfbot] table in {start.resolve()} or its parents; "
        "run perfbot from a perfbot checkout or pass --project DIR"
    )


def load_project_config(root: Path) -> ProjectConfig:
    path = root / "pyproject.toml"
    try:
        directory, found = path.is_dir(), path.is_file()
    except OSError as error:  # a --project name too long for the system, say
        raise BadInput(f"{path}: cannot read it: {error.strerror or error}") from None
    if directory:
        raise BadInput(f"{path}: is a directory, not a file")
    if not found:
        raise BadInput(f"{path}: not found; pass --project with a perfbot checkout")
    tool = _tool_table(path, _read_toml(path))
    if "perfbot" not in tool:
        raise BadInput(f"{path}: no [tool.perfbot] table")
    table = tool["perfbot"]
    if not isinstance(table, dict):
        raise BadInput(f"{path}: tool.perfbot must be a table ([tool.perfbot]), got {_shown(table)}")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise BadInput(f"{path}: [tool.perfbot] has unknown key {unknown[0][:100]!r}; allowed: {sorted(_KEYS)}")
    commit = table.get("triton-commit")
    if not isinstance(commit, str) or not FULL_SHA.fullmatch(commit):
        raise BadInput(f"{path}: [tool.perfbot] triton-commit must be a full 40-hex-digit SHA, got {_shown(commit)}")
    for key in ("kernels", "store"):
        value = table.get(key, "")
        if key in table and not (isinstance(value, str) and 1 <= len(value) <= _MOST_PATH and not has_control(value)):
            raise BadInput(
                f"{path}: [tool.perfbot] {key} must be a path: one line of 1 to {_MOST_PATH} characters, without "
                f"{DESCRIBED}, got {_shown(value)}"
            )
    return ProjectConfig(
        root=root,
        triton_commit=commit,
        kernels_dir=root / table.get("kernels", "kernels"),
        store_dir=root / table.get("store", ".perfbot/store"),
    )


def _tool_table(path: Path, document: dict[str, Any]) -> dict[str, Any]:
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise BadInput(f"{path}: tool must be a table ([tool]), got {_shown(tool)}")
    return tool


def _shown(value: object) -> str:
    """A value from the file, cut short: a message stays one readable line."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise BadInput(f"{path}: cannot read it as TOML: {error}") from None
    except ValueError as error:  # an integer of more digits than Python turns into a number (4300)
        raise BadInput(f"{path}: cannot read it as TOML: {_one_line(str(error))}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise BadInput(f"{path}: cannot read it as TOML: nested too deeply") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
