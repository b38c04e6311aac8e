"""Files the user gives or perfbot keeps: read with one-line errors, written atomically with the
mode the user's umask gives any new file, and only ever as regular files.

The output rule, for every file a user names as an output: a name that is free is written; an
existing regular file is replaced only with --overwrite; a symlink is a name taken like a file
(with --overwrite the link itself is replaced, its target never written through); anything else
at the name (a directory, a device, a fifo, a socket, or a symlink to one) is refused, with
--overwrite too. perfbot's own files (the store, state files) replace themselves without asking,
and are never written over anything but a regular file either.

The containment rule, for every path perfbot chooses inside a folder (init's files in the
project, the store's runs in the store, the site's pages in its folder; `Inside`): the path must
resolve inside that folder. A symlink on the way to it that leads outside, or nowhere, is refused
naming the link; one that leads to a folder inside is followed. The folder itself is the one the
user named, wherever it is."""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import BadInput, EnvironmentFailure


def read_text(path: Path, kind: str) -> str:
    """The text of a file the user named; anything but a readable regular file of UTF-8 text is
    BadInput."""
    try:
        return read_bytes(path, kind).decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: cannot read it: {error}") from None


def read_bytes(path: Path, kind: str, limit: int = -1) -> bytes:
    """The bytes of a file the user named, at most `limit` + 1 of them (all with -1). Only a
    regular file is read: a fifo would make perfbot wait forever for a writer, a device might
    never end. A directory, a missing or unreadable file, or anything but a regular file is
    BadInput."""
    try:
        _check_readable(path, os.stat(path).st_mode, kind)
        # Not blocking, so that a fifo put at the name after the check opens at once; the
        # descriptor's own file is checked again before a byte is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, ValueError) as error:  # a name too long for the system, a NUL in it
        raise BadInput(f"{path}: cannot read it: {getattr(error, 'strerror', None) or error}") from None
    with os.fdopen(fd, "rb") as handle:
        try:
            _check_readable(path, os.fstat(fd).st_mode, kind)
            os.set_blocking(fd, True)
            return handle.read(limit + 1 if limit >= 0 else -1)
        except OSError as error:
            raise BadInput(f"{path}: cannot read it: {error.strerror or error}") from None


