#!/usr/bin/env bash
# Whether this repository requires a code owner's review of what runs on the GPU runner
# (SECURITY.md, setting 7). Exits 0 if so; else says why in one ::error:: line and exits 2: the
# workflows' first jobs run it, so no GPU job starts until CODEOWNERS is filled in.
#   .github/perfbot/codeowners.sh
#
# It reads the CODEOWNERS file GitHub reads (the first of .github/CODEOWNERS, CODEOWNERS and
# docs/CODEOWNERS: a plain file, not a link, under 3 MB, UTF-8 without a byte-order mark), every
# line of it, the last one too where it has no final newline, and requires:
# - that no rule names the placeholder @OWNER/... that perfbot's files ship with;
# - for each protected path: .github/ (the workflows and these scripts), thresholds.yaml,
#   pyproject.toml, the subject's folder ([tool.perfbot] kernels in pyproject.toml, default
#   kernels) and perfbot/ where that folder exists, that the last rule whose pattern surely matches
#   the whole path, and every later rule whose pattern may match a file in it, names at least one
#   owner, each a user (@name), a team (@org/team) or an email, none the placeholder.
# GitHub applies the last rule that matches a file; a rule without owners, or one it skips (an
# owner it cannot parse), leaves the file without an owner. Rather than GitHub's gitignore-like
# matching, two simplifications that can only be stricter than GitHub, never looser:
# - a pattern surely matches the whole of PATH when it is `*`, `**`, `/PATH` or, for a folder,
#   `/PATH/` or `/PATH/**`; and where PATH is one name, also `PATH`, `**/PATH` or, for a folder,
#   `PATH/` or `**/PATH/`. A space in PATH is written `\ `, as perfbot init writes it.
# - any other pattern may match a file in PATH, unless it is anchored (a / before its last
#   character) and one of its leading names, at a depth PATH has, is plain (no * ? [ ] or \ but an
#   escaped space; not empty, . or ..) and differs from PATH's name there.
# What it cannot see: whether each owner exists and may write to the repository (GitHub ignores
# one that may not); SECURITY.md, setting 7, says who the team must hold.
set -euo pipefail
exec python3 -I - <<'PY'
import os
import posixpath
import re
import sys

FIX = (
    "name the repository's maintainers there (a team @ORG/NAME or users) and turn on "
    '"Require review from Code Owners" for main (SECURITY.md, setting 7)'
)
SETTING = '"Require review from Code Owners" asks for the owners of the last rule that applies (SECURITY.md, setting 7)'

WORD = re.compile(r"(?:\\.|\\$|[^ \t\\])+")  # split at spaces and tabs, not at an escaped one
OWNER = re.compile(r"@[A-Za-z0-9_-]+(?:/[A-Za-z0-9._-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+")
PLACEHOLDER = re.compile(r"@owner/", re.IGNORECASE)
WILD = re.compile(r"[*?\[\]\\]")  # in a name once its escaped spaces are read


def refuse(message):
    print(f"::error::{message}", file=sys.stderr)
    sys.exit(2)


if sys.version_info < (3, 11):
    refuse(f"codeowners.sh needs Python 3.11 or newer (tomllib), and python3 is {sys.version.split()[0]}")


