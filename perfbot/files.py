"""Files the user gives or perfbot keeps: read with one-line errors, written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import BadInput


def read_text(path: Path, kind: str) -> str:
    """The text of a file the user named; a directory, a missing or unreadable file is BadInput."""
    if path.is_dir():
        raise BadInput(f"{path}: is a directory, not a {kind}")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{path}: cannot read it: {error}") from None


def write_atomic(path: Path, text: str, *, replace: bool = True) -> None:
    """Write through a synced temporary file in the same folder, so a crash leaves the old file
    or the new one, never half of either. With replace=False an existing file is never touched
    (the final step is a hard link, which fails if the name was taken meanwhile)."""
    if path.is_dir():
        raise BadInput(f"{path}: is a directory; give a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise BadInput(f"{path}: already exists; it is left as it is") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