def _check_readable(path: Path, mode: int, kind: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise BadInput(f"{path}: is a directory, not a {kind}")
    found = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise BadInput(f"{path}: is {found}, not a {kind}; perfbot reads only regular files")


def check_output(path: Path, *, overwrite: bool) -> None:
    """The output rule (above), checked before any work is done for the output; writing checks
    it again. A refusal is BadInput naming the path."""
    special = _not_regular(path)
    if special is not None:
        raise BadInput(f"{path}: is {special}; perfbot writes only regular files, so give another name")
    if not overwrite and os.path.lexists(path):
        raise BadInput(f"{path}: already exists; choose another name or pass --overwrite")


def _not_regular(path: Path) -> str | None:
    """What stands at `path` if it is neither free nor a regular file (a symlink is followed to say
    so), else None. A dangling symlink is a name taken, like a file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return f"not a place a file can be written ({blocking_part(path.parent)})"
    except (OSError, ValueError) as error:  # a loop of links, a NUL in the name, a part that is a file
        return f"not a place a file can be written ({getattr(error, 'strerror', None) or error})"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"a symlink to {kind}" if os.path.islink(path) else kind


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISSOCK, "a socket"),
)


@dataclass(frozen=True)
class Inside:
    """A folder perfbot writes in by paths it chooses itself: the containment rule (above)."""

    folder: Path
    what: str  # how a refusal names the folder: "the project", "the store"

    def check(self, path: Path, *, follow: bool = False) -> None:
        """Refuse (BadInput naming `path` and the link) a `path` under the folder that does not
        resolve inside it: every part below the folder that stands must be a folder or a link to
        one inside; the last part is left to the output rule, which never writes through a link,
        unless `follow` (a file appended to)."""
        folder = Path(os.path.abspath(self.folder))
        try:
            parts = Path(os.path.abspath(path)).relative_to(folder).parts
        except ValueError:
            raise BadInput(f"{path}: is not inside {self.what}, {folder}") from None
        real = Path(os.path.realpath(folder))
        current = folder
        for depth, part in enumerate(parts if follow else parts[:-1], start=1):
            current = current / part
            try:
                is_link = stat.S_ISLNK(os.lstat(current).st_mode)
            except FileNotFoundError:
                break  # what is missing from here on is made, inside the folder that holds it
            except OSError as error:
                raise BadInput(f"{path}: cannot write it: {error.strerror or error}") from None
            if is_link:
                self._check_link(path, current, real)
            if depth < len(parts) and not current.is_dir():
                raise BadInput(f"{path}: cannot make its folder: {blocking_part(current)}")
        # Where the system puts it: each link followed, then each "..", as open() does. A path
        # whose every link leads inside can still climb out after one ("link-to-root/../x").
        lands = Path(os.path.realpath(path if follow else Path(path).parent))
        if not lands.is_relative_to(real):
            raise BadInput(f"{path}: leads to {lands}, outside {self.what} ({real}); perfbot writes only inside it")

    def holds(self, path: Path) -> bool:
        """Whether `path` would pass `check`: a file there can be written, or removed, inside."""
        try:
            self.check(path)
        except BadInput:
            return False
        return True

    def _check_link(self, path: Path, link: Path, real: Path) -> None:
        said = f"{path}:" if link == Path(os.path.abspath(path)) else f"{path}: {link}"
        try:
            target = link.resolve(strict=True)
        except FileNotFoundError:
            raise BadInput(
                f"{said} is a symlink that leads nowhere ({os.readlink(link)}); perfbot writes only "
                f"inside {self.what}, and makes no folder at a link's far end"
            ) from None
        except (OSError, RuntimeError) as error:  # a loop of links: RuntimeError before Python 3.13
            raise BadInput(f"{said} cannot be followed: {getattr(error, 'strerror', None) or error}") from None
        if not target.is_relative_to(real):
            raise BadInput(
                f"{said} is a symlink to {target}, outside {self.what} ({real}); perfbot writes only inside it"
            )


def write_atomic(path: Path, text: str, *, replace: bool = True, inside: Inside | None = None) -> None:
    """Write through a synced temporary file in the same folder, so a crash leaves the old file
    or the new one, never half of either. With replace=False an existing file is never touched
    (the final step is a hard link, which fails if the name was taken meanwhile). A path that
    names anything but a regular file, or that leaves the folder `inside` names, is BadInput; a
    place that cannot be written is EnvironmentFailure."""
    write_all({path: text}, replace=replace, inside=inside)


def write_all(texts: dict[Path, str], *, replace: bool = True, inside: Inside | None = None) -> None:
    """Several files, all or none: each is staged in a synced temporary file beside it first,
    and only when every one is staged do they take their names. With replace=False, the names
    taken before one fails are given back."""
    staged: list[tuple[Path, Path]] = []
    linked: list[Path] = []
    try:
        for path, text in texts.items():
            staged.append((_stage(path, text, inside), path))
        for tmp, path in staged:
            if replace:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)
                linked.append(path)
    except FileExistsError:
        _unlink(linked)
        raise BadInput(f"{path}: already exists; it is left as it is") from None
    except OSError as error:
        _unlink(linked)
        raise EnvironmentFailure(f"{path}: cannot write it: {error.strerror or error}") from None
    except BaseException:  # Ctrl-C between two names: all or none still
        _unlink(linked)
        raise
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _unlink(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _stage(path: Path, text: str, inside: Inside | None) -> Path:
    if inside is not None:  # checked again as it is written: the plan's check may be minutes old
        inside.check(path)
    special = _not_regular(path)
    if special is not None:  # os.replace would put a file in its place: never a device, a fifo...
        raise BadInput(f"{path}: is {special}; perfbot writes only regular files, so give another name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except (NotADirectoryError, FileExistsError):
        raise BadInput(f"{path}: cannot make its folder: {blocking_part(path.parent)}") from None
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp makes 0600; a file perfbot writes is like any other
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def blocking_part(folder: Path) -> str:
    """The part of `folder` that stands where a folder must be, and what it is."""
    for part in (folder, *folder.parents):
        if os.path.lexists(part) and not part.is_dir():
            if not part.exists():
                return f"{part} is a symlink that leads nowhere, not a folder"
            kind = _not_regular(part) or ("a symlink to a file" if part.is_symlink() else "a file")
            return f"{part} is {kind}, not a folder"
    return f"{folder} is not a folder"


def umask() -> int:
    """The process's umask, read without changing it where the system says (Linux), else set and
    restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current