def codeowners():
    for candidate in (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"):
        if os.path.islink(candidate):
            refuse(f"{candidate} is a symbolic link, which GitHub may not follow: make it a file and {FIX}")
        if os.path.isfile(candidate):
            return candidate
    refuse(
        "no CODEOWNERS file, so no change to the workflows needs a maintainer's review: add .github/CODEOWNERS "
        f"and {FIX}"
    )


def rules(path):
    """(line number, pattern, owners) of each rule, its escapes kept."""
    if os.path.getsize(path) >= 3 * 1024 * 1024:
        refuse(f"{path} is 3 MB or more, which GitHub does not load, so no change needs a code owner's review: {FIX}")
    with open(path, "rb") as file:
        data = file.read()
    if data.startswith(b"\xef\xbb\xbf"):
        refuse(
            f"{path} starts with a byte-order mark, which GitHub may read as part of its first pattern: save it "
            f"without one, and {FIX}"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        refuse(f"{path} is not UTF-8: save it as UTF-8, and {FIX}")
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        words = WORD.findall(line.removesuffix("\r"))
        if not words or words[0].startswith("#"):
            continue
        owners = []
        for word in words[1:]:
            if word.startswith("#"):  # a comment to the end of the line
                break
            owners.append(word)
        found.append((number, words[0], owners))
    return found


def subject():
    """The subject's folder, as pyproject.toml names it, relative to the root ("" for the root)."""
    import tomllib

    try:
        with open("pyproject.toml", "rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        document = {}
    except (OSError, ValueError) as error:
        refuse(
            f"pyproject.toml cannot be read as TOML ({error}), so the subject's folder, which CODEOWNERS must "
            "guard, is unknown (SECURITY.md, setting 7)"
        )
    table = document.get("tool", {})
    table = table.get("perfbot", {}) if isinstance(table, dict) else {}
    kernels = table.get("kernels", "kernels") if isinstance(table, dict) else "kernels"
    if not isinstance(kernels, str) or not kernels:
        refuse(f"[tool.perfbot] kernels must name the subject's folder, got {kernels!r} (SECURITY.md, setting 7)")
    folder = posixpath.normpath(kernels)
    if folder.startswith(("/", "../")) or folder == "..":
        refuse(
            f"[tool.perfbot] kernels names {kernels!r}, outside the repository, where no CODEOWNERS rule guards it "
            "(SECURITY.md, setting 7)"
        )
    return "" if folder == "." else folder


def surely_whole(pattern, path, folder):
    """Whether GitHub surely applies the pattern to every file of path."""
    if pattern in ("*", "**"):
        return True
    if not path or re.search(r"[*?\[\]\\!#\t]", path):
        return False
    name = path.replace(" ", "\\ ")
    forms = {f"/{name}"} | ({f"/{name}/", f"/{name}/**"} if folder else set())
    if "/" not in path:
        forms |= {name, f"**/{name}"} | ({f"{name}/", f"**/{name}/"} if folder else set())
    return pattern in forms


def may_match(pattern, path):
    """Whether GitHub may apply the pattern to some file of path: False only where surely not."""
    body = pattern.removesuffix("/")
    if not path or pattern.startswith("!") or "/" not in body:
        return True  # no path, or a pattern not anchored: it may match at any depth
    for name, mine in zip(body.removeprefix("/").split("/"), path.split("/"), strict=False):
        plain = name.replace("\\ ", " ")
        if name in ("", ".", "..") or WILD.search(plain):
            return True
        if plain != mine:
            return False
    return True


def fault(owners):
    if not owners:
        return "names no owner"
    for owner in owners:
        if not OWNER.fullmatch(owner):
            return f"names {owner}, which is no user (@name), team (@org/team) or email, so GitHub skips the line"
    return None


file = codeowners()
found = rules(file)
placeholders = sum(1 for _, _, owners in found for owner in owners if PLACEHOLDER.match(owner))
if placeholders:
    refuse(
        f"{file} still names the placeholder @OWNER/... ({placeholders} times), so no change needs a code owner's "
        f"review: replace OWNER with the organization and {FIX}"
    )
if not any(owners for _, _, owners in found):
    refuse(f"{file} names no owner, so no change needs a code owner's review: {FIX}")
protected = [(".github", True), ("thresholds.yaml", False), ("pyproject.toml", False), (subject(), True)]
if os.path.isdir("perfbot"):
    protected.append(("perfbot", True))
shown = []
for path, folder in protected:
    where = "the whole repository" if not path else path + ("/" if folder else "")
    if where in shown:
        continue
    last = max((i for i, (_, pattern, _) in enumerate(found) if surely_whole(pattern, path, folder)), default=None)
    if last is None:
        example = "/" + path.replace(" ", "\\ ") + ("/" if folder else "") if path else "*"
        refuse(
            f"no rule of {file} is sure to cover all of {where} (`{example} @ORG/TEAM` is), so a change there "
            f"needs no code owner's review: add such a rule; {SETTING}"
        )
    for index in range(last, len(found)):
        number, pattern, owners = found[index]
        why = fault(owners) if may_match(pattern, path) else None
        if why:
            role = "is the last rule sure to cover" if index == last else "may apply, after that rule, to files in"
            refuse(
                f"{file}:{number}: `{pattern}` {why}, and it {role} {where}, so a change there needs no code "
                f"owner's review: give it an owner or drop it; {SETTING}"
            )
    shown.append(where)
print(f"code owners: {file} gives an owner to {', '.join(shown)}")
PY
